"""Where a live query's records go: a text stream (stdout), a JSON-lines or CSV / TSV file, a directory of TriG
elements (a CONSTRUCT query's output as a stream another process can watch), a Kafka topic, a Python callback, a
queue.

Records are keyed by (query, instant). The file sinks read what their file already holds when they open and drop
a record at or before the last instant written for its query, so a micro-batch evaluated again after a crash
writes nothing twice; a line cut short by the crash is removed first. The TriG directory names each file after
its query and instant, so writing one again replaces it with the same content. The Kafka sink reads the keys its
topic already holds when it opens and drops, as the file sinks do, a record at or before the last instant written
for its query.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import queue
import re
import socket
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import TextIO

from rspark.engine.writers import ReplayWriter, trig_element
from rspark.errors import RsparkError

log = logging.getLogger("rspark.live")


def time_key(value) -> Decimal:
    """A record's ``time`` (a number, or an ISO 8601 string) as a comparable number."""
    if isinstance(value, str):
        try:
            return Decimal(value)
        except ArithmeticError:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return Decimal(int(dt.timestamp() * 1000))
    return Decimal(str(value))


class Sink(ABC):
    """Where a live query's records go: ``write`` each record; ``flush`` once a micro-batch's records are all
    written (a sink that gathers them writes them then); ``interrupt`` when live mode closes (a write waiting for its
    destination gives up); ``close`` at the end. Nothing to do by default but ``write``."""

    @abstractmethod
    def write(self, rec) -> None: ...

    def flush(self) -> None:  # noqa: B027 - optional: most sinks write each record as it comes
        return None

    def interrupt(self) -> None:  # noqa: B027 - optional: most sinks never wait
        return None

    def close(self) -> None:  # noqa: B027 - optional: most sinks hold nothing to release
        return None


class TextSink(Sink):
    """Records written to an open text stream (stdout) in a replay format (jsonl, table, csv, tsv, trig)."""

    def __init__(self, fmt: str, out: TextIO, columns=None) -> None:
        self.writer = ReplayWriter(fmt, out, columns)

    def write(self, rec) -> None:
        self.writer.write(rec)

    def close(self) -> None:
        self.writer.close()


class FileSink(Sink):
    """Records appended to a file (jsonl, csv or tsv), each at most once per (query, instant) across restarts."""

    def __init__(self, path: str, fmt: str = "jsonl", columns=None) -> None:
        if fmt not in ("jsonl", "csv", "tsv"):
            raise ValueError(f"a live file sink writes jsonl, csv or tsv, not {fmt}")
        self.path, self.fmt = path, fmt
        self.last: dict[str, Decimal] = {}
        existing = self._recover()
        self.out = open(path, "a", encoding="utf-8", newline="")
        self.writer = ReplayWriter(fmt, self.out, columns)
        if existing:
            self.writer.continue_file()

    def _recover(self) -> bool:
        """Reads the file's records (the last instant per query), cutting a last line the crash left unfinished.
        Returns whether the file had content."""
        if not os.path.exists(self.path) or os.path.getsize(self.path) == 0:
            return False
        text = complete_lines(self.path).decode("utf-8")
        if self.fmt == "jsonl":
            for line in text.splitlines():
                if line.strip():
                    rec = json.loads(line)
                    self._seen(rec["query"], rec["time"])
        else:
            rows = csv.reader(text.splitlines(), delimiter="," if self.fmt == "csv" else "\t")
            next(rows, None)  # the header
            for row in rows:
                if len(row) >= 2:
                    query, when = row[0], row[1]
                    if self.fmt == "tsv":  # N-Triples literals
                        query, when = query.split('"')[1], when.split('"')[1]
                    self._seen(query, when)
        return bool(text)

    def _seen(self, query: str, when) -> None:
        key = time_key(when)
        if query not in self.last or key > self.last[query]:
            self.last[query] = key

    def write(self, rec) -> None:
        key = time_key(rec.time)
        if rec.query in self.last and key <= self.last[rec.query]:
            return
        self.writer.write(rec)
        self.out.flush()
        os.fsync(self.out.fileno())
        self.last[rec.query] = key

    def close(self) -> None:
        if not self.out.closed:
            self.writer.close()
            self.out.close()


