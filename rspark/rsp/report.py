"""Report policies as arithmetic: which instants a window's report policies make evaluation instants.

RSP-QL (Dell'Aglio et al. 2015, section 4, report policies) lets an engine report a window's content when the
window closes, when its content changes, when it is not empty, or periodically; RSP4J names one class per policy
(``OnWindowClose``, ``OnContentChange``, ``NonEmptyContent``, ``Periodic``), and so does this module. Each class
gives the instants it reports in ``(after, until]`` for a window whose stream begins at ``first`` (all in ticks):

- :class:`OnWindowClose` and :class:`Periodic` are arithmetic sequences, known without the data (a ``range``);
- :class:`OnContentChange` reports at element timestamps: it needs the data (``candidates`` gives None);
- :class:`NonEmptyContent` reports nothing by itself: it filters the instants of the others.

Decisions shared by all policies: no instant before a window's first element is reported; with ``STARTING AT t0``
(or a profile that opens no window before ``t0``) nothing before ``t0`` is reported; an interval window's content
changes only while new elements fall inside the interval. The Spark forms of these instants (a DataFrame of
instants, the non-empty filter as a semi-join) are in :mod:`rspark.spark.streaming.report`.

This module is pure Python: live mode asks it for the few instants since the last one it reported, and the
service asks it how many instants a push would make due, without a Spark job.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rspark.errors import RsparkError
from rspark.rsp.policies import R2S
from rspark.rsp.profiles import CONTENT_CHANGE, NON_EMPTY, PERIODIC, WINDOW_CLOSE, Profile, get_profile
from rspark.rsp.windows import (
    ElementWindow,
    IntervalWindow,
    LandmarkWindow,
    ResolvedWindow,
    TimeWindow,
    is_time_based,
)

END = "end"  # until=END: close the streams at their last element (end_instant)
DRIVER_INSTANTS = 10_000  # instants_after: at most this many candidate instants per window, else None


class ReportError(RsparkError, ValueError):
    """Evaluation instants that cannot be derived (for example a period that is not positive)."""


def window_origin(window: ResolvedWindow) -> int:
    """Where a window's periods are counted from: a time window's t0, a landmark or interval window's start."""
    if isinstance(window, TimeWindow):
        return window.t0
    if isinstance(window, (LandmarkWindow, IntervalWindow)):
        return window.start
    return 0


def explicit_start(window: ResolvedWindow) -> int | None:
    """The instant before which nothing is reported, when the query (or the profile's window origin) fixes one."""
    if isinstance(window, TimeWindow) and (window.explicit_start or not window.windows_before_t0):
        return window.t0
    if isinstance(window, (LandmarkWindow, IntervalWindow)):
        return window.start
    return None


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class OnWindowClose:
    """Window close (RSP-QL, Dell'Aglio et al. 2015, section 4: "the content is reported when the active window
    closes"): a time window ``(c_k - range, c_k]`` closing at ``c_k = anchor + k*slide`` is reported at
    ``c_k + offset``, one tick later under the strict close rule of RSP-QL*. Only time-based windows close;
    any other window reports on content change instead."""

    policy = WINDOW_CLOSE

    def candidates(self, window: ResolvedWindow, first: int, after: int | None, until: int) -> range | None:
        """The report instants in ``(after, until]`` (``after`` None: from the start) of the windows from the first
        one that holds ``first``; None for a window that never closes."""
        if not isinstance(window, TimeWindow):
            return None
        k_first = window.windows_of(first)[0]
        if window.explicit_start:
            k_first = max(k_first, 0)
        if after is not None:
            k_first = max(k_first, window.last_reported_index(after) + 1)
        k_last = window.last_reported_index(until)
        return range(window.report_instant(k_first), window.report_instant(k_last) + 1, window.slide)

    def closing(self, window: TimeWindow, last: int, k_first: int) -> int | None:
        """The first instant at which this policy reports window ``k_first``, the first one holding ``last``."""
        return window.report_instant(k_first)


