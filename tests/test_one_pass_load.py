"""The one-pass load of an N-Quads stream file (rspark.spark.loading.loader._one_pass_stream, rspark's data source in
its stream mode): exactly the content of the general load (elements, timestamps, order, statements, metadata,
errors, bounds) on the shared test streams and on random streams, in one split and in many (splits as small as a
few lines, so that elements straddle their byte ranges), with timestamps out of order, before and after their
graphs, metadata, elements written in several runs of lines, bad elements and malformed lines (which the load
hands on to the two-job or the general load: the result is the same either way)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_loader import _load_view, rows

from rspark.model.timestamps import datetime_millis
from rspark.spark.loading.loader import load_stream
from rspark.spark.streaming.windows import stream_bounds
from tests.conftest import TESTDATA

pytestmark = pytest.mark.spark

EX = "http://example.org/"
PRED = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD = "http://www.w3.org/2001/XMLSchema#"
SPLIT = "spark.sql.files.maxPartitionBytes"


@pytest.fixture
def paths(monkeypatch):
    """How each load_stream call of an N-Quads stream ended: "one pass", "two jobs" (the one pass handed the file on
    to _scanned_stream's two jobs) or "general"."""
    from rspark.spark.loading import loader

    taken: list[str] = []
    calls: list = []
    real_one, real_scanned = loader._one_pass_stream, loader._scanned_stream

    def one_pass(*args, **kwargs):
        out = real_one(*args, **kwargs)
        calls.append(out)
        return out

    def scanned(*args, **kwargs):
        calls.clear()
        out = real_scanned(*args, **kwargs)
        taken.append("general" if out is None else "one pass" if calls and calls[0][0] is not None else "two jobs")
        return out

    monkeypatch.setattr(loader, "_one_pass_stream", one_pass)
    monkeypatch.setattr(loader, "_scanned_stream", scanned)
    return taken


def _view(stream) -> tuple:
    """What a load gives (the load's blank-node prefix taken out), its bounds included."""
    bounds = stream.bounds if stream.bounds is not None else stream_bounds(stream.elements)
    return _load_view(stream) + (bounds,)


def _general(spark, monkeypatch, path) -> tuple:
    """The general load of ``path`` (:func:`_view`), in Spark's default splits: what it loads does not depend on
    them (tests/test_loader.py)."""
    from rspark.spark.loading import loader

    monkeypatch.setattr(loader, "SCANNED_STREAMS", False)
    try:
        general = load_stream(spark, EX + "s", path)
        view = _view(general)
        general.unpersist()
        return view
    finally:
        monkeypatch.setattr(loader, "SCANNED_STREAMS", True)


def _load(spark, path, split: str | None) -> tuple:
    """The load of ``path`` (:func:`_view`) in splits of ``split`` bytes (None: Spark's default); every statement
    carries its element's ts and seq."""
    if split:
        spark.conf.set(SPLIT, split)
    try:
        loaded = load_stream(spark, EX + "s", path)
        try:
            if loaded.n_elements:
                assert rows(loaded.quads, "element", "ts", "seq") == rows(loaded.elements)
            return _view(loaded)
        finally:
            loaded.unpersist()
    finally:
        spark.conf.unset(SPLIT)


def _nquads_of_trig(path) -> str:
    """A TriG stream as N-Quads lines (pyoxigraph's), its xsd:dateTime timestamps as integers (epoch seconds)."""
    out = []
    for q in ox.parse(path=str(path), format=ox.RdfFormat.TRIG):
        o = q.object
        if isinstance(o, ox.Literal) and o.datatype.value == XSD + "dateTime":
            o = ox.Literal(str(datetime_millis(o.value) // 1000), datatype=ox.NamedNode(XSD + "integer"))
        out.append(str(ox.Quad(q.subject, q.predicate, o, q.graph_name)) + " .")
    return "\n".join(out) + "\n"


def test_the_shared_csrbench_stream_loads_in_one_pass_as_the_general_load(spark, tmp_path, monkeypatch, paths,
                                                                         executor_loads):
    """The shared CSRBench stream (TriG, as N-Quads with integer timestamps): in one pass, in splits of 64 KiB
    (elements straddle their ranges), the general load's content."""
    path = tmp_path / "csrbench.nq"
    path.write_text(_nquads_of_trig(TESTDATA / "csrbench" / "stream.trig"))
    general = _general(spark, monkeypatch, path)
    assert paths == ["general"] and general[-2] == 34  # its elements
    assert _load(spark, path, "65536") == general
    assert paths == ["general", "one pass"]


def _block(k: int, ts: int, *, blank: bool = False, n: int = 3, before: bool = False, dtype: str = "integer") -> list:
    g = f"_:g{k}" if blank else f"<{EX}g{k}>"
    lines = [f'<{EX}s{j % 2}> <{EX}p> "{k}.{j} ü" {g} .' if j == 1 else f"<{EX}s{j % 2}> <{EX}p> <{EX}o{j}> {g} ."
             for j in range(n)]
    stamp = f'{g} {PRED} "{ts}"^^<{XSD}{dtype}> .'
    return [stamp] + lines if before else lines + [stamp]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_splits_are_cut_between_elements_and_read_each_line_once(spark, tmp_path, monkeypatch, paths,
                                                                 executor_loads, newline):
    """A clean stream of blocks (an element's statements and its timestamp together) loads in one pass in splits of
    a few lines, whatever the line ends, with a byte order mark, comments, blank lines, non-ASCII literals,
    metadata, blank nodes naming elements and timestamps before their graphs: each line read by one split."""
    lines = ["# a stream", ""]
    for k in range(40):
        lines += _block(k, (k * 7919) % 50 - 10, blank=k % 5 == 0, n=1 + k % 4, before=k % 3 == 0,
                        dtype="long" if k % 7 == 0 else "integer")
        if k % 6 == 0:
            lines += [f"<{EX}g{k}> <{EX}source> <{EX}x{k}> .", ""]
    lines += [f'<{EX}nothing> {PRED} "3"^^<{XSD}integer> .']  # a timestamp of no element: metadata
    path = tmp_path / "blocks.nq"
    path.write_bytes(b"\xef\xbb\xbf" + newline.join(lines).encode() + newline.encode())
    general = _general(spark, monkeypatch, path)
    for split in ("97", "300"):
        assert _load(spark, path, split) == general
    assert paths == ["general", "one pass", "one pass"]


def test_a_long_line_spanning_several_splits(spark, tmp_path, monkeypatch, paths, executor_loads):
    """A line longer than several splits (one literal of 2,000 characters) is read by the split it begins in, and
    the splits it covers read none of its element's lines."""
    lines = _block(0, 5) + [f'<{EX}a> <{EX}p> "{"x" * 2000}" <{EX}g1> .', f'<{EX}a> <{EX}q> <{EX}b> <{EX}g1> .',
                            f'<{EX}g1> {PRED} "1"^^<{XSD}integer> .'] + _block(2, 0)
    path = tmp_path / "long.nq"
    path.write_text("\n".join(lines) + "\n")
    assert _load(spark, path, "300") == _general(spark, monkeypatch, path)
    assert paths == ["one pass", "general"]


@st.composite
def _streams(draw) -> list[str]:
    """An N-Quads stream: blocks of elements (most clean, timestamps out of order, before or after their
    statements), some written in two runs apart or with their timestamp elsewhere, some with no timestamp, two, a
    dateTime, a malformed line; metadata and timestamps of no element; blank lines."""
    pieces = []
    for k in range(draw(st.integers(1, 20))):
        g = f"_:g{k}" if draw(st.integers(0, 5)) == 0 else f"<{EX}g{k}>"
        statements = [f'<{EX}s{draw(st.integers(0, 2))}> <{EX}p{draw(st.integers(0, 1))}> "{k}.{j}" {g} .'
                      for j in range(draw(st.integers(1, 3)))]
        stamp = f'{g} {PRED} "{draw(st.integers(-30, 30))}"^^<{XSD}{draw(st.sampled_from(["integer", "long"]))}> .'
        kind = draw(st.sampled_from(["after"] * 6 + ["before"] * 3 + ["runs", "apart", "twice", "none", "two",
                                                                       "datetime", "malformed"]))
        if kind == "before":
            pieces.append([stamp] + statements)
        elif kind == "runs":  # its statements in two runs, the second elsewhere
            pieces += [statements[:1] + [stamp], statements[1:] + [f'<{EX}more> <{EX}p> "{k}" {g} .']]
        elif kind == "apart":  # its timestamp elsewhere
            pieces += [statements, [stamp]]
        elif kind == "twice":
            pieces.append(statements + [stamp, stamp])
        elif kind == "none":
            pieces.append(statements)
        elif kind == "two":
            pieces.append(statements + [stamp, f'{g} {PRED} "99"^^<{XSD}integer> .'])
        elif kind == "datetime":
            pieces.append(statements + [f'{g} {PRED} "2020-01-01T00:00:00Z"^^<{XSD}dateTime> .'])
        elif kind == "malformed":
            pieces.append(statements + [f'<{EX}a> <{EX}p> "broken {g} .', stamp])
        else:
            pieces.append(statements + [stamp])
        if draw(st.integers(0, 4)) == 0:
            pieces.append([f"{g} <{EX}source> <{EX}x{k}> .", ""])
    if draw(st.booleans()):
        pieces.append([f'<{EX}nothing> {PRED} "{draw(st.integers(-5, 5))}"^^<{XSD}integer> .'])
    order = draw(st.permutations(range(len(pieces)))) if draw(st.integers(0, 3)) == 0 else range(len(pieces))
    return [line for i in order for line in pieces[i]]


def test_the_one_pass_load_equals_the_general_load_on_random_streams(spark, tmp_path, monkeypatch, paths,
                                                                     executor_loads):
    """Random streams (:func:`_streams`) in splits of 150 to 1000 bytes or in one: the load (in one pass, or handed
    on to the two-job or the general load) gives exactly the general load's elements, order, content, metadata,
    errors and bounds; some load in one pass."""
    path = tmp_path / "random.nq"
    seen: list[str] = []

    @settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(_streams(), st.sampled_from(["150", "400", "1000", None]))
    def check(lines, split):
        path.write_text("\n".join(lines) + "\n")
        assert _load(spark, path, split) == _general(spark, monkeypatch, path)
        assert paths[-1] == "general"  # the general load compared with
        seen.extend(paths[:-1])
        paths.clear()

    check()
    assert seen.count("one pass") >= 2 and len(seen) == 6, seen


def test_a_stream_not_resolved_within_splits_is_loaded_by_the_two_jobs(spark, tmp_path, monkeypatch, paths,
                                                                        executor_loads):
    """An element whose timestamp is far from its statements (in another split), and a stream whose elements wait
    for their timestamps longer than the one pass lets them (its ``pending`` bound, here 2 statements), are loaded
    by the two jobs, with the general load's content."""
    lines = [f'<{EX}a> <{EX}p> "{k}" <{EX}g{k}> .' for k in range(4)]
    lines += [f'<{EX}g{k}> {PRED} "{k}"^^<{XSD}integer> .' for k in range(4)]
    path = tmp_path / "apart.nq"
    path.write_text("\n".join(lines) + "\n")
    general = _general(spark, monkeypatch, path)
    assert _load(spark, path, "150") == general
    assert _load(spark, path, None) == general  # one split: it waits for four statements
    from rspark.spark.loading import loader

    monkeypatch.setattr(loader, "ONE_PASS_PENDING", 2)
    assert _load(spark, path, None) == general
    assert paths == ["general", "two jobs", "one pass", "two jobs"]


def test_an_element_read_again_after_its_block_is_loaded_by_the_two_jobs(spark, tmp_path, monkeypatch, paths,
                                                                         executor_loads):
    """The one pass keeps a resolved element's name only until its block of lines ends (then its hash): an element
    whose statements come back after another element's block, in the same split, is found by its hash read twice,
    and the two jobs load the stream, with the general load's content; its timestamp read again alone does the
    same."""
    e1 = [f'<{EX}a> <{EX}p> "1" <{EX}g1> .', f'<{EX}g1> {PRED} "5"^^<{XSD}integer> .']
    e2 = [f'<{EX}b> <{EX}p> "2" <{EX}g2> .', f'<{EX}g2> {PRED} "3"^^<{XSD}integer> .']
    for n, again in enumerate([f'<{EX}c> <{EX}p> "3" <{EX}g1> .', e1[1]]):
        path = tmp_path / f"again{n}.nq"
        path.write_text("\n".join(e1 + e2 + [again]) + "\n")
        general = _general(spark, monkeypatch, path)
        assert _load(spark, path, None) == general
    path = tmp_path / "blocks.nq"
    path.write_text("\n".join(e1 + e2) + "\n")
    assert _load(spark, path, None) == _general(spark, monkeypatch, path)
    assert paths == ["general", "two jobs", "general", "two jobs", "one pass", "general"]
