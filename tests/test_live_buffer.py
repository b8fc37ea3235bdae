"""A live stream's buffer (rspark.engine.live.buffer) and the driver-side read of small batches
(rspark.engine.live.ingest): a batch read on the driver fills the buffer exactly as the loader's path does; segments
are pruned, merged and restored after a restart with the same content."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
STREAM = EX + "s"


def _stamp(kind: str, value: int) -> str:
    if kind == "integer":
        return f'"{value}"^^<{XSD}integer>'
    if kind == "decimal":
        return f'"{value}.5"^^<{XSD}decimal>'
    return f'"2026-01-01T00:{value // 60 % 60:02d}:{value % 60:02d}Z"^^<{XSD}dateTime>'


def nquads(elements: list, kind: str, meta: bool = False) -> str:
    """N-Quads of elements ``(name, ts, [(s, o), ...])`` (predicate :p), with ``meta`` a metadata triple per
    element and one timestamp of a name that is no element."""
    lines = []
    for name, ts, triples in elements:
        lines += [f"<{EX}{s}> <{EX}p> <{EX}{o}> <{EX}{name}> ." for s, o in triples]
        lines.append(f"<{EX}{name}> <{PROV}> {_stamp(kind, ts)} .")
        if meta:
            lines.append(f'<{EX}{name}> <{EX}source> "sensor" .')
    if meta:
        lines.append(f"<{EX}nothing> <{PROV}> {_stamp(kind, 1)} .")
    return "\n".join(lines) + "\n"


def trig(elements: list, kind: str) -> str:
    out = [f"@prefix : <{EX}> .", f"@prefix prov: <{PROV.rsplit('#', 1)[0]}#> ."]
    for name, ts, triples in elements:
        body = " ".join(f":{s} :p :{o} ." for s, o in triples)
        out.append(f":{name} {{ {body} }} :{name} prov:generatedAtTime {_stamp(kind, ts)} .")
    return "\n".join(out) + "\n"


def contents(buffer) -> dict:
    """The buffer's tables as sorted tuples, blank-node prefixes (per load) normalised."""
    out = {}
    for name in ("elements", "quads", "metadata"):
        df = buffer.table(name)
        rows = [] if df is None else [tuple(re.sub(r"_:[0-9a-f]+_", "_:", v) if isinstance(v, str) else v
                                            for v in row) for row in df.collect()]
        out[name] = sorted(rows)
    return out


def new_buffer(spark, tmp_path, name: str):
    from rspark.engine.live.buffer import LiveBuffer

    return LiveBuffer(spark, STREAM, str(tmp_path / name))


def slow_append(spark, buffer, path: str, horizon=None):
    """``path`` loaded on the executors (however small) and appended."""
    from rspark.spark.loading.loader import DRIVER_MAX_BYTES_CONF, load_stream

    spark.conf.set(DRIVER_MAX_BYTES_CONF, "0")
    try:
        loaded = load_stream(spark, STREAM, path)
    finally:
        spark.conf.unset(DRIVER_MAX_BYTES_CONF)
    try:
        return buffer.append(loaded, horizon, None)
    finally:
        loaded.unpersist()


names = st.integers(0, 30).map(lambda i: f"e{i}")
triples = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(["x", "y"])), min_size=1, max_size=3)
batch = st.lists(st.tuples(names, st.integers(0, 500), triples), min_size=1, max_size=6,
                 unique_by=lambda e: e[0])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(batch, min_size=1, max_size=3), kind=st.sampled_from(["integer", "decimal", "datetime"]),
       fmt=st.sampled_from(["nq", "trig"]), meta=st.booleans())
def test_a_batch_read_on_the_driver_fills_the_buffer_as_the_loader_does(spark, tmp_path_factory, batches, kind, fmt,
                                                                        meta):
    """Generated batches (N-Quads with metadata, or TriG; integer, decimal or date-time timestamps), appended in
    order to two buffers: one through the driver-side read, one through load_stream. The driver read takes every
    one of them (they are clean) and the buffers' tables are equal."""
    from rspark.engine.live.ingest import read_small

    tmp = tmp_path_factory.mktemp("batches")
    fast, slow = new_buffer(spark, tmp, "fast"), new_buffer(spark, tmp, "slow")
    seen: set = set()
    for k, elements in enumerate(batches):
        elements = [(f"{name}-{k}", ts, t) for name, ts, t in elements if name not in seen]
        path = tmp / f"b{k}.{fmt}"
        path.write_text(nquads(elements, kind, meta) if fmt == "nq" else trig(elements, kind))
        small = read_small(str(path), PROV)
        assert small is not None
        assert fast.append_small(small, None).accepted == len(elements)
        assert slow_append(spark, slow, str(path)).accepted == len(elements)
    assert contents(fast) == contents(slow)
    assert (fast.kind, fast.scale, fast.first, fast.last, fast.count) == \
        (slow.kind, slow.scale, slow.first, slow.last, slow.count)


