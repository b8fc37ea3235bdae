"""Never silent: every construct that parses but is not evaluated is refused before Spark starts, with its line,
column and the reason (rspark/syntax/refusals.py, docs/language.md "What is refused")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rspark.syntax.translate import QueryError, compile_query, ensure_evaluable

REPO = Path(__file__).resolve().parents[1]
P = "PREFIX : <http://example.org/>\n"
W = "FROM NAMED WINDOW :w ON :s [RANGE 5 SLIDE 1]\n"

# (query, continuous, the error as printed: line:column: not supported: construct)
REFUSED = {
    "entailment": (P + "REGISTER STREAM :o UNDER ENTAILMENT REGIME <http://www.w3.org/ns/entailment/RDFS> AS\n"
                   "CONSTRUCT { ?s ?p ?o } " + W + "WHERE { WINDOW :w { ?s ?p ?o } }", False,
                   "2:20: not supported: UNDER ENTAILMENT REGIME <http://www.w3.org/ns/entailment/RDFS>: rspark "
                   "applies no entailment regime yet"),
    "entailment-select": (P + "REGISTER QUERY :q UNDER ENTAILMENT REGIME <http://www.w3.org/ns/entailment/RDFS> "
                          "AS SELECT * " + W + "WHERE { WINDOW :w { ?s ?p ?o } }", False,
                          "2:19: not supported: UNDER ENTAILMENT REGIME"),
    "service": ("SELECT * WHERE { ?e ?p ?x\n  SERVICE ?e { ?s ?p ?o } }", False,
                "2:3: not supported: SERVICE ?e: an endpoint given by a variable"),
    "exists-in-aggregate": (P + "SELECT (COUNT(EXISTS { ?s :q ?x }) AS ?n) WHERE { ?s :p ?o }", False,
                            "not supported: EXISTS inside the aggregate COUNT"),
    "minus-in-ep": (P + "SELECT * FROM STREAM :s [LANDMARK 0] WHERE { { ?a :p ?b } SEQ { ?a :q ?c }\n"
                    "  MINUS { ?a :r ?d } }", False, "3:3: not supported: MINUS inside an EP-SPARQL pattern"),
    "quoted-in-ep": (P + "SELECT * FROM STREAM :s [LANDMARK 0] WHERE { { << ?a :p ?b >> :q ?c } SEQ { ?a :q ?c } }",
                     False, "2:46: not supported: a quoted triple pattern with variables inside an EP-SPARQL pattern"),
    # an ASK answers each instant alone: an ISTREAM it would ignore is refused (a one-shot ASK has no instants)
    "istream-ask": (P + "REGISTER ISTREAM QUERY :q AS ASK " + W + "WHERE { WINDOW :w { ?x :q ?y } }", True,
                    "2:30: not supported: ISTREAM on an ASK query: an ASK query answers each instant alone "
                    "(RSTREAM); ask for the solutions that are new or gone with a SELECT"),
    "graph-template": (P + "REGISTER STREAM :out AS CONSTRUCT { GRAPH :g { ?s ?p ?o } } " + W +
                       "WHERE { WINDOW :w { ?s ?p ?o } }", True,
                       "not supported: GRAPH blocks in the template of a REGISTER STREAM query"),
    "durations-several-match": (
        P + "SELECT (getDURATION() AS ?d) FROM NAMED WINDOW :w ON :s [LANDMARK 0]\n"
        "EVENT ON :w { ?a :p ?b } AS E1 EVENT ON :w { ?a :q ?c } AS E2\n"
        "WHERE { MATCH { E1 } MATCH { E2 } }", True,
        "not supported: getDURATION() in a query with several MATCH patterns"),
    "event-on-triple-window": (P + "SELECT * FROM NAMED WINDOW :w ON :s [RANGE TRIPLES 3]\n"
                               "EVENT ON :w { ?a :p ?b } AS E1 WHERE { MATCH { E1 } }", True,
                               "3:29: not supported: EVENT E1 ON <http://example.org/w>, a [RANGE TRIPLES n] window"),
    # a stream read with no window is read element by element: an aggregate needs a window
    "aggregate-without-window": (P + "SELECT (COUNT(*) AS ?n)\nFROM STREAM :s WHERE { ?a :p ?b }", True,
                                 "2:8: not supported: COUNT over a stream read with no window"),
    "rule-over-two-streams": (P + "CONSTRUCT { ?a :r ?b } FROM NAMED WINDOW :w ON :s [LANDMARK 0]\n"
                              "FROM NAMED WINDOW :v ON :t [LANDMARK 0]\n"
                              "WHERE { { WINDOW :w { ?a :p ?b } } SEQ { WINDOW :v { ?a :q ?b } } }", True,
                              "not supported: a CONSTRUCT rule reading several streams"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_position_and_reason(name):
    text, continuous, expected = REFUSED[name]
    plan = compile_query(text, source="q.rq")  # it parses and translates (rspark explain prints it)
    with pytest.raises(QueryError) as err:
        ensure_evaluable(plan, continuous=True, source="q.rq")
    if expected[0].isdigit():  # located
        assert str(err.value).startswith("q.rq:" + expected)
    else:
        assert expected in str(err.value)
    if continuous:  # refused in continuous queries only: a one-shot evaluation has it
        ensure_evaluable(plan, continuous=False, source="q.rq")
    else:
        with pytest.raises(QueryError):
            ensure_evaluable(plan, continuous=False, source="q.rq")


def test_a_query_reading_its_own_output_is_not_refused():
    plan = compile_query(P + "REGISTER STREAM :s AS CONSTRUCT { ?s ?p ?o }\n" + W + "WHERE { WINDOW :w { ?s ?p ?o } }",
                         source="q.rq")
    assert plan.refusals == ()
    ensure_evaluable(plan, continuous=True, source="q.rq")  # a state loop, in a replay as live


def test_describe_is_not_refused_over_static_data_nor_over_windows():
    for text in (P + "DESCRIBE :a", P + "DESCRIBE ?s " + W + "WHERE { WINDOW :w { ?s ?p ?o } }"):
        plan = compile_query(text)
        assert plan.refusals == ()
        ensure_evaluable(plan)


def test_evaluated_queries_have_no_refusal():
    for text in [P + "SELECT * " + W + "WHERE { WINDOW :w { ?s ?p ?o FILTER EXISTS { ?s :q ?x } } }",
                 P + "SELECT * WHERE { ?s :p ?o OPTIONAL { ?s :q ?x } FILTER NOT EXISTS { ?x :r ?y } }",
                 P + "SELECT * WHERE { ?s :p ?o MINUS { ?s :q ?x } }",
                 P + "SELECT * WHERE { ?s :p ?o OPTIONAL { ?s :q ?x FILTER EXISTS { ?x :r ?y } } }",
                 P + "SELECT * " + W + "WHERE { WINDOW :w { ?s ?p ?o BIND(timestamp(?s, ?p, ?o) AS ?t) } }"]:
        assert compile_query(text).refusals == ()


def _rspark(*args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rspark", *args], input=stdin, capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_the_cli_refuses_before_spark_starts(tmp_path):
    # exit 2, one located line naming the construct; no JVM is started (nothing of Spark's on stderr)
    query = tmp_path / "q.rq"
    query.write_text(REFUSED["entailment"][0], encoding="utf-8")
    stream = tmp_path / "s.trig"
    stream.write_text("<http://e/g> { <http://e/a> <http://e/b> <http://e/c> }\n"
                      "<http://e/g> <http://www.w3.org/ns/prov#generatedAtTime> 1 .\n", encoding="utf-8")
    out = _rspark("replay", str(query), "--stream", f"http://example.org/s={stream}")
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.splitlines() == [
        f"rspark: error: {query}:2:20: not supported: UNDER ENTAILMENT REGIME "
        "<http://www.w3.org/ns/entailment/RDFS>: rspark applies no entailment regime yet, and answering without it "
        "would miss the entailed solutions; write the inferences the query needs as property paths "
        "(e.g. ?x a/rdfs:subClassOf* :C) or as CONSTRUCT rules"]
    # explain prints the algebra and warns
    out = _rspark("explain", str(query))
    assert out.returncode == 0
    assert "(entailment <http://www.w3.org/ns/entailment/RDFS>)" in out.stdout
    assert out.stderr.startswith(f"rspark: warning: {query}:2:20: not supported: UNDER ENTAILMENT REGIME")
