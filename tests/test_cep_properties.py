"""RSEP-QL event patterns (EVENT / FIRST / LAST / SEQ with its selections, MATCH, MATCH CONSUME): the RSEP-QL paper's
examples (Dell'Aglio et al., EKAW 2016, Sec. 2 and Examples 7-11 over Figure 1's stream, tests/data/fig1.trig),
first against the brute-force oracle of tests/support/cep_oracle.py, then through the engine; and random small
streams, windows, ET and event patterns, the engine compared with the oracle instant by instant."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.algebra import ops
from rspark.cep import machine
from rspark.cep.machine import ConsumingEvaluator, timestamps_needed
from tests.support.cep_oracle import (
    SELECTIONS,
    Event,
    First,
    Landmark,
    Last,
    Seq,
    TimeWindowSpec,
    evaluate,
    evaluate_at,
    event_names,
    match,
    variables,
)

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"
PREFIX = "PREFIX : <http://example.org/>\n"

# Figure 1 / Example 1 (tests/data/fig1.trig)
FIG1 = [
    ("G1", 2, {(":a1", ":p", ":b1")}),
    ("G2", 4, {(":a2", ":p", ":b2")}),
    ("G3", 6, {(":b1", ":q", ":c1"), (":b2", ":q", ":c2")}),
    ("G4", 8, {(":b2", ":q", ":c2")}),
    ("G5", 10, {(":a3", ":p", ":b3"), (":b1", ":q", ":c1")}),
]
# Example 3 / 4: w1 = W^lambda[(1)], w2 = W^tau[(5, 1)]; E1 = EVENT w1 (?x :p ?y), E2 = EVENT w2 (?y :q ?z)
EX4_WINDOWS = {"w1": Landmark(1), "w2": TimeWindowSpec(5, 1)}
EX4_EVENTS = {"E1": ("w1", [("?x", ":p", "?y")]), "E2": ("w2", [("?y", ":q", "?z")])}
E1, E2, E3 = Event("E1"), Event("E2"), Event("E3")


def mu(**kw) -> frozenset:
    return frozenset((k, ":" + v) for k, v in kw.items())


def xyz(i: int, t1: int, t2: int) -> tuple:
    """The event mapping ({?x -> :ai, ?y -> :bi, ?z -> :ci}, t1, t2) of the paper's examples."""
    return (mu(x=f"a{i}", y=f"b{i}", z=f"c{i}"), t1, t2)


def oracle_fig1(expr, times, consume=None, windows=None, events=None):
    return evaluate(FIG1, windows or EX4_WINDOWS, events or EX4_EVENTS, expr, times, consume)


# --------------------------------------------------------------------------------------- the oracle, on the paper

def test_oracle_fig1_is_the_trig_file():
    # the oracle's copy of Figure 1 is tests/data/fig1.trig
    import pyoxigraph

    quads = list(pyoxigraph.parse(path=str(DATA / "fig1.trig"), format=pyoxigraph.RdfFormat.TRIG))
    stamps = {q.subject.value[len(EX):]: int(q.object.value) for q in quads
              if q.predicate.value == "http://www.w3.org/ns/prov#generatedAtTime"}
    graphs: dict = {}
    for q in quads:
        if not isinstance(q.graph_name, pyoxigraph.DefaultGraph):
            graphs.setdefault(q.graph_name.value[len(EX):], set()).add(
                tuple(":" + term.value[len(EX):] for term in (q.subject, q.predicate, q.object)))
    assert sorted((name, stamps[name], triples) for name, triples in graphs.items()) == FIG1


def test_oracle_windows_example2():
    # Example 2: W^lambda[(1)](S, 8) = G1..G4, W^tau[(5, 1)](S, 8) = G2, G3, G4; Example 5: W^tau[(5, 1)](S, 12) =
    # G4, G5
    assert [n for n, ts, _ in FIG1 if Landmark(1).holds(ts, 8)] == ["G1", "G2", "G3", "G4"]
    assert [n for n, ts, _ in FIG1 if TimeWindowSpec(5, 1).holds(ts, 8)] == ["G2", "G3", "G4"]
    assert [n for n, ts, _ in FIG1 if TimeWindowSpec(5, 1).holds(ts, 12)] == ["G4", "G5"]
    # t' = floor(t / slide) * slide: a [RANGE 4 SLIDE 3] window at 8 is (2, 6]
    assert [n for n, ts, _ in FIG1 if TimeWindowSpec(4, 3).holds(ts, 8)] == ["G2", "G3"]


def test_oracle_example7_basic_event_pattern():
    assert oracle_fig1(E2, [8])[8] == {(mu(y="b1", z="c1"), 6, 6), (mu(y="b2", z="c2"), 6, 6),
                                       (mu(y="b2", z="c2"), 8, 8)}


def test_oracle_example8_unrestricted_seq():
    # eq. 7 gives (4, 6) and (4, 8) for a2 b2 c2 (the paper's text prints (4, 8) and (6, 8))
    assert oracle_fig1(Seq(E1, E2), [8])[8] == {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8)}


def test_oracle_example9_match():
    assert match(oracle_fig1(Seq(E1, E2), [8])[8]) == {mu(x="a1", y="b1", z="c1"), mu(x="a2", y="b2", z="c2")}


def test_oracle_example10_selections():
    at8 = {sel: oracle_fig1(Seq(E1, E2, sel), [8])[8] for sel in SELECTIONS}
    assert at8["NAIVE"] == {xyz(2, 4, 8)}
    assert at8["CHRONOLOGICAL"] == {xyz(1, 2, 6), xyz(2, 4, 6)}
    assert at8["RECENT"] == {xyz(1, 2, 6), xyz(2, 4, 8)}


