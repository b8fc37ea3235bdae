"""The one-shot SPARQL API and CLI: Engine.load / sparql / clear, result shapes, formats, datasets, errors."""

from __future__ import annotations

import json

import pytest

from rspark.errors import DataError, RsparkError

DATA = """@prefix : <http://example.org/> .
:alice :knows :bob ; :age 30 ; :name "Alice"@en .
:bob :knows :carol ; :age 25 .
:carol :age 41 .
"""


@pytest.fixture()
def engine(spark, tmp_path):
    from rspark.engine.engine import Engine

    path = tmp_path / "people.ttl"
    path.write_text(DATA, encoding="utf-8")
    with Engine(spark=spark) as eng:
        eng.load(path)
        yield eng


P = "PREFIX : <http://example.org/> "


def test_select_to_json_exact(engine):
    res = engine.sparql(P + "SELECT ?p ?a WHERE { ?p :age ?a FILTER(?a > 26) } ORDER BY ?a")
    assert res.to_json() == {
        "head": {"vars": ["p", "a"]},
        "results": {"bindings": [
            {"p": {"type": "uri", "value": "http://example.org/alice"},
             "a": {"type": "literal", "value": "30", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}},
            {"p": {"type": "uri", "value": "http://example.org/carol"},
             "a": {"type": "literal", "value": "41", "datatype": "http://www.w3.org/2001/XMLSchema#integer"}},
        ]}}


def test_iteration_pandas_and_ask(engine):
    res = engine.sparql(P + "SELECT ?p ?n WHERE { ?p :age ?a OPTIONAL { ?p :name ?n } } ORDER BY ?p")
    rows = list(res)
    assert [r["p"].value for r in rows] == ["http://example.org/alice", "http://example.org/bob",
                                           "http://example.org/carol"]
    df = res.to_pandas()
    assert list(df.columns) == ["p", "n"]
    assert df["n"].tolist() == ["Alice", None, None]
    ages = engine.sparql(P + "SELECT ?a WHERE { ?p :age ?a } ORDER BY ?a").to_pandas()["a"].tolist()
    assert ages == [25, 30, 41]
    assert bool(engine.sparql(P + "ASK { :alice :knows/:knows :carol }")) is True
    assert engine.sparql(P + "ASK { :carol :knows ?x }").to_json() == {"head": {}, "boolean": False}


def test_construct_ntriples(engine):
    res = engine.sparql(P + "CONSTRUCT { ?b :knownBy ?a } WHERE { ?a :knows ?b }")
    assert sorted(res.serialize("ntriples").splitlines()) == [
        "<http://example.org/bob> <http://example.org/knownBy> <http://example.org/alice> .",
        "<http://example.org/carol> <http://example.org/knownBy> <http://example.org/bob> .",
    ]


def test_named_graphs_and_from(engine, tmp_path):
    g = tmp_path / "g.ttl"
    g.write_text("<http://example.org/dave> <http://example.org/age> 50 .\n", encoding="utf-8")
    engine.load(g, graph="http://example.org/g")
    res = engine.sparql(P + "SELECT ?g ?p WHERE { GRAPH ?g { ?p :age ?a } }")
    assert [(r["g"].value, r["p"].value) for r in res] == [("http://example.org/g", "http://example.org/dave")]
    res = engine.sparql(P + "SELECT ?p FROM :g WHERE { ?p :age ?a }")
    assert [r["p"].value for r in res] == ["http://example.org/dave"]
    with pytest.raises(RsparkError, match="not loaded"):
        engine.sparql(P + "SELECT * FROM :nothing WHERE { ?s ?p ?o }")


EX = "http://example.org/"


def _short(n3: str) -> str:
    return ":" + n3[len(EX) + 1:-1] if n3.startswith("<" + EX) else n3


def _description(triples) -> list:
    """Triples of N-Triples terms, sorted, with ``:`` for http://example.org/ and each blank node named after the
    predicate that reaches it (one each in these data)."""
    names = {}
    for _, p, o in triples:
        if o.startswith("_:"):
            assert o not in names
            names[o] = "_:" + _short(p)[1:]
    return sorted(tuple(names.get(t, _short(t)) for t in tr) for tr in triples)


