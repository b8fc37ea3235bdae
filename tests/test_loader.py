"""Tests for rspark.spark.loading.loader (static RDF and recorded streams into Spark) and rspark.spark.loading.rdf
(parsing helpers).

Loaded data is compared with exact expected rows and with pyoxigraph's own parse (``rspark.results.from_rdf``,
which undoes RDF 1.2 reifiers the same way), blank nodes up to isomorphism. Test data is read in place from
../shared/testdata; crafted files are written to tmp_path.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path

import pytest

from rspark.errors import DataError
from rspark.model.codec import decode
from rspark.model.time import TimeKind
from rspark.model.timestamps import datetime_millis, parse_timestamp
from rspark.results import DatasetResult
from rspark.spark.loading import rdf
from rspark.spark.loading.loader import LoadedGraph, LoadedStream, load_rdf, load_stream
from rspark.spark.streaming.windows import stream_bounds
from rspark.testing import from_rdf, results_equal
from tests.conftest import TESTDATA

W3C = TESTDATA / "w3c"
STAR = W3C / "sparql-star" / "rdf-star-cg" / "eval"
CSRBENCH = TESTDATA / "csrbench" / "stream.trig"

EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
BNODE = re.compile(r"_:b[0-9a-f]{8}([_-])(\S+)")


def e(name: str) -> str:
    return f"<{EX}{name}>"


def rows(df, *cols) -> set[tuple]:
    cols = cols or tuple(df.columns)
    return {tuple(r[c] for c in cols) for r in df.select(*cols).collect()}


def ranked(df, *cols) -> set[tuple]:
    """:func:`rows` with ``seq`` (a sparse key that sorts elements in file order) replaced by its 0-based rank
    among the distinct values: what the key means, asserted exactly."""
    got = rows(df, *cols)
    i = (cols or tuple(df.columns)).index("seq")
    rank = {v: k for k, v in enumerate(sorted({r[i] for r in got}))}
    return {r[:i] + (rank[r[i]],) + r[i + 1:] for r in got}


def quad_list(lg: LoadedGraph) -> list[tuple]:
    return [tuple(r) for r in lg.quads.select("s", "p", "o", "g").collect()]


def as_dataset(quads: list[tuple]) -> DatasetResult:
    return DatasetResult([(decode(s), decode(p), decode(o), decode(g) if g else None) for s, p, o, g in quads])


def assert_same_as_pyoxigraph(lg: LoadedGraph, path: Path, fmt: str, base: str | None = None) -> None:
    expected = from_rdf(path.read_bytes(), fmt, base_iri=base or path.resolve().as_uri())
    if not isinstance(expected, DatasetResult):
        expected = DatasetResult([(s, p, o, None) for s, p, o in expected.triples])
    ok, message = results_equal(as_dataset(quad_list(lg)), expected, ordered=False)
    assert ok, message


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# =================================================================================================== static RDF

TURTLE = """\
@prefix : <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@base <http://base.example/dir/> .
:a :list ( 1 "two" :three ) .
:a :knows [ :name "Bob"@EN-GB ; :age "42"^^xsd:integer ] .
<rel> :p <../up#frag> .
_:x :p _:y .
_:y :p _:x .
:a :text "tab\\there \\"quoted\\" back\\\\slash\\nline" ; :empty () .
"""


def test_turtle_prefixes_base_collections_bnodes(spark, tmp_path):
    path = write(tmp_path, "data.ttl", TURTLE)
    lg = load_rdf(spark, path)
    assert lg.errors == []
    quads = quad_list(lg)
    assert len(quads) == 15
    assert all(g == "" for *_, g in quads)
    got = set(quads)
    assert ("<http://base.example/dir/rel>", e("p"), "<http://base.example/up#frag>", "") in got
    assert (e("a"), e("empty"), f"<{RDF}nil>", "") in got
    assert (e("a"), e("text"), '"tab\there \\"quoted\\" back\\\\slash\\nline"', "") in got
    # the collection ( 1 "two" :three ): three cells chained by rdf:rest, ending in rdf:nil
    first = {s: o for s, p, o, _ in quads if p == f"<{RDF}first>"}
    rest = {s: o for s, p, o, _ in quads if p == f"<{RDF}rest>"}
    head = next(o for s, p, o, _ in quads if p == e("list"))
    items = []
    while head != f"<{RDF}nil>":
        items.append(first[head])
        head = rest[head]
    assert items == [f'"1"^^<{XSD}integer>', '"two"', e("three")]
    # [ ... ] and the collection cells are blank nodes with generated, per-load labels
    knows = next(o for s, p, o, _ in quads if p == e("knows"))
    assert BNODE.fullmatch(knows).group(1) == "-"
    assert (knows, e("name"), '"Bob"@en-gb', "") in got
    # written labels are kept (after the per-load prefix) and stable within the file
    x = next(s for s, p, o, _ in quads if s.endswith("_x"))
    y = next(s for s, p, o, _ in quads if s.endswith("_y"))
    assert BNODE.fullmatch(x).groups() == ("_", "x")
    assert {(x, e("p"), y, ""), (y, e("p"), x, "")} <= got
    assert_same_as_pyoxigraph(lg, path, "TURTLE")


def test_blank_nodes_unique_per_file(spark, tmp_path):
    one = write(tmp_path, "one.nt", "_:b1 <http://example.org/p> _:b1 .\n_:b1 <http://example.org/q> _:b2 .\n")
    two = write(tmp_path, "two.nt", "_:b1 <http://example.org/p> _:b1 .\n")
    q1, q2 = quad_list(load_rdf(spark, one)), quad_list(load_rdf(spark, two))
    labels1 = {q[0] for q in q1}
    assert len(labels1) == 1 and q1[0][0] == q1[0][2]  # the same label is the same node within a file
    assert labels1.isdisjoint({q[0] for q in q2})       # ... and not across files
    assert {q[2] for q in q1} - labels1 != set()        # _:b2 differs from _:b1


NTRIPLES = """\
# a comment line
<http://example.org/s> <http://example.org/p> <http://example.org/o> .
<http://example.org/s> <http://example.org/p> "plain" .