def test_oracle_example11_chronological_consumption():
    out = oracle_fig1(Seq(E1, E2, "CHRONOLOGICAL"), [8, 10], consume="CHRONOLOGICAL")
    assert out == {8: {xyz(1, 2, 6), xyz(2, 4, 6)}, 10: frozenset()}
    # without consumption, (a1 p b1)@2 and (b1 q c1)@10 make an event at 10
    out = oracle_fig1(Seq(E1, E2, "CHRONOLOGICAL"), [8, 10])
    assert out[10] == {xyz(1, 2, 6), xyz(2, 4, 6)}  # the first E2 event of each mu2 is still the one at 6


def test_oracle_section2_unrestricted():
    # [R3.1]: unrestricted gives e1, e2, e3 at 8; at 10 e1..e4, e4 = (a1 b1 c1, 2, 10) being new
    out = oracle_fig1(Seq(E1, E2), [8, 10])
    assert out == {8: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8)},
                   10: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8), xyz(1, 2, 10)}}


def test_oracle_section2_recent_consumption():
    # [R3.1]: recent returns nothing at 10, (a1 p b1) being consumed at 8
    out = oracle_fig1(Seq(E1, E2, "RECENT"), [8, 10], consume="RECENT")
    assert out == {8: {xyz(1, 2, 6), xyz(2, 4, 8)}, 10: frozenset()}
    assert oracle_fig1(Seq(E1, E2, "RECENT"), [8, 10])[10] == {xyz(1, 2, 10), xyz(2, 4, 8)}
    # the consumption policy alone, over the unrestricted SEQ: all three events' triples go at 8
    out = oracle_fig1(Seq(E1, E2), [8, 10], consume="RECENT")
    assert out == {8: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8)}, 10: frozenset()}


def test_oracle_section2_csparql_naive_sequence():
    # [R3.2]: a window of length 7 sliding by 1, the latest matches: e3 at 8, nothing at 10 (the latest are
    # (a3 p b3)@10 and (b1 q c1)@10)
    windows = {"w": TimeWindowSpec(7, 1)}
    events = {"E1": ("w", [("?x", ":p", "?y")]), "E2": ("w", [("?y", ":q", "?z")])}
    out = oracle_fig1(Seq(E1, E2, "NAIVE"), [8, 10], windows=windows, events=events)
    assert out == {8: {xyz(2, 4, 8)}, 10: frozenset()}


def test_oracle_first_last_and_nesting():
    assert oracle_fig1(First(E2), [8])[8] == {(mu(y="b1", z="c1"), 6, 6), (mu(y="b2", z="c2"), 6, 6)}
    assert oracle_fig1(Last(E2), [8])[8] == {(mu(y="b2", z="c2"), 8, 8)}
    # (2, 6) is before (4, 6): the same end, an earlier start
    assert oracle_fig1(First(Seq(E1, E2)), [8])[8] == {xyz(1, 2, 6)}
    assert oracle_fig1(Last(Seq(E1, E2)), [8])[8] == {xyz(2, 4, 8)}
    # FIRST inside SEQ is evaluated under the substitution and the bound: FIRST of the E1 events with ?y = :b1
    assert oracle_fig1(Seq(First(E1), E2), [10])[10] == {xyz(1, 2, 6), xyz(1, 2, 10), xyz(2, 4, 6), xyz(2, 4, 8)}
    # E1 SEQ (FIRST E2): FIRST of all E2 events, then the E1 events before them
    assert oracle_fig1(Seq(E1, First(E2)), [8])[8] == {xyz(1, 2, 6), xyz(2, 4, 6)}
    # (E1 SEQ E2) SEQ E3 with E3 = EVENT w2 (?y :q ?z): the same ?y ?z again, later
    events = dict(EX4_EVENTS, E3=("w2", [("?y", ":q", "?z")]))
    out = oracle_fig1(Seq(Seq(E1, E2), E3), [8, 10], events=events)
    assert out == {8: {xyz(2, 4, 8)}, 10: {xyz(1, 2, 10), xyz(2, 4, 8)}}


def test_oracle_consumption_is_per_window_and_occurrence():
    # Example 11's consumption at 8 takes (a1 p b1)@G1, (a2 p b2)@G2 from w1 and G3's two triples from w2
    seq = Seq(E1, E2, "CHRONOLOGICAL")
    consumed = set().union(*evaluate_at(FIG1, EX4_WINDOWS, EX4_EVENTS, seq, 8).values())
    assert consumed == {("w1", "G1", (":a1", ":p", ":b1")), ("w1", "G2", (":a2", ":p", ":b2")),
                        ("w2", "G3", (":b1", ":q", ":c1")), ("w2", "G3", (":b2", ":q", ":c2"))}
    # the same triples read through another window w3 on the same stream are not consumed there
    windows = dict(EX4_WINDOWS, w3=Landmark(1))
    events = dict(EX4_EVENTS, E3=("w3", [("?x", ":p", "?y")]))
    later = evaluate_at(FIG1, windows, events, Seq(E3, E2, "CHRONOLOGICAL"), 10, consumed)
    assert set(later) == {(mu(x="a1", y="b1", z="c1"), 2, 10), (mu(x="a2", y="b2", z="c2"), 4, 8)}
    assert evaluate_at(FIG1, windows, events, seq, 10, consumed) == {}
    # the occurrence, not the triple, is consumed: (b2 q c2)@G4 is still there in w2 after G3's was consumed
    assert set(evaluate_at(FIG1, windows, events, E2, 10, consumed)) == {(mu(y="b2", z="c2"), 8, 8),
                                                                      (mu(y="b1", z="c1"), 10, 10)}


