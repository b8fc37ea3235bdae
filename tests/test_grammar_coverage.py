"""Never silent (issue 42): every construct the grammar accepts is evaluated by a test on Spark or refused before Spark
starts. COVERAGE classifies each rule and alias of rspark/syntax/rspql.lark, OPTIONS each option a node carries as a
keyword, with a sample query: evaluated(test) names a test that runs it on Spark with exact assertions, refused(...)
the located error ensure_evaluable raises. A new rule fails here until classified; UNTESTED lists what is accepted but
neither (each needs an evaluation test or a refusal), and is empty. Nothing here starts Spark: grammar, compiler and
W3C files."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path

import pytest
from lark import Lark, Token, Tree

from rspark.algebra.sse import to_sse
from rspark.syntax.translate import QueryError, compile_query, ensure_evaluable

REPO = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------- the diagnostic parsers

# The grammar as rspark/syntax/parser.py reads it, with every leading "?" removed: no rule is inlined, so every rule a
# query uses is a node of its tree (the language is the same). Two parsers with parser.py's options (LALR(1), the
# contextual lexer, the regex module), keeping every token (the keywords "_"-terminals would drop, SLIDE, LANDMARK):
# aliased() keeps the aliases (-> or_expr); unaliased() drops them too, so that a rule whose alternatives are all
# aliased (conditional_or_expression) still names its nodes.
GRAMMAR = files("rspark.syntax").joinpath("rspql.lark").read_text(encoding="utf-8")
_NOT_INLINED = re.sub(r"(?m)^\?(?=[a-z])", "", GRAMMAR)
_NO_ALIASES = re.sub(r"[ \t]*->[ \t]*[a-z_][a-z0-9_]*", "", _NOT_INLINED)


def _lark(text: str) -> Lark:
    return Lark(text, parser="lalr", lexer="contextual", maybe_placeholders=False, regex=True, keep_all_tokens=True)


@cache
def aliased() -> Lark:
    return _lark(_NOT_INLINED)


@cache
def unaliased() -> Lark:
    return _lark(_NO_ALIASES)


@cache
def aliases() -> frozenset[str]:
    return frozenset(str(r.alias) for r in aliased().rules if r.alias)


@cache
def all_constructs() -> frozenset[str]:
    """Every rule name and alias of the grammar (terminals and Lark's own "_" rules are not constructs)."""
    rules = {str(r.origin.name) for r in aliased().rules if not str(r.origin.name).startswith("_")}
    return frozenset(rules) | aliases()


def uses(construct: str, text: str) -> bool:
    """``text`` has a node ``construct`` (an alias is read in the aliased tree, a rule in the unaliased one)."""
    tree = (aliased() if construct in aliases() else unaliased()).parse(text)
    return any(t.data == construct for t in tree.iter_subtrees())


# ------------------------------------------------------------------------------------------------------ statuses


@dataclass(frozen=True)
class Evaluated:
    """``test`` ("tests/test_x.py::test_name", a parametrized test by its function) runs the construct on Spark
    with exact assertions. ``via``: the query the test runs when the sample is another spelling of it (both
    compile to the same algebra)."""

    test: str
    via: str | None = None


@dataclass(frozen=True)
class Refused:
    """ensure_evaluable refuses the sample with a located "not supported" error containing ``fragment``."""

    fragment: str


def evaluated(test: str, via: str | None = None) -> Evaluated:
    return Evaluated(test, via)


def refused(fragment: str) -> Refused:
    return Refused(fragment)


# the W3C SPARQL 1.1, 1.0 and RDF-star CG evaluation suites: test_w3c_claims_are_in_passing_w3c_queries checks that
# a query of the suites that is not a known failure uses each construct and option given this status
W3C = evaluated("tests/test_w3c_eval.py::test_w3c_evaluation")

# ------------------------------------------------------------------------------------------------------- markers


def _is(child, kind: str) -> bool:
    """``child`` (a token or a node) is ``kind``: a token type, TYPE=VALUE (any case), a rule, or rule>kind (a node
    with such a child)."""
    nested = re.fullmatch(r"([a-z_][a-z0-9_]*)>(.+)", kind)
    if nested:
        outer, inner = nested.groups()
        return isinstance(child, Tree) and child.data == outer and any(_is(c, inner) for c in child.children)
    if isinstance(child, Token):
        name, _, value = kind.partition("=")
        return child.type == name and (not value or str(child).upper() == value.upper())
    return child.data == kind


@dataclass(frozen=True)
class Tok:
    """A token of type TYPE (or TYPE=VALUE) anywhere in the tree."""

    kind: str

    def found(self, tree: Tree) -> bool:
        return any(_is(t, self.kind) for t in tree.scan_values(lambda v: isinstance(v, Token)))


@dataclass(frozen=True)
class Node:
    """A node ``rule`` whose children include each of ``has``, none of ``lacks``, and with ``shape`` are exactly
    those kinds in that order."""

    rule: str
    has: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()
    shape: tuple[str, ...] | None = None

    def found(self, tree: Tree) -> bool:
        for t in tree.iter_subtrees():
            if t.data != self.rule:
                continue
            if not all(any(_is(c, k) for c in t.children) for k in self.has):
                continue
            if any(_is(c, k) for c in t.children for k in self.lacks):
                continue
            if self.shape is not None and (len(t.children) != len(self.shape)
                                           or not all(_is(c, k) for c, k in zip(t.children, self.shape))):
                continue
            return True
        return False


@dataclass(frozen=True)
class Both:
    first: Tok | Node
    second: Tok | Node

    def found(self, tree: Tree) -> bool:
        return self.first.found(tree) and self.second.found(tree)


# --------------------------------------------------------------------------------------------------------- samples

P = "PREFIX : <http://example.org/>\n"
BASIC = "SELECT * WHERE { ?s ?p ?o }"
AGGREGATED = P + ("SELECT ?s (COUNT(DISTINCT ?o) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s HAVING (COUNT(?o) > 1) "
                  "ORDER BY DESC(?n) ?s LIMIT 10 OFFSET 2")
EXPRESSIONS = P + ("SELECT ?s WHERE { ?s :p ?o FILTER((?o * 2 + 1 > 3 && ?o - 1 < 10) || ?o IN (20, 30) "
                   "|| ?o NOT IN (40) || !isIRI(?s) || -?o = 2 || ?o = :f(?s) || STRLEN(STR(?o)) = 1) }")
TEMPLATE = P + "CONSTRUCT { ?s :q ?o ; a :C . _:b :r ( 1 2 ), [ :s ?o ] } WHERE { ?s :p ?o }"
PATHS = P + "SELECT * WHERE { ?s (:p|^:q)/:r* ?o . ?o !(:a|^:b|a|^a)+ ?x . ?x :p? [ :q ?y ] . ( ?y ) :r 1 }"
VALUES = P + "SELECT * WHERE { ?s :p ?o VALUES ?o { 1 UNDEF } VALUES (?s ?t) { (:a 'x') (UNDEF 1) } } VALUES ?z { :c }"
PATTERNS = P + ("SELECT * FROM <http://example.org/g> FROM NAMED <http://example.org/n> WHERE { ?s :p ?o "
                "OPTIONAL { ?s :q ?x } MINUS { ?s :r ?o } { ?s :t 1 } UNION { ?s :t 2 } GRAPH ?g { ?s ?p ?o } "
                "BIND(?o + 1 AS ?y) FILTER NOT EXISTS { ?s :u ?o } { SELECT ?s WHERE { ?s :v ?w } } }")
TERMS = P + "SELECT * WHERE { ?s :p 'a', \"b\"@en, 'c'^^:t, 1, 1.5, 1e3, true, _:b, +1, -2.5 }"
STAR = P + ("SELECT * WHERE { << ?s :p ?o >> :q << :a :b 'c' >> . BIND(<< :a :b ?o >> AS ?t) "
            "VALUES ?v { << :a :b :c >> } }")

# tests/test_replay.py (P is its prefix)
EXAMPLE6 = P + "SELECT ?x ?y FROM NAMED WINDOW :w2 ON :S [RANGE 5 SLIDE 1] WHERE { WINDOW :w2 { ?x :p ?y } }"
TWO_WINDOWS = P + ("SELECT ?x ?z FROM NAMED WINDOW :w1 ON :S [LANDMARK 1] FROM NAMED WINDOW :w2 ON :S "
                   "[RANGE 5 SLIDE 1] WHERE { WINDOW :w1 { ?x :p ?y } WINDOW :w2 { ?y :q ?z } }")
WINDOW_VARIABLE = P + ("SELECT ?w ?x FROM NAMED WINDOW :w1 ON :S [LANDMARK 1] FROM NAMED WINDOW :w2 ON :S "
                       "[RANGE 2 SLIDE 2] WHERE { WINDOW ?w { ?x :p ?y } }")
WHO_IS_WHERE = P + ("SELECT ?room ?person FROM NAMED WINDOW :win ON :social [RANGE PT1M SLIDE PT1M] "
                    "WHERE { WINDOW :win { ?person :isIn ?room } }")
ISTREAM = WHO_IS_WHERE.replace("SELECT", "SELECT ISTREAM", 1)
DSTREAM = WHO_IS_WHERE.replace("SELECT", "SELECT DSTREAM", 1)
SPARQLSTREAM = P + ("PREFIX ex: <http://example.org/streams/>\nSELECT ISTREAM ?room ?person\n"
                    "FROM NAMED STREAM ex:social [1 MINUTES SLIDE 1 MINUTES]\nWHERE {\n ?person :isIn ?room .\n}\n")
OPTIONAL_TUMBLING = P + ("SELECT ?person1 ?person2 FROM STREAM :social [RANGE PT1M TUMBLING] WHERE { "
                         "OPTIONAL { ?person1 :isIn :room1 } OPTIONAL { ?person2 :isIn :room2 } "
                         "FILTER(bound(?person1) || bound(?person2)) }")
MINUS_STATIC = P + ("SELECT ?person FROM NAMED WINDOW :win ON :social [RANGE PT1M] FROM NAMED :degrees "
                    "WHERE { WINDOW :win { ?person :isIn :room1 } "
                    "MINUS { GRAPH :degrees { ?person :hasDegree :doctorate } } }")
TRIPLE_COUNT = P + "SELECT ?who FROM STREAM :social [RANGE TRIPLES 3] WHERE { ?who :isIn ?room }"
PRODUCER = P + ("REGISTER STREAM :s1 AS CONSTRUCT { :s1 :matches ?who } FROM STREAM :social "
                "[RANGE PT1M SLIDE PT1M] WHERE { ?who :isIn ?room }")
CONSUMER = P + ("REGISTER QUERY :s2 AS SELECT ?who FROM STREAM :s1 [RANGE PT1M SLIDE PT1M] "
                "WHERE { :s1 :matches ?who }")


# tests/test_windows.py: window_spec() compiles the window in this query
def windowed(spec: str) -> str:
    return f"PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :w ON :s {spec} WHERE {{ WINDOW :w {{ ?a ?b ?c }} }}"


COMPUTED_EVERY = ("PREFIX : <http://e/> REGISTER STREAM :out COMPUTED EVERY 3 AS SELECT * "
                  "FROM NAMED WINDOW :w ON :s [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?a ?b ?c } }")
# tests/test_csrbench.py: CSRBench q1 as its file writes it, and with the window of the SPARQLstream engine
CSRBENCH_Q1 = """PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>
REGISTER RSTREAM <http://ex.org/csrbench/q1> AS
SELECT ?sensor ?obs
FROM NAMED WINDOW <http://ex.org/csrbench/w> ON <http://ex.org/streams/test> [RANGE PT10S STEP PT10S]
WHERE {
  WINDOW <http://ex.org/csrbench/w> {
    ?obs om-owl:observedProperty weather:_AirTemperature ;
      om-owl:procedure ?sensor ;
      om-owl:result ?res .
    ?res om-owl:floatValue ?value .
    FILTER(?value > 80)
  }
}
"""
CSRBENCH_Q1_STARTING = CSRBENCH_Q1.replace("STEP PT10S]", "STEP PT10S STARTING AT 1970-01-01T00:00:01Z]")
# tests/test_events.py
EVENT_WINDOWS = ("FROM NAMED WINDOW :w1 ON :S [LANDMARK 1]\nFROM NAMED WINDOW :w2 ON :S [RANGE 5 SLIDE 1]\n"
                 "EVENT ON :w1 { ?x :p ?y } AS E1\nEVENT ON :w2 { ?y :q ?z } AS E2\n")
MATCH_DURATION = P + ("SELECT ?x ?name ?z (getDURATION() AS ?d)\n" + EVENT_WINDOWS +
                      "WHERE { MATCH { E1 SEQ E2 } ?x :name ?name FILTER(getDURATION() > 2) }")
MATCH_RECENT = P + ("SELECT ?x ?z ?other ?s\n" + EVENT_WINDOWS +
                    "WHERE { MATCH { E1 SEQ[RECENT] E2 } WINDOW :w2 { ?other :p ?any } BIND(getSTARTTIME() AS ?s) }")
PROFILE_DEFAULTS = P + ("SELECT ?x ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)\n" + EVENT_WINDOWS +
                        "WHERE { MATCH { E1 SEQ E2 } }")


# tests/test_cep_properties.py: query_text() of Example 4's windows and events
def rsep(expr: str, consume: str = "") -> str:
    return P + ("SELECT ?x ?y ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)\n"
                "FROM NAMED WINDOW :w1 ON <http://example.org/S> [LANDMARK 1]\n"
                "FROM NAMED WINDOW :w2 ON <http://example.org/S> [RANGE 5 SLIDE 1]\n"
                "EVENT ON :w1 { ?x :p ?y } AS E1\nEVENT ON :w2 { ?y :q ?z } AS E2\n"
                f"WHERE {{ MATCH {consume + ' ' if consume else ''}{{ {expr} }} }}")


EXAMPLE9 = P + ("SELECT ?x ?y ?z\nFROM NAMED :S WIN [LND 1] AS :w1\nFROM NAMED :S WIN [RANGE 5 SLIDE 1] AS :w2\n"
                "EVENT ON :w1 { ?x :p ?y. } AS E1\nEVENT ON :w2 { ?y :q ?z. } AS E2\nWHERE { MATCH { E1 SEQ E2 } }")
# tests/test_epsparql.py
EP_PREFIXES = "PREFIX : <http://example.org/>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"


def market(select: str, where: str) -> str:
    return EP_PREFIXES + f"SELECT {select}\nFROM STREAM :market [LANDMARK 0]\nWHERE {{ {where} }}\n"


LEFT = "{ ?c :hasStockPrice ?p . ?c :volume ?v }"
SE = "(getSTARTTIME() AS ?start) (getENDTIME() AS ?end)"
EQUALS = market(f"?c ?p ?v ?r {SE}", f"{LEFT} EQUALS {{ ?c :rating ?r }}")
EQUALSOPTIONAL = market("?c ?p ?v ?r (getDURATION() AS ?duration)", f"{LEFT} EQUALSOPTIONAL {{ ?c :rating ?r }}")
OPTIONALSEQ = market(f"?c ?r ?p {SE}", "{ ?c :rating ?r } OPTIONALSEQ { ?c :hasStockPrice ?p }")
SEQ_Q2 = EP_PREFIXES + ("SELECT ?company ?ratingagency\nFROM STREAM :stocks [LANDMARK 2024-01-01T00:00:00Z]\n"
                        "WHERE { { ?company :downratedby ?ratingagency}\nOPTIONALSEQ\n"
                        "{{ ?company :hasStockPrice ?price1 }\nSEQ { ?company :hasStockPrice ?price2 }}\n"
                        "FILTER (?price2 < ?price1 * 0.5) }\n")
# tests/test_timestamp_fn.py
TIMESTAMP = P + ("SELECT ?who ?room ?t FROM STREAM :social [RANGE 1m STEP 1m] "
                 "WHERE { ?who :isIn ?room BIND(timestamp(?who, :isIn, ?room) AS ?t) }")
CSPARQL_SEQ = (REPO / "tests" / "queries" / "seeds" / "s002_27_seq_csparql.rq").read_text(encoding="utf-8")
# tests/test_rdf_star_stream.py: RSP-QL*'s query as the seed describes it, REGISTER STREAM ... AS SELECT
SEED004 = (REPO / "tests" / "queries" / "seeds" / "s004_query_shape.rq").read_text(encoding="utf-8")
# tests/test_bgp_window.py
CQELS_INLINE = P + ("PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#> "
                    "SELECT ?obs ?who WHERE { STREAM :social [RANGE BGP 2] { ?obs ssn:observedValue ?who } }")
BGP_WINDOW = P + ("PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#> PREFIX due: <http://example.org/due#> "
                  "SELECT ?obs ?room FROM NAMED WINDOW :win ON :social [RANGE BGP 3] WHERE { WINDOW :win { "
                  "?obs a ssn:Observation; ssn:observedBy ?sensor; ssn:observedProperty :peopleInRoom; "
                  "ssn:observedValue :axel; due:locatedIn ?room . } }")
# tests/test_construct_quads.py
GRAPH_TEMPLATE = ("PREFIX : <http://e/> CONSTRUCT { ?s :copied true . GRAPH ?s { ?s :v ?o } GRAPH :all { ?s :v ?o } "
                  "GRAPH ?o { ?s :bad 1 } } WHERE { ?s :p ?o FILTER(isNumeric(?o)) }")
ISTREAM_CONSTRUCT = ("PREFIX : <http://e/> CONSTRUCT ISTREAM { ?x :seen :yes } FROM NAMED WINDOW :w ON :s "
                     "[RANGE 10 SLIDE 2] WHERE { WINDOW :w { ?x :p ?v } }")
# tests/test_rdf_star_stream.py
HEART = ("PREFIX : <http://example.org/> PREFIX ex: <http://www.example.org/ontology#> "
         "PREFIX sosa: <http://www.w3.org/ns/sosa/> ")
# tests/test_sparql_engine.py
FROM_GRAPH = "PREFIX : <http://example.org/> SELECT ?p FROM :g WHERE { ?p :age ?a }"
# tests/test_refusals.py
REFUSAL_WINDOW = "FROM NAMED WINDOW :w ON :s [RANGE 5 SLIDE 1]\n"
ENTAILMENT = (P + "REGISTER STREAM :o UNDER ENTAILMENT REGIME <http://www.w3.org/ns/entailment/RDFS> AS\n"
              "CONSTRUCT { ?s ?p ?o } " + REFUSAL_WINDOW + "WHERE { WINDOW :w { ?s ?p ?o } }")
SERVICE = "SELECT * WHERE {\n  SERVICE <http://example.org/sparql> { ?s ?p ?o } }"
DESCRIBE = P + "DESCRIBE ?s " + REFUSAL_WINDOW + "WHERE { WINDOW :w { ?s ?p ?o } }"


def select(expr: str, where: str = "") -> str:
    return P + f"SELECT ({expr} AS ?r) WHERE {{ {where} }}"


# ------------------------------------------------------------------------------------------ the grammar's rules

COVERAGE: dict[str, tuple[str, Evaluated | Refused]] = {
    # query forms and the prologue
    "start": (BASIC, W3C),
    "prologue": (P + BASIC, W3C),
    "base_decl": ("BASE <http://example.org/> SELECT * WHERE { <a> ?p ?o }", W3C),
    "prefix_decl": (P + "SELECT * WHERE { :a ?p ?o }", W3C),
    "query_body": (BASIC, W3C),
    "select_query": (BASIC, W3C),
    "sub_select": (PATTERNS, W3C),
    "select_clause": (BASIC, W3C),
    "select_modifier": (P + "SELECT DISTINCT ?s WHERE { ?s :p ?o }", W3C),
    "select_item": (AGGREGATED, W3C),
    "construct_query": (TEMPLATE, W3C),
    "describe_query": (DESCRIBE, evaluated("tests/test_continuous_describe.py::test_describe_per_instant")),
    "ask_query": (P + "ASK { ?s :p ?o }", W3C),
    "where_clause": (BASIC, W3C),
    "solution_modifier": (AGGREGATED, W3C),
    "group_clause": (AGGREGATED, W3C),
    "group_condition": (AGGREGATED, W3C),
    "having_clause": (AGGREGATED, W3C),
    "order_clause": (AGGREGATED, W3C),
    "order_condition": (AGGREGATED, W3C),
    "limit_offset": (AGGREGATED, W3C),
    "limit_clause": (AGGREGATED, W3C),
    "offset_clause": (AGGREGATED, W3C),
    "values_clause": (VALUES, W3C),
    # static datasets
    "dataset_clause": (PATTERNS, W3C),
    "default_graph": (PATTERNS, W3C),
    "named_graph": (PATTERNS, W3C),
    # [RSP] registration and R2S
    "register": (CONSUMER, evaluated("tests/test_replay.py::test_query_network_register_stream")),
    "register_kind": (CONSUMER, evaluated("tests/test_replay.py::test_query_network_register_stream")),
    "register_name": (CONSUMER, evaluated("tests/test_replay.py::test_query_network_register_stream")),
    "r2s": (ISTREAM, evaluated("tests/test_replay.py::test_istream_and_dstream")),
    "computed_every": (COMPUTED_EVERY, evaluated("tests/test_windows.py::test_rspql_star_computed_every")),
    "entailment": (ENTAILMENT, refused("UNDER ENTAILMENT REGIME <http://www.w3.org/ns/entailment/RDFS>: rspark "
                                       "applies no entailment regime yet")),
    # [RSP] streaming datasets: the dialects' declarations and the windows
    "named_window": (EXAMPLE6, evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12")),
    "stream_window": (OPTIONAL_TUMBLING, evaluated("tests/test_replay.py::test_seed002_optional")),
    "named_stream": (SPARQLSTREAM, evaluated(
        "tests/test_replay.py::test_seed002_sparqlstream_named_stream_is_read_by_the_default_graph")),
    "seed_window": (EXAMPLE9, evaluated("tests/test_cep_properties.py::test_example9_match_is_a_set_of_mappings")),
    "window_on_stream": (
        P + "SELECT ?x ?y FROM NAMED WINDOW ON STREAM :S [RANGE 5 SLIDE 1] AS :w2 WHERE { WINDOW :w2 { ?x :p ?y } }",
        evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12", via=EXAMPLE6)),
    "window_spec": (EXAMPLE6, evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12")),
    "window_body": (EXAMPLE6, evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12")),
    "time_window": (EXAMPLE6, evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12")),
    "duration": (EXAMPLE6, evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12")),
    "number_value": (EXAMPLE6, evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12")),
    "report_clause": (windowed("[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE NON EMPTY]"), evaluated(
        "tests/test_report_clause.py::test_content_change_written_in_the_query_under_the_default_profile")),
    "report_policy": (windowed("[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE]"), evaluated(
        "tests/test_report_clause.py::test_content_change_written_in_the_query_under_the_default_profile")),
    "report_content_change": (windowed("[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE]"), evaluated(
        "tests/test_report_clause.py::test_content_change_written_in_the_query_under_the_default_profile")),
    "report_non_empty": (windowed("[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE NON EMPTY]"), evaluated(
        "tests/test_report_clause.py::test_content_change_written_in_the_query_under_the_default_profile")),
    "report_window_close": (windowed("[RANGE 4 SLIDE 4 REPORT ON WINDOW CLOSE]"), evaluated(
        "tests/test_report_clause.py::test_window_close_written_in_the_query_under_cqels")),
    "report_periodic": (windowed("[RANGE 4 SLIDE 4 REPORT PERIODIC]"), evaluated(
        "tests/test_report_clause.py::test_periodic_with_computed_every")),
    "report_every": (windowed("[RANGE 4 SLIDE 4 REPORT EVERY 3]"), evaluated(
        "tests/test_report_clause.py::test_periodic_with_report_every")),
    "starting": (CSRBENCH_Q1_STARTING, evaluated("tests/test_csrbench.py::test_reproduced_with_the_engines_window")),
    "landmark_window": (TWO_WINDOWS, evaluated("tests/test_replay.py::test_two_windows_on_one_stream_join")),
    "instant": (TWO_WINDOWS, evaluated("tests/test_replay.py::test_two_windows_on_one_stream_join")),
    "interval_window": (windowed("[FROM 3 TO 8]"),
                        evaluated("tests/test_windows.py::test_interval_window_reports_while_content_changes")),
    "relative_window": (windowed("[FROM NOW-5 TO NOW-1 STEP 1]"),
                        evaluated("tests/test_windows.py::test_offset_window")),
    "count_window": (TRIPLE_COUNT, evaluated("tests/test_replay.py::test_seed002_triple_count_window")),
    "integer_value": (TRIPLE_COUNT, evaluated("tests/test_replay.py::test_seed002_triple_count_window")),
    "partition_clause": (windowed("[RANGE ELEMENTS 1 PARTITION BY :p]"), evaluated(
        "tests/test_partitioned_window.py::test_seed002_partitioned_by_person_the_latest_element_of_each")),
    "now_window": (windowed("[NOW]"), evaluated("tests/test_windows.py::test_now_window")),
    "all_window": (P + "CONSTRUCT { ?s ?p ?o } FROM NAMED WINDOW :w ON :S [ALL] WHERE { WINDOW :w { ?s ?p ?o } }",
                   evaluated("tests/test_replay.py::test_all_and_landmark_without_t0_start_at_the_profile_s_t0")),
    "stream_range": (SPARQLSTREAM, evaluated(
        "tests/test_replay.py::test_seed002_sparqlstream_named_stream_is_read_by_the_default_graph")),
    # [RSEP] events
    "event_decl": (MATCH_DURATION, evaluated(
        "tests/test_events.py::test_match_joins_a_static_graph_and_filters_on_the_duration")),
    "match_graph_pattern": (MATCH_DURATION, evaluated(
        "tests/test_events.py::test_match_joins_a_static_graph_and_filters_on_the_duration")),
    "event_expr": (MATCH_DURATION, evaluated(
        "tests/test_events.py::test_match_joins_a_static_graph_and_filters_on_the_duration")),
    "event_seq": (MATCH_DURATION, evaluated(
        "tests/test_events.py::test_match_joins_a_static_graph_and_filters_on_the_duration")),
    "event_unary": (MATCH_DURATION, evaluated(
        "tests/test_events.py::test_match_joins_a_static_graph_and_filters_on_the_duration")),
    "event_ref": (MATCH_DURATION, evaluated(
        "tests/test_events.py::test_match_joins_a_static_graph_and_filters_on_the_duration")),
    "selection": (MATCH_RECENT, evaluated("tests/test_events.py::test_match_joins_a_window_block_and_binds_the_start")),
    "consume": (rsep("E1 SEQ[CHRONOLOGICAL] E2", "CONSUME CHRONOLOGICAL"),
                evaluated("tests/test_cep_properties.py::test_example11_chronological_consumption")),
    "event_first": (rsep("FIRST (E1 SEQ E2)"),
                    evaluated("tests/test_cep_properties.py::test_first_last_and_nesting_on_figure1")),
    "event_last": (rsep("LAST E2"), evaluated("tests/test_cep_properties.py::test_first_last_and_nesting_on_figure1")),
    # graph patterns
    "group_graph_pattern": (BASIC, W3C),
    "group_graph_pattern_sub": (BASIC, W3C),
    "triples_block": (BASIC, W3C),
    "graph_pattern_not_triples": (PATTERNS, W3C),
    "optional_graph_pattern": (PATTERNS, W3C),
    "graph_graph_pattern": (PATTERNS, W3C),
    "service_graph_pattern": (SERVICE, evaluated(
        "tests/test_federation.py::test_a_continuous_query_joins_the_endpoints_solutions_at_every_instant")),
    "bind": (PATTERNS, W3C),
    "inline_data": (VALUES, W3C),
    "data_block": (VALUES, W3C),
    "inline_data_one_var": (VALUES, W3C),
    "inline_data_full": (VALUES, W3C),
    "data_row": (VALUES, W3C),
    "data_block_value": (VALUES, W3C),
    "minus_graph_pattern": (PATTERNS, W3C),
    "group_or_union_graph_pattern": (PATTERNS, W3C),
    "union_op": (PATTERNS, W3C),
    "filter": (EXPRESSIONS, W3C),
    "constraint": (EXPRESSIONS, W3C),
    "function_call": (P + "SELECT ?s WHERE { ?s :p ?o } ORDER BY :f(?o)", W3C),
    "arg_list": (EXPRESSIONS, W3C),
    "expression_list": (EXPRESSIONS, W3C),
    "window_graph_pattern": (EXAMPLE6, evaluated(
        "tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12")),
    "stream_graph_pattern": (CQELS_INLINE, evaluated(
        "tests/test_bgp_window.py::test_cqels_inline_window_and_from_stream_with_a_static_graph")),
    # triples, templates, paths
    "triples_template": (TEMPLATE, W3C),
    "construct_template": (TEMPLATE, W3C),
    "construct_quads": (TEMPLATE, W3C),
    "quads_not_triples": (GRAPH_TEMPLATE, evaluated(
        "tests/test_construct_quads.py::test_sparql_construct_with_graph_blocks")),
    "triples_same_subject": (TEMPLATE, W3C),
    "property_list_not_empty": (TEMPLATE, W3C),
    "verb": (TEMPLATE, W3C),
    "object_list": (TEMPLATE, W3C),
    "object": (TEMPLATE, W3C),
    "annotation": ("PREFIX : <http://example.com/ns#> CONSTRUCT { ?s ?p ?o {| :source :x |} } WHERE { ?s ?p ?o }",
                   W3C),
    "triples_node": (TEMPLATE, W3C),
    "blank_node_property_list": (TEMPLATE, W3C),
    "collection": (TEMPLATE, W3C),
    "graph_node": (TEMPLATE, W3C),
    "triples_same_subject_path": (BASIC, W3C),
    "property_list_path_not_empty": (BASIC, W3C),
    "verb_path": (PATHS, W3C),
    "verb_simple": (BASIC, W3C),
    "object_list_path": (BASIC, W3C),
    "object_path": (BASIC, W3C),
    "path": (PATHS, W3C),
    "path_alternative": (PATHS, W3C),
    "path_sequence": (PATHS, W3C),
    "path_elt": (PATHS, W3C),
    "path_elt_or_inverse": (PATHS, W3C),
    "path_inverse": (PATHS, W3C),
    "path_primary": (PATHS, W3C),
    "path_negated_property_set": (PATHS, W3C),
    "path_one_in_property_set": (PATHS, W3C),
    "path_one_inverse": (PATHS, W3C),
    "path_mod": (PATHS, W3C),
    # the W3C RDF-star CG evaluation suite has no annotation in a pattern
    "annotation_path": (
        HEART + "SELECT ?obs ?hr ?c FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT1M STEP PT10S] "
        "WHERE { WINDOW :w { ?obs sosa:hasSimpleResult ?hr {| ex:confidence ?c |} } }",
        evaluated("tests/test_rdf_star_stream.py::test_an_annotation_in_a_pattern_matches_asserted_annotated_triples")),
    "triples_node_path": (PATHS, W3C),
    "blank_node_property_list_path": (PATHS, W3C),
    "collection_path": (PATHS, W3C),
    "graph_node_path": (BASIC, W3C),
    "var_or_term": (BASIC, W3C),
    "var_or_iri": (PATTERNS, W3C),
    "var": (BASIC, W3C),
    "graph_term": (TERMS, W3C),
    # [STAR] quoted triples
    "quoted_tp": (STAR, W3C),
    "qt_subject_or_object": (STAR, W3C),
    "quoted_triple_data": (STAR, W3C),
    "qt_data_term": (STAR, W3C),
    "expr_quoted_tp": (STAR, W3C),
    "expr_var_or_term": (STAR, W3C),
    # expressions
    "expression": (EXPRESSIONS, W3C),
    "conditional_or_expression": (EXPRESSIONS, W3C),
    "or_expr": (EXPRESSIONS, W3C),
    "conditional_and_expression": (EXPRESSIONS, W3C),
    "and_expr": (EXPRESSIONS, W3C),
    "value_logical": (EXPRESSIONS, W3C),
    "relational_expression": (EXPRESSIONS, W3C),
    "compare": (EXPRESSIONS, W3C),
    "in_expr": (EXPRESSIONS, W3C),
    "not_in_expr": (EXPRESSIONS, W3C),
    "numeric_expression": (EXPRESSIONS, W3C),
    "additive_expression": (EXPRESSIONS, W3C),
    "additive_rest": (EXPRESSIONS, W3C),
    "multiplicative_expression": (EXPRESSIONS, W3C),
    "unary_expression": (EXPRESSIONS, W3C),
    "not_expr": (EXPRESSIONS, W3C),
    # the W3C's only unary plus (sparql10 query-unplus-2) is a known failure, for the lexical form of a double
    "uplus": ("SELECT (+?a AS ?r) WHERE {}", evaluated("tests/test_expressions.py::test_differential_pyoxigraph")),
    "uminus": (EXPRESSIONS, W3C),
    "primary_expression": (EXPRESSIONS, W3C),
    "bracketted_expression": (EXPRESSIONS, W3C),
    "builtin_call": (EXPRESSIONS, W3C),
    "not_exists": (PATTERNS, W3C),
    "var_or_term_or_a": (TIMESTAMP, evaluated(
        "tests/test_timestamp_fn.py::test_timestamp_of_each_triple_in_a_from_stream_window")),
    "aggregate": (AGGREGATED, W3C),
    "iri_or_function": (EXPRESSIONS, W3C),
    "compare_op": (EXPRESSIONS, W3C),
    "add_op": (EXPRESSIONS, W3C),
    "mul_op": (EXPRESSIONS, W3C),
    # terms
    "rdf_literal": (TERMS, W3C),
    "numeric_literal": (TERMS, W3C),
    "signed_numeric": (P + "SELECT (?o -1 AS ?x) WHERE { ?s :p ?o }", W3C),
    "boolean_literal": (TERMS, W3C),
    "string": (TERMS, W3C),
    "iri": (TERMS, W3C),
    "blank_node": (TERMS, W3C),
}

# ------------------------------------------------------------------------------------- options carried as keywords

# label -> (sample, status, where the sample's tree shows the option). A form that is a rule of its own (a dataset
# dialect, [NOW], [ALL], FIRST, LAST, IN ...) is a construct above.
Option = tuple[str, Evaluated | Refused, Tok | Node | Both]

_REGISTRATION_OPTIONS: dict[str, Option] = {
    "R2S RSTREAM": (CSRBENCH_Q1, evaluated("tests/test_csrbench.py::test_replay_equals_oracle"), Tok("RSTREAM")),
    "R2S ISTREAM": (ISTREAM, evaluated("tests/test_replay.py::test_istream_and_dstream"), Tok("ISTREAM")),
    "R2S DSTREAM": (DSTREAM, evaluated("tests/test_replay.py::test_istream_and_dstream"), Tok("DSTREAM")),
    "R2S written in REGISTER": (CSRBENCH_Q1, evaluated("tests/test_csrbench.py::test_replay_equals_oracle"),
                                Node("register", has=("r2s",))),
    "CONSTRUCT ISTREAM": (ISTREAM_CONSTRUCT, evaluated(
        "tests/test_construct_quads.py::test_istream_construct_compares_solutions_not_triples"),
        Node("construct_query", has=("r2s>ISTREAM",))),
    "CONSTRUCT DSTREAM": (
        P + "CONSTRUCT DSTREAM { ?person :was ?room } FROM NAMED WINDOW :win ON :social [RANGE PT1M SLIDE PT1M] "
        "WHERE { WINDOW :win { ?person :isIn ?room } }",
        evaluated("tests/test_replay.py::test_construct_dstream_builds_its_template_from_the_solutions_that_left"),
        Node("construct_query", has=("r2s>DSTREAM",))),
    "CONSTRUCT RSTREAM": (
        P + "CONSTRUCT RSTREAM { ?person :was ?room } FROM NAMED WINDOW :win ON :social [RANGE PT1M SLIDE PT1M] "
        "WHERE { WINDOW :win { ?person :isIn ?room } }",
        evaluated("tests/test_replay.py::test_construct_rstream_overrides_the_cqels_profile_s_istream"),
        Node("construct_query", has=("r2s>RSTREAM",))),
    "REGISTER STREAM": (PRODUCER, evaluated("tests/test_replay.py::test_query_network_register_stream"),
                        Tok("STREAM")),
    "REGISTER QUERY": (CONSUMER, evaluated("tests/test_replay.py::test_query_network_register_stream"), Tok("QUERY")),
    # answered like REGISTER QUERY (its records are solutions; tests/test_replay.py::
    # test_a_stream_registered_by_a_select_is_not_read_as_rdf: a query reading that stream is told so)
    "REGISTER STREAM on a SELECT query": (
        SEED004, evaluated("tests/test_rdf_star_stream.py::test_seed004_query_as_written_under_rspql_star"),
        Both(Node("register_kind", has=("STREAM",)), Node("select_query"))),
    # an ASK answers each instant alone: ISTREAM / DSTREAM would be ignored (tests/test_refusals.py: istream-ask)
    "R2S on an ASK query": (
        P + "REGISTER ISTREAM QUERY :q AS ASK FROM NAMED WINDOW :w ON :S [RANGE 2 SLIDE 2] "
        "WHERE { WINDOW :w { ?x :q ?y } }", refused("ISTREAM on an ASK query"),
        Both(Node("register", has=("r2s",)), Node("ask_query"))),
    # the cqels profile replays the CSRBench files without their R2S: REGISTER <...q1> AS
    "REGISTER without a kind": (CSRBENCH_Q1, evaluated("tests/test_csrbench.py::test_replay_equals_oracle"),
                                Node("register", lacks=("register_kind",))),
    "REGISTER with a bare name (C-SPARQL)": (CSPARQL_SEQ, evaluated(
        "tests/test_timestamp_fn.py::test_seed002_seq_in_csparql_with_timestamps"),
        Node("register_name", has=("NAME",))),
}

_WINDOW_OPTIONS: dict[str, Option] = {
    "RANGE d SLIDE d": (EXAMPLE6, evaluated("tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12"),
                        Tok("_SLIDE_KW=SLIDE")),
    "RANGE d STEP d": (CSRBENCH_Q1, evaluated("tests/test_csrbench.py::test_replay_equals_oracle"),
                       Tok("_SLIDE_KW=STEP")),
    "RANGE d without SLIDE (the profile's)": (MINUS_STATIC, evaluated(
        "tests/test_replay.py::test_seed002_minus_with_static_graph"),
        Node("time_window", lacks=("_SLIDE_KW", "TUMBLING"))),
    "TUMBLING": (OPTIONAL_TUMBLING, evaluated("tests/test_replay.py::test_seed002_optional"), Tok("TUMBLING")),
    "STARTING AT": (CSRBENCH_Q1_STARTING, evaluated("tests/test_csrbench.py::test_reproduced_with_the_engines_window"),
                    Tok("_STARTING")),
    "count TRIPLES": (TRIPLE_COUNT, evaluated("tests/test_replay.py::test_seed002_triple_count_window"),
                      Tok("COUNT_UNIT=TRIPLES")),
    "count ELEMENTS": (windowed("[RANGE ELEMENTS 2]"),
                       evaluated("tests/test_windows.py::test_count_elements_window_content_change"),
                       Tok("COUNT_UNIT=ELEMENTS")),
    "count BGP": (BGP_WINDOW, evaluated("tests/test_bgp_window.py::test_seed002_last_three_observations_of_axel"),
                  Tok("COUNT_UNIT=BGP")),
    "count written [RANGE n UNIT]": (
        TRIPLE_COUNT.replace("[RANGE TRIPLES 3]", "[RANGE 3 TRIPLES]"),
        evaluated("tests/test_replay.py::test_seed002_triple_count_window", via=TRIPLE_COUNT),
        Node("count_window", shape=("_RANGE", "integer_value", "COUNT_UNIT"))),
    "count written [UNIT n]": (
        TRIPLE_COUNT.replace("[RANGE TRIPLES 3]", "[TRIPLES 3]"),
        evaluated("tests/test_replay.py::test_seed002_triple_count_window", via=TRIPLE_COUNT),
        Node("count_window", shape=("COUNT_UNIT", "integer_value"))),
    "LANDMARK t0": (TWO_WINDOWS, evaluated("tests/test_replay.py::test_two_windows_on_one_stream_join"),
                    Tok("_LANDMARK")),
    "[LANDMARK] without t0": (
        P + "CONSTRUCT { ?s ?p ?o } FROM NAMED WINDOW :w ON :S [LANDMARK] WHERE { WINDOW :w { ?s ?p ?o } }",
        evaluated("tests/test_replay.py::test_all_and_landmark_without_t0_start_at_the_profile_s_t0"),
        Node("landmark_window", lacks=("instant",))),
    "LND t0": (EXAMPLE9, evaluated("tests/test_cep_properties.py::test_example9_match_is_a_set_of_mappings"),
               Tok("_LND")),
    "FROM NOW-d TO NOW (RSP-QL draft)": (
        windowed("[FROM NOW-5 TO NOW-1 STEP 1]"), evaluated("tests/test_windows.py::test_offset_window"),
        Node("relative_window", has=("_FROM",))),
    "NOW-d TO NOW (SPARQLstream)": (
        WHO_IS_WHERE.replace("[RANGE PT1M SLIDE PT1M]", "[NOW-1 MINUTES TO NOW SLIDE 1 MINUTES]"),
        evaluated("tests/test_replay.py::test_seed002_who_is_where", via=WHO_IS_WHERE),
        Node("relative_window", lacks=("_FROM",))),
    "d SLIDE d (SPARQLstream)": (SPARQLSTREAM, evaluated(
        "tests/test_replay.py::test_seed002_sparqlstream_named_stream_is_read_by_the_default_graph"),
        Node("stream_range", has=("_SLIDE_KW",))),
    "d without SLIDE (SPARQLstream)": (
        MINUS_STATIC.replace("[RANGE PT1M]", "[1 MINUTES]"),
        evaluated("tests/test_replay.py::test_seed002_minus_with_static_graph", via=MINUS_STATIC),
        Node("stream_range", lacks=("_SLIDE_KW",))),
    "duration ISO 8601": (WHO_IS_WHERE, evaluated("tests/test_replay.py::test_seed002_who_is_where"),
                          Tok("ISO_DURATION")),
    "duration shorthand (C-SPARQL)": (TIMESTAMP, evaluated(
        "tests/test_timestamp_fn.py::test_timestamp_of_each_triple_in_a_from_stream_window"), Tok("SHORT_DURATION")),
    "duration in stream units": (EXAMPLE6, evaluated(
        "tests/test_replay.py::test_seed000_example6_window_graph_pattern_at_12"),
        Node("duration", shape=("number_value>INTEGER",))),
    "duration with a time unit": (SPARQLSTREAM, evaluated(
        "tests/test_replay.py::test_seed002_sparqlstream_named_stream_is_read_by_the_default_graph"),
        Tok("TIME_UNIT")),
    "instant as a number": (TWO_WINDOWS, evaluated("tests/test_replay.py::test_two_windows_on_one_stream_join"),
                            Node("instant", shape=("INTEGER",))),
    "instant as a date-time": (CSRBENCH_Q1_STARTING, evaluated(
        "tests/test_csrbench.py::test_reproduced_with_the_engines_window"), Tok("DATETIME")),
    "instant as a typed literal": (
        CSRBENCH_Q1_STARTING.replace("1970-01-01T00:00:01Z",
                                     '"1970-01-01T00:00:01Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>'),
        evaluated("tests/test_csrbench.py::test_reproduced_with_the_engines_window", via=CSRBENCH_Q1_STARTING),
        Node("instant", has=("string",))),
    "WINDOW ?w": (WINDOW_VARIABLE, evaluated("tests/test_replay.py::test_window_variable_ranges_over_named_windows"),
                  Node("window_graph_pattern", has=("var_or_iri>var",))),
    "FROM GRAPH <g> (RSP-QL draft)": (
        FROM_GRAPH.replace("FROM :g", "FROM GRAPH :g"),
        evaluated("tests/test_sparql_engine.py::test_named_graphs_and_from", via=FROM_GRAPH),
        Node("default_graph", has=("_GRAPH",))),
    "FROM NAMED GRAPH <g> (RSP-QL draft)": (
        MINUS_STATIC.replace("FROM NAMED :degrees", "FROM NAMED GRAPH :degrees"),
        evaluated("tests/test_replay.py::test_seed002_minus_with_static_graph", via=MINUS_STATIC),
        Node("named_graph", has=("_GRAPH",))),
}

_EVENT_OPTIONS: dict[str, Option] = {
    **{f"SEQ[{policy}]": (rsep(f"E1 SEQ[{policy}] E2"),
                          evaluated("tests/test_cep_properties.py::test_example10_selection_policies"),
                          Node("selection", has=(f"POLICY_NAME={policy}",)))
       for policy in ("NAIVE", "CHRONOLOGICAL", "RECENT")},
    "SEQ[UNRESTRICTED]": (rsep("E1 SEQ[UNRESTRICTED] E2"), evaluated(
        "tests/test_cep_properties.py::test_unrestricted_selection_overrides_the_csparql_profile_s_naive_one"),
        Node("selection", has=("POLICY_NAME=UNRESTRICTED",))),
    "SEQ without a selection (the profile's)": (
        PROFILE_DEFAULTS, evaluated("tests/test_events.py::test_the_profiles_default_selection_and_consumption"),
        Node("event_seq", has=("SEQ",), lacks=("selection",))),
    "MATCH CONSUME CHRONOLOGICAL": (
        rsep("E1 SEQ[CHRONOLOGICAL] E2", "CONSUME CHRONOLOGICAL"),
        evaluated("tests/test_cep_properties.py::test_example11_chronological_consumption"),
        Node("consume", has=("POLICY_NAME=CHRONOLOGICAL",))),
    "MATCH CONSUME RECENT": (rsep("E1 SEQ[RECENT] E2", "CONSUME RECENT"),
                             evaluated("tests/test_cep_properties.py::test_section2_recent_consumption"),
                             Node("consume", has=("POLICY_NAME=RECENT",))),
    "MATCH CONSUME NONE": (rsep("E1 SEQ E2", "CONSUME NONE").replace("SELECT", "SELECT RSTREAM", 1), evaluated(
        "tests/test_cep_properties.py::test_match_consume_none_overrides_the_profile_s_consumption"),
        Node("consume", has=("POLICY_NAME=NONE",))),
    "MATCH without CONSUME (the profile's)": (
        PROFILE_DEFAULTS, evaluated("tests/test_events.py::test_the_profiles_default_selection_and_consumption"),
        Node("match_graph_pattern", lacks=("consume",))),
    "( event expression )": (rsep("FIRST (E1 SEQ E2)"),
                             evaluated("tests/test_cep_properties.py::test_first_last_and_nesting_on_figure1"),
                             Node("event_unary", has=("event_expr",))),
    "SEQ (EP-SPARQL)": (SEQ_Q2, evaluated("tests/test_epsparql.py::test_seed003_queries"),
                        Node("union_op", has=("SEQ",))),
    "EQUALS (EP-SPARQL)": (EQUALS, evaluated("tests/test_epsparql.py::test_equals_optionalseq_and_intervals"),
                           Node("union_op", has=("EQUALS",))),
    "OPTIONALSEQ (EP-SPARQL)": (OPTIONALSEQ, evaluated("tests/test_epsparql.py::test_equals_optionalseq_and_intervals"),
                                Node("union_op", has=("OPTIONALSEQ",))),
    "EQUALSOPTIONAL (EP-SPARQL)": (EQUALSOPTIONAL, evaluated(
        "tests/test_epsparql.py::test_equals_optionalseq_and_intervals"), Node("union_op", has=("EQUALSOPTIONAL",))),
    "UNION": (PATTERNS, W3C, Node("union_op", has=("UNION",))),
}

# the entailment regimes of SPARQL 1.1 Entailment Regimes: each is refused
_REGIME_OPTIONS: dict[str, Option] = {
    f"UNDER ENTAILMENT REGIME {regime}": (
        ENTAILMENT.replace("/RDFS>", f"/{regime}>"),
        refused(f"UNDER ENTAILMENT REGIME <http://www.w3.org/ns/entailment/{regime}>: rspark applies no entailment"),
        Tok(f"IRIREF=<http://www.w3.org/ns/entailment/{regime}>"))
    for regime in ("RDF", "RDFS", "D", "OWL-Direct", "OWL-RDF-Based", "RIF")
}


def _keywords(terminal: str) -> list[str]:
    """The keywords a terminal of the grammar written /(?:A|B|...)/ matches (BUILTIN1, AGG1, COUNT_UNIT ...)."""
    found = re.search(rf"(?m)^{terminal}\.\d+: /\(\?:([^)]*)\)", GRAMMAR)
    assert found, terminal
    return found.group(1).split("|")


_SPARQL_OPTIONS: dict[str, Option] = {
    "SELECT DISTINCT": (P + "SELECT DISTINCT ?s WHERE { ?s :p ?o }", W3C, Tok("DISTINCT")),
    "SELECT REDUCED": (P + "SELECT REDUCED ?s WHERE { ?s :p ?o }", W3C, Tok("REDUCED")),
    "SELECT *": (BASIC, W3C, Node("select_clause", has=("STAR",))),
    "ORDER BY ASC": (P + "SELECT ?s WHERE { ?s :p ?o } ORDER BY ASC(?o)", W3C, Tok("ASC")),
    "ORDER BY DESC": (AGGREGATED, W3C, Tok("DESC")),
    "path ?": (PATHS, W3C, Node("path_mod", has=("QMARK",))),
    "path *": (PATHS, W3C, Node("path_mod", has=("STAR",))),
    "path +": (PATHS, W3C, Node("path_mod", has=("PLUS",))),
    "VALUES UNDEF": (VALUES, W3C, Tok("UNDEF")),
    "CONSTRUCT WHERE (short form)": (P + "CONSTRUCT WHERE { ?s :p ?o }", W3C,
                                     Node("construct_query", lacks=("construct_template",))),
    # DESCRIBE over windows: describe_query above; the W3C suites have no DESCRIBE test
    "DESCRIBE over static data": (P + "DESCRIBE :alice",
                                  evaluated("tests/test_sparql_engine.py::test_describe_over_static_data"),
                                  Node("describe_query", lacks=("dataset_clause",))),
    "DESCRIBE * over static data": (
        P + "DESCRIBE * WHERE { ?x :knows ?y FILTER(?y = :carol) }",
        evaluated("tests/test_sparql_engine.py::test_describe_over_static_data"),
        Node("describe_query", has=("STAR",), lacks=("dataset_clause",))),
    "SERVICE SILENT": (SERVICE.replace("SERVICE", "SERVICE SILENT"),
                       evaluated("tests/test_federation.py::test_a_failing_endpoint_fails_the_query_unless_silent"),
                       Tok("SILENT")),
    "SERVICE ?endpoint": ("SELECT * WHERE { ?e ?p ?x SERVICE ?e { ?s ?p ?o } }",
                          refused("SERVICE ?e: an endpoint given by a variable"), Node("service_graph_pattern")),
    "COUNT(*)": (P + "SELECT (COUNT(*) AS ?n) WHERE { ?s :p ?o }", W3C, Node("aggregate", has=("COUNT", "STAR"))),
    "COUNT(DISTINCT ...)": (AGGREGATED, W3C, Node("aggregate", has=("COUNT", "DISTINCT"))),
    # the W3C's agg-sum-distinct and agg-avg-distinct are known failures (lexical forms of their numbers)
    "SUM(DISTINCT ...)": (P + "SELECT (SUM(DISTINCT ?o) AS ?n) WHERE { ?s :p ?o }",
                          evaluated("tests/test_expressions.py::test_aggregates"),
                          Node("aggregate", has=("AGG1=SUM", "DISTINCT"))),
    "AVG(DISTINCT ...)": (P + "SELECT (AVG(DISTINCT ?o) AS ?n) WHERE { ?s :p ?o }",
                          evaluated("tests/test_expressions.py::test_aggregates"),
                          Node("aggregate", has=("AGG1=AVG", "DISTINCT"))),
    "COUNT": (AGGREGATED, W3C, Tok("COUNT")),
    **{name: (P + f"SELECT ({name}(?o) AS ?n) WHERE {{ ?s :p ?o }}", W3C, Tok(f"AGG1={name}"))
       for name in _keywords("AGG1")},
    "GROUP_CONCAT": (P + "SELECT (GROUP_CONCAT(?o) AS ?n) WHERE { ?s :p ?o }", W3C, Tok("GROUP_CONCAT")),
    "GROUP_CONCAT SEPARATOR": (P + "SELECT (GROUP_CONCAT(?o; SEPARATOR=',') AS ?n) WHERE { ?s :p ?o }", W3C,
                               Tok("SEPARATOR")),
}


# a call of each built-in function of builtin_call, with its arguments
_CALLS = {
    "BUILTIN0": "{}()", "BUILTIN1": "{}(?o)", "BUILTIN2": "{}(?o, 'a')", "BUILTIN23": "{}(?o, 'a')",
    "BUILTIN3": "{}(?o, 'a', 'b')", "BUILTIN34": "{}(?o, 'a', 'b')", "VARARG": "{}(?o, 'a')",
}
_INTERVAL_FUNCTIONS = {
    "getSTARTTIME": (EQUALS, evaluated("tests/test_epsparql.py::test_equals_optionalseq_and_intervals")),
    "getENDTIME": (EQUALS, evaluated("tests/test_epsparql.py::test_equals_optionalseq_and_intervals")),
    "getDURATION": (MATCH_DURATION, evaluated(
        "tests/test_events.py::test_match_joins_a_static_graph_and_filters_on_the_duration")),
}
_BUILTIN_OPTIONS: dict[str, Option] = {}
for _terminal, _call in _CALLS.items():
    for _name in _keywords(_terminal):
        if _name in _INTERVAL_FUNCTIONS:
            _sample, _status = _INTERVAL_FUNCTIONS[_name]
        elif _name == "TRIPLE":  # [STAR]: the RDF-star CG suite has no evaluation test of TRIPLE()
            _sample, _status = select("TRIPLE(:a, :b, ?o)", "?s :p ?o"), evaluated(
                "tests/test_expressions.py::test_explicit_cases")
        else:
            _sample, _status = select(_call.format(_name), "?s :p ?o"), W3C
        _BUILTIN_OPTIONS[f"{_name}()"] = (_sample, _status, Tok(f"{_terminal}={_name}"))
_BUILTIN_OPTIONS.update({
    "BOUND()": (select("BOUND(?o)", "?s :p ?o"), W3C, Tok("BOUND")),
    "BNODE()": (select("BNODE()"), W3C, Node("builtin_call", has=("BNODE_KW", "NIL"))),
    "BNODE(expression)": (select("BNODE(?o)", "?s :p ?o"), W3C, Node("builtin_call", has=("BNODE_KW", "LPAR"))),
    "NOW()": (select("NOW()"), W3C, Node("builtin_call", has=("NOW",))),
    "EXISTS": (P + "SELECT * WHERE { ?s :p ?o FILTER EXISTS { ?o :q ?x } }", W3C, Tok("EXISTS")),
    "NOT EXISTS": (PATTERNS, W3C, Node("not_exists", has=("NOT", "EXISTS"))),
    "timestamp() (C-SPARQL)": (TIMESTAMP, evaluated(
        "tests/test_timestamp_fn.py::test_timestamp_of_each_triple_in_a_from_stream_window"), Tok("TIMESTAMP_FN")),
})

OPTIONS: dict[str, Option] = {**_REGISTRATION_OPTIONS, **_WINDOW_OPTIONS, **_EVENT_OPTIONS, **_REGIME_OPTIONS,
                              **_SPARQL_OPTIONS, **_BUILTIN_OPTIONS}

# ------------------------------------------------------------------------- accepted, but neither evaluated nor refused

# label (a construct, or an option with where its tree shows it) -> (sample, what was observed, marker or None):
# what rspark gives for it, observed in a scratch run, where no test asserts it. Empty (issue 42): an entry is a
# decision to accept a construct unevaluated for now, written in KNOWN_UNTESTED too.
UNTESTED: dict[str, tuple[str, str, Tok | Node | Both | None]] = {}
KNOWN_UNTESTED: frozenset[str] = frozenset()

# ----------------------------------------------------------------------------------------------------------- tests


def _statuses():
    for name, (sample, status) in COVERAGE.items():
        yield name, sample, status, None
    for label, (sample, status, marker) in OPTIONS.items():
        yield label, sample, status, marker


@cache
def _test_functions(path: str) -> frozenset[str]:
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"), filename=path)
    return frozenset(n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def _check_status(sample: str, status: Evaluated | Refused) -> None:
    plan = compile_query(sample, source="sample.rq")
    if isinstance(status, Evaluated):
        path, _, name = status.test.partition("::")
        assert name.startswith("test_") and name in _test_functions(path), f"no test {status.test}"
        ensure_evaluable(plan, continuous=plan.is_continuous, source="sample.rq")  # not refused
        if status.via is not None:
            other = compile_query(status.via, source="via.rq")
            assert to_sse(plan) == to_sse(other), "the sample's algebra is not that of the query the test runs"
            ensure_evaluable(other, continuous=other.is_continuous, source="via.rq")
        return
    with pytest.raises(QueryError) as err:
        ensure_evaluable(plan, continuous=plan.is_continuous, source="sample.rq")
    assert err.value.line and err.value.column, "a refusal names the line and column of the construct"
    assert str(err.value).startswith(f"sample.rq:{err.value.line}:{err.value.column}: not supported: ")
    assert status.fragment in str(err.value), f"refused as {err.value}"


def test_every_construct_is_classified():
    """A rule or alias added to the grammar fails here until COVERAGE (or UNTESTED) says what becomes of it."""
    constructs = all_constructs()
    untested = {k for k, (_, _, marker) in UNTESTED.items() if marker is None}
    assert not set(COVERAGE) & set(UNTESTED)
    assert not set(OPTIONS) & set(UNTESTED)
    assert not set(OPTIONS) & constructs, "an option's label is not a construct's name"
    missing = sorted(constructs - set(COVERAGE) - untested)
    unknown = sorted((set(COVERAGE) | untested) - constructs)
    assert not missing, f"constructs of the grammar neither evaluated nor refused: {missing}"
    assert not unknown, f"not constructs of the grammar: {unknown}"
    assert len(constructs) > 150  # the enumeration reads the grammar (about 150 rules and a dozen aliases)


@pytest.mark.parametrize("name", sorted(COVERAGE))
def test_construct_sample_uses_it(name):
    used = uses(name, COVERAGE[name][0])
    assert used, f"the sample of {name} does not use it"


@pytest.mark.parametrize("name", sorted(COVERAGE))
def test_construct_is_evaluated_or_refused(name):
    _check_status(*COVERAGE[name])


@pytest.mark.parametrize("label", sorted(OPTIONS))
def test_option_sample_carries_it(label):
    sample, _, marker = OPTIONS[label]
    found = marker.found(aliased().parse(sample))
    assert found, f"the sample of {label!r} has no {marker}"


@pytest.mark.parametrize("label", sorted(OPTIONS))
def test_option_is_evaluated_or_refused(label):
    sample, status, _ = OPTIONS[label]
    _check_status(sample, status)


def _keys(marker) -> set[str]:
    if isinstance(marker, Both):
        return _keys(marker.first) | _keys(marker.second)
    if isinstance(marker, Node):
        return {marker.rule} | {f"{marker.rule}:{k}" for k in marker.has}
    return {marker.kind}


def test_every_policy_unit_and_operator_has_an_option():
    """A keyword added to a window unit, an R2S or register kind, an EP-SPARQL operator or a policy name fails here
    until OPTIONS or UNTESTED says what becomes of it (the built-ins and aggregates are enumerated from the grammar)."""
    from rspark.syntax.parser import CONSUMPTION_POLICIES, SELECTION_POLICIES

    keys = set().union(*(_keys(entry[2]) for table in (OPTIONS, UNTESTED) for entry in table.values() if entry[2]))
    required = {f"COUNT_UNIT={unit}" for unit in _keywords("COUNT_UNIT")}
    for rule in ("r2s", "register_kind"):
        required |= {r.expansion[0].name for r in aliased().rules if str(r.origin.name) == rule}
    required |= {f"union_op:{r.expansion[0].name}" for r in aliased().rules if str(r.origin.name) == "union_op"}
    required |= {f"selection:POLICY_NAME={p}" for p in SELECTION_POLICIES}
    required |= {f"consume:POLICY_NAME={p}" for p in CONSUMPTION_POLICIES}
    assert len(required) == 3 + 3 + 2 + 5 + 4 + 3
    assert not required - keys, f"keywords without an option: {sorted(required - keys)}"


def test_untested_is_the_known_set():
    """What is accepted without an evaluation test or a refusal is a decision, not an accident: write the test or
    the refusal, and take it off both lists."""
    assert set(UNTESTED) == KNOWN_UNTESTED


def test_untested_is_accepted_silently():
    """Each entry parses, uses its construct or option, compiles and is not refused (once it is, it moves to
    COVERAGE or OPTIONS as refused). One test, not one per entry: an empty UNTESTED is not a skipped test."""
    for label, (sample, _, marker) in UNTESTED.items():
        if marker is None:
            assert label in all_constructs() and uses(label, sample), label
        else:
            assert marker.found(aliased().parse(sample)), label
        plan = compile_query(sample)
        ensure_evaluable(plan, continuous=plan.is_continuous)


def test_w3c_claims_are_in_passing_w3c_queries(testdata):
    """Each construct and option said to be evaluated by the W3C suites is used by an evaluation query of theirs
    that is not a known failure (its answers are compared exactly by tests/test_w3c_eval.py)."""
    from tests.support import w3c

    known = json.loads((REPO / "tests" / "w3c_known_failures.json").read_text(encoding="utf-8"))
    claims = {name: ("construct", name) for name, (_, status) in COVERAGE.items() if status == W3C}
    claims.update({label: ("option", marker) for label, (_, status, marker) in OPTIONS.items() if status == W3C})
    rules, alias_trees = set(), []
    for suite in w3c.SUITES:
        for test in w3c.evaluation_tests(suite):
            if w3c.case_key(suite, test) in known:
                continue
            text = (w3c.W3C / w3c.SUITES[suite] / test["query"]).read_text(encoding="utf-8")
            tree = aliased().parse(text)
            alias_trees.append(tree)
            rules.update(t.data for t in tree.iter_subtrees())
            rules.update(t.data for t in unaliased().parse(text).iter_subtrees())
    assert len(alias_trees) > 500
    unsupported = []
    for label, (kind, what) in claims.items():
        if kind == "construct":
            if what not in rules:
                unsupported.append(label)
        elif not any(what.found(tree) for tree in alias_trees):
            unsupported.append(label)
    assert not unsupported, f"said to be evaluated by the W3C suites, but no passing W3C query uses: {unsupported}"
