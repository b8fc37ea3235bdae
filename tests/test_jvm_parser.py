"""rspark's JVM line scanner (rspark/jvm/rspark/jvm/NQuadsLine.java, a Spark UDF): it must read a subset of what
the Python fast path reads (rspark.spark.loading.rdf.fast_lines, itself tested against pyoxigraph in test_loader.py),
term for term, and leave every other line to Python. Loads with and without it give the same quads and errors."""

from __future__ import annotations

import re
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import functions as F
from test_loader import _fast_terms, _line_strategy, w3c_lines

from rspark.spark import jvm
from rspark.spark.loading.loader import load_rdf, load_stream

NOTHING = "nothing"


def _jvm_terms(spark, lines: list[str], fmt: str, token: str = "bT") -> list:
    """The JVM scanner's reading of each line: (s, p, o, g) with g "" for no graph, None when it leaves the line to
    Python, NOTHING for a line with nothing to read."""
    udf = jvm.line_parser(spark)
    assert udf is not None, "the test session must have rspark's jar (a JDK is present in CI)"
    df = spark.createDataFrame(list(enumerate(lines)), "i int, line string")
    rows = df.select("i", F.call_function(udf, "line", F.lit(fmt == "nquads"), F.lit(f"_:{token}_")).alias("r")) \
        .orderBy("i").collect()
    out = []
    for row in rows:
        r = row.r
        out.append(None if r is None else NOTHING if r.s is None else (r.s, r.p, r.o, r.g))
    return out


def _python_reading(lines: list[str], fmt: str) -> list:
    """fast_lines's reading with the JVM's conventions (g "" for no graph in N-Quads; N-Triples has none)."""
    return _fast_terms(lines, fmt, default_graph="")


@pytest.mark.slow
def test_jar_builds_and_can_be_turned_off(tmp_path, monkeypatch):
    path = jvm.jar_path()
    assert path is not None and Path(path).is_file()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fresh = jvm.jar_path()  # compiled anew into an empty cache
    assert fresh is not None and Path(fresh).parent == tmp_path / "rspark"
    assert Path(fresh).read_bytes()[:2] == b"PK"
    monkeypatch.setenv("RSPARK_JVM", "0")
    assert jvm.jar_path() is None


@pytest.mark.slow
def test_a_helper_that_does_not_compile_is_left_out_of_the_jar(tmp_path, monkeypatch, caplog):
    """A helper whose source javac rejects (as one using Spark's internal classes may against another PySpark) is
    left out of the jar with a warning naming it; the other helpers are built."""
    import logging
    import shutil
    import zipfile

    sources = tmp_path / "jvm"
    shutil.copytree(jvm.SOURCES, sources)
    (sources / "rspark" / "jvm" / "Broken.java").write_text(
        "package rspark.jvm;\npublic final class Broken { static org.apache.spark.NoSuchClass x; }\n")
    monkeypatch.setattr(jvm, "SOURCES", sources)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with caplog.at_level(logging.WARNING, logger="rspark.jvm"):
        path = jvm.jar_path()
    assert path is not None
    names = zipfile.ZipFile(path).namelist()
    assert "rspark/jvm/TermFacets.class" in names and "rspark/jvm/ArrowFrames.class" in names
    assert not any("Broken" in name for name in names)
    assert [r.getMessage() for r in caplog.records if r.name == "rspark.jvm"] == [
        f"rspark's JVM helpers Broken do not compile against this PySpark ({pyspark.__version__}); the others are "
        "built"]