@pytest.mark.parametrize("text, why", [
    (f"<{EX}a> <{EX}p> <{EX}b> <{EX}e1> .\n", "an element without timestamp"),
    (f'<{EX}a> <{EX}p> <{EX}b> <{EX}e1> .\n<{EX}e1> <{PROV}> "1"^^<{XSD}integer> .\n'
     f'<{EX}e1> <{PROV}> "2"^^<{XSD}integer> .\n', "two timestamps"),
    (f'<{EX}a> <{EX}p> <{EX}b> <{EX}e1> .\n<{EX}e1> <{PROV}> "soon" .\n', "a bad timestamp"),
    (f'<{EX}a> <{EX}p> <{EX}b> <{EX}e1> .\n<{EX}e1> <{PROV}> "1"^^<{XSD}integer> .\n'
     f'<{EX}a> <{EX}p> <{EX}b> <{EX}e2> .\n<{EX}e2> <{PROV}> "2026-01-01T00:00:00Z"^^<{XSD}dateTime> .\n',
     "timestamps of two kinds"),
    (f'<{EX}a> <{EX}p> <{EX}b> <{EX}e1> .\n<{EX}e1> <{PROV}> "1"^^<{XSD}integer> .\nnot a quad\n',
     "a malformed line"),
    (f'<< <{EX}a> <{EX}p> <{EX}b> >> <{EX}q> <{EX}c> <{EX}e1> .\n<{EX}e1> <{PROV}> "1"^^<{XSD}integer> .\n',
     "a quoted triple"),
    ("", "nothing"),
])
def test_what_needs_the_loader_is_left_to_it(tmp_path, text, why):
    """A batch with anything the loader reports (or builds more for) is not read on the driver: None."""
    from rspark.engine.live.ingest import read_small

    path = tmp_path / "b.nq"
    path.write_text(text)
    assert read_small(str(path), PROV) is None, why


def test_a_large_batch_is_left_to_the_loader(tmp_path):
    from rspark.engine.live.ingest import read_small

    path = tmp_path / "b.nq"
    path.write_text(nquads([("e1", 1, [("a", "x")])], "integer"))
    assert read_small(str(path), PROV) is not None
    assert read_small(str(path), PROV, max_bytes=10) is None


def _elements(buffer) -> list:
    return sorted((r["element"][len(EX) + 1:-1], r["ts"]) for r in buffer.table("elements").collect())


def test_segments_are_pruned_merged_and_restored(spark, tmp_path, monkeypatch):
    """One segment a batch; pruning drops the segments wholly before the bound and hides the rows before it in the
    others; past MAX_SEGMENTS they are merged into one; a buffer restored from the saved state holds the same
    rows, and the directories no state names are removed."""
    from rspark.engine.live import buffer as live_buffer
    from rspark.engine.live.ingest import read_small

    monkeypatch.setattr(live_buffer, "MAX_SEGMENTS", 3)
    buf = new_buffer(spark, tmp_path, "b")
    for k, ts in enumerate([(1, 2), (3, 4), (5, 6)]):
        path = tmp_path / f"b{k}.nq"
        path.write_text(nquads([(f"e{t}", t, [("a", "x")]) for t in ts], "integer", meta=True))
        buf.append_small(read_small(str(path), PROV), None)
    assert len(buf.segments) == 3
    buf.prune(4)  # (1, 2) goes, with its metadata about e1 and e2; e3 is hidden
    assert _elements(buf) == [("e4", 4), ("e5", 5), ("e6", 6)]
    meta = sorted(r["s"] for r in buf.table("metadata").collect())
    assert f"<{EX}e1>" not in meta and f"<{EX}nothing>" in meta  # what names no element of it is carried
    assert len(buf.segments) == 3  # two left and the carried metadata
    path = tmp_path / "b3.nq"
    path.write_text(nquads([("e7", 7, [("a", "y")])], "integer"))
    slow_append(spark, buf, str(path))  # a segment written by Spark; now 4 > 3: merged
    assert len(buf.segments) == 1
    assert _elements(buf) == [("e4", 4), ("e5", 5), ("e6", 6), ("e7", 7)]
    before = contents(buf)

    state = buf.state()
    buf.drop_unused()
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [buf.segments[0].name]
    again = new_buffer(spark, tmp_path, "b")
    again.restore(state)
    assert contents(again) == before
    assert (again.first, again.last, again.low, again.count) == (1, 7, 4, 7)


