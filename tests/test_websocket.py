"""WebSocket as a live source (rspark.engine.live.websocket): TripleWave's JSON-LD items, another rspark's CONSTRUCT
record and an RDF Message Log as messages of a WebSocket server the test starts on 127.0.0.1 (the ``websockets``
library's own server); a query over them live gives the records a replay of the same elements gives; messages that
are not RDF are quarantined and the others flow; the server closed and started again is survived."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rspark.engine.live.sources import parse_source
from rspark.engine.live.websocket import HEADER, content_format, message_push, parse_ws
from rspark.errors import DataError, InputError

EX = "http://example.org/"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
DT = "http://www.w3.org/2001/XMLSchema#dateTime"
KINDS = """PREFIX : <http://example.org/>
SELECT ?e ?kind FROM NAMED WINDOW :w ON :tw [RANGE PT10S STEP PT10S]
WHERE { WINDOW :w { ?e a ?kind FILTER(STRSTARTS(STR(?kind), "http://example.org/")) } }"""


# ------------------------------------------------------------------------------------------------ pure parts


@pytest.mark.parametrize(("spec", "message"), [
    ("ws://", "the host is missing"),
    ("ws://:8080/x", "the host is missing"),
    ("ws://localhost:99999/x", "the port must be a number from 1 to 65535"),
    ("ws://localhost:0/x", "the port must be a number from 1 to 65535"),
    ("wss://localhost:port/x", "the port must be a number from 1 to 65535"),
    ("ws://localhost:8080/x#frag", "a WebSocket URL has no fragment"),
    ("ws://localhost:8080/a b", "a URL holds no white space or control character"),
    ("ws://[nothost]:1/x", "expected ws://HOST:PORT/PATH or wss://HOST:PORT/PATH"),
    ("http://localhost:8080/x", "expected ws://HOST:PORT/PATH or wss://HOST:PORT/PATH"),
])
def test_bad_websocket_sources_are_refused_with_what_is_wrong(spec, message):
    with pytest.raises(InputError) as info:
        parse_ws(spec)
    assert message in str(info.value) and repr(spec) in str(info.value)


def test_websocket_urls():
    assert parse_ws("ws://127.0.0.1:8175/tw") == {"url": "ws://127.0.0.1:8175/tw"}
    assert parse_ws(" wss://example.org ") == {"url": "wss://example.org/"}
    assert parse_ws("ws://[::1]:9/s?from=now") == {"url": "ws://[::1]:9/s?from=now"}
    assert parse_source("ws://127.0.0.1:8175/tw") == ("ws", {"url": "ws://127.0.0.1:8175/tw"})
    assert parse_source("wss://example.org/tw")[0] == "ws"


def test_what_a_message_pushes():
    record = {"query": EX + "q", "time": "2012-10-14T08:36:12Z", "triples": [f"<{EX}r1> <{RDF_TYPE}> <{EX}Like> ."]}
    text, fmt = message_push(json.dumps(record), "ws://h:1/tw", PROV, "s")
    assert fmt == "nquads" and f'<ws://h:1/tw#2012-10-14T08%3A36%3A12Z> <{PROV}> "2012-10-14T08:36:12Z"^^<{DT}> .' \
        in text.splitlines()
    assert message_push('{"@id": "x"}', "u", PROV, "s") == ('{"@id": "x"}', "jsonld")
    assert message_push("<a> <b> <c> <g> .", "u", PROV, "s") == ("<a> <b> <c> <g> .", None)
    # a binary message: UTF-8 text is read as a text message is
    assert message_push("<é> <b> <c> <g> .".encode(), "u", PROV, "s") == ("<é> <b> <c> <g> .", None)
    with pytest.raises(DataError, match=r"a binary message of 3 bytes that is not UTF-8 text \(byte 1: b'\\xff'\)"):
        message_push(b"a\xffb", "u", PROV, "s")
    with pytest.raises(DataError, match="holds solutions or a boolean, not one graph"):
        message_push(json.dumps({"query": "q", "time": 1, "head": {}, "boolean": True}), "u", PROV, "s")
    # the handshake's RDF-Message-Content-Type: every message in that format
    log = 'VERSION "1.2-messages"\n<a> <b> <c> .\nMESSAGE\n<d> <e> <f> .\n'
    assert message_push(log, "u", PROV, "s", "application/n-triples; version=1.2-messages") == (
        log, "ntriples-messages")
    assert message_push("<a> <b> <c> .", "u", PROV, "s", "application/n-quads") == ("<a> <b> <c> .", "nquads")
    assert message_push("<a> <b> <c> .", "u", PROV, "s", "text/turtle") == ("<a> <b> <c> .", "trig")
    assert message_push('{"@id": "x"}', "u", PROV, "s", "application/ld+json") == ('{"@id": "x"}', "jsonld")
    assert content_format("application/x-ld+ndjson", "") == "ndjsonld"
    assert content_format("application/trig", 'VERSION "1.2-messages"\n<a> <b> <c> .') == "trig-messages"
    with pytest.raises(DataError) as info:
        message_push("a,b", "u", PROV, "s", "text/csv")
    assert str(info.value).startswith(f"the server's {HEADER} 'text/csv' is not an RDF syntax rspark reads")


_MEDIA = st.sampled_from([None, "application/trig", "application/n-quads; version=1.2-messages",
                          "application/ld+json", "application/x-ld+ndjson", "text/turtle;version=\"1.1-messages\"",
                          "text/csv", "", ";;", "application/trig; version"])
_TERMS = st.sampled_from(["<http://e/a>", "_:b", '"x"', "<", '"', " ", ".", "{", "}", "VERSION", '"1.2-messages"',
                          "MESSAGE", "\n"])
_RECORDS = st.fixed_dictionaries(
    {"query": st.text(max_size=5), "time": st.one_of(st.text(max_size=25), st.integers(), st.floats(), st.none()),
     "triples": st.one_of(st.lists(st.lists(_TERMS, max_size=5).map(" ".join), max_size=3), st.text(max_size=5))})
_MESSAGES = st.one_of(st.text(max_size=60), st.binary(max_size=40), st.lists(_TERMS, max_size=12).map(" ".join),
                      _RECORDS.map(json.dumps), _RECORDS.map(lambda r: json.dumps(r).encode()))


@settings(max_examples=200, deadline=None)
@given(_MESSAGES, _MEDIA)
def test_any_message_is_pushed_or_refused_with_a_data_error(data, media_type):
    """Fuzz: a message (text or binary, with any content type) is RDF text, JSON-LD, a converted format or a
    chained record for Engine.push, or a DataError naming what it is not."""
    try:
        text, fmt = message_push(data, "ws://h:1/r", EX + "at", "s", media_type)
    except DataError as exc:
        assert str(exc)
        return
    assert isinstance(text, str)
    assert fmt in (None, "jsonld", "nquads", "trig", "ndjsonld", "trig-messages", "nquads-messages",
                   "turtle-messages", "ntriples-messages")


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["ws://", "wss://", "ws:/", "sse://"]), st.text(max_size=30))
def test_any_websocket_spec_parses_or_is_refused_with_an_input_error(scheme, rest):
    """Fuzz: a spec is a ws(s) URL with a host and a path, or an InputError naming the spec."""
    spec = scheme + rest
    try:
        url = parse_ws(spec)["url"]
    except InputError as exc:
        assert repr(spec) in str(exc)
        return
    assert url.startswith(("ws://", "wss://")) and "#" not in url and not any(c.isspace() for c in url)


# ------------------------------------------------------------------------------------------- a live stream


class Server:
    """A WebSocket server on 127.0.0.1 (websockets' own, in a thread): each connection is sent ``messages``, then
    held open until the server shuts down. ``headers``: added to the handshake's response."""

    def __init__(self, messages: list, headers: dict | None = None, port: int = 0) -> None:
        from websockets.sync.server import serve

        self.messages, self.headers, self.connections = messages, headers or {}, 0

        def handler(connection) -> None:
            self.connections += 1
            for message in self.messages:
                connection.send(message)
            for _ in connection:  # (until the client or the server closes the connection)
                pass

        def response(connection, request, answer):
            for key, value in self.headers.items():
                answer.headers[key] = value

        self.server = serve(handler, "127.0.0.1", port, process_response=response)
        self.port = self.server.socket.getsockname()[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def shutdown(self) -> None:
        self.server.shutdown()


def _wait(eng, iri: str, check, what: str) -> dict:
    deadline = time.monotonic() + 60
    while True:
        status = eng.live_status()["streams"].get(iri)
        if status is not None and check(status):
            return status
        assert time.monotonic() < deadline, (what, status)
        time.sleep(0.05)


def _rows(records) -> list:
    return [(r.time, sorted((row["e"].value, row["kind"].value) for row in r.rows)) for r in records]


@pytest.mark.testdata
def test_websocket_messages_live_equal_a_replay_and_a_restarted_server_is_survived(spark, testdata, tmp_path, logs):
    """TripleWave's first twelve items (JSON-LD), a CONSTRUCT record of another rspark and an RDF Message Log of two
    messages are sent by a server that is shut down after the first part and started again on the same port with
    the rest (the handshake then says RDF-Message-Content-Type: application/ld+json; one item comes in a binary
    frame). A broken JSON message, a SELECT record and a binary message that is not UTF-8 are quarantined by the
    source and counted (RDF text that does not parse is written and quarantined by the stream's loader, as a pushed
    file is: tests/test_live.py). The live records equal a replay over the same elements (the record and the log's
    messages written by hand as JSON-LD items)."""
    from rspark.engine.engine import Engine

    lines = (testdata / "triplewave" / "examples" / "rdfstream" / "stream.rs").read_text().splitlines()
    items = [line.strip().lstrip("[").rstrip(",").rstrip("]") for line in lines[:12]]
    assert all(json.loads(item)["@id"].startswith("http://192.168.1.199/TripleWave/") for item in items)
    record = json.dumps({"query": EX + "producer", "time": "2012-10-14T08:36:12Z",
                         "triples": [f"<{EX}r1> <{RDF_TYPE}> <{EX}LikePost> ."]})
    log = (f'VERSION "1.2-messages"\n<{EX}r2> <{RDF_TYPE}> <{EX}AddForumMembership> .\n'
           f'<{EX}r2> <{PROV}> "2012-10-14T08:36:13Z"^^<{DT}> .\nMESSAGE\n'
           f'<{EX}r3> <{RDF_TYPE}> <{EX}LikeComment> .\n<{EX}r3> <{PROV}> "2012-10-14T08:36:14Z"^^<{DT}> .\n')
    select = json.dumps({"query": EX + "q", "time": 5, "head": {"vars": []}, "results": {"bindings": []}})
    first = [*items[:3], record, "{not json", select, b"\xff\xfe<a> <b> <c> .", log, *items[3:5]]
    second = [*items[5:8], items[8].encode("utf-8"), *items[9:]]
    # the same elements for a replay: the record and the log's messages as JSON-LD items
    extra = [{PROV: t, "@id": f"{EX}g{n}", "@graph": [{"@id": f"{EX}r{n}", "@type": kind}]}
             for n, t, kind in ((1, "2012-10-14T08:36:12Z", EX + "LikePost"),
                                (2, "2012-10-14T08:36:13Z", EX + "AddForumMembership"),
                                (3, "2012-10-14T08:36:14Z", EX + "LikeComment"))]
    path = tmp_path / "tw.jsonld"
    path.write_text(json.dumps([*map(json.loads, items[:3]), *extra, *map(json.loads, items[3:])]))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "tw", path)
        assert eng.errors == []
        expected = _rows(eng.replay(KINDS))
    assert [t for t, _ in expected] == [f"2012-10-14T08:36:{s}Z" for s in ("10", "20", "30")]
    assert (EX + "r1", EX + "LikePost") in expected[1][1] and (EX + "r3", EX + "LikeComment") in expected[1][1]

    server = Server(first)
    iri = EX + "tw"
    try:
        with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
            eng.source(iri, f"ws://127.0.0.1:{server.port}/tw")
            h = eng.register(KINDS, name="kinds")
            status = _wait(eng, iri, lambda s: s["elements"] == 8 and s["quarantined"] == 3, "the first part")
            [source] = status["sources"]
            assert {k: source[k] for k in ("kind", "connected", "error", "content_type", "messages", "binary",
                                           "rejected", "connections", "disconnections")} == {
                "kind": "websocket", "connected": True, "error": None, "content_type": None, "messages": 10,
                "binary": 1, "rejected": 3, "connections": 1, "disconnections": 0}
            server.shutdown()
            status = _wait(eng, iri, lambda s: not s["sources"][0]["connected"], "the disconnection")
            [source] = status["sources"]
            assert source["disconnections"] == 1 and source["error"] == "the server closed the connection (code 1001)"
            server = Server(second, headers={HEADER: "application/ld+json"}, port=server.port)
            status = _wait(eng, iri, lambda s: s["elements"] == 15, "the second part")
            assert eng.live.wait_idle(timeout=60)
            [source] = eng.live_status()["streams"][iri]["sources"]
            assert {k: source[k] for k in ("connected", "error", "content_type", "messages", "binary", "rejected",
                                           "connections", "disconnections")} == {
                "connected": True, "error": None, "content_type": "application/ld+json", "messages": 17,
                "binary": 2, "rejected": 3, "connections": 2, "disconnections": 1}
            quarantine = sorted(p.name for p in (tmp_path / "ckpt" / "quarantine").rglob("*.errors.txt"))
            reasons = "".join(p.read_text() for p in (tmp_path / "ckpt" / "quarantine").rglob("*.errors.txt"))
            eng.live.close(flush=True)
            got = _rows(h.drain())
    finally:
        server.shutdown()
    url = f"ws://127.0.0.1:{server.port}/tw"
    assert len(quarantine) == 3
    warned = [r.getMessage() for r in logs.records if r.levelname == "WARNING" and "the WebSocket" in r.getMessage()]
    assert warned[0] == (f"<{iri}>: the WebSocket {url}: the server closed the connection (code 1001); connecting "
                         "again in 1 s")
    assert f"{url}: message 5: " in reasons and "not JSON" in reasons
    assert f"{url}: message 6: an rspark record of query 'http://example.org/q' at 5 holds solutions or a " \
           "boolean, not one graph" in reasons
    assert f"{url}: message 7: a binary message of 15 bytes that is not UTF-8 text (byte 0: b'\\xff')" in reasons
    assert got == expected