def test_describe_over_static_data(engine, tmp_path):
    # docs/evaluation.md: DESCRIBE gives the concise bounded description of each resource, in the default graph:
    # the triples whose subject it is, and recursively those of the blank nodes they reach. So DESCRIBE :alice is
    # DATA's three triples of :alice, her address (a blank node) and its geo (another), not :bob's triples (an IRI
    # she reaches), nor :alice :age 99 (a named graph). DESCRIBE * describes every variable's values: ?x = :bob and
    # ?y = :carol, the triples of both. pyoxigraph (a Store's default graph) gives the same.
    import pyoxigraph

    address = tmp_path / "address.ttl"
    address.write_text('@prefix : <http://example.org/> .\n:alice :address [ :city "Paris" ; :geo [ :lat 48 ] ] .\n',
                       encoding="utf-8")
    named = tmp_path / "named.ttl"
    named.write_text("<http://example.org/alice> <http://example.org/age> 99 .\n", encoding="utf-8")
    engine.load(address)
    engine.load(named, graph=EX + "g")
    store = pyoxigraph.Store()
    for text in (DATA, address.read_text(encoding="utf-8")):
        store.load(text, format=pyoxigraph.RdfFormat.TURTLE)
    store.load(named.read_text(encoding="utf-8"), format=pyoxigraph.RdfFormat.TURTLE,
               to_graph=pyoxigraph.NamedNode(EX + "g"))
    integer = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    queries = {
        P + "DESCRIBE :alice": [
            (":alice", ":address", "_:address"), (":alice", ":age", f'"30"{integer}'), (":alice", ":knows", ":bob"),
            (":alice", ":name", '"Alice"@en'), ("_:address", ":city", '"Paris"'), ("_:address", ":geo", "_:geo"),
            ("_:geo", ":lat", f'"48"{integer}')],
        P + "DESCRIBE * WHERE { ?x :knows ?y FILTER(?y = :carol) }": [
            (":bob", ":age", f'"25"{integer}'), (":bob", ":knows", ":carol"), (":carol", ":age", f'"41"{integer}')],
    }
    for query, expected in queries.items():
        got = _description([tuple(t.n3() for t in tr) for tr in engine.sparql(query)])
        assert got == expected, query
        assert _description([tuple(str(t) for t in tr) for tr in store.query(query)]) == expected, query


def test_clear_drops_everything(engine):
    engine.clear()
    assert list(engine.sparql("SELECT * WHERE { ?s ?p ?o }")) == []


def test_a_repeated_query_reuses_its_compiled_plan_until_the_data_changes(engine, tmp_path):
    q = P + "SELECT ?p (AVG(?a) AS ?avg) WHERE { ?p :age ?a } GROUP BY ?p ORDER BY DESC(?avg)"
    first = engine.sparql(q).to_json()
    assert list(engine._plans) == [(q, None, None)]
    prepared = engine._plans[(q, None, None)]
    assert engine.sparql(q).to_json() == first  # executed again, from the same compiled plan
    assert engine._plans[(q, None, None)] is prepared
    assert [(b["p"]["value"], b["avg"]["value"]) for b in first["results"]["bindings"]] == [
        ("http://example.org/carol", "41.0"), ("http://example.org/alice", "30.0"), ("http://example.org/bob", "25.0")]
    more = tmp_path / "more.ttl"
    more.write_text("<http://example.org/dave> <http://example.org/age> 50 .\n", encoding="utf-8")
    engine.load(more)  # the data changed: the compiled plans are dropped
    assert engine._plans == {}
    again = engine.sparql(q).to_json()
    assert [b["p"]["value"] for b in again["results"]["bindings"]] == [
        "http://example.org/dave", "http://example.org/carol", "http://example.org/alice", "http://example.org/bob"]
    engine.clear()
    assert engine._plans == {}
    assert list(engine.sparql(q)) == []


def test_volatile_queries_are_compiled_at_every_run(engine):
    from rspark.spark.sparql.query import reusable
    from rspark.syntax.translate import compile_query

    for q in ["SELECT (RAND() AS ?r) WHERE {}", "SELECT (NOW() AS ?t) WHERE {}", "SELECT (UUID() AS ?u) WHERE {}",
              "SELECT (STRUUID() AS ?u) WHERE {}", "SELECT ?b WHERE { BIND(BNODE() AS ?b) }",
              P + "SELECT ?x WHERE { :alice :knows+ ?x }", P + "SELECT ?x WHERE { :alice :knows* ?x }",
              P + "DESCRIBE :alice", P + "ASK { FILTER EXISTS { ?x :age ?a FILTER(?a < RAND()) } }"]:
        assert reusable(compile_query(q)) is False, q
    for q in [P + "SELECT ?x WHERE { :alice :knows/:knows? ?x }",
              P + "CONSTRUCT { ?b :knownBy ?a } WHERE { ?a :knows ?b }",
              P + "ASK { :alice :knows :bob }"]:
        assert reusable(compile_query(q)) is True, q
    rand = "SELECT (RAND() AS ?r) WHERE {}"
    values = {next(iter(engine.sparql(rand)))["r"].lexical for _ in range(3)}
    assert len(values) == 3 and engine._plans == {}
    paths = P + "SELECT ?x WHERE { :alice :knows+ ?x } ORDER BY ?x"
    assert [r["x"].value for r in engine.sparql(paths)] == ["http://example.org/bob", "http://example.org/carol"]
    assert engine._plans == {}
    ask = P + "ASK { :alice :knows :bob }"
    assert bool(engine.sparql(ask)) is True and bool(engine.sparql(ask)) is True
    assert list(engine._plans) == [(ask, None, None)]