def test_segments_held_on_the_driver_merge_there_unless_too_many_rows(spark, tmp_path, monkeypatch):
    """Past MAX_SEGMENTS, segments that are all Arrow tables on the driver are merged by Arrow into one held there
    (no Spark job) with the content they had, and restored the same; when a segment is Spark's, or the driver
    holds more than MAX_DRIVER_ROWS quads, the merge goes through Spark."""
    import pyarrow as pa

    from rspark.engine.live import buffer as live_buffer
    from rspark.engine.live.ingest import read_small

    monkeypatch.setattr(live_buffer, "MAX_SEGMENTS", 3)
    buf = new_buffer(spark, tmp_path, "d")
    for k, ts in enumerate([(1, 2), (3, 4), (5, 6)]):
        path = tmp_path / f"d{k}.nq"
        path.write_text(nquads([(f"e{t}", t, [("a", f"x{t}")]) for t in ts], "integer", meta=k == 0))
        buf.append_small(read_small(str(path), PROV), None)
    buf.prune(3)  # e1 and e2 go (the segment wholly before 3; its metadata about nothing carried, by Spark)
    path = tmp_path / "d3.nq"
    path.write_text(nquads([("e7", 7, [("a", "x7")]), ("e8", 8, [("b", "x8")])], "integer"))
    buf.append_small(read_small(str(path), PROV), None)
    assert len(buf.segments) == 1  # 4 > 3: merged
    # the carried metadata segment was written by Spark: that merge went through Spark
    assert not isinstance(buf.segments[0].tables["quads"], pa.Table)

    arrow = new_buffer(spark, tmp_path, "a")
    for k in range(5):
        path = tmp_path / f"a{k}.nq"
        path.write_text(nquads([(f"e{k}", k + 1, [("a", f"x{k}")]), (f"f{k}", k + 1, [("b", "y")])], "integer"))
        arrow.append_small(read_small(str(path), PROV), None)
        if k == 2:
            arrow.prune(2)  # e0 and f0 go with their segment: two left
        if k == 3:
            before = contents(arrow)
    # the fifth batch makes 4 > 3 segments: merged by Arrow into one held by the driver
    assert len(arrow.segments) == 1
    merged = arrow.segments[0]
    assert all(isinstance(t, pa.Table) for t in merged.tables.values())
    assert (merged.lo, merged.hi) == (2, 5)
    assert sorted(merged.tables["quads"].column("element").to_pylist()) == sorted(
        f"<{EX}{n}{k}>" for n in "ef" for k in range(1, 5))
    after = contents(arrow)
    # the fifth batch's two elements (8 arrived before them) and their triples, beside what was there
    assert after["elements"] == sorted(before["elements"] + [(f"<{EX}e4>", 5, 8), (f"<{EX}f4>", 5, 9)])
    assert after["quads"] == sorted(before["quads"] + [(f"<{EX}a>", f"<{EX}p>", f"<{EX}x4>", f"<{EX}e4>", 5, 8),
                                                       (f"<{EX}b>", f"<{EX}p>", f"<{EX}y>", f"<{EX}f4>", 5, 9)])
    again = new_buffer(spark, tmp_path, "a")
    again.restore(arrow.state())
    assert contents(again) == after

    # the driver holds more than MAX_DRIVER_ROWS quads that may still be read: the micro-batch's compaction goes
    # through Spark (the append alone does not merge: the evaluation's prune comes first)
    monkeypatch.setattr(live_buffer, "MAX_DRIVER_ROWS", 3)
    path = tmp_path / "a5.nq"
    path.write_text(nquads([("e5", 6, [("a", "x5")])], "integer"))
    arrow.append_small(read_small(str(path), PROV), None)
    assert len(arrow.segments) == 2
    arrow.compact()
    assert len(arrow.segments) == 1 and not isinstance(arrow.segments[0].tables["quads"], pa.Table)
    assert _elements(arrow) == sorted([(f"{n}{k}", k + 1) for n in "ef" for k in range(1, 5)] + [("e5", 6)])
    assert contents(arrow)["quads"] == sorted(
        after["quads"] + [(f"<{EX}a>", f"<{EX}p>", f"<{EX}x5>", f"<{EX}e5>", 6, 10)])


