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
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import TextIO

from rspark.engine.writers import ReplayWriter, trig_element


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
    """Where a live query's records go: ``write`` each record, ``close`` at the end (nothing to do by default)."""

    @abstractmethod
    def write(self, rec) -> None: ...

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
    its value the record's JSON line (the jsonl format). At most once per (query, instant) across restarts: the
    keys the topic holds are read when the sink opens (the last instant per query) and a record at or before that
    instant is dropped."""

    def __init__(self, spark, servers: str, topic: str, options: dict | None = None) -> None:
        self.spark, self.servers, self.topic = spark, servers, topic
        self.options = {k: v for k, v in (options or {}).items() if k.startswith("kafka.")}
        self.writer = ReplayWriter("jsonl", None)
        self.last: dict[str, Decimal] = {}
        reader = spark.read.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic) \
            .option("startingOffsets", "earliest").option("endingOffsets", "latest")
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
        if rec.query in self.last and when <= self.last[rec.query]:
            return
        key = json.dumps({"query": rec.query, "time": rec.time}, separators=(",", ":"))
        frame = self.spark.createDataFrame([(key, self.writer.text(rec).rstrip("\n"))], "key string, value string")
        out = frame.write.format("kafka").option("kafka.bootstrap.servers", self.servers).option("topic", self.topic)
        for k, v in self.options.items():
            out = out.option(k, v)
        out.save()
        self.last[rec.query] = when


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