def test_oracle_same_timestamp_ties_and_duplicates():
    # two elements at one instant: FIRST keeps both, equal event mappings collapse, SEQ needs strictly earlier
    stream = [("A", 3, {(":a1", ":p", ":b1")}), ("B", 3, {(":a1", ":p", ":b1"), (":a2", ":p", ":b1")}),
              ("C", 3, {(":b1", ":q", ":c1")}), ("D", 5, {(":b1", ":q", ":c1")})]
    windows = {"w": Landmark(0)}
    events = {"E1": ("w", [("?x", ":p", "?y")]), "E2": ("w", [("?y", ":q", "?z")])}
    out = evaluate(stream, windows, events, First(E1), [5])[5]
    assert out == {(mu(x="a1", y="b1"), 3, 3), (mu(x="a2", y="b1"), 3, 3)}
    out = evaluate(stream, windows, events, Seq(E1, E2), [5])[5]
    assert out == {(mu(x="a1", y="b1", z="c1"), 3, 5), (mu(x="a2", y="b1", z="c1"), 3, 5)}
    # consumption takes the triple of both elements A and B (the event is derived from each)
    out = evaluate(stream + [("E", 7, {(":b1", ":q", ":c1")})], windows, events, Seq(E1, E2, "RECENT"), [5, 7],
                   "RECENT")
    assert out[5] == {(mu(x="a1", y="b1", z="c1"), 3, 5), (mu(x="a2", y="b1", z="c1"), 3, 5)}
    assert out[7] == frozenset()


def test_oracle_bgp_over_one_element():
    # a BEP's BGP is matched inside each element, never across two
    stream = [("A", 1, {(":a1", ":p", ":b1")}), ("B", 2, {(":b1", ":q", ":c1")}),
              ("C", 3, {(":a2", ":p", ":b2"), (":b2", ":q", ":c2")})]
    events = {"E1": ("w", [("?x", ":p", "?y"), ("?y", ":q", "?z")])}
    out = evaluate(stream, {"w": Landmark(0)}, events, E1, [3])[3]
    assert out == {(mu(x="a2", y="b2", z="c2"), 3, 3)}


# ------------------------------------------------------------------------------------------------- the engine

@pytest.fixture(scope="module")
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        yield eng


@pytest.fixture
def fig1(engine):
    """The engine with exactly Figure 1's stream, as <http://example.org/S>."""
    if set(engine.streams) != {EX + "S"}:
        engine.clear()
        engine.add_stream(EX + "S", DATA / "fig1.trig")
    return engine


def local(term) -> str:
    n3 = term.n3()
    return ":" + n3[len(EX) + 1:-1] if n3.startswith("<" + EX) else n3


_NUMBER = re.compile(r'"(-?[0-9]+(?:\.[0-9]*)?)"\^\^<http://www\.w3\.org/2001/XMLSchema#'
                     r'(?:integer|decimal|long|int)>|(-?[0-9]+)')


def number(term):
    """An interval bound (getSTARTTIME() / getENDTIME() over a numeric stream): its value, as an int when integral;
    anything else is returned as its N-Triples form (and will not equal the oracle's int)."""
    n3 = term.n3()
    m = _NUMBER.fullmatch(n3)
    if not m:
        return n3
    value = Decimal(m.group(1) or m.group(2))
    return int(value) if value == value.to_integral_value() else value


def engine_events(records, names) -> dict:
    """{time: sorted [(sorted mu pairs, t1, t2)]} of replay records projecting ``names`` plus ?t1 ?t2."""
    out = {}
    for rec in records:
        out[rec.time] = sorted(
            (tuple(sorted((n, local(row[n])) for n in names if n in row)),
             number(row["t1"]) if "t1" in row else None, number(row["t2"]) if "t2" in row else None)
            for row in rec.rows)
    return out


def canonical(result: dict) -> dict:
    return {t: sorted((tuple(sorted(m)), t1, t2) for m, t1, t2 in events) for t, events in result.items()}


def render(expr) -> str:
    """An event expression in rspark's syntax: SEQ is left-associative, FIRST / LAST bind tighter than SEQ."""
    if isinstance(expr, Event):
        return expr.name
    if isinstance(expr, First | Last):
        inner = render(expr.expr)
        if isinstance(expr.expr, Seq):
            inner = f"({inner})"
        return ("FIRST " if isinstance(expr, First) else "LAST ") + inner
    left = render(expr.left)
    right = render(expr.right)
    if isinstance(expr.right, Seq):
        right = f"({right})"
    op = "SEQ" if expr.selection is None else f"SEQ[{expr.selection}]"
    return f"{left} {op} {right}"


def window_text(window) -> str:
    if isinstance(window, Landmark):
        return f"[LANDMARK {window.t0}]"
    return f"[RANGE {window.range} SLIDE {window.slide}]"


