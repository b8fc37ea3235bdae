"""Relation-to-stream (RSP-QL's R2S operators) over an instant-keyed relation, in Spark."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.errors import RsparkError
from rspark.rsp.policies import R2S, setting
from rspark.spark.frames import local_frame
from rspark.spark.streaming.keys import KEY


def relation_to_stream(df: DataFrame, cols: list[str], kind: R2S | str | None, instants: Sequence[int]) -> DataFrame:
    """RSTREAM (everything), ISTREAM (what is new since the previous instant) or DSTREAM (what is gone), as
    multiset differences between consecutive evaluation instants, computed in Spark. ``instants``: the evaluation
    instants (the driver holds them): each one's previous instant is a small local relation joined in."""
    try:
        kind = setting(R2S, str(kind or R2S.RSTREAM).upper())
    except ValueError as exc:
        raise RsparkError(f"R2S operator {exc}") from None
    if kind == R2S.RSTREAM:
        return df
    ordered = sorted({int(t) for t in instants})
    pairs = local_frame(df.sparkSession, list(zip(ordered[1:], ordered[:-1])), f"{KEY} long, __prev long")
    counts = df.groupBy(KEY, *cols).agg(F.count(F.lit(1)).alias("__n"))
    # the previous instant's counts, moved to the instant that follows it
    shifted = counts.join(pairs.withColumnRenamed(KEY, "__next"), counts[KEY] == F.col("__prev")) \
        .select(F.col("__next").alias(KEY), *cols, F.col("__n").alias("__m"))
    if kind == R2S.ISTREAM:
        cur, old = counts, shifted.withColumnRenamed("__m", "__o")
        a, b = "__n", "__o"
    else:  # DSTREAM
        cur, old = shifted.withColumnRenamed("__m", "__n"), counts.withColumnRenamed("__n", "__o")
        a, b = "__n", "__o"
    cur, old = cur.alias("c"), old.alias("o")
    cond = F.col(f"c.{KEY}") == F.col(f"o.{KEY}")
    for c in cols:
        cond = cond & F.col(f"c.{c}").eqNullSafe(F.col(f"o.{c}"))
    joined = cur.join(old, cond, "left")
    diff = F.col(f"c.{a}") - F.coalesce(F.col(f"o.{b}"), F.lit(0))
    out = joined.select(F.col(f"c.{KEY}").alias(KEY), *[F.col(f"c.{c}").alias(c) for c in cols], diff.alias("__d"))
    out = out.filter(F.col("__d") > 0)
    return out.select(KEY, *cols,
                      F.explode(F.array_repeat(F.lit(1), F.col("__d").cast("int"))).alias("__x")).drop("__x")

