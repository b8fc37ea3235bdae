"""Live sources besides a watched directory and ``engine.push``: a TCP socket of N-Quads lines, a paced replay of
a recorded stream and an MQTT topic (:mod:`rspark.engine.live.mqtt`). Each writes what it receives into the stream's
inbox (:func:`~rspark.engine.live.runner.
write_inbox`), where the stream's inbox reader reads it: one path into the buffer for every source.

Kafka is the production source of Spark Structured Streaming; rspark does not read it yet (docs/live.md says how
it would be configured)."""

from __future__ import annotations

import gzip
import logging
import os
import threading
import time
from decimal import Decimal
from pathlib import Path

from rspark.engine.live.mqtt import SCHEME as MQTT
from rspark.engine.live.mqtt import MqttSource, parse_mqtt
from rspark.engine.live.registry import stream_key
from rspark.errors import InputError
from rspark.model.codec import encode_literal
from rspark.model.time import TimeKind
from rspark.model.timestamps import parse_validity

log = logging.getLogger("rspark.live")


def parse_source(spec: str) -> tuple[str, dict]:
    """``DIR`` | ``tcp://HOST:PORT`` | ``replay:PATH@SPEED`` | ``mqtt://HOST:PORT/TOPIC`` -> (kind, arguments)."""
    text = spec.strip()
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
    raise InputError(f"source {spec!r}: not a directory, tcp://HOST:PORT, replay:PATH@SPEED or "
                     "mqtt://HOST:PORT/TOPIC")


def start_source(engine, iri: str, spec: str, **options):
    """Starts the source ``spec`` feeding the live stream ``iri``; ``options``: the stream's settings
    (``lateness``, ``arrival_time``, ...) and, for ``mqtt://``, ``payload_format``. Returns the source's object
    (an :class:`MqttSource`, a :class:`PacedReplay`; None for a directory or TCP)."""
    kind, args = parse_source(spec)
    runner = engine.live
    if kind != "mqtt" and options.pop("payload_format", None) is not None:
        raise InputError(f"source {spec!r}: payload_format is an option of mqtt:// sources")
    if kind == "dir":
        runner.watch(iri, args["directory"], **options)
    elif kind == "mqtt":
        return MqttSource(runner, iri, spec.strip(), **options).start()
    elif kind == "tcp":
        listen_tcp(runner, iri, args["host"], args["port"], **options)
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