<http://example.org/s> <http://example.org/p> "hallo"@DE-at .
<http://example.org/s> <http://example.org/p> "1.50"^^<http://www.w3.org/2001/XMLSchema#decimal> . # trailing
<http://example.org/s> <http://example.org/p> "esc \\u00e9 \\t \\" \\\\ \\n" .
_:n1 <http://example.org/p> _:n2 .
<http://example.org/s> <http://example.org/p> <<( <http://example.org/a> <http://example.org/b> "c" )>> .
<< <http://example.org/a> <http://example.org/b> <http://example.org/c> >> <http://example.org/p> "cg" .
"""


def test_ntriples(spark, tmp_path):
    path = write(tmp_path, "data.nt", NTRIPLES)
    lg = load_rdf(spark, path)
    quads = quad_list(lg)
    s, p = e("s"), e("p")
    plain = {q for q in quads if not q[0].startswith("_:")}
    assert plain == {
        (s, p, e("o"), ""),
        (s, p, '"plain"', ""),
        (s, p, '"hallo"@de-at', ""),
        (s, p, f'"1.50"^^<{XSD}decimal>', ""),
        (s, p, '"esc é \t \\" \\\\ \\n"', ""),
        (s, p, f'<< {e("a")} {e("b")} "c" >>', ""),
        (f'<< {e("a")} {e("b")} {e("c")} >>', p, '"cg"', ""),
    }
    (bn,) = [q for q in quads if q[0].startswith("_:")]
    assert BNODE.fullmatch(bn[0]).groups() == ("_", "n1") and BNODE.fullmatch(bn[2]).groups() == ("_", "n2")
    assert rows(lg.quoted) == {
        (f'<< {e("a")} {e("b")} "c" >>', e("a"), e("b"), '"c"'),
        (f'<< {e("a")} {e("b")} {e("c")} >>', e("a"), e("b"), e("c")),
    }
    assert_same_as_pyoxigraph(lg, path, "TURTLE")  # results.py reads .nt with the Turtle parser too


def test_triples_into_named_graph(spark, tmp_path):
    path = write(tmp_path, "data.nt", NTRIPLES)
    lg = load_rdf(spark, path, graph="http://example.org/g")
    assert {q[3] for q in quad_list(lg)} == {e("g")}
    lg = load_rdf(spark, write(tmp_path, "d.ttl", TURTLE), graph="<http://example.org/g2>")
    assert {q[3] for q in quad_list(lg)} == {e("g2")}
    with pytest.raises(ValueError, match="graph must be an IRI"):
        load_rdf(spark, path, graph="not an iri")


NQUADS = """\
<http://example.org/s> <http://example.org/p> <http://example.org/o> <http://example.org/g1> .
<http://example.org/s> <http://example.org/p> "default" .
_:b <http://example.org/p> "in g2" <http://example.org/g2> .
<http://example.org/s> <http://example.org/p> "bnode graph" _:g .
<< <http://example.org/a> <http://example.org/b> <http://example.org/c> >> <http://example.org/p> \
"star" <http://example.org/g1> .
"""


def test_nquads(spark, tmp_path):
    path = write(tmp_path, "data.nq", NQUADS)
    quads = quad_list(load_rdf(spark, path))
    named = {q for q in quads if not q[0].startswith("_:") and not q[3].startswith("_:")}
    assert named == {
        (e("s"), e("p"), e("o"), e("g1")),
        (e("s"), e("p"), '"default"', ""),
        (f'<< {e("a")} {e("b")} {e("c")} >>', e("p"), '"star"', e("g1")),
    }
    assert [q[3] for q in quads if q[2] == '"in g2"'] == [e("g2")]
    assert BNODE.fullmatch([q[3] for q in quads if q[2] == '"bnode graph"'][0])
    # graph= applies to the default-graph quads only
    quads = quad_list(load_rdf(spark, path, graph=EX + "dg"))
    assert {q[3] for q in quads if q[2] in ('"default"', e("o"))} == {e("dg"), e("g1")}


TRIG = """\
PREFIX : <http://example.org/>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
:s :p "default graph" .
:g1 { :s :p :o1 . :s :p 2 }
GRAPH :g2 { :s :p [ :q "nested" ] . }
{ :s :p "also default" }
_:shared :p :o .
:g3 { _:shared :p "same node as in the default graph" }
"""


def test_trig_named_graphs(spark, tmp_path):
    path = write(tmp_path, "data.trig", TRIG)
    lg = load_rdf(spark, path)
    quads = quad_list(lg)
    got = set(quads)
    assert len(quads) == 8
    assert {
        (e("s"), e("p"), '"default graph"', ""),
        (e("s"), e("p"), e("o1"), e("g1")),
        (e("s"), e("p"), f'"2"^^<{XSD}integer>', e("g1")),
        (e("s"), e("p"), '"also default"', ""),
    } <= got
    shared = {q[0] for q in quads if q[0].endswith("_shared")}
    assert len(shared) == 1  # blank node labels are document-wide in TriG
    assert {q[3] for q in quads} == {"", e("g1"), e("g2"), e("g3")}
    assert_same_as_pyoxigraph(lg, path, "TRIG")


def test_trig_star_data(spark):
    path = STAR / "data-4.trig"
    lg = load_rdf(spark, path)
    assert_same_as_pyoxigraph(lg, path, "TRIG")
    ex = "http://example/"
    got = set(quad_list(lg))
    assert (f"<< <{ex}s> <{ex}p> <{ex}o1> >>", f"<{ex}q1>", f"<{ex}z1>", f"<{ex}g>") in got
    b = {q[0] for q in got if q[3] == f"<{ex}g1>"}
    assert len(b) == 1
    (label,) = b
    assert (f"<< {label} <{ex}r> <{ex}o3> >>", f"<{ex}pb>", '"abc"', f"<{ex}g2>") in got


def test_rdfxml_with_relative_iri(spark):
    path = W3C / "sparql11" / "subquery" / "sq01.rdf"
    lg = load_rdf(spark, path)
    ins = "http://www.example.org/instance#"
    p = "<http://www.example.org/schema#p>"
    assert set(quad_list(lg)) == {
        (f"<{ins}a>", p, f"<{ins}b>", ""),
        (f"<{ins}c>", p, f"<{path.resolve().as_uri()}>", ""),  # rdf:resource="" is the file's URI
    }
    lg = load_rdf(spark, path, base_iri="http://base.example/doc")
    assert (f"<{ins}c>", p, "<http://base.example/doc>", "") in set(quad_list(lg))
    assert_same_as_pyoxigraph(lg, path, "RDF_XML", base="http://base.example/doc")


def test_relative_iris_and_format_option(spark, tmp_path):
    path = write(tmp_path, "rel.data", "<a> <b> <../c> .\n")
    with pytest.raises(ValueError, match="pass format="):
        load_rdf(spark, path)
    quads = quad_list(load_rdf(spark, path, format="turtle"))
    base = path.resolve().as_uri()
    assert quads == [(f"<{base.rsplit('/', 1)[0]}/a>", f"<{base.rsplit('/', 1)[0]}/b>",
                      f"<{base.rsplit('/', 2)[0]}/c>", "")]
    quads = quad_list(load_rdf(spark, path, format="Turtle", base_iri="http://h.example/x/y"))
    assert quads == [("<http://h.example/x/a>", "<http://h.example/x/b>", "<http://h.example/c>", "")]


def test_rdf_star_turtle_annotation_and_nested(spark):
    path = STAR / "data-0.ttl"
    lg = load_rdf(spark, path)
    assert_same_as_pyoxigraph(lg, path, "TURTLE")

    def x(n):
        return f"<http://example/{n}>"

    abc = f"<< {x('a')} {x('b')} {x('c')} >>"
    x1 = f'<< {x("x1")} {x("y1")} "123"^^<{XSD}integer> >>'
    x2 = f'<< {x("x2")} {x("y3")} "123"^^<{XSD}integer> >>'
    s1 = f"<< {x('s1')} {x('p1')} {x('o1')} >>"
    assert set(quad_list(lg)) == {
        (abc, x("q"), x("z"), ""),
        (x("a"), x("q"), abc, ""),
        (x("f"), x("g"), f"<< {x1} {x('p')} {x('o')} >>", ""),
        (x("f"), x("g"), f"<< {x('s')} {x('p')} {x2} >>", ""),
        (s1, x("q"), s1, ""),
        (x("a"), x("b"), x("c"), ""),          # annotation syntax asserts the triple ...
        (abc, x("q1"), x("z1"), ""),           # ... and annotates the quoted triple
    }
    assert rows(lg.quoted) == {
        (abc, x("a"), x("b"), x("c")),
        (x1, x("x1"), x("y1"), f'"123"^^<{XSD}integer>'),
        (f"<< {x1} {x('p')} {x('o')} >>", x1, x("p"), x("o")),
        (x2, x("x2"), x("y3"), f'"123"^^<{XSD}integer>'),
        (f"<< {x('s')} {x('p')} {x2} >>", x("s"), x("p"), x2),
        (s1, x("s1"), x("p1"), x("o1")),
    }


@pytest.mark.parametrize("name", ["data-1.ttl", "data-2.ttl", "data-3.ttl", "data-5.ttl", "data-6.trig",
                                  "data-7.ttl", "data-order.ttl", "data-order-kind.ttl"])
def test_rdf_star_cg_data_files(spark, name):
    path = STAR / name
    assert_same_as_pyoxigraph(load_rdf(spark, path), path, rdf.OX_FORMATS[rdf.detect_format(path)])


def test_language_tags_lower_cased(spark, tmp_path):
    path = write(tmp_path, "lang.ttl", '<http://e/s> <http://e/p> "a"@EN, "b"@en-US, "c"@Zh-Hant-TW .\n')
    assert {q[2] for q in quad_list(load_rdf(spark, path))} == {'"a"@en', '"b"@en-us', '"c"@zh-hant-tw'}
    path = write(tmp_path, "lang.nt", '<http://e/s> <http://e/p> "a"@EN-GB .\n')
    assert quad_list(load_rdf(spark, path)) == [("<http://e/s>", "<http://e/p>", '"a"@en-gb', "")]


def test_gzip_and_non_local_sources(spark, tmp_path, monkeypatch):
    import gzip

    from rspark.spark.loading import loader

    ttl = tmp_path / "data.ttl.gz"
    ttl.write_bytes(gzip.compress(TURTLE.encode()))
    nt = tmp_path / "data.nt.gz"
    nt.write_bytes(gzip.compress(NTRIPLES.encode()))
    expected_ttl = {q[:3] for q in quad_list(load_rdf(spark, write(tmp_path, "plain.ttl", TURTLE)))
                    if not q[0].startswith("_:") and not q[2].startswith("_:")}
    assert {q[:3] for q in quad_list(load_rdf(spark, ttl)) if not q[0].startswith("_:")
            and not q[2].startswith("_:")} == expected_ttl
    assert len(quad_list(load_rdf(spark, nt))) == 8
    # a URI with another scheme (hdfs://, s3a://...) is read through Spark's binaryFile / text sources
    monkeypatch.setattr(loader.rdf, "local_path", lambda path: None)
    assert len(quad_list(load_rdf(spark, ttl.resolve().as_uri()))) == 15
    lg = load_rdf(spark, nt.resolve().as_uri())
    assert len(quad_list(lg)) == 8


def test_ntriples_relative_iris_resolve(spark, tmp_path):
    path = write(tmp_path, "rel.nt", "<s> <http://e/p> <../o> .\n<http://e/s> <http://e/p> <http://e/o> .\n")
    quads = quad_list(load_rdf(spark, path, base_iri="http://b.example/x/y"))
    assert set(quads) == {("<http://b.example/x/s>", "<http://e/p>", "<http://b.example/o>", ""),
                          ("<http://e/s>", "<http://e/p>", "<http://e/o>", "")}


def test_cached_not_reparsed(spark, tmp_path):
    lg = load_rdf(spark, write(tmp_path, "data.nt", NTRIPLES))
    plan = lg.quads._jdf.queryExecution().optimizedPlan().toString()
    assert "InMemoryRelation" in plan
    assert lg.quads.count() == lg.quads.count() == 8
    lg.unpersist()
    assert lg.quads.count() == 8  # still usable (re-parsed) after unpersist


def test_empty_file(spark, tmp_path):
    for name in ("empty.nt", "empty.ttl", "empty.trig"):
        lg = load_rdf(spark, write(tmp_path, name, ""))
        assert quad_list(lg) == [] and lg.errors == [] and lg.quoted.count() == 0


# --------------------------------------------------------------------------------------------------- errors


def test_ntriples_error_strict(spark, tmp_path):
    path = write(tmp_path, "bad.nt", NTRIPLES + '<http://e/s> <http://e/p> "unterminated .\n')
    with pytest.raises(DataError) as info:
        load_rdf(spark, path)
    err = info.value
    assert (err.file, err.line, err.column) == (str(path), 11, 27)
    assert str(err).startswith(f"{path}:11:27: ")


def test_ntriples_errors_lenient(spark, tmp_path):
    text = NTRIPLES + "<http://e/s> <http://e/p .\n<http://e/s> <http://e/p> <http://e/o> .\nnot a triple\n"
    path = write(tmp_path, "bad.nt", text)
    lg = load_rdf(spark, path, strict=False)
    assert [(x.line, x.file) for x in lg.errors] == [(11, str(path)), (13, str(path))]
    assert all(isinstance(x, DataError) and x.column is not None for x in lg.errors)
    assert lg.quads.count() == 9  # 8 good ones before, 1 after the bad lines


def test_error_line_numbers_across_spark_splits(spark, tmp_path):
    """Small input splits: each bad line is reported at its physical line, wherever its split starts."""
    bad = {3, 100, 257, 258, 999}
    lines = [
        "garbage line" if i in bad else f"<http://e/s{i}> <http://e/p> \"{i}\" ."
        for i in range(1, 1001)
    ]
    path = write(tmp_path, "many.nt", "\n".join(lines) + "\n")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")
    try:
        lg = load_rdf(spark, path, strict=False)
        assert lg.quads.rdd.getNumPartitions() > 10
        assert [x.line for x in lg.errors] == sorted(bad)
        assert lg.quads.count() == 1000 - len(bad)
        assert {int(r.o.strip('"')) for r in lg.quads.select("o").collect()} == set(range(1, 1001)) - bad
        with pytest.raises(DataError) as info:
            load_rdf(spark, path)
        assert info.value.line == 3
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_ntriples_hex_like_blank_node_labels_across_splits(spark, tmp_path, executor_loads):
    """N-Triples labels are all written by the author, even when they look like a parser's generated ones (16+ hex
    digits): one label is one node in every split, two labels are two nodes."""
    a, b = "_:0123456789abcdef", "_:fedcba9876543210"
    lines = [f'{a if i < 50 else b} <http://e/p> "{i}" .' for i in range(100)] + [f'{a} <http://e/q> "a" .']
    path = write(tmp_path, "hex.nt", "\n".join(lines) + "\n")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1024")
    try:
        lg = load_rdf(spark, path)
        assert lg.quads.rdd.getNumPartitions() > 2
        rows = lg.quads.select("s", "p", "o").collect()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    by_subject: dict[str, set] = {}
    for r in rows:
        by_subject.setdefault(r.s, set()).add(r.o)
    assert len(by_subject) == 2
    assert sorted(len(v) for v in by_subject.values()) == [50, 51]
    q_subject = next(r.s for r in rows if r.p == "<http://e/q>")
    assert by_subject[q_subject] == {f'"{i}"' for i in range(50)} | {'"a"'}
    assert all(s.endswith("_0123456789abcdef") or s.endswith("_fedcba9876543210") for s in by_subject)


def test_nquads_error_lenient_and_strict(spark, tmp_path):
    path = write(tmp_path, "bad.nq", NQUADS + "<http://e/s> <http://e/p> <http://e/o> <http://e/g> <http://e/x> .\n")
    lg = load_rdf(spark, path, strict=False)
    assert [x.line for x in lg.errors] == [6]
    assert lg.quads.count() == 5
    with pytest.raises(DataError, match=r"bad\.nq:6:"):
        load_rdf(spark, path)


def test_turtle_error_strict_and_lenient(spark, tmp_path):
    text = (
        "@prefix : <http://example.org/> .\n"
        ":a :p :b .\n"
        ":a :p :b :c .\n"                 # line 3: one term too many
        ":d :p [ :q 1 ] .\n"
        ":e :p \"unterminated .\n"        # line 5
        ":f :p :g .\n"
        ":h :p undeclared:x .\n"          # line 7: unknown prefix
        ":i :p :j .\n"
    )
    path = write(tmp_path, "bad.ttl", text)
    with pytest.raises(DataError) as info:
        load_rdf(spark, path)
    assert (info.value.file, info.value.line, info.value.column) == (str(path), 3, 10)
    lg = load_rdf(spark, path, strict=False)
    assert [(x.line, x.column) for x in lg.errors] == [(3, 10), (5, 7), (7, 7)]
    got = {(s, o) for s, p, o, g in quad_list(lg) if p == e("p")}
    assert {(e("a"), e("b")), (e("f"), e("g")), (e("i"), e("j"))} <= got
    assert len(quad_list(lg)) == 5  # :a :p :b, :d (2 triples), :f, :i -- nothing of the bad statements
    assert all(e("c") not in q for q in quad_list(lg))


def test_trig_error_lenient_skips_the_graph_block(spark, tmp_path):
    text = "PREFIX : <http://example.org/>\n:g1 { :a :p :b }\n:g2 { :a :p :b :c }\n:g3 { :a :p :b }\n"
    path = write(tmp_path, "bad.trig", text)
    lg = load_rdf(spark, path, strict=False)
    assert [(x.line, x.column) for x in lg.errors] == [(3, 16)]
    assert {q[3] for q in quad_list(lg)} == {e("g1"), e("g3")}


def test_rdfxml_error(spark, tmp_path):
    path = write(tmp_path, "bad.rdf", '<?xml version="1.0"?>\n<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/'
                 '22-rdf-syntax-ns#"><rdf:Description rdf:about="http://e/a"></rdf:Descr></rdf:RDF>\n')
    with pytest.raises(DataError, match="bad.rdf: .*rdf:Descr"):
        load_rdf(spark, path)


# =================================================================================================== streams

FIGURE1 = """\
@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