def query_text(stream_iri: str, windows: dict, events: dict, expr, consume=None, intervals: bool = True) -> str:
    names = event_names(expr)
    used = []
    for name in names:
        if events[name][0] not in used:
            used.append(events[name][0])
    select = " ".join("?" + v for v in variables(expr, events))
    if intervals:
        select += " (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)"
    lines = [PREFIX + f"SELECT {select}"]
    lines += [f"FROM NAMED WINDOW :{w} ON <{stream_iri}> {window_text(windows[w])}" for w in used]
    for name in names:
        w, patterns = events[name]
        bgp = " . ".join(" ".join(p) for p in patterns)
        lines.append(f"EVENT ON :{w} {{ {bgp} }} AS {name}")
    consume_text = f"CONSUME {consume} " if consume else ""
    lines.append(f"WHERE {{ MATCH {consume_text}{{ {render(expr)} }} }}")
    return "\n".join(lines)


def run_fig1(engine, expr, times, consume=None, windows=None, events=None, profile=None) -> dict:
    windows, events = windows or EX4_WINDOWS, events or EX4_EVENTS
    q = query_text(EX + "S", windows, events, expr, consume)
    records = engine.replay(q, times=times, profile=profile)
    assert [rec.time for rec in records] == times, q
    return engine_events(records, variables(expr, events))


# ------------------------------------------------------------------------------- the paper's examples, exactly

def test_example7_basic_event_pattern(fig1):
    assert run_fig1(fig1, E2, [8]) == canonical({8: {(mu(y="b1", z="c1"), 6, 6), (mu(y="b2", z="c2"), 6, 6),
                                                    (mu(y="b2", z="c2"), 8, 8)}})


def test_example8_unrestricted_seq(fig1):
    assert run_fig1(fig1, Seq(E1, E2), [8]) == canonical({8: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8)}})


def test_example9_match_is_a_set_of_mappings(fig1):
    # Example 4's query in the paper's spelling (with the slide of Example 3): without the interval functions,
    # MATCH gives the set of solution mappings, a2 b2 c2 once although two events carry it
    q = PREFIX + ("SELECT ?x ?y ?z\nFROM NAMED :S WIN [LND 1] AS :w1\nFROM NAMED :S WIN [RANGE 5 SLIDE 1] AS :w2\n"
                  "EVENT ON :w1 { ?x :p ?y. } AS E1\nEVENT ON :w2 { ?y :q ?z. } AS E2\n"
                  "WHERE { MATCH { E1 SEQ E2 } }")
    [rec] = fig1.replay(q, times=[8])
    assert sorted(tuple(local(row[v]) for v in "xyz") for row in rec.rows) == [
        (":a1", ":b1", ":c1"), (":a2", ":b2", ":c2")]
    # the paper's projection, SELECT ?x ?z
    [rec] = fig1.replay(q.replace("SELECT ?x ?y ?z", "SELECT ?x ?z"), times=[8])
    assert sorted(tuple(local(row[v]) for v in "xz") for row in rec.rows) == [(":a1", ":c1"), (":a2", ":c2")]


@pytest.mark.parametrize("selection, events", [
    ("NAIVE", {xyz(2, 4, 8)}),
    ("CHRONOLOGICAL", {xyz(1, 2, 6), xyz(2, 4, 6)}),
    ("RECENT", {xyz(1, 2, 6), xyz(2, 4, 8)}),
])
def test_example10_selection_policies(fig1, selection, events):
    assert run_fig1(fig1, Seq(E1, E2, selection), [8]) == canonical({8: events})


def test_example11_chronological_consumption(fig1):
    out = run_fig1(fig1, Seq(E1, E2, "CHRONOLOGICAL"), [8, 10], consume="CHRONOLOGICAL")
    assert out == canonical({8: {xyz(1, 2, 6), xyz(2, 4, 6)}, 10: set()})


def test_section2_unrestricted_at_8_and_10(fig1):
    out = run_fig1(fig1, Seq(E1, E2), [8, 10])
    assert out == canonical({8: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8)},
                            10: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8), xyz(1, 2, 10)}})


def test_section2_recent_consumption(fig1):
    out = run_fig1(fig1, Seq(E1, E2, "RECENT"), [8, 10], consume="RECENT")
    assert out == canonical({8: {xyz(1, 2, 6), xyz(2, 4, 8)}, 10: set()})


def test_section2_consumption_policy_alone(fig1):
    # MATCH CONSUME RECENT over an unrestricted SEQ: everything matched at 8 is consumed, (b1 q c1)@10 finds no
    # (a1 p b1) left
    out = run_fig1(fig1, Seq(E1, E2), [8, 10], consume="RECENT")
    assert out == canonical({8: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8)}, 10: set()})


def test_section2_csparql_naive_sequence(fig1):
    windows = {"w": TimeWindowSpec(7, 1)}
    events = {"E1": ("w", [("?x", ":p", "?y")]), "E2": ("w", [("?y", ":q", "?z")])}
    out = run_fig1(fig1, Seq(E1, E2, "NAIVE"), [8, 10], windows=windows, events=events)
    assert out == canonical({8: {xyz(2, 4, 8)}, 10: set()})


