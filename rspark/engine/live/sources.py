"""Live sources besides a watched directory and ``engine.push``: a Kafka topic, a TCP socket of N-Quads lines, a
paced replay of a recorded stream, an MQTT topic (:mod:`rspark.engine.live.mqtt`), a Server-Sent Events stream
(:mod:`rspark.engine.live.sse`) and a WebSocket (:mod:`rspark.engine.live.websocket`). Each writes what it receives
into the stream's inbox (:func:`~rspark.engine.live.runner.write_inbox`), where the stream's inbox reader reads it:
one path into the buffer for every source.

A Kafka topic is read by Spark's Kafka connector (Structured Streaming; :mod:`rspark.spark.kafka` puts it on the
session), its offsets kept in a checkpoint of Spark's under rspark's; each micro-batch's record values become one
inbox file, written once per micro-batch id (:class:`InboxLog`) although Spark runs a micro-batch again after a
crash."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import threading
import time
from decimal import Decimal
from pathlib import Path
from urllib.parse import parse_qsl

from rspark.engine.live.files import save_json
from rspark.engine.live.mqtt import SCHEME as MQTT
from rspark.engine.live.mqtt import MqttSource, parse_mqtt
from rspark.engine.live.records import NoRecordMapped, map_messages
from rspark.engine.live.registry import stream_key
from rspark.engine.live.sinks import failure_cause, reachable
from rspark.engine.live.sse import SCHEMES as SSE
from rspark.engine.live.sse import SseSource, parse_sse
from rspark.engine.live.websocket import SCHEMES as WS
from rspark.engine.live.websocket import WebSocketSource, parse_ws
from rspark.errors import DataError, InputError, RsparkError
from rspark.model.codec import encode_literal
from rspark.model.time import TimeKind
from rspark.model.timestamps import parse_validity
from rspark.spark.loading.payload import RECORD_FORMATS, message_format

log = logging.getLogger("rspark.live")


# Spark's Kafka source options a kafka:// spec may give besides format= and kafka.* (the consumer's settings)
KAFKA_OPTIONS = ("startingOffsets", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay",
                 "failOnDataLoss", "minPartitions", "groupIdPrefix", "fetchOffset.numRetries",
                 "fetchOffset.retryIntervalMs", "kafkaConsumer.pollTimeoutMs")
KAFKA_TRIGGER = 0.5  # seconds between two looks at a Kafka topic
KAFKA_FORMATS = {"trig": "trig", "nquads": "nq", "nq": "nq", "auto": None}
MESSAGE_SOURCES = ("mqtt", "sse", "ws")  # the sources that take a payload_format
MAPPED_SOURCES = ("dir", "kafka", *MESSAGE_SOURCES)  # the sources that take a mapping (JSON and CSV records)
_TOPIC = re.compile(r"[A-Za-z0-9._-]+")
_HOSTPORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})")


def parse_kafka(spec: str) -> dict:
    """``kafka://HOST:PORT[,HOST:PORT...]/TOPIC[,TOPIC...][?format=trig|nquads|auto|json|jsonl|csv&startingOffsets=
    earliest|latest&kafka.KEY=VALUE&OPTION=VALUE...]`` -> its arguments (docs/live.md, Kafka; json, jsonl and csv
    with a mapping)."""
    body = spec.strip()[len("kafka://"):]
    where, _, query = body.partition("?")
    servers, slash, topics = where.partition("/")
    topics = topics.rstrip("/")
    usage = ("expected kafka://HOST:PORT/TOPIC[?format=trig|nquads|json|jsonl|csv&startingOffsets=earliest|latest"
             "&kafka.KEY=VALUE]")
    if not slash or not servers or not topics:
        raise InputError(f"source {spec!r}: {usage}")
    for hostport in servers.split(","):
        found = _HOSTPORT.fullmatch(hostport)
        if not found or not 0 < int(found.group(2)) < 65536:
            raise InputError(f"source {spec!r}: {hostport!r} is not HOST:PORT; {usage}")
    for topic in topics.split(","):
        if not _TOPIC.fullmatch(topic):
            raise InputError(f"source {spec!r}: {topic!r} is not a topic name (letters, digits, '.', '_', '-')")
    fmt, options = "auto", {"startingOffsets": "earliest"}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if key == "format":
            if value.lower() not in KAFKA_FORMATS and value.lower() not in RECORD_FORMATS:
                raise InputError(f"source {spec!r}: format is trig, nquads or auto (or with a mapping csv, json or "
                                 f"jsonl), not {value!r}")
            fmt = value.lower()
        elif key == "startingOffsets":
            if value not in ("earliest", "latest") and not value.lstrip().startswith("{"):
                raise InputError(f"source {spec!r}: startingOffsets is earliest, latest or Spark's JSON of "
                                 f"offsets per partition, not {value!r}")
            options[key] = value
        elif key in ("kafka.bootstrap.servers", "subscribe", "subscribePattern", "assign"):
            raise InputError(f"source {spec!r}: {key} is given by the source's address, kafka://HOST:PORT/TOPIC")
        elif key.startswith("kafka.") and len(key) > len("kafka.") or key in KAFKA_OPTIONS:
            options[key] = value
        else:
            raise InputError(f"source {spec!r}: unknown option {key!r} (format, kafka.<consumer setting>, "
                             f"{', '.join(KAFKA_OPTIONS)})")
    if query and not parse_qsl(query, keep_blank_values=True):
        raise InputError(f"source {spec!r}: the options after ? are KEY=VALUE pairs joined by &")
    return {"servers": servers, "topic": topics, "format": fmt, "options": options}


def parse_source(spec: str) -> tuple[str, dict]:
    """``DIR`` | ``kafka://HOST:PORT/TOPIC`` | ``tcp://HOST:PORT`` | ``replay:PATH@SPEED`` |
    ``mqtt://HOST:PORT/TOPIC`` | ``sse://HOST:PORT/PATH`` | ``ws://HOST:PORT/PATH`` -> (kind, arguments)."""
    text = spec.strip()
    if text.startswith("kafka://"):
        return "kafka", parse_kafka(spec)
    if text.startswith(tuple(SSE)):
        return "sse", parse_sse(text)
    if text.startswith(WS):
        return "ws", parse_ws(text)
    if text.startswith(MQTT):
        return "mqtt", parse_mqtt(text)
    if text.startswith("tcp://"):
        hostport = text[len("tcp://"):].rstrip("/")
        host, sep, port = hostport.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InputError(f"source {spec!r}: expected tcp://HOST:PORT")
        return "tcp", {"host": host.strip("[]"), "port": int(port)}
    if text.startswith("replay:"):
        body = text[len("replay:"):]
        path, sep, speed = body.rpartition("@")
        if not sep:
            path, speed = body, "1"
        try:
            factor = Decimal(speed)
        except ArithmeticError:
            raise InputError(f"source {spec!r}: the speed after @ must be a number (replay:PATH@SPEED)") from None
        if factor <= 0:
            raise InputError(f"source {spec!r}: the speed must be positive")
        if not os.path.isfile(path):
            raise InputError(f"source {spec!r}: no such file: {path}")
        return "replay", {"path": path, "speed": float(factor)}
    if os.path.isdir(text):
        return "dir", {"directory": text}
    raise InputError(f"source {spec!r}: not a directory, kafka://HOST:PORT/TOPIC, tcp://HOST:PORT, "
                     "replay:PATH@SPEED, mqtt://HOST:PORT/TOPIC, sse://HOST:PORT/PATH or ws://HOST:PORT/PATH")


