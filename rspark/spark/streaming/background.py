"""Time-varying background graphs as a frame keyed by instant: at each evaluation instant, the version of each
graph valid then (``rspark.rsp.versions``), as ``(__t, g, s, p, o)``.

The versions' spans are computed on the driver in the query's ticks; the instants meet the spans in one range join
of two small relations (instants x versions), and only then the versions' triples join in by version, so a
version's triples are copied to the instants it is valid at, and nothing else is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.errors import RsparkError
from rspark.model.time import Timeline
from rspark.model.timestamps import parse_time
from rspark.rsp.versions import version_spans
from rspark.spark.frames import local_frame
from rspark.spark.sparql.compiler import GraphVersion, memoized
from rspark.spark.streaming.keys import KEY


def version_start(version: GraphVersion, timeline: Timeline) -> int | None:
    """The instant ``version`` is valid from, in ticks of the query's ``timeline`` (None: from the beginning)."""
    if version.since is None:
        return None
    try:
        return parse_time(version.since, timeline)
    except RsparkError as exc:
        name = "the default graph" if version.source == "" else f"graph {version.source}"
        raise RsparkError(f"the version of {name} valid from {version.since}: {exc}") from None


def versions_at(spark, versions: Sequence[GraphVersion], timeline: Timeline,
                domain: DataFrame) -> Callable[[], DataFrame]:
    """A builder of ``(__t, g, s, p, o)``: at each instant of ``domain`` (``(__t)``), the triples of every graph's
    version valid then, in the graph the query reads it as. A graph two versions merge into (two FROM graphs
    with versions) holds each triple once."""
    starts = [version_start(v, timeline) for v in versions]
    spans = version_spans([(v.source, t) for v, t in zip(versions, starts)])
    merged = len({v.graph for v in versions}) < len({(v.source, v.graph) for v in versions})

    def build() -> DataFrame:
        table = local_frame(spark, [(i, v.graph, begin, until) for i, (v, (begin, until))
                                    in enumerate(zip(versions, spans))],
                            "__vi int, g string, __vf long, __vu long")
        at = domain.select(KEY).join(table, (F.col(KEY) >= F.col("__vf")) & (F.col(KEY) < F.col("__vu")))
        triples = None
        for i, v in enumerate(versions):
            part = v.triples().select(F.lit(i).alias("__vi"), "s", "p", "o")
            triples = part if triples is None else triples.unionByName(part)
        out = at.select(KEY, "__vi", "g").join(triples, "__vi").select(KEY, "g", "s", "p", "o")
        return out.distinct() if merged else out

    return memoized(build)