@dataclass(frozen=True)
class ClosedOpenWindow:
    """The csparql profile's time window for the oracle: [c - range, c), c = floor(t / slide) * slide the last close
    (C-SPARQL's [o, c) windows, docs/profiles.md)."""

    range: int
    slide: int

    def holds(self, ts: int, t: int) -> bool:
        close = (t // self.slide) * self.slide
        return close - self.range <= ts < close


def test_unrestricted_selection_overrides_the_csparql_profile_s_naive_one(fig1):
    # csparql's plain SEQ is naive (tests/test_events.py: at 8 (a2 c2 4 6) alone, nothing at 10). SEQ[UNRESTRICTED]
    # is eq. 7 whatever the profile, over the profile's windows: w1 [LANDMARK 1] holds 1 <= ti <= t, w2 [RANGE 5
    # SLIDE 1] is [t - 5, t). At 8: E1 events (a1 b1)@2, (a2 b2)@4 (G4 has no :p); w2 = [3, 8) holds G2, G3, so
    # the E2 events are (b1 c1)@6, (b2 c2)@6: every compatible pair with E1 strictly before E2 gives (a1 b1 c1, 2, 6)
    # and (a2 b2 c2, 4, 6). At 10: w1 adds (a3 b3)@10, which no E2 joins; w2 = [5, 10) holds G3, G4, so (b2 c2)@8
    # joins (a2 b2)@4 too. (The default profile's (3, 8] and (5, 10] hold G4 at 8 and G5 at 10:
    # test_section2_unrestricted_at_8_and_10.)
    expected = {8: {xyz(1, 2, 6), xyz(2, 4, 6)}, 10: {xyz(1, 2, 6), xyz(2, 4, 6), xyz(2, 4, 8)}}
    assert oracle_fig1(Seq(E1, E2), [8, 10], windows={"w1": Landmark(1), "w2": ClosedOpenWindow(5, 1)}) == expected
    assert run_fig1(fig1, Seq(E1, E2, "UNRESTRICTED"), [8, 10], profile="csparql") == canonical(expected)


def test_match_consume_none_overrides_the_profile_s_consumption(fig1):
    # epsparql-chronological selects and consumes chronologically: what matched at 8 is consumed and nothing is
    # left at 10 (Example 11). MATCH CONSUME NONE keeps the chronological selection (Example 10: at 8 (a1 b1 c1, 2,
    # 6), (a2 b2 c2, 4, 6)) and consumes nothing: at 10 w1 adds (a3 b3)@10, which no E2 joins; w2 = (5, 10] holds
    # G3, G4, G5, and the first E2 event of each (?y ?z) with an E1 event before it is still G3's at 6 ((b2 c2)@8
    # and (b1 c1)@10 come later), with the first such E1 event: the events of 8 again. SELECT RSTREAM: the
    # profile's ISTREAM would drop them at 10 as rows already given at 8.
    expected = {8: {xyz(1, 2, 6), xyz(2, 4, 6)}, 10: {xyz(1, 2, 6), xyz(2, 4, 6)}}
    assert oracle_fig1(Seq(E1, E2, "CHRONOLOGICAL"), [8, 10]) == expected
    q = query_text(EX + "S", EX4_WINDOWS, EX4_EVENTS, Seq(E1, E2), "NONE").replace("SELECT", "SELECT RSTREAM", 1)
    records = fig1.replay(q, times=[8, 10], profile="epsparql-chronological")
    assert engine_events(records, ["x", "y", "z"]) == canonical(expected)
    # the profile's consumption (no CONSUME): nothing at 10, and no record (the profile emits no empty one)
    records = fig1.replay(q.replace("MATCH CONSUME NONE", "MATCH"), times=[8, 10], profile="epsparql-chronological")
    assert engine_events(records, ["x", "y", "z"]) == canonical({8: expected[8]})


def test_first_last_and_nesting_on_figure1(fig1):
    assert run_fig1(fig1, First(E2), [8]) == canonical({8: {(mu(y="b1", z="c1"), 6, 6), (mu(y="b2", z="c2"), 6, 6)}})
    assert run_fig1(fig1, Last(E2), [8]) == canonical({8: {(mu(y="b2", z="c2"), 8, 8)}})
    assert run_fig1(fig1, First(Seq(E1, E2)), [8]) == canonical({8: {xyz(1, 2, 6)}})
    assert run_fig1(fig1, Last(Seq(E1, E2)), [8]) == canonical({8: {xyz(2, 4, 8)}})
    assert run_fig1(fig1, Seq(First(E1), E2), [10]) == canonical(
        {10: {xyz(1, 2, 6), xyz(1, 2, 10), xyz(2, 4, 6), xyz(2, 4, 8)}})
    assert run_fig1(fig1, Seq(E1, First(E2)), [8]) == canonical({8: {xyz(1, 2, 6), xyz(2, 4, 6)}})
    events = dict(EX4_EVENTS, E3=("w2", [("?y", ":q", "?z")]))
    assert run_fig1(fig1, Seq(Seq(E1, E2), E3), [8, 10], events=events) == canonical(
        {8: {xyz(2, 4, 8)}, 10: {xyz(1, 2, 10), xyz(2, 4, 8)}})


# ---------------------------------------------------------------------------- random streams against the oracle

# the patterns events draw from: E1 mostly over :p, E2 and E3 mostly over :q (SEQ finds something more often)
LEFT_PATTERNS = [
    [("?x", ":p", "?y")],
    [("?x", ":p", "?y")],
    [(":a1", ":p", "?y")],
    [("?x", ":p", ":b2")],
    [("?x", ":p", "?y"), ("?y", ":q", "?z")],
    [("?y", ":q", "?z")],
]
RIGHT_PATTERNS = [
    [("?y", ":q", "?z")],
    [("?y", ":q", "?z")],
    [("?y", ":q", ":c1")],
    [("?w", ":q", "?z")],
    [("?x", ":p", "?y")],
    [("?x", ":p", "?y"), ("?y", ":q", "?z")],
]
# a small vocabulary, so that random elements join: :a1 / :a2 :p :b1 / :b2, :b1 / :b2 :q :c1 / :c2, and :a3 :p :b3,
# :b3 :q :c3 that join nothing else; interleaved, so that the simplest streams (Hypothesis starts from, and shrinks
# towards, the first entries) hold both kinds
TRIPLES = [(":a1", ":p", ":b1"), (":b1", ":q", ":c1"), (":a2", ":p", ":b2"), (":b2", ":q", ":c2"),
           (":a1", ":p", ":b2"), (":b1", ":q", ":c2"), (":a2", ":p", ":b1"), (":b2", ":q", ":c1"),
           (":a3", ":p", ":b3"), (":b3", ":q", ":c3")]
selections = st.sampled_from(SELECTIONS)


@st.composite
def event_expressions(draw):
    """The shapes: E1 SEQ E2, FIRST / LAST of it, (E1 SEQ E2) SEQ E3, E1 SEQ (E2 SEQ E3), E1 SEQ FIRST / LAST E2,
    FIRST / LAST E1 SEQ E2, FIRST / LAST E1, each SEQ with a random selection."""
    s1, s2 = draw(selections), draw(selections)
    unary = draw(st.sampled_from([First, Last]))
    return draw(st.sampled_from([
        Seq(E1, E2, s1),
        unary(Seq(E1, E2, s1)),
        Seq(Seq(E1, E2, s1), E3, s2),
        Seq(E1, Seq(E2, E3, s2), s1),
        Seq(E1, unary(E2), s1),
        Seq(unary(E1), E2, s1),
        unary(E1),
    ]))


# Hypothesis starts from the simplest values (the first of sampled_from, the least integer) and shrinks towards them:
# the lists below put first the values that make the simplest case find events (a window wide enough, a gap between
# elements, ET at the last element)
landmarks = st.builds(Landmark, st.sampled_from([0, 3, 1, 5, 2, 4]))
time_windows = st.builds(TimeWindowSpec, st.sampled_from([6, 4, 9, 12, 3, 2, 5]), st.sampled_from([1, 2, 3, 4]))


@st.composite
def cases(draw, consuming: bool = False):
    """(stream, windows, events, expression, ET, consumption). ``consuming``: always a consumption policy, ET of 2
    to 4 instants among the stream's timestamps, and landmark windows more often (EP-SPARQL's setting, where what
    an instant consumes is still in the windows at the next)."""
    # 3 to 8 elements at ticks 1..15, some sharing a timestamp (a gap of 0); the element i draws its triples from
    # the vocabulary rotated by i: the simplest stream is a1 p b1 @1, b1 q c1 @3, a2 p b2 @5, b2 q c2 @7 ...
    n = draw(st.integers(3, 8))
    stamps = [draw(st.sampled_from([1, 2, 3, 4]))]
    for _ in range(n - 1):
        stamps.append(min(15, stamps[-1] + draw(st.sampled_from([2, 0, 1, 3, 4]))))
    stream = []
    for i, ts in enumerate(stamps):
        vocabulary = TRIPLES[i % len(TRIPLES):] + TRIPLES[:i % len(TRIPLES)]
        stream.append((f"G{i + 1}", ts, set(draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=4)))))
    window = st.one_of(landmarks, landmarks, time_windows) if consuming else st.one_of(landmarks, time_windows)
    windows = {f"w{i}": w for i, w in enumerate(draw(st.lists(window, min_size=1, max_size=3)))}
    events = {name: (draw(st.sampled_from(sorted(windows))),
                     draw(st.sampled_from(LEFT_PATTERNS if name == "E1" else RIGHT_PATTERNS)))
              for name in ("E1", "E2", "E3")}
    expr = draw(event_expressions())
    if consuming:
        instants = st.sampled_from(sorted(set(stamps) | {stamps[-1] + 2}, reverse=True))
        times = sorted(draw(st.lists(instants, min_size=2, max_size=4, unique=True)))
        consume = draw(st.sampled_from(["CHRONOLOGICAL", "RECENT"]))
    else:
        # ET: 1 to 4 instants, half of them among the stream's timestamps (the last first), the others any tick
        instants = st.one_of(st.sampled_from(sorted(set(stamps), reverse=True)), st.integers(1, 18))
        times = sorted(draw(st.lists(instants, min_size=1, max_size=4, unique=True)))
        consume = draw(st.sampled_from([None, "CHRONOLOGICAL", None, "RECENT"]))
    return stream, windows, events, expr, times, consume


