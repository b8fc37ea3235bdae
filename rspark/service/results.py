"""A query's records for Server-Sent Events: a bounded log that reconnecting clients resume from, and the live
subscribers (one asyncio queue per SSE connection) it fans each record out to.

Records are written from live mode's micro-batch thread and read on the server's event loop: ``publish`` appends
under a lock and hands the record to each subscriber's loop with ``call_soon_threadsafe``. An event's ``id`` is
the record's instant (its ``time`` as in the jsonl record), which orders a query's records, so a client that
reconnects with ``Last-Event-ID: T`` gets exactly the records after ``T`` that the log still holds; when records
after ``T`` have already left the log, a ``gap`` event says from where the log resumes."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from dataclasses import dataclass
from decimal import Decimal

from rspark.engine.live.sinks import Sink, time_key


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
    """A query's latest ``keep`` records and its SSE subscribers (a live-mode sink)."""

    def __init__(self, keep: int = 10000, client_limit: int = 10000) -> None:
        self.keep = keep
        self.client_limit = client_limit
        self.events: deque[Event] = deque()
        self.dropped_upto: Decimal | None = None  # the key of the newest record that left the log
        self.subscribers: set[Subscriber] = set()
        self.lock = threading.Lock()
        self.published = 0
        self.closed = False

    def write(self, rec) -> None:
        data = json.dumps(rec.to_json(), ensure_ascii=False)
        event = Event(str(rec.time), time_key(rec.time), data)
        with self.lock:
            self.events.append(event)
            while len(self.events) > self.keep:
                self.dropped_upto = self.events.popleft().key
            self.published += 1
            subs = list(self.subscribers)
        _hand_over(subs, event)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            subs = list(self.subscribers)
        _hand_over(subs, None)  # None ends each SSE stream

    def subscribe(self, loop: asyncio.AbstractEventLoop, after: str | None) -> tuple[Subscriber, list[Event],
                                                                                     Decimal | None]:
        """A new subscriber, the logged events after ``after`` (an event id; ``"start"``: every logged event; None:
        none), and, when events after ``after`` left the log already, the key they were dropped up to."""
        sub = Subscriber(loop, self.client_limit)
        with self.lock:
            self.subscribers.add(sub)
            if after is None:
                return sub, [], None
            if after == "start":
                return sub, list(self.events), self.dropped_upto
            key = time_key(after)
            backlog = [e for e in self.events if e.key > key]
            gap = self.dropped_upto if self.dropped_upto is not None and self.dropped_upto > key else None
            return sub, backlog, gap

    def unsubscribe(self, sub: Subscriber) -> None:
        with self.lock:
            self.subscribers.discard(sub)

    def latest(self) -> Event | None:
        with self.lock:
            return self.events[-1] if self.events else None


def _hand_over(subs: list[Subscriber], event: Event | None) -> None:
    """``event`` to each subscriber, on its own loop (called from live mode's micro-batch thread)."""
    for sub in subs:
        try:
            sub.loop.call_soon_threadsafe(sub.offer, event)
        except RuntimeError:  # the subscriber's loop is closed: the server is stopping
            pass
