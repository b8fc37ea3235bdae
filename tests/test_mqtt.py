"""MQTT as a live source and sink (docs/live.md, "MQTT") against a real broker: Debian's mosquitto, started by the
tests on 127.0.0.1 on a free port with persistence (a restart keeps the sessions and their queued QoS 1 messages).
The records equal a replay's over the same elements: through a broker restart, an rspark restart on its
checkpoint (messages published while it was down delivered, messages it wrote but had not acknowledged delivered
again and not counted twice), a malformed message (quarantined, counted, the rest flows) and the sink (each record
published once)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from rspark.cli import main
from rspark.engine.live.mqtt import MqttSink, client_id, parse_mqtt
from rspark.engine.live.sources import parse_source
from rspark.errors import InputError
from rspark.service.state import Service, ServiceError

EX = "http://example.org/"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
COUNT = """PREFIX : <http://example.org/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s ?p ?o } }"""
# a count window: an element taken twice would push another out of it
LAST3 = """PREFIX : <http://example.org/>
SELECT ?s ?o FROM NAMED WINDOW :w ON :S [RANGE ELEMENTS 3] WHERE { WINDOW :w { ?s :p ?o } }"""
QUERIES = {"count": COUNT, "last3": LAST3}
N = 12
BAD = "<http://example.org/G0> { <http://example.org/a> <http://example.org/b> . }\n"  # no object
NOT_UTF8 = b"<http://example.org/G0> { <http://example.org/a> <http://example.org/b> \"\xff\" . }\n"


def element(t: int, *, nquads: bool) -> str:
    """Element t of the test stream: one triple, timestamp t; as N-Quads or as TriG."""
    if nquads:
        return (f"<{EX}s{t % 3}> <{EX}p> \"{t}\"^^<{XSD_INTEGER}> <{EX}G{t}> .\n"
                f"<{EX}G{t}> <{PROV}> \"{t}\"^^<{XSD_INTEGER}> .\n")
    return (f"@prefix : <{EX}> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
            f":G{t} {{ :s{t % 3} :p {t} . }} :G{t} prov:generatedAtTime {t} .\n")


def rows(records) -> list:
    return [(r.query, r.time, sorted(tuple(sorted((k, v.n3()) for k, v in row.items())) for row in r.rows))
            for r in records]


class Mosquitto:
    """A mosquitto broker on 127.0.0.1:``port`` with persistence in ``folder``; ``stop`` (SIGTERM: it saves its
    sessions and queued messages) and ``start`` again on the same port and persistence."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/usr/local/sbin")
        assert binary, "mosquitto is not installed (apt-get install mosquitto; .ci/run installs it)"
        self.binary, self.folder = binary, folder
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.config = folder / "mosquitto.conf"
        # user: run as root, mosquitto would become the user "mosquitto", who cannot write the test's folders
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence true\n"
                               f"user {pwd.getpwuid(os.getuid()).pw_name}\n"
                               f"persistence_location {folder}/\nlog_dest file {folder}/mosquitto.log\n")
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "-c", str(self.config)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert self.proc.poll() is None, (self.folder / "mosquitto.log").read_text()
                time.sleep(0.05)
        raise AssertionError(f"mosquitto did not listen on {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)

    def url(self, topic: str) -> str:
        return f"mqtt://127.0.0.1:{self.port}/{topic}"


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    b = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
    b.start()
    yield b
    b.stop()


def publish(broker: Mosquitto, messages: list[tuple[str, str | bytes]]) -> None:
    """Publishes (topic, payload) messages with QoS 1, in order, and waits for the broker to take each."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="", protocol=mqtt.MQTTv311)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    try:
        for topic, payload in messages:
            client.publish(topic, payload, qos=1).wait_for_publish(10)
    finally:
        client.disconnect()
        client.loop_stop()


class Subscriber:
    """A test client with a persistent session on ``topic``: the messages it receives (it reconnects after a broker
    restart and gets what was queued for it)."""

    def __init__(self, broker: Mosquitto, topic: str) -> None:
        self.messages: list = []
        self.subscribed = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"test-sub-{broker.port}",
                                  clean_session=False, protocol=mqtt.MQTTv311)
        self.client.reconnect_delay_set(1, 2)
        self.client.on_connect = lambda c, u, f, rc, p: c.subscribe(topic, qos=1)
        self.client.on_subscribe = lambda *a: self.subscribed.set()
        self.client.on_message = lambda c, u, m: self.messages.append((m.topic, json.loads(m.payload)))
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()
        assert self.subscribed.wait(10)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def wait_for(condition, timeout: float = 60, what: str = "") -> None:
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def replayed(spark, tmp_path_factory) -> dict:
    """Each query's replay records over the N elements."""
    from rspark.engine.engine import Engine  # (PySpark: the pure-Python tests below run without it)

    path = tmp_path_factory.mktemp("mqtt") / "stream.nq"
    path.write_text("".join(element(t, nquads=True) for t in range(1, N + 1)))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        return {name: rows(eng.replay(q, names=[name])) for name, q in QUERIES.items()}