def start_source(engine, iri: str, spec: str, **options):
    """Starts the source ``spec`` feeding the live stream ``iri``; ``options``: the stream's settings
    (``lateness``, ``arrival_time``, ...) and, for ``mqtt://``, ``payload_format``. Returns the source's object
    (an :class:`MqttSource`, an :class:`SseSource`, a :class:`WebSocketSource`, a :class:`KafkaSource`, a
    :class:`PacedReplay`; None for a directory or TCP)."""
    kind, args = parse_source(spec)
    runner = engine.live
    if kind not in MESSAGE_SOURCES and options.pop("payload_format", None) is not None:
        raise InputError(f"source {spec!r}: payload_format is an option of mqtt://, sse:// and ws:// sources"
                         + (" (a Kafka address says format=...)" if kind == "kafka" else ""))
    if options.get("mapping") is not None and kind not in MAPPED_SOURCES:
        raise InputError(f"source {spec!r}: a mapping (JSON and CSV records) is taken by directory, kafka://, "
                         f"mqtt://, sse:// and ws:// sources and pushes, not by {kind} sources")
    if kind == "dir":
        runner.watch(iri, args["directory"], **options)
    elif kind == "mqtt":
        return MqttSource(runner, iri, spec.strip(), **options).start()
    elif kind == "sse":
        return SseSource(runner, iri, spec.strip(), **options).start()
    elif kind == "ws":
        return WebSocketSource(runner, iri, spec.strip(), **options).start()
    elif kind == "tcp":
        listen_tcp(runner, iri, args["host"], args["port"], **options)
    elif kind == "kafka":
        return listen_kafka(runner, iri, args, spec.strip(), **options)
    else:
        return PacedReplay(runner, iri, args["path"], args["speed"], **options).start()
    return None


