"""Server-Sent Events as a live source (rspark.engine.live.sse): rspark services chained (the records of one's
CONSTRUCT query, as ``GET /queries/NAME/results`` sends them, are the elements of another's stream), resumed with
``Last-Event-ID`` after a restart, events that are not RDF quarantined; against an event-stream server the test
starts on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rspark.engine.live.sse import event_push, id_tag, parse_sse, record_nquads, tag_id
from rspark.errors import DataError, InputError

EX = "http://example.org/"
P = "PREFIX : <http://example.org/>\n"
PRODUCER = P + """REGISTER STREAM :D AS CONSTRUCT { ?s :seen ?v }
FROM NAMED WINDOW :w ON :S [RANGE 2 SLIDE 2] WHERE { WINDOW :w { ?s :v ?v } }"""
CONSUMER = P + """SELECT (COUNT(*) AS ?n) (SUM(?v) AS ?total)
FROM NAMED WINDOW :w ON :D [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s :seen ?v } }"""


# ------------------------------------------------------------------------------------------------ pure parts


@pytest.mark.parametrize(("spec", "message"), [
    ("sse://", "the host is missing"),
    ("sse://:8080/x", "the host is missing"),
    ("sse://localhost:99999/x", "the port must be a number from 1 to 65535"),
    ("sse://localhost:port/x", "the port must be a number from 1 to 65535"),
    ("http://localhost:8080/x", "expected sse://HOST:PORT/PATH"),
])
def test_bad_sse_sources_are_refused_with_what_is_wrong(spec, message):
    with pytest.raises(InputError) as info:
        parse_sse(spec)
    assert message in str(info.value) and repr(spec) in str(info.value)


def test_sse_urls():
    assert parse_sse("sse://127.0.0.1:8175/queries/q/results") == {"url": "http://127.0.0.1:8175/queries/q/results"}
    assert parse_sse("sses://example.org") == {"url": "https://example.org/"}


def test_an_event_id_round_trips_through_an_inbox_file_name():
    for event_id in ("2026-03-01T13:00:10Z", "42", "é/ü: x"):
        name = f"00000000000000000001-12-00003-{id_tag(event_id)}.nq"
        assert tag_id(name) == event_id
    assert tag_id("00000000000000000001-12-00003.nq") is None


def test_a_chained_record_is_one_element_with_its_own_blank_nodes():
    import pyoxigraph as ox

    doc = {"query": "http://example.org/q", "time": "2026-03-01T13:00:10Z",
           "triples": ["_:b0 <http://example.org/p> \"x y\" .", "_:b0 <http://example.org/q> <http://example.org/o> ."]}
    quads = list(ox.parse(record_nquads(doc, "http://h:1/r", EX + "at", "s1").encode(), format=ox.RdfFormat.N_QUADS))
    graph = ox.NamedNode("http://h:1/r#2026-03-01T13%3A00%3A10Z")
    assert {q.graph_name for q in quads} == {graph, ox.DefaultGraph()}
    assert [q.object for q in quads if q.graph_name == ox.DefaultGraph()] == [
        ox.Literal("2026-03-01T13:00:10Z", datatype=ox.NamedNode("http://www.w3.org/2001/XMLSchema#dateTime"))]
    assert {q.subject for q in quads if q.graph_name == graph} == {ox.BlankNode("b0xs1")}
    numeric = record_nquads({"query": "q", "time": 7, "triples": []}, "http://h:1/r", EX + "at", "s")
    assert '"7"^^<http://www.w3.org/2001/XMLSchema#integer>' in numeric
    with pytest.raises(DataError, match="holds solutions or a boolean, not one graph"):
        event_push(json.dumps({"query": "q", "time": 1, "head": {}, "boolean": True}), "http://h:1/r", EX, "s")
    with pytest.raises(DataError, match="neither a date-time nor a number"):
        record_nquads({"query": "q", "time": None, "triples": []}, "http://h:1/r", EX + "at", "s")
    assert event_push("<a> <b> <c> <g> .", "u", EX, "s") == ("<a> <b> <c> <g> .", None)
    assert event_push('{"@id": "x"}', "u", EX, "s")[1] == "jsonld"


_TERMS = st.sampled_from(["<http://e/a>", "_:b", '"x"', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>', "<", '"',
                          " ", "."])
_RECORDS = st.fixed_dictionaries(
    {"query": st.text(max_size=5), "time": st.one_of(st.text(max_size=25), st.integers(), st.floats(), st.none()),
     "triples": st.one_of(st.lists(st.lists(_TERMS, max_size=5).map(" ".join), max_size=3), st.text(max_size=5))})


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), _RECORDS.map(json.dumps)))
def test_any_event_is_pushed_or_refused_with_a_data_error(data):
    """Fuzz: an event's data is RDF text, JSON-LD or a chained record, or a DataError naming what it is not."""
    try:
        text, fmt = event_push(data, "http://h:1/r", EX + "at", "s")
    except DataError:
        return
    assert fmt in (None, "jsonld", "nquads") and isinstance(text, str)


