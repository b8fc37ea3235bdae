"""The algebra compiler: SPARQL 1.1 algebra operators -> Spark DataFrame plans over encoded terms.

Each operator becomes DataFrame operations on :class:`~rspark.spark.sparql.solutions.Solutions`; nothing is collected to
the driver except where SPARQL needs a loop (the fixpoint of ``*``/``+`` paths counts new pairs each round).
The *context* says which graph triple patterns read (the active graph) and which hidden key columns every solution
carries (``GRAPH ?g`` adds the graph as a key, a window replay the evaluation instant), so that one plan answers a
pattern for every graph or instant at once.

One module (about 650 lines): one compiler class, a method per algebra operator; solutions, paths and expressions
are in the sibling modules.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.expr import Aggregate, Call, Exists, FunctionCall
from rspark.errors import NotSupportedError
from rspark.model.codec import encode
from rspark.model.terms import IRI, QuotedTriple, Variable
from rspark.spark import jvm  # (its helpers by module attribute: a test can stand in for a session without them)
from rspark.spark.expr.compile import compile_aggregate, compile_ebv, compile_expr
from rspark.spark.frames import local_frame
from rspark.spark.sparql import federation
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.paths import path_solutions
from rspark.spark.sparql.quoted import decompose_in_place, match_positions
from rspark.spark.sparql.solutions import Names, Solutions, pattern_variable, var_col

# --------------------------------------------------------------------------------------------------- data sources


@dataclass(frozen=True)
class ActiveGraph:
    """What triple patterns scan: ``triples()`` gives a DataFrame with the columns ``keys`` + s, p, o."""

    triples: Callable[[], DataFrame]
    keys: tuple[str, ...] = ()
    label: str = "graph"
    # a stream window's timestamps: (keys, s, p, o, ts), the latest occurrence of each triple (C-SPARQL timestamp())
    stamps: Callable[[], DataFrame] | None = None


@dataclass(frozen=True)
class UnionGraph:
    """A graph made of several parts (a static graph and stream windows): triple patterns scan each part and
    unite the solutions, so static parts stay unkeyed (not copied per instant) until they must be aligned."""

    parts: tuple

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(sorted({k for p in self.parts for k in p.keys}))

    @property
    def label(self) -> str:
        return " + ".join(p.label for p in self.parts)


@dataclass(frozen=True)
class GraphVersion:
    """One version of a background graph that changes over time (RSP-QL's G(t); ``rspark.rsp.versions``):
    ``source``, the graph it is a version of (encoded IRI, "" for the default graph); ``graph``, where the query
    reads it (the same graph, or "" when the query's FROM merges it into its default graph); ``since``, the
    instant it is valid from as given (a number or an ISO 8601 date-time; None: from the beginning);
    ``triples`` gives its (s, p, o)."""

    source: str
    graph: str
    since: object | None
    triples: Callable[[], DataFrame]


@dataclass
class DatasetView:
    """The RDF dataset a query runs against: the default graph, the named graphs, and the quoted-triple table.

    ``default`` gives (s, p, o) of the default graph; ``named`` gives (g, s, p, o) of the named graphs;
    ``quoted`` gives (t, s, p, o), one row per quoted triple term occurring in the data (for RDF-star patterns).
    ``versions``: the versions of the graphs that change over time (:class:`GraphVersion`), which a continuous
    query reads at each instant beside ``default`` and ``named`` (which then leave those graphs out)."""

    default: Callable[[], DataFrame]
    named: Callable[[], DataFrame]
    quoted: Callable[[], DataFrame]
    versions: tuple = ()

    def __post_init__(self) -> None:
        # each frame is built once per query, however many patterns scan it (building one is several JVM calls)
        for name in ("default", "named", "quoted"):
            object.__setattr__(self, name, memoized(getattr(self, name)))


@dataclass(frozen=True)
class Context:
    active: ActiveGraph
    keys: tuple[str, ...] = ()
    domain: DataFrame | None = None  # the distinct key combinations (only when keys is not empty)
    # the named graphs GRAPH reads, when not the dataset's: (keys, g, s, p, o), e.g. a stream window's elements
    graphs: ActiveGraph | None = None


# -------------------------------------------------------------------------------------------------- small helpers


def memoized(make: Callable[[], DataFrame]) -> Callable[[], DataFrame]:
    """``make``, called the first time only."""
    if getattr(make, "_rspark_once", False):
        return make
    box: list[DataFrame] = []

    def get() -> DataFrame:
        if not box:
            box.append(make())
        return box[0]

    get._rspark_once = True  # type: ignore[attr-defined]
    return get


def op_variables(node) -> set[str]:
    """Every variable name mentioned anywhere inside an operator or expression (EXISTS patterns included)."""
    return {x.name for x in ops.descendants(node) if isinstance(x, Variable)}


_INT_MAX = 2**31 - 1  # the largest count Spark's limit() and offset() take


@dataclass(frozen=True)
class Seed(ops.Op):
    """Internal leaf: given solutions (the outer bindings an EXISTS pattern is evaluated against)."""

    sols: object


class _Scope:
    """The ExprScope of the expression compiler over one Solutions (and optional precomputed EXISTS flags)."""

    def __init__(self, resolve: Callable[[str], Column | None], flags: dict[int, str] | None = None,
                 row_id: Callable[[], Column] | None = None, extension=None, names=()) -> None:
        self._resolve, self._flags, self._row_id, self._extension = resolve, flags or {}, row_id, extension
        self._names = tuple(names)

    def all_columns(self) -> list[Column]:
        """The columns of every variable of the solutions (for COUNT(DISTINCT *))."""
        return [self._resolve(n) for n in self._names if not n.startswith(("_:", "#"))]

    def column(self, name: str):
        return self._resolve(name)

    def exists(self, node) -> Column:
        try:
            return F.col(self._flags[id(node)])
        except KeyError:
            raise NotSupportedError("EXISTS inside an OPTIONAL filter or an aggregate") from None

    def row_id(self) -> Column:
        if self._row_id is None:
            return F.monotonically_increasing_id().cast("string")
        return self._row_id()

    def extension(self, call):
        if id(call) in self._flags:  # a value precomputed for this call (a replay's timestamp())
            return F.col(self._flags[id(call)])
        return self._extension(call) if self._extension is not None else None


def expression_nodes(expr, match: Callable[[object], bool], out: list) -> list:
    """Appends to ``out`` the nodes of an expression for which ``match`` holds, outermost first, through function
    calls and aggregates (not into the patterns of EXISTS, nor into a matching node)."""
    if match(expr):
        out.append(expr)
    elif isinstance(expr, (Call, FunctionCall)):
        for a in expr.args:
            expression_nodes(a, match, out)
    elif isinstance(expr, Aggregate) and expr.arg is not None:
        expression_nodes(expr.arg, match, out)
    return out


def _exists_nodes(expr, out: list) -> list:
    return expression_nodes(expr, lambda x: isinstance(x, Exists), out)


# ------------------------------------------------------------------------------------------------------ compiler


def compiles(*kinds: type) -> Callable:
    """Marks a method of a :class:`Compiler` (or of a subclass) as the compilation of the operators of ``kinds``:
    ``method(self, op, ctx) -> Solutions``."""

    def mark(method: Callable) -> Callable:
        method.compiles = kinds  # type: ignore[attr-defined]
        return method

    return mark


def _compiler_table(cls: type) -> dict[type, Callable]:
    """A compiler class's operator table: operator type -> the method compiling it. A method marked with
    :func:`compiles` registers its types; a subclass's method of the same name overrides it (marked or not, as any
    Python override), and a subclass adds operators by marking new methods."""
    kinds: dict[str, tuple[type, ...]] = {}
    for klass in reversed(cls.__mro__):
        for name, attr in vars(klass).items():
            marked = getattr(attr, "compiles", None)
            if marked is not None:
                kinds[name] = marked
    return {kind: getattr(cls, name) for name, marked in kinds.items() for kind in marked}


class Compiler:
    """Compiles algebra operators of one query evaluation into Spark plans.

    :meth:`compile` dispatches on the operator's type through the class's operator table (:func:`compiles`)."""

    _compilers: dict[type, Callable] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._compilers = _compiler_table(cls)

    def __init__(self, spark: SparkSession, dataset: DatasetView, env, extension=None) -> None:
        self.spark = spark
        self.dataset = dataset

        # the session's JVM helpers
        self.env = dataclasses.replace(env, sum_avg=jvm.sum_avg_result(spark), facets=jvm.term_facets(spark))
        self.quoted_parts = jvm.quoted_parts(spark)
        self.extension = extension
        # this compilation's own name counters (hidden columns, graph keys): nothing shared with compilations
        # running in other threads, and the same names for the same query every time (the same plan text)
        self.names = Names()
        self._graph_keys = itertools.count()

    def fresh(self, prefix: str = "t") -> str:
        """A hidden column name unique within this compilation (:class:`~rspark.spark.sparql.solutions.Names`)."""
        return self.names.fresh(prefix)

    # ---------------------------------------------------------------------------------------------- entry points

    def default_context(self) -> Context:
        return Context(ActiveGraph(self.dataset.default, (), "default graph"))

    def compile(self, op: ops.Op, ctx: Context | None = None) -> Solutions:
        ctx = ctx or self.default_context()
        for kind in type(op).__mro__:
            method = self._compilers.get(kind)
            if method is not None:
                return method(self, op, ctx)
        raise NotSupportedError(f"the {type(op).__name__} operator in one-shot SPARQL evaluation")

    # ------------------------------------------------------------------------------------------------- leaves

    def unit(self, ctx: Context) -> Solutions:
        """One empty solution (the same for every key value, so it carries no key)."""
        return Solutions(self.spark.range(1).select(), (), frozenset(), ())

    @compiles(Seed)
    def _op_Seed(self, op: Seed, ctx: Context) -> Solutions:
        return op.sols

    @compiles(ops.Table)
    def _op_Table(self, op: ops.Table, ctx: Context) -> Solutions:
        if op.is_unit:
            return self.unit(ctx)
        names = [v.name for v in op.vars]
        rows = [tuple(encode(t) if t is not None else None for t in row) for row in op.rows]
        schema = ", ".join(f"`{var_col(n)}` string" for n in names) or None
        if not names:
            df = self.spark.range(len(rows)).select()
        else:
            df = local_frame(self.spark, rows, schema)
        bound = frozenset(n for i, n in enumerate(names) if all(r[i] is not None for r in rows))
        return Solutions(df, tuple(names), bound, ())

    @compiles(ops.BGP)
    def _op_BGP(self, op: ops.BGP, ctx: Context) -> Solutions:
        if not op.triples:
            return self.unit(ctx)
        scans = [self.scan_triple(t, ctx) for t in order_patterns(op.triples)]
        result = scans[0]
        for nxt in scans[1:]:
            result = S.join(result, nxt)
        return result

    def source_triples(self, ctx: Context) -> DataFrame:
        """The active graph's triples (keys, s, p, o); the parts of a union source aligned to common keys."""
        if not isinstance(ctx.active, UnionGraph):
            return ctx.active.triples()
        keys = ctx.active.keys
        out = None
        for part in ctx.active.parts:
            df = part.triples()
            missing = [k for k in keys if k not in part.keys]
            if missing:
                df = df.crossJoin(ctx.domain.select(*missing).distinct())
            df = df.select(*keys, "s", "p", "o")
            out = df if out is None else out.unionByName(df)
        return out

    def scan_triple(self, triple, ctx: Context) -> Solutions:
        """One triple pattern: filter the active graph on constants, rename positions to variables."""
        if isinstance(ctx.active, UnionGraph):
            parts = [self.scan_triple(triple, dataclasses.replace(ctx, active=p)) for p in ctx.active.parts]
            keys = S.merge_keys(*[p.keys for p in parts])
            out = S.align(parts[0], keys, ctx.domain)
            for p in parts[1:]:
                out = S.union(out, S.align(p, keys, ctx.domain))
            return out
        keys = ctx.active.keys
        df, positions, quoted = match_positions(ctx.active.triples(), triple, self.fresh)
        cols = [F.col(k) for k in keys] + [F.col(pos).alias(var_col(n)) for n, pos in positions.items()]
        df = df.select(*cols)
        sols = Solutions(df, tuple(positions), frozenset(positions), keys)
        for tmp, term in quoted:
            sols = self._match_quoted(sols, tmp, term, ctx)
        if quoted:
            sols = S.project(sols, [n for n in sols.vars if not n.startswith("__q")])
        return sols

    def align(self, sols: Solutions, keys, ctx: Context) -> Solutions:
        return S.align(sols, tuple(keys), ctx.domain)

    def _match_quoted(self, sols: Solutions, tmp: str, term: QuotedTriple, ctx: Context) -> Solutions:
        """Decompose the quoted-triple term bound to ``tmp`` against the pattern ``term`` (RDF-star): in place with
        the session's JVM helper, else by a join with the dataset's quoted triples (rspark.spark.sparql.quoted)."""
        if self.quoted_parts is not None:
            out, nested = decompose_in_place(sols, tmp, term, self.quoted_parts, self.fresh)
            for inner, part in nested:
                out = self._match_quoted(out, inner, part, ctx)
            return out
        qdf, positions, nested = match_positions(self.dataset.quoted(), term, self.fresh, {"__qt": "t"})
        names = {n: (tmp if n == "__qt" else n) for n in positions}
        qdf = qdf.select(*[F.col(pos).alias(var_col(names[n])) for n, pos in positions.items()])
        q = Solutions(qdf, tuple(names.values()), frozenset(names.values()), ())
        out = S.join(sols, q)
        for inner, part in nested:
            out = self._match_quoted(out, inner, part, ctx)
        return out

    @compiles(ops.PathPattern)
    def _op_PathPattern(self, op: ops.PathPattern, ctx: Context) -> Solutions:
        return path_solutions(self, op, ctx)

    # ------------------------------------------------------------------------------------------ combinations

    @compiles(ops.Join)
    def _op_Join(self, op: ops.Join, ctx: Context) -> Solutions:
        """A chain of Joins (a group's elements: BGPs, windows, GRAPH blocks, subqueries) joined so that each
        step shares a variable with what is joined so far when some element does (Join is associative and
        commutative): textual order otherwise, and no cross product that the query does not force. A BGP beside
        other elements is split into its triple patterns (a BGP is the join of its patterns; its blank nodes are
        variables named by their labels, the same in every piece), so that a window's matches join a static
        pattern on their shared variable instead of all the static BGP's matches."""
        parts = [p for p in _join_operands(op) if not (isinstance(p, ops.Table) and p.is_unit)]
        if len(parts) > 1:  # a BGP's triple patterns join with the other elements one by one
            parts = [u for p in parts for u in (
                [ops.BGP((t,)) for t in order_patterns(p.triples)] if isinstance(p, ops.BGP) and p.triples else [p])]
        if not parts:
            return self.compile(op.left, ctx)
        compiled = [self.compile(p, ctx) for p in parts]
        if len(compiled) <= 2 or any(c.order for c in compiled):
            order = list(range(len(compiled)))
        else:
            order = _join_order(compiled)
        acc = compiled[order[0]]
        for i in order[1:]:
            acc = S.join(acc, compiled[i])
        if order != sorted(order):  # the variables in the order the query wrote them
            names = list(dict.fromkeys(v for c in compiled for v in c.vars))
            acc = acc.with_df(acc.df.select(*acc.keys, *[var_col(v) for v in names]), vars=tuple(names))
        return acc

    @compiles(ops.LeftJoin)
    def _op_LeftJoin(self, op: ops.LeftJoin, ctx: Context) -> Solutions:
        left, right = self.compile(op.left, ctx), self.compile(op.right, ctx)
        left = self.align(left, right.keys, ctx)
        condition = None
        if op.expr is not None:
            exprs = op.expr if isinstance(op.expr, tuple) else (op.expr,)
            if any(_exists_nodes(e, []) for e in exprs):
                return self._left_join_with_exists(left, right, exprs, ctx)

            def condition(resolve):
                scope = self.condition_scope(resolve)
                out = None
                for e in exprs:
                    c = F.coalesce(compile_ebv(e, scope, self.env), F.lit(False))
                    out = c if out is None else out & c
                return out

        return S.join(left, right, "left", condition)

    def _left_join_with_exists(self, left: Solutions, right: Solutions, exprs, ctx: Context) -> Solutions:
        """LeftJoin(left, right, expr) for a filter that reads EXISTS (SPARQL 1.1, section 18.5): Filter(expr,
        Join(left, right)) and the left solutions none of whose compatible right solutions passes the filter. The
        filter's EXISTS is evaluated on the joined solutions as in any FILTER; a left solution is known among the
        joined ones by a copy of its own columns (the join may bind a variable the left left unbound), compared
        null-safely, so two equal left solutions (a bag) stand or fall together, as they must."""
        copies = {v: self.fresh("lj") for v in left.vars}
        df = left.df.select(*left.columns(), *[F.col(var_col(v)).alias(var_col(c)) for v, c in copies.items()])
        tagged = dataclasses.replace(left, df=df, vars=left.vars + tuple(copies.values()),
                                     bound=left.bound | {copies[v] for v in left.bound})
        joined, flags = self.with_exists(S.join(tagged, right), exprs, ctx)
        scope = self.scope(joined, flags)
        kept = joined.df
        for e in exprs:
            kept = kept.filter(F.coalesce(compile_ebv(e, scope, self.env), F.lit(False)))
        kept = kept.drop(*flags.values())
        passed = kept.select(*[F.col(k).alias(f"{k}#m") for k in left.keys],
                             *[F.col(var_col(c)).alias(f"{var_col(c)}#m") for c in copies.values()]).distinct()
        same = [F.col(k).eqNullSafe(F.col(f"{k}#m")) for k in left.keys]
        same += [F.col(var_col(v)).eqNullSafe(F.col(f"{var_col(c)}#m")) for v, c in copies.items()]
        alone = left.df.join(passed, functools.reduce(Column.__and__, same), "left_anti") if same else \
            left.df.join(passed.limit(1), F.lit(True), "left_anti")
        out_vars = tuple(v for v in joined.vars if v not in set(copies.values()))
        matched = S.project(joined.with_df(kept), out_vars)
        return S.union(matched, left.with_df(alone))

    @compiles(ops.Union)
    def _op_Union(self, op: ops.Union, ctx: Context) -> Solutions:
        left, right = self.compile(op.left, ctx), self.compile(op.right, ctx)
        keys = S.merge_keys(left.keys, right.keys)
        return S.union(self.align(left, keys, ctx), self.align(right, keys, ctx))

    @compiles(ops.Minus)
    def _op_Minus(self, op: ops.Minus, ctx: Context) -> Solutions:
        left, right = self.compile(op.left, ctx), self.compile(op.right, ctx)
        return S.minus(self.align(left, right.keys, ctx), right)

    # ---------------------------------------------------------------------------------------------- expressions

    def condition_scope(self, resolve: Callable[[str], Column | None]) -> _Scope:
        """The expression scope of a join condition over a merged row (``resolve``: variable name -> column)."""
        return _Scope(resolve, extension=self.extension)

    def scope(self, sols: Solutions, flags: dict[int, str] | None = None) -> _Scope:
        names = set(sols.vars)
        return _Scope(lambda n: sols.col(n) if n in names else None, flags, extension=self.extension,
                      names=sols.vars)

    def with_exists(self, sols: Solutions, exprs, ctx: Context) -> tuple[Solutions, dict[int, str]]:
        """Precompute a boolean column for every EXISTS in ``exprs`` (the outer solutions are substituted into
        the pattern by joining them in below its filters)."""
        flags: dict[int, str] = {}
        nodes: list = []
        for e in exprs:
            _exists_nodes(e, nodes)
        for node in nodes:
            flag = self.fresh("ex")
            mentioned = op_variables(node.pattern)
            outer = [v for v in sols.vars if v in mentioned]
            if not outer:
                inner = self.compile(node.pattern, ctx)
                sols = self.align(sols, inner.keys, ctx)
                if inner.keys:
                    hit = inner.df.select(*inner.keys).distinct().withColumn(flag, F.lit(True))
                    df = sols.df.join(hit, list(inner.keys), "left")
                else:
                    hit = inner.df.limit(1).select(F.lit(True).alias(flag))
                    df = sols.df.join(hit, F.lit(True), "left")
            else:
                sid = "#sid" + flag
                for _ in range(2):  # a second round when the pattern reads keyed data the outer solutions lack
                    ident = F.to_json(F.struct(*[F.col(var_col(v)).alias(v) for v in outer]))
                    seed_df = sols.df.select(*sols.keys, *[var_col(v) for v in outer]).distinct()
                    seed_df = seed_df.withColumn(var_col(sid), ident)
                    seed = Solutions(seed_df, tuple(outer) + (sid,),
                                     frozenset(v for v in outer if v in sols.bound) | {sid}, sols.keys)
                    inner = self.compile(_push_seed(node.pattern, Seed(seed)), ctx)
                    if set(inner.keys) <= set(sols.keys):
                        break
                    sols = self.align(sols, inner.keys, ctx)
                hit = inner.df.select(*sols.keys, F.col(var_col(sid)).alias("__sid")).distinct()
                hit = hit.withColumn(flag, F.lit(True))
                df = sols.df.withColumn("__sid", ident).join(hit, list(sols.keys) + ["__sid"], "left").drop("__sid")
            df = df.withColumn(flag, F.coalesce(F.col(flag), F.lit(False)))
            flags[id(node)] = flag
            sols = sols.with_df(df)
        return sols, flags

    @compiles(ops.Filter)
    def _op_Filter(self, op: ops.Filter, ctx: Context) -> Solutions:
        sols = self.compile(op.op, ctx)
        sols, flags = self.with_exists(sols, op.exprs, ctx)
        scope = self.scope(sols, flags)
        df = sols.df
        for e in op.exprs:
            df = df.filter(F.coalesce(compile_ebv(e, scope, self.env), F.lit(False)))
        if flags:
            df = df.drop(*flags.values())
        return sols.with_df(df)

    @compiles(ops.Extend)
    def _op_Extend(self, op: ops.Extend, ctx: Context) -> Solutions:
        sols = self.compile(op.op, ctx)
        sols, flags = self.with_exists(sols, (op.expr,), ctx)
        value = compile_expr(op.expr, self.scope(sols, flags), self.env)
        names = sols.vars + ((op.var.name,) if op.var.name not in sols.vars else ())
        bound = sols.bound | ({op.var.name} if isinstance(op.expr, Variable) and op.expr.name in sols.bound else set())
        # one select (each DataFrame operation is analysed as it is built): the new column in place, the EXISTS
        # flags left out, the hidden order columns last
        cols = [value.alias(var_col(v)) if v == op.var.name else F.col(var_col(v)) for v in names]
        df = sols.df.select(*sols.keys, *cols, *[c for c, _ in sols.order])
        return dataclasses.replace(sols, df=df, vars=names, bound=frozenset(bound))

    # ---------------------------------------------------------------------------------------- graphs (datasets)

    @compiles(ops.Graph)
    def _op_Graph(self, op: ops.Graph, ctx: Context) -> Solutions:
        """GRAPH over the dataset's named graphs, or over the context's (a window's elements, keyed by instant:
        then the graph names depend on the key, and a graph exists only where the window holds it)."""
        iri = None if isinstance(op.name, Variable) else encode(op.name)
        named, gkeys = self.named_graphs(ctx, iri)
        if iri is not None:
            source = ActiveGraph(lambda: named().filter(F.col("g") == iri).select(*gkeys, "s", "p", "o"), gkeys,
                                 f"graph {iri}")
            inner = self.compile(op.op, dataclasses.replace(ctx, active=source))
            # GRAPH <g> {} has one solution only when <g> is a named graph of the dataset
            if gkeys:
                exists = named().filter(F.col("g") == iri).select(*gkeys).distinct()
            else:
                exists = named().filter(F.col("g") == iri).limit(1).select()
            return S.join(inner, Solutions(exists, (), frozenset(), gkeys))
        key = f"__g{next(self._graph_keys)}"
        if gkeys:
            graphs = named().select(*gkeys, F.col("g").alias(key)).distinct()
            domain = graphs if ctx.domain is None else ctx.domain.join(graphs, list(gkeys))
        else:
            graphs = self._graph_names().withColumnRenamed("g", key)
            domain = graphs if ctx.domain is None else ctx.domain.crossJoin(graphs)
        keys = S.merge_keys(ctx.keys, gkeys, (key,))
        source = ActiveGraph(lambda: named().select(*gkeys, F.col("g").alias(key), "s", "p", "o"),
                             S.merge_keys(gkeys, (key,)), "named graphs")
        inner = self.compile(op.op, dataclasses.replace(ctx, active=source, keys=keys, domain=domain))
        if gkeys and key not in inner.keys:  # no pattern read a graph: one copy per graph the key's value has
            shared = [k for k in inner.keys if k in domain.columns]
            dom = domain.select(*shared, *[k for k in keys if k not in inner.keys]).distinct()
            df = inner.df.join(dom, shared) if shared else inner.df.crossJoin(dom)
            inner = inner.with_df(df.select(*keys, *[var_col(v) for v in inner.vars], *[c for c, _ in inner.order]),
                                  keys=keys)
        inner = S.align(inner, (key,), domain)
        name = op.name.name
        df = inner.df
        if name in inner.vars:
            df = df.filter(F.col(var_col(name)).isNull() | (F.col(var_col(name)) == F.col(key)))
            df = df.withColumn(var_col(name), F.col(key))
            names = inner.vars
        else:
            df = df.withColumn(var_col(name), F.col(key))
            names = inner.vars + (name,)
        out_keys = tuple(k for k in inner.keys if k != key)
        df = df.select(*out_keys, *[var_col(v) for v in names], *[c for c, _ in inner.order])
        return Solutions(df, names, inner.bound | {name}, out_keys, inner.order)

    def named_graphs(self, ctx: Context, iri: str | None) -> tuple[Callable[[], DataFrame], tuple[str, ...]]:
        """What GRAPH ``iri`` (None: GRAPH ?g) reads: a builder of (keys, g, s, p, o) and its keys: the context's
        graphs (a window's elements) when it has them, else the dataset's named graphs."""
        if ctx.graphs is not None:
            return ctx.graphs.triples, tuple(ctx.graphs.keys)
        return self.dataset.named, ()

    def _graph_names(self) -> DataFrame:
        return self.dataset.named().select("g").distinct()

    @compiles(ops.Service)
    def _op_Service(self, op: ops.Service, ctx: Context) -> Solutions:
        """The endpoint's solutions of the pattern (``rspark.spark.sparql.federation``), as an inline table;
        SERVICE SILENT gives the one empty solution when the endpoint fails."""
        if not isinstance(op.name, IRI) or op.query is None:
            raise NotSupportedError("SERVICE with a variable endpoint (SPARQL 1.1 Federated Query leaves it open)")
        try:
            names, rows = federation.call(op.name.value, op.query)
        except federation.ServiceCallError as exc:
            if not op.silent:
                raise
            federation.log.warning("%s (SERVICE SILENT: one empty solution instead)", exc)
            return self.unit(ctx)
        table = ops.Table(tuple(Variable(n) for n in names), tuple(tuple(r.get(n) for n in names) for r in rows))
        return self._op_Table(table, ctx)

    # --------------------------------------------------------------------------------------- solution modifiers

    @compiles(ops.Project)
    def _op_Project(self, op: ops.Project, ctx: Context) -> Solutions:
        return S.project(self.compile(op.op, ctx), [v.name for v in op.vars])

    @compiles(ops.Distinct)
    def _op_Distinct(self, op: ops.Distinct, ctx: Context) -> Solutions:
        return S.distinct(self.compile(op.op, ctx), self.env.facets)

    @compiles(ops.Reduced)
    def _op_Reduced(self, op: ops.Reduced, ctx: Context) -> Solutions:
        return S.distinct(self.compile(op.op, ctx), self.env.facets)

    @compiles(ops.OrderBy)
    def _op_OrderBy(self, op: ops.OrderBy, ctx: Context) -> Solutions:
        sols = self.compile(op.op, ctx)
        sols, flags = self.with_exists(sols, tuple(c.expr for c in op.conditions), ctx)
        scope = self.scope(sols, flags)
        df = sols.df.drop(*[c for c, _ in sols.order])
        order = []
        for cond in op.conditions:
            name = self.fresh("o")
            df = df.withColumn(name, compile_expr(cond.expr, scope, self.env))
            order.append((name, cond.ascending))
        if flags:
            df = df.drop(*flags.values())
        return dataclasses.replace(sols, df=df, order=tuple(order))

    @compiles(ops.Slice)
    def _op_Slice(self, op: ops.Slice, ctx: Context) -> Solutions:
        sols = self.compile(op.op, ctx)
        start, length = op.start or 0, op.length
        if sols.keys or start > _INT_MAX:  # per key (an instant, a graph), or an OFFSET beyond Spark's offset()
            order = S.sort_columns(sols, self.env.facets) or [F.lit(1)]
            rank = F.row_number().over(Window.partitionBy(*sols.keys).orderBy(*order))
            df = sols.df.withColumn("__rank", rank)
            cond = F.col("__rank") > start
            if length is not None:
                cond = cond & (F.col("__rank") <= start + length)
            return sols.with_df(df.filter(cond).drop("__rank"))
        df = sols.df
        keys: dict = {}
        if sols.order:
            keys, orders = S.sort_key_columns(sols, self.env.facets)
            df = df.withColumns(keys).orderBy(*orders)
        if start:
            df = df.offset(start)
        if length is not None:  # Spark's limit + offset is a 32-bit count: a longer LIMIT keeps every row anyway
            df = df.limit(min(length, _INT_MAX - start))
        return sols.with_df(df.drop(*keys) if keys else df)

    # ----------------------------------------------------------------------------------------------- grouping

    @compiles(ops.Group)
    def _op_Group(self, op: ops.Group, ctx: Context) -> Solutions:
        sols = self.compile(op.op, ctx)
        scope = self.scope(sols)
        df, key_cols, names = self.group_keys(op, sols)
        aggs = []
        pre: dict = {}  # per-row values the aggregates read, computed once per row before grouping
        for var, agg in op.aggregates:
            aggs.append(compile_aggregate(agg, scope, self.env, pre).alias(var_col(var.name)))
        if pre:
            df = df.withColumns(pre)
        group_by = list(sols.keys) + key_cols
        if aggs:
            out = df.groupBy(*group_by).agg(*aggs)
        else:
            out = df.select(*group_by).distinct()
        return self.grouped(op, ctx, sols, out, key_cols, names)

    def group_keys(self, op: ops.Group, sols: Solutions) -> tuple[DataFrame, list[str], list[str]]:
        """``sols``' frame with a column for each grouping key of ``op``, those columns, and the names of the
        grouping keys that are variables (a key ``(expr AS ?v)`` binds ?v)."""
        scope = self.scope(sols)
        df = sols.df
        key_cols: list[str] = []
        names: list[str] = []
        for var, expr in op.keys:
            if var is None and isinstance(expr, Variable):
                col = var_col(expr.name)
                if expr.name not in sols.vars:
                    df = df.withColumn(col, F.lit(None).cast("string"))
                names.append(expr.name)
            elif var is not None:
                col = var_col(var.name)
                df = df.withColumn(col, compile_expr(expr, scope, self.env))
                names.append(var.name)
            else:
                col = self.fresh("k")
                df = df.withColumn(col, compile_expr(expr, scope, self.env))
            key_cols.append(col)
        return df, key_cols, names

    def grouped(self, op: ops.Group, ctx: Context, sols: Solutions, out: DataFrame, key_cols: list[str],
                names: list[str]) -> Solutions:
        """The solutions of ``op`` from ``out``, its groups (by ``sols``' context keys and ``key_cols``, with a
        column for each aggregate): with no grouping key, every context key value has a group, also when it has no
        solutions (the aggregates of an empty group)."""
        names = names + [v.name for v, _ in op.aggregates]
        group_by = list(sols.keys) + key_cols
        if not key_cols and sols.keys:
            # every key value has a group, also when it has no solutions: the aggregates of an empty group (a group
            # that is there keeps its aggregates, an error (NULL) too)
            empty = self._empty_aggregates(op, sols)
            present = self.fresh("present")
            out = ctx.domain.select(*sols.keys).distinct().join(out.withColumn(present, F.lit(True)),
                                                                 list(sols.keys), "left")
            out = out.select(*sols.keys,
                             *[F.when(F.col(present).isNull(), F.lit(empty[v.name]))
                               .otherwise(F.col(var_col(v.name))).alias(var_col(v.name)) for v, _ in op.aggregates])
        keep = list(sols.keys) + [var_col(n) for n in names]
        # the aggregation's columns: its grouping columns (the context keys alone after the empty-group join) and
        # the aggregates
        produced = (list(sols.keys) if not key_cols and sols.keys else group_by) + \
            [var_col(v.name) for v, _ in op.aggregates]
        if produced != keep:  # a grouping key without a variable is dropped
            out = out.select(*keep)
        bound = frozenset(e.name for v, e in op.keys if v is None and isinstance(e, Variable) and e.name in sols.bound)
        return Solutions(out, tuple(names), bound, sols.keys)

    def _empty_aggregates(self, op: ops.Group, sols: Solutions) -> dict[str, str | None]:
        empty = sols.df.limit(0)
        scope = self.scope(sols)
        row = empty.agg(*[compile_aggregate(a, scope, self.env).alias(var_col(v.name))
                          for v, a in op.aggregates]).first()
        return {v.name: row[var_col(v.name)] for v, _ in op.aggregates}


Compiler._compilers = _compiler_table(Compiler)


def _push_seed(pattern: ops.Op, seed: Seed) -> ops.Op:
    """Join the outer solutions into an EXISTS pattern below its filters, so the filters see the outer bindings
    (the substitution of SPARQL 1.1 section 18.6, for the shapes where joining is the same): through a Filter, the
    left of a Join or a LeftJoin (whose condition then sees them), both branches of a Union, an Extend that binds
    no outer variable, and a GRAPH or WINDOW block of a fixed name (a filter inside ``WINDOW :w { ... }`` reads the
    outer solution too)."""
    if isinstance(pattern, ops.Filter):
        return ops.Filter(pattern.exprs, _push_seed(pattern.op, seed))
    if isinstance(pattern, ops.Join):
        return ops.Join(_push_seed(pattern.left, seed), pattern.right)
    if isinstance(pattern, ops.LeftJoin):
        return ops.LeftJoin(_push_seed(pattern.left, seed), pattern.right, pattern.expr)
    if isinstance(pattern, ops.Union):
        return ops.Union(_push_seed(pattern.left, seed), _push_seed(pattern.right, seed))
    if isinstance(pattern, ops.Extend) and pattern.var.name not in seed.sols.vars:
        return ops.Extend(_push_seed(pattern.op, seed), pattern.var, pattern.expr)
    if isinstance(pattern, (ops.Graph, ops.Window)) and not isinstance(pattern.name, Variable):
        return type(pattern)(pattern.name, _push_seed(pattern.op, seed))
    return ops.Join(seed, pattern)


def order_patterns(triples) -> list:
    """A join order for a BGP: the most selective pattern first (most constants; subject and object constants
    weigh more than predicates), then always a pattern sharing a variable with those already joined when one
    exists, so there is no cross product unless the query has one."""

    def score(t) -> tuple:
        s, p, o = (pattern_variable(x) is None and not (isinstance(x, QuotedTriple) and op_variables(x))
                   for x in (t.subject, t.predicate, t.object))
        return (-(3 * s + 2 * o + p), )

    def names(t) -> set[str]:
        return {n for n in (pattern_variable(t.subject), pattern_variable(t.predicate),
                            pattern_variable(t.object)) if n} | \
            op_variables((t.subject, t.predicate, t.object))

    remaining = sorted(triples, key=score)
    ordered = [remaining.pop(0)]
    seen = names(ordered[0])
    while remaining:
        pick = next((i for i, t in enumerate(remaining) if names(t) & seen), 0)
        t = remaining.pop(pick)
        ordered.append(t)
        seen |= names(t)
    return ordered


def _join_operands(op: ops.Op) -> list[ops.Op]:
    """The operands of a chain of Joins, in textual order."""
    if isinstance(op, ops.Join):
        return _join_operands(op.left) + _join_operands(op.right)
    return [op]


def _join_order(parts: list[Solutions]) -> list[int]:
    """Greedy: from the first operand, the next one (in textual order) that shares a variable bound in every
    solution on both sides (an equi-join); else one that shares a context key (an evaluation instant, a graph);
    else the next one (a cross product the query asks for)."""
    remaining = list(range(1, len(parts)))
    order = [0]
    bound, keys = set(parts[0].bound), set(parts[0].keys)
    while remaining:
        pick = next((i for i in remaining if bound & parts[i].bound), None)
        if pick is None:
            pick = next((i for i in remaining if keys & set(parts[i].keys)), remaining[0])
        remaining.remove(pick)
        order.append(pick)
        bound |= parts[pick].bound
        keys |= set(parts[pick].keys)
    return order
