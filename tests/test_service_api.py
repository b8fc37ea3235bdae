"""The HTTP API of ``rspark serve`` in process (Starlette's test client over the app and one Engine): security
(token, body size, limits), errors with their place, graphs, the SPARQL protocol, metrics, observers, pause."""

from __future__ import annotations

import http.server
import json
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from rspark.errors import DataError
from rspark.service.elements import parse_push
from tests.test_live import CONSUME, EX, FIG1, PREFIXES

TOKEN = "s3cret-token-of-the-tests"
COUNT = """PREFIX : <http://example.org/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s ?p ?o } }"""
SPARQL_Q = "application/sparql-query"


@pytest.fixture
def make(spark, tmp_path):
    """``make(token=..., **limits)`` -> a test client of a fresh service (its engine closed at the end)."""
    from rspark.engine.engine import Engine
    from rspark.service.app import create_app
    from rspark.service.state import Limits, Service

    made = []

    def factory(token: str | None = None, **limits) -> TestClient:
        engine = Engine(spark=spark, checkpoint=str(tmp_path / f"ckpt{len(made)}"))
        service = Service(engine, limits=Limits(**limits), base_url="http://127.0.0.1:8175")
        client = TestClient(create_app(service, token=token))
        client.service = service
        made.append((engine, service))
        return client

    yield factory
    for engine, service in made:
        service.close()
        engine.close()


def declare(client, headers=None) -> None:
    r = client.put("/streams/S", json={"iri": EX + "S"}, headers=headers or {})
    assert r.status_code == 201, r.text


def test_state_changing_requests_need_the_token(make):
    client = make(token=TOKEN)
    r = client.put("/streams/S", json={"iri": EX + "S"})
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer TOKEN" in r.json()["error"]
    assert client.put("/streams/S", json={"iri": EX + "S"},
                      headers={"Authorization": "Bearer wrong-token-xxxxxxxx"}).status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    declare(client, auth)
    assert client.post("/streams/S", content=PREFIXES + FIG1[2]).status_code == 401
    assert client.put("/queries/q", content=COUNT).status_code == 401
    assert client.delete("/streams/S").status_code == 401
    # reads need no token
    assert client.get("/streams").status_code == 200
    assert client.get("/metrics").status_code == 200
    r = client.post("/streams/S", content=PREFIXES + FIG1[2], headers={**auth, "Content-Type": "application/trig"})
    assert r.status_code == 202 and r.json() == {"accepted": 1, "triples": 1, "late": 0}


