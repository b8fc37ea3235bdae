"""DESCRIBE in continuous queries: at each instant, the concise bounded description of the resources the query
binds (or names) there, read from the RSP-QL dataset's default graph at that instant: the static default graph and
the FROM STREAM windows' content (docs/language.md, "DESCRIBE"). Answers derived by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"
P = "PREFIX : <http://example.org/> "
T0, T1, T2 = "2016-03-01T13:00:00Z", "2016-03-01T13:01:00Z", "2016-03-01T13:02:00Z"
PEOPLE = """@prefix : <http://example.org/> .
:axel :name "Axel" ; :address [ :city "Galway" ; :zip [ :code "H91" ] ] .
:darko :name "Darko" .
:carol :name "Carol" .
"""


@pytest.fixture(scope="module")
def engine(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    people = tmp_path_factory.mktemp("describe") / "people.ttl"
    people.write_text(PEOPLE)
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", DATA / "social.trig")
        eng.load(people)
        yield eng


def described(records) -> list:
    """(time, sorted triples) with IRIs as local names and blank nodes as ``_``."""
    def local(term) -> str:
        text = term.n3()
        return "_" if text.startswith("_:") else text.replace("<" + EX, ":").replace(">", "")

    return [(r.time, sorted(tuple(local(t) for t in triple) for triple in r.triples)) for r in records]


AXEL = [(":axel", ":address", "_"), (":axel", ":name", '"Axel"'), ("_", ":city", '"Galway"'), ("_", ":zip", "_"),
        ("_", ":code", '"H91"')]


def test_describe_per_instant(engine):
    # social.trig in windows (c - 1 min, c]: at 13:00 e1 {axel, darko in RedRoom}; at 13:01 e2 {axel in BlueRoom},
    # e3 {minh in RedRoom}; at 13:02 e4, e5 (nobody in RedRoom). The people in RedRoom are described from the
    # static default graph (a named window's content is not in the default graph): axel with his address, its
    # blank nodes followed two hops; darko's name; minh has no description (an empty record, the default profile
    # writes one)
    q = P + ("DESCRIBE ?person FROM NAMED WINDOW :win ON :social [RANGE PT1M SLIDE PT1M] "
             "WHERE { WINDOW :win { ?person :isIn :RedRoom } }")
    assert described(engine.replay(q, until=T2)) == [
        (T0, sorted(AXEL + [(":darko", ":name", '"Darko"')])), (T1, []), (T2, [])]


def test_a_from_stream_window_is_in_the_default_graph_that_describes(engine):
    # FROM STREAM merges the window's content into the default graph: darko and minh (in room1 at 13:02) are
    # described by their stream triples there too, and darko by his static name; axel's :isIn :room2 is not about
    # them. The IRI :carol is described at every instant that has a solution.
    q = P + ("DESCRIBE ?who :carol FROM STREAM :social [RANGE PT1M SLIDE PT1M] WHERE { ?who :isIn :room1 }")
    carol = (":carol", ":name", '"Carol"')
    assert described(engine.replay(q, until=T2)) == [
        (T0, []), (T1, []),
        (T2, sorted([(":darko", ":isIn", ":room1"), (":darko", ":name", '"Darko"'), (":minh", ":isIn", ":room1"),
                     carol]))]


def test_describe_over_a_stream_read_with_no_window(engine):
    # stream-to-stream: at each element's timestamp, the people of that element in BlueRoom: axel at 13:00:20, with
    # his element's triple and his static description
    q = P + "DESCRIBE ?p FROM STREAM :social WHERE { ?p :isIn :BlueRoom }"
    assert described(engine.replay(q)) == [("2016-03-01T13:00:20Z", sorted(AXEL + [(":axel", ":isIn", ":BlueRoom")]))]


def test_istream_describes_what_is_newly_bound(engine):
    # ISTREAM compares the solutions: darko (bound at 13:00) is not described again while he stays bound
    q = P + ("REGISTER ISTREAM :d AS DESCRIBE ?person FROM NAMED WINDOW :win ON :social [RANGE PT2M SLIDE PT1M] "
             "WHERE { WINDOW :win { ?person :isIn :RedRoom } }")
    assert described(engine.replay(q, until=T2)) == [
        (T0, sorted(AXEL + [(":darko", ":name", '"Darko"')])), (T1, []), (T2, [])]
