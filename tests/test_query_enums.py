"""What a query names from a closed list is an enumeration, read from the text once, by the parser: the event
policies SEQ[...] and MATCH CONSUME take (``rspark.rsp.policies``), kept by the syntax tree and the algebra, and
SELECT's DISTINCT / REDUCED (``rspark.algebra.ops.SelectModifier``)."""

from __future__ import annotations

from rspark.algebra import ops
from rspark.algebra.ops import SelectModifier
from rspark.rsp.policies import Consumption, MatchConsumption, Selection, SeqSelection
from rspark.syntax import ast
from rspark.syntax.parser import parse_query
from rspark.syntax.translate import translate
from rspark.syntax.unparse import unparse


def test_the_query_s_event_policies_are_the_profile_s_by_name():
    assert [m.name for m in SeqSelection] == [m.name for m in Selection]
    assert [m.name for m in MatchConsumption] == [*(m.name for m in Consumption), "NONE"]
    # the values are the policies as a query writes them (what the syntax tree held as text before)
    assert [m.value for m in SeqSelection] == ["UNRESTRICTED", "NAIVE", "CHRONOLOGICAL", "RECENT"]
    assert [m.value for m in MatchConsumption] == ["CHRONOLOGICAL", "RECENT", "NONE"]
    assert SeqSelection.of(Selection.NAIVE) is SeqSelection.NAIVE
    assert SeqSelection.of("unrestricted") is SeqSelection.UNRESTRICTED
    assert MatchConsumption.of(Consumption.RECENT) is MatchConsumption.RECENT
    assert MatchConsumption.of("chronological") is MatchConsumption.CHRONOLOGICAL
    assert MatchConsumption.of(None) is MatchConsumption.NONE


EVENTS = """PREFIX : <http://example.org/>
SELECT ?x
FROM NAMED WINDOW :w ON :s [RANGE PT10S SLIDE PT1S]
EVENT ON :w { ?x :p ?y } AS E1
EVENT ON :w { ?y :q ?z } AS E2
EVENT ON :w { ?z :r ?v } AS E3
"""


def _match(text: str) -> ast.MatchPattern:
    (match,) = [e for e in parse_query(EVENTS + text).where.elements if isinstance(e, ast.MatchPattern)]
    return match


def test_the_parser_reads_the_event_policies_as_members():
    plain = _match("WHERE { MATCH { E1 SEQ E2 } }")
    assert plain.consume is None and plain.expr.selection is None
    for written, member in [("NAIVE", SeqSelection.NAIVE), ("chronological", SeqSelection.CHRONOLOGICAL),
                            ("Recent", SeqSelection.RECENT), ("UNRESTRICTED", SeqSelection.UNRESTRICTED)]:
        seq = _match(f"WHERE {{ MATCH {{ E1 SEQ[{written}] E2 }} }}").expr
        assert type(seq.selection) is SeqSelection and seq.selection is member
    for written, member in [("CHRONOLOGICAL", MatchConsumption.CHRONOLOGICAL), ("recent", MatchConsumption.RECENT),
                            ("None", MatchConsumption.NONE)]:
        match = _match(f"WHERE {{ MATCH CONSUME {written} {{ E1 SEQ E2 }} }}")
        assert type(match.consume) is MatchConsumption and match.consume is member
    nested = _match("WHERE { MATCH CONSUME RECENT { (E1 SEQ[NAIVE] E2) SEQ[RECENT] E3 } }")
    assert nested.consume is MatchConsumption.RECENT
    assert nested.expr.selection is SeqSelection.RECENT and nested.expr.left.selection is SeqSelection.NAIVE


def test_the_algebra_keeps_the_members_and_prints_them_as_before():
    text = EVENTS + "WHERE { MATCH CONSUME NONE { E1 SEQ[CHRONOLOGICAL] E2 } }"
    (match,) = [n for n in ops.descendants(translate(parse_query(text)).op) if isinstance(n, ops.Match)]
    assert match.consume is MatchConsumption.NONE and match.expr.selection is SeqSelection.CHRONOLOGICAL
    assert "MATCH CONSUME NONE { E1 SEQ[CHRONOLOGICAL] E2 }" in unparse(parse_query(text))


def test_the_parser_reads_the_select_modifier_as_a_member():
    assert parse_query("SELECT ?x WHERE { ?x ?p ?o }").modifier is None
    for written, member in [("DISTINCT", SelectModifier.DISTINCT), ("distinct", SelectModifier.DISTINCT),
                            ("Reduced", SelectModifier.REDUCED)]:
        query = parse_query(f"SELECT {written} ?x WHERE {{ ?x ?p ?o }}")
        assert type(query.modifier) is SelectModifier and query.modifier is member
    (group,) = parse_query("SELECT * WHERE { { SELECT REDUCED ?x WHERE { ?x ?p ?o } } }").where.elements[0].groups
    assert group.elements[0].query.modifier is SelectModifier.REDUCED
    distinct = parse_query("PREFIX : <http://example.org/> SELECT RSTREAM DISTINCT ?x FROM NAMED WINDOW :w ON :s "
                           "[RANGE PT10S] WHERE { WINDOW :w { ?x ?p ?o } }")
    assert distinct.modifier is SelectModifier.DISTINCT
    assert isinstance(translate(distinct).op, ops.Distinct)
    assert isinstance(translate(parse_query("SELECT REDUCED ?x WHERE { ?x ?p ?o }")).op, ops.Reduced)
    assert unparse(distinct).splitlines()[1] == "SELECT RSTREAM DISTINCT ?x"