def test_sparql_queries_need_no_token_by_get_or_post(make):
    """The SPARQL 1.1 Protocol's query operation changes nothing: by GET, by POST with a form or with
    application/sparql-query, it needs no token; what changes state still does."""
    client = make(token=TOKEN)
    nt = "<http://example.org/s1> <http://example.org/room> <http://example.org/r1> .\n"
    assert client.put("/graphs/rooms?iri=http://example.org/rooms", content=nt,
                      headers={"Content-Type": "application/n-triples"}).status_code == 401
    r = client.put("/graphs/rooms?iri=http://example.org/rooms", content=nt,
                   headers={"Content-Type": "application/n-triples", "Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 201, r.text
    q = "SELECT ?r WHERE { GRAPH <http://example.org/rooms> { ?s <http://example.org/room> ?r } }"
    for r in (client.get("/sparql", params={"query": q}),
              client.post("/sparql", data={"query": q}),
              client.post("/sparql", content=q, headers={"Content-Type": SPARQL_Q})):
        assert r.status_code == 200, (r.request.method, r.text)
        assert [b["r"]["value"] for b in r.json()["results"]["bindings"]] == [EX + "r1"]
    # a query that would register a continuous query is refused as any bad query (400), and registers nothing
    r = client.post("/sparql", content=COUNT.replace("SELECT", "REGISTER QUERY :q AS SELECT"),
                    headers={"Content-Type": SPARQL_Q})
    assert r.status_code == 400 and client.get("/queries").json() == {"queries": []}
    assert client.delete("/graphs/rooms").status_code == 401


def test_a_results_request_refused_for_a_bad_last_event_id_leaves_no_client_counted(make):
    client = make()
    declare(client)
    assert client.put("/queries/count", content=COUNT, headers={"Content-Type": SPARQL_Q}).status_code == 201
    for bad in ({"headers": {"Last-Event-ID": "yesterday"}}, {"params": {"last_event_id": "2026-13-45T99:00:00Z"}},
                {"headers": {"Last-Event-ID": "NaN-ish"}}, {"headers": {"Last-Event-ID": "NaN"}}):
        r = client.get("/queries/count/results", **bad)
        assert r.status_code == 400, (bad, r.text)
        assert "is not an event id of this stream" in r.json()["error"]
    assert client.head("/queries/count/results").status_code == 200  # headers only: no stream, no client
    assert client.get("/queries/count").json()["sse_clients"] == 0
    assert [q["sse_clients"] for q in client.get("/queries").json()["queries"]] == [0]
    assert "rspark_sse_clients 0" in client.get("/metrics").text.splitlines()


def test_a_push_answer_says_how_many_elements_are_late_and_where_they_go(make):
    import hashlib
    from pathlib import Path

    client = make()
    declare(client)
    assert client.put("/queries/count", content=COUNT, headers={"Content-Type": SPARQL_Q}).status_code == 201
    r = client.post("/streams/S", content=PREFIXES + "\n".join(FIG1[t] for t in (2, 4, 6, 10)))
    assert r.status_code == 202 and r.json() == {"accepted": 4, "triples": 6, "late": 0}
    assert client.service.live.wait_idle(timeout=120)  # the instants before 10 are reported
    late_to = str(Path(client.service.live.checkpoint) / "late"
                  / f"example.org_S-{hashlib.sha1((EX + 'S').encode()).hexdigest()[:8]}") + "/"
    r = client.post("/streams/S", content=PREFIXES + FIG1[8])  # G4 at 8: late
    assert r.status_code == 202
    assert r.json() == {"accepted": 0, "triples": 0, "late": 1, "late_to": late_to}
    r = client.post("/streams/S", content=PREFIXES + FIG1[4].replace("G2", "G7") + "\n"
                    + ":G8 { :a8 :p :b8 . :a8 :q :c8 . } :G8 prov:generatedAtTime 12 .")
    assert r.status_code == 202
    assert r.json() == {"accepted": 1, "triples": 2, "late": 1, "late_to": late_to}
    assert client.service.live.wait_idle(timeout=120)
    assert client.get("/streams/S").json()["late"] == 2
    dead = sorted(line for f in Path(late_to).glob("*.nq") for line in f.read_text().splitlines())
    assert [line.split()[0] for line in dead if "generatedAtTime" in line] == ["<http://example.org/G4>",
                                                                               "<http://example.org/G7>"]


def test_a_body_over_the_limit_gets_413(make):
    client = make(max_body=200)
    declare(client)
    big = PREFIXES + FIG1[2] + "\n# " + "x" * 300
    r = client.post("/streams/S", content=big, headers={"Content-Type": "application/trig"})
    assert r.status_code == 413
    assert r.json() == {"error": "the request body is larger than 200 bytes (--max-body); push the elements in "
                                 "several requests"}

    def chunks():  # no Content-Length: counted as it is read
        for _ in range(4):
            yield b"# " + b"y" * 98 + b"\n"

    r = client.post("/streams/S", content=chunks(), headers={"Content-Type": "application/trig"})
    assert r.status_code == 413
    assert client.get("/streams/S").json()["elements"] == 0


def test_malformed_rdf_gives_400_with_line_and_column(make):
    client = make()
    declare(client)
    body = PREFIXES + ":G1 { :a1 :p :b1 . }\n:G1 prov:generatedAtTime 2 .\n:G2 { :a2 :p }\n"
    r = client.post("/streams/S", content=body, headers={"Content-Type": "application/trig"})
    assert r.status_code == 400
    assert r.json() == {"error": "request body:5:14: malformed TriG: } is not a valid RDF object", "line": 5,
                        "column": 14}
    r = client.post("/streams/S", content=PREFIXES + ":G1 { :a1 :p :b1 . }\n",
                    headers={"Content-Type": "application/trig"})
    assert r.status_code == 400
    assert r.json()["element"] == "<http://example.org/G1>"
    assert r.json()["error"].startswith("request body: no timestamp: the element has no "
                                        "<http://www.w3.org/ns/prov#generatedAtTime> triple")
    r = client.post("/streams/S", content=b"{}", headers={"Content-Type": "text/csv"})
    assert r.status_code == 400 and "a push is TriG" in r.json()["error"]
    assert client.post("/streams/nope", content=PREFIXES + FIG1[2]).status_code == 404
    assert client.get("/streams/S").json()["elements"] == 0  # nothing of a refused push is accepted


def test_a_bad_query_gives_400_with_line_and_column(make):
    client = make()
    r = client.put("/queries/q", content="PREFIX : <http://example.org/>\nSELECT * WHERE { ?s ?p }",
                   headers={"Content-Type": SPARQL_Q})
    assert r.status_code == 400
    assert r.json()["line"] == 2 and r.json()["column"] == 24
    assert r.json()["error"].startswith("q:2:24: unexpected '}'")
    r = client.put("/queries/q", json={"query": COUNT, "profile": "nonsense"})
    assert r.status_code == 400 and "nonsense" in r.json()["error"]
    r = client.put("/queries/q", content="SELECT * WHERE { ?s ?p ?o }", headers={"Content-Type": SPARQL_Q})
    assert r.status_code == 400 and "reads no stream" in r.json()["error"]
    assert client.put("/queries/bad%20name", content=COUNT).status_code == 400
    # SERVICE: a client's query would make the server send requests to any address it names
    federated = ("PREFIX : <http://example.org/> SELECT * FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { "
                 "WINDOW :w { ?s ?p ?o } SERVICE <http://127.0.0.1:9/sparql> { ?o ?q ?z } }")
    r = client.put("/queries/q", content=federated, headers={"Content-Type": SPARQL_Q})
    assert r.status_code == 400 and r.json()["error"].startswith("SERVICE is refused by rspark serve")
    r = client.get("/sparql", params={"query": "SELECT * WHERE { SERVICE <http://127.0.0.1:9/x> { ?s ?p ?o } }"})
    assert r.status_code == 400 and r.json()["error"].startswith("SERVICE is refused by rspark serve")


def test_limits_on_queries_windows_and_instants(make):
    client = make(max_queries=1, max_window_elements=50, max_instants=100)
    declare(client)
    r = client.put("/queries/big", content=COUNT.replace("[RANGE 4 SLIDE 2]", "[RANGE ELEMENTS 51]"),
                   headers={"Content-Type": SPARQL_Q})
    assert r.status_code == 422
    assert r.json()["error"] == "query big: a count window of 51 holds more than 50 (--max-window-elements)"
    assert client.put("/queries/q", content=COUNT, headers={"Content-Type": SPARQL_Q}).status_code == 201
    assert client.put("/queries/q", content=COUNT, headers={"Content-Type": SPARQL_Q}).status_code == 409
    r = client.put("/queries/q2", content=COUNT, headers={"Content-Type": SPARQL_Q})
    assert r.status_code == 429
    assert r.json()["error"] == "1 queries are registered, the limit (--max-queries 1); delete one first"
    assert client.post("/streams/S", content=PREFIXES + FIG1[2]).status_code == 202
    far = PREFIXES + ":G9 { :a :p :b . } :G9 prov:generatedAtTime 1000 ."
    r = client.post("/streams/S", content=far)
    assert r.status_code == 422
    assert r.json()["error"].startswith("the push would make 499 evaluation instants of query q due at once "
                                        "(the limit is 100: --max-instants)")
    # a stream a query reads is not deleted under it
    r = client.delete("/streams/S")
    assert r.status_code == 409 and "read by the registered query q" in r.json()["error"]
    assert client.delete("/queries/q").status_code == 204
    assert client.delete("/streams/S").status_code == 204
    assert client.get("/streams").json() == {"streams": []}


def test_records_observers_pause_and_metrics(make):
    received: list = []

    class Observer(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    observer = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Observer)
    threading.Thread(target=observer.serve_forever, daemon=True).start()
    try:
        client = make()
        declare(client)
        assert client.put("/queries/count", content=COUNT, headers={"Content-Type": SPARQL_Q}).status_code == 201
        r = client.post("/queries/count/observers", json={"url": f"http://127.0.0.1:{observer.server_port}/in"})
        assert r.status_code == 201 and r.json()["id"] == "1"
        assert client.post("/queries/count/observers", json={"url": "file:///etc/passwd"}).status_code == 400
        for t in (2, 4, 6):
            assert client.post("/streams/S", content=PREFIXES + FIG1[t]).status_code == 202
        assert client.service.live.wait_idle(timeout=120)
        # instants 2 and 4 are due (the newest element is at 6): COUNT of the window (t-4, t]
        log = client.service.queries["count"].results
        assert [json.loads(e.data)["results"]["bindings"][0]["n"]["value"] for e in log.events] == ["1", "2"]
        deadline = __import__("time").time() + 30
        while len(received) < 2 and __import__("time").time() < deadline:
            __import__("time").sleep(0.1)
        assert [json.loads(e.data) for e in log.events] == received
        view = client.get("/queries/count").json()
        assert view["records"] == 2 and view["paused"] is False and view["observers"][0]["delivered"] == 2
        assert view["consumed"] is None  # (a query that consumes events: its state's occurrences)
        assert view["windows"] == [{"name": EX + "w", "stream": EX + "S", "kind": "time", "range": 4, "slide": 2,
                                    "size": None}]
        # live mode's read model: the window (t - 4, t] at the last instant reported, 4, and the next one, reported
        # at 6; the query binds no interval variable
        assert view["bands"] == [{"window": EX + "w", "stream": EX + "S", "kind": "time",
                                  "current": {"start": 0, "end": 4, "start_open": True, "end_open": False, "at": 4},
                                  "next": {"start": 2, "end": 6, "start_open": True, "end_open": False, "at": 6}}]
        assert view["interval_variables"] is None
        assert client.post("/queries/count/pause").json()["paused"] is True
        assert client.post("/streams/S", content=PREFIXES + FIG1[8]).status_code == 202
        assert client.service.live.wait_idle(timeout=120)
        assert len(log.events) == 2  # paused: instant 6 is evaluated, not delivered
        assert client.post("/queries/count/resume").json()["paused"] is False
        metrics = client.get("/metrics").text
        assert f'rspark_stream_elements_total{{stream="{EX}S",name="S"}} 4' in metrics.splitlines()
        assert 'rspark_query_records_total{query="count"} 2' in metrics.splitlines()
        assert "# TYPE rspark_query_lag gauge" in metrics.splitlines()
        elements = client.get("/streams/S/elements").json()
        assert [(e["t"], e["triples"], e["late"]) for e in elements["elements"]] == [(2, 1, False), (4, 1, False),
                                                                                     (6, 2, False), (8, 1, False)]
        assert elements["kind"] == "numeric"
        assert client.delete("/queries/count/observers/1").status_code == 204
        assert client.delete("/queries/count/observers/1").status_code == 404
    finally:
        observer.shutdown()


def test_graphs_and_the_sparql_protocol(make):
    client = make()
    ttl = "@prefix : <http://example.org/> .\n:s1 :room :r1 .\n:s2 :room :r2 .\n"
    r = client.put("/graphs/rooms?iri=http://example.org/rooms", content=ttl,
                   headers={"Content-Type": "text/turtle"})
    assert r.status_code == 201 and r.json() == {"name": "rooms", "iri": EX + "rooms", "triples": 2,
                                                 "versions": [{"valid_from": None, "triples": 2}]}
    q = "SELECT ?s ?r WHERE { GRAPH <http://example.org/rooms> { ?s <http://example.org/room> ?r } } ORDER BY ?s"
    r = client.get("/sparql", params={"query": q}, headers={"Accept": "text/csv"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert r.text == "s,r\r\nhttp://example.org/s1,http://example.org/r1\r\nhttp://example.org/s2,http://example.org/r2\r\n"
    r = client.post("/sparql", content=q, headers={"Content-Type": SPARQL_Q})
    assert r.headers["content-type"] == "application/sparql-results+json"
    assert [b["r"]["value"] for b in r.json()["results"]["bindings"]] == [EX + "r1", EX + "r2"]
    r = client.post("/sparql", data={"query": q}, headers={"Accept": "application/sparql-results+xml"})
    assert r.status_code == 200 and "<sparql" in r.text
    r = client.get("/sparql", params={"query": q}, headers={"Accept": "text/tab-separated-values"})
    assert r.text.splitlines()[0] == "?s\t?r"
    assert client.get("/sparql", params={"query": q}, headers={"Accept": "image/png"}).status_code == 406
    r = client.get("/sparql", params={"query": "SELECT * WHERE {"})
    assert r.status_code == 400 and r.json()["line"] == 1
    # replaced: the next query sees the new version only
    r = client.put("/graphs/rooms?iri=http://example.org/rooms", content="<http://example.org/s3> "
                   "<http://example.org/room> <http://example.org/r3> .\n",
                   headers={"Content-Type": "application/n-triples"})
    assert r.status_code == 200 and r.json()["triples"] == 1
    r = client.get("/sparql", params={"query": q})
    assert [b["s"]["value"] for b in r.json()["results"]["bindings"]] == [EX + "s3"]
    construct = "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }"
    r = client.get("/sparql", params={"query": construct})
    assert r.headers["content-type"] == "application/n-triples"
    assert r.text == "<http://example.org/s3> <http://example.org/room> <http://example.org/r3> .\n"
    assert client.get("/graphs/rooms").headers["content-type"] == "application/n-triples"
    r = client.put("/graphs/bad", content="@prefix : <http://e/> .\n:a :b .\n", headers={"Content-Type": "text/turtle"})
    assert r.status_code == 400 and (r.json()["line"], r.json()["column"]) == (2, 7)
    assert client.put("/graphs/x", content="", headers={"Content-Type": "image/png"}).status_code == 415
    assert client.delete("/graphs/rooms").status_code == 204
    r = client.get("/sparql", params={"query": q})
    assert r.json()["results"]["bindings"] == []
    assert client.get("/graphs").json() == {"graphs": []}


def test_a_non_loopback_address_needs_a_token(tmp_path, capsys):
    from rspark.cli import main

    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--host 0.0.0.0 is not a loopback address: rspark serve listens there only with a --token-file" \
        in capsys.readouterr().err
    short = tmp_path / "token"
    short.write_text("abc\n")
    assert main(["serve", "--token-file", str(short)]) == 2
    assert "the token has 3 characters; use at least 16" in capsys.readouterr().err
    assert main(["serve", "--max-queries", "0"]) == 2
    with socket.socket() as busy:  # a port another process listens on: refused before Spark starts
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["serve", "--port", str(busy.getsockname()[1])]) == 2
        assert "cannot listen there (Address already in use)" in capsys.readouterr().err


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(lambda t: (PREFIXES + t).encode("utf-8"))),
       st.sampled_from([None, "application/trig", "application/n-quads", "application/ld+json", "text/plain"]),
       st.booleans())
def test_any_push_body_is_parsed_or_refused_with_a_message(body, media_type, arrival):
    """Whatever a client sends: elements, or a DataError (with a line and column when the RDF is malformed)."""
    try:
        push = parse_push(body, media_type, predicate="http://www.w3.org/ns/prov#generatedAtTime",
                          arrival_time=arrival, now=1_700_000_000.0)
    except DataError as exc:
        assert str(exc).startswith("request body")
        if "malformed" in str(exc):
            assert exc.line is not None and exc.column is not None
        return
    assert push.elements and push.nquads.endswith("\n")
    assert all(e.kind in ("datetime", "numeric") for e in push.elements)


def test_a_service_restarted_on_its_checkpoint_has_its_streams_graphs_queries_and_observers(spark, tmp_path):
    """What clients declared is saved in the checkpoint (service.json) and declared again on restart; a declaration
    that cannot be restored (its graph file gone) is logged, and the others still are."""
    from rspark.engine.engine import Engine
    from rspark.service.app import create_app
    from rspark.service.state import Service

    ckpt = str(tmp_path / "ckpt")

    def start():
        engine = Engine(spark=spark, checkpoint=ckpt)
        service = Service(engine)
        service.restore()
        return engine, service, TestClient(create_app(service))

    engine, service, client = start()
    try:
        declare(client)
        assert client.put("/graphs/rooms?iri=http://example.org/rooms", content="<http://example.org/s1> "
                          "<http://example.org/room> <http://example.org/r1> .\n",
                          headers={"Content-Type": "application/n-triples"}).status_code == 201
        assert client.put("/graphs/gone", content="<http://e/a> <http://e/b> <http://e/c> .\n",
                          headers={"Content-Type": "application/n-triples"}).status_code == 201
        assert client.put("/queries/count", content=COUNT, headers={"Content-Type": SPARQL_Q}).status_code == 201
        assert client.post("/queries/count/pause").status_code == 200
        assert client.post("/queries/count/observers", json={"url": "http://127.0.0.1:9/x"}).status_code == 201
        assert client.put("/queries/consume", content=CONSUME, headers={"Content-Type": SPARQL_Q}).status_code == 201
        for t in (2, 4, 6, 8):
            assert client.post("/streams/S", content=PREFIXES + FIG1[t]).status_code == 202
        assert service.live.wait_idle(timeout=120)
        consumed = client.get("/queries/consume").json()["consumed"]
        assert consumed > 0  # the events found up to the instant before 8 consumed their occurrences
        gone = service.graphs["gone"]["path"]
    finally:
        service.close()
        engine.close()
    import os

    os.remove(gone)
    engine, service, client = start()
    try:
        assert [s["name"] for s in client.get("/streams").json()["streams"]] == ["S"]
        assert [g["name"] for g in client.get("/graphs").json()["graphs"]] == ["rooms"]
        r = client.get("/sparql", params={"query": "SELECT ?r WHERE { GRAPH <http://example.org/rooms> { ?s ?p ?r } }"})
        assert [b["r"]["value"] for b in r.json()["results"]["bindings"]] == [EX + "r1"]
        view = client.get("/queries/count").json()
        assert view["paused"] is True and [o["url"] for o in view["observers"]] == ["http://127.0.0.1:9/x"]
        assert client.get("/queries/consume").json()["consumed"] == consumed  # the consumption state, restored
    finally:
        service.close()
        engine.close()


def test_a_bad_stream_setting_is_refused_and_changes_nothing(make):
    client = make()
    r = client.put("/streams/S", json={"iri": EX + "S", "lateness": "-5"})
    assert r.status_code == 400
    assert r.json()["error"] == f"stream <{EX}S>: the allowed lateness must not be negative (-5)"
    assert client.get("/streams").json() == {"streams": []}
    assert client.put("/streams/S", json={"iri": EX + "S", "lateness": 2}).status_code == 201
    for bad in ({"iri": EX + "S", "lateness": "PT5X"}, {"iri": EX + "S", "timestamp_predicate": "not an iri"},
                {"iri": EX + "S", "speed": 3}, {"iri": "no iri"}):
        r = client.put("/streams/S", json=bad)
        assert r.status_code == 400, (bad, r.text)
    assert client.get("/streams/S").json()["lateness"] == 2
    assert client.service.live.streams[EX + "S"].lateness == 2
    r = client.put("/streams/S", json={"iri": EX + "T"})
    assert r.status_code == 409 and "delete it first" in r.json()["error"]


def test_a_client_resuming_after_a_restart_gets_the_held_records_or_a_gap_first(spark, tmp_path):
    """The records kept for clients that reconnect survive a restart on the same checkpoint: on the restarted
    service, ``Last-Event-ID`` (or ``?from=start``) gives the held records after the id, with an ``event: gap`` first
    when records after it are no longer held (``--keep-events``). A checkpoint that holds no record log (written
    before the service kept one) gives the gap up to the query's last reported instant."""
    import os

    import httpx2 as httpx

    from rspark.engine.engine import Engine
    from rspark.service.app import create_app
    from rspark.service.state import Limits, Service
    from tests.support.sse import AppServer, SSEReader

    ckpt = str(tmp_path / "ckpt")

    def start():
        engine = Engine(spark=spark, checkpoint=ckpt)
        service = Service(engine, limits=Limits(keep_events=2))
        service.restore()
        return engine, service, AppServer(create_app(service), service)

    def push(url, *times):
        r = httpx.post(f"{url}/streams/S", content=PREFIXES + "\n".join(
            FIG1.get(t, f":G{t} {{ :a{t} :p :b{t} . }} :G{t} prov:generatedAtTime {t} .") for t in times),
            headers={"Content-Type": "application/trig"}, timeout=60)
        assert r.status_code == 202, r.text

    def shown(events):
        return [(e["event"], e.get("id")) for e in events]

    engine, service, server = start()
    try:
        assert httpx.put(f"{server.url}/streams/S", json={"iri": EX + "S"}, timeout=60).status_code == 201
        r = httpx.put(f"{server.url}/queries/count", content=COUNT, headers={"Content-Type": SPARQL_Q}, timeout=120)
        assert r.status_code == 201, r.text
        push(server.url, 2, 4, 6, 8, 10)
        assert service.live.wait_idle(timeout=120)
        # the records at 2, 4, 6 and 8 were given; the service holds the latest two
        held = {e.id: e.data for e in service.queries["count"].results.events}
        assert list(held) == ["6", "8"]
    finally:
        server.stop()
        engine.close()

    engine, service, server = start()
    try:
        url = f"{server.url}/queries/count/results"
        after_6 = SSEReader(url, headers={"Last-Event-ID": "6"})
        after_2 = SSEReader(url, headers={"Last-Event-ID": "2"})
        from_start = SSEReader(url + "?from=start")
        push(server.url, 12)  # the instant 10 becomes due: the first record of the restarted service
        events = after_6.wait_for_id("10")
        assert shown(events) == [("result", "8"), ("result", "10")]
        assert events[0]["data"] == held["8"]
        for reader, after in ((after_2, "2"), (from_start, "start")):
            events = reader.wait_for_id("10")
            assert shown(events) == [("gap", None), ("result", "6"), ("result", "8"), ("result", "10")], after
            assert json.loads(events[0]["data"]) == {"after": after, "dropped_upto": "4"}
            assert [e["data"] for e in events[1:3]] == [held["6"], held["8"]]
        assert json.loads(events[3]["data"])["time"] == 10
        for reader in (after_6, after_2, from_start):
            reader.close()
    finally:
        server.stop()
        engine.close()

    os.remove(os.path.join(ckpt, "service", "results", "count.jsonl"))  # as a checkpoint without the log
    engine, service, server = start()
    try:
        reader = SSEReader(f"{server.url}/queries/count/results", headers={"Last-Event-ID": "2"})
        push(server.url, 14)
        events = reader.wait_for_id("12")
        assert shown(events) == [("gap", None), ("result", "12")]
        assert json.loads(events[0]["data"]) == {"after": "2", "dropped_upto": "10"}
        reader.close()
    finally:
        server.stop()
        engine.close()


def test_the_record_log_file_holds_what_the_log_holds_across_closes_and_compactions(tmp_path):
    """A query's record log as its file keeps it: records written after ``close`` (the micro-batch running when the
    service stops) are kept too; the file is rewritten with the held records past twice ``keep`` lines; a line a
    crash left unfinished is cut; a record at or before the newest held one is not taken twice."""
    from rspark.service.results import ResultLog
    from rspark.spark.streaming.record import Record

    path = str(tmp_path / "results" / "q.jsonl")

    def record(t: int) -> Record:
        return Record("q", t, t, "ASK", boolean=t % 4 == 0)

    log = ResultLog(keep=3, path=path)
    for t in range(1, 8):  # 7 lines > 2 * 3: rewritten as the held 5, 6, 7 and the gap up to 4
        log.write(record(t))
    log.close()
    log.write(record(8))  # after close
    log.write(record(8))  # again: taken once
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert lines[0] == {"dropped_upto": "4"} and [x["id"] for x in lines[1:]] == ["5", "6", "7", "8"]
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"id": "9", "da')  # a crash in the middle of a line
    again = ResultLog(keep=3, path=path)
    assert [(e.id, json.loads(e.data)) for e in again.events] == [(str(t), record(t).to_json()) for t in (6, 7, 8)]
    assert again.dropped_upto.id == "5"
    again.write(record(7))  # a batch evaluated again after a crash
    again.write(record(9))
    assert [e.id for e in again.events] == ["7", "8", "9"]
    again.discard()
    assert not (tmp_path / "results" / "q.jsonl").exists()