def test_reads_canonical_lines_and_leaves_the_rest(spark):
    x = "http://www.w3.org/2001/XMLSchema#"
    read = [
        '<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .',
        '<http://ex.org/a> <http://ex.org/p> "71"^^<%sinteger> <http://ex.org/g1> .' % x,
        '_:b1 <http://ex.org/p> _:x.y-z <http://ex.org/g> .',
        '<urn:isbn:0451450523> <http://ex.org/p> "a \\"q\\" \\\\ \\n \\r\ttab"@en-gb _:g .',
        '  <http://u:pw@ex.org:8080/a/b%20c?x=1&y=2#frag/?> \t<http://ex.org/p>  "" .   # comment',
        '<http://ex.org/é> <http://ex.org/p> "ü 😀"@de .',
        '<mailto:a@ex.org> <http://ex.org/p> <file:///a//b> .',
        '<http://ex.org/a> <http://ex.org/p> _:o.',
        '<http://ex.org/a> <http://ex.org/p> "x"@es-419.',
        '<a:> <b:/> <c://> <d:?q> .',
    ]
    left = [
        '<rel> <http://ex.org/p> <http://ex.org/b> .',
        '<http://ex.org/a> <http://ex.org/p> "x"@EN .',
        '<http://ex.org/a> <http://ex.org/p> "x"^^<%sstring> .' % x,
        '<http://ex.org/a> <http://ex.org/p> "\\u0041\\t" .',
        '<http://ex.org/%zz> <http://ex.org/p> <http://ex.org/b> .',
        '<http://ex.org:x/> <http://ex.org/p> <http://ex.org/b> .',
        '<http://a#b#c> <http://ex.org/p> <http://ex.org/b> .',
        '<http://[::1]/> <http://ex.org/p> <http://ex.org/b> .',
        '<< <http://e/a> <http://e/b> <http://e/c> >> <http://ex.org/p> "1" .',
        '<http://ex.org/a> <http://ex.org/p> "x"^^<%slangString> .' % "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
        '<http://ex.org/a> <http://ex.org/p> <http://ex.org/b>',
        '<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> <http://ex.org/g> <http://ex.org/h> .',
        '<http://ex.org/a><http://ex.org/p> <http://ex.org/b> .',
        '<http://ex.org/a> <http://ex.org/p> "x"@engl .',
        '<http://ex.org/a> <http://ex.org/p> "x" . junk',
        '<http://ex.org/a> <http://ex.org/p> "unterminated .',
        '\u00a0<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .',
        '<http://ex.org/\ufffd> <http://ex.org/p> <http://ex.org/b> .',
    ]
    nothing = ["", "   ", "\t# a comment", "# only"]
    got = _jvm_terms(spark, read + left + nothing, "nquads")
    assert got[:len(read)] == _python_reading(read, "nquads")
    assert all(t is not None for t in got[:len(read)])
    assert got[len(read):len(read) + len(left)] == [None] * len(left)
    assert got[len(read) + len(left):] == [NOTHING] * len(nothing)
    assert got[2] == ("_:bT_b1", "<http://ex.org/p>", "_:bT_x.y-z", "<http://ex.org/g>")
    assert got[7] == ("<http://ex.org/a>", "<http://ex.org/p>", "_:bT_o", "")
    # N-Triples: a fourth term is left to Python (which reports it)
    nt = ['<http://ex.org/a> <http://ex.org/p> "1" .', '<http://ex.org/a> <http://ex.org/p> "1" <http://ex.org/g> .']
    assert _jvm_terms(spark, nt, "ntriples") == [("<http://ex.org/a>", "<http://ex.org/p>", '"1"', ""), None]


@pytest.mark.slow
def test_property_reads_a_subset_of_the_python_fast_path(spark):
    """Generated lines (test_loader's strategy: IRIs of every shape, escapes, tags, datatypes, labels, spacing):
    every line the JVM reads, the Python fast path reads into the same terms. Lines are gathered by hypothesis
    and checked in one Spark job."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    gathered: list[str] = []

    @settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.lists(_line_strategy(), min_size=1, max_size=20))
    def gather(lines):
        gathered.extend(line.replace("\n", " ") for line in lines)

    gather()
    for fmt in ("nquads", "ntriples"):
        jvm_read = _jvm_terms(spark, gathered, fmt)
        py_read = _python_reading(gathered, fmt)
        picked = [(line, j, p) for line, j, p in zip(gathered, jvm_read, py_read) if j not in (None, NOTHING)]
        wrong = [(line, j, p) for line, j, p in picked if j != p]
        assert not wrong, wrong[:5]
        assert len(picked) > 50, len(picked)
        # the JVM leaves to Python only a few lines Python's fast path reads (non-ASCII labels and the like)
        both = sum(1 for j, p in zip(jvm_read, py_read) if p is not None)
        assert len(picked) >= both * 0.9, (len(picked), both)


def test_w3c_data_read_as_python_reads_it(spark):
    """The W3C suites' data as pyoxigraph writes N-Quads and N-Triples: the JVM reads nearly every line, each
    exactly as the Python fast path does."""
    texts = {"nquads": [], "ntriples": []}
    for _, fmt, lines in w3c_lines():
        texts[fmt] += lines
    for fmt, lines in texts.items():
        jvm_read = _jvm_terms(spark, lines, fmt)
        py_read = _python_reading(lines, fmt)
        picked = [(j, p) for j, p in zip(jvm_read, py_read) if j is not None]
        assert all(j == p for j, p in picked)
        assert len(lines) > 5000 and len(picked) > len(lines) * 9 // 10, (len(picked), len(lines))


def _canonical(rows) -> list:
    """Rows with the load's blank-node prefix (_:b<8 hex>_) made neutral."""
    return sorted(tuple(re.sub(r"_:b[0-9a-f]{8}_", "_:B_", v) if isinstance(v, str) else v for v in r)
                  for r in rows)