@dataclass(frozen=True)
class Periodic:
    """Periodic (RSP-QL, Dell'Aglio et al. 2015, section 4: "the content is reported every period"): the instants
    ``origin + j*period`` for the window's ``REPORT EVERY period``, else the query's ``COMPUTED EVERY period``
    (without either: every slide of a time window), from the first one at or after the stream's first element (and
    the window's explicit start). A window with no slide and no period has no period: it reports on content change
    instead."""

    every: int | None = None
    policy = PERIODIC

    def period(self, window: ResolvedWindow) -> int | None:
        if window.report_every is not None:
            period = window.report_every
        elif self.every is not None:
            period = self.every
        elif isinstance(window, TimeWindow):
            period = window.slide
        else:
            return None
        if period <= 0:
            raise ReportError(f"the evaluation period must be positive ({period} ticks)")
        return period

    def candidates(self, window: ResolvedWindow, first: int, after: int | None, until: int) -> range | None:
        """The period instants in ``(after, until]`` (``after`` None: from the start); None without a period."""
        period = self.period(window)
        if period is None:
            return None
        origin, not_before = window_origin(window), explicit_start(window)
        low = first if not_before is None else max(first, not_before)
        j_first = _ceil_div(low - origin, period)
        if after is not None:
            j_first = max(j_first, (after - origin) // period + 1)
        j_last = (until - origin) // period
        return range(origin + j_first * period, origin + j_last * period + 1, period)

    def next_at_or_after(self, window: ResolvedWindow, t: int) -> int | None:
        """The first period instant at or after ``t``."""
        period = self.period(window)
        if period is None:
            return None
        origin = window_origin(window)
        return origin + _ceil_div(t - origin, period) * period


@dataclass(frozen=True)
class OnContentChange:
    """Content change (RSP-QL, Dell'Aglio et al. 2015, section 4: "the content is reported every time it
    changes"; RSEP-QL: "evaluations occur every time a new item appears on the stream"): every distinct element
    timestamp, within an interval window's interval. The instants depend on the data."""

    policy = CONTENT_CHANGE

    def candidates(self, window: ResolvedWindow, first: int, after: int | None, until: int) -> None:
        """None: the instants are the elements' timestamps, not known from the window and the bounds alone."""
        return None

    def instants(self, window: ResolvedWindow, stamps: Sequence[int], after: int | None, until: int) -> list[int]:
        """The distinct timestamps of ``stamps`` (sorted) in ``(after, until]`` that this policy reports, sorted."""
        lo = explicit_start(window)
        hi = window.end if isinstance(window, IntervalWindow) else None
        if after is not None:
            lo = after + 1 if lo is None else max(lo, after + 1)
        hi = until if hi is None else min(hi, until)
        # ``stamps`` sorted (a live buffer's timestamps): only the slice in [lo, hi] is read
        start = 0 if lo is None else bisect_left(stamps, lo)
        stop = bisect_right(stamps, hi)
        return sorted({int(t) for t in stamps[start:stop]})


@dataclass(frozen=True)
class NonEmptyContent:
    """Non-empty content (RSP-QL, Dell'Aglio et al. 2015, section 4: "the content is reported only if it is not
    empty"): a filter on the instants the other policies give, keeping those at which the window holds an
    element (C-SPARQL, SPARQLstream and RSP4J report so)."""

    policy = NON_EMPTY

    def candidates(self, window: ResolvedWindow, first: int, after: int | None, until: int) -> None:
        """None: this policy adds no instant of its own."""
        return None

    def keep(self, window: ResolvedWindow, instants: Iterable[int], stamps: Sequence[int]) -> list[int]:
        """The ``instants`` at which the window holds one of the sorted element timestamps ``stamps``."""
        return [t for t in instants if _holds(stamps, window.content_bounds(t))]


ReportRule = OnWindowClose | Periodic | OnContentChange | NonEmptyContent


def stream_operator(written: R2S | None, profile: Profile | str | None, windows: Sequence[ResolvedWindow]) -> R2S:
    """A query's relation-to-stream operator: the one it names (``written``), else RSTREAM for a query whose
    streams are all read with no window (stream-to-stream: each element's results are reported once), else the
    profile's."""
    if written is not None:
        return R2S(written)
    if windows and all(isinstance(w, ElementWindow) for w in windows):
        return R2S.RSTREAM
    return get_profile(profile).r2s


def report_policies(profile: Profile | str | None, window: ResolvedWindow, every: int | None = None) -> set:
    """The report policies a window is evaluated under (:func:`policies_in_force`); a stream read with no window
    (:class:`~rspark.rsp.windows.ElementWindow`) reports at each element's timestamp under every profile."""
    if isinstance(window, ElementWindow):
        return {CONTENT_CHANGE}
    return set(policies_in_force(window.report, is_time_based(window), profile,
                                 every is not None or window.report_every is not None)[0])


def policies_in_force(report: frozenset | None, time_based: bool, profile: Profile | str | None,
                      every: bool = False) -> tuple[frozenset, str]:
    """The report policies of a window and where they come from (``"query"`` or ``"profile"``): those of its
    ``REPORT`` clause when the query writes one (``COMPUTED EVERY`` is then the period of its ``PERIODIC``), else
    the profile's, periodic with ``COMPUTED EVERY`` (``every``; keeping the profile's non-empty filter); content
    change added for a window that is not time-based (``time_based``) and would report on a close or a slide it
    does not have."""
    if report is not None:
        policies, source = set(report), "query"
    else:
        profile = get_profile(profile)
        policies, source = set(profile.report_policies(time_based)), "profile"
        if every:
            policies = {PERIODIC} | (policies & {NON_EMPTY})
    if PERIODIC in policies and not every and not time_based:
        policies.add(CONTENT_CHANGE)
    if WINDOW_CLOSE in policies and not time_based:
        policies.add(CONTENT_CHANGE)
    return frozenset(policies), source


def rules(policies: Iterable, every: int | None = None) -> list[ReportRule]:
    """One rule object per report policy name, in a fixed order (window close, periodic, content change,
    non-empty)."""
    made = {WINDOW_CLOSE: OnWindowClose(), PERIODIC: Periodic(every), CONTENT_CHANGE: OnContentChange(),
            NON_EMPTY: NonEmptyContent()}
    chosen = set(policies)
    return [rule for name, rule in made.items() if name in chosen]


def candidates(window: ResolvedWindow, policies, first: int, after: int | None, until: int,
               every: int | None = None) -> list[range]:
    """The arithmetic instants in ``(after, until]`` of a window whose stream begins at ``first``: one range per
    policy that has them (window close, periodic), before the non-empty filter."""
    found = (rule.candidates(window, first, after, until) for rule in rules(policies, every))
    return [r for r in found if r is not None]


def may_report(window: ResolvedWindow, policies, first: int, after: int | None, until: int,
               every: int | None = None) -> bool | None:
    """Whether a window whose stream begins at ``first`` may have an evaluation instant in ``(after, until]``
    (``after`` None: from the start): False when no window closes and no period ends there; True when one does
    (the non-empty filter may still leave it out); None when the instants depend on the data (content change).
    ``policies``: :func:`report_policies`' for the window."""
    if CONTENT_CHANGE in policies or not isinstance(window, TimeWindow):
        return None
    return any(len(r) for r in candidates(window, policies, first, after, until, every))


class WindowFacts(Protocol):
    """What :func:`instants_after` reads of a window: the resolved window, its stream's least and greatest
    timestamps (``bounds``, None when unknown) and the sorted timestamps (``stamps``, None when not held)."""

    window: ResolvedWindow
    bounds: tuple[int | None, int | None] | None
    stamps: object | None


def instants_after(windows: Sequence[WindowFacts], profile: Profile | str | None, after: int | None, until: int,
                   every: int | None = None) -> list[int] | None:
    """The evaluation instants in ``(after, until]`` (``after`` None: from the start), sorted, without a Spark
    job; None when they cannot be found so: a window that is not time-based, unknown bounds, content change or a
    non-empty filter without the window's ``stamps``, or more than DRIVER_INSTANTS candidates. Live mode's
    micro-batches ask for the few instants since the last one it reported."""
    profile = get_profile(profile)
    found: set[int] = set()
    for w in windows:
        if w.bounds is None:
            return None
        first = w.bounds[0]
        if first is None:  # no element: no instant
            continue
        policies = report_policies(profile, w.window, every)
        if isinstance(w.window, ElementWindow) and w.stamps is not None:
            found.update(OnContentChange().instants(w.window, w.stamps, after, until))
            continue
        if not isinstance(w.window, TimeWindow):
            return None
        ranges = candidates(w.window, policies, first, after, until, every)
        if any(len(r) > DRIVER_INSTANTS for r in ranges):
            return None
        instants = set().union(*ranges)
        if CONTENT_CHANGE in policies:
            if w.stamps is None:
                return None
            instants.update(OnContentChange().instants(w.window, w.stamps, after, until))
        if NON_EMPTY in policies and instants:
            if w.stamps is None:
                return None
            instants = set(NonEmptyContent().keep(w.window, instants, w.stamps))
        found |= instants
    return sorted(found)


def due_count(window: ResolvedWindow, policies, first: int, after: int | None, until: int,
              every: int | None = None) -> int | None:
    """How many arithmetic instants (window close, periodic) fall in ``(after, until]``, before the non-empty
    filter: an upper bound of the evaluations a window asks for there; None when its instants depend on the data."""
    if CONTENT_CHANGE in policies or not isinstance(window, TimeWindow):
        return None
    ranges = candidates(window, policies, first, after, until, every)
    return len(set().union(*ranges)) if len(ranges) > 1 else sum(len(r) for r in ranges)


def closing_instant(window: ResolvedWindow, policies, last: int, every: int | None = None) -> int | None:
    """The first instant at or after ``last`` (the stream's last element, in ticks) at which ``policies`` (a
    window's report policies, as :func:`report_policies` gives them) report a window holding ``last``: for window
    close, the report instant of the first window that holds ``last``; for periodic, the first period instant at
    or after that close (at or after ``last`` for a window that is not time-based); for content change, ``last``
    itself. None when there is none (the element is in no window: a slide longer than the range)."""
    periodic = Periodic(every)
    if not isinstance(window, TimeWindow):  # landmark, interval, count, NOW: the content at `last` holds it
        if PERIODIC in policies and every is not None:
            return periodic.next_at_or_after(window, last)
        return last
    k_lo, k_hi = window.windows_of(last)
    if window.explicit_start:
        k_lo = max(k_lo, 0)
    if k_lo > k_hi:
        return None  # in no window: nothing to close
    closes = OnWindowClose().closing(window, last, k_lo)
    found = []
    if WINDOW_CLOSE in policies:
        found.append(closes)
    if PERIODIC in policies:
        found.append(periodic.next_at_or_after(window, closes))
    if CONTENT_CHANGE in policies:
        k = window.window_index(last)
        if k is not None and k_lo <= k <= k_hi:
            found.append(last)
    return max(last, min(found)) if found else None


def end_instant(window: ResolvedWindow, policies, last: int, every: int | None = None) -> int:
    """The last instant of a replay with ``until="end"`` for one window whose stream ends at ``last`` (ticks): its
    :func:`closing_instant`, else ``last``."""
    closing = closing_instant(window, policies, last, every)
    return last if closing is None else closing


def report_until(until, windows: Sequence[tuple[ResolvedWindow, int | None]], profile: Profile | str | None,
                 every: int | None = None) -> int | None:
    """The last evaluation instant: ``until`` in ticks as given; with ``until=END`` the latest
    :func:`end_instant` over the windows (``(window, last)``: each window and its stream's last timestamp, None
    for an empty stream); with None the latest last timestamp. None when no stream has an element."""
    lasts = [last for _, last in windows if last is not None]
    if until == END:
        ends = [end_instant(w, report_policies(profile, w, every), last, every) for w, last in windows
                if last is not None]
        return max(ends) if ends else None
    if until is None:
        return max(lasts) if lasts else None
    return until


def _holds(stamps: Sequence[int], bounds: tuple[int, int] | None) -> bool:
    """Whether the sorted ``stamps`` have one in the inclusive ``bounds``."""
    if bounds is None:
        return False
    lo, hi = bounds
    i = bisect_left(stamps, lo)
    return i < len(stamps) and int(stamps[i]) <= hi
