"""Streams read with no window: stream-to-stream operators (the W3C RSP CG requirements, "S2S Operators").

A query over a stream declared without a window specification (``FROM NAMED WINDOW :win ON ex:social``, as the
requirements write it) reads each element alone at its timestamp, reports each element's results once (RSTREAM
unless it names another operator, no record for an element with no result) and keeps no element in live mode once
its instant is reported. Under an ``epsparql-*`` profile such a stream is read through the landmark window instead.
An aggregate, an event pattern or EP-SPARQL's operators over it, and COMPUTED EVERY with no window at all, are
refused before Spark starts.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.rsp.policies import R2S, ReportPolicy
from rspark.rsp.profiles import get_profile
from rspark.rsp.report import instants_after, report_policies, stream_operator
from rspark.rsp.windows import ElementWindow, LandmarkWindow, resolve_window
from rspark.syntax.translate import QueryError, compile_query, ensure_evaluable
from tests.test_replay_differential import oracle_rows, rspark_rows, trig

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"
P = "PREFIX : <http://example.org/> "
T = ["2016-03-01T13:00:00Z", "2016-03-01T13:00:20Z", "2016-03-01T13:00:50Z", "2016-03-01T13:01:10Z",
     "2016-03-01T13:01:40Z"]


# ------------------------------------------------------------------------------------------------ the model


def test_a_stream_read_with_no_window_is_read_element_by_element_except_under_epsparql():
    from rspark.model.time import Timeline

    tl = Timeline.numeric()
    for name in ("default", "csparql", "cqels", "sparqlstream", "rsp4j", "rspql-star"):
        rw = resolve_window(None, get_profile(name), tl, first_ts=3)
        assert rw == ElementWindow(), name
        assert rw.content_bounds(7) == (7, 7)
        # the report policy is the window's own, whatever the profile's (csparql: window close + non-empty)
        assert report_policies(name, rw) == {ReportPolicy.CONTENT_CHANGE}, name
        assert stream_operator(None, name, [rw]) is R2S.RSTREAM  # even where the profile's is ISTREAM (cqels)
        assert stream_operator(R2S.ISTREAM, name, [rw]) is R2S.ISTREAM
    assert resolve_window(None, get_profile("epsparql-unrestricted"), tl, first_ts=3) == LandmarkWindow(0)
    # beside a window, the profile's operator stands
    assert stream_operator(None, "cqels", [ElementWindow(), LandmarkWindow(0)]) is R2S.ISTREAM


def test_its_instants_are_the_element_timestamps_found_on_the_driver():
    class Facts:
        window = ElementWindow()
        bounds = (2, 9)
        stamps = [2, 2, 5, 9]

    assert instants_after([Facts()], "csparql", None, 9) == [2, 5, 9]
    assert instants_after([Facts()], "csparql", 2, 8) == [5]


# ------------------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize(("query", "construct", "where"), [
    ("SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :s WHERE { WINDOW :w { ?x :p ?y } }",
     "COUNT over a stream read with no window", (1, 39)),
    ("SELECT ?x FROM NAMED WINDOW :w ON :s WHERE { WINDOW :w { ?x :p ?y } } GROUP BY ?x HAVING (SUM(?y) > 2)",
     "SUM over a stream read with no window", (1, 32)),
    ("SELECT ?a FROM NAMED WINDOW :w ON :s EVENT ON :w { ?a :p ?b } AS E1 WHERE { MATCH { E1 } }",
     f"EVENT E1 ON <{EX}w>, a window declared with no window specification", (1, 97)),
    ("SELECT ?a FROM STREAM :s WHERE { { ?a :p ?b } SEQ { ?b :q ?c } }",
     f"EP-SPARQL operators or interval functions over the stream <{EX}s>, read with no window", (1, 47)),
    ("REGISTER RSTREAM :out COMPUTED EVERY 5 AS SELECT ?a FROM STREAM :s WHERE { ?a :p ?b }",
     "COMPUTED EVERY on a query whose streams are read with no window", (1, 74)),
])
def test_what_needs_a_window_is_refused_with_its_position(query, construct, where):
    plan = compile_query(P + query)
    with pytest.raises(QueryError) as err:
        ensure_evaluable(plan, continuous=True)
    assert str(err.value).startswith(f"<query>:{where[0]}:{where[1]}: not supported: {construct}: a stream read "
                                     "with no window is read element by element, each element alone at its "
                                     "timestamp (stream-to-stream)")
    assert (err.value.line, err.value.column) == where
    if "EVERY" not in construct:  # under EP-SPARQL's profile the stream is read through its landmark window
        ensure_evaluable(plan, continuous=True, profile="epsparql-unrestricted")


def test_aggregates_over_a_window_beside_it_are_refused_too_and_over_windows_alone_are_not():
    mixed = compile_query(P + "SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :s FROM NAMED WINDOW :v ON :t "
                              "[RANGE 5] WHERE { WINDOW :v { ?x :p ?y } }")
    with pytest.raises(QueryError, match="COUNT over a stream read with no window"):
        ensure_evaluable(mixed, continuous=True)
    windowed = compile_query(P + "SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :v ON :t [RANGE 5] "
                                 "WHERE { WINDOW :v { ?x :p ?y } }")
    ensure_evaluable(windowed, continuous=True)


def test_the_cli_refuses_an_aggregate_over_a_stream_with_no_window_before_spark_starts(tmp_path, capsys):
    from rspark.cli import main

    q = tmp_path / "q.rq"
    q.write_text(P + "\nSELECT (COUNT(*) AS ?n) FROM STREAM :social WHERE { ?x :isIn ?r }\n")
    code = main(["replay", str(q), "--stream", f"{EX}social={DATA / 'social.trig'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{q}:2:8: not supported: COUNT over a stream read with no window" in err
    assert f"give the stream <{EX}social> a window (e.g. [RANGE PT1M], or [LANDMARK] for the whole stream)" in err


def test_explain_says_a_stream_is_read_with_no_window(tmp_path, capsys):
    from rspark.cli import main

    q = tmp_path / "q.rq"
    q.write_text(P + "SELECT ?r FROM NAMED WINDOW :win ON :social WHERE { WINDOW :win { :axel :isIn ?r } }\n")
    assert main(["explain", str(q)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "; window <http://example.org/win> reads <http://example.org/social> with no window: each element alone, "
        "reported at its timestamp (stream-to-stream)")
    assert main(["explain", "--profile", "epsparql-recent", str(q)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "; window <http://example.org/win> on <http://example.org/social> reports: content-change "
        "(profile epsparql-recent)")


# ------------------------------------------------------------------------------------------------ replay

# social.trig (the requirements' running example): e1 13:00:00 {axel, darko in RedRoom}; e2 13:00:20 {axel in
# BlueRoom}; e3 13:00:50 {minh in RedRoom}; e4 13:01:10 {darko in room1}; e5 13:01:40 {axel in room2, minh in
# room1}. With no window each element is read alone at its timestamp.


@pytest.fixture(scope="module")
def social(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", DATA / "social.trig")
        eng.load(DATA / "degrees.ttl", graph=EX + "degrees")
        yield eng


def table(records, *names) -> list:
    def local(term) -> str:
        return term.n3().replace("<" + EX, ":").replace(">", "") if term is not None else "-"

    return [(r.time, sorted(tuple(local(row.get(n)) for n in names) for row in r.rows)) for r in records]


WHO_IS_WHERE = P + "SELECT ?room ?person FROM NAMED WINDOW :win ON :social WHERE { WINDOW :win {?person :isIn ?room} }"
AXEL_FILTER = P + ("SELECT ?room FROM NAMED WINDOW :win ON :social WHERE { WINDOW :win { ?person :isIn ?room . "
                   "FILTER(?person = :axel) } }")
AXEL_BGP = P + "SELECT ?room FROM NAMED WINDOW :win ON :social WHERE { WINDOW :win { :axel :isIn ?room . } }"


@pytest.mark.parametrize("profile", ["default", "csparql", "cqels", "sparqlstream"])
def test_seed002_s2s_select_reports_each_element_once_under_every_profile(social, profile):
    # the requirements' S2S SELECT: who is in which room, each element's people when it arrives
    assert table(social.replay(WHO_IS_WHERE, profile=profile), "person", "room") == [
        (T[0], [(":axel", ":RedRoom"), (":darko", ":RedRoom")]),
        (T[1], [(":axel", ":BlueRoom")]),
        (T[2], [(":minh", ":RedRoom")]),
        (T[3], [(":darko", ":room1")]),
        (T[4], [(":axel", ":room2"), (":minh", ":room1")]),
    ]


@pytest.mark.parametrize("query", [AXEL_FILTER, AXEL_BGP], ids=["filter", "bgp"])
def test_seed002_s2s_filter_and_its_bgp_form_give_axels_rooms(social, query):
    # the requirements' S2S FILTER and its BGP alternative: the elements without axel give no record
    assert table(social.replay(query), "room") == [(T[0], [(":RedRoom",)]), (T[1], [(":BlueRoom",)]),
                                                   (T[4], [(":room2",)])]


def test_given_instants_read_the_elements_stamped_then_only(social):
    # --times: the elements at 13:00:00 and 13:00:50 (not the one at 13:00:20 between them), none at 13:00:30
    got = table(social.replay(WHO_IS_WHERE, times=[T[0], "2016-03-01T13:00:30Z", T[2]]), "person", "room")
    assert got == [(T[0], [(":axel", ":RedRoom"), (":darko", ":RedRoom")]), (T[2], [(":minh", ":RedRoom")])]


def test_an_element_is_read_alone_and_joined_with_static_data(social):
    # no join across elements (axel's rooms at 13:00:00 and 13:00:20 never meet), but a static graph joins each one
    pairs = P + ("SELECT ?a ?b FROM STREAM :social WHERE { :axel :isIn ?a . :axel :isIn ?b FILTER(?a != ?b) }")
    assert social.replay(pairs) == []
    degrees = P + ("SELECT ?person ?degree FROM NAMED WINDOW :win ON :social FROM NAMED :degrees WHERE { "
                   "WINDOW :win { ?person :isIn :RedRoom } GRAPH :degrees { ?person :hasDegree ?degree } }")
    # degrees.ttl: darko a doctorate, minh a master (axel, in RedRoom at 13:00:00 too, has none)
    assert table(social.replay(degrees), "person", "degree") == [(T[0], [(":darko", ":doctorate")]),
                                                                 (T[2], [(":minh", ":master")])]


def test_istream_written_in_the_query_compares_consecutive_elements(social):
    # RSTREAM by default; a query that names ISTREAM gets the rooms not in the previous element's answer: at 13:01:40
    # room1 was darko's at 13:01:10, so only room2 is new (axel's and darko's RedRoom: two solutions)
    rooms = P + "SELECT %s ?room FROM STREAM :social WHERE { ?p :isIn ?room }"
    assert table(social.replay(rooms % "", profile="cqels"), "room")[-1] == (T[4], [(":room1",), (":room2",)])
    assert table(social.replay(rooms % "ISTREAM"), "room") == [
        (T[0], [(":RedRoom",), (":RedRoom",)]), (T[1], [(":BlueRoom",)]), (T[2], [(":RedRoom",)]),
        (T[3], [(":room1",)]), (T[4], [(":room2",)])]


def test_construct_over_a_stream_with_no_window_maps_each_element(social):
    q = P + "CONSTRUCT { ?room :holds ?p } FROM STREAM :social WHERE { ?p :isIn ?room FILTER(?room != :RedRoom) }"
    got = [(r.time, sorted((s.value[len(EX):], o.value[len(EX):]) for s, _, o in r.triples))
           for r in social.replay(q)]
    assert got == [(T[1], [("BlueRoom", "axel")]), (T[3], [("room1", "darko")]),
                   (T[4], [("room1", "minh"), ("room2", "axel")])]


# ------------------------------------------------------------------------------------------------ property test

S2S_QUERIES = [
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?o } }",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?x . ?x :q ?o } }",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?o OPTIONAL { ?o :q ?z } FILTER(!BOUND(?z)) } }",
    "SELECT DISTINCT ?o {w} WHERE { WINDOW :w { { ?s :p ?o } UNION { ?o :q ?s } } }",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?o MINUS { ?s :q ?any } } }",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s ?p ?o FILTER(isNumeric(?o) && ?o > 1) } }",
]
NODES = [f":a{i}" for i in range(4)]
OBJECTS = NODES + ["0", "1", "2", "5", "2.5", '"x"']
triples = st.tuples(st.sampled_from(NODES), st.sampled_from([":p", ":q"]), st.sampled_from(OBJECTS))
elements = st.lists(st.tuples(st.integers(0, 12), st.lists(triples, min_size=1, max_size=3)), min_size=1, max_size=8)
_COUNTER = itertools.count()


def per_instant_oracle(stream: list, query: str) -> list:
    """Each element timestamp, in order, with pyoxigraph's answer over the union of the elements stamped so; the
    instants with no answer left out (no record)."""
    out = []
    for t in sorted({ts for ts, _ in stream}):
        store = ox.Store()
        text = "@prefix : <http://example.org/> .\n" + "\n".join(
            f"{s} {p} {o} ." for ts, graph in stream if ts == t for s, p, o in graph)
        store.load(text.encode(), format=ox.RdfFormat.TURTLE)
        rows = oracle_rows(query, store)
        if rows:
            out.append((t, rows))
    return out


@pytest.fixture(scope="module")
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        yield eng


@pytest.mark.slow
@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(elements, st.sampled_from(range(len(S2S_QUERIES))))
def test_s2s_replay_equals_pyoxigraph_on_each_instants_elements(engine, tmp_path_factory, stream, qi):
    path = tmp_path_factory.mktemp("stream") / "s.trig"
    path.write_text(trig(stream), encoding="utf-8")
    engine.clear()
    iri = f"{EX}S{next(_COUNTER)}"
    engine.add_stream(iri, path)
    query = S2S_QUERIES[qi]
    records = engine.replay(P + query.replace("{w}", f"FROM NAMED WINDOW :w ON <{iri}>"))
    got = [(rec.ticks, rspark_rows(rec, list(rec.vars))) for rec in records]
    assert got == [(t, Counter(rows)) for t, rows in per_instant_oracle(stream, query)], (query, stream)


# ------------------------------------------------------------------------------------------------ live


def _social_batches() -> list[str]:
    text = (DATA / "social.trig").read_text()
    head = [line for line in text.splitlines() if line.startswith("@prefix")]
    body = [line for line in text.splitlines() if line and not line.startswith(("@", "#"))]
    by_element: dict[str, list[str]] = {}
    for line in body:
        by_element.setdefault(line.split()[0], []).append(line)
    order = [":e1", ":e2", ":e3", ":e4", ":e5"]
    return ["\n".join(head + by_element[e]) + "\n" for e in order]


@pytest.mark.slow
def test_live_s2s_equals_replay_and_keeps_no_element(spark, tmp_path):
    """Pushed one element a batch, the live records are the replay's, and once each element's instant is
    reported the stream's buffer holds nothing (no element is read again)."""
    from rspark.engine.engine import Engine

    queries = {"where": WHO_IS_WHERE, "axel": AXEL_FILTER}
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", DATA / "social.trig")
        expected = {name: table(eng.replay(q, names=[name]), "person", "room") for name, q in queries.items()}
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "social")
        handles = {name: eng.register(q, name=name) for name, q in queries.items()}
        held = []
        for batch in _social_batches():
            eng.push(EX + "social", batch)
            assert eng.live.wait_idle(timeout=120)
            buffer = eng.live.streams[EX + "social"].buffer
            held.append(len(buffer.driver_stamps()))
        eng.live.close(flush=True)
        got = {name: table(h.drain(), "person", "room") for name, h in handles.items()}
        assert len(eng.live.streams[EX + "social"].buffer.driver_stamps()) == 0
    assert got == expected
    # after each batch only the newest element waits (at the watermark, it is still on time) for its instant
    assert held == [1, 1, 1, 1, 1]
