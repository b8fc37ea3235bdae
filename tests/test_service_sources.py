"""``rspark serve``'s stream sources (PUT /streams/NAME {"source": URL}): which URLs a client may name (MQTT,
Server-Sent Events, WebSocket; Kafka only with --kafka; no directory, TCP port or file of the server's machine), and
a WebSocket and a Server-Sent Events source declared through the HTTP API feeding queries, their state in the
stream's view, declared again when the service restarts on its checkpoint."""

from __future__ import annotations

import json
import time

import pytest
from starlette.testclient import TestClient

from rspark.service.state import ServiceError, _stream_mapping, _stream_source
from tests.test_live import EX, FIG1
from tests.test_service_api import SPARQL_Q
from tests.test_sse import Feed
from tests.test_websocket import Server

BOTH = """PREFIX : <http://example.org/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] FROM NAMED WINDOW :v ON :T [RANGE 4 SLIDE 2]
WHERE { { WINDOW :w { ?s ?p ?o } } UNION { WINDOW :v { ?s ?p ?o } } }"""
ONE_LINE = "@prefix : <http://example.org/> . @prefix prov: <http://www.w3.org/ns/prov#> . "
# the stream M: Figure 1's triples as CSV records (g,t,s,p,q), one a line; an empty cell skips its triple
MAPPING = """prefixes: {ex: "http://example.org/"}
element: ex:G$(g)
timestamp: {field: t, format: number}
mappings:
  triple:
    s: ex:$(s)
    po:
      - [ex:p, ex:$(p)~iri]
      - [ex:q, ex:$(q)~iri]
"""
MAPPED = """PREFIX : <http://example.org/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :M [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s ?p ?o } }"""


# ------------------------------------------------------------------------------------------------ pure parts


@pytest.mark.parametrize("source", ["mqtt://127.0.0.1:1883/obs/+", "sse://127.0.0.1:8175/queries/q/results",
                                    "sses://example.org/q", " ws://127.0.0.1:9000/tw ", "wss://example.org/tw"])
def test_network_sources_are_taken(source):
    assert _stream_source({"source": source}) == (source.strip(), None)


def test_a_payload_format_goes_with_a_message_source():
    assert _stream_source({"source": "mqtt://h:1883/t", "payload_format": "nquads"}) == ("mqtt://h:1883/t", "nquads")
    mapping = _stream_mapping("M", {"mapping": MAPPING})[1]
    assert _stream_source({"source": "ws://h:1/t", "payload_format": "csv"}, mapping) == ("ws://h:1/t", "csv")
    for decl, mapped, message in [
            ({"source": "ws://h:1/t", "payload_format": "nquads"}, None,
             "source 'ws://h:1/t': the payload format is with a mapping csv, json or jsonl, not 'nquads'"),
            ({"source": "mqtt://h:1883/t", "payload_format": "rdfxml"}, None,
             "source 'mqtt://h:1883/t': the payload format is trig or nquads, or with a mapping csv, json or jsonl, "
             "not 'rdfxml'"),
            ({"source": "sse://h:1/t", "payload_format": "json"}, None,
             "source 'sse://h:1/t': json messages need a mapping on the stream (--mapping IRI=FILE, live_stream(iri, "
             "mapping=FILE), a declaration's \"mapping\")"),
            ({"source": "mqtt://h:1883/t", "payload_format": "trig"}, mapping,
             "source 'mqtt://h:1883/t': the stream maps records: its messages are csv, json or jsonl, not 'trig'")]:
        with pytest.raises(ServiceError) as info:
            _stream_source(decl, mapped)
        assert (info.value.status, str(info.value)) == (400, message)
    for decl in ({"payload_format": "trig"}, {"source": "kafka://h:1/t", "payload_format": "json"},
                 {"source": "mqtt://h:1883/t", "payload_format": 3}):
        with pytest.raises(ServiceError) as info:
            _stream_source(decl, mapping, kafka=True)
        assert (info.value.status, str(info.value)) == (400, "payload_format goes with an mqtt://, sse:// or ws:// "
                                                             "source: trig or nquads (mqtt://), or with a mapping "
                                                             "json, jsonl or csv (a Kafka address says format=)")