MIXED = "\n".join([
    '<http://e/s1> <http://e/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> <http://e/g1> .',
    '<http://e/g1> <http://www.w3.org/ns/prov#generatedAtTime> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .',
    '',
    '# a comment',
    '_:a <http://e/p> "x"@EN <http://e/g2> .',                        # read by Python (tag to lower-case)
    '<http://e/g2> <http://www.w3.org/ns/prov#generatedAtTime> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .',
    'garbage .',                                                        # an error, reported at line 7
    '_:a <http://e/p> _:b <http://e/g3> .',
    '<< <http://e/a> <http://e/b> <http://e/c> >> <http://e/q> "s" <http://e/g3> .',
    '<http://e/g3> <http://www.w3.org/ns/prov#generatedAtTime> "3"^^<http://www.w3.org/2001/XMLSchema#integer> .',
    '<rel> <http://e/p> "\\u0041" <http://e/g3> .',                    # relative IRI, escape: Python
]) + "\n"


@pytest.mark.parametrize("jvm_on", [True, False])
def test_loads_agree_with_and_without_the_jvm_scanner(spark, tmp_path, monkeypatch, jvm_on):
    """A stream mixing lines each path reads, blank lines, comments and a bad line: the same elements, content
    and errors (with the line number) either way; the bad line's element is rejected."""
    if not jvm_on:
        monkeypatch.setenv("RSPARK_JVM", "0")
    path = tmp_path / "mixed.nq"
    path.write_text(MIXED, encoding="utf-8")
    st = load_stream(spark, "http://e/s", path)
    assert [(e.line, e.element) for e in st.errors] == [(7, None)]
    # seq sorts the elements in file order (a sparse key)
    assert [(r.element, r.ts) for r in sorted(st.elements.collect(), key=lambda r: r.seq)] == [
        ("<http://e/g1>", 1), ("<http://e/g2>", 2), ("<http://e/g3>", 3)]
    assert _canonical(st.quads.select("s", "p", "o", "element").collect()) == _canonical([
        ("<http://e/s1>", "<http://e/p>", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>', "<http://e/g1>"),
        ("_:B_a", "<http://e/p>", '"x"@en', "<http://e/g2>"),
        ("_:B_a", "<http://e/p>", "_:B_b", "<http://e/g3>"),
        ("<< <http://e/a> <http://e/b> <http://e/c> >>", "<http://e/q>", '"s"', "<http://e/g3>"),
        (f"<{(tmp_path / 'rel').as_uri()}>", "<http://e/p>", '"A"', "<http://e/g3>"),
    ])
    st.unpersist()


@pytest.mark.parametrize("jvm_on", [True, False])
def test_line_numbers_across_splits_either_way(spark, tmp_path, monkeypatch, jvm_on):
    """Small input splits, bad lines and blank lines spread over them: each error at its physical line."""
    if not jvm_on:
        monkeypatch.setenv("RSPARK_JVM", "0")
    bad, blank = {5, 150, 151, 700}, {2, 300, 301}
    lines = ["" if i in blank else "garbage" if i in bad else f'_:x{i % 7} <http://e/p> "{i}" .'
             for i in range(1, 801)]
    path = tmp_path / "split.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    try:
        lg = load_rdf(spark, path, strict=False)
        assert lg.quads.rdd.getNumPartitions() > 3
        assert [e.line for e in lg.errors] == sorted(bad)
        rows = lg.quads.select("s", "o").collect()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert sorted(int(r.o.strip('"')) for r in rows) == sorted(set(range(1, 801)) - bad - blank)
    assert len({r.s for r in rows}) == 7  # one node per label across splits
    lg.unpersist()


# ------------------------------------------------------------------------------------------ rspark's data source
# rspark/jvm/rspark/jvm/NQuadsSource.java reads a local line-format file itself (no text source, no UDF): its rows
# must be those of Spark's text source cut by the scanner UDF, at the same physical lines.


def _udf_rows(spark, path, quads: bool, prefix: str = "_:bX_") -> tuple[list, int]:
    """The text source + scanner UDF reading of a file: (line number, s, p, o, g, value) per line with something
    to read, and the file's number of lines."""
    from rspark.spark.loading.loader import _text_lines

    lines = _text_lines(spark, str(path))
    cut = F.call_function(jvm.line_parser(spark), F.col("value"), F.lit(quads), F.lit(prefix)).alias("r")
    rows = lines.select(cut, "value", "blk", "idx").filter(F.col("r").isNull() | F.col("r.s").isNotNull()) \
        .select("r.s", "r.p", "r.o", "r.g", F.when(F.col("r").isNull(), F.col("value")).alias("value"), "blk",
                "idx").collect()
    splits = lines.groupBy("blk").agg(F.count(F.lit(1)).alias("n"), F.min("idx").alias("first")).collect()
    return _numbered(rows, [(r.blk, r.n, r.first) for r in splits])


def _source_rows(spark, path, quads: bool, prefix: str = "_:bX_") -> tuple[list, int]:
    """The same from rspark's data source (a run's continuation has no line index: checked here to follow a row
    its split read with the same graph)."""
    df = jvm.lines_source(spark, str(path), quads=quads, prefix=prefix)
    assert df is not None
    counts = jvm.lines_source(spark, str(path), quads=quads, prefix=prefix, mode="count").collect()
    rows = df.collect()  # one partition after the other, each in file order
    last = None
    for r in rows:
        if r.idx is None:  # continues a run: the last row read in its split had its graph
            assert last is not None and last.blk == r.blk and last.g == r.g != "", (last, r)
        if r.s is not None:
            last = r
    return _numbered(rows, [(r.blk, r.n, 0) for r in counts])


def _numbered(rows, splits) -> tuple[list, int]:
    before, total = {}, 0
    for blk, n, first in sorted(splits):
        before[blk] = (total, first)
        total += n
    out = []
    for r in rows:
        line = None if r.idx is None else before[r.blk][0] + r.idx - before[r.blk][1] + 1
        out.append((line, r.s, r.p, r.o, r.g, r.value))
    return out, total


def _same_reading(udf: tuple[list, int], source: tuple[list, int]) -> None:
    """Equal rows in file order; the source's run continuations (no line) match the UDF's rows at their place."""
    (a, n_a), (b, n_b) = udf, source
    assert n_a == n_b
    assert len(a) == len(b)
    a, b = sorted(a, key=lambda r: r[0]), b  # the source's rows are in file order already
    for x, y in zip(a, b):
        assert y[1:] == x[1:], (x, y)
        assert y[0] is None or y[0] == x[0], (x, y)


PIECES = [
    '<http://e/s> <http://e/p> "x"@en <http://e/g> .',
    '<http://e/s> <http://e/q> "y" <http://e/g> .',
    '_:a <http://e/p> _:b .',
    '_:a <http://e/p> _:b _:g .',
    '', '   ', '# a comment', 'garbage',
    '<http://e/é> <http://e/p> "ü 😀" <http://e/g2> .',
    '<rel> <http://e/p> "\\u0041" .',
    '<http://e/s> <http://e/p> "1"^^<http://www.w3.org/2001/XMLSchema#string> .',
    '<http://e/s> <http://e/p> "1"^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString> <http://e/g> .',
    '  <http://e/s> <http://e/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> <http://e/g> . # x',
    '<http://e/g> <http://www.w3.org/ns/prov#generatedAtTime> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .',
    # IRIs the source's reader remembers as well-formed, then one that begins with the same bytes in the same place:
    # longer, ill-formed, cut short by the line's end (the memo answers only for the same IRI)
    '<http://e/s> <http://e/p> <http://e/o> <http://e/g> .',
    '<http://e/s> <http://e/p> <http://e/o>x <http://e/g> .',
    '<http://e/s> <http://e/p> <http://e/o> <http://e/g>>.',
    '<http://e/s> <http://e/p>p <http://e/o> .',
    '<http://e/s> <http://e/p',
    '<http://e/s> <http://e/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer',
    '<http://e/s> <http://e/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer>> .',
    '<http://e/s> <http://e/p> <http://e/o > .',
]
# Twelve IRIs of one length, more than the memo's eight entries a place, pairs ending in the same byte: the memo's
# entries are replaced while lines go on, and each line's terms must be its own (one value is kept per entry)
_NAMES = [f"<http://e/n{a}{b}>" for a in "xy" for b in "012345"]
PIECES += [f"{_NAMES[k]} <http://e/p{k % 9}> {_NAMES[(k * 5) % 12]} {_NAMES[(k * 7) % 12]} ." for k in range(12)]
PIECES += [f'{_NAMES[k]} <http://e/p> "{k}" {_NAMES[k]} .' for k in range(0, 12, 3)]
PIECES += [f"_:b{k} <http://e/p{k}> {_NAMES[k]} _:g ." for k in range(1, 12, 4)]


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_source_reads_files_as_the_text_source_and_udf(spark, tmp_path, ending):
    """Generated files of canonical and other lines, blank lines and comments, non-ASCII and invalid UTF-8, a
    byte order mark, with and without a final line end, at split sizes down to 16 bytes (splits that begin inside
    a line, inside a CRLF, at a line's first byte): the same rows at the same lines as Spark's text source cut by
    the scanner UDF, N-Quads and N-Triples (the UDF's reading, which does not depend on the split size, read once
    at Spark's default one)."""
    import random

    rnd = random.Random(7)
    for case in range(6):
        lines = [rnd.choice(PIECES) for _ in range(rnd.randint(0, 40))]
        data = ending.join(lines).encode() + (ending.encode() if case % 2 else b"")
        if case == 2:
            data = b"\xef\xbb\xbf" + data
        if case == 3:
            data += b'<http://e/s> <http://e/p> "\xff\xfe" <http://e/g> .' + ending.encode()
        path = tmp_path / f"c{case}.nq"
        path.write_bytes(data)
        udf = {quads: _udf_rows(spark, path, quads) for quads in (True, False)}
        for split in ("16", "97", "4096"):
            spark.conf.set("spark.sql.files.maxPartitionBytes", split)
            try:
                for quads in (True, False):
                    _same_reading(udf[quads], _source_rows(spark, path, quads))
            finally:
                spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_source_reads_w3c_data_as_the_udf(spark, tmp_path):
    """The W3C suites' data as N-Quads and N-Triples lines (test_w3c_data_read_as_python_reads_it): the source's
    ASCII byte path and its UTF-8 path read every line as the UDF does."""
    texts = {"nquads": [], "ntriples": []}
    for _, fmt, lines in w3c_lines():
        texts[fmt] += lines
    for fmt, lines in texts.items():
        path = tmp_path / f"w3c.{'nq' if fmt == 'nquads' else 'nt'}"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        udf, source = _udf_rows(spark, path, fmt == "nquads"), _source_rows(spark, path, fmt == "nquads")
        _same_reading(udf, source)
        assert sum(1 for r in source[0] if r[1] is not None) > len(lines) * 9 // 10


def test_source_marks_runs_of_an_elements_lines(spark, tmp_path):
    """A line read with the graph of the line read before it in its split has no position: the element check
    only needs the first line of each run (tests/test_loader.py checks the elements' order and errors)."""
    g = "<http://e/g{}> ."
    lines = [f"<http://e/s> <http://e/p> <http://e/o{i}> " + g.format(k) for i, k in enumerate([1, 1, 1, 2, 1, 1])]
    lines.insert(2, "garbage")  # a line the scanner does not read does not end a run
    lines.append('<http://e/g1> <http://www.w3.org/ns/prov#generatedAtTime> "1" .')
    path = tmp_path / "runs.nq"
    path.write_text("\n".join(lines) + "\n")
    rows = jvm.lines_source(spark, str(path), quads=True, prefix="_:b_").collect()
    assert [(r.g, r.idx) for r in rows] == [
        ("<http://e/g1>", 0), ("<http://e/g1>", None), (None, 2), ("<http://e/g1>", None), ("<http://e/g2>", 4),
        ("<http://e/g1>", 5), ("<http://e/g1>", None), ("", 7)]


def test_source_is_used_for_local_plain_files_only(spark, tmp_path, monkeypatch):
    path = tmp_path / "a.nq"
    path.write_text("<http://e/s> <http://e/p> <http://e/o> .\n")
    assert jvm.lines_source(spark, str(path), quads=True, prefix="_:b_") is not None
    gz = tmp_path / "a.nq.gz"
    gz.write_bytes(b"")
    assert jvm.lines_source(spark, str(gz), quads=True, prefix="_:b_") is None  # Hadoop's codecs read it
    assert jvm.lines_source(spark, "a.nq", quads=True, prefix="_:b_") is None  # not an absolute path
    assert jvm.lines_source(spark, str(tmp_path), quads=True, prefix="_:b_") is None  # a folder
    monkeypatch.setenv("RSPARK_JVM", "0")
    assert jvm.lines_source(spark, str(path), quads=True, prefix="_:b_") is None


def test_stream_loads_agree_through_the_source_and_the_udf(spark, tmp_path):
    """One generated stream loaded through rspark's data source (a plain local file) and through the text source
    and the scanner UDF (the same file gzipped: Hadoop's codec reads it): the same elements in the same order,
    the same content and the same errors at the same lines. Its elements' lines are interleaved and split across
    input splits (runs of an element's lines, and elements written in several runs), some statements are left to
    Python, and some elements are bad (no timestamp, two timestamps, a malformed statement)."""
    import gzip
    import random

    rnd = random.Random(5)
    x = "http://www.w3.org/2001/XMLSchema#integer"
    lines = []
    for i in range(300):
        g = f"<http://e/g{i % 40}>" if i % 3 else f"<http://e/g{i}>"  # g0..g39 in many runs; others alone
        for k in range(rnd.randint(1, 3)):
            lines.append(f'<http://e/s{i}> <http://e/p{k}> "{i}"^^<{x}> {g} .' if i % 7 else
                         f'<http://e/s{i}> <http://e/p{k}> "v"@EN {g} .')  # upper-case tag: Python's
        if i % 11 == 0:
            lines.append("garbage")
        if i % 3 == 0 and i % 13:
            lines.append(f'<http://e/g{i}> <http://www.w3.org/ns/prov#generatedAtTime> "{i % 50}"^^<{x}> .')
    lines += [f'<http://e/g{j}> <http://www.w3.org/ns/prov#generatedAtTime> "{j}"^^<{x}> .' for j in range(40)]
    lines.append(f'<http://e/g1> <http://www.w3.org/ns/prov#generatedAtTime> "99"^^<{x}> .')  # g1: two stamps
    text = "\n".join(lines) + "\n"
    plain, packed = tmp_path / "s.nq", tmp_path / "s.nq.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")
    try:
        a, b = load_stream(spark, "http://e/s", plain), load_stream(spark, "http://e/s", packed)
        assert jvm.lines_source(spark, str(plain), quads=True, prefix="_:b_").rdd.getNumPartitions() > 4
        def order(st):
            return [(r.element, r.ts) for r in sorted(st.elements.collect(), key=lambda r: (r.ts, r.seq))]

        assert order(a) == order(b)
        assert len(order(a)) > 30
        assert _canonical(a.quads.select("s", "p", "o", "element", "ts").collect()) == \
            _canonical(b.quads.select("s", "p", "o", "element", "ts").collect())
        assert [(e.line, e.element, str(e)) for e in a.errors] == \
            [(e.line, e.element, str(e).replace(str(packed), str(plain))) for e in b.errors]
        assert len(a.errors) > 10
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    a.unpersist()
    b.unpersist()
