"""Which window patterns are matched before the window (rspark.spark.streaming.r2r.matched_before_window): the
conjunctive ones, whose solutions at an instant are the matches over the stream with all their triples in the
instant's window. The answers are compared with pyoxigraph's in tests/test_replay_differential.py."""

import pytest

from rspark import compile_query
from rspark.algebra import ops
from rspark.spark.streaming.r2r import matched_before_window

HEAD = "PREFIX : <http://e/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT * " \
       "FROM NAMED WINDOW :w ON :s [RANGE 10 SLIDE 1] WHERE { WINDOW :w { "


def window_pattern(body: str) -> ops.Op:
    plan = compile_query(HEAD + body + " } }")
    found = [x for x in ops.descendants(plan.op) if isinstance(x, ops.Window)]
    assert len(found) == 1
    return found[0].op


@pytest.mark.parametrize("body", [
    "?s :p ?x . ?x :q ?o",
    "?s :p ?x . ?x :q ?o FILTER(?o > 3 && STRSTARTS(STR(?s), 'http'))",
    "{ ?s :p ?x } { ?x :q ?o }",
    "?s :p ?x . ?s :q ?v FILTER(xsd:integer(?v) > 2)",
    "?a :p ?b . ?b :p ?c . ?c :q ?d FILTER(?a != ?d)",
])
def test_conjunctive_patterns_are_matched_before_the_window(body):
    assert matched_before_window(window_pattern(body))


@pytest.mark.parametrize("body", [
    "?s :p ?x",  # one triple pattern: no join to save, the window's copy is the answer
    "?s :p ?x FILTER(?x > 3)",
    "?s :p ?x . ?x :q ?o FILTER(?o > NOW())",  # NOW() is the evaluation instant
    "?s :p ?x . ?x :q ?o FILTER(RAND() < 0.5)",  # a fresh value at each evaluation
    "?s :p ?x . ?x :q ?o FILTER(timestamp(?s, :p, ?x) > 3)",  # the window's own timestamps
    "?s :p ?x . ?x :q ?o FILTER(<http://e/f>(?o))",  # an extension function
    "?s :p ?x . ?x :q ?o FILTER NOT EXISTS { ?o :r ?z }",  # EXISTS reads the window's content
    "?s :p ?x OPTIONAL { ?x :q ?o }",
    "?s :p ?x MINUS { ?x :q ?o }",
    "{ ?s :p ?x } UNION { ?x :q ?o }",
    "?s :p ?x . ?x :q ?o BIND(?o + 1 AS ?n)",
    "?s :p+ ?o . ?o :r ?z",  # a property path that is not a join of triple patterns
    "?s :p ?x . GRAPH ?g { ?x :q ?o }",
    "<< ?s :p ?x >> :q ?o . ?o :r ?z",  # a quoted triple pattern
])
def test_other_patterns_are_matched_in_the_windows_copy(body):
    assert not matched_before_window(window_pattern(body))
