"""Stream-to-relation: which stream elements are in which window at which evaluation instant, as Spark plans.

A replay evaluates a query at many instants at once (DESIGN.md, "vectorized evaluation"): every stream element is
paired with each evaluation instant whose window holds it, and that ``instant`` column is the key every later
operator carries. This module builds those (instant, element) pairs:

``assign_window(elements, window, instants)``
    ``elements`` has the columns ``element`` (the graph name), ``ts`` (long) and ``seq`` (long, the tie-breaker:
    file order) and possibly more; the result has every column of ``elements`` plus ``instant`` (long), one row
    per (instant, element in the window at that instant). Instants whose window is empty have no row: the report
    layer (``rspark.spark.streaming.report``) still knows them.

The windows' definitions and arithmetic are in ``rspark.rsp.windows``.

How the pairs are built, with no Python loop over instants and no element ever brought to the driver (only
aggregates are: a ``min``/``max`` row, and for count windows a histogram of at most 64 rows):

* time-based windows, strategy ``explode``: an element belongs to at most ``ceil(range/slide)`` windows, whose
  indexes ``k`` follow from its timestamp by arithmetic; ``explode(sequence(k_lo, k_hi))`` lists them and an
  equi-join on ``k`` with the instants (each instant maps to one ``k``) gives the pairs. Spark's own ``window()``
  does the same.
* time-based windows, strategy ``panes`` (DESIGN.md "do not pay the window overlap twice"): the timeline is cut
  into panes of ``gcd(range, slide)``; an element lies in exactly one pane (no copy), a window is a run of
  ``range/gcd`` panes, and the (small) instant side is exploded into its panes instead of the (large) element
  side. Chosen when the instants are few, so that windows nobody evaluates cost nothing. The same panes let a
  conjunctive pattern be matched before the window (:class:`PaneSpans`): each match is copied into the windows
  that hold all of its panes, instead of every triple into its windows before the pattern's joins.
* time-based windows, strategy ``range``: when a window slides by much less than its range (CQELS windows
  slide with every tick) and the instants are many, each instant's window is a tick range and the bucketed range
  join below (buckets of ``range`` ticks) pairs them with the elements.
* time-based windows, strategy ``bounds``: when the instants are a few values known on the driver and the data is
  held there too (a live micro-batch's, :class:`LocalInstants`), each instant's window is a selection
  ``lo <= ts <= hi`` with the instant as a literal, and the selections are a union: no join (nor the broadcast
  of the instants).
* NOW and a stream read with no window (stream-to-stream): an equi-join of ``ts`` with the instants; for a stream
  read with no window at instants that hold every element timestamp in their range (:class:`StampInstants`, the
  report policies' instants), a selection of that range, each element at its own timestamp: no join.
* landmark and interval windows: a range join ``lo <= ts <= hi`` per instant. An un-keyed non-equi join is a
  cartesian product, so both sides get a bucket key (``ts`` cut into ~256 buckets over the data's span): the
  instant side is exploded over the buckets its range covers, the join is an equi-join on the bucket, and the
  exact condition filters the candidates. Landmark windows hold O(elements x instants) pairs by definition.
* partitioned count windows: each (key, element) is in the window from its timestamp until the ``n``-th later
  element of its key (a lead over the key's elements): those intervals are range-joined with the instants.
* elements valid over an interval (a ``te`` column beside ``ts``, the interval's end; docs/streams.md): a time,
  landmark, interval or NOW window holds an element when the element's interval meets the window's, ``ts <= hi``
  and ``te >= lo``. ``explode`` lists the windows from the one holding ``ts`` to the one holding ``te``; ``panes``
  is not used (an element would lie in several panes); the range joins explode the element over the buckets its
  interval covers and keep each pair in the bucket where the two intervals start to meet (once). Count windows
  and a stream read with no window take an element at its start, ``ts``.
* count windows: a global rank of the items by (ts, seq[, triple order]) and, for every instant, ``C(t)`` = the
  number of items with ``ts <= t``, both from one pass: items and instants are unioned, cut into ts buckets,
  counted with a running sum inside each bucket plus the bucket's offset (a prefix sum over <= 64 bucket counts,
  the one histogram collected to the driver). The window at ``t`` is then the rank range ``(C(t) - n, C(t)]``: the same
  bucketed range join on the rank axis, with bucket width ``n`` (each instant covers at most two buckets).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rspark.model import codec
from rspark.model.terms import IRI
from rspark.model.time import WindowError
from rspark.rsp.policies import Bounds, CountUnit
from rspark.rsp.windows import (
    CountWindow,
    ElementWindow,
    IntervalWindow,
    LandmarkWindow,
    NowWindow,
    ResolvedWindow,
    TimeWindow,
)
from rspark.spark.frames import local_frame
from rspark.spark.jvm import long_parameter

# ----------------------------------------------------------------------------------------------------- Spark helpers

INSTANT = "instant"
ENDS = "te"  # the end of an element valid over an interval (its start is ``ts``), when a frame has the column
BROADCAST_ROWS = 500_000  # instant-side tables up to this many rows are broadcast
EXPLODE_LIMIT = 64  # time windows: copy an element into at most this many windows, else a range join
BOUNDS_INSTANTS = 4  # time windows over local data at this many instants, or fewer: a selection per instant
RANGE_BUCKETS = 256  # ts buckets of the range join (landmark, interval)
RANK_BUCKETS = 64  # ts buckets of the rank pass (count windows)


class LocalInstants(list):
    """Instant values for windows over data the driver holds (Spark local relations, a live buffer's): at
    BOUNDS_INSTANTS or fewer, ``auto`` assigns a time window by bounds, a union of one selection an instant over
    the local relation. (Over data Spark reads, a union of one scan an instant costs more than the join.)"""


class StampInstants(list):
    """Instant values that hold every element timestamp between the least and the greatest of them: the instants
    the report policies give a query that reads a stream with no window (content change, every element timestamp,
    is among them). Such a stream's elements are then assigned by their timestamp's range, with no join."""


class LocalStampInstants(LocalInstants, StampInstants):
    """Both: over data the driver holds, and holding every element timestamp in their range."""


def instant_values(values, *, local: bool, every_stamp: bool) -> list:
    """``values`` marked for the window assignment: :class:`LocalInstants` (``local``), :class:`StampInstants`
    (``every_stamp``), both, or a plain list."""
    kind = {(True, True): LocalStampInstants, (True, False): LocalInstants, (False, True): StampInstants}
    return kind.get((local, every_stamp), list)(values)


def _floordiv(expr: Column, divisor: int) -> Column:
    """Exact ``floor(expr / divisor)`` for long columns and a positive divisor (no floating point)."""
    if divisor == 1:
        return expr.cast("long")
    d = F.lit(int(divisor)).cast("long")
    return F.call_function("div", expr - F.pmod(expr, d), d)  # exact: the dividend is a multiple of d


def _ceildiv(expr: Column, divisor: int) -> Column:
    return -_floordiv(-expr, divisor)


def _seq(lo: Column, hi: Column) -> Column:
    """``explode`` input: the longs lo..hi, or nothing when lo > hi (``sequence`` would count down)."""
    return F.explode(F.when(lo <= hi, F.sequence(lo, hi)).otherwise(F.array().cast("array<bigint>")))


def instants_frame(spark, instants) -> tuple[DataFrame, int | None]:
    """``instants`` (a DataFrame with an ``instant`` column, or an iterable of tick values) as a DataFrame with one
    long column ``instant``, and its row count when known without running a job."""
    if isinstance(instants, DataFrame):
        if INSTANT not in instants.columns:
            raise WindowError(f"the instants DataFrame needs an {INSTANT!r} column (has {instants.columns})")
        return instants.select(F.col(INSTANT).cast("long").alias(INSTANT)), None
    values = sorted({int(t) for t in instants})
    return local_frame(spark, [(t,) for t in values], f"{INSTANT} long"), len(values)


def _small(df: DataFrame, rows: int | None) -> DataFrame:
    return F.broadcast(df) if rows is not None and rows <= BROADCAST_ROWS else df


def _check_items(items: DataFrame, needed: Iterable[str]) -> None:
    missing = [c for c in needed if c not in items.columns]
    if missing:
        raise WindowError(f"the stream frame lacks the column(s) {missing} (has {items.columns})")
    if INSTANT in items.columns:
        raise WindowError(f"the stream frame already has an {INSTANT!r} column")


def stream_bounds(elements: DataFrame, column: str = "ts") -> tuple[int | None, int | None]:
    """``(min, max)`` of ``column``: one aggregate job, one row to the driver."""
    row = elements.agg(F.min(column).alias("lo"), F.max(column).alias("hi")).first()
    if row is None or row["lo"] is None:
        return None, None
    return int(row["lo"]), int(row["hi"])


# ------------------------------------------------------------------------------------------------------ assignment


def assign_window(elements: DataFrame, window: ResolvedWindow, instants, *, quads: DataFrame | None = None,
                  strategy: str = "auto", triple_order: Sequence[str] | None = None,
                  parameters: bool = False) -> DataFrame:
    """The (instant, element) pairs of ``window`` over ``elements`` at ``instants``.

    ``elements``: columns ``element``, ``ts``, ``seq`` (more are carried along). ``instants``: a DataFrame with an
    ``instant`` column (distinct values) or an iterable of ticks. Returns ``elements``' columns plus ``instant``.
    A ``[RANGE TRIPLES n]`` window needs ``quads`` (``element, ts, seq, s, p, o``) and returns quads' columns
    plus ``instant``, the triples in the window (``triple_order``: the order of the triples of one element, by
    default a ``tpos`` column when there is one, else ``s, p, o``).
    ``strategy`` (time-based windows only): ``auto``, ``explode``, ``panes`` or ``range`` (module docstring).
    ``parameters``: the ``bounds`` strategy's tick bounds and instants go into the plan as parameters
    (:func:`rspark.spark.jvm.long_parameter`), not literals, so that a plan built again for other instants runs
    the code Spark compiled for the one before (a live buffer's windows, rebuilt at every evaluation; not a cached
    table's, which Spark prunes by literal bounds).
    """
    if isinstance(window, TimeWindow):
        return assign_time_window(elements, window, instants, strategy=strategy, parameters=parameters)
    if isinstance(window, (LandmarkWindow, IntervalWindow, NowWindow, ElementWindow)):
        return assign_bounded_window(elements, window, instants)
    if isinstance(window, CountWindow):
        if window.unit is CountUnit.ELEMENTS and window.partition is not None:
            if quads is None:
                raise WindowError("a partitioned count window needs the stream's quads (its elements' keys)")
            return assign_partitioned_count(elements, quads, window, instants)
        if window.unit is CountUnit.ELEMENTS:
            return assign_count(elements, window.size, instants, order=("ts", "seq"))
        if window.unit is CountUnit.TRIPLES:
            if quads is None:
                raise WindowError("a [RANGE TRIPLES n] window needs the stream's quads (element, ts, seq, s, p, o)")
            if triple_order is None:
                triple_order = ("tpos",) if "tpos" in quads.columns else ("s", "p", "o")
            return assign_count(quads, window.size, instants, order=("ts", "seq", *triple_order))
        raise WindowError("a [RANGE BGP n] window counts BGP matches: the query compiler assigns it over the matches "
                          "with assign_count(matches, n, instants, order=...)")
    raise WindowError(f"not a resolved window: {window!r}")


def _instant_window_index(spec: TimeWindow) -> Column:
    rel = F.col(INSTANT) - F.lit(spec.offset + spec.anchor)
    if spec.close_rule == "<=":
        return _floordiv(rel, spec.slide)
    return _ceildiv(rel, spec.slide) - F.lit(1)


def assign_time_window(elements: DataFrame, spec: TimeWindow, instants, *, strategy: str = "auto",
                       parameters: bool = False) -> DataFrame:
    """Time-based sliding or tumbling window: the (instant, element) pairs (strategies: module docstring;
    ``parameters``: :func:`assign_window`)."""
    _check_items(elements, ("ts",))
    if strategy == "bounds" or (strategy == "auto" and isinstance(instants, LocalInstants)
                                and len(instants) <= BOUNDS_INSTANTS):
        if isinstance(instants, DataFrame):
            raise WindowError("the bounds strategy needs the instants as values, not a DataFrame")
        return _assign_by_bounds(elements, spec, sorted({int(t) for t in instants}), parameters=parameters)
    inst, rows = instants_frame(elements.sparkSession, instants)
    panes_per_window = spec.range // math.gcd(spec.range, spec.slide)
    valid = ENDS in elements.columns  # elements valid over an interval: no panes (an element spans several)
    if strategy == "panes" and valid:
        strategy = "explode"
    if strategy == "auto":
        few_instants = rows is not None and rows * panes_per_window <= BROADCAST_ROWS
        if few_instants and spec.overlap > 2 and not valid:
            strategy = "panes"
        else:
            strategy = "explode" if spec.overlap <= EXPLODE_LIMIT else "range"
    k = "_w_k"
    inst = inst.withColumn(k, _instant_window_index(spec))
    if not spec.windows_before_t0:
        inst = inst.where(F.col(k) >= 0)
    ts = F.col("ts")

    if strategy == "explode":
        # the windows holding ts are k_lo(ts)..k_hi(ts); an interval [ts, te] meets k_lo(ts)..k_hi(te)
        rel = ts - F.lit(spec.anchor)
        rel_end = F.col(ENDS) - F.lit(spec.anchor) if valid else rel
        if spec.bounds is Bounds.OPEN_CLOSED:
            k_lo, k_hi = _ceildiv(rel, spec.slide), _ceildiv(rel_end + F.lit(spec.range), spec.slide) - F.lit(1)
        else:
            k_lo, k_hi = _floordiv(rel, spec.slide) + F.lit(1), _floordiv(rel_end + F.lit(spec.range), spec.slide)
        if not spec.windows_before_t0:
            k_lo = F.greatest(k_lo, F.lit(0).cast("long"))
        exploded = elements.withColumn(k, _seq(k_lo, k_hi))
        return exploded.join(_small(inst, rows), k).drop(k)

    if strategy == "panes":
        # Elements get one pane each; the instant side lists its window's panes.
        inst_panes = _instant_panes(inst, k, spec).drop(FIRST_PANE)
        pane_rows = None if rows is None else rows * panes_per_window
        return elements.withColumn(PANE, _element_pane(spec)).join(_small(inst_panes, pane_rows), PANE).drop(PANE)

    if strategy == "range":
        # Each instant's window as a tick range, joined on buckets of `range` ticks (a window spans at most two):
        # for windows that slide by much less than their range (CQELS-style, one tick) and many instants.
        c = F.lit(spec.anchor) + F.col(k) * F.lit(spec.slide)
        if spec.bounds is Bounds.OPEN_CLOSED:
            lo, hi = c - F.lit(spec.range - 1), c
        else:
            lo, hi = c - F.lit(spec.range), c - F.lit(1)
        ranges = inst.withColumn("_w_lo", lo).withColumn("_w_hi", hi).drop(k)
        return _range_join(elements, "ts", ranges, "_w_lo", "_w_hi", spec.range, spec.anchor,
                           None if rows is None else 2 * rows, key_end=ENDS if valid else None)

    raise WindowError(f"unknown window strategy {strategy!r}: expected auto, explode, panes, range or bounds")


# Panes of g = gcd(range, slide) ticks, numbered from the anchor: pane j is (anchor + j*g, anchor + (j+1)*g] for (]
# windows, [anchor + j*g, anchor + (j+1)*g) for [) windows; window k is panes (k*slide - range)/g .. k*slide/g - 1.
PANE = "_w_pane"
FIRST_PANE = "_w_first"  # the first pane of an instant's window
PANE_BUCKET = "_w_pb"  # join before the window: a bucket of panes (PaneSpans)


def _element_pane(spec: TimeWindow) -> Column:
    """The pane of a row's ``ts``."""
    g = math.gcd(spec.range, spec.slide)
    rel = F.col("ts") - F.lit(spec.anchor)
    return _ceildiv(rel, g) - F.lit(1) if spec.bounds is Bounds.OPEN_CLOSED else _floordiv(rel, g)


def _instant_panes(inst: DataFrame, k: str, spec: TimeWindow) -> DataFrame:
    """``inst`` (``instant`` and its window index ``k``): a row per pane of the instant's window (``PANE``), with
    the window's first pane (``FIRST_PANE``); ``k`` dropped."""
    g = math.gcd(spec.range, spec.slide)
    start = _floordiv(F.col(k) * F.lit(spec.slide) - F.lit(spec.range), g)  # exact multiples of g
    end = _floordiv(F.col(k) * F.lit(spec.slide), g) - F.lit(1)
    return inst.select(INSTANT, _seq(start, end).alias(PANE), start.alias(FIRST_PANE))


class PaneSpans:
    """Join before the window: a time window's content copied into its windows after a pattern's joins, not before.

    With the ``panes`` strategy every row of the content is copied into each window that holds it (``range/slide``
    times) before the pattern reads it, and the pattern's joins pair all those copies, instant by instant. A
    conjunctive pattern (triple patterns, joins, filters) can instead be matched once over the stream's triples,
    each in its pane, and each match copied into the windows that hold all of its triples: those whose run of
    panes covers the span ``[lo, hi]`` of the panes the match's triples lie in (the windows holding a set of
    panes hold the run between them). Two triples more than a window apart are in no window together: the joins
    pair triples within ``width`` panes of each other only, by an equi-join on a bucket of ``width`` panes. Every
    row is put in two buckets, ``b = pane // width`` and ``b + 1``; a match whose panes span less than ``width``
    then lies whole in bucket ``hi // width`` (each of its panes' ``b`` is that or the one before), where it is
    kept, and in ``hi // width + 1`` at most, where it is dropped.

    The matches are those of the window's content only when each triple the pattern reads lies in one element
    (the content is a set: a triple in two panes would be matched twice); the caller checks that. Used for the
    windows the ``panes`` strategy assigns (``width = range / gcd(range, slide)``): :meth:`bucketed` puts the rows
    in their buckets, :meth:`own` keeps each match once, :meth:`into_windows` copies matches (or groups of them,
    each over a run of panes) into the windows."""

    def __init__(self, spec: TimeWindow, instants) -> None:
        self.spec = spec
        self.instants = instants
        self.width = spec.range // math.gcd(spec.range, spec.slide)

    def bucketed(self, rows: DataFrame) -> DataFrame:
        """``rows`` (a ``ts`` column) with their ``PANE`` and ``PANE_BUCKET``: each row twice, in its pane's bucket
        and the next."""
        pane = _element_pane(self.spec)
        b = _floordiv(pane, self.width)
        return rows.select("*", pane.alias(PANE), F.explode(F.array(b, b + F.lit(1))).alias(PANE_BUCKET))

    def own(self, matches: DataFrame, hi: str) -> DataFrame:
        """``matches`` (``PANE_BUCKET``, and ``hi``, the greatest pane of each match's rows, from rows
        :meth:`bucketed`), each once: in the bucket of its last pane (``PANE_BUCKET`` dropped)."""
        return matches.where(_floordiv(F.col(hi), self.width) == F.col(PANE_BUCKET)).drop(PANE_BUCKET)

    def into_windows(self, rows: DataFrame, lo: str, hi: str) -> DataFrame:
        """``rows`` (each over the panes ``lo`` to ``hi``), each paired with every instant whose window holds its
        panes: ``rows``' columns without ``lo`` and ``hi``, plus ``instant``."""
        inst, count = instants_frame(rows.sparkSession, self.instants)
        k = "_w_k"
        inst = inst.withColumn(k, _instant_window_index(self.spec))
        if not self.spec.windows_before_t0:
            inst = inst.where(F.col(k) >= 0)
        panes = _instant_panes(inst, k, self.spec)
        joined = rows.withColumnRenamed(hi, PANE).join(_small(panes, None if count is None else count * self.width),
                                                       PANE)
        return joined.where(F.col(lo) >= F.col(FIRST_PANE)).drop(PANE, FIRST_PANE, lo)


def pane_spans(window: ResolvedWindow, instants) -> PaneSpans | None:
    """A :class:`PaneSpans` for ``window`` at ``instants`` (a list of tick values) when :func:`assign_window`
    would assign it by panes (a time window that is not partitioned, sliding by a third of its range or less, at
    few enough instants over data Spark reads), else None."""
    if not isinstance(window, TimeWindow) or window.partition is not None or isinstance(instants, DataFrame):
        return None
    if isinstance(instants, LocalInstants):
        return None
    panes_per_window = window.range // math.gcd(window.range, window.slide)
    if window.overlap <= 2 or len({int(t) for t in instants}) * panes_per_window > BROADCAST_ROWS:
        return None
    return PaneSpans(window, instants)


def _assign_by_bounds(elements: DataFrame, spec: TimeWindow, instants: list[int], *,
                      parameters: bool = False) -> DataFrame:
    """The ``bounds`` strategy: per instant, the elements inside its window's tick bounds, with the instant
    (``parameters``: :func:`assign_window`)."""
    ts = F.col("ts")
    te = F.col(ENDS) if ENDS in elements.columns else ts
    spark = elements.sparkSession

    def value(v: int) -> Column:
        column = long_parameter(spark, v) if parameters else None
        return F.lit(v) if column is None else column

    parts = []
    for t in instants:
        bounds = spec.content_bounds(t)
        if bounds is not None:
            lo, hi = bounds
            parts.append(elements.where((ts <= value(hi)) & (te >= value(lo)))
                         .withColumn(INSTANT, value(t).cast("long")))
    if not parts:
        return elements.where(F.lit(False)).withColumn(INSTANT, F.lit(None).cast("long"))
    return reduce(DataFrame.unionByName, parts)


def _range_join(items: DataFrame, key: str, ranges: DataFrame, lo: str, hi: str, bucket: int, base: int,
                rows: int | None, key_end: str | None = None) -> DataFrame:
    """Items whose ``key`` lies in ``[lo, hi]`` of a ``ranges`` row (inclusive), as an equi-join on buckets of
    ``bucket`` keys counted from ``base``: each range row is exploded over the buckets it covers.

    With ``key_end``, each item is the interval ``[key, key_end]`` and is kept with the ranges it meets
    (``key <= hi`` and ``key_end >= lo``): it is exploded over the buckets it covers too, and a pair is kept in
    one bucket only, the one where the two intervals begin to meet."""
    b = "_w_bucket"
    lo_b, hi_b = _floordiv(F.col(lo) - F.lit(base), bucket), _floordiv(F.col(hi) - F.lit(base), bucket)
    ranges_b = ranges.withColumn(b, _seq(lo_b, hi_b))
    item_b = _floordiv(F.col(key) - F.lit(base), bucket)
    if key_end is None:
        items_b = items.withColumn(b, item_b)
        joined = items_b.join(_small(ranges_b, rows), b)
        return joined.where((F.col(key) >= F.col(lo)) & (F.col(key) <= F.col(hi))).drop(b, lo, hi)
    items_b = items.withColumn(b, _seq(item_b, _floordiv(F.col(key_end) - F.lit(base), bucket)))
    joined = items_b.join(_small(ranges_b, rows), b)
    first = _floordiv(F.greatest(F.col(key), F.col(lo)) - F.lit(base), bucket)
    return joined.where((F.col(key) <= F.col(hi)) & (F.col(key_end) >= F.col(lo)) & (F.col(b) == first)) \
        .drop(b, lo, hi)


def assign_bounded_window(elements: DataFrame, spec: LandmarkWindow | IntervalWindow | NowWindow | ElementWindow,
                          instants) -> DataFrame:
    """Landmark, interval and NOW windows: each instant's content is a timestamp range (a bucketed range join);
    NOW and a stream read with no window: the elements stamped with the instant (an equi-join)."""
    _check_items(elements, ("ts",))
    if isinstance(spec, ElementWindow) and isinstance(instants, StampInstants):
        if not instants:
            return elements.withColumn(INSTANT, F.lit(None).cast("long")).limit(0)
        ts = F.col("ts")
        return elements.where(ts.between(F.lit(min(instants)), F.lit(max(instants)))).withColumn(INSTANT, ts)
    inst, rows = instants_frame(elements.sparkSession, instants)
    valid = ENDS in elements.columns and not isinstance(spec, ElementWindow)
    if isinstance(spec, (NowWindow, ElementWindow)) and not valid:
        return elements.join(_small(inst, rows), F.col("ts") == F.col(INSTANT))
    lo_ts, hi_ts = stream_bounds(elements)
    if valid and lo_ts is not None:
        _, hi_ts = stream_bounds(elements, ENDS)  # the ranges are clipped to the span the intervals cover
    if lo_ts is None:
        return elements.withColumn(INSTANT, F.lit(None).cast("long")).limit(0)
    t = F.col(INSTANT)
    if isinstance(spec, NowWindow):  # elements valid over an interval: those valid at the instant
        lo, hi = t, t
    elif isinstance(spec, LandmarkWindow):
        lo, hi = F.lit(spec.start).cast("long"), t
    else:
        lo, hi = F.lit(spec.start).cast("long"), F.least(t, F.lit(spec.end).cast("long"))
    # Clip every range to the data's span so that the bucket explosion never covers empty time (a landmark from
    # the epoch over a date-time stream would otherwise span 1.7e12 ticks).
    ranges = (inst.withColumn("_w_lo", F.greatest(lo, F.lit(lo_ts).cast("long")))
              .withColumn("_w_hi", F.least(hi, F.lit(hi_ts).cast("long")))
              .where(F.col("_w_lo") <= F.col("_w_hi")))
    bucket = max(1, -(-(hi_ts - lo_ts + 1) // RANGE_BUCKETS))
    bucket_rows = None if rows is None else rows * (RANGE_BUCKETS + 1)
    return _range_join(elements, "ts", ranges, "_w_lo", "_w_hi", bucket, lo_ts, bucket_rows,
                       key_end=ENDS if valid else None)


def rank_items(items: DataFrame, instants, order: Sequence[str] = ("ts", "seq")) -> tuple[DataFrame, DataFrame]:
    """One pass that numbers the items 1, 2, ... by ``order`` (``order[0]`` must be ``ts``) and counts, for each
    instant, the items with ``ts <= instant``.

    Returns ``(items + _w_rank, instants + _w_count)``. No global sort on one partition: items and instants are
    cut into ts buckets, numbered by a running sum inside each bucket (a window partitioned by bucket), and
    shifted by the bucket's offset (a prefix sum over the bucket counts: a histogram of at most ``RANK_BUCKETS``
    rows is the only thing collected, with one min/max row).
    """
    if not order or order[0] != "ts":
        raise WindowError(f"count windows order items by ts first (order {tuple(order)})")
    _check_items(items, order)
    spark = items.sparkSession
    inst, _ = instants_frame(spark, instants)
    kind, b = "_w_kind", "_w_b"
    tagged_items = items.withColumn(kind, F.lit(0))
    tagged_inst = inst.select(F.col(INSTANT).alias("ts"), F.col(INSTANT), F.lit(1).alias(kind))
    union = tagged_items.unionByName(tagged_inst, allowMissingColumns=True)
    lo_ts, hi_ts = stream_bounds(union)
    if lo_ts is None:
        lo_ts = hi_ts = 0
    width = max(1, -(-(hi_ts - lo_ts + 1) // RANK_BUCKETS))
    union = union.withColumn(b, _floordiv(F.col("ts") - F.lit(lo_ts), width))
    is_item = F.lit(1) - F.col(kind)
    # The number of items in each bucket: at most RANK_BUCKETS rows (a histogram, not elements) to the driver,
    # turned into each bucket's offset (the items in the buckets before it) as a literal array.
    histogram = {int(r[b]): int(r["n"]) for r in union.groupBy(b).agg(F.sum(is_item).alias("n")).collect()}
    offsets, total = [], 0
    for bucket in range(max(histogram, default=0) + 1):
        offsets.append(total)
        total += histogram.get(bucket, 0)
    offset = F.element_at(F.array(*[F.lit(o).cast("long") for o in offsets]), (F.col(b) + F.lit(1)).cast("int"))
    # Within one bucket: a running count of items in (ts, kind, rest of order): at equal ts the items come before
    # the instants (ts <= t counts them), ties of items are broken by the rest of the order.
    within = Window.partitionBy(b).orderBy(F.col("ts"), F.col(kind), *[F.col(c) for c in order[1:]])
    running = F.sum(is_item).over(within.rowsBetween(Window.unboundedPreceding, 0))
    numbered = union.withColumn("_w_pos", (offset + running).cast("long"))
    ranked = numbered.where(F.col(kind) == 0).withColumnRenamed("_w_pos", "_w_rank").drop(b, kind, INSTANT)
    counted = numbered.where(F.col(kind) == 1).select(INSTANT, F.col("_w_pos").alias("_w_count"))
    return ranked, counted


def assign_count(items: DataFrame, size: int, instants, order: Sequence[str] = ("ts", "seq")) -> DataFrame:
    """Count-based window: at each instant ``t`` the last ``size`` items by ``order`` with ``ts <= t``.

    ``items`` may be elements (``[RANGE ELEMENTS n]``), quads (``[RANGE TRIPLES n]``) or BGP matches (the query
    compiler's ``[RANGE BGP n]``), as long as it has the ``order`` columns, ``ts`` first. Returns ``items``' columns
    plus ``instant``.
    """
    if size <= 0:
        raise WindowError(f"count window size must be positive ({size})")
    inst, rows = instants_frame(items.sparkSession, instants)
    ranked, counted = rank_items(items, inst, order)
    # Window at t = ranks (C(t) - size, C(t)]: a range join on the rank axis with buckets of `size` ranks.
    ranges = (counted.where(F.col("_w_count") >= 1)
              .withColumn("_w_lo", F.greatest(F.col("_w_count") - F.lit(size - 1), F.lit(1).cast("long")))
              .withColumnRenamed("_w_count", "_w_hi"))
    return _range_join(ranked, "_w_rank", ranges, "_w_lo", "_w_hi", size, 0,
                       None if rows is None else 2 * rows).drop("_w_rank")


def assign_partitioned_count(elements: DataFrame, quads: DataFrame, window: CountWindow, instants) -> DataFrame:
    """A partitioned count window (``[RANGE ELEMENTS n PARTITION BY p]``): at each instant ``t``, for every key
    (a subject of ``p`` in an element), the last ``n`` elements with that key and ``ts <= t``, the union over the
    keys. An element of key ``k`` is in the window from its own timestamp until, not including, the timestamp of
    the ``n``-th later element of ``k`` (by ts, seq): that interval (a lead over the key's elements) is joined with
    the instants by the bucketed range join, each interval clipped to the instants' span. Returns ``elements``'
    columns plus ``instant``, an element once per instant however many of its keys hold it."""
    _check_items(elements, ("ts", "seq"))
    inst, _ = instants_frame(elements.sparkSession, instants)
    if isinstance(instants, DataFrame):
        lo_t, hi_t = stream_bounds(inst, INSTANT)
    else:
        values = instants if isinstance(instants, Sequence) else list(instants)
        lo_t, hi_t = (int(min(values)), int(max(values))) if len(values) else (None, None)
    columns = list(elements.columns)
    if lo_t is None:
        return elements.withColumn(INSTANT, F.lit(None).cast("long")).limit(0)
    key = "_w_key"
    keys = (quads.where(F.col("p") == F.lit(codec.encode(IRI(window.partition))))
            .select("element", F.col("s").alias(key)).distinct())
    by_key = Window.partitionBy(key).orderBy("ts", "seq")
    keyed = elements.join(keys, "element").withColumn("_w_next", F.lead("ts", window.size).over(by_key))
    intervals = (keyed.withColumn("_w_lo", F.greatest(F.col("ts"), F.lit(lo_t).cast("long")))
                 .withColumn("_w_hi", F.least(F.coalesce(F.col("_w_next") - F.lit(1), F.lit(hi_t).cast("long")),
                                              F.lit(hi_t).cast("long")))
                 .where(F.col("_w_lo") <= F.col("_w_hi")))
    bucket = max(1, -(-(hi_t - lo_t + 1) // RANGE_BUCKETS))
    joined = _range_join(inst, INSTANT, intervals, "_w_lo", "_w_hi", bucket, lo_t, None)
    return joined.select(*columns, INSTANT).distinct()