def listen_tcp(runner, iri: str, host: str, port: int, **options) -> None:
    """Reads N-Quads lines from a TCP server (Spark's socket source); each micro-batch's lines become one inbox
    file. Spark's socket source keeps no offsets: lines sent while rspark was down are not read again."""
    st = runner.stream(iri, **options)
    lines = runner.spark.readStream.format("socket").option("host", host).option("port", port).load()

    def on_batch(df, batch_id: int) -> None:
        values = [r["value"] for r in df.collect()]
        text = "".join(v + "\n" for v in values if v is not None)
        if not text.strip():
            return
        if st.arrival_time:
            # delayed: stamp imports pyoxigraph, needed only for a stream stamped on arrival
            from rspark.engine.live.stamp import stamp_arrivals

            text = stamp_arrivals(text, "nquads", st.timestamp_predicate, time.time())
        st.write(text, "nq")

    query = (lines.writeStream.foreachBatch(on_batch)
             .trigger(processingTime=f"{int(runner.trigger * 1000)} milliseconds")
             .queryName(f"rspark-{stream_key(iri)}-tcp").start())
    st.queries.append(query)


def listen_kafka(runner, iri: str, args: dict, spec: str | None = None, **options) -> KafkaSource:
    """Reads a Kafka topic (:func:`parse_kafka`'s ``args``) with Spark's Kafka source (:class:`KafkaSource`)."""
    return KafkaSource(runner, iri, args, spec, **options).start()