def trig(stream) -> str:
    lines = ["@prefix : <http://example.org/> .", "@prefix prov: <http://www.w3.org/ns/prov#> ."]
    for name, ts, triples in stream:
        body = " ".join(f"{s} {p} {o} ." for s, p, o in sorted(triples))
        lines.append(f":{name} {{ {body} }}")
        lines.append(f":{name} prov:generatedAtTime {ts} .")
    return "\n".join(lines) + "\n"


def check_case(engine, directory: Path, case) -> None:
    stream, windows, events, expr, times, consume = case
    path = directory / "stream.trig"
    path.write_text(trig(stream), encoding="utf-8")
    engine.clear()
    engine.add_stream(EX + "R", path)
    q = query_text(EX + "R", windows, events, expr, consume)
    records = engine.replay(q, times=times)
    got = engine_events(records, variables(expr, events))
    want = canonical(evaluate(stream, windows, events, expr, times, consume))
    assert got == want, f"query:\n{q}\nstream:\n{trig(stream)}times: {times}"


_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(case=cases())
def test_oracle_invariants(case):
    # the oracle alone (no Spark): relations between the definitions that hold whatever the data
    stream, windows, events, _expr, times, _consume = case
    for t in times:
        at = {name: evaluate(stream, windows, events, Event(name), [t])[t] for name in ("E1", "E2")}
        for name, evs in at.items():  # eq. 5, 6: FIRST / LAST are subsets, non-empty when E is
            for op in (First, Last):
                sub = evaluate(stream, windows, events, op(Event(name)), [t])[t]
                assert sub <= evs and bool(sub) == bool(evs)
        seq = {sel: evaluate(stream, windows, events, Seq(E1, E2, sel), [t])[t] for sel in SELECTIONS}
        # eq. 7 over two BEPs: the compatible pairs with the E1 element strictly before the E2 element
        assert seq[None] == {(m1 | m2, t1, t4) for m1, t1, _t2 in at["E1"] for m2, t3, t4 in at["E2"]
                             if t1 < t3 and all(dict(m2).get(v, term) == term for v, term in m1)}
        # the selections keep some of the unrestricted events (eq. 9 too, over BEPs)
        assert seq["CHRONOLOGICAL"] <= seq[None] and seq["RECENT"] <= seq[None] and seq["NAIVE"] <= seq[None]
        if set(variables(E1, events)) <= set(variables(E2, events)):
            # mu1 U mu2 = mu2: CHRONOLOGICAL and RECENT give an event for each mu2 that the unrestricted SEQ has
            assert match(seq["CHRONOLOGICAL"]) == match(seq["RECENT"]) == match(seq[None])
    # consumption: the first instant is as without it
    for expr in (Seq(E1, E2), Seq(E1, E2, "CHRONOLOGICAL"), First(Seq(E1, E2, "RECENT"))):
        first = times[:1]
        assert evaluate(stream, windows, events, expr, first, "CHRONOLOGICAL") == evaluate(
            stream, windows, events, expr, first)