class TrigDirectorySink(Sink):
    """CONSTRUCT records as stream elements (TriG, docs/streams.md), one file per (query, instant) in a directory,
    written atomically: a directory another live query (or process) can watch."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def write(self, rec) -> None:
        if rec.form not in ("CONSTRUCT", "DESCRIBE"):
            raise ValueError(f"a TriG directory holds CONSTRUCT results, but {rec.query} is a {rec.form} query")
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(rec.query))[-80:]
        name = f"{safe}-{rec.ticks:020d}.trig"
        tmp = os.path.join(self.directory, "." + name)
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(trig_element(rec))
        os.replace(tmp, os.path.join(self.directory, name))


class KafkaSink(Sink):
    """Records written to a Kafka topic by Spark's Kafka connector (the session must have it:
    :mod:`rspark.spark.kafka`), one Kafka record per query record: its key ``{"query": ..., "time": ...}`` (JSON),
    its value the record's JSON line (the jsonl format). A micro-batch's records (every query's, every instant
    due) are gathered by ``write`` and written by ``flush`` in one Spark write (one job), in their order.

    At most once per (query, instant) across restarts: the keys the topic holds are read when the sink opens (the
    last instant per query) and a record at or before that instant is dropped. A write that fails (the brokers are
    away: Kafka's producer waits for them up to ``max.block.ms`` and ``delivery.timeout.ms``, ``WAITS`` here unless
    the sink's ``kafka.*`` options give them) is tried again after 1 s, doubling to 30 s, with a warning each time;
    the micro-batch waits for it. Before the next try, once a broker accepts a TCP connection again, the topic's
    keys are read again, so records a failed write delivered after all are not written a second time.
    ``interrupt`` (live mode closing) ends the wait with an error: the micro-batch is not committed and its records
    are written by a restart on the same checkpoint."""

    # the producer's waits for the brokers unless the sink's options say otherwise: for the metadata (a topic's
    # leader), for an answer to a request, for a record's delivery in all (Kafka's defaults: 60 s, 30 s, 120 s)
    WAITS = {"kafka.max.block.ms": "5000", "kafka.request.timeout.ms": "5000", "kafka.delivery.timeout.ms": "10000"}
    RETRY = (1.0, 30.0)  # seconds: the first delay before a failed write is tried again, and the longest

    def __init__(self, spark, servers: str, topic: str, options: dict | None = None) -> None:
        self.spark, self.servers, self.topic = spark, servers, topic
        self.options = {k: v for k, v in (options or {}).items() if k.startswith("kafka.")}
        self.writer = ReplayWriter("jsonl", None)
        self.last: dict[str, Decimal] = {}
        self.pending: list[tuple[str, Decimal, str, str]] = []  # (query, instant, key, value) not yet written
        self.counters = {"records": 0, "writes": 0, "failed_writes": 0}
        self.stopping = threading.Event()
        self._read_keys()

    def _read_keys(self) -> None:
        """The last instant per query of the records the topic holds (their keys)."""
        reader = self.spark.read.format("kafka").option("kafka.bootstrap.servers", self.servers) \
            .option("subscribe", self.topic).option("startingOffsets", "earliest").option("endingOffsets", "latest")
        for key, value in self.options.items():
            reader = reader.option(key, value)
        try:
            keys = reader.load().selectExpr("CAST(key AS STRING) AS key").collect()
        except Exception as exc:
            if "UnknownTopicOrPartition" not in str(exc):
                raise
            keys = []  # the topic does not exist yet: nothing written to it
        for row in keys:
            try:
                key = json.loads(row["key"])
                when = time_key(key["time"])
            except (TypeError, ValueError, KeyError, ArithmeticError):
                continue  # a record of another writer
            query = str(key["query"])
            if query not in self.last or when > self.last[query]:
                self.last[query] = when

    def write(self, rec) -> None:
        when = time_key(rec.time)
        query = str(rec.query)
        if query in self.last and when <= self.last[query]:
            return
        key = json.dumps({"query": rec.query, "time": rec.time}, separators=(",", ":"))
        self.pending.append((query, when, key, self.writer.text(rec).rstrip("\n")))
        self.last[query] = when

    def flush(self) -> None:
        """Writes the gathered records in one Spark write, trying again until it succeeds (see the class)."""
        delay, checked = self.RETRY[0], True
        while self.pending:
            try:
                if not checked:  # a write failed: what did it deliver after all?
                    said = reachable(self.servers)
                    if "accepts connections" not in said:  # (reading the keys would wait for the brokers)
                        raise ConnectionError(f"the brokers are unreachable: {said}")
                    self._drop_written()
                    checked = True
                    if not self.pending:
                        break
                self._save(self.pending)
            except Exception as exc:  # noqa: BLE001 - tried again: the brokers may be away for a while
                checked = False
                self.counters["failed_writes"] += 1
                cause = failure_cause(exc)
                if self.stopping.is_set():
                    raise RsparkError(f"Kafka sink {self.servers}/{self.topic}: {len(self.pending)} records not "
                                      f"written when live mode closed ({cause}); a restart on the same checkpoint "
                                      "writes them") from exc
                log.warning("Kafka sink %s/%s: %d records not written (%s); trying again in %.0f s", self.servers,
                            self.topic, len(self.pending), cause, delay)
                self.stopping.wait(delay)  # (stopping: one more try, then the error above)
                delay = min(delay * 2, self.RETRY[1])
                continue
            self.counters["records"] += len(self.pending)
            self.counters["writes"] += 1
            self.pending = []

    def _save(self, records: list) -> None:
        frame = self.spark.createDataFrame([(key, value) for _, _, key, value in records], "key string, value string")
        out = frame.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", self.servers) \
            .option("topic", self.topic)
        for k, v in {**self.WAITS, **self.options}.items():
            out = out.option(k, v)
        out.save()

    def _drop_written(self) -> None:
        """Before another try: the records a failed write delivered after all (their keys in the topic) are not
        written again (the keys not readable: the error is raised, nothing changed)."""
        mine = dict(self.last)
        self.last = {}
        try:
            self._read_keys()
        except Exception:
            self.last = mine
            raise
        written = dict(self.last)
        self.pending = [r for r in self.pending if r[0] not in written or r[1] > written[r[0]]]
        for q, when in mine.items():  # (the records gathered stay the last instant per query)
            if q not in self.last or when > self.last[q]:
                self.last[q] = when

    def interrupt(self) -> None:
        self.stopping.set()

    def close(self) -> None:
        if self.pending and not self.stopping.is_set():
            self.flush()


class CallbackSink(Sink):
    def __init__(self, callback: Callable) -> None:
        self.callback = callback

    def write(self, rec) -> None:
        self.callback(rec)


class QueueSink(Sink):
    """What ``handle.results()`` reads: the latest ``limit`` records not read yet (a handle read only through
    ``subscribe`` or a file does not keep every record in memory); the oldest unread one gives way, counted in
    ``dropped`` and logged once."""

    def __init__(self, limit: int = 10000) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.limit = limit
        self.dropped = 0

    def write(self, rec) -> None:
        while self.queue.qsize() >= self.limit:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
            self.dropped += 1
            if self.dropped == 1:
                logging.getLogger("rspark.live").warning(
                    "%s: more than %d records not read from handle.results(): the oldest give way (the other sinks "
                    "have them all)", rec.query, self.limit)
        self.queue.put(rec)

    def close(self) -> None:
        self.queue.put(None)


def failure_cause(exc: BaseException) -> str:
    """One line saying why a Spark job failed: the root cause of a Java exception in its text (the last "Caused
    by:"), else the first Java exception named (Py4J's first line is only "An error occurred while calling
    o123.save"), else its first line."""
    lines = [line.strip().lstrip(": ") for line in str(exc).splitlines() if line.strip().lstrip(": ")]
    causes = [line for line in lines if line.startswith("Caused by: ")]
    named = causes[-1] if causes else next((line for line in lines if _JAVA_EXCEPTION.match(line)), None)
    return (named or (lines[0] if lines else type(exc).__name__))[:300]


_JAVA_EXCEPTION = re.compile(r"[a-z][\w$]*(\.[\w$]+)+(Exception|Error)\b")


def reachable(servers: str, timeout: float = 2.0) -> str:
    """Whether a TCP connection to each of the brokers ``HOST:PORT[,...]`` opens, in words."""
    words = []
    for hostport in servers.split(","):
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                words.append(f"{hostport} accepts connections")
        except OSError as exc:
            words.append(f"{hostport}: {exc.strerror or exc}")
    return "; ".join(words)


def complete_lines(path: str) -> bytes:
    """A line-oriented file's content up to its last newline; a last line a crash left unfinished is cut from the
    file too."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)
    return data[:end]
