"""Report policies: the evaluation instants ET of a continuous query (RSEP-QL, Def. 5, RSP-QL, Sec. 2).

ET is rarely written in a query; engines derive it from report policies (SECRET, RSP-QL, Sec. 3):

``window-close``    every instant a time-based window closes: ``c_k + offset`` for ``c_k = anchor + k*slide``
                    (one tick later under the strict close rule of RSP-QL*, Def. 15), from the close of the first
                    window that holds the stream's first element, up to ``until``.
``content-change``  every distinct element timestamp up to ``until`` (RSEP-QL, Sec. 3.4: "evaluations occur every
                    time a new item appears on the stream"; RSP-QL, Sec. 3: "every time new statements enter the
                    window").
``periodic``        ``t0 + j*d`` for ``COMPUTED EVERY d`` (without it: every slide of a time window), from the
                    first one at or after the first element, up to ``until``.
``non-empty``       a filter on the instants of the others: only those where the window holds something
                    (C-SPARQL, SPARQLstream, RSP4J).
explicit times      ``times=[...]`` (``--times``) is ET itself: exactly those instants, nothing else.

Decisions: no instant before a window's first element is reported (an engine replaying a recording from the epoch
would otherwise print millions of empty records), except explicit ``times``; ``until`` defaults to the last
element's timestamp over the query's streams; with ``STARTING AT t0`` nothing before ``t0`` is reported; a query
with several windows is evaluated at the union of their instants (each window by its own policy; the non-empty
filter looks at that window).

``until="end"`` closes the streams at their last element (:func:`end_instant`): ``until`` becomes, over the
query's windows, the latest of each window's first instant at or after its stream's last element ``L`` at which
its report policy reports a window holding ``L``: for ``window-close``, the report instant of the first window
that holds ``L`` (its close, plus the offset, plus one tick under the strict close rule); for ``periodic``, the
first period instant at or after that close (at or after ``L`` for a window that is not time-based); for
``content-change``, ``L`` itself (no element arrives after it). An element in no window (a slide longer than
the range) closes nothing: ``L``. With the default ``until`` the window still open at ``L`` is never reported.

The instants come back as a Spark DataFrame (:class:`EvaluationInstants`), because one policy (content change) has
one instant per distinct element timestamp: as many as the elements, so it never goes to the driver. The others are
arithmetic sequences built with ``spark.range`` (no Python list either); ``values()`` collects them when the caller
knows they are few (tests, explicit ``--times``, live mode's due instants). Apart from that, the only driver traffic
is one ``min``/``max`` row per stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rspark.errors import RsparkError
from rspark.rsp.policies import CountUnit
from rspark.rsp.profiles import CONTENT_CHANGE, NON_EMPTY, PERIODIC, WINDOW_CLOSE, Profile, get_profile
from rspark.rsp.windows import is_time_based
from rspark.spark.frames import local_frame
from rspark.spark.streaming.windows import (
    INSTANT,
    CountSpec,
    IntervalSpec,
    LandmarkSpec,
    ResolvedWindow,
    TimeSpec,
    assign_window,
    instants_frame,
    stream_bounds,
)


class ReportError(RsparkError, ValueError):
    """Evaluation instants that cannot be derived (for example a period that is not positive)."""


@dataclass(frozen=True)
class WindowInput:
    """One window of a query: its resolved spec and its stream (``element, ts, seq``; ``quads`` for a
    ``[RANGE TRIPLES n]`` window's non-empty test; ``matches``, a ``ts`` column, for a ``[RANGE BGP n]`` window's:
    the times of its pattern's matches, None when no pattern reads the window; ``bounds``, the elements' least and
    greatest ``ts`` when the caller knows them, else they are computed)."""

    window: ResolvedWindow
    elements: DataFrame
    quads: DataFrame | None = None
    matches: DataFrame | None = None
    bounds: tuple[int | None, int | None] | None = None
    # the elements' timestamps held on the driver (a sorted numpy int64 array), when the caller has them: then
    # the non-empty filter of a few instants is found without a job (instants_after)
    stamps: object | None = None


@dataclass(frozen=True)
class EvaluationInstants:
    """ET: a DataFrame with one distinct long column ``instant`` (ticks), plus how it was derived."""

    frame: DataFrame
    policies: tuple  # per window: the sorted policy names applied ("times" for explicit instants)
    until: int | None = None

    def values(self) -> list[int]:
        """The instants, sorted (runs a job; for the few-instants cases only)."""
        return sorted(int(row[INSTANT]) for row in self.frame.collect())


def _empty(spark: SparkSession) -> DataFrame:
    return local_frame(spark, [], f"{INSTANT} long")


def _sequence(spark: SparkSession, first: int, last: int, origin: int, step: int) -> DataFrame | None:
    """``origin + j*step`` for ``j`` in ``first..last`` (None when empty), without a Python list."""
    if last < first:
        return None
    return spark.range(first, last + 1).select((F.lit(origin) + F.col("id") * F.lit(step)).cast("long").alias(INSTANT))


def _window_origin(window: ResolvedWindow) -> int:
    if isinstance(window, TimeSpec):
        return window.t0
    if isinstance(window, (LandmarkSpec, IntervalSpec)):
        return window.start
    return 0


def _explicit_start(window: ResolvedWindow) -> int | None:
    """The instant before which nothing is reported, when the query fixes one."""
    if isinstance(window, TimeSpec) and (window.explicit_start or not window.windows_before_t0):
        return window.t0
    if isinstance(window, (LandmarkSpec, IntervalSpec)):
        return window.start
    return None


def window_close_instants(spark: SparkSession, window: TimeSpec, first: int, until: int) -> DataFrame | None:
    """The report instants of the windows from the first one holding ``first`` up to ``until``."""
    k_first = window.windows_of(first)[0]
    if window.explicit_start:
        k_first = max(k_first, 0)
    k_last = window.last_reported_index(until)
    return _sequence(spark, k_first, k_last, window.anchor + window.offset + window.strict, window.slide)


def periodic_instants(spark: SparkSession, origin: int, period: int, first: int, until: int,
                      not_before: int | None = None) -> DataFrame | None:
    """``origin + j*period`` from the first one at or after ``first`` (and ``not_before``) up to ``until``."""
    if period <= 0:
        raise ReportError(f"the evaluation period must be positive ({period} ticks)")
    low = first if not_before is None else max(first, not_before)
    j_first = -(-(low - origin) // period)
    j_last = (until - origin) // period
    return _sequence(spark, j_first, j_last, origin, period)


END = "end"  # until=END: close the streams at their last element (end_instant)


def end_instant(window: ResolvedWindow, policies, last: int, every: int | None = None) -> int:
    """The last instant of a replay with ``until="end"`` for one window whose stream ends at ``last`` (ticks): its
    :func:`closing_instant`, else ``last``."""
    closing = closing_instant(window, policies, last, every)
    return last if closing is None else closing


def closing_instant(window: ResolvedWindow, policies, last: int, every: int | None = None) -> int | None:
    """The first instant at or after ``last`` (the stream's last element, in ticks) at which ``policies`` (a
    window's report policies, as :func:`report_policies` gives them) report a window holding ``last`` (see the
    module documentation); None when there is none (the element is in no window)."""
    def periodic_after(origin: int, period: int, t: int) -> int:
        return origin + -(-(t - origin) // period) * period

    if not isinstance(window, TimeSpec):  # landmark, interval, count, NOW: the content at `last` holds it
        if PERIODIC in policies and every is not None:
            return periodic_after(_window_origin(window), every, last)
        return last
    k_lo, k_hi = window.windows_of(last)
    if window.explicit_start:
        k_lo = max(k_lo, 0)
    if k_lo > k_hi:
        return None  # in no window: nothing to close
    closes = window.report_instant(k_lo)
    found = []
    if WINDOW_CLOSE in policies:
        found.append(closes)
    if PERIODIC in policies:
        found.append(periodic_after(window.t0, every if every is not None else window.slide, closes))
    if CONTENT_CHANGE in policies:
        k = window.window_index(last)
        if k is not None and k_lo <= k <= k_hi:
            found.append(last)
    return max(last, min(found)) if found else None


def content_change_instants(elements: DataFrame, until: int, not_before: int | None = None,
                            not_after: int | None = None) -> DataFrame:
    """Every distinct element timestamp up to ``until`` (and within ``[not_before, not_after]``)."""
    ts = F.col("ts")
    cond = ts <= F.lit(until)
    if not_before is not None:
        cond = cond & (ts >= F.lit(not_before))
    if not_after is not None:
        cond = cond & (ts <= F.lit(not_after))
    return elements.where(cond).select(ts.cast("long").alias(INSTANT)).distinct()


def evaluation_instants(windows: Sequence[WindowInput], profile: Profile | str | None = None, *,
                        every: int | None = None, times: Sequence[int] | None = None, until: int | None = None,
                        spark: SparkSession | None = None) -> EvaluationInstants:
    """ET for a query whose windows are ``windows`` under ``profile``.

    ``every``: the ``COMPUTED EVERY`` period in ticks (makes the policy periodic, keeping the profile's non-empty
    filter); ``times``: explicit instants in ticks (``--times``: exactly those); ``until``: the last instant in
    ticks (default: the last element's timestamp over the query's streams), or ``"end"`` (:data:`END`): the
    streams closed at their last element, so that the window still open there is reported (:func:`end_instant`).
    All instants are in ticks; the returned ``until`` is the last instant in ticks.
    """
    profile = get_profile(profile)
    if spark is None:
        if not windows:
            spark = SparkSession.getActiveSession()
            if spark is None:
                raise ReportError("no window and no Spark session: pass spark=")
        else:
            spark = windows[0].elements.sparkSession
    if times is not None:
        frame, _ = instants_frame(spark, times)
        return EvaluationInstants(frame, ("times",), until)

    bounds: dict[int, tuple] = {}  # id(elements) -> (first, last): one aggregate per distinct stream frame
    for w in windows:
        if id(w.elements) not in bounds:
            bounds[id(w.elements)] = w.bounds if w.bounds is not None else stream_bounds(w.elements)
    lasts = [hi for _, hi in bounds.values() if hi is not None]
    if until == END:
        ends = [end_instant(w.window, report_policies(profile, w.window, every), bounds[id(w.elements)][1], every)
                for w in windows if bounds[id(w.elements)][1] is not None]
        until = max(ends) if ends else None
    elif until is None:
        until = max(lasts) if lasts else None
    if until is None:
        return EvaluationInstants(_empty(spark), (), None)

    frames, applied = [], []
    for w in windows:
        first, _ = bounds[id(w.elements)]
        policies = set(profile.report_policies(is_time_based(w.window)))
        if every is not None:
            policies = {PERIODIC} | (policies & {NON_EMPTY})
        if first is None:
            applied.append(tuple(sorted(policies)))
            continue
        not_before = _explicit_start(w.window)
        parts = []
        if PERIODIC in policies:
            period = every if every is not None else (w.window.slide if isinstance(w.window, TimeSpec) else None)
            if period is None:  # a periodic profile over a window with no slide: every new element instead
                policies.add(CONTENT_CHANGE)
            else:
                parts.append(periodic_instants(spark, _window_origin(w.window), period, first, until, not_before))
        if WINDOW_CLOSE in policies:
            if isinstance(w.window, TimeSpec):
                parts.append(window_close_instants(spark, w.window, first, until))
            else:  # landmark, interval, count and NOW windows never close: they report on content change
                policies.add(CONTENT_CHANGE)
        if CONTENT_CHANGE in policies:
            # an interval window's content changes only while new elements fall inside the interval
            not_after = w.window.end if isinstance(w.window, IntervalSpec) else None
            parts.append(content_change_instants(w.elements, until, not_before, not_after))
        applied.append(tuple(sorted(policies)))
        parts = [p for p in parts if p is not None]
        if not parts:
            continue
        frame = parts[0]
        for extra in parts[1:]:
            frame = frame.unionByName(extra)
        if len(parts) > 1:
            frame = frame.distinct()
        if NON_EMPTY in policies:
            frame = non_empty(frame, w)
        frames.append(frame)

    if not frames:
        return EvaluationInstants(_empty(spark), tuple(applied), until)
    result = frames[0]
    for extra in frames[1:]:
        result = result.unionByName(extra)
    if len(frames) > 1:
        result = result.distinct()
    return EvaluationInstants(result, tuple(applied), until)


DRIVER_INSTANTS = 10_000  # instants_after: at most this many candidate instants per window, else None


def _candidates(window: TimeSpec, policies, first: int, after: int | None, until: int,
                every: int | None) -> list[range]:
    """The instants in ``(after, until]`` (``after`` None: from the start) at which a time window whose stream begins
    at ``first`` closes or a period ends, before the non-empty filter: one arithmetic range per policy (the
    sequences of :func:`window_close_instants` and :func:`periodic_instants`, cut at ``after``)."""
    out = []
    if WINDOW_CLOSE in policies:
        k_first = window.windows_of(first)[0]
        if window.explicit_start:
            k_first = max(k_first, 0)
        if after is not None:
            k_first = max(k_first, window.last_reported_index(after) + 1)
        k_last = window.last_reported_index(until)
        out.append(range(window.report_instant(k_first), window.report_instant(k_last) + 1, window.slide))
    if PERIODIC in policies:
        origin, period = _window_origin(window), every if every is not None else window.slide
        not_before = _explicit_start(window)
        low = first if not_before is None else max(first, not_before)
        j_first = -(-(low - origin) // period)
        if after is not None:
            j_first = max(j_first, (after - origin) // period + 1)
        j_last = (until - origin) // period
        out.append(range(origin + j_first * period, origin + j_last * period + 1, period))
    return out


def instants_after(windows: Sequence[WindowInput], profile: Profile | str | None, after: int, until: int,
                   every: int | None = None) -> list[int] | None:
    """The instants of :func:`evaluation_instants` in ``(after, until]``, sorted, computed on the driver without a
    job; None when they cannot be: a window that is not time-based or reports on content change, unknown bounds,
    a non-empty filter without the window's ``stamps``, or more than DRIVER_INSTANTS candidates. Live mode's
    micro-batches ask for the few instants since the last one reported."""
    profile = get_profile(profile)
    found: set[int] = set()
    for w in windows:
        if w.bounds is None:
            return None
        first = w.bounds[0]
        if first is None:  # no element: no instant
            continue
        policies = report_policies(profile, w.window, every)
        if CONTENT_CHANGE in policies or not isinstance(w.window, TimeSpec):
            return None
        ranges = _candidates(w.window, policies, first, after, until, every)
        if any(len(r) > DRIVER_INSTANTS for r in ranges):
            return None
        candidates = set().union(*ranges)
        if NON_EMPTY in policies and candidates:
            if w.stamps is None:
                return None
            candidates = {t for t in candidates if _holds(w.stamps, w.window.content_bounds(t))}
        found |= candidates
    return sorted(found)


def _holds(stamps, bounds: tuple[int, int] | None) -> bool:
    """Whether the sorted ``stamps`` have one in the inclusive ``bounds``."""
    import numpy as np

    if bounds is None:
        return False
    lo, hi = bounds
    i = int(np.searchsorted(stamps, lo, side="left"))
    return i < len(stamps) and int(stamps[i]) <= hi


def may_report(window: ResolvedWindow, policies, first: int, after: int | None, until: int,
               every: int | None = None) -> bool | None:
    """Whether :func:`evaluation_instants` may give one window, whose stream begins at ``first``, an instant in
    ``(after, until]`` (ticks; ``after`` None: from the start), found without Spark: False when no window closes
    and no period ends there; True when one does (the non-empty filter may still leave it out); None when the
    instants depend on the data (content change). ``policies``: :func:`report_policies`' for the window."""
    if CONTENT_CHANGE in policies or not isinstance(window, TimeSpec):
        return None
    return any(len(r) for r in _candidates(window, policies, first, after, until, every))