# ------------------------------------------------------------------------------------------- a live chain


class Feed:
    """The events an event-stream server sends: each connection gets the events after its ``Last-Event-ID``, then
    waits for more; ``ids`` lists the Last-Event-ID of each connection."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.ids: list[str | None] = []
        self.closed = threading.Event()

    def serve(self) -> ThreadingHTTPServer:
        feed = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # (quiet)
                pass

            def do_GET(self):
                last = self.headers.get("Last-Event-ID")
                feed.ids.append(last)
                ids = [i for i, _ in feed.events]
                at = ids.index(last) + 1 if last in ids else 0
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    while not feed.closed.is_set():
                        while at < len(feed.events):
                            event_id, data = feed.events[at]
                            self.wfile.write(f"id: {event_id}\nevent: result\ndata: {data}\n\n".encode())
                            self.wfile.flush()
                            at += 1
                        self.wfile.write(b": ping\n\n")
                        self.wfile.flush()
                        time.sleep(0.05)
                except OSError:  # the client went away
                    pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def _rows(records) -> list:
    return [(r.time, [(row["n"].lexical, row["total"].lexical) for row in r.rows]) for r in records]


def test_a_chained_stream_resumes_after_a_restart_and_quarantines_what_is_not_rdf(spark, tmp_path):
    """Another rspark's CONSTRUCT records (at 2, 4, 6, 8) as events: a query over them live gives the records a
    replay of both queries as a network gives. The engine is closed after two events and started again on its
    checkpoint: it asks for the events after the second (Last-Event-ID) and takes each once. A SELECT record and a
    broken JSON event are quarantined, counted, and the stream goes on."""
    from rspark.engine.engine import Engine

    path = tmp_path / "s.trig"
    path.write_text("@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n" + "".join(
        f":g{t} {{ :s{t} :v {t} . }} :g{t} prov:generatedAtTime {t} .\n" for t in range(1, 9)))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        recs = list(eng.replay([PRODUCER, CONSUMER], names=["producer", "consumer"]))
    produced = [r for r in recs if r.query == EX + "D"]
    expected = _rows(r for r in recs if r.query == "consumer")
    assert [r.time for r in produced] == [2, 4, 6, 8] and len(expected) == 4
    events = [(str(r.time), json.dumps(r.to_json())) for r in produced]
    feed = Feed()
    server = feed.serve()
    url = f"sse://127.0.0.1:{server.server_address[1]}/queries/producer/results"
    ckpt = str(tmp_path / "ckpt")
    try:
        feed.events += events[:2]
        with Engine(spark=spark, checkpoint=ckpt) as eng:
            eng.source(EX + "D", url)
            h = eng.register(CONSUMER, name="consumer")
            deadline = time.monotonic() + 120
            while eng.live_status()["streams"].get(EX + "D", {}).get("elements", 0) < 2:
                assert time.monotonic() < deadline, eng.live_status()
                time.sleep(0.1)
            assert eng.live.wait_idle(timeout=120)
            got = _rows(h.drain())
            eng.live.close(flush=False)
        feed.events += [("bad1", json.dumps({"query": "q", "time": 5, "head": {"vars": []},
                                             "results": {"bindings": []}})),
                        ("bad2", "{not json"), *events[2:]]
        with Engine(spark=spark, checkpoint=ckpt) as eng:
            eng.source(EX + "D", url)
            h = eng.register(CONSUMER, name="consumer")
            deadline = time.monotonic() + 120
            while eng.live_status()["streams"][EX + "D"]["elements"] < 4:
                assert time.monotonic() < deadline, eng.live_status()
                time.sleep(0.1)
            assert eng.live.wait_idle(timeout=120)
            status = eng.live_status()["streams"][EX + "D"]
            eng.live.close(flush=True)
            got += _rows(h.drain())
    finally:
        feed.closed.set()
        server.shutdown()
    assert feed.ids == [None, "4"]  # the restart resumed after the second event
    assert (status["elements"], status["quarantined"]) == (4, 2)
    [source] = status["sources"]
    assert (source["kind"], source["rejected"], source["last_event_id"]) == ("sse", 2, "8")
    assert got == expected
