"""MATCH (RSEP-QL, eq. 8) in a replay: the basic event patterns' matches on the base stream, assigned to instants,
then the event expression as a Spark plan (:mod:`rspark.spark.cep.events`), or, under a consumption policy, the
sequential evaluator of :mod:`rspark.cep.machine` run per key inside Spark (``applyInArrow``).

The replay gives, per named window, ``WindowEvents``: the stream's quads and the window's assignment of
element-keyed rows to the instants whose window holds their element.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import reduce
from itertools import repeat

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.expr import TriplePattern
from rspark.cep.machine import ConsumingEvaluator, timestamps_needed
from rspark.cep.patterns import (
    END,
    START,
    asks_intervals,
    basic_patterns,
    bep_variables,
    consumption_key,
    event_variables,
    pattern_triples,
)
from rspark.errors import NotSupportedError, RsparkError
from rspark.model import codec as E
from rspark.model.terms import IRI, BlankNode, Variable
from rspark.rsp.policies import MatchConsumption, Selection, SeqSelection
from rspark.spark.cep.events import T1, T2, TE, TS, EventPlanner
from rspark.spark.session import local_cores
from rspark.spark.sparql.compiler import ActiveGraph, Context, memoized
from rspark.spark.sparql.solutions import Solutions, pattern_variable, var_col

ELEMENT = "__ev_el"


@dataclass(frozen=True)
class WindowEvents:
    """What a named window gives event patterns: ``quads(predicates)`` the stream's (element, ts, seq, s, p, o)
    (those with one of ``predicates``, encoded IRIs, when the source selects them apart; None: every quad), and
    ``assign(rows)`` the rows (with element, ts, seq) paired with every instant whose window holds their element,
    as a column ``instant`` (and ``te``, the end of the element's validity, when the stream has elements valid over
    an interval). ``rows_bound()``: at most how many rows ``assign`` gives for the matches of one triple pattern
    (``rspark.spark.streaming.s2r.one_pattern_rows``; None: not known)."""

    quads: Callable[..., DataFrame]
    assign: Callable[[DataFrame], DataFrame]
    rows_bound: Callable[[], int | None] = lambda: None


def compile_match(comp, op: ops.Match, key: str) -> Solutions:
    """The solutions of MATCH at every instant of the replay (``comp.domain``), keyed by ``key``."""
    expr = with_selection(op.expr, comp.profile.selection)
    beps = basic_patterns(expr)
    consume = op.consume or MatchConsumption.of(comp.profile.consumption)
    intervals = asks_intervals(comp.query_op)
    if intervals and sum(isinstance(n, ops.Match) for n in ops.descendants(comp.query_op)) > 1:
        raise NotSupportedError("getSTARTTIME(), getENDTIME() and getDURATION() in a query with several MATCH "
                                "patterns (whose events' intervals would they read?)")
    cache: dict = {}

    def canonical_matches(canon: ops.EventPattern) -> DataFrame:
        """The matches of a basic event pattern in canonical form (:func:`_canonical`), computed once."""
        if canon not in cache:
            cache[canon] = _bep_matches(comp, canon, key, occurrences=consume != MatchConsumption.NONE)
        return cache[canon]

    def matches(bep: ops.EventPattern) -> DataFrame:
        """The matches of ``bep``, computed once for all basic event patterns that differ only in the names of
        their variables (``E1``, ``E2``, ``E3`` of a sequence of one kind of event share one plan, and Spark
        reuses its exchanges), renamed to ``bep``'s variables."""
        canon, names = _canonical(bep)
        df = canonical_matches(canon)
        renamed = {var_col(c): var_col(n) for c, n in names.items() if c != n}
        if not renamed:
            return df
        if renamed.keys().isdisjoint(renamed.values()):  # one operation (withColumnsRenamed renames in turn)
            return df.withColumnsRenamed(renamed)
        return df.select(*[F.col(c).alias(renamed.get(c, c)) for c in df.columns])

    if consume == MatchConsumption.NONE:
        def limits() -> tuple[int | None, int]:
            # the most rows a table may have, and Spark's broadcast threshold (below it, at HASH_ROW_BYTES a row,
            # Spark may broadcast the matches instead): asked of the JVM only for a pattern with a bound (a live
            # buffer's have none, and its queries compile at every micro-batch)
            rows = hash_join_rows(comp.spark, len(beps) - 1)
            return rows, comp.spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold() if rows else 0

        session_limits = memoized(limits)

        def hashed(bep: ops.EventPattern) -> bool:
            # (a pattern of one triple: its matches are bounded by its window's rows_bound)
            if len(pattern_triples(bep)) != 1:
                return False
            source = comp.dataset.window_events.get(E.encode(bep.window)) if isinstance(bep.window, IRI) else None
            bound = source.rows_bound() if source is not None else None
            if bound is None:
                return False
            rows, broadcast = session_limits()
            return rows is not None and bound * HASH_ROW_BYTES > broadcast and bound <= rows

        planner = EventPlanner(matches, key, comp.fresh, hashed)
        return planner.match(expr, comp.domain, intervals)
    if consume not in (MatchConsumption.CHRONOLOGICAL, MatchConsumption.RECENT):
        raise NotSupportedError(f"MATCH CONSUME {op.consume}: the consumption policies are CHRONOLOGICAL and RECENT")
    return _consuming(comp, expr, beps, canonical_matches, key, intervals, _position(comp.query_op, op))


