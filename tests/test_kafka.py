"""Kafka as a live source and sink, against a real single-node broker the tests start (tests/kafka_broker.py):
``rspark run`` reads a topic through Spark's Kafka connector and writes its records to another topic; killed with
SIGKILL mid-stream and started again on the same checkpoint, it loses and repeats nothing, its records are a replay's
over the same elements, and a malformed record is quarantined while the rest flows. The broker stopped and started
again while ``rspark run`` reads and writes: the source and the sink report it, wait, and go on, losing and repeating
nothing."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from decimal import Decimal
from pathlib import Path

import pyspark
import pytest
from kafka import KafkaConsumer, KafkaProducer

from rspark.engine.live.registry import LiveStream, readable_key
from rspark.engine.live.sources import InboxLog, parse_source, reachable
from rspark.errors import InputError, RsparkError
from rspark.spark.kafka import connector_artifacts, connector_jars, connector_version, kafka_settings
from tests import kafka_broker
from tests.test_live import COUNT, FIG1, trig
from tests.test_live_restart import _wait_for

EX = "http://example.org/"
STAMP = "http://www.w3.org/ns/prov#generatedAtTime"
BAD = "this is not rdf .\n"


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    # the broker's and the connector's jars, fetched with Maven once into rspark's cache when they are not there
    # (.ci/run fetches them before the tests)
    if kafka_broker.missing() is not None:
        try:
            kafka_broker.fetch()
        except (OSError, subprocess.SubprocessError) as exc:
            pytest.fail(f"{kafka_broker.missing()} ({exc})")
    if connector_jars(connector_version()) is None:
        pytest.fail(f"Spark's Kafka connector {connector_version()} is not in rspark's cache and Maven could not "
                    "fetch it: `python3 -m rspark.spark.kafka` says why (needs mvn)")
    running = kafka_broker.start(tmp_path_factory.mktemp("kafka"))
    yield running
    running.stop()


def element(t: int) -> str:
    """Figure 1's element at ``t`` as one N-Quads record."""
    g = f"<{EX}G{t // 2}>"
    lines = [f'{g} <{STAMP}> "{t}"^^<http://www.w3.org/2001/XMLSchema#integer> .']
    lines += [f"<{EX}{s}> <{EX}{p}> <{EX}{o}> {g} ." for s, p, o in FIG1_TRIPLES[t]]
    assert len(FIG1_TRIPLES) == len(FIG1)
    return "\n".join(lines) + "\n"


# the mapped stream M: Figure 1's elements as JSON records, one message an element (its triples the records)
MAPPING = """prefixes: {ex: "http://example.org/"}
element: ex:G$(g)
timestamp: {field: t, format: number}
iterator: $.triples[*]
mappings:
  triple:
    s: ex:$(s)
    po:
      - [ex:p, ex:$(p)~iri]
      - [ex:q, ex:$(q)~iri]
"""
NO_TIME = '{"triples": [{"g": 9, "s": "a9", "p": "b9"}]}'


