"""The public face of :class:`~rspark.engine.live.runner.LiveRunner` for a client that serves live mode (the HTTP
service): the read model (:mod:`rspark.engine.live.view`) and the few changes such a client makes to a registered
query (pause, sinks) or to the static data (a graph replaced), each taking live mode's lock itself, so that the
client never holds it nor touches a buffer or a plan."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal

import numpy as np

from rspark.algebra.sse import to_sse
from rspark.cep.carried import occurrence_count
from rspark.engine.live.view import Band, QueryView, StreamView, WindowView, interval_variables
from rspark.errors import RsparkError
from rspark.model.time import TimeKind, Timeline
from rspark.model.timestamps import format_time, parse_time
from rspark.rsp.policies import Bounds, CountUnit
from rspark.rsp.profiles import get_profile
from rspark.rsp.report import due_count, report_policies
from rspark.rsp.windows import (
    CountWindow,
    ElementWindow,
    IntervalWindow,
    LandmarkWindow,
    NowWindow,
    TimeWindow,
    resolve_window,
)


class LiveReading:
    """The read model and the client's changes of :class:`~rspark.engine.live.runner.LiveRunner` (its
    ``streams``, ``queries``, ``graph_replacer`` and ``lock``)."""

    # ------------------------------------------------------------------------------------------------ reading

    def stream_iris(self) -> list[str]:
        """The IRIs of the live streams, in the order they were declared."""
        return list(self.streams)

    def describe_stream(self, iri: str) -> StreamView | None:
        """The live stream ``iri`` (None when there is none), its times formatted."""
        st = self.streams.get(iri)
        if st is None:
            return None
        b, tl = st.buffer, st.timeline()
        wm = st.watermark()
        c = st.counters
        return StreamView(
            iri=iri, kind=_kind(b.kind), lateness=st.lateness, arrival_time=st.arrival_time,
            timestamp_predicate=st.timestamp_predicate, elements=c["elements"], late=c["late"],
            rejected=c["rejected"], quarantined=c["quarantined"], files=c["files"], batches=c["batches"],
            first=_at(b.first, tl), last=_at(b.last, tl), watermark=_at(wm, tl), evaluated=_at(st.evaluated, tl),
            held_from=_at(b.low, tl), sources=tuple(feed.status() for feed in list(st.feeds)),
            mapped=st.mapping is not None)

    def describe_query(self, name: str) -> QueryView | None:
        """The registered query ``name`` (None when there is none): counters, progress, windows with their current
        and next bands, interval variables; its times formatted."""
        q = self.queries.get(name)
        if q is None:
            return None
        lat = sorted(q.latencies)
        streams = [self.streams[i] for i in q.reads if i in self.streams]
        return QueryView(
            name=q.name, label=q.label, text=q.text, algebra=to_sse(q.plan), profile=q.profile,
            reads=tuple(q.reads), writes=q.writes, paused=q.paused, error=q.error, evaluations=q.evaluations,
            records=q.records, last=_number(q.times()[0]), horizon=_number(q.times()[1]), lag=self._lag(q),
            late=sum(st.counters["late"] for st in streams), elements=sum(st.counters["elements"] for st in streams),
            latency_p50=lat[len(lat) // 2] if lat else None,
            latency_p99=lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
            consumed=None if q.consumption is None else occurrence_count(q.consumption),
            windows=tuple(self._window_view(q, d) for d in q.plan.dataset.windows),
            interval_variables=interval_variables(q.plan.op))

    def _window_view(self, q, decl) -> WindowView:
        """One window of ``q``, resolved on its stream's timeline, with its bands."""
        iri = decl.stream.value
        name = getattr(decl.name, "value", None)
        st = self.streams.get(iri)
        known = st is not None and st.buffer.kind is not None
        tl = st.timeline() if known else Timeline.datetime()
        first = st.buffer.first if st is not None else None
        try:
            rw = resolve_window(decl.spec, get_profile(q.profile), tl, first_ts=first or 0)
        except RsparkError:
            return WindowView(name, iri)
        last = _ticks(q.times()[0], tl) if known else None
        if isinstance(rw, TimeWindow):
            return WindowView(name, iri, "time", range=_unit(rw.range, tl), slide=_unit(rw.slide, tl),
                              partition=rw.partition, current=_time_band(rw, last, tl),
                              next=_next_band(rw, last, first, tl))
        if isinstance(rw, CountWindow):
            plain = rw.unit is CountUnit.ELEMENTS and rw.partition is None  # (a partitioned window: no one band)
            stamps = st.buffer.driver_stamps() if known and plain and last is not None else None
            return WindowView(name, iri, "count", size=rw.size, unit=rw.unit.value.lower(), partition=rw.partition,
                              current=_count_band(rw, last, stamps, tl))
        kind = {LandmarkWindow: "landmark", IntervalWindow: "interval", NowWindow: "now",
                ElementWindow: "element"}[type(rw)]
        start = _at(rw.start, tl) if kind in ("landmark", "interval") else None
        end = _at(rw.end, tl) if kind == "interval" else None
        current = None
        if last is not None and (bounds := rw.content_bounds(last)) is not None:
            current = Band(_at(bounds[0], tl), _at(bounds[1], tl), at=_at(last, tl))
        return WindowView(name, iri, kind, start=start, end=end, current=current)

    def due_instants(self, query: str, stream: str, newest, oldest=None) -> int:
        """How many evaluation instants of ``query`` an element of ``stream`` at ``newest`` (a time value) would
        make due at once: for each of its time windows on ``stream``, the closes and periods after the instant it
        reported last (from ``oldest``, or the stream's first element, when it reported none) up to the horizon
        the element would move the stream to (one tick before its watermark), before the non-empty filter; the
        most of its windows. 0 for windows whose instants depend on the data."""
        q, st = self.queries.get(query), self.streams.get(stream)
        if q is None or q.stopped or st is None or stream not in q.reads:
            return 0
        tl = st.timeline() if st.buffer.kind is not None else _timeline_of(newest, oldest)
        try:
            top = max(t for t in (parse_time(newest, tl), st.buffer.last) if t is not None)
            low = [t for t in (st.buffer.first, None if oldest is None else parse_time(oldest, tl)) if t is not None]
            until = top - st.lateness_ticks() - 1
            after = _ticks(q.times()[0], tl)
        except RsparkError:
            return 0
        first = min(low) if low else top
        profile = get_profile(q.profile)
        every = None
        if q.plan.register is not None and q.plan.register.every is not None:
            every = tl.duration(q.plan.register.every, "COMPUTED EVERY")
        most = 0
        for d in q.plan.dataset.windows:
            if d.stream.value != stream:
                continue
            try:
                rw = resolve_window(d.spec, profile, tl, first_ts=first)
            except RsparkError:
                continue
            due = due_count(rw, report_policies(profile, rw, every), first, after, until, every)
            most = max(most, due or 0)
        return most

    def late(self, iri: str, times: Iterable) -> list[bool]:
        """Whether each time value is at or before the instant every query reading ``iri`` has reported: an
        element stamped so is late (live mode writes it to the late directory, not to the buffer)."""
        st = self.streams.get(iri)
        times = list(times)
        if st is None or st.evaluated is None or st.buffer.kind is None:
            return [False] * len(times)
        tl = st.timeline()
        out = []
        for t in times:
            try:
                out.append(parse_time(t, tl) <= st.evaluated)
            except RsparkError:
                out.append(False)
        return out

    # ------------------------------------------------------------------------------------------------ changes

    def append_checked(self, iri: str, nquads: str) -> str:
        """Appends elements already parsed, checked and stamped (N-Quads text) to ``iri``'s inbox, declaring the
        stream with the defaults if it was not; returns the file written."""
        st = self.streams.get(iri) or self.stream(iri)
        return st.write(nquads, "nq")

    def add_query(self, text: str, *, name: str, profile: str | None = None, sinks: tuple = (),
                  resumed: Callable | None = None) -> QueryView:
        """Registers a query with its ``sinks`` and evaluates what the buffers hold already. ``resumed(last)`` is
        called, before any record reaches the sinks, with the last instant the checkpoint says the query reported
        (None: none), so that a sink can drop what it holds after it."""
        with self.lock:
            q = self.register(text, name=name, profile=profile, sinks=sinks)
            if resumed is not None:
                resumed(_number(q.times()[0]))
            self.evaluate()
        return self.describe_query(q.name)

    def pause(self, name: str, paused: bool = True) -> None:
        """Pauses (or resumes) the query ``name``: paused, it is evaluated but its records are not delivered."""
        self.queries[name].paused = paused

    def attach(self, name: str, sink) -> None:
        """Adds a sink to the query ``name`` (records from its next evaluation on)."""
        with self.lock:
            self.queries[name].sinks.append(sink)

    def detach(self, name: str, sink) -> None:
        """Removes a sink from the query ``name`` (not closed: its owner closes it)."""
        with self.lock:
            q = self.queries.get(name)
            if q is not None and sink in q.sinks:
                q.sinks.remove(sink)

    def replace_graph(self, iri: str, versions: Sequence[tuple[str, object]] = ()) -> None:
        """Drops the static graph ``iri`` and loads its ``versions`` in its place ((path, the instant it is valid
        from, None: from the beginning); none: dropped only), between two evaluations: a query sees the old graph
        or the new one, never half."""
        if self.graph_replacer is None:
            raise RsparkError("live mode was started without static graphs to replace")
        with self.lock:
            self.graph_replacer(iri, list(versions))

    def failure_text(self) -> str | None:
        """What stopped live mode (a micro-batch that failed), or None while it runs."""
        return None if self.failure is None else str(self.failure)


