"""C-SPARQL timestamp(s, p, o) (docs/language.md): the timestamp of the most recent occurrence of that triple in the
active window, unbound when none."""

from __future__ import annotations

from pathlib import Path

import pytest

from rspark.errors import NotSupportedError

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"
P = "PREFIX : <http://example.org/> "
DT = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"
INT = "^^<http://www.w3.org/2001/XMLSchema#integer>"


@pytest.fixture(scope="module")
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", DATA / "fig1.trig")
        eng.add_stream(EX + "social", DATA / "social.trig")
        yield eng


def local(term) -> str:
    n3 = term.n3()
    return ":" + n3[len(EX) + 1:-1] if n3.startswith("<" + EX) else n3


def rows(outputs, *names) -> list:
    return [(rec.time, sorted(tuple(local(r[n]) if n in r else "-" for n in names) for r in rec.rows))
            for rec in outputs]


def test_timestamp_of_each_triple_in_a_from_stream_window(engine):
    # social.trig: e2 13:00:20 {axel in BlueRoom}, e3 13:00:50 {minh in RedRoom} are the window (13:00, 13:01]
    q = P + ("SELECT ?who ?room ?t FROM STREAM :social [RANGE 1m STEP 1m] "
             "WHERE { ?who :isIn ?room BIND(timestamp(?who, :isIn, ?room) AS ?t) }")
    [rec] = engine.replay(q, times=["2016-03-01T13:01:00Z"])
    assert rows([rec], "who", "room", "t")[0][1] == [
        (":axel", ":BlueRoom", f'"2016-03-01T13:00:20Z"{DT}'),
        (":minh", ":RedRoom", f'"2016-03-01T13:00:50Z"{DT}'),
    ]


def test_naive_sequence_with_timestamp_comparisons(engine):
    # C-SPARQL's way to say "then": who moved from one room to another within the last 2 minutes (at 13:02)
    q = P + ("SELECT ?who ?from ?to FROM STREAM :social [RANGE 2m STEP 1m] WHERE { "
             "?who :isIn ?from . ?who :isIn ?to "
             "FILTER(timestamp(?who, :isIn, ?from) < timestamp(?who :isIn ?to)) }")
    [rec] = engine.replay(q, times=["2016-03-01T13:02:00Z"])
    assert rows([rec], "who", "from", "to")[0][1] == [(":axel", ":BlueRoom", ":room2"), (":minh", ":RedRoom", ":room1")]


def test_numeric_stream_named_window_and_the_latest_occurrence(engine):
    # fig1: G3@6 {b1 q c1, b2 q c2}, G4@8 {b2 q c2}, G5@10 {a3 p b3, b1 q c1}; at 12 [RANGE 5 SLIDE 1] holds G4, G5;
    # at 10 it holds G3..G5 and :b2 :q :c2 occurs at 6 and 8: the latest is 8
    q = P + ("SELECT ?s ?o ?t FROM NAMED WINDOW :w ON :S [RANGE 5 SLIDE 1] "
             "WHERE { WINDOW :w { ?s :q ?o BIND(timestamp(?s, :q, ?o) AS ?t) } }")
    assert rows(engine.replay(q, times=[10, 12]), "s", "o", "t") == [
        (10, [(":b1", ":c1", f'"10"{INT}'), (":b2", ":c2", f'"8"{INT}')]),
        (12, [(":b1", ":c1", f'"10"{INT}'), (":b2", ":c2", f'"8"{INT}')]),
    ]
    # a triple the window does not hold has no timestamp; constants work as arguments
    q = P + ("SELECT ?t ?u FROM NAMED WINDOW :w ON :S [RANGE 5 SLIDE 1] WHERE { WINDOW :w { "
             ":a3 :p ?b BIND(timestamp(:a1, :p, :b1) AS ?t) BIND(timestamp(:a3, :p, ?b) AS ?u) } }")
    assert rows(engine.replay(q, times=[12]), "t", "u") == [(12, [("-", f'"10"{INT}')])]


def test_timestamp_outside_a_window_is_refused(engine):
    q = P + ("SELECT ?t FROM NAMED WINDOW :w ON :S [RANGE 5 SLIDE 1] "
             "WHERE { WINDOW :w { ?s :q ?o } BIND(timestamp(?s, :q, ?o) AS ?t) }")
    with pytest.raises(NotSupportedError, match="timestamp\\(\\) outside a stream window"):
        engine.replay(q, times=[12])


def test_seed002_seq_in_csparql_with_timestamps(spark, tmp_path):
    # the W3C RSP CG requirements "SEQ" in C-SPARQL (tests/queries/seeds/s002_27_seq_csparql.rq, run as written): rooms
    # where Axel and Darko were together, and then together in another room of the same level
    from rspark.engine.engine import Engine

    (tmp_path / "s1.trig").write_text(
        "@prefix : <http://example.org/> . @prefix prov: <http://www.w3.org/ns/prov#> . "
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
        ':q1 { :axel :isIn :RedRoom . :darko :isIn :RedRoom } '
        ':q1 prov:generatedAtTime "2016-03-01T13:00:00Z"^^xsd:dateTime .\n'
        ':q2 { :axel :isIn :BlueRoom . :darko :isIn :BlueRoom } '
        ':q2 prov:generatedAtTime "2016-03-01T13:01:00Z"^^xsd:dateTime .\n'
        ':q3 { :axel :isIn :Kitchen } :q3 prov:generatedAtTime "2016-03-01T13:02:00Z"^^xsd:dateTime .\n',
        encoding="utf-8")
    (tmp_path / "floor.ttl").write_text(
        "@prefix : <http://example.org/> . @prefix lv: <http://example.org/lv#> . "
        ":RedRoom lv:sameLevelWith :BlueRoom . "
        ":BlueRoom lv:sameLevelWith :RedRoom . :BlueRoom lv:sameLevelWith :Kitchen .", encoding="utf-8")
    query = (Path(__file__).parent / "queries" / "seeds" / "s002_27_seq_csparql.rq").read_text(encoding="utf-8")
    with Engine(spark=spark) as eng:
        eng.add_stream("S1", tmp_path / "s1.trig")
        eng.load(tmp_path / "floor.ttl", graph="http://deri.org/floorplan/")
        out = eng.replay(query, times=["2016-03-01T13:00:30Z", "2016-03-01T13:01:30Z", "2016-03-01T13:05:30Z"])
    assert rows(out, "room_x", "room_y") == [
        ("2016-03-01T13:00:30Z", []),
        ("2016-03-01T13:01:30Z", [(":RedRoom", ":BlueRoom")]),
        ("2016-03-01T13:05:30Z", []),  # RedRoom has left the 5-minute window
    ]
