"""A query reading its own output stream (the W3C RSP CG document, "SPARQL without Fact": the room counts carried
from window to window through the stream that reports them): the loop reads its output at the instants before the
current one, is evaluated by rounds until its output settles (moving a settled prefix on when the rounds allowed do
not settle it), and a loop whose output differs from one evaluation to the next is an error that says so
(rspark.spark.streaming.network)."""

from __future__ import annotations

import pytest

from rspark.errors import RsparkError

EX = "http://example.org/"
P = "PREFIX : <http://example.org/>\n"

ROOMS = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:e1 { :axel :enter :A . } :e1 prov:generatedAtTime 1 .
:e2 { :darko :enter :A . } :e2 prov:generatedAtTime 2 .
:e3 { :axel :leave :A . } :e3 prov:generatedAtTime 4 .
:e4 { :axel :enter :B . } :e4 prov:generatedAtTime 5 .
:e5 { :minh :enter :A . } :e5 prov:generatedAtTime 7 .
:e6 { :darko :leave :A . } :e6 prov:generatedAtTime 8 .
"""

# each room's count: the count it had (its own output, read back) plus those who entered minus those who left in the
# last 3 units; a room with no event keeps its count (it is among the rooms the counts window holds)
COUNTS = P + """REGISTER STREAM :counts AS
CONSTRUCT { ?room :count ?n }
FROM NAMED WINDOW :w ON :rooms [RANGE 3 STEP 3]
FROM NAMED WINDOW :c ON :counts [RANGE 4 STEP 3]
WHERE {
  { SELECT ?room (SUM(?d) AS ?delta)
    WHERE { { WINDOW :w { ?u :enter ?room } BIND(1 AS ?d) }
            UNION { WINDOW :w { ?u :leave ?room } BIND(-1 AS ?d) }
            UNION { WINDOW :c { ?room :count ?kept } BIND(0 AS ?d) } }
    GROUP BY ?room }
  OPTIONAL { WINDOW :c { ?room :count ?old } }
  BIND(COALESCE(?old, 0) + ?delta AS ?n)
}"""
READER = P + """SELECT ?room ?n FROM NAMED WINDOW :v ON :counts [RANGE 1 STEP 3]
WHERE { WINDOW :v { ?room :count ?n } }"""


def _local(term) -> str:
    return term.lexical if hasattr(term, "lexical") else term.n3().replace("<" + EX, ":").replace(">", "")


@pytest.fixture
def engine(spark, tmp_path):
    from rspark.engine.engine import Engine

    path = tmp_path / "rooms.trig"
    path.write_text(ROOMS)
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "rooms", path)
        yield eng


def test_rsp_cg_room_counts_carried_through_their_own_stream(engine):
    """By hand (windows (t-3, t] of events, (t-4, t] of counts before t): at 3, A gained 2 (axel, darko): A 2; at 6,
    A lost axel and B gained him: A 2 - 1 = 1, B 1; at 9, minh entered A and darko left: A 1, B 1. A query reading
    the counts outside the loop sees each instant's counts at that instant."""
    out = engine.replay([COUNTS, READER], names=["counts", "reader"], until=9)
    loop = [(r.time, sorted(tuple(_local(x) for x in t) for t in r.triples)) for r in out if r.query == EX + "counts"]
    assert loop == [
        (3, [(":A", ":count", "2")]),
        (6, [(":A", ":count", "1"), (":B", ":count", "1")]),
        (9, [(":A", ":count", "1"), (":B", ":count", "1")]),
    ]
    reader = [(r.time, sorted((_local(row["room"]), _local(row["n"])) for row in r.rows))
              for r in out if r.query == "reader"]
    assert reader == [(3, [(":A", "2")]), (6, [(":A", "1"), (":B", "1")]), (9, [(":A", "1"), (":B", "1")])]


def test_a_count_carried_further_than_the_rounds_moves_its_settled_prefix_on(engine, monkeypatch):
    """The count at 6 depends on the one at 3: a round agrees with the one before only from the third on, so with 2
    rounds allowed per step the rounds agree up to their first difference, that prefix is final, and the rounds go
    on from there: the same records."""
    from rspark.spark.streaming import network

    monkeypatch.setattr(network, "LOOP_ROUNDS", 2)
    out = engine.replay([COUNTS, READER], names=["counts", "reader"], until=6)
    reader = [(r.time, sorted((_local(row["room"]), _local(row["n"])) for row in r.rows))
              for r in out if r.query == "reader"]
    assert reader == [(3, [(":A", "2")]), (6, [(":A", "1"), (":B", "1")])]


def test_a_loop_whose_output_differs_from_one_evaluation_to_the_next_is_an_error(engine, monkeypatch):
    """RAND() in what a loop registers: its first instant reads nothing of the loop yet differs from round to round,
    so no round can agree with the one before: an error that says so, not a partial answer."""
    from rspark.spark.streaming import network

    monkeypatch.setattr(network, "LOOP_ROUNDS", 2)
    q = P + """REGISTER STREAM :r AS CONSTRUCT { :x :r ?v }
FROM NAMED WINDOW :w ON :rooms [RANGE 3 STEP 3]
FROM NAMED WINDOW :c ON :r [RANGE 4 STEP 3]
WHERE { WINDOW :w { ?u :enter ?room } OPTIONAL { WINDOW :c { :x :r ?old } } BIND(RAND() AS ?v) }"""
    with pytest.raises(RsparkError) as info:
        list(engine.replay(q, until=9))
    assert "does not settle" in str(info.value) and "RAND()" in str(info.value)


def test_the_room_counts_run_live_as_in_a_replay(spark, tmp_path, monkeypatch):
    """The loop registered live, its events pushed in three batches: each micro-batch's rounds start from what the
    one before settled (its output up to that horizon), and the records equal the replay's over the same events."""
    from rspark.engine.engine import Engine
    from rspark.spark.streaming import network

    path = tmp_path / "rooms.trig"
    path.write_text(ROOMS)
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "rooms", path)
        expected = [(r.query, r.time, sorted(map(str, r.triples or r.rows)))
                    for r in eng.replay([COUNTS, READER], names=["counts", "reader"])]
    assert [t for q, t, _ in expected if q == "reader"] == [3, 6]
    seeds = []
    evaluate_loop = network._evaluate_loop

    def spy(loop, known, evaluate_one, seed):
        seeds.append(None if seed is None else seed.settled)
        return evaluate_loop(loop, known, evaluate_one, seed)

    monkeypatch.setattr(network, "_evaluate_loop", spy)
    prefixes = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
    lines = ROOMS.splitlines()[2:]
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "rooms")
        handles = [eng.register(COUNTS, name="counts"), eng.register(READER, name="reader")]
        for batch in (lines[0:2], lines[2:4], lines[4:6]):
            eng.push(EX + "rooms", prefixes + "\n".join(batch) + "\n")
            assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        got = sorted(((r.query, r.time, sorted(map(str, r.triples or r.rows))) for h in handles for r in h.drain()),
                     key=lambda r: (r[1], r[0] != "counts"))
    assert got == expected
    assert seeds and seeds[0] is None and 4 in seeds  # the third batch's rounds started from the second's horizon
