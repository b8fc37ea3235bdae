"""Query forms on Spark: SELECT, ASK, CONSTRUCT and DESCRIBE over a compiled algebra expression.

``run_query`` compiles the plan's algebra, applies the form and collects the (small) answer to the driver as the
result values of :mod:`rspark.results`. ``select_frame`` gives the SELECT answer as a Spark DataFrame instead,
for results that should stay distributed.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.expr import Call, PathMod, QuadPattern
from rspark.algebra.ops import QueryForm, QueryPlan
from rspark.errors import NotSupportedError
from rspark.model import codec as E
from rspark.model.terms import BlankNode, QuotedTriple, Variable
from rspark.results import BooleanResult, DatasetResult, GraphResult, SolutionSequence
from rspark.spark.expr.compile import ExprEnv
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.compiler import Compiler, DatasetView
from rspark.spark.sparql.solutions import Solutions, var_col


def _is_iri(col: Column) -> Column:
    return col.startswith("<") & ~col.startswith("<< ")


def _is_bnode(col: Column) -> Column:
    return col.startswith("_:")


def _is_literal(col: Column) -> Column:
    return col.startswith('"')


def make_env(base_iri: str | None = None):
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return ExprEnv(now=now, base_iri=base_iri)


def solutions_of(spark, plan: QueryPlan, dataset: DatasetView, env=None) -> tuple[Compiler, Solutions]:
    comp = Compiler(spark, dataset, env or make_env(plan.base))
    return comp, comp.compile(plan.op)


def select_frame(sols: Solutions, names: list[str], facets: str | None = None) -> DataFrame:
    """The solutions as a DataFrame of encoded terms, one column per projected variable, in ORDER BY order
    (``facets``: the session's facets UDF, :attr:`rspark.spark.expr.compile.ExprEnv.facets`).

    Ordered answers are one partition, sorted by one task on their precomputed sort keys: they go to the driver in
    that order. A global sort (``orderBy``) would first run a job computing the whole plan once more, to sample the
    keys for its range partitioning."""
    df = sols.df
    if sols.order:
        keys, orders = S.sort_key_columns(sols, facets)
        df = df.withColumns(keys).repartition(1).sortWithinPartitions(*orders)
    return df.select(*[F.col(var_col(n)).alias(n) if n in sols.vars else F.lit(None).cast("string").alias(n)
                       for n in names])


def projected_names(sols: Solutions) -> list[str]:
    """The solution variables a SELECT shows (not blank-node or internal variables)."""
    return [v for v in sols.vars if not v.startswith("_:") and not v.startswith(".") and not v.startswith("?")]


def run_query(spark, plan: QueryPlan, dataset: DatasetView, env=None):
    """Evaluate a (non-continuous) query; returns SolutionSequence, BooleanResult, GraphResult, or DatasetResult
    (a CONSTRUCT whose template has GRAPH blocks)."""
    return prepare_query(spark, plan, dataset, env).execute()


class PreparedQuery:
    """A query compiled into its Spark plan once, to be executed any number of times (:meth:`execute`). Every
    execution is a new Spark query over the analysed plan: optimised, planned and run afresh over the data as it
    is, so only the building and analysis of the DataFrame plan (a few tenths of a second for a query with
    aggregates: PySpark analyses each DataFrame operation as it is built) is saved. ``reusable`` is False when
    executing it twice could differ from compiling it twice: the query reads NOW() or calls RAND(), UUID(),
    STRUUID() or BNODE() (values fixed when the plan is built or analysed), a ``*`` / ``+`` property path (its
    closure is computed while compiling), or is a DESCRIBE (computed the same way)."""

    def __init__(self, plan: QueryPlan, run, reusable: bool) -> None:
        self.plan = plan
        self._run = run
        self.reusable = reusable

    def execute(self):
        return self._run()


_VOLATILE = frozenset({"NOW", "RAND", "UUID", "STRUUID", "BNODE"})


def reusable(plan: QueryPlan) -> bool:
    """Whether a compiled plan of this query may be executed again (see :class:`PreparedQuery`)."""
    if plan.form == QueryForm.DESCRIBE:
        return False
    for node in ops.descendants(plan.op):
        if isinstance(node, Call) and node.name in _VOLATILE:
            return False
        if isinstance(node, ops.Service):  # the endpoint's answer is read when the query is compiled
            return False
        if isinstance(node, PathMod) and node.mod in ("*", "+"):
            return False
    return True


def prepare_query(spark, plan: QueryPlan, dataset: DatasetView, env=None) -> PreparedQuery:
    """Compile a (non-continuous) query into a :class:`PreparedQuery`."""
    comp, sols = solutions_of(spark, plan, dataset, env)
    again = reusable(plan)
    if plan.form == QueryForm.SELECT:
        names = projected_names(sols)
        frame = select_frame(sols, names, comp.env.facets)
        ordered = bool(sols.order)

        def run():
            rows = _fresh(frame, again).collect()
            out = [{n: E.decode(row[i]) for i, n in enumerate(names) if row[i] is not None} for row in rows]
            return SolutionSequence(names, out, ordered=ordered)
    elif plan.form == QueryForm.ASK:
        def run():
            return BooleanResult(not _fresh(sols.df, again).isEmpty())
    elif plan.form == QueryForm.CONSTRUCT:
        frame = construct_frame(sols, plan.template)
        graphs = has_graphs(plan.template)

        def run():
            rows = _fresh(frame, again).collect()
            return DatasetResult(decode_quads(rows)) if graphs else GraphResult(_decode_triples(rows))
    elif plan.form == QueryForm.DESCRIBE:
        def run():
            return GraphResult(_decode_triples(describe_frame(comp, sols, plan.describe).collect()))
    else:
        raise NotSupportedError(f"query form {plan.form}")
    return PreparedQuery(plan, run, again)


def _fresh(df: DataFrame, reused: bool) -> DataFrame:
    """A new Spark query over ``df``'s analysed plan (a DataFrame keeps the physical plan of its first action,
    and with it the results of its shuffles: a new one is optimised and run afresh)."""
    return df.select("*") if reused else df


def _decode_triples(rows) -> list:
    return [(E.decode(r[0]), E.decode(r[1]), E.decode(r[2])) for r in rows]


def decode_quads(rows, at: int = 0) -> list:
    """(s, p, o, g) terms of rows holding encoded s, p, o, g from column ``at`` (g NULL: the default graph)."""
    return [(E.decode(r[at]), E.decode(r[at + 1]), E.decode(r[at + 2]),
             None if r[at + 3] is None else E.decode(r[at + 3])) for r in rows]


# ---------------------------------------------------------------------------------------------------- CONSTRUCT


def _template_term(term, sols: Solutions, rid: Column) -> Column:
    if isinstance(term, Variable):
        return F.col(var_col(term.name)) if term.name in sols.vars else F.lit(None).cast("string")
    if isinstance(term, BlankNode):
        return F.concat(F.lit("_:c"), rid, F.lit("_" + term.id))
    if isinstance(term, QuotedTriple):
        s = _template_term(term.subject, sols, rid)
        p = _template_term(term.predicate, sols, rid)
        o = _template_term(term.object, sols, rid)
        return F.when(_valid(s, p, o), F.concat(F.lit("<< "), s, F.lit(" "), p, F.lit(" "), o, F.lit(" >>")))
    return F.lit(E.encode(term))


def _valid(s: Column, p: Column, o: Column) -> Column:
    return (s.isNotNull() & ~_is_literal(s) & p.isNotNull() & _is_iri(p) & o.isNotNull())


def has_graphs(template) -> bool:
    """Whether a CONSTRUCT template has ``GRAPH g { ... }`` blocks (its output is then quads, not triples)."""
    return any(isinstance(t, QuadPattern) for t in template or ())


def construct_frame(sols: Solutions, template, row_id: Column | None = None) -> DataFrame:
    """The CONSTRUCT graph as a DataFrame (s, p, o) of encoded terms, distinct; blank nodes fresh per solution.
    A template with GRAPH blocks gives quads (s, p, o, g), ``g`` NULL for the default graph; a quad whose graph is
    unbound, a literal or a quoted triple is left out, like a triple with an unbound or ill-placed term.
    ``row_id``: the string that names a solution's blank nodes (default: a fresh number per solution)."""
    rid_col = row_id if row_id is not None else F.monotonically_increasing_id().cast("string")
    spark_df = sols.df.withColumn("__rid", rid_col)
    rid = F.col("__rid")
    keys = list(sols.keys)
    quads = has_graphs(template)
    cols = ["s", "p", "o"] + (["g"] if quads else [])
    if not template:
        return spark_df.limit(0).select(*keys, *[F.lit("").alias(c) for c in cols])
    structs = []
    for t in template:
        fields = [_template_term(t.subject, sols, rid).alias("s"), _template_term(t.predicate, sols, rid).alias("p"),
                  _template_term(t.object, sols, rid).alias("o")]
        if quads:
            graph = t.graph if isinstance(t, QuadPattern) else None
            fields.append((_template_term(graph, sols, rid) if graph is not None else F.lit(None).cast("string"))
                          .alias("g"))
        structs.append(F.struct(*fields))
    exploded = spark_df.select(*keys, F.explode(F.array(*structs)).alias("t")).select(*keys, *[f"t.{c}" for c in cols])
    valid = _valid(F.col("s"), F.col("p"), F.col("o"))
    if quads:
        g = F.col("g")
        valid = valid & (g.isNull() | _is_iri(g) | _is_bnode(g))
    return exploded.filter(valid).distinct()