def report_policies(profile: Profile | str | None, window: ResolvedWindow, every: int | None = None) -> set:
    """The report policies :func:`evaluation_instants` applies to a window (before the non-empty filter): the
    profile's, periodic with ``COMPUTED EVERY``, content change for a window with no close or no period."""
    policies = set(get_profile(profile).report_policies(is_time_based(window)))
    if every is not None:
        policies = {PERIODIC} | (policies & {NON_EMPTY})
    if PERIODIC in policies and every is None and not isinstance(window, TimeSpec):
        policies.add(CONTENT_CHANGE)
    if WINDOW_CLOSE in policies and not isinstance(window, TimeSpec):
        policies.add(CONTENT_CHANGE)
    return policies


def non_empty(instants: DataFrame, window_input: WindowInput) -> DataFrame:
    """The instants at which the window holds at least one element (a semi-join with its assignment)."""
    w = window_input.window
    if isinstance(w, CountSpec) and w.unit is CountUnit.BGP:
        if window_input.matches is None:
            return instants
        # a count window holds something from its first item on
        first = window_input.matches.agg(F.min("ts").alias("_first"))
        return instants.join(first, F.col(INSTANT) >= F.col("_first")).select(INSTANT)
    held = assign_window(window_input.elements, w, instants, quads=window_input.quads).select(INSTANT).distinct()
    return instants.join(held, INSTANT, "left_semi")