def record(t: int) -> str:
    """Figure 1's element at ``t`` as a JSON message of the mapped stream M."""
    triples = [{"g": t // 2, "t": t, "s": s, p: o} for s, p, o in FIG1_TRIPLES[t]]
    return json.dumps({"triples": triples})


FIG1_TRIPLES = {2: [("a1", "p", "b1")], 4: [("a2", "p", "b2")], 6: [("b1", "q", "c1"), ("b2", "q", "c2")],
                8: [("b2", "q", "c2")], 10: [("a3", "p", "b3"), ("b1", "q", "c1")]}


def _run(tmp: Path, servers: str, *extra: str, topics=("elements", "records"), mapped=False) -> subprocess.Popen:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    mapping = (str(tmp / "countM.rq"), "--source", f"{EX}M=kafka://{servers}/readings", "--mapping",
               f"{EX}M={tmp / 'm.yaml'}") if mapped else ()
    cmd = [sys.executable, "-m", "rspark", "run", str(tmp / "count.rq"), *mapping,
           "--source", f"{EX}S=kafka://{servers}/{topics[0]}?format=nquads", "--checkpoint", str(tmp / "ckpt"),
           "--output", f"kafka://{servers}/{topics[1]}", "--format", "jsonl",
           # a handful of elements: 2 tasks a stage, not rspark's local default of 4 or more (the suite's 2 cores)
           "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.default.parallelism=2", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


@pytest.mark.slow
def test_kafka_in_and_out_survive_sigkill_and_equal_a_replay(broker, tmp_path, spark):
    """Two streams: S of N-Quads records, M of JSON records mapped on Spark's executors (Figure 1's elements both);
    a malformed record of each is quarantined."""
    (tmp_path / "count.rq").write_text(COUNT)
    (tmp_path / "countM.rq").write_text(COUNT.replace(":S [", ":M ["))
    (tmp_path / "m.yaml").write_text(MAPPING)
    producer = KafkaProducer(bootstrap_servers=broker.servers)
    out = KafkaConsumer("records", bootstrap_servers=broker.servers, auto_offset_reset="earliest",
                        enable_auto_commit=False, group_id=None)
    received = []

    def poll() -> int:
        for batch in out.poll(timeout_ms=200).values():
            received.extend(batch)
        return len(received)

    def send(*times: int, bad: bool = False) -> None:
        for t in times:
            producer.send("elements", element(t).encode())
            producer.send("readings", record(t).encode())
            if bad:
                producer.send("elements", BAD.encode())
                producer.send("readings", NO_TIME.encode())
        producer.flush()

    send(2, bad=True)
    send(4)
    first = _run(tmp_path, broker.servers, "--max-seconds", "600", mapped=True)
    try:
        _wait_for(lambda: poll() >= 2, 300, first)  # both queries at 2 (4 waits for a later element)
        send(6)
        time.sleep(1.0)  # the micro-batch of element 6 is being read and evaluated: kill it there
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
    second = _run(tmp_path, broker.servers, "--until", "10", "--max-seconds", "600", mapped=True)
    try:
        send(8, 10)
        assert second.wait(600) == 0, second.stderr.read().decode()[-3000:]
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)

    producer.close()
    records = _check_records(spark, tmp_path, poll, received, mapped=True)
    out.close()
    assert [r["time"] for r in records if r["query"] == "count.rq"] == [2, 4, 6, 8, 10]

    # each element appended once, the malformed record quarantined with its message, the rest read
    state = json.loads((tmp_path / "ckpt" / "state.json").read_text())
    for stream, bad in ((f"{EX}S", BAD), (f"{EX}M", NO_TIME)):
        counters = state["streams"][stream]["counters"]
        assert counters["elements"] == 5 and counters["quarantined"] == 1, counters
        folder = tmp_path / "ckpt" / "quarantine" / readable_key(stream)
        [messages] = list(folder.glob("*.errors.txt"))
        copy = folder / messages.name[:-len(".errors.txt")]
        assert bad in copy.read_text() and messages.read_text().strip()
    assert messages.read_text() == (f"kafka://{broker.servers}/readings (topic readings, partition 0, offset 1): "
                                    "record 1: no timestamp (the field 't' is missing)\n")


def _check_records(spark, tmp: Path, poll, received: list, mapped: bool = False) -> list:
    """The records read from the output topic (once they are all there): each (query, instant) once, each key its
    record's, and the records a replay of the elements 2 to 10 gives (``mapped``: countM.rq's over M too).
    Returns them."""
    from rspark.engine.engine import Engine

    (tmp / "all.trig").write_text(trig(2, 4, 6, 8, 10))
    names = ("count.rq", "countM.rq") if mapped else ("count.rq",)
    with Engine(spark=spark) as eng:
        eng.add_stream(f"{EX}S", tmp / "all.trig")
        expected = [json.loads(json.dumps(r.to_json())) for r in eng.replay([COUNT], names=["count.rq"])]
    expected += [{**r, "query": "countM.rq"} for r in expected] if mapped else []
    deadline = time.time() + 60
    while poll() < len(expected) and time.time() < deadline:
        pass
    poll()  # a record written twice would be there by now
    keys = [json.loads(m.key) for m in received]
    assert len(keys) == len({(k["query"], k["time"]) for k in keys}), keys  # each (query, instant) once
    records = [json.loads(m.value) for m in received]
    assert [(r["query"], r["time"]) for r in records] == [(k["query"], k["time"]) for k in keys]

    def by_query(recs):
        return {q: [(r["time"], sorted(map(json.dumps, r["results"]["bindings"]))) for r in recs
                    if r["query"] == q] for q in names}

    assert by_query(records) == by_query(expected)
    return records


class _Lines:
    """A process's standard error read line by line in a thread (kept, and searched while it runs)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self.thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line.decode("utf-8", "replace"))

    def count(self, text: str) -> int:
        return sum(text in line for line in list(self.lines))

    def text(self) -> str:
        return "".join(self.lines)[-4000:]

    def wait(self, what: str, timeout: float, proc: subprocess.Popen, times: int = 1) -> None:
        deadline = time.time() + timeout
        while self.count(what) < times:
            assert proc.poll() is None, f"rspark run ended early: {self.text()}"
            assert time.time() < deadline, f"no {what!r} on rspark run's standard error in {timeout} s: {self.text()}"
            time.sleep(0.1)


@pytest.mark.slow
def test_a_broker_stopped_and_started_again_mid_stream_is_survived(broker, tmp_path, spark):
    """SIGTERM to the broker (its storage kept) while rspark run reads a topic and writes records to another; the
    source reports the brokers gone and the sink the records it cannot write, both wait; the broker started again
    on the same port, they go on: the records are a replay's, each (query, instant) once."""
    (tmp_path / "count.rq").write_text(COUNT)
    (tmp_path / "in").mkdir()
    producer = KafkaProducer(bootstrap_servers=broker.servers)
    for record in (element(2), element(4)):
        producer.send("elements-b", record.encode())
    producer.flush()
    producer.close()
    # the stream has a second source, a watched directory: elements arrive while the broker is away, so records
    # become due then
    run = _run(tmp_path, broker.servers, "--source", f"{EX}S={tmp_path / 'in'}", "--until", "10",
               "--max-seconds", "300",
               # the producer's waits shorter than the sink's own (5 s, 10 s): the failed write is reported sooner
               topics=("elements-b", "records-b?kafka.request.timeout.ms=2000&kafka.delivery.timeout.ms=4000"))
    stderr = _Lines(run)
    received: list = []
    out = None
    try:
        out = KafkaConsumer("records-b", bootstrap_servers=broker.servers, auto_offset_reset="earliest",
                            enable_auto_commit=False, group_id=None)

        def poll() -> int:
            for batch in out.poll(timeout_ms=200).values():
                received.extend(batch)
            return len(received)

        _wait_for(lambda: poll() >= 1, 120, run)  # count.rq at 2
        out.close()
        out = None
        broker.stop(kill=False)
        stderr.wait("no answer from the Kafka brokers", 30, run)
        assert "Connection refused" in stderr.text(), stderr.text()
        # element 6 from the directory: the record at 4 is due while the broker is away
        (tmp_path / "in" / ".e6.trig").write_text(trig(6))
        os.replace(tmp_path / "in" / ".e6.trig", tmp_path / "in" / "e6.trig")
        stderr.wait("records not written", 60, run)
        broker.restart()
        stderr.wait("answer again", 60, run)
        producer = KafkaProducer(bootstrap_servers=broker.servers)
        for record in (element(8), element(10)):
            producer.send("elements-b", record.encode())
        producer.flush()
        producer.close()
        assert run.wait(120) == 0, stderr.text()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
        if broker.process.poll() is not None:
            broker.restart()  # (for the other tests)
    out = KafkaConsumer("records-b", bootstrap_servers=broker.servers, auto_offset_reset="earliest",
                        enable_auto_commit=False, group_id=None)

    def poll_again() -> int:
        for batch in out.poll(timeout_ms=200).values():
            received.extend(batch)
        return len(received)

    received.clear()
    records = _check_records(spark, tmp_path, poll_again, received)
    out.close()
    assert [r["time"] for r in records] == [2, 4, 6, 8, 10]
    stderr.thread.join(10)
    assert stderr.count("answer again") == 1 and stderr.count("from Kafka failed") == 0, stderr.text()
    state = json.loads((tmp_path / "ckpt" / "state.json").read_text())
    assert state["streams"][f"{EX}S"]["counters"]["elements"] == 5


def test_reachable_says_whether_a_broker_accepts_connections():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        open_port = server.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            closed_port = probe.getsockname()[1]  # bound, not listening: refused
            said = reachable(f"127.0.0.1:{open_port},127.0.0.1:{closed_port}")
    assert said == f"127.0.0.1:{open_port} accepts connections; 127.0.0.1:{closed_port}: Connection refused"


def test_a_micro_batch_spark_runs_again_is_written_into_the_inbox_once(tmp_path):
    inbox = tmp_path / "inbox"
    stream = LiveStream(iri=f"{EX}s", buffer=None, inbox=str(inbox))
    log = InboxLog(str(tmp_path / "source"), stream)
    assert not log.done(0)
    log.write(0, element(2), "nq")
    assert log.done(0) and not log.done(1)
    [name] = os.listdir(inbox)
    os.remove(inbox / name)  # read and applied by the inbox reader
    again = InboxLog(str(tmp_path / "source"), stream)  # a restart: Spark runs batch 0 again
    assert again.done(0) and os.listdir(inbox) == []
    # stopped between saving the log and renaming the file in: the restart renames it
    again.write(1, element(4), "nq")
    [name] = os.listdir(inbox)
    os.replace(inbox / name, inbox / ("." + name))
    third = InboxLog(str(tmp_path / "source"), stream)
    assert third.done(1) and os.listdir(inbox) == [name]
    assert (inbox / name).read_text() == element(4)


def test_a_micro_batch_written_into_the_inbox_starts_being_read_at_once(tmp_path):
    """The inbox file of a Kafka micro-batch is handed to the runner's reading on the driver once it is in the
    inbox (runner._prefetch, as a push's file is), before the inbox reader is told of it: at a high rate the next
    micro-batch's file is parsed while the batch before is evaluated."""
    inbox = tmp_path / "inbox"
    seen = []

    def prefetch(path):
        seen.append((path, os.path.exists(path) and open(path).read(), stream.written))

    stream = LiveStream(iri=f"{EX}s", buffer=None, inbox=str(inbox), prefetch=prefetch)
    log = InboxLog(str(tmp_path / "source"), stream)
    log.write(0, element(2), "nq")
    [name] = os.listdir(inbox)
    assert seen == [(str(inbox / name), element(2), 0)]
    assert stream.written == 1


@pytest.mark.parametrize("spec, message", [
    ("kafka://127.0.0.1:9092", "expected kafka://HOST:PORT/TOPIC"),
    ("kafka:///topic", "expected kafka://HOST:PORT/TOPIC"),
    ("kafka://127.0.0.1/topic", "is not HOST:PORT"),
    ("kafka://127.0.0.1:99999/topic", "is not HOST:PORT"),
    ("kafka://127.0.0.1:9092/a topic", "is not a topic name"),
    ("kafka://127.0.0.1:9092/t?format=turtle", "format is trig, nquads or auto"),
    ("kafka://127.0.0.1:9092/t?startingOffsets=newest", "startingOffsets is earliest, latest"),
    ("kafka://127.0.0.1:9092/t?subscribe=u", "given by the source's address"),
    ("kafka://127.0.0.1:9092/t?color=red", "unknown option 'color'"),
])
def test_bad_kafka_sources(spec, message):
    with pytest.raises(InputError, match=message) as caught:
        parse_source(spec)
    assert repr(spec) in str(caught.value)


def test_kafka_source_options():
    kind, args = parse_source("kafka://k1:9092,[::1]:9093/a,b.c?format=trig&startingOffsets=latest"
                              "&kafka.security.protocol=SSL&maxOffsetsPerTrigger=100")
    assert kind == "kafka"
    assert args == {"servers": "k1:9092,[::1]:9093", "topic": "a,b.c", "format": "trig",
                    "options": {"startingOffsets": "latest", "kafka.security.protocol": "SSL",
                                "maxOffsetsPerTrigger": "100"}}
    assert parse_source("kafka://h:1/t")[1]["options"] == {"startingOffsets": "earliest"}


def test_a_session_without_the_connector_refuses_a_kafka_source(spark, tmp_path):
    from rspark.engine.engine import Engine

    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        with pytest.raises(RsparkError, match="spark.rspark.kafka"):
            eng.source(f"{EX}S", "kafka://127.0.0.1:9092/elements")
        assert f"{EX}S" not in eng.live_status()["streams"]


def test_the_connector_comes_from_the_cache_else_from_spark_jars_packages(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn
    version = connector_version()
    assert version == ("4.2.0" if pyspark.__version__.startswith("4.3.") else pyspark.__version__)
    settings = kafka_settings({"spark.jars": "/x/mine.jar"})
    assert settings["spark.jars"] == "/x/mine.jar"
    assert settings["spark.jars.packages"] == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"
    folder = tmp_path / "rspark" / "kafka" / version
    folder.mkdir(parents=True)
    artifacts = connector_artifacts(version)
    assert [a for _, a, _ in artifacts] == ["spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13",
                                            "kafka-clients", "commons-pool2"]
    for _, artifact, v in artifacts:
        (folder / f"{artifact}-{v}.jar").write_bytes(b"")
    settings = kafka_settings({"spark.jars": "/x/mine.jar"})
    assert settings["spark.jars"].split(",")[0] == "/x/mine.jar" and len(settings["spark.jars"].split(",")) == 5
    assert "spark.jars.packages" not in settings
    given = {"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1"}
    assert kafka_settings(given) == given  # the user's connector is left as it is


@pytest.mark.parametrize("extra, message", [
    (["--source", f"{EX}S=kafka://h/t"], "'h' is not HOST:PORT"),
    (["--source", f"{EX}S=kafka://h:1/t", "--output", "kafka://h:1/o", "--format", "csv"],
     "--output kafka://... writes jsonl records, not csv"),
    (["--source", f"{EX}S=kafka://h:1/t", "--output", "kafka://h:1/o,p"], "takes one topic"),
])
def test_run_refuses_bad_kafka_addresses_before_spark_starts(tmp_path, extra, message):
    (tmp_path / "count.rq").write_text(COUNT)
    done = subprocess.run([sys.executable, "-m", "rspark", "run", str(tmp_path / "count.rq"), *extra],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_the_status_line_names_a_source_waiting_for_its_broker(capsys):
    from rspark.cli import _StatusLine

    sources = [{"kind": "kafka", "source": "kafka://h:1/t", "connected": False},
               {"kind": "mqtt", "source": "mqtt://h:2/u", "connected": True}]
    status = {"streams": {f"{EX}S": {"elements": 7, "late": 1, "sources": sources}},
              "queries": {"count.rq": {"records": 3, "horizon": 8}}}
    _StatusLine(types.SimpleNamespace(status=lambda: status)).show()
    assert capsys.readouterr().err == ("\r\x1b[Krspark: live: 7 elements, 1 late, 3 records, reported up to 8, "
                                       "waiting for kafka://h:1/t")


def test_the_kafka_sink_tries_a_failed_write_again_without_writing_a_record_twice(monkeypatch):
    """A write that fails after the broker took part of it: the next try reads the topic's keys and writes the
    rest; a micro-batch's records go in one write; records at or before the topic's last instant are dropped."""
    from rspark.engine.live.sinks import KafkaSink

    topic: list = []  # (key, value) the broker holds
    attempts: list = []

    class Rec:
        def __init__(self, t: int) -> None:
            self.query, self.time = "count.rq", t

    def read_keys(self) -> None:
        for key, _ in topic:
            k = json.loads(key)
            self.last[k["query"]] = max(self.last.get(k["query"], Decimal(-1)), Decimal(k["time"]))

    def save(self, records) -> None:
        attempts.append([json.loads(key)["time"] for _, _, key, _ in records])
        if len(attempts) == 1:  # the broker took the first record, then went away
            topic.append(records[0][2:])
            raise RuntimeError("org.apache.kafka.common.errors.TimeoutException: Topic records not present")
        topic.extend(r[2:] for r in records)

    monkeypatch.setattr(KafkaSink, "_read_keys", read_keys)
    monkeypatch.setattr(KafkaSink, "_save", save)
    monkeypatch.setattr(KafkaSink, "RETRY", (0.01, 0.02))
    probes = iter(["h:1: Connection refused", "h:1 accepts connections"])  # away at the first look, then back
    monkeypatch.setattr("rspark.engine.live.sinks.reachable", lambda servers: next(probes, "h:1 accepts connections"))
    monkeypatch.setattr("rspark.engine.writers.ReplayWriter.text", lambda self, rec: f'{{"time":{rec.time}}}\n')
    sink = KafkaSink(None, "h:1", "records")
    for t in (2, 4, 6):
        sink.write(Rec(t))
    assert attempts == []  # gathered until the micro-batch's flush
    sink.flush()
    assert attempts == [[2, 4, 6], [4, 6]]
    assert [json.loads(k)["time"] for k, _ in topic] == [2, 4, 6]
    assert sink.counters == {"records": 2, "writes": 1, "failed_writes": 2} and sink.pending == []
    sink.write(Rec(6))  # evaluated again after a restart: in the topic already
    sink.flush()
    assert len(attempts) == 2
    again = KafkaSink(None, "h:1", "records")  # a restart reads the topic's keys
    again.write(Rec(4))
    again.write(Rec(8))
    again.flush()
    assert attempts[-1] == [8] and [json.loads(k)["time"] for k, _ in topic] == [2, 4, 6, 8]
    # live mode closing while the brokers are away: an error, the records kept for a restart
    topic.clear()
    attempts[:] = [[0]]  # (every try from now on fails)
    monkeypatch.setattr(KafkaSink, "_save", lambda self, records: (_ for _ in ()).throw(RuntimeError("away")))
    sink.write(Rec(10))
    sink.interrupt()
    with pytest.raises(RsparkError, match="1 records not written when live mode closed"):
        sink.flush()
    sink.close()  # (gives up: nothing more tried)
    assert sink.pending and topic == []


def test_a_spark_failure_is_said_by_its_java_exception():
    from rspark.engine.live.sinks import failure_cause

    text = ("An error occurred while calling o123.save.\n: org.apache.spark.SparkException: Job aborted due to stage "
            "failure: ...\n\tat org.apache.spark.scheduler.DAGScheduler.failJob(DAGScheduler.scala:1)\n"
            "Caused by: org.apache.kafka.common.errors.TimeoutException: Topic records not present in metadata "
            "after 5000 ms.\n")
    assert failure_cause(RuntimeError(text)) == ("Caused by: org.apache.kafka.common.errors.TimeoutException: Topic "
                                                 "records not present in metadata after 5000 ms.")
    assert failure_cause(RuntimeError(text.split("Caused by")[0])) == (
        "org.apache.spark.SparkException: Job aborted due to stage failure: ...")
    assert failure_cause(RuntimeError("\n  plain words\nmore")) == "plain words"
    assert failure_cause(RuntimeError("")) == "RuntimeError"


def test_a_failed_kafka_query_is_started_again_with_back_off(monkeypatch, caplog):
    """Spark's Kafka query that fails (rather than waits) is started again on its checkpoint after 1 s, 2 s, ...
    (30 s at most), with a warning naming the Java cause; one that cannot start again is tried after the next
    delay; the stream's list of queries holds the running one."""
    from rspark.engine.live.sources import KafkaSource

    class Query:
        def __init__(self, name: str) -> None:
            self.name, self.stopped = name, False

        def exception(self):
            return RuntimeError("An error occurred while calling o12.awaitTermination\nCaused by: "
                                "org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired")

        def stop(self) -> None:
            self.stopped = True

    waits: list[float] = []
    source = object.__new__(KafkaSource)
    source.iri, source.args = EX + "S", {"topic": "elements", "servers": "h:1"}
    source.runner = types.SimpleNamespace(closing=lambda: False)
    failed = Query("failed")
    source.stream = types.SimpleNamespace(queries=[Query("other"), failed])
    source.stopped = types.SimpleNamespace(wait=waits.append, is_set=lambda: False)
    source.counters = {"restarts": 0}
    source.query = failed
    starts = iter([RuntimeError("java.net.ConnectException: Connection refused"), Query("fresh"), RuntimeError()])

    def start_query():
        fresh = next(starts)
        if isinstance(fresh, Exception):
            raise fresh
        return fresh

    source._start_query = start_query
    with caplog.at_level("WARNING", logger="rspark.live"):
        delay = source._restart(failed, 1.0)
        assert (delay, source.query, source.counters["restarts"]) == (2.0, failed, 1)  # could not start: later
        assert source.error == "Spark's query could not start again: java.net.ConnectException: Connection refused"
        delay = source._restart(failed, delay)
    assert (delay, waits, source.counters["restarts"]) == (4.0, [1.0, 2.0], 2)
    assert source.query.name == "fresh" and [q.name for q in source.stream.queries] == ["other", "fresh"]
    assert source.connected is False and source.error == (
        "Spark's query failed: Caused by: org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired")
    assert caplog.messages[0] == (f"<{EX}S>: reading elements from Kafka failed (Caused by: org.apache.kafka.common."
                                  "errors.TimeoutException: Timeout of 60000ms expired); starting again in 1 s")
    # (at most 30 s); an exception without a text is named by its type
    assert source._restart(source.query, 30.0) == 30.0
    assert source.error == "Spark's query could not start again: RuntimeError"


@pytest.mark.slow
@pytest.mark.spark
def test_rspark_serve_kafka_reads_a_topic_a_client_declares_with_a_mapping(broker, tmp_path):
    """``rspark serve --kafka``: a client declares a stream fed by a Kafka topic of JSON records with a mapping
    (PUT /streams/M), registers a query over it, and gets its records as Server-Sent Events; a record without a
    timestamp is quarantined and shown in the stream's view with the source's state."""
    import httpx2 as httpx

    from tests.support.sse import Server, SSEReader

    producer = KafkaProducer(bootstrap_servers=broker.servers)
    for value in (record(2), NO_TIME, record(4), record(6)):
        producer.send("served", value.encode())
    producer.flush()
    producer.close()
    server = Server("--kafka", checkpoint=str(tmp_path / "ckpt"))
    try:
        server.wait_ready()
        source = f"kafka://{broker.servers}/served"
        r = httpx.put(f"{server.url}/streams/M", json={"iri": EX + "M", "source": source, "mapping": MAPPING},
                      timeout=120)
        assert r.status_code == 201, r.text
        r = httpx.put(f"{server.url}/queries/count", content=COUNT.replace(":S [", ":M ["),
                      headers={"Content-Type": "application/sparql-query"}, timeout=120)
        assert r.status_code == 201, r.text
        reader = SSEReader(f"{server.url}/queries/count/results")
        events = reader.wait_for(2, timeout=180)
        reader.close()
        assert [(e["id"], json.loads(e["data"])["results"]["bindings"][0]["n"]["value"]) for e in events] == [
            ("2", "1"), ("4", "2")]  # the window (t - 4, t] of Figure 1's elements at 2 and 4
        view = httpx.get(f"{server.url}/streams/M", timeout=30).json()
        [state] = view["sources"]
        assert (view["mapped"], view["elements"], view["quarantined"], view["rejected"]) == (True, 3, 1, 1)
        assert (state["kind"], state["source"], state["connected"], state["records"]) == ("kafka", source, True, 4)
    finally:
        code = server.stop()
    assert code == 0, server.log()