def test_compaction_counts_the_quads_after_the_prune(spark, tmp_path, monkeypatch):
    """A micro-batch's compaction merges by Spark only when the quads a later evaluation may read exceed
    MAX_DRIVER_ROWS: quads the prune left behind in a segment partly before its bound do not count, and an Arrow
    merge drops them (the driver keeps the content, without a Spark job)."""
    import pyarrow as pa

    from rspark.engine.live import buffer as live_buffer
    from rspark.engine.live.ingest import read_small

    monkeypatch.setattr(live_buffer, "MAX_DRIVER_ROWS", 4)
    buf = new_buffer(spark, tmp_path, "c")
    batches = [[1, 2, 3], [4, 5, 6]]  # one quad an element
    for k, stamps in enumerate(batches):
        path = tmp_path / f"c{k}.nq"
        path.write_text(nquads([(f"e{t}", t, [("a", f"x{t}")]) for t in stamps], "integer"))
        buf.append_small(read_small(str(path), PROV), None)
    assert buf.driver_rows() == 6 and len(buf.segments) == 2  # over the limit until the micro-batch ends
    buf.prune(3)  # e1 and e2 may no longer be read; both segments stay (the first holds e3)
    assert len(buf.segments) == 2
    buf.compact()  # 4 quads at or after 3: merged by Arrow, without e1 and e2
    assert len(buf.segments) == 1 and all(isinstance(t, pa.Table) for t in buf.segments[0].tables.values())
    assert buf.driver_rows() == 4
    assert _elements(buf) == [(f"e{t}", t) for t in (3, 4, 5, 6)]
    buf.compact()  # within the limit: nothing to do
    assert len(buf.segments) == 1 and isinstance(buf.segments[0].tables["quads"], pa.Table)


def test_a_checkpoint_of_the_earlier_layout_is_read(spark, tmp_path):
    """A state saved by the one-version-a-batch layout (``version``, the whole buffer in ``v<version>``) is
    read as one segment."""
    from rspark.engine.live.ingest import read_small

    buf = new_buffer(spark, tmp_path, "old")
    path = tmp_path / "b.nq"
    path.write_text(nquads([("e1", 1, [("a", "x")]), ("e2", 2, [("b", "y")])], "integer", meta=True))
    buf.append_small(read_small(str(path), PROV), None)
    (tmp_path / "old" / buf.segments[0].name).rename(tmp_path / "old" / "v00000005")
    old_state = {k: v for k, v in buf.state().items() if k not in ("segments", "next")} | {"version": 5}
    again = new_buffer(spark, tmp_path, "old")
    again.restore(old_state)
    assert _elements(again) == [("e1", 1), ("e2", 2)]
    assert again.next_id == 6


def test_files_of_one_micro_batch_combine_as_the_loaders_single_load(spark, tmp_path):
    """Two files of one micro-batch (integer, then decimal timestamps) read on the driver and combined fill the
    buffer as the loader's one load of their concatenation (what the spool gives it); files that share an element
    name, or mix date-times and numbers, do not combine."""
    from rspark.engine.live.ingest import combine, read_small

    first = nquads([("e1", 5, [("a", "x")]), ("e2", 3, [("b", "y")])], "integer", meta=True)
    second = nquads([("e3", 4, [("c", "x")])], "decimal")
    paths = []
    for k, text in enumerate([first, second]):
        paths.append(tmp_path / f"f{k}.nq")
        paths[-1].write_text(text)
    (tmp_path / "both.nq").write_text(first + second)
    fast, slow = new_buffer(spark, tmp_path, "fast"), new_buffer(spark, tmp_path, "slow")
    batch = combine([read_small(str(p), PROV) for p in paths])
    assert batch.time_scale == 10 and (batch.lo, batch.hi) == (30, 50)
    assert fast.append_small(batch, None).accepted == 3
    slow_append(spark, slow, str(tmp_path / "both.nq"))
    assert contents(fast) == contents(slow)

    (tmp_path / "again.nq").write_text(nquads([("e1", 9, [("a", "x")])], "integer"))
    (tmp_path / "dated.nq").write_text(nquads([("e9", 9, [("a", "x")])], "datetime"))
    assert combine([read_small(str(paths[0]), PROV), read_small(str(tmp_path / "again.nq"), PROV)]) is None
    assert combine([read_small(str(paths[0]), PROV), read_small(str(tmp_path / "dated.nq"), PROV)]) is None


