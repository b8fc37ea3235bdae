"""RSEP-QL event patterns as Spark plans (RSEP-QL, Sec. 4.2-4.3): EVENT, FIRST, LAST, SEQ under each selection
policy, and MATCH, evaluated at every evaluation instant at once.

**Matches once, then instants.** A basic event pattern ``EVENT w P`` is evaluated once per stream element, on the
base stream: P's BGP runs over the quads keyed by element (one plan, no instants); the matches are then assigned to
the instants whose window ``w`` holds their element with the window arithmetic of ``rsp/`` (``assign``, given by
the replay). Every later operator carries the instant key.

**Contexts.** An event expression is evaluated under an *active window* (RSEP-QL, Def. 7): SEQ evaluates its left
operand, for each event of its right operand, with that event's bindings substituted and only the graphs before its
start (eq. 7). Here the right events become a *context* frame: one row per context, the columns that identify it
(``cid``: the instant, the outer contexts' ids, the right event's bindings and interval), the bindings in force
(equi-join keys) and an exclusive upper bound on timestamps (``ub``). The left operand's basic event patterns join
their matches with the contexts on the instant and the shared variables and keep those before ``ub``: an
interval (band) join on the keys, so a left operand is evaluated for every right event in one join, not per event.

**Selections** are window functions over the context: FIRST / LAST (eqs. 5, 6) keep the rank-1 events of each
context ordered by (end, start); SEQ[CHRONOLOGICAL] / SEQ[RECENT] (eqs. 10, 11) keep, per context and right
solution mapping (RSEP-QL, Example 10), the first / last right event that has a left partner, paired with the first /
last such partner; SEQ[NAIVE] (eq. 9) joins the LAST of each side.

Event sets are sets (eq. 4 and the others are set comprehensions). A duplicate event (the same mapping at the same
interval from two elements of one timestamp, or a sequence reached through two intermediate events) changes no
selection (ranks keep ties), so duplicates are dropped once, at MATCH, not after every operator (each would be
a shuffle).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.cep.patterns import END, START, basic_patterns, event_variables
from rspark.errors import NotSupportedError
from rspark.rsp.policies import SeqSelection
from rspark.spark.sparql.solutions import Solutions, var_col

T1, T2, TS = "__ev_t1", "__ev_t2", "__ev_ts"
TE = "__ev_te"  # a basic event's end: its element's (an element valid over an interval), else TS


@dataclass(frozen=True)
class Ctx:
    """Contexts of an evaluation: ``df`` one row per context, ``cid`` the columns identifying a row, ``vars`` the
    bound variables (substituted into what is evaluated), ``ub`` the column of the exclusive upper bound on
    timestamps (None: no bound)."""

    df: DataFrame
    cid: tuple[str, ...]
    vars: tuple[str, ...]
    ub: str | None
    top: bool = False  # the contexts are the instants themselves (no bindings, no bound)


@dataclass(frozen=True)
class Events:
    """Events under contexts: ``df`` holds the contexts' columns, the events' variables, and ``T1``, ``T2``."""

    df: DataFrame
    ctx: Ctx
    vars: tuple[str, ...]  # the context's variables and the events' own


class EventPlanner:
    """Plans event expressions. ``matches(bep)`` gives the matches of a basic event pattern at every instant:
    ``(key, TS, variables...)``, ``key`` the instant column."""

    def __init__(self, matches: Callable[[ops.EventPattern], DataFrame], key: str, fresh: Callable[[str], str],
                 hashed: Callable[[ops.EventPattern], bool] = lambda bep: False):
        self.matches = matches
        self.key = key
        self.fresh = fresh
        self.hashed = hashed

    def top(self, instants: DataFrame) -> Ctx:
        return Ctx(instants.select(self.key), (self.key,), (), None, top=True)

    # ------------------------------------------------------------------------------------------------ operators

    def run(self, expr, ctx: Ctx) -> Events:
        if isinstance(expr, ops.EventPattern):
            return self._basic(expr, ctx)
        if isinstance(expr, (ops.EventFirst, ops.EventLast)):
            return self.extreme(self.run(expr.expr, ctx), last=isinstance(expr, ops.EventLast))
        if isinstance(expr, ops.EventSeq):
            policy = expr.selection or SeqSelection.UNRESTRICTED
            if policy == SeqSelection.NAIVE:
                return self._naive(expr, ctx)
            if policy in (SeqSelection.UNRESTRICTED, SeqSelection.CHRONOLOGICAL, SeqSelection.RECENT):
                return self._seq(expr, ctx, policy)
            raise NotSupportedError(f"SEQ[{expr.selection}]: the selection policies are NAIVE, CHRONOLOGICAL and "
                                    "RECENT (or none: unrestricted)")
        raise NotSupportedError(f"{type(expr).__name__} in an event pattern")

    def _basic(self, bep: ops.EventPattern, ctx: Ctx) -> Events:
        """eq. 4: the matches of the element graphs in the window, compatible with the context, before its bound."""
        m = self.matches(bep)
        own = [v for v in event_variables(bep) if v not in ctx.vars]
        shared = [var_col(v) for v in event_variables(bep) if v in ctx.vars]
        if ctx.top:  # the matches are already keyed by the instants of the replay
            df = m
        else:
            # a pattern whose matches fit a task's memory is joined by a hash table of them, not by sorting both
            # sides (docs/events.md; a sequence of three events over 1e6 events: 2.6 -> 2.0 s warm)
            df = ctx.df.join(m.hint("shuffle_hash") if self.hashed(bep) else m, [self.key, *shared])
        if ctx.ub is not None:  # (an event of an element valid over an interval: it ends before the bound)
            df = df.filter(F.col(TE) < F.col(ctx.ub))
        df = df.withColumnRenamed(TS, T1).withColumnRenamed(TE, T2)
        return Events(df, ctx, ctx.vars + tuple(own))

    @staticmethod
    def _own_cols(ev: Events) -> list[str]:
        return [var_col(v) for v in ev.vars if v not in ev.ctx.vars]

    def extreme(self, ev: Events, last: bool, by: tuple[str, ...] | None = None,
                order: tuple[str, str] = (T2, T1)) -> Events:
        """The first (``last`` False) or last events of each context (or of each ``by`` group), ties kept: eqs. 5, 6
        with events ordered by end, then start."""
        cols = [F.col(c).desc() if last else F.col(c).asc() for c in order]
        w = Window.partitionBy(*(by or ev.ctx.cid)).orderBy(*cols)
        rank = self.fresh("rank")
        df = ev.df.withColumn(rank, F.dense_rank().over(w)).filter(F.col(rank) == 1).drop(rank)
        return replace(ev, df=df)

    def _right_contexts(self, right: Events) -> tuple[Ctx, str, str]:
        """The right events of a SEQ as the contexts of its left operand: their bindings substituted, the graphs
        before their start (RSEP-QL, eq. 7: W ⊔ [0, t3 - 1] • W)."""
        p1, p2 = self.fresh("rt1"), self.fresh("rt2")
        df = right.df.withColumnsRenamed({T1: p1, T2: p2})
        cid = (*right.ctx.cid, *self._own_cols(right), p1, p2)
        return Ctx(df, cid, right.vars, p1), p1, p2

    def _seq(self, expr: ops.EventSeq, ctx: Ctx, policy: SeqSelection) -> Events:
        right = self.run(expr.right, ctx)
        ctx2, p1, p2 = self._right_contexts(right)
        left = self.run(expr.left, ctx2)
        if policy != SeqSelection.UNRESTRICTED:
            last = policy == SeqSelection.RECENT
            left = self.extreme(left, last)  # the first / last partner of each right event (per context ctx2)
            # per context and right solution mapping, the first / last right event that has a partner
            by = (*ctx.cid, *[var_col(v) for v in event_variables(expr.right)])
            left = self.extreme(left, last, by=by, order=(p2, p1))
        df = left.df.drop(T2, p1).withColumnRenamed(p2, T2)
        return Events(df, ctx, left.vars)

    def _naive(self, expr: ops.EventSeq, ctx: Ctx) -> Events:
        """eq. 9: the LAST event of each side, the left one before the right one."""
        left = self.extreme(self.run(expr.left, ctx), last=True)
        right = self.extreme(self.run(expr.right, ctx), last=True)
        shared = [v for v in right.vars if v in left.vars and v not in ctx.vars]
        names = {c: self.fresh("nv") for c in [*ctx.cid, *[var_col(v) for v in shared], T1, T2]}
        rdf = right.df.select(*[F.col(c).alias(names.get(c, c)) for c in
                                [*ctx.cid, *[var_col(v) for v in right.vars if v not in ctx.vars], T1, T2]])
        cond = [left.df[c] == rdf[names[c]] for c in ctx.cid] + \
            [left.df[var_col(v)] == rdf[names[var_col(v)]] for v in shared]
        lt1, lt2, rt1, rt2 = left.df[T1], left.df[T2], rdf[names[T1]], rdf[names[T2]]
        cond.append((lt2 < rt2) | ((lt2 == rt2) & (lt1 < rt1)))
        joined = left.df.join(rdf, _conj(cond))
        extra = [var_col(v) for v in right.vars if v not in left.vars]
        df = joined.select(*[left.df[c] for c in left.df.columns if c != T2], *[rdf[c] for c in extra],
                           rt2.alias(T2))
        return Events(df, ctx, tuple(dict.fromkeys(left.vars + right.vars)))

    # --------------------------------------------------------------------------------------------------- MATCH

    def match(self, expr, instants: DataFrame, intervals: bool) -> Solutions:
        """eq. 8: MATCH E at every instant, as solutions keyed by instant. Without ``intervals`` the set of
        solution mappings; with them, one solution per event, its interval in the hidden variables START and END
        (ticks), which getSTARTTIME() / getENDTIME() / getDURATION() read."""
        ev = self.run(expr, self.top(instants))
        names = list(event_variables(expr))
        cols = [F.col(self.key)] + [F.col(var_col(v)) for v in names]
        if intervals:
            cols += [F.col(T1).alias(var_col(START)), F.col(T2).alias(var_col(END))]
            names += [START, END]
        df = ev.df.select(*cols).distinct()
        return Solutions(df, tuple(names), frozenset(names), (self.key,))


def _conj(conds):
    out = conds[0]
    for c in conds[1:]:
        out = out & c
    return out


def declared_windows(expr) -> list:
    return [bep.window for bep in basic_patterns(expr)]
