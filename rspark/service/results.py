"""A query's records for Server-Sent Events: a bounded log that reconnecting clients resume from, and the live
subscribers (one asyncio queue per SSE connection) it fans each record out to.

Records are written from live mode's micro-batch thread and read on the server's event loop: ``publish`` appends
under a lock and hands the record to each subscriber's loop with ``call_soon_threadsafe``. An event's ``id`` is
the record's instant (its ``time`` as in the jsonl record), which orders a query's records, so a client that
reconnects with ``Last-Event-ID: T`` gets exactly the records after ``T`` that the log still holds; when records
after ``T`` have already left the log, a ``gap`` event says from where the log resumes.

With a ``path`` the log is also a file (one JSON line per record, written and synced before the record is handed
to the subscribers), read again when the service restarts: a client resumes across a restart as within one run.
A record at or before the newest one held is not taken twice (a micro-batch evaluated again after a crash). The
file is rewritten with the held records once it has twice as many lines, its first line then ``{"dropped_upto":
ID}``."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections import deque
from dataclasses import dataclass
from decimal import Decimal

from rspark.engine.live.sinks import Sink, complete_lines, time_key


@dataclass(frozen=True)
class Event:
    id: str
    key: Decimal
    data: str  # the jsonl record (one line of ``rspark replay --format jsonl``, without its newline)


class Subscriber:
    """One SSE connection: a bounded queue on the server's loop. A client that falls ``limit`` events behind is
    cut off (it reconnects with ``Last-Event-ID`` and resumes from the log)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self.loop = loop
        self.queue: asyncio.Queue = asyncio.Queue(maxsize=limit)
        self.overflowed = False

    def offer(self, event: Event | None) -> None:  # on the loop
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.overflowed = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(None)


class ResultLog(Sink):
    """A query's latest ``keep`` records and its SSE subscribers (a live-mode sink); with ``path``, kept in that file
    too (:meth:`resume` reconciles it with the query's progress)."""

    def __init__(self, keep: int = 10000, client_limit: int = 10000, path: str | None = None) -> None:
        self.keep = keep
        self.client_limit = client_limit
        self.events: deque[Event] = deque()
        self.dropped_upto: Event | None = None  # the newest record that left the log (only its id and key count)
        self.subscribers: set[Subscriber] = set()
        self.lock = threading.Lock()
        self.published = 0
        self.closed = False
        self.path = path
        self.found = path is not None and os.path.exists(path)  # a file of an earlier run
        self.lines = 0  # lines in the file
        self.out = None
        if path is not None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if self.found:
                self._read()
            self.out = open(path, "a", encoding="utf-8")

    def _read(self) -> None:
        """The held records of the file (a last line a crash left unfinished is cut)."""
        for line in complete_lines(self.path).decode("utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            self.lines += 1
            if "dropped_upto" in item:
                self.dropped_upto = _event(item["dropped_upto"], "")
            else:
                self._hold(_event(item["id"], item["data"]))

    def _hold(self, event: Event) -> None:
        self.events.append(event)
        while len(self.events) > self.keep:
            self.dropped_upto = self.events.popleft()

    def resume(self, last) -> None:
        """Reconciles the log with its query's last reported instant (``last``, None when the query starts afresh)
        once the query is registered: a query that starts afresh starts an empty log; a query that reported
        instants before this log was kept (no file of an earlier run) has its records up to ``last`` left out,
        which a resuming client learns from a ``gap`` event."""
        with self.lock:
            if last is None:
                if self.events or self.dropped_upto is not None:
                    self.events.clear()
                    self.dropped_upto = None
                    self._rewrite()
            elif self.path is not None and not self.found and not self.events:
                self.dropped_upto = _event(str(last), "")
                self._rewrite()

    def write(self, rec) -> None:
        data = json.dumps(rec.to_json(), ensure_ascii=False)
        event = Event(str(rec.time), time_key(rec.time), data)
        with self.lock:
            newest = self.events[-1] if self.events else self.dropped_upto
            if newest is not None and event.key <= newest.key:
                return  # held already: a micro-batch evaluated again after a crash
            self._append(json.dumps({"id": event.id, "data": data}, ensure_ascii=False) + "\n")
            self._hold(event)
            if self.lines > 2 * max(self.keep, 1):
                self._rewrite()
            self.published += 1
            subs = list(self.subscribers)
        _hand_over(subs, event)

    def _append(self, line: str) -> None:
        """``line`` at the end of the file, synced (under the lock). Also after :meth:`close`: the micro-batch that
        is running when the service stops still delivers its records, and live mode saves their instants as
        reported."""
        if self.path is None:
            return
        if self.out is None or self.out.closed:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        else:
            self.out.write(line)
            self.out.flush()
            os.fsync(self.out.fileno())
        self.lines += 1

    def _rewrite(self) -> None:
        """The file as the log holds it (under the lock), replaced atomically."""
        if self.path is None:
            return
        reopen = self.out is not None and not self.out.closed
        if reopen:
            self.out.close()
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            if self.dropped_upto is not None:
                f.write(json.dumps({"dropped_upto": self.dropped_upto.id}) + "\n")
            for e in self.events:
                f.write(json.dumps({"id": e.id, "data": e.data}, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self.lines = len(self.events) + (self.dropped_upto is not None)
        if reopen:
            self.out = open(self.path, "a", encoding="utf-8")

    def close(self) -> None:
        with self.lock:
            self.closed = True
            subs = list(self.subscribers)
            if self.out is not None:
                self.out.close()
        _hand_over(subs, None)  # None ends each SSE stream

    def discard(self) -> None:
        """Closes the log and removes its file (the query is unregistered: registered again, it starts afresh)."""
        self.close()
        with self.lock:
            path, self.path = self.path, None
        if path is not None:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass

    def subscribe(self, loop: asyncio.AbstractEventLoop, after: str | None) -> tuple[Subscriber, list[Event],
                                                                                     str | None]:
        """A new subscriber, the logged events after ``after`` (an event id; ``"start"``: every logged event; None:
        none), and, when events after ``after`` left the log already, the id of the newest one that left. An
        ``after`` that is no event id raises ValueError (or ArithmeticError) before anything is subscribed."""
        key = None if after in (None, "start") else time_key(after)
        if key is not None and not key.is_finite():
            raise ValueError(f"{after!r} is not an instant")
        sub = Subscriber(loop, self.client_limit)
        with self.lock:
            self.subscribers.add(sub)
            if after is None:
                return sub, [], None
            dropped = self.dropped_upto
            if after == "start":
                return sub, list(self.events), None if dropped is None else dropped.id
            backlog = [e for e in self.events if e.key > key]
            gap = dropped.id if dropped is not None and dropped.key > key else None
            return sub, backlog, gap

    def unsubscribe(self, sub: Subscriber) -> None:
        with self.lock:
            self.subscribers.discard(sub)

    def latest(self) -> Event | None:
        with self.lock:
            return self.events[-1] if self.events else None


def _event(event_id: str, data: str) -> Event:
    return Event(event_id, time_key(event_id), data)


def _hand_over(subs: list[Subscriber], event: Event | None) -> None:
    """``event`` to each subscriber, on its own loop (called from live mode's micro-batch thread)."""
    for sub in subs:
        try:
            sub.loop.call_soon_threadsafe(sub.offer, event)
        except RuntimeError:  # the subscriber's loop is closed: the server is stopping
            pass