class KafkaSource:
    """A Kafka topic read by Spark's Kafka source; each micro-batch's record values (in partition and offset order)
    become one inbox file. The offsets are in Spark's checkpoint, ``CHECKPOINT/streams/<key>/sources/kafka-<key>/
    spark``: a restart goes on after the last micro-batch Spark committed, and one Spark runs again is written into
    the inbox only if it was not before (:class:`InboxLog`).

    A thread watches the Spark query. When the brokers go away Spark's query does not fail: its trigger waits,
    asking for the topic's latest offsets, until they answer again (measured with Kafka 4.1 and the 4.2 connector).
    A trigger that has not ended after ``STALL`` seconds is reported (a warning, ``connected`` False and ``error``
    in the stream's status, the brokers' addresses tried with a TCP connection to say whether they are reachable),
    again every ``REPORT_EVERY`` seconds, and its end too ("the brokers answer again"). A query that fails (a task
    whose fetch timed out, say) is started again on the same checkpoint after 1 s, doubling to 30 s while it keeps
    failing, with a warning; its micro-batches go on after the last one it committed."""

    STALL = 5.0  # seconds a trigger may take before the source is reported as waiting for the brokers
    REPORT_EVERY = 30.0  # seconds between two warnings while it waits
    RESTART = (1.0, 30.0)  # seconds: the first delay before a failed query is started again, and the longest

    def __init__(self, runner, iri: str, args: dict, spec: str | None = None, **options) -> None:
        # delayed: rspark.spark.kafka imports pyspark; the command line imports this module before Spark is needed
        from rspark.spark.kafka import KAFKA_CONF, has_connector

        if not has_connector(runner.spark):
            raise RsparkError(f"source <{iri}> reads Kafka, but the Spark session was started without Spark's Kafka "
                              f"connector: create the engine with conf={{'{KAFKA_CONF}': 'true'}} (rspark run does "
                              "so for a kafka:// source or output)")
        self.runner, self.iri, self.args = runner, iri, args
        self.spec = spec or f"kafka://{args['servers']}/{args['topic']}"
        self.stream = runner.stream(iri, **options)
        fmt = {"auto": None, "nq": "nquads"}.get(args["format"], args["format"])
        resolved = message_format(self.spec, fmt, self.stream.mapping)
        # a mapped stream's record format: each record's value mapped on Spark's executors (rspark.engine.live.records)
        self.records = resolved if resolved in RECORD_FORMATS else None
        self.name = "kafka-" + stream_key(f"{args['servers']}/{args['topic']}")
        self.folder = os.path.join(runner.checkpoint, "streams", stream_key(iri), "sources", self.name)
        self.written = InboxLog(self.folder, self.stream)
        self.query = None
        self.connected: bool | None = None  # None: no trigger has ended yet
        self.error: str | None = None
        self.counters = {"batches": 0, "records": 0, "stalls": 0, "restarts": 0}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._watch, name=f"rspark-kafka-{self.name}", daemon=True)

    def start(self) -> KafkaSource:
        self.query = self._start_query()
        self.stream.queries.append(self.query)
        self.stream.feeds.append(self)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        query = self.query
        if query is not None:
            try:
                query.stop()
            except Exception:  # noqa: BLE001 - the JVM may be gone already; nothing left to stop then
                pass

    def status(self) -> dict:
        return {"kind": "kafka", "source": self.spec, "connected": self.connected, "error": self.error,
                **self.counters}

    def _start_query(self):
        args, st = self.args, self.stream
        reader = (self.runner.spark.readStream.format("kafka").option("kafka.bootstrap.servers", args["servers"])
                  .option("subscribe", args["topic"]))
        for key, value in args["options"].items():
            reader = reader.option(key, value)
        records = reader.load().selectExpr("CAST(value AS STRING) AS value", "topic", "partition", "offset")
        ext = KAFKA_FORMATS.get(args["format"])
        written, iri, source = self.written, self.iri, self.name

        def on_batch(df, batch_id: int) -> None:
            if written.done(batch_id):
                log.info("<%s> %s: micro-batch %d is in the inbox already", iri, source, batch_id)
                return
            if self.records is not None:
                self._mapped_batch(df, batch_id)
                return
            rows = sorted(df.collect(), key=lambda r: (r["partition"], r["offset"]))
            self.counters["batches"] += 1
            self.counters["records"] += len(rows)
            values = [r["value"] for r in rows if r["value"] is not None and r["value"].strip()]
            if not values:
                return
            text = "".join(v if v.endswith("\n") else v + "\n" for v in values)
            kind = ext or ("nq" if all(_nquads_only(v) for v in values) else "trig")
            if st.arrival_time:
                # delayed: stamp imports pyoxigraph, needed only for a stream stamped on arrival
                from rspark.engine.live.stamp import stamp_arrivals

                text, kind = stamp_arrivals(text, "nquads" if kind == "nq" else "trig", st.timestamp_predicate,
                                            time.time()), "nq"
            written.write(batch_id, text, kind)

        # each trigger asks the brokers for the topic's latest offsets: every KAFKA_TRIGGER seconds at most, not
        # every 0.1 s (measured: 0.1-0.4 s of the driver's time a trigger on 2 busy cores, taken from the batches'
        # loading)
        every = max(self.runner.trigger, KAFKA_TRIGGER)
        return (records.writeStream.foreachBatch(on_batch)
                .option("checkpointLocation", os.path.join(self.folder, "spark"))
                .trigger(processingTime=f"{int(every * 1000)} milliseconds")
                .queryName(f"rspark-{stream_key(self.iri)}-{source}").start())

    def _mapped_batch(self, df, batch_id: int) -> None:
        """A mapped stream's micro-batch: each record's value mapped on Spark's executors (:func:`map_messages`), the
        elements written into the inbox as one N-Quads file in partition and offset order; the rejected records
        warned of, kept and counted; the values none of whose records mapped quarantined together (one file a
        micro-batch, each value after a comment line naming its partition and offset)."""
        st, fmt, where = self.stream, self.records, self.spec
        mapping, pred = st.mapping, st.timestamp_predicate

        def run(rows):
            return map_messages(((r["value"], r["topic"], r["partition"], r["offset"]) for r in rows), mapping,
                                fmt, pred, where)

        out = sorted(df.rdd.mapPartitions(run).collect(), key=lambda r: (r[0], r[1]))
        self.counters["batches"] += 1
        self.counters["records"] += len(out)
        rejected, quarantined, kept = [], [], []
        for partition, offset, nquads, problems, failed in out:
            errors = [DataError(reason, file=file, line=line) for reason, file, line in problems]
            if failed is None:
                rejected += errors
                kept.append(nquads)
            else:
                quarantined.append((f"# partition {partition} offset {offset}\n{failed}\n", errors))
        self.runner.rejected_records(st, rejected)
        if quarantined:
            # (NoRecordMapped: the records are counted in the stream's rejected, as a message's of the other sources)
            self.runner.quarantine_message(st, f"{self.name}-b{batch_id:08d}.txt", "".join(q[0] for q in quarantined),
                                           [NoRecordMapped(q[1]) for q in quarantined])
        if kept:
            self.written.write(batch_id, "".join(kept), "nq")

    # ------------------------------------------------------------------------------------------------ watching

    def _watch(self) -> None:
        busy_since = None  # when the trigger running now was first seen running
        reported = 0.0  # when the wait was last reported
        delay = self.RESTART[0]
        while not self.stopped.wait(0.5):
            if self.runner.closing():
                return
            query = self.query
            try:
                active = query.isActive
                state = query.status if active else None
            except Exception:  # noqa: BLE001 - the JVM is gone (the process is ending): nothing to watch
                return
            if not active:
                if self.stopped.is_set() or self.runner.closing():
                    return
                delay = self._restart(query, delay)
                busy_since = None
                continue
            if state.get("isTriggerActive") and not state.get("isDataAvailable"):
                now = time.time()
                busy_since = busy_since or now
                if now - busy_since >= self.STALL and now - reported >= self.REPORT_EVERY:
                    self._waiting(state.get("message", ""), now - busy_since)
                    reported = now
                continue
            if state.get("isDataAvailable") or not state.get("isTriggerActive"):
                if busy_since is not None or self.connected is None:
                    if self.connected is False:
                        log.warning("<%s>: the Kafka brokers %s answer again; reading %s from where it stopped",
                                    self.iri, self.args["servers"], self.args["topic"])
                    self.connected, self.error = True, None
                busy_since, reported = None, 0.0
                delay = self.RESTART[0]

    def _waiting(self, message: str, seconds: float) -> None:
        reach = reachable(self.args["servers"])
        if self.connected is not False:
            self.counters["stalls"] += 1
        self.connected = False
        self.error = (f"no answer from the Kafka brokers {self.args['servers']} for {seconds:.0f} s ({reach}); "
                      f"Spark's query waits at: {message}")
        log.warning("<%s>: %s; it goes on when they answer", self.iri, self.error)

    def _restart(self, query, delay: float) -> float:
        """Starts the failed query again after ``delay`` seconds; returns the next delay."""
        try:
            failure = query.exception()
        except Exception as exc:  # noqa: BLE001 - reported as it is
            failure = exc
        first = failure_cause(failure) if failure is not None else "stopped without an error"
        self.connected, self.error = False, f"Spark's query failed: {first}"
        self.counters["restarts"] += 1
        log.warning("<%s>: reading %s from Kafka failed (%s); starting again in %.0f s", self.iri,
                    self.args["topic"], first, delay)
        if self.stopped.wait(delay) or self.runner.closing():
            return delay
        try:
            fresh = self._start_query()
        except Exception as exc:  # noqa: BLE001 - tried again after the next delay
            self.error = f"Spark's query could not start again: {failure_cause(exc)}"
            log.warning("<%s>: %s", self.iri, self.error)
            self.query = query  # (inactive: the next look starts it again)
            return min(delay * 2, self.RESTART[1])
        queries = self.stream.queries
        queries[:] = [fresh if q is query else q for q in queries]
        self.query = fresh
        if self.stopped.is_set():  # stopped while it started
            fresh.stop()
        return min(delay * 2, self.RESTART[1])


