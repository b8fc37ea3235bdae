"""Event patterns inside whole queries (docs/events.md): MATCH joined with static graphs and WINDOW blocks, events
over two streams, the profiles' default selection and consumption, the interval functions in BIND and FILTER, and
each refusal with its reason. The papers' examples and random patterns against an oracle are in
tests/test_cep_properties.py (RSEP-QL) and tests/test_epsparql.py (EP-SPARQL)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rspark.errors import NotSupportedError, RsparkError
from rspark.syntax.translate import QueryError

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"
P = "PREFIX : <http://example.org/>\n"
WINDOWS = ("FROM NAMED WINDOW :w1 ON :S [LANDMARK 1]\n"
           "FROM NAMED WINDOW :w2 ON :S [RANGE 5 SLIDE 1]\n"
           "EVENT ON :w1 { ?x :p ?y } AS E1\n"
           "EVENT ON :w2 { ?y :q ?z } AS E2\n")


@pytest.fixture(scope="module")
def engine(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    tmp = tmp_path_factory.mktemp("events")
    names = tmp / "names.ttl"
    names.write_text('@prefix : <http://example.org/> .\n:a1 :name "one" . :a2 :name "two" .\n')
    other = tmp / "other.trig"
    other.write_text("@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
                     ":H1 { :c1 :r :d1 . } :H1 prov:generatedAtTime 7 .\n"
                     ":H2 { :c2 :r :d2 . } :H2 prov:generatedAtTime 9 .\n")
    with Engine(spark=spark) as eng:
        eng.load(str(names))
        eng.add_stream(EX + "S", DATA / "fig1.trig")
        eng.add_stream(EX + "T", other)
        yield eng


def short(term) -> str:
    text = term.n3()
    if text.startswith("<" + EX):
        return text[len(EX) + 1:-1]
    if "^^<http://www.w3.org/2001/XMLSchema#integer>" in text:
        return text.split('"')[1]
    return text


def answers(records, *names) -> list:
    return [(rec.time, sorted(tuple(short(r[n]) if n in r else "-" for n in names) for r in rec.rows))
            for rec in records]


def test_match_joins_a_static_graph_and_filters_on_the_duration(engine):
    q = P + ("SELECT ?x ?name ?z (getDURATION() AS ?d)\n" + WINDOWS +
             "WHERE { MATCH { E1 SEQ E2 } ?x :name ?name FILTER(getDURATION() > 2) }")
    assert answers(engine.replay(q, times=[8, 10]), "x", "name", "z", "d") == [
        (8, [("a1", '"one"', "c1", "4"), ("a2", '"two"', "c2", "4")]),
        (10, [("a1", '"one"', "c1", "4"), ("a1", '"one"', "c1", "8"), ("a2", '"two"', "c2", "4")]),
    ]


def test_match_joins_a_window_block_and_binds_the_start(engine):
    # at 8 the window :w2 = (3, 8] holds G2, G3, G4: the only :p triple is :a2 :p :b2
    q = P + ("SELECT ?x ?z ?other ?s\n" + WINDOWS +
             "WHERE { MATCH { E1 SEQ[RECENT] E2 } WINDOW :w2 { ?other :p ?any } BIND(getSTARTTIME() AS ?s) }")
    assert answers(engine.replay(q, times=[8]), "x", "z", "other", "s") == [
        (8, [("a1", "c1", "a2", "2"), ("a2", "c2", "a2", "4")])]


def test_events_over_two_streams(engine):
    # E1 on :S's p-triples, E2 on :T's r-triples: :b? :q :c? of :S joins :c? :r :d? of :T through ?z
    q = P + ("SELECT ?y ?z ?d (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)\n"
             "FROM NAMED WINDOW :ws ON :S [LANDMARK 0]\nFROM NAMED WINDOW :wt ON :T [LANDMARK 0]\n"
             "EVENT ON :ws { ?y :q ?z } AS E1\nEVENT ON :wt { ?z :r ?d } AS E2\n"
             "WHERE { MATCH { E1 SEQ E2 } }")
    assert answers(engine.replay(q, times=[9]), "y", "z", "d", "t1", "t2") == [
        (9, [("b1", "c1", "d1", "6", "7"), ("b2", "c2", "d2", "6", "9"), ("b2", "c2", "d2", "8", "9")])]


@pytest.mark.parametrize("profile, expected", [
    # a plain SEQ takes the profile's selection: naive under csparql (and its [o, c) windows: (3, 8] becomes [3, 8));
    # at 10 the landmark window (t0 <= ti <= t under every profile) holds G5, whose (:a3 :p :b3) is the LAST E1 and
    # matches no E2, so the naive SEQ gives nothing (the empty record is reported: emptyrelation = true)
    ("csparql", [(8, [("a2", "c2", "4", "6")]), (10, [])]),
    # the EP-SPARQL profiles consume what matched at 8 and report under ISTREAM without empty records: nothing at 10
    ("epsparql-chronological", [(8, [("a1", "c1", "2", "6"), ("a2", "c2", "4", "6")])]),
    ("epsparql-recent", [(8, [("a1", "c1", "2", "6"), ("a2", "c2", "4", "8")])]),
])
def test_the_profiles_default_selection_and_consumption(engine, profile, expected):
    q = P + ("SELECT ?x ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)\n" + WINDOWS +
             "WHERE { MATCH { E1 SEQ E2 } }")
    assert answers(engine.replay(q, times=[8, 10], profile=profile), "x", "z", "t1", "t2") == expected


@pytest.mark.parametrize("where, error, message", [
    # found when the plan is built (the solutions carry no interval)
    ("{ ?x :p ?y FILTER(getDURATION() < 3) }", NotSupportedError,
     "getDURATION() read the interval of a matched event"),
    # found in the text, before Spark starts, where the call stands (rspark.syntax.refusals)
    ("{ MATCH { E1 SEQ E2 } MATCH { E2 } BIND(getENDTIME() AS ?e) }", QueryError,
     "query:7:42: not supported: getENDTIME() in a query with several MATCH patterns"),
])
def test_interval_functions_out_of_place(engine, where, error, message):
    q = P + "SELECT *\n" + WINDOWS + "WHERE " + where
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        engine.replay(q, times=[8])


def test_an_event_over_a_triple_count_window_is_refused(engine):
    q = P + ("SELECT * FROM NAMED WINDOW :w ON :S [RANGE TRIPLES 3]\nEVENT ON :w { ?x :p ?y } AS E1\n"
             "WHERE { MATCH { E1 } }")
    with pytest.raises(QueryError, match=r"^query:3:29: not supported: EVENT E1 ON <http://example.org/w>, a "
                                         r"\[RANGE TRIPLES n\] window: such a window holds parts of elements"):
        engine.replay(q, times=[8])


def test_minus_inside_an_ep_sparql_pattern_is_refused(engine):
    q = P + ("SELECT * FROM STREAM :S [LANDMARK 0]\n"
             "WHERE { { ?x :p ?y } SEQ { ?y :q ?z } MINUS { ?x :p :b3 } }")
    with pytest.raises(QueryError, match="^query:3:39: not supported: MINUS inside an EP-SPARQL pattern"):
        engine.replay(q, times=[8])


def test_a_rule_that_builds_new_terms_from_its_own_output_reaches_no_fixpoint(engine):
    # every derived (?y :q ?w) EQUALS itself and derives (?y :q ?wx), for ever
    rule = P + ("CONSTRUCT { ?y :q ?w } FROM STREAM :S [LANDMARK 0]\n"
                "WHERE { { ?y :q ?z } EQUALS { ?y :q ?z } BIND(IRI(CONCAT(STR(?z), 'x')) AS ?w) }")
    with pytest.raises(RsparkError, match="do not reach a fixpoint in 16 rounds"):
        engine.replay([rule], times=[8])


def test_a_rule_with_blank_nodes_in_its_template_reaches_its_fixpoint(engine):
    rule = P + ("CONSTRUCT { _:n :from ?x ; :to ?z } FROM STREAM :S [LANDMARK 0]\n"
                "WHERE { { ?x :p ?y } SEQ { ?y :q ?z } }")
    select = P + ("SELECT ?x ?z FROM STREAM :S [LANDMARK 0] WHERE { { ?n :from ?x } EQUALS { ?n :to ?z } }")
    records = engine.replay([rule, select], times=[10], names=["rule", "select"])
    assert answers([r for r in records if r.query == "select"], "x", "z") == [
        (10, [("a1", "c1"), ("a1", "c1"), ("a2", "c2"), ("a2", "c2")])]


def test_a_rule_feeds_the_select_that_reads_its_stream(engine):
    # the rule derives (:a1 :seen :c1) over [2, 6], (:a2 :seen :c2) over [4, 6] and [4, 8], (:a1 :seen :c1) over
    # [2, 10]; each enters the stream at its end
    rule = P + ("CONSTRUCT { ?x :seen ?z } FROM STREAM :S [LANDMARK 0]\n"
                "WHERE { { ?x :p ?y } SEQ { ?y :q ?z } }")
    select = P + ("SELECT ?x ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2) FROM STREAM :S [LANDMARK 0]\n"
                  "WHERE { { ?x :seen ?z } SEQ { ?z :never ?w } UNION { ?x :seen ?z } }")
    records = engine.replay([rule, select], times=[6, 8, 10], names=["rule", "select"])
    selects = [r for r in records if r.query == "select"]
    assert answers(selects, "x", "z", "t1", "t2") == [
        (6, [("a1", "c1", "2", "6"), ("a2", "c2", "4", "6")]),
        (8, [("a1", "c1", "2", "6"), ("a2", "c2", "4", "6"), ("a2", "c2", "4", "8")]),
        (10, [("a1", "c1", "2", "10"), ("a1", "c1", "2", "6"), ("a2", "c2", "4", "6"), ("a2", "c2", "4", "8")]),
    ]