def source_status(eng) -> dict:
    [status] = eng.live_status()["streams"][EX + "S"]["sources"]
    return status


@pytest.mark.slow
def test_mqtt_source_and_sink_through_a_broker_restart_and_a_malformed_message(spark, tmp_path, broker, replayed,
                                                                               caplog):
    """Elements published on a topic (the source declared as rspark serve's PUT /streams/NAME declares it,
    subscribed with a wildcard; TriG and N-Quads messages) give the replay's records; the sink publishes each record
    once, as its JSON; a malformed message is quarantined and counted while the rest flows; the same message
    published twice is one element; the broker stopped and started again mid-stream: rspark is told, connects
    again, and gets what was published meanwhile."""
    from rspark.engine.engine import Engine  # (PySpark: the pure-Python tests below run without it)

    out = Subscriber(broker, "out/#")
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        sink = MqttSink(broker.url("out/{query}"), str(tmp_path / "sink.json"))
        handles = {name: eng.register(q, name=name, sinks=[sink]) for name, q in QUERIES.items()}
        service = Service(eng)  # rspark serve's PUT /streams/S with a source
        for bad, message in [("tcp://127.0.0.1:9", "rspark run.s \\(--source\\) only"),
                             ("mqtt://127.0.0.1/obs", "the port is missing")]:
            with pytest.raises(ServiceError, match=message) as refused:
                service.declare_stream("T", {"source": bad})
            assert refused.value.status == 400
        assert service.declare_stream("S", {"iri": EX + "S", "source": broker.url("obs/+")})
        wait_for(lambda: source_status(eng)["connected"], what="the source's connection")
        view = service.stream_view(service.stream("S"), EX + "S")
        assert view["source"] == broker.url("obs/+") and view["sources"][0]["connected"]
        assert service.stream("S").declaration()["source"] == broker.url("obs/+")  # (restored on a restart)
        first = [("obs/a", element(t, nquads=t % 2 == 0)) for t in range(1, 7)]
        publish(broker, [*first[:3], ("obs/b", BAD), ("obs/b", NOT_UTF8), first[2],
                         *first[3:]])
        wait_for(lambda: eng.live_status()["streams"][EX + "S"]["elements"] == 6, what="6 elements")
        assert eng.live.wait_idle(timeout=60)
        status = eng.live_status()["streams"][EX + "S"]
        assert (status["quarantined"], status["rejected"]) == (2, 2)
        errors, not_utf8 = sorted((tmp_path / "ckpt" / "quarantine").rglob("*.errors.txt"))
        assert errors.read_text().endswith(":1:73: . is not a valid RDF object (element <http://example.org/G0>)\n")
        assert Path(str(errors).removesuffix(".errors.txt")).read_text().startswith(BAD)
        assert "UTF-8" in not_utf8.read_text(), not_utf8.read_text()
        assert Path(str(not_utf8).removesuffix(".errors.txt")).read_bytes().startswith(NOT_UTF8)
        assert source_status(eng)["duplicates"] == 1 and source_status(eng)["messages"] == 8

        broker.stop()
        wait_for(lambda: not source_status(eng)["connected"], what="the source to see the broker gone")
        assert "went away" in source_status(eng)["error"] or "disconnected" in source_status(eng)["error"]
        assert any("went away" in r.getMessage() for r in caplog.records)
        broker.start()
        publish(broker, [("obs/a", element(t, nquads=t % 2 == 0)) for t in range(7, N + 1)])
        wait_for(lambda: eng.live_status()["streams"][EX + "S"]["elements"] == N, what=f"{N} elements")
        assert source_status(eng)["connected"] and source_status(eng)["connections"] == 2
        assert eng.live.wait_idle(timeout=60)
        eng.live.close(flush=True)
        records = {name: h.drain() for name, h in handles.items()}
    for name in QUERIES:
        assert rows(records[name]) == replayed[name], name
    expected = sorted((f"out/{r.query}", json.dumps(r.to_json(), sort_keys=True))
                      for rs in records.values() for r in rs)
    wait_for(lambda: len(out.messages) >= len(expected), 30, "the sink's messages")
    time.sleep(0.5)  # (a message published twice would arrive now)
    out.close()
    assert sorted((t, json.dumps(m, sort_keys=True)) for t, m in out.messages) == expected


