"""Live mode's read model: what a client (the HTTP service, its dashboard) may know of a live stream and a live
query, as frozen values with every time formatted (an ISO 8601 text for date-time streams, a number for numeric
ones), built by :class:`~rspark.engine.live.runner.LiveRunner`'s ``describe_stream`` and ``describe_query``.

A window's bands are computed by the resolved window itself (:mod:`rspark.rsp.windows`: bounds, offset, t0 and
close rule respected): ``current`` is the content evaluated at the query's last reported instant, ``next`` the
window reported after it. A query's interval variables are read off its algebra: the variables it binds to
``getSTARTTIME()`` and ``getENDTIME()`` (``SELECT (getSTARTTIME() AS ?start)`` or ``BIND``), so a client can draw
the matched events of a record without reading the query's text."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rspark.algebra import ops
from rspark.algebra.expr import Call

Time = Any  # a formatted time: an ISO 8601 text (date-time streams) or a number (numeric streams)


@dataclass(frozen=True)
class Band:
    """A window's content on the time axis: from ``start`` to ``end``, each bound open or closed as the window
    defines it (``(start, end]`` for RSP-QL's time windows, ``[start, end)`` under CQELS' bounds, closed for the
    others); ``at``: the instant whose content it is (None for a window not reported yet)."""

    start: Time
    end: Time
    start_open: bool = False
    end_open: bool = False
    at: Time = None


@dataclass(frozen=True)
class WindowView:
    """One window of a query: its name, stream and kind (``time``, ``count``, ``landmark``, ``interval``,
    ``now``, ``element``: the stream read with no window, element by element; None when it cannot be resolved
    yet), its parameters in the stream's unit, and its bands."""

    name: str | None
    stream: str
    kind: str | None = None
    range: int | float | None = None
    slide: int | float | None = None
    size: int | None = None
    unit: str | None = None  # a count window's: "elements", "triples" or "bgp"
    partition: str | None = None  # a partitioned count or time window's key predicate (an IRI)
    start: Time = None
    end: Time = None
    current: Band | None = None
    next: Band | None = None

    def parameters(self) -> dict:
        """The window as declared: name, stream, kind, range and slide (time), size, unit and partition (count),
        the partition of a partitioned time window, start and end (landmark and interval), without its bands."""
        out = {"name": self.name, "stream": self.stream, "kind": self.kind, "range": self.range,
               "slide": self.slide, "size": self.size}
        if self.kind == "count":
            out["unit"], out["partition"] = self.unit, self.partition
        elif self.kind == "time" and self.partition is not None:
            out["partition"] = self.partition
        if self.kind in ("landmark", "interval"):
            out["start"] = self.start
        if self.kind == "interval":
            out["end"] = self.end
        return out


@dataclass(frozen=True)
class IntervalVariables:
    """The variables a query binds to the start and the end of a matched event's interval (EP-SPARQL's
    ``getSTARTTIME()`` and ``getENDTIME()``)."""

    start: str
    end: str


@dataclass(frozen=True)
class StreamView:
    """A live stream: its kind of timestamps (``datetime``, ``numeric``, None before its first element), its
    settings, its counters, and its first and newest timestamps, watermark, evaluated instant (every instant up
    to it reported by the queries reading it) and the earliest timestamp its buffer still holds; the state of its
    sources."""

    iri: str
    kind: str | None
    lateness: Any
    arrival_time: bool
    timestamp_predicate: str
    elements: int
    late: int
    rejected: int
    quarantined: int
    files: int
    batches: int
    first: Time
    last: Time
    watermark: Time
    evaluated: Time
    held_from: Time
    # the sources that write into its inbox by themselves (an MQTT subscription): their state, as
    # ``live_status()["streams"][iri]["sources"]`` gives it
    sources: tuple = ()
    mapped: bool = False  # its records are JSON or CSV, mapped to elements (a mapping)


@dataclass(frozen=True)
class QueryView:
    """A live query: its name, label, text, algebra (SSE), profile, the streams it reads and the one it writes,
    its state (paused, the error that stopped it), its counters, the last instant reported and the horizon of
    its last evaluation, its lag behind the newest element (stream units), its windows with their bands and its
    interval variables."""

    name: str
    label: str
    text: str
    algebra: str
    profile: str | None
    reads: tuple[str, ...]
    writes: str | None
    paused: bool
    error: str | None
    evaluations: int
    records: int
    last: Time
    horizon: Time
    lag: int | float | None
    late: int
    elements: int
    latency_p50: float | None
    latency_p99: float | None
    consumed: int | None
    windows: tuple[WindowView, ...]
    interval_variables: IntervalVariables | None


def to_json(view) -> dict:
    """A view as JSON-ready values (nested dataclasses as objects, tuples as lists)."""
    return dataclasses.asdict(view)


def interval_variables(op) -> IntervalVariables | None:
    """The variables the algebra ``op`` binds to ``getSTARTTIME()`` and ``getENDTIME()`` (the first of each), or
    None when it does not bind both."""
    found: dict[str, str] = {}
    for node in ops.descendants(op):
        if isinstance(node, ops.Extend) and isinstance(node.expr, Call) and not node.expr.args:
            which = {"GETSTARTTIME": "start", "GETENDTIME": "end"}.get(str(node.expr.name).upper())
            if which is not None:
                found.setdefault(which, node.var.name)
    if "start" not in found or "end" not in found:
        return None
    return IntervalVariables(found["start"], found["end"])
