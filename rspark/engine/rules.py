"""EP-SPARQL's CONSTRUCT rules (EP-SPARQL, Sec. 4.2): in a replay, a CONSTRUCT query with EP-SPARQL operators
and no REGISTER is a rule, and the queries of the replay read the stream it reads enriched with what it derives,
iterated to a fixpoint (the Q-closure of the stream).

Each derived triple occurrence carries the interval [start, end] of the solution that built it, and enters the
stream at ``end``, when it is detected (timewise monotonic: nothing derived ever changes an earlier answer). The
closure is computed on the whole stream, as EP-SPARQL defines it (a rule's window names the stream it reads), once
per replay: each round evaluates every rule over the occurrences so far in one Spark plan (a single instant that
holds them all), adds the new occurrences, and stops when a round adds none, or fails after ``MAX_ROUNDS``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.ops import QueryForm
from rspark.cep.patterns import END, START, has_interval_joins
from rspark.errors import NotSupportedError, RsparkError
from rspark.model import codec as E
from rspark.spark.frames import local_frame
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.query import construct_frame, make_env
from rspark.spark.sparql.solutions import var_col
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.r2r import StreamCompiler, StreamContext, StreamDataset, WindowContent, now_sql
from rspark.spark.streaming.stream import Stream

log = logging.getLogger("rspark")

MAX_ROUNDS = 16
DERIVED_SEQ = 1 << 40  # derived occurrences come after every element of their timestamp


def is_rule(plan: ops.QueryPlan) -> bool:
    """A CONSTRUCT with EP-SPARQL operators that registers nothing: its output feeds the stream it reads."""
    return plan.form == QueryForm.CONSTRUCT and plan.register is None and has_interval_joins(plan.op)


def close_streams(spark, static, profile, streams: Mapping[str, Stream],
                  rules: list[tuple[ops.QueryPlan, str]]) -> dict[str, Stream]:
    """Each stream the rules read, by IRI, as its Q-closure under them. ``static``: a query's static dataset;
    ``profile``: the engine profile the rules are evaluated under."""
    by_stream: dict[str, list] = {}
    for plan, label in rules:
        iris = {d.stream.value for d in plan.dataset.windows}
        if len(iris) != 1:
            raise NotSupportedError(f"{label}: a CONSTRUCT rule reads one stream (its output joins that stream); "
                                    f"this one reads {len(iris)}")
        by_stream.setdefault(iris.pop(), []).append((plan, label))
    closed = {}
    for iri, group in by_stream.items():
        if iri not in streams:
            raise RsparkError(f"{group[0][1]}: unknown stream <{iri}>")
        closed[iri] = closure(spark, static, profile, streams[iri], group)
    return closed


def closure(spark, static, profile, src: Stream, rules: list) -> Stream:
    occ = src.quads.select("s", "p", "o", F.col("ts").alias("start"), F.col("ts").alias("end"))
    occ = occ.distinct().localCheckpoint()
    derived_all = None
    for round_no in range(1, MAX_ROUNDS + 1):
        derived = None
        for plan, label in rules:
            dataset = static(plan)
            if dataset.versions:
                raise NotSupportedError(f"{label}: a CONSTRUCT rule over graphs that change over time (a rule "
                                        "derives from every occurrence at once, with no instant to pick a "
                                        "version by)")
            part = _derive(spark, dataset, profile, plan, label, src, occ)
            derived = part if derived is None else derived.unionByName(part)
        new = derived.distinct().join(occ, ["s", "p", "o", "start", "end"], "left_anti").localCheckpoint()
        added = new.count()
        log.info("CONSTRUCT rules on <%s>: round %d derived %d new triple occurrences", src.iri, round_no, added)
        if added == 0:
            break
        occ = occ.unionByName(new).localCheckpoint()
        derived_all = new if derived_all is None else derived_all.unionByName(new)
    else:
        raise RsparkError(f"the CONSTRUCT rules over <{src.iri}> do not reach a fixpoint in {MAX_ROUNDS} rounds: "
                          "each round derives new triple occurrences (rules that build new terms, with BIND or "
                          "functions, out of the terms they derived)")
    if derived_all is None:
        return src
    element = F.concat(F.lit("<urn:rspark:derived:"), F.xxhash64("s", "p", "o", "start", "end").cast("string"),
                       F.lit(">"))
    derived = derived_all.select("s", "p", "o", element.alias("element"), F.col("end").alias("ts"),
                                 (F.lit(DERIVED_SEQ) + F.monotonically_increasing_id()).alias("seq"),
                                 F.col("start").alias("start")).localCheckpoint()
    return src.with_derived(derived)


def _derive(spark, static, profile, plan: ops.QueryPlan, label: str, src: Stream,
            occ: DataFrame) -> DataFrame:
    """One evaluation of a rule over all occurrences so far: its triples with their solutions' intervals
    (s, p, o, start, end). Every occurrence is in the rule's windows at one instant (0), FROM STREAM or named."""
    timeline = src.timeline
    at_once = occ.select(F.lit(0).cast("long").alias(KEY), "s", "p", "o", F.col("start").alias("ts0"),
                         F.col("end").alias("ts"))
    content = at_once.select(KEY, "s", "p", "o").distinct()
    window = WindowContent(content=lambda: content, stamps=None, dated=lambda: at_once,
                           graphs=_no_element_graphs(label))
    merged = [window for d in plan.dataset.windows if d.merged or d.name is None]
    named = {E.encode(d.name): window for d in plan.dataset.windows if not (d.merged or d.name is None)}
    env = dataclasses.replace(make_env(plan.base), now_sql=now_sql(timeline))
    domain = local_frame(spark, [(0,)], f"{KEY} long")
    context = StreamContext(timeline, profile, plan.op, domain, interval_mode=True)
    comp = StreamCompiler(spark, StreamDataset(static, merged, named, []), env, context)
    sols = S.align(comp.compile(plan.op), (KEY,), domain)
    if START not in sols.vars:
        raise NotSupportedError(f"{label}: a CONSTRUCT rule's pattern must read the stream")
    df = sols.df.withColumn("__rs", F.col(var_col(START)).cast("long")).withColumn("__re",
                                                                                   F.col(var_col(END)).cast("long"))
    sols = dataclasses.replace(sols, df=df, keys=(*sols.keys, "__rs", "__re"), order=())
    # a solution's blank nodes are named after the solution itself: the same solution derived again in a later
    # round builds the same triples, so a rule with blank nodes in its template reaches its fixpoint too
    ident = F.xxhash64(*[F.col(var_col(v)) for v in sols.vars], "__rs", "__re").cast("string")
    triples = construct_frame(sols, plan.template, row_id=F.concat(F.lit("r"), ident))
    return triples.select("s", "p", "o", F.col("__rs").alias("start"), F.col("__re").alias("end"))


def _no_element_graphs(label: str):
    def refuse() -> DataFrame:
        raise NotSupportedError(f"{label}: GRAPH inside WINDOW in a CONSTRUCT rule (a rule reads the stream's "
                                "triple occurrences, not its elements' graphs)")
    return refuse