def test_a_declarations_mapping_is_read_and_its_problems_named():
    text, mapping = _stream_mapping("M", {"mapping": MAPPING})
    assert text == MAPPING and mapping.timestamp == ("t",)
    assert _stream_mapping("M", {}) == (None, None)
    for value, message in [
            (MAPPING.replace("format: number", "format: weekday"),
             "the mapping of stream M:3: timestamp.format: unknown timestamp format 'weekday' (expected datetime "
             "(xsd:dateTime), epoch-s, epoch-ms, number)"),
            ({"prefixes": {}}, "a stream's mapping is the text of a mapping file (YAML, docs/streams.md \"JSON and CSV "
                               "records\") in a JSON string")]:
        with pytest.raises(ServiceError) as info:
            _stream_mapping("M", {"mapping": value})
        assert (info.value.status, str(info.value)) == (400, message)


def test_kafka_sources_need_the_services_kafka_connector():
    with pytest.raises(ServiceError) as info:
        _stream_source({"source": "kafka://127.0.0.1:9092/obs"})
    assert info.value.status == 400
    assert str(info.value) == ("a kafka:// source needs Spark's Kafka connector: start the service with rspark serve "
                               "--kafka")
    assert _stream_source({"source": "kafka://127.0.0.1:9092/obs"}, kafka=True) == ("kafka://127.0.0.1:9092/obs", None)


@pytest.mark.parametrize("source", ["/etc", "tcp://127.0.0.1:9999", "replay:/etc/passwd@1", "file:///etc/passwd",
                                    "http://127.0.0.1:8175/queries/q/results", ""])
def test_sources_on_the_servers_machine_are_refused(source):
    with pytest.raises(ServiceError) as info:
        _stream_source({"source": source}, kafka=True)
    assert info.value.status == 400
    message = str(info.value)
    assert message.startswith("a stream's source is mqtt://HOST:PORT/TOPIC, sse://HOST:PORT/PATH (sses:// over "
                              "TLS), ws://HOST:PORT/PATH (wss:// over TLS) or kafka://HOST:PORT/TOPIC (rspark serve "
                              f"--kafka), not {source!r}")
    assert "rspark run's (--source) only" in message


def test_a_source_that_is_no_string_is_refused():
    with pytest.raises(ServiceError, match="a stream's source is a URL: mqtt://HOST:PORT/TOPIC") as info:
        _stream_source({"source": ["ws://h:1/t"]})
    assert info.value.status == 400


def test_rspark_serve_takes_kafka():
    from rspark.cli import build_parser

    args = build_parser().parse_args(["serve", "--kafka"])
    assert args.kafka is True and build_parser().parse_args(["serve"]).kafka is False


# ------------------------------------------------------------------------------- declared through the API


def _records(service, name: str) -> list[str]:
    return [json.loads(e.data)["results"]["bindings"][0]["n"]["value"] for e in service.queries[name].results.events]