# The bytes a row of a basic event pattern's matches takes in a shuffled hash join's table: the row (the instant, the
# event's interval, the variables' encoded terms), its key's copy and the map's slot, for terms of a few dozen
# characters, on the high side
HASH_ROW_BYTES = 256
_RESERVED_BYTES = 300 << 20  # Spark's reserved system memory (UnifiedMemoryManager)


def hash_join_rows(spark, builds: int) -> int | None:
    """The most rows a SEQ's join may build an in-memory hash table from (a shuffled hash join rather than a
    sort-merge join, which sorts both sides): in a local session (the driver's JVM runs the tasks), the execution
    memory one of the concurrent tasks is sure to get (the heap less Spark's reserved memory, times
    ``spark.memory.fraction``, less the storage Spark does not evict, over the local cores), shared by the
    ``builds`` tables one task builds, at :data:`HASH_ROW_BYTES` a row. None elsewhere (the executors' memory is
    not known here): sort-merge joins, which spill."""
    master = spark.sparkContext.master
    if builds < 1 or not re.fullmatch(r"local(\[.*\])?", master.strip()):
        return None
    conf = spark.sparkContext.getConf()
    heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    pool = (heap - _RESERVED_BYTES) * float(conf.get("spark.memory.fraction", "0.6")) \
        * (1 - float(conf.get("spark.memory.storageFraction", "0.5")))
    per_task = pool / local_cores(master)
    return max(0, int(per_task / builds / HASH_ROW_BYTES))


def _position(query_op, op: ops.Match) -> int:
    """``op``'s position among the query's MATCH patterns (its consumption state's name in a carried state)."""
    found = [n for n in ops.descendants(query_op) if isinstance(n, ops.Match)]
    for i, n in enumerate(found):
        if n is op:  # by identity: two equal MATCH patterns of one query have states of their own
            return i
    raise RsparkError("MATCH: the pattern compiled is not one of the query's")


def _canonical(bep: ops.EventPattern) -> tuple[ops.EventPattern, dict[str, str]]:
    """``bep`` with its variables named ``e0``, ``e1``, ... in order of appearance (and the event's name left
    out), and the map from those names to ``bep``'s."""
    order = bep_variables(bep)
    names = {v: f"e{i}" for i, v in enumerate(order)}

    def rename(term):
        if isinstance(term, Variable):
            return Variable(names[term.name])
        if isinstance(term, BlankNode):
            return Variable(names["_:" + term.id])
        return term

    triples = tuple(TriplePattern(rename(t.subject), rename(t.predicate), rename(t.object))
                    for t in pattern_triples(bep))
    return ops.EventPattern("", bep.window, ops.BGP(triples)), {f"e{i}": v for i, v in enumerate(order)}


def with_selection(expr, selection: Selection | None) -> object:
    """``expr`` with the profile's selection policy on every SEQ that names none (docs/profiles.md)."""
    policy = SeqSelection.of(selection or Selection.UNRESTRICTED)
    if policy == SeqSelection.UNRESTRICTED:
        return expr
    if isinstance(expr, ops.EventSeq):
        return ops.EventSeq(with_selection(expr.left, selection), with_selection(expr.right, selection),
                            expr.selection if expr.selection is not None else policy)
    if isinstance(expr, ops.EventFirst):
        return ops.EventFirst(with_selection(expr.expr, selection))
    if isinstance(expr, ops.EventLast):
        return ops.EventLast(with_selection(expr.expr, selection))
    return expr


