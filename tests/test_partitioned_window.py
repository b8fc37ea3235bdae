"""Partitioned count windows (the W3C RSP CG requirements, "Partitioned Windows" and "Predicate-based window"):
``[RANGE ELEMENTS n PARTITION BY p]`` holds, for each key (a subject of ``p`` in an element), the last ``n``
elements with that key, and is the union over the keys. The examples' answers are derived by hand in the comments;
random streams are compared with a brute-force reading of the definition."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.rsp.windows import CountWindow, TimeWindow, resolve_window
from rspark.syntax.parser import QuerySyntaxError
from rspark.syntax.translate import compile_query

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"
P = "PREFIX : <http://example.org/> "
T = ["2016-03-01T13:00:00Z", "2016-03-01T13:00:20Z", "2016-03-01T13:00:50Z", "2016-03-01T13:01:10Z",
     "2016-03-01T13:01:40Z"]


def local(term) -> str:
    return term.n3().replace("<" + EX, ":").replace(">", "") if term is not None else "-"


def table(records, *names) -> list:
    return [(r.time, sorted(tuple(local(row.get(n)) for n in names) for row in r.rows)) for r in records]


# ------------------------------------------------------------------------------------------------ syntax


@pytest.mark.parametrize("window, sse, resolved", [
    ("RANGE ELEMENTS 2 PARTITION BY :isIn", "(count elements 2 partition :isIn)",
     CountWindow("ELEMENTS", 2, None, EX + "isIn")),
    ("RANGE 5 STEP 2 PARTITION BY :isIn", "(range 5 slide 2 partition :isIn)", TimeWindow(5, 2, partition=EX + "isIn")),
])
def test_the_syntax_round_trips_and_resolves(window, sse, resolved):
    from rspark.algebra.sse import to_sse
    from rspark.model.time import Timeline
    from rspark.rsp.profiles import get_profile
    from rspark.syntax.parser import parse_query
    from rspark.syntax.unparse import unparse

    q = P + f"SELECT * FROM NAMED WINDOW :w ON :s [{window}] WHERE {{ WINDOW :w {{ ?a ?b ?c }} }}"
    plan = compile_query(q)
    assert f"(window :w :s {sse})" in to_sse(plan)
    assert f"[{window.replace(':isIn', '<http://example.org/isIn>').replace('STEP', 'SLIDE')}]" in unparse(
        parse_query(q))
    assert compile_query(unparse(parse_query(q))).dataset == plan.dataset
    [decl] = plan.dataset.windows
    assert resolve_window(decl.spec, get_profile(), Timeline.numeric()) == resolved


def test_only_elements_are_partitioned():
    with pytest.raises(QuerySyntaxError) as err:
        compile_query(P + "SELECT * FROM STREAM :s [RANGE TRIPLES 3 PARTITION BY :isIn] WHERE { ?a ?b ?c }")
    assert str(err.value) == ("<query>:1:63: PARTITION BY partitions elements: write [RANGE ELEMENTS 3 PARTITION BY "
                              "<http://example.org/isIn>]")


# ------------------------------------------------------------------------------------------------ the examples


@pytest.fixture(scope="module")
def engine(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    readings = tmp_path_factory.mktemp("readings") / "readings.trig"
    readings.write_text(READINGS)
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", DATA / "social.trig")
        eng.add_stream(EX + "readings", readings)
        yield eng


def test_seed002_partitioned_by_person_the_latest_element_of_each(engine):
    # social.trig: e1 13:00:00 {axel, darko in RedRoom}; e2 13:00:20 {axel in BlueRoom}; e3 13:00:50 {minh in
    # RedRoom}; e4 13:01:10 {darko in room1}; e5 13:01:40 {axel in room2, minh in room1}. Keys: the subjects of
    # :isIn. At each element (content change) the window holds each person's latest element, whole:
    # 13:00:00 {e1}; 13:00:20 {e1 (darko's), e2 (axel's)}; 13:00:50 {e1, e2, e3}; 13:01:10 {e2, e3, e4 (darko's)};
    # 13:01:40 {e4, e5 (axel's and minh's)}
    q = P + ("SELECT ?who ?room FROM NAMED WINDOW :w ON :social [RANGE ELEMENTS 1 PARTITION BY :isIn] "
             "WHERE { WINDOW :w { ?who :isIn ?room } }")
    assert table(engine.replay(q), "who", "room") == [
        (T[0], [(":axel", ":RedRoom"), (":darko", ":RedRoom")]),
        (T[1], [(":axel", ":BlueRoom"), (":axel", ":RedRoom"), (":darko", ":RedRoom")]),
        (T[2], [(":axel", ":BlueRoom"), (":axel", ":RedRoom"), (":darko", ":RedRoom"), (":minh", ":RedRoom")]),
        (T[3], [(":axel", ":BlueRoom"), (":darko", ":room1"), (":minh", ":RedRoom")]),
        (T[4], [(":axel", ":room2"), (":darko", ":room1"), (":minh", ":room1")]),
    ]


# one reading an element, numeric time: alice at 1 (A), 4 (B), 8 (C); bob at 3 (A), 9 (B)
READINGS = """@prefix : <http://example.org/> . @prefix prov: <http://www.w3.org/ns/prov#> .
:r1 { :alice :isIn :A } :r1 prov:generatedAtTime 1 .
:r2 { :bob :isIn :A } :r2 prov:generatedAtTime 3 .
:r3 { :alice :isIn :B } :r3 prov:generatedAtTime 4 .
:r4 { :alice :isIn :C } :r4 prov:generatedAtTime 8 .
:r5 { :bob :isIn :B } :r5 prov:generatedAtTime 9 .
"""


def test_seed002_predicate_window_elapsed_time_between_two_consecutive_readings(engine):
    # "For each person, continuously report the elapsed time between each two consecutive readings. Only the latest
    # reading of each person needs to be considered": the last two readings of each person, their timestamps'
    # difference once there are two. At 4: alice 4 - 1 = 3; at 8: alice 8 - 4 = 4; at 9: alice 4, bob 9 - 3 = 6
    q = P + ("SELECT ?who (MAX(?t) - MIN(?t) AS ?elapsed) FROM NAMED WINDOW :w ON :readings "
             "[RANGE ELEMENTS 2 PARTITION BY :isIn] WHERE { WINDOW :w { ?who :isIn ?room "
             "BIND(timestamp(?who, :isIn, ?room) AS ?t) } } GROUP BY ?who HAVING (COUNT(*) = 2)")
    got = [(r.ticks, sorted((local(row["who"]), row["elapsed"].lexical) for row in r.rows))
           for r in engine.replay(q)]
    assert got == [(1, []), (3, []), (4, [(":alice", "3")]), (8, [(":alice", "4")]),
                   (9, [(":alice", "4"), (":bob", "6")])]


# ------------------------------------------------------------------------------------------------ property test

PEOPLE = [":p0", ":p1", ":p2"]
element = st.tuples(st.integers(0, 10), st.lists(st.tuples(st.sampled_from(PEOPLE), st.sampled_from([":A", ":B"])),
                                                 min_size=1, max_size=2, unique_by=lambda t: t[0]))
_COUNTER = itertools.count()


def brute_force(stream: list, n: int, t: int) -> set:
    """The names of the elements in the window at ``t``: per person, the last ``n`` of their elements by
    (timestamp, file order) with timestamp <= t."""
    held = set()
    for person in PEOPLE:
        theirs = [i for i, (ts, readings) in enumerate(stream) if ts <= t and any(p == person for p, _ in readings)]
        theirs.sort(key=lambda i: (stream[i][0], i))
        held.update(theirs[-n:] if theirs else [])
    return held


@pytest.mark.slow
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(element, min_size=1, max_size=8), st.integers(1, 3), st.lists(st.integers(0, 12), min_size=1,
                                                                             max_size=4, unique=True))
def test_partitioned_window_equals_its_definition(engine, tmp_path_factory, stream, n, times):
    lines = ["@prefix : <http://example.org/> . @prefix prov: <http://www.w3.org/ns/prov#> ."]
    for i, (ts, readings) in enumerate(stream):
        lines.append(f":g{i} {{ " + " ".join(f"{p} :isIn {r} . :g{i} :has {p} ." for p, r in readings) + " }")
        lines.append(f":g{i} prov:generatedAtTime {ts} .")
    path = tmp_path_factory.mktemp("partitioned") / "s.trig"
    path.write_text("\n".join(lines) + "\n")
    iri = f"{EX}P{next(_COUNTER)}"
    engine.add_stream(iri, path)
    q = P + (f"SELECT DISTINCT ?g FROM NAMED WINDOW :w ON <{iri}> [RANGE ELEMENTS {n} PARTITION BY :isIn] "
             "WHERE { WINDOW :w { ?g :has ?p } }")
    got = {r.ticks: {local(row["g"]) for row in r.rows} for r in engine.replay(q, times=sorted(times))}
    assert got == {t: {f":g{i}" for i in brute_force(stream, n, t)} for t in sorted(times)}, (stream, n)


# ------------------------------------------------------------------------------------------------ live


@pytest.mark.slow
def test_live_partitioned_window_equals_replay_and_its_view_names_the_key(spark, tmp_path):
    """The readings pushed in two batches: the live records are the replay's (the test above); the query's window
    view says what it counts and by which key (what the dashboard shows: "last 2 elements of each isIn")."""
    from rspark.engine.engine import Engine

    q = P + ("SELECT ?who (MAX(?t) - MIN(?t) AS ?elapsed) FROM NAMED WINDOW :w ON :readings "
             "[RANGE ELEMENTS 2 PARTITION BY :isIn] WHERE { WINDOW :w { ?who :isIn ?room "
             "BIND(timestamp(?who, :isIn, ?room) AS ?t) } } GROUP BY ?who HAVING (COUNT(*) = 2)")

    def rows(records) -> list:
        return [(r.ticks, sorted((local(row["who"]), row["elapsed"].lexical) for row in r.rows)) for r in records]

    lines = READINGS.splitlines()
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "readings")
        handle = eng.register(q, name="elapsed")
        for batch in (lines[1:4], lines[4:]):  # the readings at 1, 3, 4, then at 8, 9
            eng.push(EX + "readings", "\n".join(lines[:1] + batch) + "\n")
            assert eng.live.wait_idle(timeout=120)
        [window] = eng.live.describe_query("elapsed").windows
        assert window.parameters() == {"name": EX + "w", "stream": EX + "readings", "kind": "count", "range": None,
                                       "slide": None, "size": 2, "unit": "elements", "partition": EX + "isIn"}
        eng.live.close(flush=True)
        got = rows(handle.drain())
    # the replay's records (test_seed002_predicate_window_elapsed_time_between_two_consecutive_readings)
    assert got == [(1, []), (3, []), (4, [(":alice", "3")]), (8, [(":alice", "4")]),
                   (9, [(":alice", "4"), (":bob", "6")])]


# ------------------------------------------------------------------------------------------------ time windows


MIXED = READINGS + ":r6 { :sensor :temp 20 } :r6 prov:generatedAtTime 5 .\n"


def test_a_partitioned_time_window_holds_the_elements_with_a_key(spark, tmp_path):
    """Each person's time range, the union over the people: the readings in the range; the sensor's element at 5
    has no :isIn triple, so it is in no partition. By hand, (0, 5]: alice's r1 and r3, bob's r2; (5, 10]: alice's r4,
    bob's r5. Without PARTITION BY the sensor is there at 5."""
    from rspark.engine.engine import Engine

    path = tmp_path / "mixed.trig"
    path.write_text(MIXED)
    q = P + "SELECT DISTINCT ?s FROM NAMED WINDOW :w ON :mixed [RANGE 5 STEP 5{p}] WHERE {{ WINDOW :w {{ ?s ?p ?o }} }}"
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "mixed", path)
        assert table(eng.replay(q.format(p=" PARTITION BY :isIn"), until=10), "s") == [
            (5, [(":alice",), (":bob",)]), (10, [(":alice",), (":bob",)])]
        assert table(eng.replay(q.format(p=""), until=10), "s") == [
            (5, [(":alice",), (":bob",), (":sensor",)]), (10, [(":alice",), (":bob",)])]


def test_a_predicate_window_is_the_latest_reading_of_each_key_and_the_pattern(engine):
    """The requirements' predicate-based window: a person is in while their latest reading says room A, and out as
    soon as a later one says otherwise. By hand: 1 alice (A); 3 alice, bob (A); 4 bob (alice moved to B); 8 bob; 9
    nobody (bob moved to B)."""
    q = P + ("SELECT ?who FROM NAMED WINDOW :w ON :readings [RANGE ELEMENTS 1 PARTITION BY :isIn] "
             "WHERE { WINDOW :w { ?who :isIn :A } }")
    records = engine.replay(q)
    got = [(r.ticks, rows) for r, (_, rows) in zip(records, table(records, "who"))]
    assert got == [(1, [(":alice",)]), (3, [(":alice",), (":bob",)]), (4, [(":bob",)]), (8, [(":bob",)]), (9, [])]