def test_a_buffer_gives_the_quads_of_some_predicates_apart(spark, tmp_path, monkeypatch):
    """The buffer as a replay's source: ``restricted(predicates)`` is its quads with those predicates, selected from
    the driver-held and the Spark-written segments alike, rows before ``low`` left out; its whole ``quads`` are
    only given to Spark when read."""
    from rspark.engine.live.ingest import read_small

    def element(name: str, ts: int, triples) -> str:
        return "".join(f"<{EX}{s}> <{EX}{p}> <{EX}o> <{EX}{name}> .\n" for s, p in triples) + \
            f"<{EX}{name}> <{PROV}> {_stamp('integer', ts)} .\n"

    buf = new_buffer(spark, tmp_path, "b")
    path = tmp_path / "b0.nq"
    path.write_text(element("e1", 1, [("a", "x"), ("b", "y")]) + element("e2", 2, [("c", "x")]))
    buf.append_small(read_small(str(path), PROV), None)
    path = tmp_path / "b1.nq"
    path.write_text(element("e3", 3, [("d", "x"), ("e", "z")]))
    slow_append(spark, buf, str(path))  # a segment written by Spark
    asked = []
    real = buf.table

    def spy(name, segments=None, **kw):
        asked.append((name, kw.get("predicates")))
        return real(name, segments, **kw)

    monkeypatch.setattr(buf, "table", spy)
    src = buf.source()
    assert ("quads", None) not in asked  # not given to Spark yet
    every = {tuple(r) for r in src.quads.select("s", "p", "o", "element").collect()}
    assert asked.count(("quads", None)) == 1 and src.quads is src.quads  # when first read, once
    assert len(every) == 5
    for names in (["x"], ["x", "z"], ["nothing"]):
        predicates = frozenset(f"<{EX}{n}>" for n in names)
        got = {tuple(r) for r in src.restricted(predicates).select("s", "p", "o", "element").collect()}
        assert got == {r for r in every if r[1] in predicates}, names
    assert {r[1] for r in every} == {f"<{EX}x>", f"<{EX}y>", f"<{EX}z>"}
    buf.prune(2)  # e1 hidden
    got = {r["element"] for r in buf.source().restricted(frozenset({f"<{EX}x>"})).collect()}
    assert got == {f"<{EX}e2>", f"<{EX}e3>"}


def test_a_buffer_held_on_the_driver_says_whether_its_triples_are_unique(spark, tmp_path):
    """``driver_triples_unique(predicates)``: whether a triple (with one of the predicates) occurs in two elements,
    found by Arrow while the driver holds every segment's quads (the stream then says so without a job, and a
    window's content needs no DISTINCT); None once a segment is Spark's, where the stream keeps the DISTINCT."""
    from rspark.engine.live.ingest import read_small

    def element(name: str, ts: int, triples) -> str:
        return "".join(f"<{EX}{s}> <{EX}{p}> <{EX}o> <{EX}{name}> .\n" for s, p in triples) + \
            f"<{EX}{name}> <{PROV}> {_stamp('integer', ts)} .\n"

    x, y = frozenset({f"<{EX}x>"}), frozenset({f"<{EX}y>"})
    buf = new_buffer(spark, tmp_path, "b")
    path = tmp_path / "b0.nq"
    path.write_text(element("e1", 1, [("a", "x"), ("b", "y")]) + element("e2", 2, [("c", "x")]))
    buf.append_small(read_small(str(path), PROV), None)
    assert [buf.driver_triples_unique(p) for p in (None, x, y)] == [True, True, True]
    path = tmp_path / "b1.nq"
    path.write_text(element("e3", 3, [("b", "y"), ("d", "x")]))  # (b, y, o) again, in another element
    buf.append_small(read_small(str(path), PROV), None)
    assert [buf.driver_triples_unique(p) for p in (None, x, y)] == [False, True, False]
    src = buf.source()
    assert (src.triples_unique(x), src.triples_unique(y)) == (True, False)
    path = tmp_path / "b2.nq"
    path.write_text(element("e4", 4, [("e", "z")]))
    slow_append(spark, buf, str(path))  # a segment written by Spark
    assert buf.driver_triples_unique(x) is None
    assert buf.source().triples_unique(x) is False  # a live buffer's stream runs no job: the DISTINCT stays