# ----------------------------------------------------------------------------------------------------- DESCRIBE


def describe_frame(comp: Compiler, sols: Solutions, targets) -> DataFrame:
    """DESCRIBE: the concise bounded description of each resource: its triples in the default graph, and
    recursively those of the blank nodes they lead to."""
    parts = []
    for t in targets or ():
        if isinstance(t, Variable):
            if t.name in sols.vars:
                parts.append(sols.df.select(F.col(var_col(t.name)).alias("r")))
        else:
            parts.append(comp.spark.range(1).select(F.lit(E.encode(t)).alias("r")))
    if targets is None:  # DESCRIBE *
        for v in projected_names(sols):
            parts.append(sols.df.select(F.col(var_col(v)).alias("r")))
    default = comp.dataset.default()
    if not parts:
        return default.limit(0).select("s", "p", "o")
    resources = parts[0]
    for p in parts[1:]:
        resources = resources.unionByName(p)
    return bounded_description(resources, lambda rs: default.join(rs, default.s == rs.r, "left_semi"))


DESCRIBE_DEPTH = 32  # blank-node hops followed from a described resource


def bounded_description(resources: DataFrame, triples_of, keys: tuple[str, ...] = ()) -> DataFrame:
    """The concise bounded descriptions of ``resources`` (columns ``keys`` and ``r``): ``triples_of(rs)`` gives
    the triples ``(keys, s, p, o)`` whose subject is one of ``rs`` (``keys`` and ``r``), and the blank nodes those
    lead to are described in turn, up to DESCRIBE_DEPTH hops. Static DESCRIBE has no key; a continuous one is keyed
    by the instant."""
    resources = resources.filter(F.col("r").isNotNull()).distinct().localCheckpoint()
    found = triples_of(resources).localCheckpoint()
    frontier = found
    for _ in range(DESCRIBE_DEPTH):
        nxt = frontier.filter(_is_bnode(F.col("o"))).select(*keys, F.col("o").alias("r")).distinct()
        new = triples_of(nxt).join(found, [*keys, "s", "p", "o"], "left_anti").localCheckpoint()
        if new.isEmpty():
            break
        found = found.unionByName(new).localCheckpoint()
        frontier = new
    return found.distinct()
