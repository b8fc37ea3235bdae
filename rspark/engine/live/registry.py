"""A live stream and a live query as live mode keeps them: a stream's inbox, buffer, lateness and watermark; a
query's plan, progress and sinks."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from rspark.algebra.ops import RegisterKind
from rspark.cep.patterns import consumes_events
from rspark.errors import InputError, RsparkError
from rspark.model.time import Timeline, parse_duration
from rspark.model.timestamps import format_time, parse_time
from rspark.rsp.profiles import get_profile


def stream_key(iri: str) -> str:
    """A directory name for a stream IRI (a hash: IRIs hold characters file systems refuse)."""
    return hashlib.sha1(iri.encode("utf-8")).hexdigest()[:16]


def readable_key(iri: str) -> str:
    """A directory name for a stream IRI that a person reads (the checkpoint's ``late/`` and ``quarantine/``): the
    IRI without its scheme (``http://``), each character other than an ASCII letter or digit, ``.``, ``-`` or ``_``
    written ``_``, at most its last 60 characters (no leading ``.``), then ``-`` and the first 8 hex digits of the
    IRI's SHA-1, which keeps apart IRIs that read the same: ``http://example.org/obs`` ->
    ``example.org_obs-<8 hex digits>``."""
    rest = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*:/*", "", iri)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", rest)[-60:].lstrip(".")
    return f"{safe or 'stream'}-{hashlib.sha1(iri.encode('utf-8')).hexdigest()[:8]}"


@dataclass
class LiveStream:
    """A stream fed live. ``lateness``: how far behind the greatest timestamp seen an element may arrive and still be
    evaluated (a number in the stream's unit or an ISO 8601 duration; 0 by default). ``arrival_time``: elements
    pushed without a timestamp get the time they arrive (else they are rejected with a message)."""

    iri: str
    buffer: Any  # LiveBuffer
    inbox: str
    lateness: Any = 0
    timestamp_predicate: str = "http://www.w3.org/ns/prov#generatedAtTime"
    # the predicate of the triple ending an element's validity interval (docs/streams.md); None: the timestamp
    # literal alone says (an instant, or an interval "start/end")
    end_predicate: str | None = None
    arrival_time: bool = False
    mapping: Any = None  # a Mapping (rspark.spark.loading.mapping): the stream's csv / json / jsonl records
    directories: list = field(default_factory=list)
    queries: list = field(default_factory=list)  # Spark StreamingQuery objects watching the directories
    feeds: list = field(default_factory=list)  # other sources writing into the inbox (an MQTT client): stop(), status()
    # held by the inbox reader while it deletes the files of a committed batch, and by a source that writes a file
    # and then notes it (MQTT: the message's digest): a file never goes before its note is written
    inbox_lock: Any = field(default_factory=threading.Lock)
    reader: Any = None  # the InboxReader of the inbox (rspark.engine.live.inbox)
    inbox_applied: list = field(default_factory=list)  # the inbox files of the last batch applied (until deleted)
    batches: dict = field(default_factory=dict)  # source key -> the last micro-batch id applied
    counters: dict = field(default_factory=lambda: {"elements": 0, "late": 0, "rejected": 0, "files": 0,
                                                    "quarantined": 0, "batches": 0})
    evaluated: int | None = None  # ticks: every instant up to here has been reported by the queries reading it
    arrivals: list = field(default_factory=list)  # (wall time, greatest ts) of recent batches, for the lag
    # called with each inbox file this process writes, as it is written: its reading on the driver starts at once,
    # beside the micro-batch being applied (runner._prefetch); None: it is read when its micro-batch comes
    prefetch: Any = None
    prefetched: dict = field(default_factory=dict)  # inbox file name -> (timestamp predicate, future of its reading)
    written: int = 0  # inbox files this process wrote (push, tcp, paced replay) ...
    read: int = 0  # ... and inbox files it has loaded: wait_idle waits for these to meet

    def write(self, text: str, ext: str, tag: str | None = None) -> str:
        """Writes ``text`` into the inbox (:func:`write_inbox`; ``tag`` ends the file's name), counted."""
        path = write_inbox(self.inbox, text, ext, tag)
        self.arrived(path)
        return path

    def arrived(self, path: str) -> None:
        """``path`` is a file this process has just put into the inbox: its reading on the driver starts
        (:attr:`prefetch`), it is counted, and the inbox reader is told."""
        if self.prefetch is not None:
            self.prefetch(path)
        self.written += 1
        if self.reader is not None:
            self.reader.notify()

    def timeline(self) -> Timeline:
        b = self.buffer
        return Timeline.of(b.kind, b.scale)

    def lateness_ticks(self) -> int:
        value = self.lateness
        if value in (None, 0, "0"):
            return 0
        tl = self.timeline()
        if isinstance(value, (int, float, Decimal)) or _is_number(str(value)):
            return tl.ticks(Decimal(str(value)), "allowed lateness")
        return tl.duration(parse_duration(str(value)), "allowed lateness")

    def watermark(self) -> int | None:
        """The greatest timestamp seen minus the allowed lateness (ticks), None before the first element."""
        if self.buffer.last is None:
            return None
        return self.buffer.last - self.lateness_ticks()


class LiveQuery:
    """A registered continuous query (what :class:`QueryHandle` controls). Its instants ``last`` (the last one
    reported) and ``horizon`` (the horizon of its last evaluation) are ticks of ``timeline``, the timeline of its
    group's streams, known from its first evaluation on (:meth:`on_timeline`); :meth:`times` writes them as time
    values, for the checkpoint and the status."""

    def __init__(self, name: str, text: str, plan, profile: str | None, label: str) -> None:
        self.name, self.text, self.plan, self.profile, self.label = name, text, plan, profile, label
        self.reads = list(dict.fromkeys(w.stream.value for w in plan.dataset.windows))
        reg = plan.register
        streams = reg is not None and reg.kind == RegisterKind.STREAM and hasattr(reg.name, "value")
        self.writes = reg.name.value if streams else None
        self.timeline: Timeline | None = None
        self.last: int | None = None
        self.horizon: int | None = None
        # the time values of a checkpoint (last, horizon), read as ticks once the timeline is known
        self._saved_times: tuple = (None, None)
        # a query that consumes events: its consumption state as the last run left it (rspark.cep.carried), saved
        # in the checkpoint; None: not carried (a query that does not consume events, or one restored from an
        # older rspark's checkpoint without that state, evaluated from its stream's start each time)
        self.consumption: dict | None = {} if consumes_events(plan.op, get_profile(profile)) else None
        # a query of a state loop: (timeline, instant, triples (KEY, s, p, o)): its output up to that instant, final,
        # from which the next micro-batch's rounds start (rspark.spark.streaming.network); None: from the buffers'
        # start (not kept in the checkpoint: a restarted loop evaluates its buffers, which it keeps whole, again)
        self.loop_output: tuple | None = None
        self.evaluations = 0
        self.records = 0
        self.sinks: list = []
        self.paused = False
        self.stopped = False
        self.error: str | None = None
        self.latencies: list = []  # seconds from a batch's arrival to its records' delivery (the last 1000)

    def restore(self, last, horizon) -> None:
        """The instants a checkpoint saved (time values, as :meth:`times` wrote them)."""
        self._saved_times = (last, horizon)

    def on_timeline(self, tl: Timeline) -> None:
        """Puts the query's instants on ``tl``, its group's timeline for this evaluation (a numeric stream's scale
        grows when a finer timestamp arrives: the ticks are scaled with it)."""
        if self.timeline is None:
            last, horizon = self._saved_times
            self.last = None if last is None else parse_time(last, tl)
            self.horizon = None if horizon is None else parse_time(horizon, tl)
            self._saved_times = (None, None)
        elif self.timeline != tl:
            self.last = None if self.last is None else rescale(self.last, self.timeline, tl)
            self.horizon = None if self.horizon is None else rescale(self.horizon, self.timeline, tl)
        self.timeline = tl

    def last_on(self, tl: Timeline) -> int:
        """The last instant reported, in ticks of ``tl`` (a timeline of the same kind)."""
        return rescale(self.last, self.timeline, tl)

    def times(self) -> tuple:
        """(last, horizon) as time values: numbers or ISO 8601 date-times, as the streams' timestamps."""
        if self.timeline is None:
            return self._saved_times
        return tuple(None if t is None else format_time(t, self.timeline) for t in (self.last, self.horizon))


def rescale(ticks: int, src: Timeline, dst: Timeline) -> int:
    """``ticks`` of ``src`` as ticks of ``dst``, a timeline of the same kind (scales are powers of ten; rounded
    down)."""
    if src.scale == dst.scale:
        return ticks
    return ticks * dst.scale // src.scale


class Closing(RsparkError):
    """A micro-batch refused because live mode is closing (not applied, not committed: read again on a restart)."""


def write_inbox(inbox: str, text: str, ext: str, tag: str | None = None) -> str:
    """Writes ``text`` as a new file of ``inbox`` atomically (a hidden name renamed in): the inbox reader never
    reads half a file. Names sort in the order of writing. ``tag`` (letters and digits) ends the name: a source
    that must know, after a crash, what it wrote last reads it there (and in the state's ``inbox_applied``)."""
    os.makedirs(inbox, exist_ok=True)
    suffix = f"-{tag}" if tag else ""
    name = f"{time.time_ns():020d}-{os.getpid()}-{threading.get_ident() % 100000:05d}{suffix}.{ext}"
    tmp = os.path.join(inbox, "." + name)
    # surrogateescape: a message's bytes that are not UTF-8 (decoded so) are written back as they came, for the loader
    # to report
    with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as out:
        out.write(text)
    final = os.path.join(inbox, name)
    os.replace(tmp, final)
    return final


def looks_like_nquads(text: str) -> bool:
    """Whether pushed text reads as N-Quads (its first statement a line ending with ``.``), else TriG."""
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        return s.endswith(".") and "{" not in s and not s.lower().startswith(("@prefix", "prefix", "@base", "base"))
    return False


def _is_number(text: str) -> bool:
    try:
        Decimal(text.strip())
        return True
    except ArithmeticError:
        return False


def check_lateness(iri: str, value) -> None:
    """Raises an :class:`~rspark.errors.InputError` (or a ``DurationError``) for an allowed lateness that is
    negative or neither a number nor an ISO 8601 duration."""
    if value is None:
        return
    if isinstance(value, (int, float, Decimal)):
        if value < 0:
            raise InputError(f"stream <{iri}>: the allowed lateness must not be negative ({value})")
        return
    text = str(value).strip()
    if _is_number(text):
        if Decimal(text) < 0:
            raise InputError(f"stream <{iri}>: the allowed lateness must not be negative ({text})")
        return
    parse_duration(text)  # a DurationError names what is wrong