def as_ops(expr):
    """An oracle expression as rspark's event algebra (the basic event patterns' windows and patterns left empty:
    only the operators matter to ``timestamps_needed``)."""
    if isinstance(expr, Event):
        return ops.EventPattern(expr.name, None, ops.BGP(()))
    if isinstance(expr, (First, Last)):
        return (ops.EventFirst if isinstance(expr, First) else ops.EventLast)(as_ops(expr.expr))
    return ops.EventSeq(as_ops(expr.left), as_ops(expr.right), expr.selection)


def test_timestamps_needed():
    assert [timestamps_needed(as_ops(e)) for e in (
        E1, First(E1), Seq(E1, E2), Seq(Seq(E1, E2, "CHRONOLOGICAL"), E3, "RECENT"), Last(Seq(E1, Seq(E2, E3))),
        Seq(E1, E2, "NAIVE"), Seq(Seq(E1, E2), E3, "NAIVE"), Seq(E1, Seq(E2, E3, "NAIVE")),
    )] == [1, 1, 2, 3, 3, 1, 2, 2]
    # why SEQ[NAIVE] takes the larger operand's count, not the sum: its left event may end where its right one
    # does, ((E1 SEQ E2) SEQ[NAIVE] E3 with E1 at 3, E2 and E3 at 5, from the same element, is an event over
    # two timestamps
    stream = [("G1", 3, {(":a1", ":p", ":b1")}), ("G2", 5, {(":b1", ":q", ":c1")})]
    left, right = [("?x", ":p", "?y")], [("?y", ":q", "?z")]
    windows, events = {"w": Landmark(0)}, {"E1": ("w", left), "E2": ("w", right), "E3": ("w", right)}
    found = evaluate(stream, windows, events, Seq(Seq(E1, E2), E3, "NAIVE"), [6])[6]
    assert {(t1, t2) for _mu, t1, t2 in found} == {(3, 5)}


def test_consumption_keeps_a_naive_sequence_over_shared_timestamps(engine, tmp_path):
    # the instant above under MATCH CONSUME (the path that leaves out instants with too few timestamps), then a
    # later one where the consumed occurrences leave nothing
    stream = [("G1", 3, {(":a1", ":p", ":b1")}), ("G2", 5, {(":b1", ":q", ":c1")}), ("G3", 7, {(":a2", ":p", ":b2")})]
    left, right = [("?x", ":p", "?y")], [("?y", ":q", "?z")]
    windows, events = {"w": Landmark(0)}, {"E1": ("w", left), "E2": ("w", right), "E3": ("w", right)}
    expr = Seq(Seq(E1, E2), E3, "NAIVE")
    for consume in ("CHRONOLOGICAL", "RECENT"):
        assert {t: len(evs) for t, evs in evaluate(stream, windows, events, expr, [6, 8], consume).items()} == {
            6: 1, 8: 0}
        (tmp_path / consume).mkdir()
        check_case(engine, tmp_path / consume, (stream, windows, events, expr, [6, 8], consume))


def test_consumption_of_a_pattern_without_variables(engine, tmp_path):
    # E1 binds nothing: its matches are empty mappings whose occurrences are the constant triple in each element
    stream = [("G1", 1, {(":a1", ":p", ":b1")}), ("G2", 2, {(":b1", ":q", ":c1")}),
              ("G3", 3, {(":a1", ":p", ":b1"), (":b1", ":q", ":c2")}), ("G4", 4, {(":b1", ":q", ":c1")})]
    windows = {"w": Landmark(0)}
    events = {"E1": ("w", [(":a1", ":p", ":b1")]), "E2": ("w", [("?y", ":q", "?z")])}
    for consume in ("CHRONOLOGICAL", "RECENT"):
        (tmp_path / consume).mkdir()
        check_case(engine, tmp_path / consume, (stream, windows, events, Seq(E1, E2, consume), [2, 3, 4], consume))