def _bep_matches(comp, bep: ops.EventPattern, key: str, occurrences: bool) -> DataFrame:
    """eq. 4's evaluations, once per stream element: the BGP over each element's graph (the quads keyed by
    element), then the instants whose window holds the element. Columns: ``key``, ``TS``, the variables, and with
    ``occurrences`` the element (``ELEMENT``), which with the mapping names the triple occurrences matched."""
    if not isinstance(bep.window, IRI):
        raise NotSupportedError("EVENT ON a variable window (RSEP-QL leaves it to future work)")
    name = E.encode(bep.window)
    source = comp.dataset.window_events.get(name)
    if source is None:
        raise RsparkError(f"EVENT ON {bep.window.n3()}: not a named window of the query's dataset")
    predicates = [t.predicate for t in pattern_triples(bep)]
    quads = source.quads(frozenset(E.encode(p) for p in predicates)
                         if predicates and all(isinstance(p, IRI) for p in predicates) else None)
    keys = ("element", "ts", "seq")
    sols = comp.compile(bep.op, Context(ActiveGraph(lambda: quads, keys, f"elements of {name}"), keys))
    names = bep_variables(bep)
    rows = source.assign(sols.df)
    end = F.col("te") if "te" in rows.columns else F.col("ts")  # a basic event's interval is its element's
    cols = [F.col("instant").alias(key), F.col("ts").alias(TS), end.alias(TE), *[F.col(var_col(v)) for v in names]]
    if occurrences:
        cols.append(F.col("element").alias(ELEMENT))
    return rows.select(*cols)


def _term_slot(term, names: list[str]) -> int | str:
    """A triple pattern's term as a column of :func:`_consuming`'s rows: a variable's position among ``names``, or
    a constant's encoded term."""
    v = pattern_variable(term)
    return names.index(v) if v is not None else E.encode(term)


def _terms(values: dict, slot: int | str, n: int):
    """A triple pattern's term in each of ``n`` rows: a variable's values (``values[slot]``), or a constant
    repeated."""
    return values[slot] if isinstance(slot, int) else repeat(slot, n)


class _Shapes:
    """The basic event patterns of an expression grouped by shape: those that differ only in the names of their
    variables (and name the key's variables alike) are one shape, whose matches are read once. ``index`` maps
    (canonical pattern, the key variables' canonical names) to the shape's number; per pattern, ``of`` its
    shape's number, ``canons`` its canonical form, ``names`` its variables' canonical names."""

    def __init__(self, beps: list, group: list[str]) -> None:
        self.group = group
        self.index: dict = {}
        self.of, self.canons, self.names = [], [], []
        for bep in beps:
            canon, renaming = _canonical(bep)
            mine = {v: c for c, v in renaming.items()}
            self.of.append(self.index.setdefault((canon, tuple(mine[v] for v in group)), len(self.index)))
            self.canons.append(canon)
            self.names.append(mine)
        self.widths = [len(bep_variables(c)) for c, _ in self.index]  # per shape, its variables (in shape order)
        self.width = max(self.widths, default=0)
        self.by = [var_col(v) for v in group] or ["__ev_all"]

    def rows(self, canonical_matches, key: str, extra: tuple = ()) -> DataFrame:
        """Every shape's matches in one relation: ``key``, ``__ev_pat`` (the shape), ``TS``, ``extra`` columns,
        the key columns (``by``) and the canonical variables (``__ev_v0``, ...)."""
        rows = None
        for (canon, key_names), p in self.index.items():
            m = canonical_matches(canon)
            variables = bep_variables(canon)
            keys = ([F.col(var_col(c)).alias(var_col(v)) for v, c in zip(self.group, key_names)] if self.group
                    else [F.lit(0).alias("__ev_all")])
            part = m.select(key, F.lit(p).alias("__ev_pat"), TS, *extra, *keys,
                            *[(F.col(var_col(variables[i])) if i < len(variables)
                               else F.lit(None).cast("string")).alias(f"__ev_v{i}") for i in range(self.width)])
            rows = part if rows is None else rows.unionByName(part)
        return rows

    def viable(self, rows: DataFrame, key: str, needed: int) -> DataFrame:
        """``rows`` partitioned by the key, at the instants where the expression can have an event: every shape
        matched there, at ``needed`` distinct timestamps or more (``timestamps_needed``). Window functions over
        (key, instant), whose distribution the partitioning by key already meets: one shuffle."""
        rows = rows.repartition(*self.by)
        at = Window.partitionBy(*self.by, key)
        n = len(self.index)
        conditions = []
        if n > 62:
            conditions.append(F.size(F.collect_set("__ev_pat").over(at)) == n)
        elif n > 1:  # the shapes present as the bits of a long
            conditions.append(F.bit_or(F.expr("shiftleft(1L, __ev_pat)")).over(at) == (1 << n) - 1)
        if needed > 1:
            conditions.append(F.size(F.collect_set(TS).over(at)) >= needed)
        if not conditions:
            return rows
        return rows.withColumn("__ev_ok", reduce(operator.and_, conditions)).filter(F.col("__ev_ok")).drop("__ev_ok")


