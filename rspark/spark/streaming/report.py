"""Report policies as Spark frames: the evaluation instants ET of a continuous query (RSEP-QL, Def. 5, RSP-QL,
Sec. 2) as a DataFrame of instants.

ET is rarely written in a query; engines derive it from report policies (SECRET, RSP-QL, Sec. 3). The arithmetic
of each policy (window close, content change, periodic, non-empty) is pure Python in :mod:`rspark.rsp.report`, one
class per policy; this module turns it into frames: window close and periodic as ``spark.range`` sequences,
content change as the distinct element timestamps, the non-empty filter as a semi-join with the window assignment.
Explicit ``times=[...]`` (``--times``) is ET itself: exactly those instants, nothing else. A query with several
windows is evaluated at the union of their instants (each window by its own policies; the non-empty filter looks
at that window). ``until`` (:func:`rspark.rsp.report.report_until`) defaults to the last element's timestamp over
the query's streams; ``until="end"`` closes the streams at their last element, so that the window still open there
is reported.

The instants come back as a Spark DataFrame (:class:`EvaluationInstants`), because one policy (content change) has
one instant per distinct element timestamp: as many as the elements, so it never goes to the driver. The others are
arithmetic sequences built with ``spark.range`` (no Python list either); ``values()`` collects them when the caller
knows they are few (tests, explicit ``--times``, live mode's due instants). Apart from that, the only driver traffic
is one ``min``/``max`` row per stream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rspark.rsp.policies import CountUnit
from rspark.rsp.profiles import CONTENT_CHANGE, NON_EMPTY, Profile, get_profile
from rspark.rsp.report import (
    OnWindowClose,
    Periodic,
    ReportError,
    candidates,
    explicit_start,
    report_policies,
    report_until,
)
from rspark.spark.frames import local_frame
from rspark.spark.streaming.windows import (
    INSTANT,
    CountWindow,
    IntervalWindow,
    ResolvedWindow,
    TimeWindow,
    assign_window,
    instants_frame,
    stream_bounds,
)


@dataclass(frozen=True)
class WindowInput:
    """One window of a query: its resolved spec and its stream (``element, ts, seq``; ``quads`` for a
    ``[RANGE TRIPLES n]`` window's non-empty test; ``matches``, a ``ts`` column, for a ``[RANGE BGP n]`` window's:
    the times of its pattern's matches, None when no pattern reads the window; ``bounds``, the elements' least and
    greatest ``ts`` when the caller knows them, else they are computed)."""

    window: ResolvedWindow
    # the elements, or what gives them, called once, when they are first read (:attr:`elements`): the instants
    # found on the driver (rspark.rsp.report.instants_after) do not read them
    given_elements: DataFrame | Callable[[], DataFrame] = field(repr=False)
    quads: DataFrame | None = None
    matches: DataFrame | None = None
    bounds: tuple[int | None, int | None] | None = None
    # the elements' timestamps held on the driver (a sorted numpy int64 array), when the caller has them: then
    # the non-empty filter of a few instants is found without a job (instants_after)
    stamps: object | None = None
    # a stream a state loop reads back: its window at an instant holds the elements before it only
    before: bool = False

    @cached_property
    def elements(self) -> DataFrame:
        """The window's stream's elements (``element, ts, seq``)."""
        given = self.given_elements
        return given if isinstance(given, DataFrame) else given()


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


def _sequence(spark: SparkSession, instants: range) -> DataFrame | None:
    """The arithmetic sequence ``instants`` as a frame of instants (None when empty), without a Python list."""
    if not len(instants):
        return None
    return spark.range(0, len(instants)).select(
        (F.lit(instants.start) + F.col("id") * F.lit(instants.step)).cast("long").alias(INSTANT))


def window_close_instants(spark: SparkSession, window: TimeWindow, first: int, until: int) -> DataFrame | None:
    """The report instants of the windows from the first one holding ``first`` up to ``until``
    (:class:`~rspark.rsp.report.OnWindowClose`)."""
    return _sequence(spark, OnWindowClose().candidates(window, first, None, until))


def periodic_instants(spark: SparkSession, window: ResolvedWindow, first: int, until: int,
                      every: int | None = None) -> DataFrame | None:
    """The period instants from the first one at or after ``first`` up to ``until``
    (:class:`~rspark.rsp.report.Periodic`); None when there is none or the window has no period."""
    instants = Periodic(every).candidates(window, first, None, until)
    return None if instants is None else _sequence(spark, instants)


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
    ticks (default: the last element's timestamp over the query's streams), or ``"end"``: the streams closed at
    their last element, so that the window still open there is reported (:func:`rspark.rsp.report.end_instant`).
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
    until = report_until(until, [(w.window, bounds[id(w.elements)][1]) for w in windows], profile, every)
    if until is None:
        return EvaluationInstants(_empty(spark), (), None)

    frames, applied = [], []
    for w in windows:
        first, _ = bounds[id(w.elements)]
        policies = report_policies(profile, w.window, every)
        applied.append(tuple(sorted(policies)))
        if first is None:
            continue
        frame = _window_instants(spark, w, policies, first, until, every)
        if frame is not None:
            frames.append(frame)

    if not frames:
        return EvaluationInstants(_empty(spark), tuple(applied), until)
    result = frames[0]
    for extra in frames[1:]:
        result = result.unionByName(extra)
    if len(frames) > 1:
        result = result.distinct()
    return EvaluationInstants(result, tuple(applied), until)


def _window_instants(spark: SparkSession, w: WindowInput, policies: set, first: int, until: int,
                     every: int | None) -> DataFrame | None:
    """One window's instants up to ``until`` under its report policies: the arithmetic ones as ``spark.range``
    sequences, content change as the elements' distinct timestamps, the non-empty filter as a semi-join."""
    parts = [_sequence(spark, r) for r in candidates(w.window, policies, first, None, until, every)]
    if CONTENT_CHANGE in policies:
        # an interval window's content changes only while new elements fall inside the interval
        not_after = w.window.end if isinstance(w.window, IntervalWindow) else None
        parts.append(content_change_instants(w.elements, until, explicit_start(w.window), not_after))
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    frame = parts[0]
    for extra in parts[1:]:
        frame = frame.unionByName(extra)
    if len(parts) > 1:
        frame = frame.distinct()
    if NON_EMPTY in policies:
        frame = non_empty(frame, w)
    return frame


def non_empty(instants: DataFrame, window_input: WindowInput) -> DataFrame:
    """The instants at which the window holds at least one element (a semi-join with its assignment)."""
    w = window_input.window
    if isinstance(w, CountWindow) and w.unit is CountUnit.BGP:
        if window_input.matches is None:
            return instants
        # a count window holds something from its first item on
        first = window_input.matches.agg(F.min("ts").alias("_first"))
        return instants.join(first, F.col(INSTANT) >= F.col("_first")).select(INSTANT)
    held = assign_window(window_input.elements, w, instants, quads=window_input.quads)
    if window_input.before:
        held = held.where(F.col("ts") < F.col(INSTANT))
    held = held.select(INSTANT).distinct()
    return instants.join(held, INSTANT, "left_semi")