def test_the_session_jvm_runs_with_rspark_s_options(spark):
    """The JVM of rspark's session runs with rspark's options (rspark.spark.session.JIT_OPTIONS: the optimising
    compiler's inlining limits; GC_OPTIONS: the throughput collector and its overhead limit) and in UTC."""
    from rspark.spark.session import GC_OPTIONS, JIT_OPTIONS

    jvm = spark.sparkContext._jvm
    args = set(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert {"-XX:InlineSmallCode=1000", "-XX:MaxInlineSize=20", "-XX:FreqInlineSize=200", "-Duser.timezone=UTC",
            "-XX:+UseParallelGC", "-XX:GCTimeLimit=90", "-XX:GCHeapFreeLimit=10"} <= args
    assert set(JIT_OPTIONS.split()) | set(GC_OPTIONS.split()) <= args
    collectors = {bean.getName() for bean in jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()}
    assert collectors == {"PS Scavenge", "PS MarkSweep"}  # the parallel collector's young and old generations


def test_service_with_a_variable_endpoint_is_refused_and_an_unreachable_one_named(engine):
    # SERVICE ?e is refused with its position before any Spark job; SERVICE <iri> calls the endpoint, and one that
    # cannot be reached is an error naming it (tests/test_federation.py runs an endpoint)
    from rspark.spark.sparql.federation import ServiceCallError
    from rspark.syntax.translate import QueryError

    with pytest.raises(QueryError, match=r"^<query>:1:27: not supported: SERVICE \?e: "):
        engine.sparql("SELECT * WHERE { ?e ?p ?x SERVICE ?e { ?s ?p ?o } }")
    with pytest.raises(ServiceCallError, match=r"^SERVICE <http://127.0.0.1:9/sparql>: the endpoint cannot be "
                                               r"reached"):
        engine.sparql("SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }")


def test_malformed_data_names_file_and_line(engine, tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix : <http://example.org/> .\n:a :b :c .\n:a :b .\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        engine.load(bad)
    assert err.value.file.endswith("bad.ttl") and err.value.line == 3
    assert str(err.value).startswith(f"{bad}:3:")


def test_cli_sparql_formats(tmp_path, capsys, spark):
    from rspark.cli import main

    data = tmp_path / "d.ttl"
    data.write_text(DATA, encoding="utf-8")
    q = tmp_path / "q.rq"
    q.write_text(P + "SELECT ?p WHERE { ?p :knows ?x } ORDER BY ?p", encoding="utf-8")
    assert main(["sparql", str(q), "--data", str(data), "--format", "csv"]) == 0
    assert capsys.readouterr().out == "p\r\nhttp://example.org/alice\r\nhttp://example.org/bob\r\n"
    assert main(["sparql", str(q), "--data", str(data), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]["bindings"][1]["p"]["value"] == "http://example.org/bob"


def test_cli_sparql_bad_data_exit_1(tmp_path, capsys, spark):
    from rspark.cli import main

    bad = tmp_path / "bad.nt"
    bad.write_text("<http://a> <http://b> <http://c> .\n<http://a> <http://b> .\n", encoding="utf-8")
    q = tmp_path / "q.rq"
    q.write_text("SELECT * WHERE { ?s ?p ?o }", encoding="utf-8")
    assert main(["sparql", str(q), "--data", str(bad)]) == 1
    assert f"{bad}:2:" in capsys.readouterr().err


def test_limit_and_offset_beyond_32_bits(engine):
    """LIMIT / OFFSET take any integer (the parser saturates at 2^63 - 1); Spark's limit and offset take 32-bit
    counts, so a longer LIMIT keeps every row and a longer OFFSET skips every row, with no error."""
    q = "SELECT ?x WHERE { VALUES ?x { 1 2 3 } } ORDER BY ?x "
    assert [r["x"].lexical for r in engine.sparql(q + "LIMIT 99999999999999")] == ["1", "2", "3"]
    assert list(engine.sparql(q + "OFFSET 99999999999999")) == []
    assert [r["x"].lexical for r in engine.sparql(q + "OFFSET 1 LIMIT 99999999999")] == ["2", "3"]
    assert [r["x"].lexical for r in engine.sparql(q + "LIMIT " + "9" * 40)] == ["1", "2", "3"]


def test_an_expression_too_deep_for_spark_is_a_clear_error(engine):
    """Within the front end's nesting bound, but deeper than Spark's SQL parser takes (rspark compiles expressions to
    Spark SQL): a NotSupportedError naming the cause, not Spark's ParseException. A shallower one runs."""
    from rspark.errors import NotSupportedError

    def nested(depth: int) -> str:
        return "SELECT ?y WHERE { VALUES ?x { 1 } BIND(" + "(" * depth + "?x" + " + 1)" * depth + " AS ?y) }"

    # which of Spark's limits comes first depends on the session's state: its SQL parser, or its analyser's rule
    # iterations when the expression is resolved
    with pytest.raises(NotSupportedError, match=r"the query nests too deeply for Spark "
                                                r"\((FAILED_TO_PARSE_TOO_COMPLEX|Max iterations)\): write"):
        list(engine.sparql(nested(60)))
    assert [r["y"].lexical for r in engine.sparql(nested(10))] == ["11"]
