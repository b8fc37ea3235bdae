"""MQTT as a live source and a live sink (paho-mqtt, MQTT 3.1.1, QoS 1).

Source: ``mqtt://HOST:PORT/TOPIC`` (the topic may hold ``/`` levels and the wildcards ``+`` and ``#``). Each message's
payload is RDF text (TriG or N-Quads, as ``engine.push`` takes) and is written into the stream's inbox as one file
(``LiveStream.write``, the one path into the buffer every source takes); the message is acknowledged to the broker
only once that file is written, so a process killed before holds no message the broker forgot: it sends it again to
the next connection of the same client. With a checkpoint the client's session is persistent (``clean_session``
False, a client id derived from the checkpoint, the stream and the source): messages published while rspark was
down are delivered when it connects again.

A message sent again (QoS 1 delivers at least once) would be a second copy of its elements in the buffer, which
keeps every element it is given. So the source keeps the SHA-256 digests of the messages it wrote (topic and
payload), in the checkpoint (``streams/<key>/mqtt-<client id>.seen``, the latest ``SEEN_KEPT``) and at the end of
each inbox file it writes (a comment line, read back from the files still in the inbox on a restart, for a process
killed between the two writes): a message whose digest is there is acknowledged and not written again. Two
messages with the same payload on the same topic are therefore one: the same elements with the same timestamps.

A payload that is not RDF (or not UTF-8: its bytes are kept) goes into the inbox like any other and the stream's
loader quarantines it (counted in ``rejected`` and ``quarantined``, a copy and its messages in
``CHECKPOINT/quarantine/``). A broker that goes away is reported (a warning, and the source's ``connected`` and
``error`` in the stream's status) and connected to again with back-off (1 s doubling to 30 s).

On a stream with a mapping the payloads are JSON, JSON Lines or CSV records (:mod:`rspark.engine.live.records`):
mapped when the message arrives, the N-Quads of its elements written into the inbox (with the digest), or the message
quarantined when none of its records maps.

Sink: :class:`MqttSink` publishes each record (its JSON, as ``--format jsonl`` prints it) as one message with QoS 1
and waits for the broker's acknowledgement; with a state file it publishes each (query, instant) once across
restarts, as the file sinks write it once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from decimal import Decimal

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from rspark.engine.live.files import save_json
from rspark.engine.live.records import message_base
from rspark.engine.live.registry import looks_like_nquads, stream_key
from rspark.engine.live.sinks import Sink, time_key
from rspark.errors import DataError, InputError
from rspark.spark.loading.payload import DEFAULT_RECORD_FORMAT, RECORD_FORMATS, message_format

log = logging.getLogger("rspark.live")

SCHEME = "mqtt://"
SEEN_KEPT = 10_000  # digests of written messages kept (a redelivery is of the few messages in flight at a crash)
DIGEST_MARK = "# rspark-mqtt-message sha256:"
RECONNECT = (1, 30)  # seconds: the first delay before connecting again, and the longest


def parse_mqtt(spec: str, *, wildcards: bool = True) -> dict:
    """``mqtt://HOST:PORT/TOPIC`` -> {"host", "port", "topic"}; an :class:`InputError` naming what is missing.
    ``wildcards``: whether the topic may hold ``+`` and ``#`` (a source's may; a sink's, which publishes, may
    not)."""
    text = spec.strip()
    form = "mqtt://HOST:PORT/TOPIC"
    what = "source" if wildcards else "sink"
    if not text.startswith(SCHEME):
        raise InputError(f"{what} {spec!r}: expected {form}")
    hostport, slash, topic = text[len(SCHEME):].partition("/")
    host, colon, port = hostport.rpartition(":")
    if not colon or not host or host.endswith(":") and not host.startswith("["):
        raise InputError(f"{what} {spec!r}: the port is missing (expected {form}; a broker's usual port is 1883)")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"{what} {spec!r}: the port must be a number from 1 to 65535 (expected {form})")
    if not slash or not topic:
        raise InputError(f"{what} {spec!r}: the topic is missing (expected {form}, e.g. mqtt://localhost:1883/obs)")
    levels = topic.split("/")
    for i, level in enumerate(levels):
        if ("+" in level or "#" in level) and not wildcards:
            raise InputError(f"{what} {spec!r}: a topic to publish to has no wildcard (+ or #; expected {form})")
        if ("+" in level and level != "+") or ("#" in level and (level != "#" or i != len(levels) - 1)):
            raise InputError(f"{what} {spec!r}: the wildcards + and # stand for whole topic levels, # only the "
                             f"last one (expected {form})")
    if "\0" in topic:
        raise InputError(f"{what} {spec!r}: a topic holds no NUL character (expected {form})")
    return {"host": host.strip("[]"), "port": int(port), "topic": topic}


def client_id(checkpoint: str, iri: str, spec: str) -> str:
    """A client id stable across restarts on the same checkpoint, for the same stream and source (23 characters:
    the longest MQTT 3.1.1 requires a broker to accept)."""
    return "rspark-" + hashlib.sha1(f"{checkpoint}\0{iri}\0{spec}".encode()).hexdigest()[:16]


class SeenLog:
    """The digests of the messages written into the inbox, the latest ``kept``, in a file of one digest a line
    (appended; rewritten with the latest ``kept`` when it holds twice as many)."""

    def __init__(self, path: str, inbox: str, kept: int = SEEN_KEPT) -> None:
        self.path, self.kept = path, kept
        self.digests: OrderedDict[str, None] = OrderedDict()
        if os.path.exists(path):
            with open(path, encoding="ascii") as f:
                for line in f:
                    if len(line.strip()) == 64:
                        self.digests[line.strip()] = None
        for digest in inbox_digests(inbox):  # files written before a crash kept this digest from the log
            self.digests[digest] = None
        self.lines = len(self.digests)
        self._trim()
        self.out = open(path, "a", encoding="ascii")

    def __contains__(self, digest: str) -> bool:
        return digest in self.digests

    def add(self, digest: str) -> None:
        self.digests[digest] = None
        self.out.write(digest + "\n")
        self.out.flush()
        self.lines += 1
        if self.lines > 2 * self.kept:
            self._trim()
            self.out.close()
            tmp = self.path + ".tmp"
            with open(tmp, "w", encoding="ascii") as f:
                f.writelines(d + "\n" for d in self.digests)
            os.replace(tmp, self.path)
            self.lines = len(self.digests)
            self.out = open(self.path, "a", encoding="ascii")

    def _trim(self) -> None:
        while len(self.digests) > self.kept:
            self.digests.popitem(last=False)

    def close(self) -> None:
        self.out.close()


def inbox_digests(inbox: str) -> list[str]:
    """The message digests at the end of the inbox's files (those not yet read into the buffer)."""
    out = []
    try:
        names = sorted(os.listdir(inbox))
    except FileNotFoundError:
        return out
    for name in names:
        try:
            with open(os.path.join(inbox, name), "rb") as f:
                f.seek(max(0, os.path.getsize(f.name) - 200))
                tail = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        mark = tail.rfind(DIGEST_MARK)
        if mark >= 0:
            out.append(tail[mark + len(DIGEST_MARK):].strip()[:64])
    return out


