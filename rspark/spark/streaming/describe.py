"""DESCRIBE in a continuous query: at every instant, the concise bounded description of each resource the query
names or binds there, read from the default graph of the RSP-QL dataset at that instant (the static default graph
and the content of every FROM STREAM window, C-SPARQL's merged windows): the resource's triples there, and
recursively those of the blank nodes they lead to, as ``rspark sparql`` describes over static data
(``rspark.spark.sparql.query.describe_frame``). A named window's content is not in the default graph, so a
resource bound from ``WINDOW :w { ... }`` is described by the static data and the merged windows alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.model import codec as E
from rspark.model.terms import Variable
from rspark.spark.sparql.query import bounded_description, projected_names
from rspark.spark.sparql.solutions import Solutions, var_col
from rspark.spark.streaming.keys import KEY


def describe_frame(sols: Solutions, targets, static_default: DataFrame,
                   merged: Sequence[Callable[[], DataFrame]]) -> DataFrame:
    """The descriptions ``(__t, s, p, o)`` at every instant of ``sols`` (solutions keyed by the instant, after
    R2S). ``targets``: the IRIs and variables DESCRIBE names (None: ``DESCRIBE *``, the projected variables);
    ``merged``: the FROM STREAM windows' content builders ``(__t, s, p, o)``."""
    instants = sols.df.select(KEY).distinct()
    parts = []
    for t in targets if targets is not None else [Variable(v) for v in projected_names(sols)]:
        if isinstance(t, Variable):
            if t.name in sols.vars:
                parts.append(sols.df.select(KEY, F.col(var_col(t.name)).alias("r")))
        else:  # an IRI: described at every instant the query has a solution
            parts.append(instants.select(KEY, F.lit(E.encode(t)).alias("r")))
    if not parts:
        return sols.df.select(KEY, *[F.lit(None).cast("string").alias(c) for c in ("s", "p", "o")]).limit(0)
    resources = reduce(DataFrame.unionByName, parts)
    streamed = [build().select(KEY, "s", "p", "o") for build in merged]

    def triples_of(rs: DataFrame) -> DataFrame:
        """The default graph's triples at each instant whose subject is one of ``rs`` ``(__t, r)``."""
        static = rs.join(static_default.select("s", "p", "o"), F.col("r") == F.col("s")).select(KEY, "s", "p", "o")
        found = [static] + [rs.join(w, (rs[KEY] == w[KEY]) & (F.col("r") == w["s"]))
                            .select(rs[KEY], w["s"], w["p"], w["o"]) for w in streamed]
        return reduce(DataFrame.unionByName, found).distinct()

    return bounded_description(resources, triples_of, (KEY,))