def _consuming(comp, expr, beps, canonical_matches, key: str, intervals: bool, position: int) -> Solutions:
    """Consumption (RSEP-QL, Def. 10): the evaluator of ``rspark.cep.machine`` run instant after instant, per key
    (``consumption_key``; one group when the pattern has none), inside Spark's Python workers.

    The basic event patterns that differ only in the names of their variables (and name the key's variables alike)
    are one shape, whose matches go to Python once: each row carries its shape (``__ev_pat``) and its canonical
    variables (``__ev_v0``, ...), and the worker reads it as a match of each pattern of that shape.

    With a carried state (``comp.carried``, a :class:`~rspark.cep.carried.CarriedConsumption`: live mode), each
    key's evaluator resumes from its snapshot, and each group's snapshot just before the run's last instant comes
    back as a row of its own (``__ev_state``); the events are computed at once (a local checkpoint) and those rows
    read back into the carried state."""
    carried = comp.carried
    initial = carried.keyed(position) if carried is not None else {}
    hold = carried.resume if carried is not None else None

    names = list(event_variables(expr))
    shapes = _Shapes(beps, list(consumption_key(expr)))
    pattern_of, width, widths, by = shapes.of, shapes.width, shapes.widths, shapes.by
    rows = shapes.rows(canonical_matches, key, (ELEMENT, TE))
    cols = [var_col(v) for v in names]
    # per basic event pattern, its variables in sorted order and their canonical columns' positions: a match's
    # mapping as the sorted tuple of (variable, term) pairs the evaluator keys events by
    slots = [[(v, int(mine[v][1:])) for v in sorted(bep_variables(b))] for b, mine in zip(beps, shapes.names)]
    # per basic event pattern, its triple patterns as (window, s, p, o) with a constant's encoded term or a
    # variable's canonical column position: a match's triple occurrences are (window, element, te, s, p, o)
    canon_order = [f"e{i}" for i in range(width)]
    triples = [[(E.encode(b.window), *[_term_slot(term, canon_order) for term in (t.subject, t.predicate, t.object)])
                for t in pattern_triples(c)] for b, c in zip(beps, shapes.canons)]
    schema = ", ".join([f"`{key}` long", *[f"`{c}` string" for c in cols], f"`{T1}` long", f"`{T2}` long",
                        *(["`__ev_state` string"] if carried is not None else [])])
    needed = timestamps_needed(expr)
    n_patterns = len(shapes.index)

    def events(table, state):
        """The events of the complete instants in ``table`` (a key's rows of viable instants), in order."""
        # each shape's rows apart, as Python lists once; then each basic event pattern's mappings and triple
        # occurrences built from its shape's lists a column at a time
        columns: dict = {}
        for p in range(n_patterns):
            part = table.filter(pc.equal(table.column("__ev_pat"), p))
            if part.num_rows:
                columns[p] = (part.num_rows, {i: part.column(f"__ev_v{i}").to_pylist() for i in range(widths[p])},
                              part.column(ELEMENT).to_pylist(), part.column(key).to_pylist(),
                              part.column(TS).to_pylist(), part.column(TE).to_pylist())
        by_instant: dict = {}
        for b, (own, spos) in enumerate(zip(slots, triples)):
            if pattern_of[b] not in columns:
                continue
            n, values, elements, instants, stamps, ends = columns[pattern_of[b]]
            mus = zip(*[zip(repeat(v), values[j]) for v, j in own]) if own else repeat((), n)
            occs = (map(frozenset, zip(*[zip(repeat(w), elements, ends, *[_terms(values, x, n) for x in spo])
                                         for w, *spo in spos])) if spos else repeat(frozenset(), n))
            for t, mu, ts, te, occ in zip(instants, mus, stamps, ends, occs):
                matches = by_instant.get(t)
                if matches is None:
                    by_instant[t] = [(b, mu, ts, te, occ)]
                else:
                    matches.append((b, mu, ts, te, occ))
        out = [e for t in sorted(by_instant) for e in state.step(t, by_instant[t])]
        if not out:
            return None
        data = {key: pa.array([t for t, _, _, _ in out], pa.int64())}
        for v, c in zip(names, cols):
            data[c] = pa.array([dict(mu).get(v) for _, mu, _, _ in out], pa.string())
        data[T1] = pa.array([a for _, _, a, _ in out], pa.int64())
        data[T2] = pa.array([b for _, _, _, b in out], pa.int64())
        if carried is not None:
            data["__ev_state"] = pa.nulls(len(out), pa.string())
        return pa.RecordBatch.from_pydict(data)

    def state_row(group: tuple, state) -> pa.RecordBatch:
        """The group's snapshot as a row: ``__ev_state`` the JSON of [key, snapshot], the other columns null."""
        snapshot = state.held if state.held is not None else state.snapshot()
        data = {key: pa.nulls(1, pa.int64()), **{c: pa.nulls(1, pa.string()) for c in cols},
                T1: pa.nulls(1, pa.int64()), T2: pa.nulls(1, pa.int64()),
                "__ev_state": pa.array([json.dumps([list(group), snapshot])], pa.string())}
        return pa.RecordBatch.from_pydict(data)

    # complete instants are evaluated once they hold a batch's worth of rows (Spark's Arrow batch size), or at the
    # group's end: a small group in one evaluation, a large one in steps of about a batch
    step_rows = max(1, int(comp.spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")))

    def run(batches):
        """One key's rows, sorted by instant, in Arrow batches: an instant is evaluated once its rows are all in
        (the next batch may continue the last instant of this one); the worker holds at most about two batches
        and one instant's rows."""
        state = ConsumingEvaluator(expr, beps, hold)
        group = None
        ready: list = []  # rows of complete instants, not evaluated yet
        ready_rows = 0
        pending: list = []  # the rows of the latest instant, perhaps not all in yet
        current = None
        for batch in batches:
            n = batch.num_rows
            if not n:
                continue
            if group is None:
                group = tuple(batch.column(c)[0].as_py() for c in by)
                if group in initial:
                    state.resume(initial[group])
            instants = batch.column(key)
            first, last = instants[0].as_py(), instants[n - 1].as_py()
            if (current is not None and first < current) or (
                    n > 1 and not pc.all(pc.less_equal(instants.slice(0, n - 1), instants.slice(1))).as_py()):
                raise RuntimeError("MATCH CONSUME: a key's rows reached the evaluator out of instant order")
            if first == last == current:
                pending.append(batch)
                continue
            cut = pc.index(instants, last).as_py()
            ready += [*pending, batch.slice(0, cut)]
            ready_rows += sum(b.num_rows for b in pending) + cut
            pending, current = [batch.slice(cut)], last
            if ready_rows >= step_rows:
                out = events(pa.Table.from_batches(ready), state)
                ready, ready_rows = [], 0
                if out is not None:
                    yield out
        if ready or pending:
            out = events(pa.Table.from_batches(ready + pending), state)
            if out is not None:
                yield out
        if carried is not None and group is not None:
            yield state_row(group, state)

    # the iterator form of applyInArrow is chosen by the function's type hints
    run.__annotations__ = {"batches": Iterator[pa.RecordBatch], "return": Iterator[pa.RecordBatch]}
    # the impossible instants are left out in Spark, before Python; every row of a key in one partition
    rows = shapes.viable(rows, key, needed)
    # sorted by instant within a key: applyInArrow keeps that order within a group (its own requirement, the
    # grouping columns' order, is met) and streams the group in batches
    df = rows.sortWithinPartitions(*by, key).groupBy(*by).applyInArrow(run, schema)
    if carried is not None:
        df = _carry(df, carried, position)
    out_cols = [F.col(key), *[F.col(c) for c in cols]]
    out_names = list(names)
    if intervals:
        out_cols += [F.col(T1).alias(var_col(START)), F.col(T2).alias(var_col(END))]
        out_names += [START, END]
    df = df.select(*out_cols).distinct()
    return Solutions(df, tuple(out_names), frozenset(out_names), (key,))


def _carry(df: DataFrame, carried, position: int) -> DataFrame:
    """The consumption's output computed now (a local checkpoint: the run's plans read it, and the snapshots are
    read from it), its snapshot rows put in ``carried``; returns the events."""
    df = df.localCheckpoint(eager=True)
    snapshots = {}
    for row in df.filter(F.col("__ev_state").isNotNull()).select("__ev_state").collect():
        group, snapshot = json.loads(row[0])
        snapshots[tuple(group)] = snapshot
    carried.update(position, snapshots)
    return df.filter(F.col("__ev_state").isNull()).drop("__ev_state")