def _nquads_only(text: str) -> bool:
    """Whether a record reads as N-Quads: every statement a line ending in '.', no prefix, no braces."""
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if not s.endswith(".") or "{" in s or s.lower().startswith(("@prefix", "prefix", "@base", "base")):
            return False
    return True


class InboxLog:
    """Which micro-batches of a Spark source are in a stream's inbox: Spark runs the last micro-batch again after a
    crash (same id, same records), and its file must not be written twice. ``written.json`` names the last batch
    and its file, saved before the file is renamed into the inbox: a batch named there was renamed in (and maybe
    read and deleted since), unless its hidden file is still there, which is then renamed in."""

    def __init__(self, folder: str, st) -> None:
        self.folder, self.stream = folder, st
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, "written.json")
        self.last = None
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.last = json.load(f)

    def done(self, batch_id: int) -> bool:
        if self.last is None or batch_id > self.last["batch"]:
            return False
        if batch_id == self.last["batch"]:
            hidden = os.path.join(self.stream.inbox, "." + self.last["name"])
            if os.path.exists(hidden):  # the process stopped between saving the log and the rename
                path = os.path.join(self.stream.inbox, self.last["name"])
                os.replace(hidden, path)
                self.stream.arrived(path)
        return True

    def write(self, batch_id: int, text: str, ext: str) -> None:
        inbox = self.stream.inbox
        os.makedirs(inbox, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}-b{batch_id:08d}.{ext}"
        hidden = os.path.join(inbox, "." + name)
        with open(hidden, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        self.last = {"batch": batch_id, "name": name}
        save_json(self.path, self.last)
        path = os.path.join(inbox, name)
        os.replace(hidden, path)
        self.stream.arrived(path)  # (read on the driver from now, as a push's file is)


class PacedReplay:
    """A recorded stream written into the inbox element by element at ``speed`` times its own pace: elements
    whose timestamps are ``d`` apart are written ``d / speed`` apart (date-time streams: real time at speed 1;
    numeric streams: their numbers read as milliseconds). Elements due within one trigger interval are written
    as one file. For demonstrations and benchmarks."""

    def __init__(self, runner, iri: str, path: str, speed: float, **options) -> None:
        self.runner, self.iri, self.path, self.speed = runner, iri, path, speed
        self.stream = runner.stream(iri, **options)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"rspark-paced-{os.path.basename(path)}",
                                       daemon=True)
        self.done = False
        runner.paced.append(self)

    def start(self) -> PacedReplay:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()

    def _run(self) -> None:
        try:
            elements = recorded_elements(self.path, self.stream.timestamp_predicate)
            if not elements:
                return
            start_wall, start_ts = time.time(), elements[0][0]
            i = 0
            while i < len(elements) and not self.stop_event.is_set():
                due = start_wall + (elements[i][0] - start_ts) / 1000.0 / self.speed
                wait = due - time.time()
                if wait > 0 and self.stop_event.wait(wait):
                    break
                horizon = time.time() + self.runner.trigger
                chunk = []
                while i < len(elements) and start_wall + (elements[i][0] - start_ts) / 1000.0 / self.speed <= horizon:
                    chunk.append(elements[i][1])
                    i += 1
                self.stream.write("".join(chunk), "nq")
        except Exception as exc:  # noqa: BLE001 - reported on the log and in status(); the replay stops
            log.error("paced replay of %s into <%s> failed: %s", self.path, self.iri, exc)
            self.runner.errors.append(exc)
        finally:
            self.done = True


