"""Solution sequences as Spark DataFrames, and the SPARQL operations on them that only need column plumbing.

A :class:`Solutions` is a DataFrame with one column per variable (named by :func:`var_col`, encoded terms, NULL =
unbound) plus the *context keys*: hidden columns that every operator carries along (the graph of ``GRAPH ?g``, the
evaluation instant of a window). Joins match on the keys, groups include them, so one plan evaluates a pattern for
every key value at once. ``bound`` lists the variables that are bound in every solution (statically known), which
lets joins on them be plain equi-joins; the other variables may be NULL and need SPARQL's compatibility test.
``order`` holds the hidden sort-key columns of an ORDER BY that still has to be applied (see ``compiler``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rspark.model.terms import BlankNode, Variable
from rspark.spark.expr.compile import directed, order_key, order_keys

_UNSAFE = re.compile(r"[^0-9A-Za-z_]")


def var_col(name: str) -> str:
    """The DataFrame column of a variable: ``v_`` + the name, characters Spark dislikes spelled ``_xHH_``."""
    return "v_" + _UNSAFE.sub(lambda m: f"_x{ord(m.group()):x}_", name)


class Names:
    """The fresh hidden column names of one compilation (a :class:`~rspark.spark.sparql.compiler.Compiler` owns
    one): unique within it, and the same for the same query every time it is compiled (the plan text is then the
    same too), whatever other compilations run at the same time in other threads. (A module-level counter gave
    names that depended on every compilation before, in any thread.) One compilation runs in one thread."""

    def __init__(self) -> None:
        self._counter = itertools.count()

    def fresh(self, prefix: str = "t") -> str:
        """A fresh hidden column name: ``__`` + ``prefix`` + a number."""
        return f"__{prefix}{next(self._counter)}"


@dataclass(frozen=True)
class Solutions:
    df: DataFrame
    vars: tuple[str, ...]  # variable names in scope, in a stable order
    bound: frozenset[str]  # variables bound in every solution
    keys: tuple[str, ...] = ()  # hidden context key columns
    order: tuple[tuple[str, bool], ...] = ()  # pending ORDER BY: (hidden column, ascending) — see compiler

    def col(self, name: str) -> Column:
        return F.col(var_col(name))

    def with_df(self, df: DataFrame, **changes) -> Solutions:
        return replace(self, df=df, **changes)

    @property
    def hidden(self) -> list[str]:
        return list(self.keys) + [c for c, _ in self.order]

    def columns(self) -> list[str]:
        return list(self.keys) + [var_col(v) for v in self.vars] + [c for c, _ in self.order]


def merge_keys(*key_sets) -> tuple[str, ...]:
    """Context keys in their canonical (sorted) order."""
    return tuple(sorted(set().union(*key_sets)))


def align(sols: Solutions, keys: tuple[str, ...], domain: DataFrame | None) -> Solutions:
    """Give solutions that do not depend on some context keys those keys (one copy per key value).

    Solutions over static data carry no window or graph key: they are the same for every key value, and stay
    unkeyed (small) until they meet keyed solutions in a way that needs the copies (LeftJoin, Minus, Union)."""
    keys = merge_keys(keys, sols.keys)
    missing = [k for k in keys if k not in sols.keys]
    if not missing:
        return sols
    dom = domain.select(*missing).distinct()
    df = sols.df.crossJoin(dom)
    df = df.select(*keys, *[var_col(v) for v in sols.vars], *[c for c, _ in sols.order])
    return replace(sols, df=df, keys=keys)


def _rename_right(left: Solutions, right: Solutions, shared: list[str],
                  keys: tuple[str, ...]) -> tuple[DataFrame, dict[str, str]]:
    """Rename the right side's shared variable (and key) columns to fresh names so joined columns never clash.

    The names only have to differ from the columns of the two sides (the join's result keeps none of them), so
    they are numbered per join, from the join's own inputs: no shared counter, the same names every time."""
    taken = set(left.columns()) | set(right.columns())

    def names(prefix: str):
        return (n for n in (f"__{prefix}{i}" for i in itertools.count()) if n not in taken)

    var_names, key_names = names("r"), names("rk")
    mapping = {var_col(v): next(var_names) for v in shared}
    mapping.update({k: next(key_names) for k in keys})
    df = right.df
    for old, new in mapping.items():
        df = df.withColumnRenamed(old, new)
    return df, mapping


def _key_condition(left: DataFrame, right: DataFrame, keys, mapping) -> list[Column]:
    return [left[k] == right[mapping[k]] for k in keys]


def join(left: Solutions, right: Solutions, how: str = "inner", condition=None) -> Solutions:
    """SPARQL Join (``how='inner'``) or LeftJoin (``how='left'``): compatible solutions merged.

    ``condition(resolve)`` builds an extra join condition (the LeftJoin filter) from a resolver of variable names
    to columns of the merged row."""
    if how != "inner":
        assert set(right.keys) <= set(left.keys), (left.keys, right.keys)
    shared_keys = tuple(k for k in left.keys if k in right.keys)
    out_keys = merge_keys(left.keys, right.keys)
    shared = [v for v in left.vars if v in right.vars]
    rdf, mapping = _rename_right(left, right, shared, shared_keys)
    ldf = left.df
    conds = _key_condition(ldf, rdf, shared_keys, mapping)
    merged: dict[str, Column] = {}
    for v in shared:
        lc, rc = ldf[var_col(v)], rdf[mapping[var_col(v)]]
        if v in left.bound and v in right.bound:
            conds.append(lc == rc)
            merged[v] = lc
        else:
            conds.append(lc.isNull() | rc.isNull() | (lc == rc))
            merged[v] = F.coalesce(lc, rc)
    if condition is not None:
        def resolve(name: str):
            if name in merged:
                return merged[name]
            if name in left.vars:
                return ldf[var_col(name)]
            if name in right.vars:
                return rdf[var_col(name)]
            return None

        extra = condition(resolve)
        if extra is not None:
            conds.append(extra)
    cond = _conjunction(conds)
    if cond is None:
        joined = ldf.crossJoin(rdf) if how == "inner" else ldf.join(rdf, F.lit(True), how)
    else:
        joined = ldf.join(rdf, cond, how)
    out_vars = list(left.vars) + [v for v in right.vars if v not in left.vars]
    select = [ldf[k] if k in left.keys else rdf[k] for k in out_keys]
    for v in out_vars:
        if v in merged:
            select.append(merged[v].alias(var_col(v)))
        elif v in left.vars:
            select.append(ldf[var_col(v)])
        else:
            select.append(rdf[var_col(v)])
    select += [ldf[c] for c, _ in left.order]
    if how == "inner":
        bound = left.bound | right.bound
    else:
        bound = left.bound
    return Solutions(joined.select(*select), tuple(out_vars), frozenset(bound), out_keys, left.order)


def _conjunction(conds: list[Column]) -> Column | None:
    out = None
    for c in conds:
        out = c if out is None else (out & c)
    return out


def minus(left: Solutions, right: Solutions) -> Solutions:
    """SPARQL Minus: drop left solutions compatible with some right solution sharing at least one bound variable."""
    assert set(right.keys) <= set(left.keys), (left.keys, right.keys)
    shared = [v for v in left.vars if v in right.vars]
    if not shared:
        return left
    rdf, mapping = _rename_right(left, right, shared, right.keys)
    ldf = left.df
    conds = _key_condition(ldf, rdf, right.keys, mapping)
    overlap = []
    for v in shared:
        lc, rc = ldf[var_col(v)], rdf[mapping[var_col(v)]]
        if v in left.bound and v in right.bound:
            conds.append(lc == rc)
            overlap.append(F.lit(True))
        else:
            conds.append(lc.isNull() | rc.isNull() | (lc == rc))
            overlap.append(lc.isNotNull() & rc.isNotNull())
    any_overlap = overlap[0]
    for c in overlap[1:]:
        any_overlap = any_overlap | c
    conds.append(any_overlap)
    rdf = rdf.select(*[mapping[k] for k in right.keys], *[mapping[var_col(v)] for v in shared])
    return left.with_df(ldf.join(rdf, _conjunction(conds), "left_anti"))


def union(left: Solutions, right: Solutions) -> Solutions:
    assert left.keys == right.keys, (left.keys, right.keys)
    out_vars = list(left.vars) + [v for v in right.vars if v not in left.vars]
    cols = list(left.keys) + [var_col(v) for v in out_vars]

    def widen(s: Solutions) -> DataFrame:
        return s.df.select(*[F.col(c) if c in s.df.columns else F.lit(None).cast("string").alias(c) for c in cols])

    return Solutions(widen(left).unionByName(widen(right)), tuple(out_vars), left.bound & right.bound, left.keys)


def project(sols: Solutions, names) -> Solutions:
    cols = [F.col(k) for k in sols.keys]
    for v in names:
        cols.append(F.col(var_col(v)) if v in sols.vars else F.lit(None).cast("string").alias(var_col(v)))
    cols += [F.col(c) for c, _ in sols.order]
    return Solutions(sols.df.select(*cols), tuple(names), frozenset(v for v in names if v in sols.bound),
                     sols.keys, sols.order)


def sort_columns(sols: Solutions, facets: str | None = None) -> list[Column]:
    """The sort orders of the pending ORDER BY (each hidden column holds the encoded value of one condition);
    ``facets``: the session's facets UDF (rspark.spark.expr.compile.order_keys)."""
    out: list[Column] = []
    for c, asc in sols.order:
        out.extend(order_keys(F.col(c), asc, facets))
    return out


def sort_key_columns(sols: Solutions, facets: str | None = None) -> tuple[dict[str, Column], list[Column]]:
    """The pending ORDER BY as columns to add first (name -> sort key) and the sort orders on them. A sort compares
    rows by evaluating its order expressions for both rows at every comparison: a key computed there (a term's
    facets, a struct of several fields) is computed about log2(n) times a row; added as a column, once. (A window
    function's order needs none of this: Spark projects its expressions below it.) ``facets``: as
    :func:`sort_columns`'s."""
    adds: dict[str, Column] = {}
    orders: list[Column] = []
    for i, (c, asc) in enumerate(sols.order):
        name = f"__sk{i}"
        adds[name] = order_key(F.col(c), facets)
        orders.append(directed(F.col(name), asc))
    return adds, orders


def distinct(sols: Solutions, facets: str | None = None) -> Solutions:
    """Distinct solutions (per key). A pending ORDER BY keeps the first occurrence in that order (``facets``: as
    :func:`sort_columns`'s)."""
    visible = list(sols.keys) + [var_col(v) for v in sols.vars]
    if not visible:
        return sols.with_df(sols.df.limit(1))
    if not sols.order:
        return sols.with_df(sols.df.dropDuplicates(visible))
    rank = F.row_number().over(Window.partitionBy(*visible).orderBy(*sort_columns(sols, facets)))
    return sols.with_df(sols.df.withColumn("__rank", rank).filter(F.col("__rank") == 1).drop("__rank"))


def pattern_variable(term) -> str | None:
    """The solution variable a pattern term stands for: variables, and blank nodes (as non-distinguished
    variables, named ``_:label``); None for constants."""
    if isinstance(term, Variable):
        return term.name
    if isinstance(term, BlankNode):
        return "_:" + term.id
    return None