def _wait(check, what: str):
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_websocket_and_sse_sources_declared_through_the_api_feed_queries_and_are_restored(spark, tmp_path):
    """PUT /streams/S {"source": "ws://..."} and PUT /streams/T {"source": "sse://..."}: the elements the servers
    send reach a query over S and T (instants 2 and 4 are due once both streams' elements at 6 arrived); GET /streams/S
    shows the source's state; a bad URL is a 400 naming what is wrong; a restart on the checkpoint connects the
    sources again."""
    from rspark.engine.engine import Engine
    from rspark.service.app import create_app
    from rspark.service.state import Service

    elements = [ONE_LINE + FIG1[t] for t in (2, 4, 6)]
    ws = Server(elements)
    feed = Feed()
    feed.events += [(str(t), text) for t, text in zip((2, 4, 6), elements)]
    sse = feed.serve()
    ws_url = f"ws://127.0.0.1:{ws.port}/fig1"
    sse_url = f"sse://127.0.0.1:{sse.server_address[1]}/fig1"
    ckpt = str(tmp_path / "ckpt")

    def start():
        engine = Engine(spark=spark, checkpoint=ckpt)
        service = Service(engine)
        service.restore()
        return engine, service, TestClient(create_app(service))

    engine, service, client = start()
    try:
        r = client.put("/streams/B", json={"source": "ws://127.0.0.1:99999/x"})
        assert r.status_code == 400 and r.json()["error"] == ("source 'ws://127.0.0.1:99999/x': the port must be a "
                                                              "number from 1 to 65535")
        r = client.put("/streams/K", json={"source": "kafka://127.0.0.1:9092/obs"})
        assert r.status_code == 400 and "rspark serve --kafka" in r.json()["error"]
        assert client.put("/streams/S", json={"iri": EX + "S", "source": ws_url}).status_code == 201
        assert client.put("/streams/T", json={"iri": EX + "T", "source": sse_url}).status_code == 201
        assert client.put("/streams/M", json={"iri": EX + "M", "mapping": MAPPING}).status_code == 201
        r = client.put("/streams/M", json={"iri": EX + "M"})
        assert (r.status_code, r.json()["error"]) == (409, "stream M is declared with another mapping; delete it "
                                                           "first to change it")
        r = client.put("/queries/both", content=BOTH, headers={"Content-Type": SPARQL_Q})
        assert r.status_code == 201, r.text
        r = client.put("/queries/mapped", content=MAPPED, headers={"Content-Type": SPARQL_Q})
        assert r.status_code == 201, r.text
        # a mapped stream's pushes are records: a rejected record refuses the push, as malformed RDF does
        r = client.post("/streams/M", content="g,t,s,p,q\n1,2,a1,b1,\n2,,a2,b2,\n",
                        headers={"Content-Type": "text/csv"})
        assert (r.status_code, r.json()["error"], r.json()["line"]) == (
            400, "request body:3: record 2: no timestamp (the field 't' is missing)", 3)
        r = client.post("/streams/M", content=ONE_LINE + FIG1[2], headers={"Content-Type": "application/trig"})
        assert (r.status_code, r.json()["error"]) == (400, "stream M maps records: a push is CSV (text/csv), JSON "
                                                           "(application/json) or JSON Lines (application/x-ndjson), "
                                                           "not application/trig")
        csv = "g,t,s,p,q\n1,2,a1,b1,\n2,4,a2,b2,\n3,6,b1,,c1\n3,6,b2,,c2\n"
        r = client.post("/streams/M", content=csv, headers={"Content-Type": "text/csv"})
        assert (r.status_code, r.json()["accepted"], r.json()["triples"]) == (202, 3, 4), r.text
        _wait(lambda: len(_records(service, "both")) == 2 and len(_records(service, "mapped")) == 2, "the records")
        assert _records(service, "both") == ["2", "4"]  # the window (t - 4, t] of each stream at 2 and 4
        assert _records(service, "mapped") == ["1", "2"]
        # (the restart below restores the streams and their sources; a query would be registered again too)
        assert client.delete("/queries/both").status_code == 204
        assert client.delete("/queries/mapped").status_code == 204
        view = client.get("/streams/S").json()
        assert view["source"] == ws_url and view["elements"] == 3
        [source] = view["sources"]
        assert (source["kind"], source["connected"], source["messages"], source["rejected"]) == (
            "websocket", True, 3, 0)
        [source] = client.get("/streams/T").json()["sources"]
        assert (source["kind"], source["connected"], source["last_event_id"]) == ("sse", True, "6")
        assert [(s["name"], s["mapped"]) for s in client.get("/streams").json()["streams"]] == [
            ("S", False), ("T", False), ("M", True)]
    finally:
        service.close()
        engine.close()
    engine, service, client = start()
    try:
        _wait(lambda: ws.connections == 2 and len(feed.ids) == 2, "the sources connected again")
        assert feed.ids == [None, "6"]  # the SSE source resumes after the last event written
        views = {s["name"]: s for s in client.get("/streams").json()["streams"]}
        assert (views["S"]["source"], views["T"]["source"], views["M"]["mapped"]) == (ws_url, sse_url, True)
        r = client.post("/streams/M", content='{"g": 5, "t": 10, "s": "a3", "p": "b3"}',
                        headers={"Content-Type": "application/json"})
        assert (r.status_code, r.json()["accepted"]) == (202, 1), r.text  # (its mapping declared again)
        _wait(lambda: client.get("/streams/S").json()["sources"][0]["connected"], "the WebSocket again")
        assert client.get("/streams/S").json()["sources"][0]["connections"] == 1  # (this run's)
    finally:
        service.close()
        engine.close()
        ws.shutdown()
        feed.closed.set()
        sse.shutdown()
