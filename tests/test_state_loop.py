"""A query reading its own output stream (the W3C RSP CG document, "SPARQL without Fact": the room counts carried
from window to window through the stream that reports them): the loop reads its output at the instants before the
current one, is evaluated by rounds until its output settles, and a loop that does not settle in the rounds allowed
is an error that says so (rspark.spark.streaming.network)."""

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


def test_a_loop_that_does_not_settle_in_the_rounds_allowed_is_an_error(engine, monkeypatch):
    """The counts above settle in 4 rounds (the count of 9 depends on those of 6 and 3); with 3 rounds allowed the
    replay says so instead of giving the counts of an unsettled round."""
    from rspark.spark.streaming import network

    monkeypatch.setattr(network, "LOOP_ROUNDS", 3)
    with pytest.raises(RsparkError) as info:
        engine.replay(COUNTS, until=9)
    assert "did not settle in 3 rounds" in str(info.value)
    assert "<http://example.org/counts>" in str(info.value) or "counts" in str(info.value)
