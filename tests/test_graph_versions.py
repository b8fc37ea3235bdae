"""Background graphs that change over time (RSP-QL's time-varying graph G(t); issue: RSP-QL complete, item 4).

A graph loaded in versions (``Engine.load(path, graph=..., valid_from=t)``, ``--graph-version IRI=PATH@t``) is read
by a continuous query at instant t as the version valid then: the one with the latest start at or before t, a load
with no instant being the version from the beginning. A version replaces the graph. A static query reads each
graph's latest version.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.errors import NotSupportedError, RsparkError
from rspark.rsp.versions import FIRST, LAST, valid_at, version_spans
from tests.test_replay_differential import oracle_rows, rspark_rows, trig

EX = "http://example.org/"
P = "PREFIX : <http://example.org/> "


# ------------------------------------------------------------------------------------------------ the model


def test_a_version_is_read_from_its_start_until_the_next_start_of_its_graph():
    spans = version_spans([("g", None), ("g", 4), ("h", 2), ("g", 9), ("g", 4), ("h", 2)])
    assert spans == [(FIRST, 4), (4, 9), (2, LAST), (9, LAST), (4, 9), (2, LAST)]
    assert valid_at(spans, 3) == [0, 2, 5]
    assert valid_at(spans, 4) == [1, 2, 4, 5]
    assert valid_at(spans, 1) == [0]  # graph h has no version yet: empty
    assert valid_at(spans, 9) == [2, 3, 5]


# ------------------------------------------------------------------------------------------------ a worked example

STREAM = [(1, [(":alice", ":in", ":room1")]), (3, [(":bob", ":in", ":room2")]),
          (5, [(":alice", ":in", ":room2")]), (7, [(":carol", ":in", ":room1")])]
FLOORS_0 = "@prefix : <http://example.org/> . :room1 :floor 1 . :room2 :floor 2 ."
FLOORS_4 = "@prefix : <http://example.org/> . :room1 :floor 3 . :room2 :floor 4 ."
FLOORS_6 = "@prefix : <http://example.org/> . :room2 :floor 6 ."
WINDOW = "FROM NAMED WINDOW :w ON :s [RANGE 2 STEP 2] "


@pytest.fixture(scope="module")
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        yield eng


def _files(tmp_path, **texts):
    out = {}
    for name, text in texts.items():
        path = tmp_path / f"{name}.ttl"
        path.write_text(text, encoding="utf-8")
        out[name] = path
    return out


def _table(records, *names) -> list:
    return [(r.ticks, sorted(tuple(row[n].lexical if hasattr(row[n], "lexical") else row[n].value.rsplit("/", 1)[1]
                                   for n in names) for row in r.rows)) for r in records]


def test_a_query_reads_the_version_valid_at_each_instant(engine, tmp_path):
    """At 2 the window holds alice in room1 (floor 1, the version from the beginning); at 4 bob in room2, read in
    the version from 4 (floor 4); at 6 alice in room2, read in the version from 6 (floor 6); at 8 carol in room1:
    the version from 6 has no floor for room1."""
    f = _files(tmp_path, v0=FLOORS_0, v4=FLOORS_4, v6=FLOORS_6)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    engine.clear()
    engine.add_stream(EX + "s", tmp_path / "s.trig")
    engine.load(f["v0"], graph=EX + "rooms")
    engine.load(f["v4"], graph=EX + "rooms", valid_from=4)
    engine.load(f["v6"], graph=EX + "rooms", valid_from="6")
    named = P + "SELECT ?who ?floor " + WINDOW + \
        "WHERE { WINDOW :w { ?who :in ?room } GRAPH :rooms { ?room :floor ?floor } }"
    expected = [(2, [("alice", "1")]), (4, [("bob", "4")]), (6, [("alice", "6")]), (8, [])]
    assert _table(engine.replay(named, until=8), "who", "floor") == expected
    # GRAPH ?g lists the graph with the version's triples
    some = P + "SELECT ?g ?floor " + WINDOW + \
        "WHERE { WINDOW :w { ?who :in ?room } GRAPH ?g { ?room :floor ?floor } }"
    assert _table(engine.replay(some, until=8), "g", "floor") == \
        [(2, [("rooms", "1")]), (4, [("rooms", "4")]), (6, [("rooms", "6")]), (8, [])]
    # FROM <rooms> makes the versions the default graph's
    merged = P + "SELECT ?who ?floor FROM <http://example.org/rooms> " + WINDOW + \
        "WHERE { WINDOW :w { ?who :in ?room } ?room :floor ?floor }"
    assert _table(engine.replay(merged, until=8), "who", "floor") == expected
    # a static query reads the latest version
    rows = engine.sparql(P + "SELECT ?r ?f { GRAPH :rooms { ?r :floor ?f } }").to_json()["results"]["bindings"]
    assert [(b["r"]["value"], b["f"]["value"]) for b in rows] == [(EX + "room2", "6")]


def test_the_default_graph_may_change_over_time_and_a_describe_reads_its_version(engine, tmp_path):
    f = _files(tmp_path, v0=FLOORS_0, v4=FLOORS_4)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    engine.clear()
    engine.add_stream(EX + "s", tmp_path / "s.trig")
    engine.load(f["v0"], valid_from=0)
    engine.load(f["v4"], valid_from=4)
    query = P + "SELECT ?who ?floor " + WINDOW + "WHERE { WINDOW :w { ?who :in ?room } ?room :floor ?floor }"
    assert _table(engine.replay(query, until=6), "who", "floor") == [(2, [("alice", "1")]), (4, [("bob", "4")]),
                                                                     (6, [("alice", "4")])]
    describe = P + "DESCRIBE ?room " + WINDOW + "WHERE { WINDOW :w { ?who :in ?room } }"
    got = [(r.ticks, sorted((s.value, o.lexical) for s, _, o in r.triples)) for r in engine.replay(describe, until=4)]
    assert got == [(2, [(EX + "room1", "1")]), (4, [(EX + "room2", "4")])]


def test_a_graph_with_dated_versions_only_is_empty_before_its_first(engine, tmp_path):
    f = _files(tmp_path, v4=FLOORS_4)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    engine.clear()
    engine.add_stream(EX + "s", tmp_path / "s.trig")
    engine.load(f["v4"], graph=EX + "rooms", valid_from=4)
    query = P + "SELECT ?who ?floor " + WINDOW + \
        "WHERE { WINDOW :w { ?who :in ?room } OPTIONAL { GRAPH :rooms { ?room :floor ?floor } } }"
    records = engine.replay(query, until=4)
    assert [(r.ticks, [(row["who"].value, row.get("floor")) for row in r.rows]) for r in records][0] == \
        (2, [(EX + "alice", None)])


def test_bad_versions_are_named(engine, tmp_path):
    f = _files(tmp_path, v0=FLOORS_0)
    (tmp_path / "d.trig").write_text("@prefix : <http://example.org/> . :g { :a :b :c }", encoding="utf-8")
    with pytest.raises(RsparkError, match=r"valid_from='soon': not a time: 'soon'"):
        engine.load(f["v0"], graph=EX + "rooms", valid_from="soon")
    with pytest.raises(RsparkError, match=r"a version of a graph is one graph: load it from a triple format"):
        engine.load(tmp_path / "d.trig", graph=EX + "rooms", valid_from=3)
    with pytest.raises(RsparkError, match=r"valid_from=\[1\]: a number or an ISO 8601 date-time"):
        engine.load(f["v0"], valid_from=[1])


def test_a_construct_rule_over_a_graph_with_versions_is_refused(engine, tmp_path):
    f = _files(tmp_path, v0=FLOORS_0, v4=FLOORS_4)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    engine.clear()
    engine.add_stream(EX + "s", tmp_path / "s.trig")
    engine.load(f["v0"])
    engine.load(f["v4"], valid_from=4)
    rule = P + "CONSTRUCT { ?who :on ?floor } FROM STREAM :s WHERE { { ?who :in ?room } SEQ { ?x :in ?room } " \
        "?room :floor ?floor }"
    query = P + "SELECT ?who FROM STREAM :s [RANGE 2 STEP 2] WHERE { ?who :on ?f }"
    with pytest.raises(NotSupportedError, match="a CONSTRUCT rule over graphs that change over time"):
        engine.replay([rule, query], profile="epsparql-unrestricted")


def test_a_bgp_window_reads_named_graph_versions_and_refuses_default_graph_ones(engine, tmp_path):
    f = _files(tmp_path, v0=FLOORS_0, v4=FLOORS_4)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    engine.clear()
    engine.add_stream(EX + "s", tmp_path / "s.trig")
    engine.load(f["v0"], graph=EX + "rooms")
    engine.load(f["v4"], graph=EX + "rooms", valid_from=4)
    query = P + "SELECT ?who ?floor FROM NAMED WINDOW :w ON :s [RANGE BGP 1] " \
        "WHERE { WINDOW :w { ?who :in ?room } GRAPH :rooms { ?room :floor ?floor } }"
    # the last match at each element: alice in room1 (1), bob in room2 (from 4 on: 4), alice in room2 (4)
    assert _table(engine.replay(query, times=[1, 3, 5]), "who", "floor") == \
        [(1, [("alice", "1")]), (3, [("bob", "2")]), (5, [("alice", "4")])]
    engine.load(f["v4"], valid_from=4)
    with pytest.raises(NotSupportedError, match=r"a \[RANGE BGP n\] window over a default graph that changes"):
        engine.replay(query, times=[1])


# ------------------------------------------------------------------------------------------------ property

QUERIES = [
    "SELECT ?who ?f {w} WHERE { WINDOW :w { ?who :in ?r } GRAPH :rooms { ?r :floor ?f } }",
    "SELECT ?who ?n {w} WHERE { WINDOW :w { ?who :in ?r } ?r :near ?n }",
    "SELECT ?who ?g ?f {w} WHERE { WINDOW :w { ?who :in ?r } GRAPH ?g { ?r :floor ?f } }",
    "SELECT ?r ?f ?n {w} WHERE { GRAPH :rooms { ?r :floor ?f } OPTIONAL { ?r :near ?n } }",
]
people, rooms = [":a", ":b", ":c"], [":r1", ":r2", ":r3"]
elements = st.lists(st.tuples(st.integers(1, 12), st.lists(st.tuples(st.sampled_from(people), st.just(":in"),
                                                                     st.sampled_from(rooms)), min_size=1, max_size=2)),
                    min_size=1, max_size=6)
floors = st.lists(st.tuples(st.sampled_from(rooms), st.just(":floor"), st.sampled_from(["1", "2", "3"])),
                  max_size=3)
nears = st.lists(st.tuples(st.sampled_from(rooms), st.just(":near"), st.sampled_from(rooms)), max_size=3)
starts = st.one_of(st.none(), st.integers(0, 12))
versions = st.fixed_dictionaries({
    "rooms": st.lists(st.tuples(starts, floors), min_size=1, max_size=3),
    "": st.lists(st.tuples(starts, nears), max_size=3),
    "extra": st.lists(st.tuples(st.none(), floors), max_size=1),
})
_COUNTER = itertools.count()


def _valid(graph_versions: list, t: int) -> list:
    """The triples of the version valid at ``t`` (the loads of the latest start at or before t)."""
    begin = [FIRST if s is None else s for s, _ in graph_versions]
    before = [b for b in begin if b <= t]
    if not before:
        return []
    latest = max(before)
    return [tr for b, (_, triples) in zip(begin, graph_versions) if b == latest for tr in triples]


def _oracle(stream, graphs, query: str, t: int) -> Counter:
    store = ox.Store()
    lines = ["@prefix : <http://example.org/> ."]
    lines += [f":win {{ {s} {p} {o} . }}" for ts, g in stream if t - 4 < ts <= t for s, p, o in g]
    for name, vs in graphs.items():
        for s, p, o in _valid(vs, t):
            lines.append(f"{s} {p} {o} ." if name == "" else f":{name} {{ {s} {p} {o} . }}")
    store.load("\n".join(lines).encode(), format=ox.RdfFormat.TRIG)
    plain = query.replace("{w} ", "").replace("WINDOW :w", "GRAPH :win")
    if "GRAPH ?g" in plain:  # the window is no named graph of the query's dataset
        plain = plain.replace("} }", "} FILTER(?g != :win) }", 1)
    return oracle_rows(plain.replace(" WHERE ", " WHERE "), store)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(elements, versions, st.sampled_from(range(len(QUERIES))))
def test_replay_reads_the_version_pyoxigraph_reads_at_each_instant(engine, tmp_path_factory, stream, graphs, qi):
    folder = tmp_path_factory.mktemp("versions")
    (folder / "s.trig").write_text(trig(stream), encoding="utf-8")
    engine.clear()
    iri = f"{EX}S{next(_COUNTER)}"
    engine.add_stream(iri, folder / "s.trig")
    for name, vs in graphs.items():
        for i, (since, triples) in enumerate(vs):
            path = folder / f"{name or 'default'}{i}.ttl"
            path.write_text("@prefix : <http://example.org/> .\n" + "".join(f"{s} {p} {o} .\n"
                                                                            for s, p, o in triples))
            engine.load(path, graph=EX + name if name else None, valid_from=since)
    query = QUERIES[qi]
    times = [2, 4, 6, 8, 10, 12]
    records = engine.replay(P + query.replace("{w}", f"FROM NAMED WINDOW :w ON <{iri}> [RANGE 4 STEP 2]"),
                            times=times)
    got = {rec.ticks: rspark_rows(rec, list(rec.vars)) for rec in records if rec.rows}
    expected = {t: rows for t in times if (rows := _oracle(stream, graphs, P + query, t))}
    assert got == expected, (query, stream, graphs)


# ------------------------------------------------------------------------------------------------ live


@pytest.mark.slow
def test_live_reads_the_versions_replay_reads_and_a_version_loaded_while_running(spark, tmp_path):
    from rspark.engine.engine import Engine

    f = _files(tmp_path, v0=FLOORS_0, v4=FLOORS_4, v6=FLOORS_6)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    query = P + "SELECT ?who ?floor " + WINDOW + \
        "WHERE { WINDOW :w { ?who :in ?room } GRAPH :rooms { ?room :floor ?floor } }"

    def load_versions(eng) -> None:
        eng.load(f["v0"], graph=EX + "rooms")
        eng.load(f["v4"], graph=EX + "rooms", valid_from=4)

    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "s", tmp_path / "s.trig")
        load_versions(eng)
        eng.load(f["v6"], graph=EX + "rooms", valid_from=6)
        expected = _table(eng.replay(query), "who", "floor")
    lines = trig(STREAM).splitlines()
    head, body = lines[:2], lines[2:]
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "s")
        load_versions(eng)
        handle = eng.register(query, name="q")
        for i in range(0, len(body), 2):
            if i == 4:  # the version from 6 arrives before the elements that instant 6 reads are pushed
                eng.load(f["v6"], graph=EX + "rooms", valid_from=6)
            eng.push(EX + "s", "\n".join(head + body[i:i + 2]) + "\n")
            assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        got = _table(handle.drain(), "who", "floor")
    assert got == expected == [(2, [("alice", "1")]), (4, [("bob", "4")]), (6, [("alice", "6")])]


# ------------------------------------------------------------------------------------------------ command line


def test_the_command_line_reads_versions_and_names_bad_ones_before_spark(tmp_path):
    from tests.test_cli import fails_before_spark

    f = _files(tmp_path, v0=FLOORS_0)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    (tmp_path / "q.rq").write_text(P + "SELECT ?who " + WINDOW + "WHERE { WINDOW :w { ?who :in ?room } }")
    base = ["replay", str(tmp_path / "q.rq"), "--stream", f"{EX}s={tmp_path / 's.trig'}"]
    fails_before_spark([*base, "--graph-version", f"{EX}rooms={f['v0']}@soon"],
                       r"rspark: error: --graph-version .*v0.ttl@soon: not a time: 'soon' \(a number or an ISO 8601 "
                       r"date-time\)")
    fails_before_spark([*base, "--graph-version", f"{EX}rooms={f['v0']}"],
                       r"rspark: error: --graph-version .*v0.ttl: expected IRI=PATH@INSTANT \(the instant the version "
                       r"is valid from: a number or an ISO 8601 date-time\)")
    fails_before_spark([*base, "--data-version", f"{tmp_path / 's.trig'}@3"],
                       r"rspark: error: --data-version .*s.trig@3: a version of a graph is one graph: a triple format "
                       r"\(.ttl, .nt, .rdf\), not a dataset \(.*s.trig\)")
    fails_before_spark([*base, "--data-version", f"{tmp_path / 'none.ttl'}@3"],
                       r"rspark: error: --data-version .*none.ttl@3: no such file: .*none.ttl")
    run = ["run", str(tmp_path / "q.rq"), "--source", f"{EX}s={tmp_path}"]
    fails_before_spark([*run, "--graph-refresh", f"{EX}rooms={f['v0']}@PT0S"],
                       r"rspark: error: --graph-refresh .*v0.ttl@PT0S: refresh period PT0S: it must be positive")
    fails_before_spark([*run, "--graph-refresh", f"{EX}rooms={f['v0']}"],
                       r"rspark: error: --graph-refresh .*v0.ttl: expected IRI=SOURCE@PERIOD \(a file or a SPARQL "
                       r"endpoint, and a duration: PT20S, 20s, or seconds\)")


def test_rspark_replay_with_graph_versions(tmp_path, capsys, spark):
    from rspark.cli import main

    f = _files(tmp_path, v0=FLOORS_0, v4=FLOORS_4)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    (tmp_path / "q.rq").write_text(P + "SELECT ?who ?floor " + WINDOW +
                                   "WHERE { WINDOW :w { ?who :in ?room } ?room :floor ?floor }")
    assert main(["replay", str(tmp_path / "q.rq"), "--stream", f"{EX}s={tmp_path / 's.trig'}", "--format", "csv",
                 "--data", str(f["v0"]), "--data-version", f"{f['v4']}@4"]) == 0
    out = capsys.readouterr().out.split("\r\n")
    assert out == ["query,time,who,floor", f"q.rq,2,{EX}alice,1", f"q.rq,4,{EX}bob,4", f"q.rq,6,{EX}alice,4", ""]


# ------------------------------------------------------------------------------------------------ the service


def test_the_service_takes_versions_by_put_and_keeps_them_across_a_restart(spark, tmp_path):
    """``PUT /graphs/NAME?valid_from=T`` adds a version; a live query reads at each instant the version valid
    then; ``GET /graphs/NAME?valid_from=T`` gives a version back; the versions survive a restart."""
    from starlette.testclient import TestClient

    from rspark.engine.engine import Engine
    from rspark.service.app import create_app
    from rspark.service.state import Service

    ckpt = str(tmp_path / "ckpt")
    nt = "application/n-triples"
    query = P + "SELECT ?who ?floor FROM NAMED WINDOW :w ON <http://example.org/S> [RANGE 2 STEP 2] " \
        "WHERE { WINDOW :w { ?who :in ?room } GRAPH :rooms { ?room :floor ?floor } }"

    def start():
        engine = Engine(spark=spark, checkpoint=ckpt)
        service = Service(engine)
        service.restore()
        return engine, service, TestClient(create_app(service))

    def floors(version: int) -> str:
        return "".join(f"<{EX}room{r}> <{EX}floor> \"{version + r}\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n"
                       for r in (1, 2))

    engine, service, client = start()
    try:
        assert client.put("/streams/S", json={"iri": EX + "S"}).status_code == 201
        put = client.put(f"/graphs/rooms?iri={EX}rooms", content=floors(0), headers={"Content-Type": nt})
        assert put.status_code == 201
        put = client.put(f"/graphs/rooms?iri={EX}rooms&valid_from=4", content=floors(10), headers={"Content-Type": nt})
        assert put.status_code == 200 and put.json()["versions"] == [{"valid_from": None, "triples": 2},
                                                                     {"valid_from": "4", "triples": 2}]
        bad = client.put(f"/graphs/rooms?iri={EX}rooms&valid_from=soon", content=floors(5),
                         headers={"Content-Type": nt})
        assert bad.status_code == 400 and bad.json()["error"] == \
            "valid_from=soon: not a time: 'soon' (a number or an ISO 8601 date-time)"
        assert client.get("/graphs/rooms?valid_from=4").text == floors(10)
        assert client.get("/graphs/rooms?valid_from=3").status_code == 404
        assert client.put("/queries/q", content=query, headers={"Content-Type": "application/sparql-query"}) \
            .status_code == 201
        lines = trig(STREAM).splitlines()
        for i in range(2, len(lines), 2):  # one element a request
            body = "\n".join(lines[:2] + lines[i:i + 2]) + "\n"
            assert client.post("/streams/S", content=body, headers={"Content-Type": "application/trig"}) \
                .status_code == 202
        assert service.live.wait_idle(timeout=120)
        log = service.queries["q"].results
        got = [[(b["who"]["value"], b["floor"]["value"]) for b in json.loads(e.data)["results"]["bindings"]]
               for e in log.events]
        # 2: alice in room1 (the version from the beginning: 1); 4: bob in room2 (the version from 4: 12); 6: alice
        # in room2 (12); 8 is not due (the last element is at 7)
        assert got == [[(EX + "alice", "1")], [(EX + "bob", "12")], [(EX + "alice", "12")]]
    finally:
        service.close()
        engine.close()
    engine, service, client = start()
    try:
        listed = client.get("/graphs").json()["graphs"]
        assert [(g["name"], g["versions"]) for g in listed] == \
            [("rooms", [{"valid_from": None, "triples": 2}, {"valid_from": "4", "triples": 2}])]
        r = client.get("/sparql", params={"query": "SELECT ?f WHERE { GRAPH <http://example.org/rooms> "
                                                   "{ <http://example.org/room1> ?p ?f } }"})
        assert [b["f"]["value"] for b in r.json()["results"]["bindings"]] == ["11"]  # the latest version
    finally:
        service.close()
        engine.close()


# ------------------------------------------------------------------------------------------------ read again (RESCAN)


def test_a_refresh_source_is_a_file_or_an_endpoint_asked_for_every_triple(tmp_path):
    import http.server
    import threading
    import urllib.parse

    from rspark.engine.live.refresh import read_source
    from rspark.engine.live.runner import refresh_period

    asked = []

    class Endpoint(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            asked.append((urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query), self.headers["Accept"]))
            body = b"<http://e/a> <http://e/b> <http://e/c> .\n"
            self.send_response(200)
            self.send_header("Content-Type", "application/n-triples")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/sparql"
        assert read_source(url) == (b"<http://e/a> <http://e/b> <http://e/c> .\n", ".nt")
        assert asked == [({"query": ["CONSTRUCT WHERE { ?s ?p ?o }"]}, "application/n-triples")]
    finally:
        server.shutdown()
        server.server_close()  # nothing listens there now: refused at once
    with pytest.raises(RsparkError, match=rf"the SPARQL endpoint {url} did not answer: "):
        read_source(url)
    (tmp_path / "g.ttl.gz").write_bytes(b"x")
    assert read_source(str(tmp_path / "g.ttl.gz")) == (b"x", ".ttl.gz")
    with pytest.raises(RsparkError, match=r"none.ttl: cannot read it \(No such file or directory\)"):
        read_source(str(tmp_path / "none.ttl"))
    assert [refresh_period(v) for v in ("PT20S", "20s", "0.5", 2)] == [20.0, 20.0, 0.5, 2.0]
    with pytest.raises(RsparkError, match="refresh period PT0S: it must be positive"):
        refresh_period("PT0S")


@pytest.mark.slow
def test_a_graph_read_again_gives_a_version_from_the_instant_after_the_watermark(spark, tmp_path):
    """Read at the start (floors 1, 2), the rooms graph is read again after the elements up to 3 arrived: the new
    content (floors 3, 4) is valid from 4, so the records are the replay's with that version loaded from 4; a
    third content, read after the element at 7, is valid from 8, and the version from the beginning, which no
    query can read again (every query reported 6), is dropped."""
    from rspark.engine.engine import Engine

    f = _files(tmp_path, v0=FLOORS_0, v4=FLOORS_4)
    (tmp_path / "s.trig").write_text(trig(STREAM), encoding="utf-8")
    query = P + "SELECT ?who ?floor " + WINDOW + \
        "WHERE { WINDOW :w { ?who :in ?room } GRAPH :rooms { ?room :floor ?floor } }"
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "s", tmp_path / "s.trig")
        eng.load(f["v0"], graph=EX + "rooms")
        eng.load(f["v4"], graph=EX + "rooms", valid_from=4)
        expected = _table(eng.replay(query), "who", "floor")
    source = tmp_path / "rooms.ttl"
    source.write_text(FLOORS_0, encoding="utf-8")
    lines = trig(STREAM).splitlines()
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "s")
        assert eng.refresh_graph(EX + "rooms", source, 3600)["versions"] == [None]
        handle = eng.register(query, name="q")
        refresh = eng.live.refreshes[EX + "rooms"]
        for i, content in ((2, None), (4, FLOORS_4), (6, None), (8, FLOORS_6)):  # the elements at 1, 3, 5, 7
            eng.push(EX + "s", "\n".join(lines[:2] + lines[i:i + 2]) + "\n")
            assert eng.live.wait_idle(timeout=120)
            if content is not None:  # read again once the element is in
                source.write_text(content, encoding="utf-8")
                assert refresh.check()
        assert not refresh.check()  # the same content: no new version
        status = eng.live_status()["refreshed"][EX + "rooms"]
        assert (status["reads"], status["changes"], status["versions"]) == (4, 3, [4, 8])
        eng.live.close(flush=True)
        got = _table(handle.drain(), "who", "floor")
    assert got == expected == [(2, [("alice", "1")]), (4, [("bob", "4")]), (6, [("alice", "4")])]


@pytest.mark.slow
def test_a_graph_is_read_again_every_period_and_a_failed_read_keeps_its_version(spark, tmp_path):
    import time

    from rspark.engine.engine import Engine

    source = tmp_path / "rooms.ttl"
    source.write_text(FLOORS_0, encoding="utf-8")
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.refresh_graph(EX + "rooms", source, "0.2")
        source.write_text(FLOORS_4, encoding="utf-8")
        refresh = eng.live.refreshes[EX + "rooms"]
        deadline = time.time() + 30
        while refresh.changes < 2 and time.time() < deadline:
            time.sleep(0.05)
        assert refresh.changes == 2
        rows = eng.sparql(P + "SELECT ?f { GRAPH :rooms { :room1 :floor ?f } }").to_json()["results"]["bindings"]
        assert [b["f"]["value"] for b in rows] == ["3"]
        source.unlink()
        while refresh.errors < 1 and time.time() < deadline:
            time.sleep(0.05)
        assert refresh.errors >= 1 and "rooms.ttl: cannot read it" in refresh.last_error
        rows = eng.sparql(P + "SELECT ?f { GRAPH :rooms { :room1 :floor ?f } }").to_json()["results"]["bindings"]
        assert [b["f"]["value"] for b in rows] == ["3"]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=40), st.from_regex(r"-?\d{1,25}(\.\d{0,70})?([eE]-?\d{1,20})?", fullmatch=True),
                 st.datetimes().map(lambda d: d.isoformat() + "Z"), st.floats(allow_nan=True), st.integers()))
def test_any_valid_from_is_an_instant_or_refused_with_a_message(value):
    """Whatever a caller writes as a version's instant (the API, ``--graph-version``, the service's ``valid_from``):
    an instant, or an RsparkError saying what it is not."""
    from rspark.engine.engine import _version_instant

    try:
        assert _version_instant(value, "v.ttl", None) == value
    except RsparkError as exc:
        assert str(exc).startswith(f"valid_from={value!r}: ")