:G3 { :b1 :q :c1 . :b2 :q :c2 . }
:G3 prov:generatedAtTime 6 .
:G1 prov:generatedAtTime "2"^^xsd:integer .
:G1 { :a1 :p :b1 . }
GRAPH :G5 { :a3 :p :b3 . :b1 :q :c1 }
:G2 { :a2 :p :b2 }
:G5 prov:generatedAtTime 10 .
:G4 { :b2 :q :c2 . }
:G2 prov:generatedAtTime 4 ; :source :sensor1 .
:G4 prov:generatedAtTime "8"^^xsd:long .
:stream :label "figure 1" .
"""

FIGURE1_ELEMENTS = {(e("G3"), 6, 0), (e("G1"), 2, 1), (e("G5"), 10, 2), (e("G2"), 4, 3), (e("G4"), 8, 4)}
FIGURE1_QUADS = {
    (e("a1"), e("p"), e("b1"), e("G1"), 2, 1),
    (e("a2"), e("p"), e("b2"), e("G2"), 4, 3),
    (e("b1"), e("q"), e("c1"), e("G3"), 6, 0),
    (e("b2"), e("q"), e("c2"), e("G3"), 6, 0),
    (e("b2"), e("q"), e("c2"), e("G4"), 8, 4),
    (e("a3"), e("p"), e("b3"), e("G5"), 10, 2),
    (e("b1"), e("q"), e("c1"), e("G5"), 10, 2),
}


def test_stream_csrbench(spark):
    st = load_stream(spark, "http://ex.org/csrbench", CSRBENCH)
    assert isinstance(st, LoadedStream)
    assert st.iri == "http://ex.org/csrbench"
    assert (st.time_kind, st.time_scale, st.errors) == ("datetime", 1, [])
    assert st.elements.columns == ["element", "ts", "seq"]
    assert st.quads.columns == ["s", "p", "o", "element", "ts", "seq"]
    assert ranked(st.elements) == {(f"<http://ex.org/csrbench/graph/{i:02d}>", i * 1000, i) for i in range(34)}
    expected = from_rdf(CSRBENCH.read_bytes(), "TRIG", base_iri=CSRBENCH.resolve().as_uri())
    named = [q for q in expected.quads if q[3] is not None]
    assert st.quads.count() == len(named) == 15188
    per_graph = {r.element: r["count"] for r in st.quads.groupBy("element").count().collect()}
    assert per_graph == {g: sum(1 for q in named if q[3].n3() == g) for g in per_graph}
    assert ranked(st.quads, "ts", "seq") == {(i * 1000, i) for i in range(34)}
    assert st.metadata.count() == 0  # its default graph holds only the timestamps
    assert st.has_metadata is False


def test_stream_numeric_out_of_order(spark, tmp_path):
    st = load_stream(spark, "http://example.org/s", write(tmp_path, "fig1.trig", FIGURE1))
    assert (st.time_kind, st.time_scale, st.errors) == (TimeKind.NUMERIC, 1, [])
    assert ranked(st.elements) == FIGURE1_ELEMENTS
    assert ranked(st.quads) == FIGURE1_QUADS
    assert rows(st.metadata) == {(e("G2"), e("source"), e("sensor1")), (e("stream"), e("label"), '"figure 1"')}
    assert st.has_metadata is True
    assert st.quoted.count() == 0


def test_stream_nquads_same_as_trig(spark, tmp_path):
    lines = []
    for g, ts, triples in [("G4", 8, [("b2", "q", "c2")]), ("G1", 2, [("a1", "p", "b1")]),
                           ("G3", 6, [("b1", "q", "c1"), ("b2", "q", "c2")]), ("G2", 4, [("a2", "p", "b2")]),
                           ("G5", 10, [("a3", "p", "b3"), ("b1", "q", "c1")])]:
        lines += [f"{e(s)} {e(p)} {e(o)} {e(g)} ." for s, p, o in triples]
        lines.append(f'{e(g)} <{PROV}> "{ts}"^^<{XSD}integer> .')
    st = load_stream(spark, "http://example.org/s", write(tmp_path, "fig1.nq", "\n".join(lines) + "\n"))
    assert (st.time_kind, st.time_scale, st.errors) == (TimeKind.NUMERIC, 1, [])
    order = ["G4", "G1", "G3", "G2", "G5"]
    assert ranked(st.elements) == {(e(g), ts, order.index(g)) for g, ts in [("G1", 2), ("G2", 4), ("G3", 6),
                                                                           ("G4", 8), ("G5", 10)]}
    assert rows(st.quads, "s", "p", "o", "element", "ts") == {q[:5] for q in FIGURE1_QUADS}



def test_stream_content_join_broadcasts_a_small_element_table(spark, tmp_path, monkeypatch, executor_loads):
    """The content joins its elements by broadcasting their table when it is small for the JVM's memory (the
    quads are not shuffled), else by a shuffled hash join: the same content either way."""
    from rspark.spark.loading import loader

    def plan(st) -> str:
        return st.quads._jdf.queryExecution().executedPlan().toString()

    assert loader._broadcast_limit(spark) == 6 * 1024 ** 3 // 2000  # the test session's 6g driver (conftest.py)
    path = write(tmp_path, "fig1.trig", FIGURE1)
    small = load_stream(spark, "http://example.org/s", path)
    assert "BroadcastHashJoin" in plan(small) and "ShuffledHashJoin" not in plan(small)
    monkeypatch.setattr(loader, "BROADCAST_BYTES_PER_ELEMENT", 4 * 1024 ** 3)  # a limit of one element
    large = load_stream(spark, "http://example.org/s", path)
    assert "ShuffledHashJoin" in plan(large) and "BroadcastHashJoin" not in plan(large)
    assert ranked(small.quads) == ranked(large.quads) == FIGURE1_QUADS


def test_stream_seq_sorts_elements_in_file_order_across_splits(spark, tmp_path, monkeypatch):
    """A stream read in many splits: seq, computed from each element's first position alone (its split's rank,
    line and ordinal), sorts the elements in file order (by first line), whatever the timestamps, with an element
    whose timestamp comes before its graph, another whose graph lines are split apart, and a rejected element in
    between. The row-number fallback (for positions too large for one long) gives the same order."""
    from rspark.spark.loading import loader

    lines, order = [], []
    for i in range(300):
        g = f"<http://e/g{i}>"
        stamp = f'{g} <{PROV}> "{(i * 7919) % 1000}"^^<{XSD}integer> .'
        if i == 150:
            lines.append(f"<http://e/x> <http://e/p> <http://e/o> {g} .")  # no timestamp: rejected, no seq
            continue
        if i % 3 == 0:
            lines.append(stamp)
        lines.append(f'<http://e/s{i}> <http://e/p> "{i}" {g} .')
        if i % 3 != 0:
            lines.append(stamp)
        order.append(g)
    lines.append('<http://e/late> <http://e/p> "late" <http://e/g10> .')  # g10's second line, at the end
    path = write(tmp_path, "many.nq", "\n".join(lines) + "\n")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")
    try:
        split = load_stream(spark, "http://e/s", path)
        assert split._cached[0].select("blk").distinct().count() > 5  # the raw parse: read in many splits
        assert split.quads.count() == 300
        monkeypatch.setattr(loader._FileOrder, "LIMIT", 1)
        fallback = load_stream(spark, "http://e/s", path)
        assert "Window" in fallback.elements._jdf.queryExecution().executedPlan().toString()
        assert "Window" not in split.elements._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    expected = {(g, (int(g[len("<http://e/g"):-1]) * 7919) % 1000, k) for k, g in enumerate(order)}
    assert ranked(split.elements) == ranked(fallback.elements) == expected
    assert rows(fallback.elements, "seq") == {(k,) for k in range(len(order))}  # the fallback: a row number
    assert [str(x).split(": ", 1)[1] for x in split.errors] == [
        "no timestamp (a default-graph triple <element> <timestamp-predicate> literal) (element <http://e/g150>)"]


def test_file_order_key_is_split_rank_line_and_ordinal(spark):
    """The key's arithmetic: rank(blk) * (max idx + 1) * (max ord + 1) + idx * (max ord + 1) + ord, so that every
    position of the file gets its own value and they sort as (blk, idx, ord) do."""
    from pyspark.sql import functions as F

    from rspark.spark.loading.loader import _FileOrder

    order = _FileOrder([0, 4096, 8192], max_idx=9, max_ord=2)
    assert (order.o, order.r, order.fits) == (3, 30, True)
    positions = [(b, i, o) for b in (0, 4096, 8192) for i in range(10) for o in range(3)]
    df = spark.createDataFrame(positions, "blk long, idx long, ord long")
    keys = [r[0] for r in df.select(order.key(F.col("blk"), F.col("idx"), F.col("ord"))).collect()]
    assert keys == list(range(90))
    assert _FileOrder([0], max_idx=(1 << 31) - 1, max_ord=(1 << 31) - 1).fits is False


def test_stream_decimal_timestamps_scale(spark, tmp_path):
    text = (
        "PREFIX : <http://example.org/>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"
        ":g1 { :a :p 1 } :g1 prov:generatedAtTime 1.5 .\n"
        ":g2 { :a :p 2 } :g2 prov:generatedAtTime 2.25 .\n"
        ":g3 { :a :p 3 } :g3 prov:generatedAtTime 3 .\n"
        ":g4 { :a :p 4 } :g4 prov:generatedAtTime 4.500 .\n"
        ":g0 { :a :p 0 } :g0 prov:generatedAtTime -0.75 .\n"
    )
    st = load_stream(spark, "http://example.org/s", write(tmp_path, "dec.trig", text))
    assert (st.time_kind, st.time_scale, st.errors) == (TimeKind.NUMERIC, 100, [])
    assert ranked(st.elements) == {(e("g1"), 150, 0), (e("g2"), 225, 1), (e("g3"), 300, 2), (e("g4"), 450, 3),
                                 (e("g0"), -75, 4)}


def test_stream_datetime_timezones(spark, tmp_path):
    stamps = ["2016-03-01T13:00:00Z", "2016-03-01T13:00:00.25", "2016-03-01T14:00:01+01:00",
              "2016-03-01T08:00:00.999999-05:00", "1969-12-31T23:59:59.5Z"]
    text = "PREFIX : <http://example.org/>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n" + "".join(
        f':g{i} {{ :a :p {i} }}\n:g{i} prov:generatedAtTime "{s}"^^<{XSD}dateTime> .\n'
        for i, s in enumerate(stamps))
    st = load_stream(spark, "http://example.org/s", write(tmp_path, "dt.trig", text))
    base = int(dt.datetime(2016, 3, 1, 13, tzinfo=dt.UTC).timestamp() * 1000)
    assert (st.time_kind, st.time_scale, st.errors) == ("datetime", 1, [])
    assert ranked(st.elements) == {(e("g0"), base, 0), (e("g1"), base + 250, 1), (e("g2"), base + 1000, 2),
                                 (e("g3"), base + 999, 3), (e("g4"), -500, 4)}


def test_stream_rdf_star(spark, tmp_path):
    text = (
        "PREFIX : <http://example.org/>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"
        ":g1 { :alice :knows :bob {| :since 2020 |} . }\n"
        ":g1 prov:generatedAtTime 1 .\n"
        ":g2 { << :alice :knows :bob >> :certainty 0.9 . :x :says << :a :b << :c :d :e >> >> . }\n"
        ":g2 prov:generatedAtTime 2 .\n"
        "<< :g1 :about :alice >> :by :crawler .\n"
    )
    st = load_stream(spark, "http://example.org/s", write(tmp_path, "star.trig", text))
    assert st.errors == []
    akb = f"<< {e('alice')} {e('knows')} {e('bob')} >>"
    cde = f"<< {e('c')} {e('d')} {e('e')} >>"
    abcde = f"<< {e('a')} {e('b')} {cde} >>"
    assert rows(st.quads, "s", "p", "o", "element") == {
        (e("alice"), e("knows"), e("bob"), e("g1")),
        (akb, e("since"), f'"2020"^^<{XSD}integer>', e("g1")),
        (akb, e("certainty"), f'"0.9"^^<{XSD}decimal>', e("g2")),
        (e("x"), e("says"), abcde, e("g2")),
    }
    g1about = f"<< {e('g1')} {e('about')} {e('alice')} >>"
    assert rows(st.metadata) == {(g1about, e("by"), e("crawler"))}
    assert rows(st.quoted) == {
        (akb, e("alice"), e("knows"), e("bob")),
        (abcde, e("a"), e("b"), cde),
        (cde, e("c"), e("d"), e("e")),
        (g1about, e("g1"), e("about"), e("alice")),
    }


BAD_STREAM = """\
@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:g1 { :a :p :b . }
:g1 prov:generatedAtTime "2020-01-01T00:00:01Z"^^xsd:dateTime .
:g2 { :a :p :b . }
:g3 { :a :p "unterminated . :c :d :e }
:g3 prov:generatedAtTime "2020-01-01T00:00:03Z"^^xsd:dateTime .
:g8 { :a :p :b . }
:g8 prov:generatedAtTime "yesterday"^^xsd:dateTime .
:g4 { :a :p :b :c . }
:g4 prov:generatedAtTime "2020-01-01T00:00:04Z"^^xsd:dateTime .
:g5 { :x :y :z . }
:g5 prov:generatedAtTime 5 .
:g6 { :a :p :b .
:g6 prov:generatedAtTime "2020-01-01T00:00:06+01:00"^^xsd:dateTime .
:g7 { :a :p :b . }
:g7 prov:generatedAtTime "2020-01-01T00:00:07.123456"^^xsd:dateTime .
:g9 { :a :p :b . }
:g9 prov:generatedAtTime "2020-01-01T00:00:09Z"^^xsd:dateTime, "2020-01-01T00:00:10Z"^^xsd:dateTime .
:g10 { :a :p :b . }
:g10 prov:generatedAtTime "10" .
"""


def test_stream_errors_lenient(spark, tmp_path):
    path = write(tmp_path, "bad.trig", BAD_STREAM)
    st = load_stream(spark, "http://example.org/s", path)
    got = [(x.line, x.element, x.file) for x in st.errors]
    assert got == [
        (6, e("g2"), str(path)),    # no timestamp
        (7, e("g3"), str(path)),    # malformed graph block (unterminated string)
        (10, e("g8"), str(path)),   # not an xsd:dateTime
        (11, e("g4"), str(path)),   # malformed graph block
        (14, e("g5"), str(path)),   # a number in a date-time stream
        (15, e("g6"), str(path)),   # graph block not closed
        (20, e("g9"), str(path)),   # two timestamps
        (22, e("g10"), str(path)),  # a plain string
    ]
    messages = [x.reason for x in st.errors]
    assert "no timestamp" in messages[0]
    assert messages[1].startswith('unterminated string: no closing " on the line where it starts')
    assert st.errors[1].column == 13  # where the string opens
    assert "not an xsd:dateTime: 'yesterday'" in messages[2]
    assert "one stream uses one kind" in messages[4]
    assert "not terminated" in messages[5]
    assert "more than one timestamp" in messages[6]
    assert "plain string" in messages[7]
    assert str(st.errors[0]) == f"{path}:6: no timestamp (a default-graph triple <element> <timestamp-predicate> " \
                                f"literal) (element {e('g2')})"
    assert st.time_kind == "datetime"
    assert ranked(st.elements) == {(e("g1"), 1577836801000, 0), (e("g7"), 1577836807123, 1)}
    assert rows(st.quads, "element") == {(e("g1"),), (e("g7"),)}
    with pytest.raises(DataError) as info:
        load_stream(spark, "http://example.org/s", path, strict=True)
    assert (info.value.line, info.value.element) == (6, e("g2"))


def test_stream_nquads_errors(spark, tmp_path):
    ts = f"<{PROV}>"
    text = "\n".join([
        f'{e("a")} {e("p")} {e("b")} {e("g1")} .',
        f'{e("g1")} {ts} "1.5"^^<{XSD}decimal> .',
        f'{e("a")} {e("p")} {e("b")} {e("g2")} .',
        f'{e("a")} {e("p")} "broken {e("g2")} .',                         # line 4: rejects element g2
        f'{e("g2")} {ts} "2"^^<{XSD}integer> .',
        f'<< {e("a")} {e("p")} {e("b")} >> {e("q")} "x" {e("g3")} .',
        f'{e("g3")} {ts} "2.25"^^<{XSD}decimal> .',
        f'{e("x")} {e("p")} {e("y")} {e("g4")} .',                        # line 8: g4 has no timestamp
        f'{e("a")} {e("p")} {e("b")} {e("g5")} .',
        f'{e("g5")} {ts} "2020-01-01T00:00:00Z"^^<{XSD}dateTime> .',      # line 10: wrong kind
    ]) + "\n"
    path = write(tmp_path, "bad.nq", text)
    st = load_stream(spark, "http://example.org/s", path)
    assert [(x.line, x.element) for x in st.errors] == [(4, e("g2")), (8, e("g4")), (10, e("g5"))]
    assert (st.time_kind, st.time_scale) == (TimeKind.NUMERIC, 100)
    assert ranked(st.elements) == {(e("g1"), 150, 0), (e("g3"), 225, 1)}
    assert rows(st.quoted, "t") == {(f"<< {e('a')} {e('p')} {e('b')} >>",)}
    with pytest.raises(DataError, match=r"bad\.nq:4:"):
        load_stream(spark, "http://example.org/s", path, strict=True)


def _plain_stamp_lines() -> list[str]:
    ts, i, lg = f"<{PROV}>", f"^^<{XSD}integer>", f"^^<{XSD}long>"

    def data(g: str, o: str = "b") -> str:
        return f'{e("a")} {e("p")} {e(o)} {e(g)} .'

    return [
        data("g1"), f'{e("g1")} {ts} "5"{i} .',
        data("g2"), f'{e("g2")} {ts} "-3"{i} .',                                   # a negative timestamp
        data("g3"),                                                                # line 5: no timestamp
        data("g4"), f'{e("g4")} {ts} "7"{i} .', f'{e("g4")} {ts} "10"{i} .',       # line 7: three timestamps
        f'{e("g4")} {ts} "9"{i} .',
        data("g5"), f'{e("g5")} {ts} "5"{i} .', f'{e("g5")} {ts} "5"{lg} .',       # line 11: 5 twice, two terms
        data("g6"), f'{e("a")} {e("p")} "broken {e("g6")} .', f'{e("g6")} {ts} "6"{i} .',  # line 14: malformed
        f'{e("g7")} {ts} "7"{i} .',                                                # no graph: metadata
        f'{e("g1")} {e("source")} {e("x")} .',                                     # metadata
        f'{e("g8")} {ts} "12"{lg} .', data("g8", "c"), data("g8", "d"),            # the timestamp first
        data("g9"), f'{e("g9")} {ts} "5"{i} .',                                    # g1's timestamp
    ]


def _stream_view(st: LoadedStream) -> tuple:
    return (ranked(st.elements), rows(st.quads, "s", "p", "o", "element", "ts"), rows(st.metadata),
            st.has_metadata, st.time_kind, st.time_scale, [str(x) for x in st.errors])


def test_stream_with_integer_timestamps_is_checked_with_longs_the_same_as_any_stream(spark, tmp_path, monkeypatch):
    """A stream whose timestamps are all canonical integers is checked with long values only (positions as
    file-order keys, a timestamp as a code), which Spark aggregates in a hash table; the general check (structs
    and strings, sorted) gives the same elements, content, metadata and errors, one timestamp in another form
    sends the whole stream to the general check, and so does a position that does not fit the key."""
    from rspark.spark.loading import loader

    calls = []
    for name in ("_plain_elements", "_general_elements"):
        real = getattr(loader, name)
        monkeypatch.setattr(loader, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k))
    path = write(tmp_path, "plain.nq", "\n".join(_plain_stamp_lines()) + "\n")
    plain = load_stream(spark, EX + "s", path)
    assert "SortAggregate" not in plain.elements._jdf.queryExecution().executedPlan().toString()
    monkeypatch.setattr(loader, "PLAIN_ELEMENTS", False)
    general = load_stream(spark, EX + "s", path)
    assert calls == ["_plain_elements", "_general_elements"]
    assert _stream_view(plain) == _stream_view(general)
    assert ranked(plain.elements) == {(e("g1"), 5, 0), (e("g2"), -3, 1), (e("g8"), 12, 2), (e("g9"), 5, 3)}
    # the plain check's summary also gives the stream's bounds (the valid elements' least and greatest ts, as
    # stream_bounds finds them: rejected g4's 10 and metadata g7's 7 do not count); the general check leaves them
    assert plain.bounds == stream_bounds(plain.elements) == (-3, 12) and general.bounds is None
    assert rows(plain.metadata) == {(e("g7"), f"<{PROV}>", f'"7"^^<{XSD}integer>'), (e("g1"), e("source"), e("x"))}
    assert [(x.line, x.element) for x in plain.errors] == [(5, e("g3")), (7, e("g4")), (11, e("g5")), (14, e("g6"))]
    assert [x.reason for x in plain.errors][:3] == [
        f"no timestamp (a default-graph triple <element> <timestamp-predicate> literal) (element {e('g3')})",
        # the least and the greatest as written
        f'more than one timestamp: "10"^^<{XSD}integer>, "9"^^<{XSD}integer> (element {e("g4")})',
        f'more than one timestamp: "5"^^<{XSD}integer>, "5"^^<{XSD}long> (element {e("g5")})',
    ]
    with pytest.raises(DataError, match=r"plain\.nq:5: no timestamp"):
        load_stream(spark, EX + "s", path, strict=True)
    monkeypatch.setattr(loader, "PLAIN_ELEMENTS", True)
    calls.clear()
    other = write(tmp_path, "other.nq", "\n".join(_plain_stamp_lines() + [
        f'{e("a")} {e("p")} {e("b")} {e("g10")} .', f'{e("g10")} <{PROV}> "010"^^<{XSD}integer> .']) + "\n")
    st = load_stream(spark, EX + "s", other)
    assert calls == ["_general_elements"]
    assert ranked(st.elements) == ranked(plain.elements) | {(e("g10"), 10, 4)}
    calls.clear()
    monkeypatch.setattr(loader._FileOrder, "LIMIT", 1)
    assert _stream_view(load_stream(spark, EX + "s", path)) == _stream_view(plain)
    assert calls == ["_general_elements"]
    # TriG (parsed in one task, positions are statement lines): the same as the general check
    monkeypatch.setattr(loader._FileOrder, "LIMIT", 1 << 62)
    trig = write(tmp_path, "plain.trig", "PREFIX : <http://example.org/>\nPREFIX prov: <http://www.w3.org/ns/prov#>\n"
                 ":g1 { :a :p :b }\n:g1 prov:generatedAtTime 5 .\n:g2 { :a :p :c .\n  :a :p :d }\n:g3 { :a :p :e }\n"
                 ":g3 prov:generatedAtTime 7, 9 .\n:g2 prov:generatedAtTime 6 .\n")
    calls.clear()
    plain = load_stream(spark, EX + "s", trig)
    monkeypatch.setattr(loader, "PLAIN_ELEMENTS", False)
    assert _stream_view(plain) == _stream_view(load_stream(spark, EX + "s", trig))
    assert calls == ["_plain_elements", "_general_elements"]
    assert ranked(plain.elements) == {(e("g1"), 5, 0), (e("g2"), 6, 1)}
    assert [(x.line, x.element) for x in plain.errors] == [(8, e("g3"))]


def test_parse_job_counts_what_the_load_needs(spark, tmp_path):
    """When the JVM line scanner reads every line, the job that parses the file also counts what
    ``_materialise`` would count by reading the parse again (per kind, metadata, timestamps that are not canonical
    integers, the file-order key's bounds); with lines left to Python, ``_materialise`` runs."""
    from rspark.spark.loading import loader

    pred = f"<{PROV}>"
    lines = [x for x in _plain_stamp_lines() if "broken" not in x]
    lines += [f'{e("g10")} {pred} "010"^^<{XSD}integer> .', f'{e("a")} {e("p")} {e("b")} {e("g10")} .']
    for name, text, by_parse in (("all.nq", lines, True), ("py.nq", lines + [f'{e("a")} {e("p")} "x" <rel> .'], False)):
        path = str(write(tmp_path, name, "\n".join(text) + "\n"))
        raw, cached, counts = loader._parse(spark, path, fmt="nquads", base_iri="http://e/", token="bT",
                                            default_graph="", triple_graph=None, strict=False, pred=pred)
        assert (cached[0].is_cached, len(cached) == 1) == (True, by_parse)
        again = loader._materialise(raw, pred)
        order, order2 = counts.pop("positions"), again.pop("positions")
        assert counts == again == {loader.K_QUAD: len(text), "other": 1, "stamps_other": 1}
        assert (order.blks, order.o, order.r) == (order2.blks, order2.o, order2.r) == ([0], 1, len(text))
        for df in cached:
            df.unpersist()


def test_stream_custom_predicate_and_format_check(spark, tmp_path):
    text = "PREFIX : <http://example.org/>\n:g1 { :a :p :b }\n:g1 :at 7 .\n:g1 :other 8 .\n"
    st = load_stream(spark, "<http://example.org/s>", write(tmp_path, "s.trig", text),
                     timestamp_predicate=EX + "at")
    assert st.iri == EX + "s"
    assert ranked(st.elements) == {(e("g1"), 7, 0)}
    assert rows(st.metadata) == {(e("g1"), e("other"), f'"8"^^<{XSD}integer>')}
    assert st.has_metadata is True
    # the only metadata: the timestamp of a name that has no graph (so it is no element)
    text = "PREFIX : <http://example.org/>\n:g1 { :a :p :b }\n:g1 :at 7 .\n:g2 :at 8 .\n"
    st = load_stream(spark, EX + "s", write(tmp_path, "s2.trig", text), timestamp_predicate=EX + "at")
    assert ranked(st.elements) == {(e("g1"), 7, 0)}
    assert rows(st.metadata) == {(e("g2"), e("at"), f'"8"^^<{XSD}integer>')}
    assert st.has_metadata is True
    st = load_stream(spark, EX + "s", write(tmp_path, "s3.trig", text.rsplit(":g2", 1)[0]),
                     timestamp_predicate=EX + "at")
    assert (rows(st.metadata), st.has_metadata) == (set(), False)
    with pytest.raises(ValueError, match="TriG or N-Quads"):
        load_stream(spark, "http://example.org/s", write(tmp_path, "s.ttl", "<http://e/a> <http://e/b> 1 ."))


# =================================================================================================== pure helpers


def test_parse_timestamp():
    assert parse_timestamp(f'"5"^^<{XSD}integer>') == (TimeKind.NUMERIC, 5, 0)
    assert parse_timestamp(f'"-05"^^<{XSD}long>') == (TimeKind.NUMERIC, -5, 0)
    assert parse_timestamp(f'"2.50"^^<{XSD}decimal>') == (TimeKind.NUMERIC, 25, 1)
    assert parse_timestamp(f'"100.0"^^<{XSD}decimal>') == (TimeKind.NUMERIC, 100, 0)
    assert parse_timestamp(f'"0.000"^^<{XSD}decimal>') == (TimeKind.NUMERIC, 0, 0)
    assert parse_timestamp(f'"1970-01-01T00:00:01Z"^^<{XSD}dateTime>') == (TimeKind.DATETIME, 1000, 0)
    assert parse_timestamp(f'"2000-01-01T24:00:00Z"^^<{XSD}dateTime>') == (TimeKind.DATETIME, 946771200000, 0)
    for bad in [f'"1.5"^^<{XSD}integer>', f'"x"^^<{XSD}decimal>', f'"2020-02-30T00:00:00Z"^^<{XSD}dateTime>',
                f'"2020-01-01T00:61:00Z"^^<{XSD}dateTime>', '"5"', '"5"@en', f'"5"^^<{XSD}string>', "<http://x>",
                f'"12345678901234567890"^^<{XSD}integer>']:
        with pytest.raises(ValueError):
            parse_timestamp(bad)


def test_datetime_millis_matches_python():
    rnd = random.Random(7)
    for _ in range(500):
        moment = dt.datetime(1, 1, 1, tzinfo=dt.UTC) + dt.timedelta(
            seconds=rnd.randrange(0, 9999 * 365 * 86400), microseconds=rnd.randrange(0, 1000) * 1000)
        offset = dt.timedelta(minutes=rnd.randrange(-14 * 60, 14 * 60 + 1))
        local = moment.astimezone(dt.timezone(offset))
        text = f"{local.year:04d}" + local.strftime("-%m-%dT%H:%M:%S") + f".{local.microsecond // 1000:03d}" \
            + local.strftime("%z")
        text = text[:-2] + ":" + text[-2:]
        expected = (moment - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)
        assert datetime_millis(text) == expected, text


def test_detect_format():
    assert [rdf.detect_format(f"x{ext}") for ext in (".ttl", ".turtle", ".n3", ".nt", ".nq", ".trig", ".rdf",
                                                      ".owl", ".xml", ".nt.gz")] == [
        "turtle", "turtle", "turtle", "ntriples", "nquads", "trig", "rdfxml", "rdfxml", "rdfxml", "ntriples"]
    assert rdf.detect_format("x.anything", "N-Triples") == "ntriples"
    assert rdf.detect_format("x", "rdfxml") == "rdfxml"
    with pytest.raises(ValueError):
        rdf.detect_format("x", "json")


def test_split_statements():
    text = (
        "@prefix : <http://e/> .\n"
        "PREFIX ex: <http://ex/>  # comment\n"
        ':g1 { :a :b "x}" . :c :d [ :e ( 1 2 ) ] }\n'
        "GRAPH :g2 { << :a :b :c >> :q :z . :a :b :c {| :q 1.5 |} . }\n"
        ":g1 :t 5 . :g2 :t 6.0.\n"
        "{ :x :y :z }\n"
        ":g3 { :a :b :c .\n"          # not closed: the next block starts at :g4
        ':g4 { :a :b """long\n}""" }\n'
        ":g5 { :a :b :c } _:g6 {} [] { :a :b :c }\n"
    )
    got = [(st.kind, st.line, st.column, st.label) for st in rdf.split_statements(text)]
    assert got == [
        ("directive", 1, 0, None), ("directive", 2, 0, None), ("graph", 3, 0, ":g1"), ("graph", 4, 0, ":g2"),
        ("triples", 5, 0, None), ("triples", 5, 11, None), ("graph", 6, 0, None), ("graph", 7, 0, ":g3"),
        ("graph", 8, 0, ":g4"), ("graph", 10, 0, ":g5"), ("graph", 10, 17, "_:g6"), ("graph", 10, 25, "[]"),
    ]
    assert rdf.split_statements(text)[1].text == "PREFIX ex: <http://ex/>"


def _w3c_rdf_files():
    return sorted(p for p in W3C.rglob("*") if p.suffix in (".ttl", ".nt", ".trig", ".nq", ".rdf"))


@pytest.mark.slow
@pytest.mark.testdata
def test_parsing_helpers_match_pyoxigraph_on_all_w3c_data():
    """Every RDF file of the W3C suites, through each parsing path of rspark.spark.loading.rdf (whole document,
    statement by statement, stream blocks, line batches) gives the same dataset as pyoxigraph (blank nodes up to
    isomorphism, reifiers undone)."""
    from rspark.testing.readers import parse_quads

    checked = 0
    for path in _w3c_rdf_files():
        fmt = rdf.detect_format(path)
        base = path.resolve().as_uri()
        data = path.read_bytes()
        expected = parse_quads(data, "TURTLE" if fmt == "ntriples" else rdf.OX_FORMATS[fmt], base, "cg")
        modes = ["lines"] if fmt in rdf.LINE_FORMATS else ["strict", "split"] + (["stream"] if fmt == "trig" else [])
        for mode in modes:
            if mode == "lines":
                lines = rdf.decode_text(data).splitlines()
                sink = rdf.Sink()
                rdf.parse_lines(lines, [0] * len(lines), list(range(len(lines))), sink, fmt=fmt, base_iri=base,
                                token="bT", default_graph="")
                got, problems = list(zip(sink.s, sink.p, sink.o, sink.g)), sink.problems
            else:
                got, problems = [], []
                for sink in rdf.parse_document(data, fmt=fmt, base_iri=base, token="bT", default_graph="",
                                               strict=mode == "strict", stream=mode == "stream"):
                    got += list(zip(sink.s, sink.p, sink.o, sink.g))
                    problems += sink.problems
            assert problems == [], (path, mode)
            ok, message = results_equal(as_dataset(got), DatasetResult(expected), ordered=False)
            assert ok, (path, mode, message)
            checked += 1
    assert checked > 900


def _stamp_candidates():
    """Candidate elements with every kind of timestamp (an Arrow batch of the check's input)."""
    import pyarrow as pa

    xsd = "http://www.w3.org/2001/XMLSchema#"
    values = [
        ['"0"^^<%sinteger>' % xsd], ['"42"^^<%sinteger>' % xsd], ['"-7"^^<%slong>' % xsd],
        ['"12345678901234567"^^<%sinteger>' % xsd], ['"123456789012345678"^^<%sinteger>' % xsd],
        ['"007"^^<%sinteger>' % xsd], ['"+5"^^<%sinteger>' % xsd], ['"-0"^^<%sinteger>' % xsd],
        ['"1.50"^^<%sdecimal>' % xsd], ['"3"^^<%sint>' % xsd], ['"2016-03-01T13:00:00Z"^^<%sdateTime>' % xsd],
        [], ['"1"^^<%sinteger>' % xsd, '"2"^^<%sinteger>' % xsd], ['"x"^^<%sinteger>' % xsd], ['"5"'], None,
    ]
    n = len(values)
    batch = pa.RecordBatch.from_pydict({
        "element": [f"<http://e/g{i}>" for i in range(n)], "blk": [0] * n, "idx": list(range(n)), "ord": [0] * n,
        "vals": pa.array(values, pa.list_(pa.string())), "tblk": [0] * n, "tidx": [100 + i for i in range(n)],
        "tord": [1] * n,
    })
    return batch


def test_timestamp_check_vectorised_path_equals_row_by_row():
    """The Arrow fast path for canonical integer timestamps gives exactly what the row-by-row check gives, and
    every other case (non-canonical integers, decimals, date-times, none, two, bad) still goes row by row."""
    from rspark.spark.loading.loader import _check_elements, _check_rows

    batch = _stamp_candidates()

    def rows(batches):
        return sorted((tuple(r.values()) for b in batches for r in b.to_pylist()), key=repr)

    expected = rows(_check_rows(batch))
    assert rows(_check_elements([batch])) == expected
    by_element = {r[0]: r for r in expected}
    assert by_element["<http://e/g1>"][4:9] == (TimeKind.NUMERIC, 42, 0, None, None)
    assert by_element["<http://e/g5>"][4:9] == (TimeKind.NUMERIC, 7, 0, None, None)  # "007": row by row, same value
    assert by_element["<http://e/g11>"][8].startswith("no timestamp")


def test_timestamp_check_in_spark_equals_row_by_row(spark, monkeypatch):
    """The same candidates through the load's check (loader._checked_elements): canonical integer timestamps read
    by Spark's functions, the rest by Python workers, together exactly the row-by-row results; with no other
    case, no Python at all."""
    from rspark.spark.loading import loader

    batch = _stamp_candidates()
    expected = sorted((tuple(r.values()) for b in loader._check_rows(batch) for r in b.to_pylist()), key=repr)
    ddl = "element string, blk long, idx long, ord long, vals array<string>, tblk long, tidx long, tord long"
    df = spark.createDataFrame([tuple(r.values()) for r in batch.to_pylist()], ddl)
    got = sorted((tuple(r) for r in loader._checked_elements(df).collect()), key=repr)
    assert got == expected
    plain = df.filter("idx IN (0, 1, 2, 3)")  # canonical integers only
    assert "MapInArrow" not in loader._checked_elements(plain)._jdf.queryExecution().executedPlan().toString()
    assert sorted((tuple(r) for r in loader._checked_elements(plain).collect()), key=repr) == \
        [e for e in expected if e[2] in (0, 1, 2, 3)]
    monkeypatch.setattr(loader, "JVM_STAMPS", False)
    assert sorted((tuple(r) for r in loader._checked_elements(df).collect()), key=repr) == expected


# ------------------------------------------------------------------------------------- the line fast path


def _slow_terms(lines: list[str], fmt: str, token: str = "bT", default_graph: str = "") -> list:
    """pyoxigraph's reading of each line (parse_lines one line at a time): its (s, p, o, g), or None if rejected."""
    out = []
    for line in lines:
        sink = rdf.Sink()
        rdf.parse_lines([line], [0], [0], sink, fmt=fmt, base_iri="http://base.example/d/", token=token,
                        default_graph=default_graph)
        out.append(None if sink.problems or len(sink) != 1 else (sink.s[0], sink.p[0], sink.o[0], sink.g[0]))
    return out


def _fast_terms(lines: list[str], fmt: str, token: str = "bT", default_graph: str = "") -> list:
    """The fast path's reading of each line: its (s, p, o, g), or None when it leaves the line to pyoxigraph."""
    import pyarrow as pa

    ok, *cols = rdf.fast_lines(pa.array(lines, pa.string()), fmt=fmt, token=token, default_graph=default_graph)
    read = iter(zip(*[c.to_pylist() for c in cols]))
    return [next(read) if flag else None for flag in ok.to_pylist()]


def test_fast_line_path_reads_canonical_lines_exactly():
    """Lines already in the canonical encoding are read by the fast path, term for term as pyoxigraph reads
    them; lines that need pyoxigraph (escapes to undo, relative or malformed IRIs, tags to lower-case, xsd:string,
    quoted triples, comments, bad syntax) are left to it."""
    x = "http://www.w3.org/2001/XMLSchema#"
    fast = [
        '<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .',
        '<http://ex.org/a> <http://ex.org/p> "71"^^<%sinteger> <http://ex.org/g1> .' % x,
        '_:b1 <http://ex.org/p> _:x.y-z <http://ex.org/g> .',
        '<urn:isbn:0451450523> <http://ex.org/p> "a \\"q\\" \\\\ \\n \\r\ttab"@en-gb _:g .',
        '  <http://u:pw@ex.org:8080/a/b%20c?x=1&y=2#frag/?> \t<http://ex.org/p>  "" .   # comment',
        '<http://ex.org/é> <http://ex.org/p> "ü"@de .',
        '<mailto:a@ex.org> <http://ex.org/p> <file:///a//b> .',
    ]
    slow = [
        '<rel> <http://ex.org/p> <http://ex.org/b> .',               # relative IRI: resolved by pyoxigraph
        '<http://ex.org/a> <http://ex.org/p> "x"@EN .',             # tag lower-cased by the encoding
        '<http://ex.org/a> <http://ex.org/p> "x"^^<%sstring> .' % x,  # xsd:string dropped
        '<http://ex.org/a> <http://ex.org/p> "\\u0041\\t" .',         # escapes undone
        '<http://ex.org/%zz> <http://ex.org/p> <http://ex.org/b> .',  # bad percent-encoding: an error
        '<http://ex.org:x/> <http://ex.org/p> <http://ex.org/b> .',   # bad port: an error
        '<http://a#b#c> <http://ex.org/p> <http://ex.org/b> .',       # two fragments: an error
        '<http://[::1]/> <http://ex.org/p> <http://ex.org/b> .',      # IP literal: left to pyoxigraph
        '<< <http://e/a> <http://e/b> <http://e/c> >> <http://ex.org/p> "1" .',
        '<http://ex.org/a> <http://ex.org/p> "x"^^<%slangString> .' % "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
        '<http://ex.org/a> <http://ex.org/p> <http://ex.org/b>',       # no final dot
        '# only a comment', '',
    ]
    got = _fast_terms(fast + slow, "nquads")
    assert got[:len(fast)] == _slow_terms(fast, "nquads")
    assert all(t is not None for t in got[:len(fast)])
    assert got[len(fast):] == [None] * len(slow)
    assert got[2] == ("_:bT_b1", "<http://ex.org/p>", "_:bT_x.y-z", "<http://ex.org/g>")
    # N-Triples: a fourth term is an error, never read by the fast path; the graph is the load's
    nt = ['<http://ex.org/a> <http://ex.org/p> "1" .', '<http://ex.org/a> <http://ex.org/p> "1" <http://ex.org/g> .']
    import pyarrow as pa

    ok, s, p, o, g = rdf.fast_lines(pa.array(nt), fmt="ntriples", token="bT", default_graph="<http://d>")
    assert ok.to_pylist() == [True, False] and g.to_pylist() == ["<http://d>"]
    ok, s, p, o, g = rdf.fast_lines(pa.array(nt), fmt="ntriples", token="bT", default_graph="",
                                    triple_graph="<http://t>")
    assert g.to_pylist() == ["<http://t>"] and o.to_pylist() == ['"1"']


def test_fast_line_path_splits_lines_spaced_as_writers_write_them():
    """Lines with one space between terms and " ." last are cut by splitting at spaces: the last part is the graph
    only when it is an IRI or a blank node, never the end of a literal with spaces (one that looks like an IRI or a
    blank node, an empty one, one with an escaped quote), and lines spaced otherwise in the same batch are cut by
    the regular expression; every line read as pyoxigraph reads it."""
    g, d = "<http://ex.org/g>", "^^<http://www.w3.org/2001/XMLSchema#integer>"
    lines = [
        f'<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> {g} .',
        '<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .',
        '_:s <http://ex.org/p> _:o _:g .', '_:s <http://ex.org/p> _:o .',
        f'<http://ex.org/a> <http://ex.org/p> "a b" {g} .',
        '<http://ex.org/a> <http://ex.org/p> "a <http://ex.org/g>" .',
        '<http://ex.org/a> <http://ex.org/p> "x _:g" .', '<http://ex.org/a> <http://ex.org/p> "x \\" <y>" .',
        f'<http://ex.org/a> <http://ex.org/p> "1 2"{d} {g} .', f'<http://ex.org/a> <http://ex.org/p> "7"{d} .',
        '<http://ex.org/a> <http://ex.org/p> "a b"@en _:g .', '<http://ex.org/a> <http://ex.org/p> "" .',
        '<http://ex.org/a> <http://ex.org/p> "ends with space " .', '<http://ex.org/a> <http://ex.org/p> "a  b" .',
        f'<http://ex.org/a>  <http://ex.org/p> "two spaces" {g} .', f'<http://ex.org/a>\t<http://ex.org/p> "tab" {g} .',
        f' <http://ex.org/a> <http://ex.org/p> "first space" {g} .', f'<http://ex.org/a> <http://ex.org/p> <b>{g}.',
    ]
    for fmt in ("nquads", "ntriples"):
        fast = _fast_terms(lines, fmt)
        picked = [line for line, f in zip(lines, fast) if f is not None]
        assert [f for f in fast if f is not None] == _slow_terms(picked, fmt)
    fast = _fast_terms(lines, "nquads")
    assert all(f is not None for f in fast[:-1])  # (the last: a relative IRI, pyoxigraph's)
    assert [f[3] for f in fast[:6]] == [g, "", "_:bT_g", "", g, ""]
    assert fast[5][2] == '"a <http://ex.org/g>"' and fast[6][2] == '"x _:g"' and fast[13][2] == '"a  b"'
    assert fast[14][3] == g and fast[15][3] == g and fast[16][3] == g


def w3c_lines():
    """(path, format, lines) for the W3C suites' RDF data written out by pyoxigraph as N-Quads and as N-Triples
    (RDF-star and RDF/XML files, and negative syntax tests, left out)."""
    import pyoxigraph as ox

    for path in _w3c_rdf_files():
        fmt = rdf.detect_format(path)
        if "star" in str(path) or fmt == "rdfxml":
            continue
        try:
            quads = list(ox.parse(path.read_bytes(), getattr(ox.RdfFormat, rdf.OX_FORMATS[fmt]),
                                  base_iri=path.resolve().as_uri()))
        except SyntaxError:
            continue  # a negative syntax test
        yield path, "nquads", ox.serialize(quads, format=ox.RdfFormat.N_QUADS).decode("utf-8").splitlines()
        triples = [ox.Quad(q.subject, q.predicate, q.object) for q in quads]
        yield path, "ntriples", ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES).decode("utf-8").splitlines()


@pytest.mark.slow
@pytest.mark.testdata
def test_fast_line_path_equals_pyoxigraph_on_w3c_data():
    """The W3C suites' RDF data written out by pyoxigraph as N-Quads and N-Triples (the way a converted stream
    looks): every line the fast path reads, it reads exactly as pyoxigraph does, and it reads most of them."""
    read = total = 0
    for path, out, lines in w3c_lines():
        fast = _fast_terms(lines, out)
        slow = _slow_terms([line for line, f in zip(lines, fast) if f is not None], out)
        assert [f for f in fast if f is not None] == slow, path
        read += len(slow)
        total += len(lines)
    assert total > 5000 and read > total * 9 // 10, (read, total)


_IRI_PIECES = ["http://ex.org/", "a", "%41", "%4", "%zz", ":", "//", "/", "?", "#", "@", "[", "]", "é", " ", "\\u0041",
               "..", ".", "~", "x-y", "8080", "<", "\"", "{", "|", "^", "`", "\t", "urn:", "HTTP:", "1a:", "mailto:"]
_LEX_PIECES = ["a", " ", "\\\"", "\\\\", "\\n", "\\r", "\\t", "\\u00e9", "\\U0001F600", "\t", "é", "\"", "\\", "'", "#"]
_SUFFIXES = ["", "@en", "@EN", "@en-gb", "@en-a", "@de-1996", "@en--ltr", "@1", "^^<http://www.w3.org/2001/XMLSchema#integer>",
             "^^<http://www.w3.org/2001/XMLSchema#string>", "^^<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>",
             "^^<rel>", "^^<http://ex.org/%zz>"]
_BNODE_PIECES = ["b", "1", ".", "-", "_", "é", ":", "x"]


def _line_strategy():
    from hypothesis import strategies as st

    iri = st.lists(st.sampled_from(_IRI_PIECES), min_size=1, max_size=6).map(lambda ps: "<" + "".join(ps) + ">")
    good_iri = st.sampled_from(["<http://ex.org/a>", "<urn:x:y>", "<http://ex.org:80/p?q#f>"])
    bnode = st.lists(st.sampled_from(_BNODE_PIECES), min_size=1, max_size=5).map(lambda ps: "_:" + "".join(ps))
    literal = st.tuples(st.lists(st.sampled_from(_LEX_PIECES), max_size=5), st.sampled_from(_SUFFIXES)).map(
        lambda t: '"' + "".join(t[0]) + '"' + t[1])
    node = st.one_of(iri, good_iri, good_iri, bnode)
    space = st.sampled_from([" ", " ", " ", "  ", "\t", ""])
    end = st.sampled_from([" .", " .", " .", ".", " . # c", " .  ", ""])
    return st.tuples(node, space, st.one_of(iri, good_iri), space, st.one_of(node, literal),
                     st.one_of(st.just(""), st.tuples(space, node).map("".join)), end).map("".join)


@pytest.mark.slow
def test_fast_line_path_property_same_as_pyoxigraph():
    """Generated lines (IRIs with and without valid structure, escapes, tags, datatypes, blank-node labels,
    spacing): wherever the fast path reads a line, pyoxigraph reads it too, into the same terms."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    seen = {"fast": 0}

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(st.lists(_line_strategy(), min_size=1, max_size=20))
    def check(lines):
        lines = [line.replace("\n", " ") for line in lines]
        for fmt in ("nquads", "ntriples"):
            fast = _fast_terms(lines, fmt)
            picked = [line for line, f in zip(lines, fast) if f is not None]
            assert [f for f in fast if f is not None] == _slow_terms(picked, fmt), picked
            seen["fast"] += len(picked)

    check()
    assert seen["fast"] > 100


def test_plain_check_of_a_stream_read_whole_by_the_jvm_equals_the_general_check(spark, tmp_path, monkeypatch):
    """A stream the JVM reads whole (rspark's data source: no line left to Python, so runs of an element's lines
    carry one position, their first): the plain check gives the same elements, order, content, metadata and
    errors as the general check, with elements written in several runs of lines, timestamps before and after their
    graphs, an element without timestamp, one with several, one with the same value as two terms, and metadata."""
    from rspark.spark.loading import loader

    ts, i = f"<{PROV}>", f"^^<{XSD}integer>"
    lines = [x for x in _plain_stamp_lines() if "broken" not in x]
    lines += [f'{e("a")} {e("q")} {e("c")} {e("g1")} .', f'{e("a")} {e("q")} {e("d")} {e("g9")} .',  # more runs
              f'{e("a")} {e("q")} {e("e")} {e("g1")} .', f'{e("g10")} {ts} "0"{i} .',
              f'{e("x")} {e("q")} "ü" {e("g10")} .', f'{e("x")} {e("r")} "ü" {e("g10")} .']
    path = write(tmp_path, "runs.nq", "\n".join(lines) + "\n")
    plain = load_stream(spark, EX + "s", path)
    monkeypatch.setattr(loader, "PLAIN_ELEMENTS", False)
    general = load_stream(spark, EX + "s", path)
    assert _stream_view(plain) == _stream_view(general)
    assert ranked(plain.elements) == {(e("g1"), 5, 0), (e("g2"), -3, 1), (e("g6"), 6, 2), (e("g8"), 12, 3),
                                      (e("g9"), 5, 4), (e("g10"), 0, 5)}
    assert [x.element for x in plain.errors] == [e("g3"), e("g4"), e("g5")]
    plain.unpersist()
    general.unpersist()


def _spy_scanned(monkeypatch) -> list[bool]:
    """Whether each load_stream call took the two-job load of a clean N-Quads stream (loader._scanned_stream)."""
    from rspark.spark.loading import loader

    taken: list[bool] = []
    real = loader._scanned_stream

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(loader, "_scanned_stream", spy)
    return taken


def _load_view(st: LoadedStream):
    """:func:`_stream_view` and the element count, with the load's blank-node prefix taken out of each term."""

    def plain(x):
        if isinstance(x, str):
            return re.sub(r"_:b[0-9a-f]{8}_", "_:", x)
        if isinstance(x, (tuple, list, set, frozenset)):
            return type(x)(plain(y) for y in x)
        return x

    return plain(_stream_view(st) + (st.n_elements,))


def _general_view(spark, monkeypatch, path) -> tuple:
    from rspark.spark.loading import loader

    monkeypatch.setattr(loader, "SCANNED_STREAMS", False)
    try:
        return _load_view(load_stream(spark, EX + "s", path))
    finally:
        monkeypatch.setattr(loader, "SCANNED_STREAMS", True)


def _clean_stream_lines() -> list[str]:
    ts, i, lg = f"<{PROV}>", f"^^<{XSD}integer>", f"^^<{XSD}long>"

    def data(g: str, o: str = "b", p: str = "p") -> str:
        return f'{e("a")} {e(p)} {e(o)} {g if g.startswith("_:") else e(g)} .'

    return [
        data("g1"), f'{e("g1")} {ts} "5"{i} .',                                       # the timestamp after
        f'{e("g2")} {ts} "-3"{i} .', data("g2"), data("g2", "c", "q"),                  # before; a run of two lines
        f'{e("g3")} {ts} "12"{lg} .', data("g3"),                                      # xsd:long
        f'{e("g4")} {ts} "5"{i} .', f'{e("g5")} {ts} "6"{i} .',                        # two timestamp lines in a row
        data("g4", "d"), data("g5", "d"),
        data("g1", "e", "q"),                                                          # g1's second run
        f'{e("g1")} {e("source")} {e("x")} .', f'{e("g7")} {ts} "7"{i} .',             # metadata
        data("_:b1"), f'_:b1 {ts} "8"{i} .',                                           # a blank node names it
        f'{e("x")} {e("q")} "ü" {e("g6")} .', f'{e("g6")} {ts} "9"{i} .', f'{e("g6")} {ts} "9"{i} .',  # twice
        "", "# a comment", data("g8"), f'{e("g8")}\t{ts}\t"0"{i}\t.',                  # tabs
    ]


def test_a_clean_nquads_stream_loads_in_two_jobs_as_the_general_load(spark, tmp_path, monkeypatch, executor_loads):
    """An N-Quads stream the JVM reads whole, with canonical integer timestamps and no rejected element, loads in
    two jobs without a cache of its parse (loader._scanned_stream): the same elements, order, content, metadata,
    bounds and count as the general load, in one split and in many, with timestamps before and after their graphs,
    in a row, as xsd:long, twice, an element in two runs of lines, a blank node naming an element, metadata, blank
    lines, comments and tabs; and on random streams of elements written in runs in any order."""
    from rspark.spark.loading import loader

    taken = _spy_scanned(monkeypatch)
    text = "\n".join(_clean_stream_lines()) + "\n"
    path = write(tmp_path, "clean.nq", text)
    for split in (None, "300"):
        if split:
            spark.conf.set("spark.sql.files.maxPartitionBytes", split)
        try:
            general = _general_view(spark, monkeypatch, path)
            assert taken.pop() is False
            st = load_stream(spark, EX + "s", path)
            assert taken.pop() is True
            assert not any(df.columns == [c for c, _, _ in loader._RAW_FIELDS] for df in st._cached)  # no parse cache
            if split:
                assert st.quads.rdd.getNumPartitions() > 1
                assert loader._lines_source(spark, str(path), "nquads", "_:x_").rdd.getNumPartitions() > 5
        finally:
            spark.conf.unset("spark.sql.files.maxPartitionBytes")
        path.write_text(f'{e("a")} {e("p")} {e("other")} {e("g1")} .\n')  # what was loaded stays loaded
        assert _load_view(st) == general
        blank = next(r["element"] for r in st.elements.collect() if r["element"].startswith("_:"))
        assert ranked(st.elements) == {(e("g1"), 5, 0), (e("g2"), -3, 1), (e("g3"), 12, 2), (e("g4"), 5, 3),
                                       (e("g5"), 6, 4), (blank, 8, 5), (e("g6"), 9, 6), (e("g8"), 0, 7)}
        assert st.bounds == stream_bounds(st.elements) == (-3, 12) and st.n_elements == 8
        assert rows(st.metadata) == {(e("g1"), e("source"), e("x")), (e("g7"), f"<{PROV}>", f'"7"^^<{XSD}integer>')}
        assert st.has_metadata and st.errors == [] and st.quoted.count() == 0
        q = frozenset({e("q")})
        restricted = rows(st.restricted(q))
        assert restricted == {r for r in rows(st.quads) if r[1] == e("q")} and len(restricted) == 3
        assert rows(st.candidates) == rows(st.quads, "s", "p", "o")
        st.unpersist()
        path.write_text(text)
    # random streams: elements in runs of lines, their timestamps anywhere, some metadata, many splits
    rng = random.Random(11)
    ts = f"<{PROV}>"
    for n in range(2):
        lines = []
        for k in range(60):
            g = f"<http://e/g{k}>"
            runs = [[f'<http://e/s{rng.randrange(5)}> <http://e/p{rng.randrange(3)}> "{k}.{j}" {g} .'
                     for j in range(rng.randrange(1, 4))] for _ in range(rng.randrange(1, 3))]
            stamp = f'{g} {ts} "{rng.randrange(-20, 40)}"^^<{XSD}{rng.choice(["integer", "long"])}> .'
            pieces = runs + [[stamp]] + ([[f"{g} <http://e/m> <http://e/o{k}> ."]] if rng.random() < 0.2 else [])
            lines.append(pieces)
        flat = [piece for element in lines for piece in element]
        rng.shuffle(flat)
        path = write(tmp_path, f"random{n}.nq", "\n".join(line for piece in flat for line in piece) + "\n")
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(rng.choice([256, 1024, 1 << 20])))
        try:
            st = load_stream(spark, EX + "s", path)
            assert taken.pop() is True
            assert _load_view(st) == _general_view(spark, monkeypatch, path) and st.n_elements == 60
            assert st.bounds == stream_bounds(st.elements)
            st.unpersist()
        finally:
            spark.conf.unset("spark.sql.files.maxPartitionBytes")


@pytest.mark.parametrize("case", ["datetime", "decimal later", "no timestamp", "two timestamps", "malformed line",
                                  "rdf-star", "no element"])
def test_a_stream_with_anything_else_goes_to_the_general_load(spark, tmp_path, monkeypatch, executor_loads, case):
    """The two-job load only takes a clean stream with integer timestamps: any other stream is loaded (and its
    problems reported) by the general load, as if the two-job load did not exist; a stream whose first timestamp is
    not a canonical integer goes there without a job (the driver reads the file's first lines)."""
    ts, i = f"<{PROV}>", f"^^<{XSD}integer>"
    lines = [f'{e("a")} {e("p")} {e("b")} {e("g1")} .', f'{e("g1")} {ts} "5"{i} .']
    more = {
        "datetime": [f'{e("a")} {e("p")} {e("b")} {e("g2")} .',
                     f'{e("g2")} {ts} "2020-01-01T00:00:00Z"^^<{XSD}dateTime> .'],
        "decimal later": [f'{e("a")} {e("p")} {e("b")} {e("g2")} .', f'{e("g2")} {ts} "5.5"^^<{XSD}decimal> .'],
        "no timestamp": [f'{e("a")} {e("p")} {e("c")} {e("g2")} .'],
        "two timestamps": [f'{e("a")} {e("p")} {e("c")} {e("g2")} .', f'{e("g2")} {ts} "6"{i} .',
                           f'{e("g2")} {ts} "7"{i} .'],
        "malformed line": [f'{e("a")} {e("p")} "broken {e("g2")} .'],
        "rdf-star": [f'<< {e("a")} {e("p")} {e("b")} >> {e("q")} {e("c")} {e("g2")} .', f'{e("g2")} {ts} "6"{i} .'],
        "no element": [],
    }[case]
    if case == "datetime":
        lines = more + lines
    elif case == "no element":
        lines = [f'{e("g1")} {ts} "5"{i} .']
    else:
        lines += more
    path = write(tmp_path, "other.nq", "\n".join(lines) + "\n")
    from rspark.spark.loading import loader

    assert loader._first_stamp_plain(str(path), f"<{PROV}>") is (case != "datetime")
    if case == "datetime":  # found on the driver: the file is not read by Spark for it
        with monkeypatch.context() as m:
            m.setattr(loader, "_lines_source", lambda *a, **k: pytest.fail("read by Spark"))
            assert loader._scanned_stream(spark, EX + "s", str(path), "nquads", f"<{PROV}>") is None
    taken = _spy_scanned(monkeypatch)
    st = load_stream(spark, EX + "s", path)
    assert taken == [False]
    # the general load's findings: elements, kind, scale, what it reports, metadata, quoted triples
    num = TimeKind.NUMERIC
    expected = {
        "datetime": (1, "datetime", 1, ["4: the timestamp is a number, but the stream's first element has "
                                        "xsd:dateTime timestamps (one stream uses one kind) (element <{g1}>)"], 0),
        "decimal later": (2, num, 10, [], 0),
        "no timestamp": (1, num, 1, ["3: no timestamp (a default-graph triple <element> <timestamp-predicate> "
                                          "literal) (element <{g2}>)"], 0),
        "two timestamps": (1, num, 1, [f'4: more than one timestamp: "6"{i}, "7"{i} (element <{{g2}}>)'], 0),
        "malformed line": (1, num, 1, ['3:47: unterminated string: no closing " on the line where it starts '
                                            "(element <{g2}>)"], 0),
        "rdf-star": (2, num, 1, [], 1),
        "no element": (0, num, 1, [], 0),
    }[case]
    errors = [str(x).split("other.nq:", 1)[1] for x in st.errors]
    got = (st.n_elements, st.time_kind, st.time_scale, errors, st.quoted.count())
    g1, g2 = EX + "g1", EX + "g2"
    assert got == expected[:3] + ([x.format(g1=g1, g2=g2) for x in expected[3]],) + expected[4:]
    assert st.has_metadata is (case == "no element")


def test_the_first_timestamp_is_guessed_from_the_files_first_lines(tmp_path):
    """The driver's guess (loader._first_stamp_plain): the first line with the timestamp predicate among the
    first 64 KiB, its object a canonical integer or not; no such line there: try the two-job load."""
    from rspark.spark.loading.loader import _PEEK_BYTES, _first_stamp_plain

    pred = f"<{PROV}>"

    def guess(text: str) -> bool:
        path = tmp_path / "head.nq"
        path.write_text(text, encoding="utf-8")
        return _first_stamp_plain(str(path), pred)

    data = f'{e("a")} {e("p")} {e("b")} {e("g")} .\n'
    assert guess(data + f'{e("g")} {pred} "5"^^<{XSD}integer> .\n') is True
    assert guess(f'{e("g")}\t{pred}\t"-5"^^<{XSD}long>\t.\n') is True
    assert guess(f'{e("g")} {pred} "5"^^<{XSD}decimal> .\n' + f'{e("h")} {pred} "5"^^<{XSD}integer> .\n') is False
    assert guess(f'{e("g")} {pred} "2020-01-01T00:00:00Z"^^<{XSD}dateTime> .\n') is False
    assert guess(f'{e("g")} {pred} "05"^^<{XSD}integer> .\n') is False  # not canonical
    assert guess(f'{e("x")} {pred} "5"^^<{XSD}integer> {e("g")} .\n') is False  # in a named graph: no timestamp
    assert guess(f'{e("g")} {e("p")}{pred} "5"^^<{XSD}integer> .\n' + f'{e("g")} {pred} "6"^^<{XSD}integer> .\n')
    assert guess(data * 3) is True  # no timestamp line
    assert guess(data * (_PEEK_BYTES // len(data) + 10) + f'{e("g")} {pred} "x" .\n') is True  # beyond the head


def _quads_of(lg: LoadedGraph) -> list[tuple]:
    return [tuple(r) for r in lg.quads.select("s", "p", "o", "g").collect()]


def test_small_graph_files_load_on_the_driver_as_on_the_executors(spark, tmp_path, logs):
    """A small clean graph file is parsed on the driver into a local relation: the same quads (blank nodes up to
    isomorphism) as the executors' parse, for every format, into the default graph and into a named graph. Files
    with something to report, RDF-star terms or line ends the line readers must see go the executors' way, with the
    executors' messages."""
    from rspark.spark.loading.loader import DRIVER_MAX_BYTES_CONF

    by_format: dict[str, list[Path]] = {}
    for path in _w3c_rdf_files():
        by_format.setdefault(rdf.detect_format(path), []).append(path)
    assert set(by_format) == {"turtle", "ntriples", "nquads", "trig", "rdfxml"}, set(by_format)
    rng = random.Random(5)
    checked = set()
    chosen = [p for fmt in sorted(by_format) for p in rng.sample(by_format[fmt], min(3, len(by_format[fmt])))]
    chosen += [Path(__file__).resolve().parents[1] / "rspark" / "samples" / "sensors.ttl",
               Path(__file__).parent / "data" / "social.trig"]
    for i, path in enumerate(chosen):
        for graph in [(None, "http://example.org/g")[i % 2]]:  # into the default graph, or a named one
            logs.clear()
            try:
                driver = load_rdf(spark, path, graph=graph, strict=False)
            except DataError:
                continue  # (a W3C syntax test's file: strict=False keeps what loads; RDF/XML stops at its error)
            on_driver = any("on the driver" in r.getMessage() for r in logs.records)
            spark.conf.set(DRIVER_MAX_BYTES_CONF, "0")
            try:
                executors = load_rdf(spark, path, graph=graph, strict=False)
            finally:
                spark.conf.unset(DRIVER_MAX_BYTES_CONF)
            ok, message = results_equal(as_dataset(_quads_of(driver)), as_dataset(_quads_of(executors)),
                                        ordered=False)
            assert ok, (path, graph, message)
            assert sorted(driver.quoted.collect()) == [] or not on_driver
            assert driver.errors == executors.errors or not on_driver
            if on_driver:
                checked.add(rdf.detect_format(path))
            for lg in (driver, executors):
                lg.unpersist()
    assert checked == set(by_format), checked  # every format was read on the driver

    # the executors' way: a problem (its message is theirs), an RDF-star term, a carriage return
    bad = write(tmp_path, "bad.ttl", "@prefix : <http://e/> .\n:a :b :c .\n:a :b .\n")
    with pytest.raises(DataError, match=r"bad\.ttl:3:7: \. is not a valid RDF object"):
        load_rdf(spark, bad)
    star = write(tmp_path, "star.ttl", "@prefix : <http://e/> .\n<< :a :b :c >> :d :e .\n")
    logs.clear()
    lg = load_rdf(spark, star)
    assert not any("on the driver" in r.getMessage() for r in logs.records)
    assert len(lg.quoted.collect()) == 1
    crlf = write(tmp_path, "crlf.nt", "<http://e/a> <http://e/b> <http://e/c> .\r\n")
    logs.clear()
    assert len(_quads_of(load_rdf(spark, crlf))) == 1
    assert not any("on the driver" in r.getMessage() for r in logs.records)
    small = write(tmp_path, "small.nt", "<http://e/a> <http://e/b> <http://e/c> .\n")
    logs.clear()
    assert _quads_of(load_rdf(spark, small)) == [("<http://e/a>", "<http://e/b>", "<http://e/c>", "")]
    assert [r.getMessage() for r in logs.records if "on the driver" in r.getMessage()] == [
        f"loading {small} (N-Triples) on the driver (a small file: 1 triples)"]


def test_driver_max_bytes_must_be_a_number(spark, tmp_path):
    from rspark.errors import InputError
    from rspark.spark.loading.loader import DRIVER_MAX_BYTES_CONF

    path = write(tmp_path, "one.nt", "<http://e/a> <http://e/b> <http://e/c> .\n")
    spark.conf.set(DRIVER_MAX_BYTES_CONF, "abc")
    try:
        with pytest.raises(InputError, match=r"^spark\.rspark\.load\.driverMaxBytes='abc': not a number of bytes$"):
            load_rdf(spark, path)
    finally:
        spark.conf.unset(DRIVER_MAX_BYTES_CONF)


def _bnodes_renamed(view: tuple) -> list:
    """A stream view with its blank nodes' per-load prefixes (``_:b<8 hex>_``) left out (its sets sorted)."""
    def plain(x) -> str:
        return re.sub(r"_:b[0-9a-f]{8}_", "_:", repr(x))

    return [sorted(map(plain, part)) if isinstance(part, set) else plain(part) for part in view]


def _generated_stream(kind: str, fmt: str) -> str:
    """A clean stream of 6 elements (two sharing a timestamp, listed out of time order), a blank node, a literal
    with a language tag, and (N-Quads) metadata about an element and about a name that is no element."""
    stamp = {"integer": lambda v: f'"{v}"^^<{XSD}integer>', "decimal": lambda v: f'"{v}.25"^^<{XSD}decimal>',
             "datetime": lambda v: f'"2026-01-01T00:00:{v:02d}Z"^^<{XSD}dateTime>'}[kind]
    order = [3, 1, 4, 1, 5, 9]
    if fmt == "nq":
        lines = []
        for i, v in enumerate(order):
            lines += [f'{e("s" + str(i))} {e("p")} "v{i}"@en {e("g" + str(i))} .',
                      f'_:x{i} {e("q")} {e("o")} {e("g" + str(i))} .', f'{e("g" + str(i))} <{PROV}> {stamp(v)} .']
        lines += [f'{e("g0")} {e("source")} {e("x")} .', f'{e("other")} <{PROV}> {stamp(2)} .']
        return "\n".join(lines) + "\n"
    blocks = [f'{e("g" + str(i))} {{ {e("s" + str(i))} {e("p")} "v{i}"@en . _:x{i} {e("q")} {e("o")} . }}\n'
              f'{e("g" + str(i))} <{PROV}> {stamp(v)} .' for i, v in enumerate(order)]
    return "\n".join(blocks) + "\n"


def test_small_stream_files_load_on_the_driver_as_on_the_executors(spark, tmp_path, logs):
    """A small clean stream file is read on the driver into local relations: the same elements (their order by
    seq), content, metadata, bounds, time kind and scale as the executors' load, for TriG and N-Quads, integer,
    decimal and date-time timestamps, and the project's stream files. Files with something to report (their
    messages are the executors'), RDF-star terms or carriage returns go the executors' way."""
    from rspark.spark.loading.loader import DRIVER_MAX_BYTES_CONF

    root = Path(__file__).resolve().parents[1]
    chosen = [root / "rspark" / "samples" / "observations.trig",
              *sorted((Path(__file__).parent / "data").glob("*.trig"))]
    for kind in ("integer", "decimal", "datetime"):
        for fmt in ("nq", "trig"):
            chosen.append(write(tmp_path, f"{kind}.{fmt}", _generated_stream(kind, fmt)))
    for path in chosen:
        logs.clear()
        driver = load_stream(spark, EX + "s", path)
        assert [r.getMessage() for r in logs.records if "on the driver" in r.getMessage()] == [
            f"loading {path} ({'TriG' if path.suffix == '.trig' else 'N-Quads'}) on the driver (a small file: "
            f"{driver.n_elements} elements, {driver.quads.count()} triples)"], path
        spark.conf.set(DRIVER_MAX_BYTES_CONF, "0")
        try:
            executors = load_stream(spark, EX + "s", path)
        finally:
            spark.conf.unset(DRIVER_MAX_BYTES_CONF)
        assert _bnodes_renamed(_stream_view(driver)) == _bnodes_renamed(_stream_view(executors)), path
        assert driver.bounds == stream_bounds(executors.elements), path
        assert (driver.n_elements, driver.quoted.count()) == (executors.n_elements, executors.quoted.count()), path
        assert rows(driver.candidates) == rows(driver.quads, "s", "p", "o")
        assert rows(driver.restricted(frozenset({e("p")}))) == \
            {r for r in rows(driver.quads) if r[1] == e("p")}
        executors.unpersist()
    decimal = load_stream(spark, EX + "s", tmp_path / "decimal.nq")
    assert (decimal.time_kind, decimal.time_scale, decimal.bounds) == (TimeKind.NUMERIC, 100, (125, 925))
    assert ranked(decimal.elements, "element", "ts", "seq") == {
        (e("g0"), 325, 0), (e("g1"), 125, 1), (e("g2"), 425, 2), (e("g3"), 125, 3), (e("g4"), 525, 4),
        (e("g5"), 925, 5)}

    # the executors' way: a problem (its message is theirs), an RDF-star term, a carriage return
    clean = f'{e("a")} {e("p")} {e("b")} {e("g1")} .\n{e("g1")} <{PROV}> "1"^^<{XSD}integer> .\n'
    for name, text, error in [
            ("bad.nq", clean + f'{e("a")} {e("p")} .\n', "bad.nq:3:"),
            ("nostamp.nq", clean + f'{e("a")} {e("p")} {e("b")} {e("g2")} .\n', "nostamp.nq:3: no timestamp"),
            ("star.nq", clean + f'<< {e("a")} {e("p")} {e("b")} >> {e("q")} {e("c")} {e("g1")} .\n', None),
            ("crlf.nq", clean.replace("\n", "\r\n"), None)]:
        logs.clear()
        loaded = load_stream(spark, EX + "s", write(tmp_path, name, text))
        assert not any("on the driver" in r.getMessage() for r in logs.records), name
        messages = [str(x) for x in loaded.errors]
        assert (len(messages) == 1 and error in messages[0]) if error else messages == [], (name, messages)
        assert loaded.n_elements == 1, name
        loaded.unpersist()
