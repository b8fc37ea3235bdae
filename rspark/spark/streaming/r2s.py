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
    instants (the driver holds them): each one's next instant is a small local relation joined in, which moves an
    instant's rows to the next instant, where they are the previous rows subtracted."""
    try:
        kind = setting(R2S, str(kind or R2S.RSTREAM).upper())
    except ValueError as exc:
        raise RsparkError(f"R2S operator {exc}") from None
    if kind == R2S.RSTREAM:
        return df
    ordered = sorted({int(t) for t in instants})
    pairs = local_frame(df.sparkSession, list(zip(ordered[:-1], ordered[1:])), f"{KEY} long, __next long")
    counts = df.groupBy(KEY, *cols).agg(F.count(F.lit(1)).alias("__n"))
    # each instant's counts twice: at their instant (current) and moved to the instant that follows it (previous),
    # then summed per (instant, row): the relation is computed (and planned) once, not once per side of a join
    both = counts.join(F.broadcast(pairs), KEY, "left").select(
        *cols, F.explode(F.array(
            F.struct(F.col(KEY).alias("t"), F.col("__n").alias("cur"), F.lit(0).cast("long").alias("old")),
            F.struct(F.col("__next").alias("t"), F.lit(0).cast("long").alias("cur"), F.col("__n").alias("old")),
        )).alias("__e"))
    both = both.filter(F.col("__e.t").isNotNull())
    summed = both.groupBy(F.col("__e.t").alias(KEY), *cols).agg(F.sum("__e.cur").alias("__c"),
                                                                 F.sum("__e.old").alias("__o"))
    diff = F.col("__c") - F.col("__o") if kind == R2S.ISTREAM else F.col("__o") - F.col("__c")
    out = summed.select(KEY, *cols, diff.alias("__d")).filter(F.col("__d") > 0)
    return out.select(KEY, *cols,
                      F.explode(F.array_repeat(F.lit(1), F.col("__d").cast("int"))).alias("__x")).drop("__x")