def test_consumption_of_patterns_of_one_shape(engine, tmp_path):
    # E2 and E3 differ only in their variables' names: their matches reach the workers once, read as both
    stream = [("G1", 1, {(":a1", ":p", ":b1")}), ("G2", 2, {(":b1", ":q", ":c1")}), ("G3", 3, {(":b2", ":q", ":c1")}),
              ("G4", 4, {(":b1", ":q", ":c2"), (":a2", ":p", ":b1")}), ("G5", 5, {(":b1", ":q", ":c1")})]
    windows = {"w": Landmark(0), "v": TimeWindowSpec(4, 1)}
    cases = [({"E1": ("w", [("?x", ":p", "?y")]), "E2": ("w", [("?y", ":q", "?z")]), "E3": ("w", [("?w", ":q", "?z")])},
              Seq(Seq(E1, E2), E3)),
             # the same triple pattern over two windows makes two shapes; a key: ?y, the subject of every pattern
             ({"E1": ("v", [("?y", ":q", "?z")]), "E2": ("w", [("?y", ":q", "?w")]), "E3": ("w", [("?y", ":q", "?v")])},
              Seq(E1, Seq(E2, E3)))]
    for i, (events, expr) in enumerate(cases):
        for consume in ("CHRONOLOGICAL", "RECENT"):
            found = evaluate(stream, windows, events, expr, [3, 4, 5, 6], consume)
            assert sum(map(len, found.values())) > 0
            (tmp_path / f"{consume}{i}").mkdir()
            check_case(engine, tmp_path / f"{consume}{i}", (stream, windows, events, expr, [3, 4, 5, 6], consume))


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(case=cases())
def test_an_instant_without_enough_timestamps_has_no_event(case):
    # the premise of the consumption path's filter (rspark.spark.cep.match): an instant has an event only if every
    # basic event pattern of the expression matches there, at timestamps_needed(expr) distinct timestamps or more
    stream, windows, events, expr, times, _consume = case
    needed = timestamps_needed(as_ops(expr))
    names = sorted(set(event_names(expr)))
    for t in times:
        found = evaluate(stream, windows, events, expr, [t])[t]
        basic = {name: evaluate(stream, windows, events, Event(name), [t])[t] for name in names}
        stamps = {ts for evs in basic.values() for _mu, ts, _ts in evs}
        if found:
            assert all(basic.values()) and len(stamps) >= needed, (expr, t, basic)


@settings(max_examples=15, **_SETTINGS)
@given(case=cases())
def test_random_event_patterns_match_the_oracle(engine, tmp_path_factory, case):
    check_case(engine, tmp_path_factory.mktemp("cep"), case)


@settings(max_examples=15, **_SETTINGS)
@given(case=cases(consuming=True))
def test_random_consumption_matches_the_oracle(engine, tmp_path_factory, case):
    check_case(engine, tmp_path_factory.mktemp("cep"), case)


@settings(max_examples=10, **_SETTINGS)
@given(case=cases(consuming=True), rows=st.sampled_from([1, 2, 3]))
def test_consumption_over_small_arrow_batches_matches_the_oracle(engine, tmp_path_factory, case, rows):
    # a key's rows reach the evaluator in Arrow batches of `rows` rows: an instant's rows span several batches
    conf = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = engine.spark.conf.get(conf)
    engine.spark.conf.set(conf, str(rows))
    try:
        check_case(engine, tmp_path_factory.mktemp("cep"), case)
    finally:
        engine.spark.conf.set(conf, before)


def test_consumption_state_is_bounded_by_the_window():
    # a sliding window holding two instants' elements: at instant i, A(i-1) B(i-1) (consumed at i-1) and A(i) B(i);
    # E1 SEQ E2 finds (A(i), B(i)) alone: the consumed occurrences still in the window are kept (else A(i-1) SEQ
    # B(i) would be an event too), the others are dropped (else the state would grow with the stream)
    state = ConsumingEvaluator(as_ops(Seq(E1, E2)), [as_ops(E1), as_ops(E2)])
    mu = (("x", "a"),)

    def pair(i):
        return [(0, mu, 10 * i, 10 * i, frozenset({("w", f"A{i}", "s", "p", "o")})),
                (1, mu, 10 * i + 1, 10 * i + 1, frozenset({("w", f"B{i}", "s", "q", "o")}))]

    found, largest = [], 0
    for i in range(1, 1001):
        found += state.step(i, pair(i - 1) + pair(i) if i > 1 else pair(i))
        largest = max(largest, len(state.consumed))
    assert found == [(i, mu, 10 * i, 10 * i + 1) for i in range(1, 1001)]
    assert largest <= 2 * machine._PRUNE_AT + 2
    assert {occ for m in pair(1000) for occ in m[4]} <= state.consumed
    with pytest.raises(ValueError, match="instant 1000 after 1000"):
        state.step(1000, [])


@pytest.mark.slow
@settings(max_examples=12, **_SETTINGS)  # each case is a replay on Spark: 12 keep the suite within its time
@given(case=st.one_of(cases(), cases(consuming=True)))
def test_random_event_patterns_match_the_oracle_more(engine, tmp_path_factory, case):
    check_case(engine, tmp_path_factory.mktemp("cep"), case)
