"""Property paths (SPARQL 1.1 section 9 and 18.4): a path becomes a DataFrame of (keys, s, o) pairs.

Link, inverse, sequence, alternative and negated property sets are plain scans, joins and unions (multisets, as
the spec says). ``?``, ``*`` and ``+`` are sets computed to a fixpoint by semi-naive iteration: each round joins only
the pairs found in the previous round with one more step and keeps those not seen before, until a round finds
nothing. A constant start (``:a :p* ?x``) or end (``?x :p* :a``, evaluated backwards) starts the search from that
node instead of closing the whole graph.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.expr import PathAlt, PathInv, PathMod, PathNegated, PathSeq
from rspark.model.codec import encode
from rspark.model.terms import IRI, RDF_TYPE
from rspark.spark.sparql.solutions import Solutions, pattern_variable, var_col


def _iri(x) -> str:
    if isinstance(x, IRI):
        return encode(x)
    if x == "a":
        return encode(IRI(RDF_TYPE))
    raise TypeError(f"not a path IRI: {x!r}")


def _invert(path):
    if isinstance(path, PathInv):
        return path.path
    if isinstance(path, PathSeq):
        return PathSeq(tuple(_invert(p) for p in reversed(path.parts)))
    if isinstance(path, PathAlt):
        return PathAlt(tuple(_invert(p) for p in path.parts))
    if isinstance(path, PathMod):
        return PathMod(_invert(path.path), path.mod)
    if isinstance(path, PathNegated):
        return PathNegated(path.inverse, path.forward)
    return PathInv(path)


class _PathEval:
    def __init__(self, comp, ctx) -> None:
        # pairs carry the keys of the graph the path walks (none for static graphs)
        self.comp, self.ctx, self.keys = comp, ctx, list(ctx.active.keys)

    def triples(self) -> DataFrame:
        return self.comp.source_triples(self.ctx)

    def start_df(self, node: str) -> DataFrame:
        """One pair (node, node) per key value."""
        spark = self.comp.spark
        one = spark.range(1).select(F.lit(node).alias("s"), F.lit(node).alias("o"))
        if self.keys:
            return self.ctx.domain.select(*self.keys).distinct().crossJoin(one)
        return one

    def pairs(self, path, start: str | None = None) -> DataFrame:
        """(keys, s, o) of ``path``; with ``start`` only the pairs whose s is that node."""
        k = self.keys
        if isinstance(path, PathMod):
            return self.closure(path, start)
        if isinstance(path, PathSeq):
            out = self.pairs(path.parts[0], start)
            for part in path.parts[1:]:
                right = self.pairs(part).withColumnRenamed("s", "__m").withColumnRenamed("o", "__o2")
                out = out.withColumnRenamed("o", "__m").join(right, k + ["__m"]) \
                    .select(*k, "s", F.col("__o2").alias("o"))
            return out
        if isinstance(path, PathAlt):
            out = None
            for part in path.parts:
                p = self.pairs(part, start)
                out = p if out is None else out.unionByName(p)
            return out
        if isinstance(path, PathInv):
            inner = self.pairs(path.path)
            out = inner.select(*k, F.col("o").alias("s"), F.col("s").alias("o"))
        elif isinstance(path, PathNegated):
            t = self.triples()
            parts = []
            if path.forward or not path.inverse:
                fwd = [_iri(x) for x in path.forward]
                parts.append(t.filter(~F.col("p").isin(fwd)).select(*k, "s", "o") if fwd else t.select(*k, "s", "o"))
            if path.inverse:
                inv = [_iri(x) for x in path.inverse]
                parts.append(t.filter(~F.col("p").isin(inv)).select(*k, F.col("o").alias("s"), F.col("s").alias("o")))
            out = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        else:
            out = self.triples().filter(F.col("p") == _iri(path)).select(*k, "s", "o")
        if start is not None:
            out = out.filter(F.col("s") == start)
        return out

    def nodes(self) -> DataFrame:
        t = self.triples()
        k = self.keys
        n = t.select(*k, F.col("s").alias("n")).unionByName(t.select(*k, F.col("o").alias("n"))).distinct()
        return n.select(*k, F.col("n").alias("s"), F.col("n").alias("o"))

    def closure(self, path: PathMod, start: str | None) -> DataFrame:
        k = self.keys
        step = self.pairs(path.path).distinct()
        if path.mod == "?":
            zero = self.start_df(start) if start is not None else self.nodes()
            one = step.filter(F.col("s") == start) if start is not None else step
            return zero.unionByName(one).distinct()
        step = step.localCheckpoint()
        right = step.withColumnRenamed("s", "__m").withColumnRenamed("o", "__o2")
        found = step.filter(F.col("s") == start) if start is not None else step
        found = found.distinct().localCheckpoint()
        frontier = found
        while True:
            nxt = frontier.withColumnRenamed("o", "__m").join(right, k + ["__m"]) \
                .select(*k, "s", F.col("__o2").alias("o"))
            new = nxt.distinct().join(found, k + ["s", "o"], "left_anti").localCheckpoint()
            if new.isEmpty():
                break
            found = found.unionByName(new).localCheckpoint()
            frontier = new
        if path.mod == "*":
            zero = self.start_df(start) if start is not None else self.nodes()
            found = found.unionByName(zero).distinct()
        return found


def path_solutions(comp, op: ops.PathPattern, ctx) -> Solutions:
    """The solutions of ``subject path object`` (variables or constants at both ends)."""

    ev = _PathEval(comp, ctx)
    s_name, o_name = pattern_variable(op.subject), pattern_variable(op.object)
    s_const = None if s_name is not None else encode(op.subject)
    o_const = None if o_name is not None else encode(op.object)
    if s_const is not None:
        pairs = ev.pairs(op.path, s_const)
    elif o_const is not None:
        back = ev.pairs(_invert(op.path), o_const)
        pairs = back.select(*ev.keys, F.col("o").alias("s"), F.col("s").alias("o"))
    else:
        pairs = ev.pairs(op.path)
    if s_const is not None and o_const is not None:
        pairs = pairs.filter(F.col("o") == o_const)
    cols = [F.col(k) for k in ev.keys]
    names: list[str] = []
    if s_name is not None:
        cols.append(F.col("s").alias(var_col(s_name)))
        names.append(s_name)
    if o_name is not None:
        if o_name == s_name:
            pairs = pairs.filter(F.col("s") == F.col("o"))
        else:
            cols.append(F.col("o").alias(var_col(o_name)))
            names.append(o_name)
    return Solutions(pairs.select(*cols), tuple(names), frozenset(names), tuple(ev.keys))
