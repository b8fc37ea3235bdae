"""MATCH (RSEP-QL, eq. 8) in a replay: the basic event patterns' matches on the base stream, assigned to instants,
then the event expression as a Spark plan (:mod:`rspark.spark.cep.events`), or, under a consumption policy, the
sequential evaluator of :mod:`rspark.cep.machine` run per key inside Spark (``applyInPandas``).

The replay gives, per named window, ``WindowEvents``: the stream's quads and the window's assignment of
element-keyed rows to the instants whose window holds their element.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.expr import TriplePattern
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
from rspark.spark.cep.events import T1, T2, TS, EventPlanner
from rspark.spark.sparql.compiler import Context, GraphSource
from rspark.spark.sparql.solutions import Solutions, pattern_variable, var_col

ELEMENT, OCC = "__ev_el", "__ev_occ"
SEP = "\x1f"


@dataclass(frozen=True)
class WindowEvents:
    """What a named window gives event patterns: ``quads(predicates)`` the stream's (element, ts, seq, s, p, o)
    (those with one of ``predicates``, encoded IRIs, when the source selects them apart; None: every quad), and
    ``assign(rows)`` the rows (with element, ts, seq) paired with every instant whose window holds their element,
    as a column ``instant``."""

    quads: Callable[..., DataFrame]
    assign: Callable[[DataFrame], DataFrame]


def compile_match(comp, op: ops.Match, key: str) -> Solutions:
    """The solutions of MATCH at every instant of the replay (``comp.domain``), keyed by ``key``."""
    expr = with_selection(op.expr, comp.profile.selection)
    beps = basic_patterns(expr)
    consume = str(op.consume or comp.profile.consumption or "NONE").upper()
    intervals = asks_intervals(comp.query_op)
    if intervals and sum(isinstance(n, ops.Match) for n in ops.descendants(comp.query_op)) > 1:
        raise NotSupportedError("getSTARTTIME(), getENDTIME() and getDURATION() in a query with several MATCH "
                                "patterns (whose events' intervals would they read?)")
    cache: dict = {}

    def matches(bep: ops.EventPattern) -> DataFrame:
        """The matches of ``bep``, computed once for all basic event patterns that differ only in the names of
        their variables (``E1``, ``E2``, ``E3`` of a sequence of one kind of event share one plan, and Spark
        reuses its exchanges), renamed to ``bep``'s variables."""
        canon, names = _canonical(bep)
        if canon not in cache:
            cache[canon] = _bep_matches(comp, canon, key, occurrences=consume != "NONE")
        df = cache[canon]
        renamed = {var_col(c): var_col(n) for c, n in names.items() if c != n}
        if not renamed:
            return df
        if renamed.keys().isdisjoint(renamed.values()):  # one operation (withColumnsRenamed renames in turn)
            return df.withColumnsRenamed(renamed)
        return df.select(*[F.col(c).alias(renamed.get(c, c)) for c in df.columns])

    if consume == "NONE":
        planner = EventPlanner(matches, key, comp.fresh)
        return planner.match(expr, comp.domain, intervals)
    if consume not in ("CHRONOLOGICAL", "RECENT"):
        raise NotSupportedError(f"MATCH CONSUME {op.consume}: the consumption policies are CHRONOLOGICAL and RECENT")
    return _consuming(comp, expr, beps, matches, key, intervals)


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


def with_selection(expr, selection) -> object:
    """``expr`` with the profile's selection policy on every SEQ that names none (docs/profiles.md)."""
    policy = str(selection or "unrestricted").upper()
    if policy == "UNRESTRICTED":
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
    ``occurrences`` the element (``ELEMENT``) and the matched triple occurrences (``OCC``)."""
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
    sols = comp.compile(bep.op, Context(GraphSource(lambda: quads, keys, f"elements of {name}"), keys))
    names = bep_variables(bep)
    rows = source.assign(sols.df)
    cols = [F.col("instant").alias(key), F.col("ts").alias(TS), *[F.col(var_col(v)) for v in names]]
    if occurrences:
        triples = []
        for t in pattern_triples(bep):
            parts = []
            for term in (t.subject, t.predicate, t.object):
                v = pattern_variable(term)
                parts.append(F.col(var_col(v)) if v is not None else F.lit(E.encode(term)))
            triples.append(F.concat(F.lit(name + "|"), F.col("element"), F.lit("|"), parts[0], F.lit(" "),
                                    parts[1], F.lit(" "), parts[2]))
        # one string (occurrences joined by a unit separator): an array column per row made Arrow split
        # the batches of large groups into chunked arrays that applyInPandas could not convert
        cols += [F.col("element").alias(ELEMENT), F.concat_ws(SEP, *triples).alias(OCC)]
    return rows.select(*cols)


def _consuming(comp, expr, beps, matches, key: str, intervals: bool) -> Solutions:
    """Consumption (RSEP-QL, Def. 10): the evaluator of ``rspark.cep.machine`` run instant after instant, per key
    (``consumption_key``; one group when the pattern has none), inside Spark's Python workers."""
    from rspark.cep.machine import run_consuming

    names = list(event_variables(expr))
    group = list(consumption_key(expr))
    rows = None
    for i, bep in enumerate(beps):
        m = matches(bep)
        own = bep_variables(bep)
        part = m.select(key, F.lit(i).alias("__ev_bep"), TS, OCC,
                        *[(F.col(var_col(v)) if v in own else F.lit(None).cast("string")).alias(var_col(v))
                          for v in names])
        rows = part if rows is None else rows.unionByName(part)
    if not group:
        rows = rows.withColumn("__ev_all", F.lit(0))
    by = [var_col(v) for v in group] or ["__ev_all"]
    bep_vars = [bep_variables(b) for b in beps]
    cols = [var_col(v) for v in names]

    def run(pdf):
        import pandas as pd

        items = []
        columns = [pdf[c].tolist() for c in (key, "__ev_bep", TS, OCC, *cols)]
        for t, b, ts, occ, *values in zip(*columns):
            b = int(b)
            row = dict(zip(names, values))
            mu = tuple(sorted((v, row[v]) for v in bep_vars[b]))
            items.append((int(t), beps[b], mu, int(ts), frozenset(occ.split(SEP))))
        out = run_consuming(expr, items)
        # typed columns: an empty frame of untyped (object) columns fails Arrow's conversion (a ChunkedArray)
        data = {key: pd.Series([t for t, _, _, _ in out], dtype="int64"),
                T1: pd.Series([a for _, _, a, _ in out], dtype="int64"),
                T2: pd.Series([b for _, _, _, b in out], dtype="int64")}
        for v, c in zip(names, cols):
            data[c] = pd.Series([dict(mu).get(v) for _, mu, _, _ in out], dtype=object)
        return pd.DataFrame(data, columns=[key, *cols, T1, T2])

    schema = ", ".join([f"`{key}` long", *[f"`{c}` string" for c in cols], f"`{T1}` long", f"`{T2}` long"])
    df = rows.groupBy(*by).applyInPandas(run, schema)
    out_cols = [F.col(key), *[F.col(c) for c in cols]]
    out_names = list(names)
    if intervals:
        out_cols += [F.col(T1).alias(var_col(START)), F.col(T2).alias(var_col(END))]
        out_names += [START, END]
    df = df.select(*out_cols).distinct()
    return Solutions(df, tuple(out_names), frozenset(out_names), (key,))
