"""Windows of the stream model: what a query writes (window specifications) and the resolved windows in ticks with
their arithmetic: which window is evaluated at an instant, and which windows hold an element. How a stream counts
time (:class:`~rspark.model.time.Timeline`, its instants and their text forms) is in :mod:`rspark.model`; this
module gives those names too, beside the windows they serve. Pure Python: replay, live mode and the test oracles
share it; the Spark plans that assign elements to instants are in ``rspark.spark.streaming.windows``.

The windows (RSEP-QL, Sec. 3.2, RSP-QL*, Def. 5 and 15, docs/profiles.md), with ``ts`` in ticks:

=================  ===================================================================================
time-based         closes ``c = anchor + k*slide``; at ``t`` the window with the last ``c <= t - offset``
                   (``c < t - offset`` under ``close_rule "<"``) holds ``c-range < ts <= c`` (bounds
                   ``(]``) or ``c-range <= ts < c`` (``[)``). ``anchor = t0`` (RSEP-QL: t' = t0 +
                   floor((t-t0)/slide)*slide) or ``t0 + range`` with ``k >= 0`` (RSP-QL*: x = tau0 +
                   alpha + beta*i, i in N). ``offset`` is the ``b`` of ``[FROM NOW-a TO NOW-b]``.
landmark           ``t0 <= ts <= t``
interval           ``t1 <= ts <= t2`` and ``ts <= t`` (at ``t`` only the stream up to ``t`` exists)
NOW (CQELS)        ``ts == t``
no window (S2S)    ``ts == t``, evaluated at every element's timestamp and nowhere else (:class:`ElementWindow`)
count ELEMENTS n   the last ``n`` elements by (ts, seq) with ``ts <= t``; ``PARTITION BY p``: the last ``n`` of each
                   key (a subject of ``p`` in the element), the union over the keys
count TRIPLES n    the last ``n`` triples by (ts, seq, triple order) with ``ts <= t`` (over a quads frame)
count BGP n        not here: the query compiler assigns it over the BGP matches with :func:`assign_count`
=================  ===================================================================================

An element valid over an interval ``[ts, te]`` (docs/streams.md) is held by a time, landmark, interval or NOW
window whose content bounds ``[lo, hi]`` it meets, ``ts <= hi`` and ``te >= lo`` (``meets``, the profile's
``interval_elements``), or as a point at ``ts`` (``start``); count windows and a stream read with no window take it
at ``ts``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from rspark.model.time import Duration, Instant, Timeline, WindowError
from rspark.rsp.policies import (
    Bounds,
    CloseRule,
    CountUnit,
    DefaultWindow,
    ImplicitSlide,
    IntervalElements,
    ReportPolicy,
    T0Policy,
    setting,
)

if TYPE_CHECKING:  # only the profile's attributes are read here
    from rspark.rsp.profiles import Profile

# ---------------------------------------------------------------------------------------------- specifications


@dataclass(frozen=True, slots=True)
class TimeWindowSpec:
    """Time-based sliding window (tumbling when slide == range); ``start`` is t0 (None: the epoch). ``slide`` is
    None when the query wrote none: the engine profile decides (``implicit_slide``: the range, or one tick)."""

    range: Duration
    slide: Duration | None
    start: Instant | None = None
    offset: Duration | None = None  # [FROM NOW-a TO NOW-b]: the window ends b before the evaluation instant
    report: frozenset[ReportPolicy] | None = None  # the window's REPORT clause (None: the profile's policies)
    report_every: Duration | None = None  # REPORT EVERY d: the period of the clause's PERIODIC
    partition: str | None = None  # PARTITION BY p (predicate IRI): the time range of each subject of p


@dataclass(frozen=True, slots=True)
class LandmarkWindowSpec:
    start: Instant | None = None
    report: frozenset[ReportPolicy] | None = None
    report_every: Duration | None = None  # REPORT EVERY d: the period of the clause's PERIODIC


@dataclass(frozen=True, slots=True)
class IntervalWindowSpec:
    start: Instant
    end: Instant
    report: frozenset[ReportPolicy] | None = None
    report_every: Duration | None = None  # REPORT EVERY d: the period of the clause's PERIODIC


@dataclass(frozen=True, slots=True)
class CountWindowSpec:
    """Count-based window over the last ``size`` TRIPLES, ELEMENTS or BGP matches; ``partition``: the predicate
    IRI of ``PARTITION BY`` (the last ``size`` elements of each subject of that predicate)."""

    unit: CountUnit
    size: int
    report: frozenset[ReportPolicy] | None = None
    partition: str | None = None
    report_every: Duration | None = None  # REPORT EVERY d: the period of the clause's PERIODIC


@dataclass(frozen=True, slots=True)
class NowWindowSpec:
    """CQELS ``[NOW]``: the elements stamped with the evaluation instant."""

    report: frozenset[ReportPolicy] | None = None
    report_every: Duration | None = None  # REPORT EVERY d: the period of the clause's PERIODIC


# a window as the query writes it (None where a query gives none: the profile's default window)
WindowSpec = TimeWindowSpec | LandmarkWindowSpec | IntervalWindowSpec | CountWindowSpec | NowWindowSpec


# -------------------------------------------------------------------------------------------------- resolved windows


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A time-based window in ticks, with the profile's conventions applied (see the module docstring)."""

    range: int
    slide: int
    t0: int = 0
    offset: int = 0
    bounds: Bounds = Bounds.OPEN_CLOSED
    close_rule: CloseRule = CloseRule.AT_OR_BEFORE
    windows_before_t0: bool = True
    explicit_start: bool = False  # t0 came from the query (STARTING AT): nothing is reported before it
    report: frozenset[ReportPolicy] | None = None  # the report policies the query wrote (None: the profile's)
    report_every: int | None = None  # REPORT EVERY d in ticks: the period of the clause's PERIODIC
    meets: bool = True  # an element valid over an interval is held while it meets the window (else: at its start)
    # PARTITION BY p: the window of each key (a subject of p in an element), the union over the keys: the elements
    # with a key, in the time range (an element with no p triple is in no partition)
    partition: str | None = None

    def __post_init__(self) -> None:
        if self.range <= 0 or self.slide <= 0:
            raise WindowError(f"window range and slide must be positive (range {self.range}, slide {self.slide})")
        if self.offset < 0:
            raise WindowError(f"window offset must not be negative ({self.offset})")
        try:
            object.__setattr__(self, "bounds", setting(Bounds, self.bounds))
            object.__setattr__(self, "close_rule", setting(CloseRule, self.close_rule))
        except ValueError as exc:
            raise WindowError(f"window bounds / close rule: {exc}") from None

    @property
    def reach(self) -> int:
        """How far back from an instant t the window evaluated at t or later may read: no element before
        ``t - reach`` (the range, and a slide for the window that closed before t) is read again."""
        return self.range + self.slide

    @property
    def anchor(self) -> int:
        """The close of window ``k = 0``."""
        return self.t0 if self.windows_before_t0 else self.t0 + self.range

    @property
    def strict(self) -> int:
        return 1 if self.close_rule == "<" else 0

    @property
    def overlap(self) -> int:
        """How many windows an element can belong to: ``ceil(range / slide)``."""
        return -(-self.range // self.slide)

    def close(self, k: int) -> int:
        return self.anchor + k * self.slide

    def window_index(self, t: int) -> int | None:
        """The index ``k`` of the window evaluated at instant ``t`` (None: no window exists yet)."""
        rel = t - self.offset - self.anchor
        k = rel // self.slide if self.close_rule == "<=" else -(-rel // self.slide) - 1
        if not self.windows_before_t0 and k < 0:
            return None
        return k

    def window_bounds(self, k: int) -> tuple[int, int]:
        """Inclusive ``(lo, hi)`` tick bounds of window ``k``."""
        c = self.close(k)
        return (c - self.range + 1, c) if self.bounds is Bounds.OPEN_CLOSED else (c - self.range, c - 1)

    def content_bounds(self, t: int) -> tuple[int, int] | None:
        """Inclusive tick bounds of the content at instant ``t`` (None: no window)."""
        k = self.window_index(t)
        return None if k is None else self.window_bounds(k)

    def windows_of(self, ts: int) -> tuple[int, int]:
        """The indexes ``k_lo..k_hi`` of the windows that hold an element at ``ts`` (empty when k_lo > k_hi)."""
        rel = ts - self.anchor
        if self.bounds is Bounds.OPEN_CLOSED:
            lo, hi = -(-rel // self.slide), -(-(rel + self.range) // self.slide) - 1
        else:
            lo, hi = rel // self.slide + 1, (rel + self.range) // self.slide
        if not self.windows_before_t0:
            lo = max(lo, 0)
        return lo, hi

    def report_instant(self, k: int) -> int:
        """The first instant at which window ``k`` is the one evaluated (its close, plus the offset, plus one tick
        under the strict close rule)."""
        return self.close(k) + self.offset + self.strict

    def last_reported_index(self, until: int) -> int:
        """The last ``k`` whose :meth:`report_instant` is at or before ``until``."""
        return (until - self.offset - self.strict - self.anchor) // self.slide


@dataclass(frozen=True, slots=True)
class LandmarkWindow:
    """Landmark window: ``start <= ts <= t`` (RSEP-QL W^lambda)."""

    start: int
    report: frozenset[ReportPolicy] | None = None
    report_every: int | None = None  # REPORT EVERY d in ticks: the period of the clause's PERIODIC
    meets: bool = True  # an element valid over an interval is held while it meets the window (else: at its start)

    def content_bounds(self, t: int) -> tuple[int, int] | None:
        return (self.start, t) if self.start <= t else None


@dataclass(frozen=True, slots=True)
class IntervalWindow:
    """Interval window ``[FROM t1 TO t2]``: ``t1 <= ts <= t2`` (RSEP-QL W^sqcup), and ``ts <= t``."""

    start: int
    end: int
    report: frozenset[ReportPolicy] | None = None
    report_every: int | None = None  # REPORT EVERY d in ticks: the period of the clause's PERIODIC
    meets: bool = True  # an element valid over an interval is held while it meets the window (else: at its start)

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise WindowError(f"interval window ends ({self.end}) before it starts ({self.start})")

    def content_bounds(self, t: int) -> tuple[int, int] | None:
        hi = min(self.end, t)
        return (self.start, hi) if self.start <= hi else None


@dataclass(frozen=True, slots=True)
class NowWindow:
    """CQELS ``[NOW]``: the elements stamped with the evaluation instant (an element valid over an interval: while
    the instant is in it)."""

    report: frozenset[ReportPolicy] | None = None
    report_every: int | None = None  # REPORT EVERY d in ticks: the period of the clause's PERIODIC
    meets: bool = True  # an element valid over an interval is held while it meets the window (else: at its start)

    def content_bounds(self, t: int) -> tuple[int, int] | None:
        return (t, t)


@dataclass(frozen=True, slots=True)
class ElementWindow:
    """A stream read with no window (stream-to-stream, the W3C RSP CG requirements, S2S Operators): each element
    is read at its own timestamp and forgotten after, so the query filters and maps the stream element by element
    and reports each element's results once. The elements stamped with one instant are read together, as every
    window reads them. Its report policy is fixed (content change: every element timestamp), not the profile's."""

    report: None = None  # no REPORT clause: there is no window to write it in
    report_every: None = None
    meets: bool = True  # an element valid over an interval is read at its start, and carries its interval (else: not)

    def content_bounds(self, t: int) -> tuple[int, int] | None:
        return (t, t)


@dataclass(frozen=True, slots=True)
class CountWindow:
    """Count-based window: the last ``size`` ELEMENTS, TRIPLES or BGP matches at or before the instant. With a
    ``partition`` predicate (IRI), a partitioned window: an element's keys are the subjects of its triples with that
    predicate, and the window holds, for each key, the last ``size`` elements with that key (the union over the
    keys; an element with no key is in no partition)."""

    unit: CountUnit
    size: int
    report: frozenset[ReportPolicy] | None = None
    partition: str | None = None
    report_every: int | None = None  # REPORT EVERY d in ticks: the period of the clause's PERIODIC
    meets: bool = True  # an element valid over an interval is counted at its start, and carries its interval

    def __post_init__(self) -> None:
        if self.size <= 0:
            raise WindowError(f"count window size must be positive ({self.size})")
        try:
            object.__setattr__(self, "unit", setting(CountUnit, self.unit))
        except ValueError as exc:
            raise WindowError(f"count window unit {exc}") from None
        if self.partition is not None and self.unit is not CountUnit.ELEMENTS:
            raise WindowError(f"a partitioned count window counts elements, not {self.unit}")


ResolvedWindow = TimeWindow | LandmarkWindow | IntervalWindow | NowWindow | CountWindow | ElementWindow
RESOLVED = (TimeWindow, LandmarkWindow, IntervalWindow, NowWindow, CountWindow, ElementWindow)


def is_stream_to_stream(window: ResolvedWindow) -> bool:
    """True for a stream read with no window (:class:`ElementWindow`)."""
    return isinstance(window, ElementWindow)


def is_time_based(window: ResolvedWindow) -> bool:
    """True for sliding/tumbling time windows (the ones with a window-close report policy)."""
    return isinstance(window, TimeWindow)


def resolve_t0(profile: Profile, timeline: Timeline, first_ts: int | None) -> int:
    """The window origin of ``profile`` on ``timeline`` (``first_ts``: the stream's first timestamp, in ticks)."""
    policy = profile.t0
    if policy is T0Policy.ZERO:
        return 0
    if policy is T0Policy.FIRST_ELEMENT:
        if first_ts is None:
            raise WindowError(f"profile {profile.name!r} starts windows at the first element, but the stream is empty")
        return int(first_ts)
    return timeline.ticks(Decimal(policy), f"profile {profile.name!r} t0")


def resolve_window(spec, profile: Profile, timeline: Timeline, *, first_ts: int | None = None) -> ResolvedWindow:
    """A window spec of the syntax tree (``TimeWindowSpec``, ``LandmarkWindowSpec``, ``IntervalWindowSpec``,
    ``CountWindowSpec``, ``NowWindowSpec`` or None: the profile's default window, by default none, an
    :class:`ElementWindow`) in ticks, with the profile's conventions applied.

    ``first_ts`` (the stream's first timestamp in ticks) is needed only by a profile whose t0 is the first element.
    """
    if spec is None:
        if profile.default_window is DefaultWindow.ELEMENT:
            return ElementWindow(meets=profile.interval_elements is IntervalElements.MEETS)
        spec = NowWindowSpec() if profile.default_window is DefaultWindow.NOW else LandmarkWindowSpec(None)
    every = None
    meets = profile.interval_elements is IntervalElements.MEETS
    if getattr(spec, "report_every", None) is not None and not isinstance(spec, RESOLVED):
        every = timeline.duration(spec.report_every, "REPORT EVERY")
    if isinstance(spec, TimeWindowSpec):
        explicit = spec.start is not None
        t0 = timeline.instant(spec.start, "STARTING AT") if explicit else resolve_t0(profile, timeline, first_ts)
        range_ = timeline.duration(spec.range, "RANGE")
        if spec.slide is not None:
            slide = timeline.duration(spec.slide, "SLIDE")
        else:  # no SLIDE written (needs a parser that records it): the engine's default
            slide = 1 if profile.implicit_slide is ImplicitSlide.TICK else range_
        return TimeWindow(
            range=range_,
            slide=slide,
            t0=t0,
            offset=timeline.duration(spec.offset, "offset") if spec.offset is not None else 0,
            bounds=profile.bounds,
            close_rule=profile.close_rule,
            windows_before_t0=profile.windows_before_t0,
            explicit_start=explicit,
            report=spec.report,
            report_every=every,
            meets=meets,
            partition=spec.partition,
        )
    if isinstance(spec, LandmarkWindowSpec):
        if spec.start is not None:
            return LandmarkWindow(timeline.instant(spec.start, "LANDMARK start"), spec.report, every, meets)
        return LandmarkWindow(resolve_t0(profile, timeline, first_ts), spec.report, every, meets)
    if isinstance(spec, IntervalWindowSpec):
        return IntervalWindow(timeline.instant(spec.start, "FROM"), timeline.instant(spec.end, "TO"), spec.report,
                              every, meets)
    if isinstance(spec, CountWindowSpec):
        return CountWindow(spec.unit, int(spec.size), spec.report, spec.partition, every, meets)
    if isinstance(spec, NowWindowSpec):
        return NowWindow(spec.report, every, meets)
    if isinstance(spec, RESOLVED):
        return spec
    raise WindowError(f"not a window specification: {spec!r}")
