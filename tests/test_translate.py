"""Regressions found by the round-trip property tests."""

from rspark import compile_query, explain, parse_query
from rspark.model.terms import IRI, RDF_NIL, Variable


def test_select_star_hides_path_step_variables():
    plan = compile_query("SELECT * { ?s <http://ex/p>/<http://ex/q> ?o }")
    assert plan.op.vars == (Variable("o"), Variable("s"))


def test_timestamp_keeps_nil_argument():
    expr = parse_query("SELECT (timestamp(?s ?p ()) AS ?t) {}").projection[0].expr
    assert expr.args == (Variable("s"), Variable("p"), IRI(RDF_NIL))


def test_a_inside_path_sequences_and_alternatives():
    assert explain("SELECT * { ?s a/<p>|a ?o }") == \
        "(project (?o ?s)\n  (path ?s (alt (seq rdf:type <p>) rdf:type) ?o))"