def recorded_elements(path: str, predicate: str) -> list[tuple[float, str]]:
    """The elements of a recorded stream file, in timestamp order (ties in file order), each as (timestamp in
    milliseconds, or the number, its N-Quads text with its timestamp triple and its other default-graph triples:
    metadata, an end triple; an element valid over an interval at its start). An element without a timestamp, or
    with one that is not read (:func:`parse_validity`, the loader's parser), is written when the element before it
    in the file is, and the loader reports it."""
    # delayed: pyoxigraph, for a replay: source only; the Engine and `rspark run` import this module for any source
    import pyoxigraph as ox

    # delayed: as pyoxigraph (the messages module parses with it)
    from rspark.spark.loading import messages

    fmt = ox.RdfFormat.N_QUADS if path.endswith((".nq", ".nquads", ".nq.gz", ".nquads.gz")) else ox.RdfFormat.TRIG
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    if messages.needs_conversion(path):  # a message log, NDJSON-LD, JSON-LD: its elements as N-Quads
        conv = messages.convert(data.decode("utf-8", errors="replace"), messages.stream_format(
            path, None, messages.file_head(path)), file=path, pred=predicate,
            element_base=Path(path).resolve().as_uri() + "#message-", base_iri=Path(path).resolve().as_uri())
        for err in conv.errors:
            log.warning("%s", err)
        data, fmt = conv.nquads, ox.RdfFormat.N_QUADS
    pred = ox.NamedNode(predicate)
    graphs: dict = {}
    stamps: dict = {}
    about: dict = {}  # an element's other default-graph triples (its metadata, an end triple), written with it
    for q in ox.parse(data, format=fmt):
        if isinstance(q.graph_name, ox.DefaultGraph):
            if q.predicate == pred:
                stamps[q.subject] = q
            else:
                about.setdefault(q.subject, []).append(q)
            continue
        graphs.setdefault(q.graph_name, []).append(q)
    out = []
    ms = 0.0
    for order, (g, quads) in enumerate(graphs.items()):
        stamp = stamps.get(g)
        if stamp is not None and isinstance(stamp.object, ox.Literal):
            lit = stamp.object
            try:
                kind, value, exp, _, _ = parse_validity(encode_literal(lit.value, lit.datatype.value, lit.language))
                ms = float(value) if kind is TimeKind.DATETIME else float(Decimal(value).scaleb(-exp))
            except ValueError:
                pass  # (written with the element before it: the loader names the problem)
        text = ox.serialize([*quads, *([stamp] if stamp is not None else []), *about.get(g, [])],
                            format=ox.RdfFormat.N_QUADS).decode("utf-8")
        out.append((ms, order, text))
    out.sort(key=lambda e: (e[0], e[1]))
    return [(ms, text) for ms, _, text in out]