def test_mqtt_source_restarted_on_its_checkpoint_loses_and_repeats_nothing(spark, tmp_path, broker, replayed):
    """rspark stopped hard mid-stream (its MQTT connection dropped without a word, two messages written to the
    inbox but not yet acknowledged, the engine closed without reporting what is not due), messages published while
    it is down, then a new engine on the same checkpoint: the broker delivers the queued messages and again the two
    unacknowledged ones, which are not taken twice; the records of both runs are the replay's."""
    from rspark.engine.engine import Engine  # (PySpark: the pure-Python tests below run without it)

    ckpt = str(tmp_path / "ckpt")
    spec = broker.url("restart/#")
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        handles = {name: eng.register(q, name=name) for name, q in QUERIES.items()}
        eng.source(EX + "S", spec)
        wait_for(lambda: source_status(eng)["connected"], what="the source's connection")
        publish(broker, [("restart/x", element(t, nquads=True)) for t in range(1, 7)])
        wait_for(lambda: eng.live_status()["streams"][EX + "S"]["elements"] == 6, what="6 elements")
        [src] = eng.live.streams[EX + "S"].feeds
        src.client.ack = lambda mid, qos: None  # written to the inbox, then the process dies before the ack
        publish(broker, [("restart/x", element(t, nquads=True)) for t in (7, 8)])
        wait_for(lambda: eng.live_status()["streams"][EX + "S"]["elements"] == 8, what="8 elements")
        assert eng.live.wait_idle(timeout=60)
        eng.live.streams[EX + "S"].feeds.remove(src)  # the crash: no DISCONNECT, the session stays on the broker
        src.client.loop_stop()
        src.client.socket().close()
        eng.live.close(flush=False)
        first = {name: h.drain() for name, h in handles.items()}
    publish(broker, [("restart/x", element(t, nquads=True)) for t in range(9, N + 1)])
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        handles = {name: eng.register(q, name=name) for name, q in QUERIES.items()}
        eng.source(EX + "S", spec)
        assert source_status(eng)["client_id"] == client_id(eng.live.checkpoint, EX + "S", spec)
        wait_for(lambda: eng.live_status()["streams"][EX + "S"]["elements"] == N, what=f"{N} elements")
        wait_for(lambda: source_status(eng)["duplicates"] == 2, 10, "the unacknowledged messages again")
        assert eng.live.wait_idle(timeout=60)
        assert source_status(eng)["messages"] == N - 8
        eng.live.close(flush=True)
        second = {name: h.drain() for name, h in handles.items()}
        assert eng.live_status()["streams"][EX + "S"]["elements"] == N
    for name in QUERIES:
        assert first[name], name
        assert rows(first[name]) + rows(second[name]) == replayed[name], name


@pytest.mark.parametrize("spec, message", [
    ("mqtt://localhost/obs", "the port is missing"),
    ("mqtt://localhost", "the port is missing"),
    ("mqtt://localhost:1883", "the topic is missing"),
    ("mqtt://localhost:1883/", "the topic is missing"),
    ("mqtt://localhost:99999/obs", "the port must be a number from 1 to 65535"),
    ("mqtt://localhost:port/obs", "the port must be a number"),
    ("mqtt://:1883/obs", "the port is missing"),
    ("mqtt://localhost:1883/a/#/b", "# only the last one"),
    ("mqtt://localhost:1883/a+/b", "whole topic levels"),
])
def test_bad_mqtt_sources_are_refused_with_what_is_missing(spec, message):
    with pytest.raises(InputError, match=message) as caught:
        parse_source(spec)
    assert repr(spec) in str(caught.value) and "mqtt://HOST:PORT/TOPIC" in str(caught.value)


def test_mqtt_sources_parse_with_slashes_and_wildcards_in_the_topic():
    assert parse_source("mqtt://broker.example:1883/site/+/obs/#") == (
        "mqtt", {"host": "broker.example", "port": 1883, "topic": "site/+/obs/#"})
    assert parse_source("mqtt://[::1]:1884/a") == ("mqtt", {"host": "::1", "port": 1884, "topic": "a"})
    assert parse_mqtt("mqtt://h:1/out/{query}", wildcards=False)["topic"] == "out/{query}"
    with pytest.raises(InputError, match="sink 'mqtt://h:1/out/#': a topic to publish to has no wildcard"):
        parse_mqtt("mqtt://h:1/out/#", wildcards=False)
    assert client_id("/ckpt", EX + "S", "mqtt://h:1/a") == client_id("/ckpt", EX + "S", "mqtt://h:1/a")
    assert len({client_id(c, EX + s, "mqtt://h:1/a") for c in ("/a", "/b") for s in "ST"}) == 4
    assert len(client_id("/ckpt", EX + "S", "mqtt://h:1/a")) == 23


@pytest.mark.parametrize("args, message", [
    (["--source", f"{EX}S=mqtt://localhost/obs"], "source 'mqtt://localhost/obs': the port is missing"),
    (["--source", f"{EX}S=mqtt://localhost:1883"], "source 'mqtt://localhost:1883': the topic is missing"),
    (["--source", f"{EX}S=mqtt://localhost:1883/obs", "--output", "mqtt://localhost:1883/out/#"],
     "sink 'mqtt://localhost:1883/out/#': a topic to publish to has no wildcard"),
    (["--source", f"{EX}S=tcp://localhost:9", "--payload-format", "trig"],
     "--payload-format is for mqtt://, sse:// and ws:// sources"),
])
def test_rspark_run_refuses_bad_mqtt_arguments_before_spark_starts(tmp_path, capsys, args, message):
    query = tmp_path / "q.rq"
    query.write_text(COUNT)
    assert main(["run", str(query), *args]) == 2
    assert message in capsys.readouterr().err