class MqttSource:
    """Subscribes to ``topic`` on the broker at ``host:port`` with QoS 1 and writes each message into the inbox of
    the live stream ``iri`` (see the module's documentation). ``payload_format``: ``trig`` or ``nquads`` (None:
    told from each payload, as ``engine.push`` does)."""

    def __init__(self, runner, iri: str, spec: str, *, payload_format: str | None = None, **options) -> None:
        args = parse_mqtt(spec)
        self.runner, self.iri, self.spec = runner, iri, spec
        self.host, self.port, self.topic = args["host"], args["port"], args["topic"]
        self.stream = runner.stream(iri, **options)
        # trig, nquads, None (told from each payload), or a mapped stream's record format (csv, json, jsonl)
        self.payload_format = message_format(spec, payload_format, self.stream.mapping)
        self.client_id = client_id(runner.checkpoint, iri, spec)
        folder = os.path.join(runner.checkpoint, "streams", stream_key(iri))
        os.makedirs(folder, exist_ok=True)
        self.seen = SeenLog(os.path.join(folder, f"mqtt-{self.client_id}.seen"), self.stream.inbox)
        self.connected = False
        self.error: str | None = None
        self.counters = {"messages": 0, "duplicates": 0, "connections": 0, "disconnections": 0}
        self.stopped = False
        # a temporary checkpoint forgets the digests: its session is not kept by the broker either
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=self.client_id,
                             clean_session=runner.temporary, protocol=mqtt.MQTTv311, manual_ack=True)
        client.reconnect_delay_set(*RECONNECT)
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        self.client = client
        self.stream.feeds.append(self)

    def start(self) -> MqttSource:
        """Connects in the background (a broker not there yet is tried again with back-off, with a warning)."""
        self.client.connect_async(self.host, self.port, keepalive=30)
        self.client.loop_start()
        return self

    def stop(self) -> None:
        """Disconnects (the session stays on the broker: messages published from now on wait there)."""
        self.stopped = True
        self.client.disconnect()
        self.client.loop_stop()
        with self.stream.inbox_lock:  # (a message being written ends first)
            self.seen.close()

    def status(self) -> dict:
        return {"kind": "mqtt", "source": self.spec, "client_id": self.client_id, "connected": self.connected,
                "error": self.error, **self.counters}

    # ------------------------------------------------------------------------------------------------ callbacks

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self.connected, self.error = False, f"connection refused: {reason_code}"
            log.warning("<%s>: the MQTT broker %s:%d refused the connection (%s); trying again", self.iri,
                        self.host, self.port, reason_code)
            return
        self.connected, self.error = True, None
        self.counters["connections"] += 1
        if self.counters["connections"] > 1:
            log.warning("<%s>: connected again to the MQTT broker %s:%d", self.iri, self.host, self.port)
        client.subscribe(self.topic, qos=1)
        log.info("<%s>: subscribed to %s on %s:%d (QoS 1, client id %s)", self.iri, self.topic, self.host, self.port,
                 self.client_id)

    def _on_connect_fail(self, client, userdata) -> None:
        self.connected, self.error = False, f"cannot connect to {self.host}:{self.port}"
        log.warning("<%s>: cannot connect to the MQTT broker %s:%d; trying again (every %d s at most)", self.iri,
                    self.host, self.port, RECONNECT[1])

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self.connected = False
        if self.stopped:
            return
        self.counters["disconnections"] += 1
        self.error = f"disconnected: {reason_code}"
        log.warning("<%s>: the MQTT broker %s:%d went away (%s); connecting again with back-off", self.iri,
                    self.host, self.port, reason_code)

    def _on_message(self, client, userdata, msg) -> None:
        try:
            written = self._accept(msg.topic, msg.payload)
        except Exception as exc:  # noqa: BLE001 - not acknowledged: the broker sends it again on the next connection
            log.error("<%s>: an MQTT message on %s could not be written to the inbox: %s", self.iri, msg.topic, exc)
            self.error = str(exc)
            return
        if written is not None:
            client.ack(msg.mid, msg.qos)

    def _accept(self, topic: str, payload: bytes) -> bool | None:
        """Writes one message into the inbox (True), or finds it written already (False); None: the source or live
        mode is stopping, nothing written (not acknowledged: the broker keeps it for the next connection)."""
        digest = hashlib.sha256(topic.encode("utf-8") + b"\0" + payload).hexdigest()
        # not the runner's lock, which a micro-batch holds for seconds: this thread also answers the broker's pings
        with self.stream.inbox_lock:  # the inbox reader deletes a file only after its digest is in the log
            if self.stopped or self.runner.closing():
                return None
            if digest in self.seen:
                self.counters["duplicates"] += 1
                log.info("<%s>: an MQTT message on %s received again (QoS 1): not a second copy", self.iri, topic)
                return False
            self._write(payload, digest)
            self.seen.add(digest)
            self.counters["messages"] += 1
            return True

    def _write(self, payload: bytes, digest: str) -> None:
        """The message as an inbox file, its digest in a comment at the end. A payload that is not UTF-8 is written
        as it came (its bytes kept), for the loader to report and quarantine like any malformed file."""
        st = self.stream
        if st.mapping is not None:
            self._write_records(payload, digest)
            return
        text = payload.decode("utf-8", "surrogateescape")
        fmt = self.payload_format or ("nquads" if looks_like_nquads(text) else "trig")
        if st.arrival_time and _utf8(payload):
            # delayed: stamp imports pyoxigraph, needed only for a stream stamped on arrival
            from rspark.engine.live.stamp import stamp_arrivals

            try:
                text, fmt = stamp_arrivals(text, fmt, st.timestamp_predicate, time.time()), "nquads"
            except DataError:
                pass  # written as it came: the loader names the problem
        st.write(f"{text}{'' if text.endswith(chr(10)) else chr(10)}{DIGEST_MARK}{digest}\n",
                 "nq" if fmt == "nquads" else "trig")

    def _write_records(self, payload: bytes, digest: str) -> None:
        """A mapped stream's message: its records as N-Quads in an inbox file (the digest at its end), or, when none
        maps (or the payload is not UTF-8), quarantined with the reasons; acknowledged either way."""
        st, where = self.stream, f"mqtt://{self.host}:{self.port}/{self.topic} message {digest[:12]}"
        try:
            try:
                text = payload.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"a payload of {len(payload)} bytes that is not UTF-8 text (byte {exc.start})",
                                file=where) from None
            fmt = self.payload_format if self.payload_format in RECORD_FORMATS else DEFAULT_RECORD_FORMAT
            nquads = self.runner.mapped(st, text, fmt, where, message_base(self.topic, digest))
        except (DataError, InputError) as exc:  # no record mapped; not JSON; a CSV header without the columns
            self.runner.quarantine_message(st, f"mqtt-{digest[:16]}.txt", payload, [exc])
            return
        st.write(f"{nquads}{DIGEST_MARK}{digest}\n", "nq")