def _kind(kind) -> str | None:
    """A buffer's kind of timestamps as the read model names it: "datetime", "numeric", or None before its first
    element."""
    return None if kind is None else TimeKind(kind).value


def _at(ticks: int | None, tl: Timeline):
    """Ticks formatted as a time value (None stays None)."""
    return None if ticks is None else _number(format_time(ticks, tl))


def _number(value):
    """A time value as JSON carries it: a Decimal as an int or a float, anything else as it is."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _ticks(value, tl: Timeline) -> int | None:
    """A query's last instant or horizon as a time value (``LiveQuery.times``) in ticks of ``tl``."""
    return None if value is None else parse_time(value, tl)


def _unit(ticks: int, tl: Timeline) -> int | float:
    """A duration in ticks in the stream's unit (milliseconds for date-time streams)."""
    value = Decimal(ticks) / tl.scale
    return int(value) if value == value.to_integral_value() else float(value)


def _timeline_of(*values) -> Timeline:
    """The timeline of time values pushed before a stream's first element is loaded: date-time for ISO 8601
    texts, else numeric at the finest scale the numbers need."""
    places = 0
    for v in values:
        if v is None:
            continue
        if isinstance(v, str):
            try:
                v = Decimal(v)
            except ArithmeticError:
                return Timeline.datetime()
        exponent = Decimal(str(v)).normalize().as_tuple().exponent
        places = max(places, -exponent if isinstance(exponent, int) and exponent < 0 else 0)
    return Timeline.numeric(10 ** places)


