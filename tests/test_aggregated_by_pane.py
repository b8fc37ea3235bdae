"""Which groupings are aggregated pane by pane (rspark.spark.streaming.r2r.aggregated_by_pane): those of a window's
solutions alone, over a conjunctive pattern, whose keys and aggregates depend on the solution alone and whose
aggregates merge. The answers are compared with pyoxigraph's in tests/test_replay_differential.py; here, what the
differential streams do not reach: a partial decimal sum beyond DECIMAL(38,18)."""

import pytest

from rspark import compile_query
from rspark.algebra import ops
from rspark.spark.streaming.r2r import aggregated_by_pane
from tests.support.panes import replay_spying_on_panes

HEAD = "PREFIX : <http://e/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
W = " FROM NAMED WINDOW :w ON :s [RANGE 10 SLIDE 1] "


def grouping(query: str) -> ops.Group:
    plan = compile_query(HEAD + query.replace("{w}", W))
    found = [x for x in ops.descendants(plan.op) if isinstance(x, ops.Group)]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("query", [
    "SELECT ?s (AVG(?v) AS ?a) {w} WHERE { WINDOW :w { ?o :by ?s ; :val ?v } } GROUP BY ?s",
    "SELECT ?s (COUNT(*) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?o } } GROUP BY ?s",  # one triple pattern
    "SELECT (SUM(?v) AS ?t) (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) {w} WHERE { WINDOW :w { ?s :p ?v } }",  # no key
    "SELECT ?k (SAMPLE(?v) AS ?x) (GROUP_CONCAT(STR(?v)) AS ?g) {w} WHERE { WINDOW :w { ?s :p ?v } } "
    "GROUP BY (isIRI(?v) AS ?k)",
    "SELECT ?s (COUNT(?v) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?v FILTER(?v > 3) } } GROUP BY ?s "
    "HAVING (COUNT(?v) > 1)",
    "SELECT ?s {w} WHERE { WINDOW :w { ?s :p ?v } } GROUP BY ?s",  # keys alone
])
def test_mergeable_groupings_of_a_window_are_aggregated_by_pane(query):
    assert aggregated_by_pane(grouping(query))


@pytest.mark.parametrize("query", [
    "SELECT ?s (COUNT(DISTINCT ?v) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?v } } GROUP BY ?s",  # a value in 2 panes
    "SELECT ?s (SUM(DISTINCT ?v) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?v } } GROUP BY ?s",
    "SELECT (GROUP_CONCAT(DISTINCT STR(?v)) AS ?g) {w} WHERE { WINDOW :w { ?s :p ?v } }",
    "SELECT ?s (SUM(?v) AS ?t) {w} WHERE { WINDOW :w { ?s :p ?v } } GROUP BY ?s (?v > NOW())",  # the instant
    "SELECT ?s (SUM(?v * RAND()) AS ?t) {w} WHERE { WINDOW :w { ?s :p ?v } } GROUP BY ?s",
    "SELECT ?s (MAX(timestamp(?s, :p, ?v)) AS ?t) {w} WHERE { WINDOW :w { ?s :p ?v } } GROUP BY ?s",
    "SELECT ?s (COUNT(*) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?v OPTIONAL { ?v :q ?z } } } GROUP BY ?s",
    "SELECT ?s (COUNT(*) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?v } ?s :r ?z } GROUP BY ?s",  # beside static data
    "SELECT ?s (COUNT(*) AS ?n) {w} WHERE { WINDOW ?x { ?s :p ?v } } GROUP BY ?s",  # every window
    "SELECT ?s (COUNT(*) AS ?n) {w} WHERE { WINDOW :w { ?s :p+ ?v } } GROUP BY ?s",
])
def test_other_groupings_are_aggregated_over_the_windows_copy(query):
    assert not aggregated_by_pane(grouping(query))


def test_a_pane_whose_decimal_sum_overflows_makes_the_windows_sum_an_error(spark, tmp_path):
    """SUM beyond DECIMAL(38,18) is an error (unbound): a pane's partial sum that overflows is NULL, as is a
    pane's with no value to sum; the merge tells them apart by the partial count, so the window holding the
    overflowing pane has no sum (not the other pane's 1.5), and the window after it has the other panes' sum."""
    from rspark.engine.engine import Engine

    big = '"60000000000000000000.0"^^<http://www.w3.org/2001/XMLSchema#decimal>'
    path = tmp_path / "s.trig"
    path.write_text("@prefix : <http://e/> . @prefix prov: <http://www.w3.org/ns/prov#> .\n"
                    f":g1 {{ :a :v {big} }} :g1 prov:generatedAtTime 1 .\n"
                    f":g2 {{ :b :v {big} }} :g2 prov:generatedAtTime 2 .\n"
                    ":g3 { :c :v 1.5 } :g3 prov:generatedAtTime 5 .\n", encoding="utf-8")
    query = (HEAD + "SELECT (SUM(?x) AS ?sum) (COUNT(?x) AS ?n) FROM NAMED WINDOW :w ON :s [RANGE 6 SLIDE 2] "
             "WHERE { WINDOW :w { ?s :v ?x } }")
    with Engine(spark=spark) as engine:
        engine.add_stream("http://e/s", path)
        records, used = replay_spying_on_panes(engine, query, [6, 8])
    assert used
    got = {rec.ticks: [(r.get("sum"), r["n"].lexical) for r in rec.rows] for rec in records}
    assert got[6] == [(None, "3")]
    assert [(s.lexical, n) for s, n in got[8]] == [("1.5", "1")]