def _utf8(payload: bytes) -> bool:
    try:
        payload.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class MqttSink(Sink):
    """Publishes each record (its JSON line, as ``--format jsonl`` prints it) to ``mqtt://HOST:PORT/TOPIC`` with QoS
    1, one message a record, and waits for the broker's acknowledgement (a warning every 10 s while the broker is
    away: the micro-batch waits for it). ``{query}`` in the topic is replaced by the record's query name.
    ``state``: a JSON file holding the last instant published per query; a record at or before it is not
    published again (a micro-batch evaluated again after a restart)."""

    def __init__(self, spec: str, state: str | None = None, *, client: str | None = None) -> None:
        args = parse_mqtt(spec, wildcards=False)
        self.spec, self.topic, self.state = spec, args["topic"], state
        self.last: dict[str, Decimal] = {}
        if state and os.path.exists(state):
            with open(state, encoding="utf-8") as f:
                self.last = {q: Decimal(t) for q, t in json.load(f).items()}
        self.closed = False
        self.acked: set[int] = set()  # message ids the broker acknowledged (PUBACK), not yet seen by write
        self.cond = threading.Condition()
        ident = client or "rspark-out-" + hashlib.sha1(f"{spec}\0{state}".encode()).hexdigest()[:12]
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=ident, protocol=mqtt.MQTTv311)
        self.client.reconnect_delay_set(*RECONNECT)
        self.client.on_disconnect = self._on_disconnect
        self.client.on_publish = self._on_publish
        self.client.max_queued_messages_set(0)  # (no limit: records wait while the broker is away)
        self.client.connect_async(args["host"], args["port"], keepalive=30)
        self.client.loop_start()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if not self.closed:
            log.warning("MQTT sink %s: the broker went away (%s); connecting again", self.spec, reason_code)

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        with self.cond:
            self.acked.add(mid)
            self.cond.notify_all()

    def write(self, rec) -> None:
        key = time_key(rec.time)
        query = str(rec.query)
        if query in self.last and key <= self.last[query]:
            return
        topic = self.topic.replace("{query}", query)
        # (sent now, or queued by paho and sent once connected: the acknowledgement is what is waited for)
        mid = self.client.publish(topic, json.dumps(rec.to_json(), ensure_ascii=False).encode("utf-8"), qos=1).mid
        waited = 0
        with self.cond:
            while mid not in self.acked and not self.closed:
                if not self.cond.wait(10):
                    waited += 10
                    log.warning("MQTT sink %s: waiting %d s for the broker to take a record of %s", self.spec,
                                waited, query)
            self.acked.discard(mid)
        self.last[query] = key
        if self.state:
            save_json(self.state, {q: str(t) for q, t in self.last.items()})

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.client.disconnect()
        self.client.loop_stop()