def _band(window: TimeWindow, k: int, at: int | None, tl: Timeline) -> Band:
    """Window ``k`` of a time window as a band, its bounds open or closed as the window's bounds say."""
    c = window.close(k)
    open_start = window.bounds is Bounds.OPEN_CLOSED
    return Band(_at(c - window.range, tl), _at(c, tl), start_open=open_start, end_open=not open_start,
                at=_at(at, tl))


def _time_band(window: TimeWindow, last: int | None, tl: Timeline) -> Band | None:
    """The content evaluated at the last reported instant."""
    k = None if last is None else window.window_index(last)
    return None if k is None else _band(window, k, last, tl)


def _next_band(window: TimeWindow, last: int | None, first: int | None, tl: Timeline) -> Band | None:
    """The window reported after the last reported instant; before any, the first window holding the stream's
    first element."""
    if last is not None:
        k = window.window_index(last)
        k = 0 if k is None else k + 1
    elif first is not None:
        k = window.windows_of(first)[0]
        if window.explicit_start:
            k = max(k, 0)
    else:
        return None
    return _band(window, k, window.report_instant(k), tl)


def _count_band(window: CountWindow, last: int | None, stamps, tl: Timeline) -> Band | None:
    """A count window of elements at the last reported instant: from its oldest element's timestamp to the
    instant (None without the elements' timestamps on the driver)."""
    if last is None or stamps is None:
        return None

    held = int(np.searchsorted(stamps, last, side="right"))
    if held == 0:
        return None
    return Band(_at(int(stamps[max(0, held - window.size)]), tl), _at(last, tl), at=_at(last, tl))
