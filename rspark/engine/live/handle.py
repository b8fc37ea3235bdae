"""``engine.register(query) -> QueryHandle``: what a user holds of a live query."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator

from rspark.engine.live.sinks import CallbackSink, FileSink, QueueSink, Sink, TrigDirectorySink


class QueryHandle:
    """A registered continuous query.

    ``subscribe(callback)``: ``callback(record)`` for every record from now on (a
    :class:`~rspark.spark.streaming.record.Record`, the record ``rspark replay`` prints); ``results()``: the records as
    an iterator (blocking; ``timeout`` seconds without a record ends it); ``write_to(path)``: a JSON-lines / CSV file
    written at most once per instant across restarts; ``status()``: counters; ``pause()`` / ``resume()``;
    ``stop()``: unregisters the query."""

    def __init__(self, runner, query, queue_sink: QueueSink) -> None:
        self._runner = runner
        self._query = query
        self._queue = queue_sink  # attached to the query by whoever registered it (before its first evaluation)

    @property
    def name(self) -> str:
        return self._query.name

    def subscribe(self, callback: Callable) -> QueryHandle:
        self.add_sink(CallbackSink(callback))
        return self

    def write_to(self, path: str, fmt: str = "jsonl", columns=None) -> QueryHandle:
        self.add_sink(FileSink(path, fmt, columns))
        return self

    def write_trig(self, directory: str) -> QueryHandle:
        self.add_sink(TrigDirectorySink(directory))
        return self

    def add_sink(self, sink: Sink) -> QueryHandle:
        with self._runner.lock:
            self._query.sinks.append(sink)
        return self

    def results(self, timeout: float | None = None) -> Iterator:
        """The records as they come; ends when the query stops, or after ``timeout`` seconds without one."""
        while True:
            try:
                rec = self._queue.queue.get(timeout=timeout)
            except queue.Empty:
                return
            if rec is None:
                return
            yield rec

    def drain(self) -> list:
        """The records delivered since the last call, without waiting."""
        out = []
        while True:
            try:
                rec = self._queue.queue.get_nowait()
            except queue.Empty:
                return out
            if rec is None:
                return out
            out.append(rec)

    def status(self) -> dict:
        """The query's counters: evaluations, records, the last instant reported, the evaluation horizon and its
        lag behind the newest element, the elements in and late on the streams it reads, the latency from a
        batch's arrival to its records (p50, p99, seconds), and for a query that consumes events the consumed
        triple occurrences its state carries (docs/live.md, Status)."""
        return self._runner.status()["queries"].get(self._query.name, {"stopped": True})

    def refresh(self) -> int:
        """Evaluates now what the buffers hold (a query registered after its streams' data arrived is otherwise
        evaluated at the next micro-batch); returns the records delivered."""
        return self._runner.evaluate()

    def pause(self) -> None:
        self._query.paused = True

    def resume(self) -> None:
        self._query.paused = False

    def stop(self) -> None:
        self._runner.unregister(self._query.name)

    def wait(self, timeout: float = 60.0) -> bool:
        """Waits until the sources have read every file there is and the records are delivered."""
        deadline = time.time() + timeout
        return self._runner.wait_idle(timeout=max(0.0, deadline - time.time()))
