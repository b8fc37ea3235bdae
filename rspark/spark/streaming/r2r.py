"""The instant-keyed R2R compilation: the algebra compiler with windows.

A replay's dataset at every instant is the static graphs plus each window's content keyed by instant; the
compiler reads ``WINDOW :w { P }`` from window :w's content, the default graph as the static default graph plus the
C-SPARQL (FROM STREAM) windows' content, and NOW() as the evaluation instant. Every operator carries the instant
key, so one plan answers the query at all instants.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.expr import Aggregate, Call, Exists, FunctionCall, TriplePattern
from rspark.cep.patterns import END, INTERVAL_CALLS, START
from rspark.errors import NotSupportedError, RsparkError
from rspark.model import codec as E
from rspark.model.terms import IRI, XSD, BlankNode, QuotedTriple, Variable
from rspark.model.time import TimeKind
from rspark.spark.cep.intervals import (
    DURATION_TICKS,
    ends_no_later,
    interval_calls,
    interval_join,
    interval_values,
    rewrite_durations,
    same_interval,
    seq_before,
)
from rspark.spark.cep.match import compile_match
from rspark.spark.expr.aggregate import mergeable
from rspark.spark.expr.compile import compile_aggregate, compile_ebv
from rspark.spark.frames import local_frame
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.compiler import (
    ActiveGraph,
    Compiler,
    Context,
    DatasetView,
    Seed,
    UnionGraph,
    compiles,
    expression_nodes,
    order_patterns,
)
from rspark.spark.sparql.quoted import match_positions
from rspark.spark.sparql.solutions import Solutions, var_col
from rspark.spark.streaming.bgp_window import BGPWindow
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.stream import Stream
from rspark.spark.streaming.windows import INSTANT, PANE_BUCKET, PaneSpans


@dataclass(frozen=True)
class WindowContent:
    """One stream window of a query, as the R2R compiler reads it (each a builder, called when a pattern reads it;
    ``rspark.spark.streaming.s2r`` makes them): ``content``, its content ``(__t, s, p, o)``, or a
    :class:`BGPWindow` whose content depends on the block reading it; ``stamps``, its triples' latest timestamps
    ``(__t, s, p, o, ts)`` for C-SPARQL's ``timestamp()`` (None: the window has none, a ``[RANGE BGP n]``
    window); ``dated``, its dated triple occurrences ``(__t, s, p, o, ts0, ts)`` for EP-SPARQL patterns;
    ``graphs``, its elements as named graphs ``(__t, g, s, p, o)`` for ``GRAPH`` inside ``WINDOW``; ``events``,
    what event patterns over it read (a named window; None for a FROM STREAM window); ``panes``, its triples by
    pane for a conjunctive pattern matched before the window (:class:`PaneContent`: a named time window assigned
    by panes), or None."""

    content: Callable[[], DataFrame] | BGPWindow
    stamps: Callable[[], DataFrame] | None
    dated: Callable[[], DataFrame]
    graphs: Callable[[], DataFrame]
    events: object | None = None  # rspark.spark.cep.match.WindowEvents
    panes: Callable[[], PaneContent | None] | None = None


@dataclass(frozen=True)
class PaneContent:
    """A time window's triples matched before the window (:class:`rspark.spark.streaming.windows.PaneSpans`):
    ``triples()`` gives the stream's triples the query reads, each in two buckets of panes, with its pane as an
    occurrence's interval ``(_w_pb, s, p, o, ts0, ts)`` (``ts0 = ts``, the pane); ``spans`` copies the matches
    into the windows. Given only when every triple the query reads lies in one element and the stream has no
    element metadata (the window's content is then those triples, in their panes)."""

    triples: Callable[[], DataFrame]
    spans: PaneSpans


class StreamDataset(DatasetView):
    """The RSP-QL dataset at every instant: static graphs plus the windows' contents keyed by instant
    (``stream_windows``: the FROM STREAM windows, merged into the default graph; ``windows``: the named windows by
    encoded name). The quoted-triple table (what RDF-star patterns decompose quoted triples with) is the static
    graphs' and the streams' together. ``by_instant``: the static graphs that change over time, at each instant
    (``(__t, g, s, p, o)``, ``rspark.spark.streaming.background``), None when none does."""

    def __init__(self, static: DatasetView, stream_windows: list[WindowContent], windows: dict[str, WindowContent],
                 stream_quoted: list[DataFrame], by_instant: Callable[[], DataFrame] | None = None) -> None:
        def quoted() -> DataFrame:
            out = static.quoted()
            for extra in stream_quoted:
                out = out.unionByName(extra)
            return out.distinct() if stream_quoted else out

        super().__init__(static.default, static.named, quoted, static.versions)
        self.stream_windows = tuple(stream_windows)
        self.windows = dict(windows)
        self.by_instant = by_instant
        # the graphs (encoded names, "" the default graph) the query reads in versions
        self.versioned = frozenset(v.graph for v in static.versions) if by_instant is not None else frozenset()
        if static.versions and by_instant is None:
            raise NotSupportedError("this evaluation reads graphs that change over time without their versions")

    def versions_of(self, graph: str) -> Callable[[], DataFrame]:
        """The versions of ``graph`` at each instant, ``(__t, s, p, o)``."""
        by_instant = self.by_instant

        def build() -> DataFrame:
            return by_instant().filter(F.col("g") == graph).select(KEY, "s", "p", "o")

        return build

    @property
    def window_events(self) -> dict:
        """Event patterns (EVENT ON :w): per named window, its stream's quads and its assignment to instants."""
        return {name: w.events for name, w in self.windows.items()}


@dataclass(frozen=True)
class StreamContext:
    """What a continuous query's compilation needs beside its dataset: the streams' ``timeline`` (NOW() and
    durations in ticks), the engine ``profile`` (the default SEQ selection and consumption of MATCH), the whole
    query's algebra ``query_op`` (does it ask for intervals?), ``interval_mode`` (EP-SPARQL operators: solutions
    read from a stream carry intervals), ``carried`` (a consuming query's state carried from the evaluation
    before, ``rspark.cep.carried.CarriedConsumption``, or None), and ``domain``, the evaluation instants as a
    one-column frame ``(__t)``."""

    timeline: object
    profile: object
    query_op: ops.Op
    domain: DataFrame
    interval_mode: bool = False
    carried: object | None = None


@dataclass(frozen=True)
class OccurrenceGraph(ActiveGraph):
    """A stream window's triple occurrences, each dated: ``triples()`` gives (keys, s, p, o, ts0, ts), the
    interval of the occurrence (an element's triples: [ts, ts]; a triple derived by an EP-SPARQL rule: the interval
    of the solution that built it). What triple patterns read in an EP-SPARQL pattern, where a solution's interval
    spans the occurrences it matched."""


@dataclass(frozen=True)
class PaneGraph(OccurrenceGraph):
    """A window's triples by pane (:class:`PaneContent`), keyed by bucket of panes: each triple is an occurrence
    over ``[pane, pane]`` (``ts0`` and ``ts`` its pane), a solution spans the panes of the triples it matched, and
    two solutions join when their spans together are under ``width`` panes."""

    width: int = 0

    def band(self, l1, l2, r1, r2):
        return F.greatest(l2, r2) - F.least(l1, r1) < F.lit(self.width)


# Calls whose value is not a function of the solution alone: a pattern calling one is matched window by window
_PER_EVALUATION = frozenset({"NOW", "RAND", "BNODE", "UUID", "STRUUID", "TIMESTAMP", DURATION_TICKS,
                             *INTERVAL_CALLS})


def matched_before_window(op: ops.Op) -> bool:
    """Whether a window block's pattern can be matched before the window (:class:`PaneContent`): triple patterns
    (at least two, none with a quoted triple), joins and filters whose expressions depend on the solution alone
    (no EXISTS, NOW(), RAND(), BNODE(), UUID(), timestamp(), interval or extension function). Its solutions at an
    instant are then the matches over the stream whose triples all lie in the instant's window."""
    return _conjunctive_triples(op) >= 2


def aggregated_by_pane(op: ops.Group) -> bool:
    """Whether a grouping can be aggregated pane by pane before the window (:class:`PaneContent`): it groups the
    solutions of ``WINDOW :w { P }`` alone, P is a pattern :func:`matched_before_window` (one triple pattern will
    do), its grouping keys and aggregates' arguments depend on the solution alone, and every aggregate can be
    computed in parts and merged (``rspark.spark.expr.aggregate.mergeable``: no DISTINCT). A window's solutions
    are then those of the panes it holds, each match in one run of panes: the groups' partial aggregates per run
    of panes, merged per window, are the window's."""
    window = op.op
    if not isinstance(window, ops.Window) or not isinstance(window.name, IRI) or _conjunctive_triples(window.op) < 1:
        return False
    if not all(_solution_only(expr) for _, expr in op.keys):
        return False
    return all(mergeable(agg) and (agg.arg is None or _solution_only(agg.arg)) for _, agg in op.aggregates)


def _conjunctive_triples(op: ops.Op) -> int:
    """The number of triple patterns of ``op`` when it is made of triple patterns (none with a quoted triple),
    joins and filters whose expressions depend on the solution alone; else 0."""
    triples = 0

    def conjunctive(x: ops.Op) -> bool:
        nonlocal triples
        if isinstance(x, ops.BGP):
            triples += len(x.triples)
            return all(isinstance(t, TriplePattern) and not any(isinstance(n, QuotedTriple)
                                                                 for n in (t.subject, t.predicate, t.object))
                       for t in x.triples)
        if isinstance(x, ops.Join):
            return conjunctive(x.left) and conjunctive(x.right)
        if isinstance(x, ops.Filter):
            return all(_solution_only(e) for e in x.exprs) and conjunctive(x.op)
        return False

    return triples if conjunctive(op) else 0


def _solution_only(expr) -> bool:
    for node in ops.descendants(expr):
        if isinstance(node, (Exists, Aggregate)):
            return False
        if isinstance(node, Call) and node.name in _PER_EVALUATION:
            return False
        if isinstance(node, FunctionCall) and not node.iri.value.startswith(XSD):
            return False
    return True


class StreamCompiler(Compiler):
    """The algebra compiler with windows: ``WINDOW :w { P }`` reads window :w's content at each instant, and
    the default graph is the static default graph plus every C-SPARQL (FROM STREAM) window's content.

    Event processing (``rspark.spark.cep``): MATCH is RSEP-QL's event graph pattern; with ``interval_mode`` (a
    query with EP-SPARQL operators) every solution read from a stream carries an interval, triple patterns match
    triple occurrences, and joins combine intervals. Everything the compilation reads is given to the
    constructor (:class:`StreamDataset`, :class:`StreamContext`)."""

    def __init__(self, spark, dataset: StreamDataset, env, context: StreamContext, extension=None) -> None:
        super().__init__(spark, dataset, env, extension)
        self.dataset: StreamDataset = dataset
        self.timeline = context.timeline
        self.profile = context.profile
        self.query_op = context.query_op
        self.interval_mode = context.interval_mode
        self.carried = context.carried
        self.domain = context.domain

    def default_context(self):
        windows = self.dataset.stream_windows
        parts = [ActiveGraph(self.dataset.default, (), "default graph")]
        if "" in self.dataset.versioned:
            parts.append(ActiveGraph(self.dataset.versions_of(""), (KEY,), "default graph (versions)"))
        if self.interval_mode:
            parts += [OccurrenceGraph(w.dated, (KEY,), "stream window occurrences") for w in windows]
        else:
            parts += [ActiveGraph(w.content, (KEY,), "stream window", w.stamps) for w in windows]
        return Context(UnionGraph(tuple(parts)), (KEY,), self.domain)

    def named_graphs(self, ctx, iri):
        """As the static compiler; a named graph that changes over time is read at each instant as the version
        valid then (keyed by instant). GRAPH ?g over named graphs some of which have versions reads every named
        graph keyed by instant (the others' triples at every instant)."""
        versioned = self.dataset.versioned - {""}
        if ctx.graphs is not None or not versioned or (iri is not None and iri not in versioned):
            return super().named_graphs(ctx, iri)
        by_instant, named, domain = self.dataset.by_instant, self.dataset.named, self.domain

        def keyed() -> DataFrame:
            mine = by_instant().filter(F.col("g") != "")
            if iri is not None:
                return mine
            return mine.unionByName(domain.crossJoin(named()).select(KEY, "g", "s", "p", "o"))

        return keyed, (KEY,)

    def compile(self, op: ops.Op, ctx=None):
        """As the static compiler; an operator whose expressions call NOW() (the evaluation instant in a replay)
        gets its input keyed by instant first, also when that input reads static data alone. getDURATION()
        compared with a duration literal becomes a comparison of tick counts (``intervals.rewrite_durations``)."""
        op = _durations_as_ticks(op, self.timeline)
        if isinstance(op, (ops.Extend, ops.Filter, ops.Group, ops.OrderBy)) and _mentions_now(_expressions(op)):
            ctx = ctx or self.default_context()
            inner = self.align(super().compile(op.op, ctx), (KEY,), ctx)
            op = dataclasses.replace(op, op=Seed(inner))
        return super().compile(op, ctx)

    def with_exists(self, sols: Solutions, exprs, ctx):
        """As the static compiler, and a column for every C-SPARQL ``timestamp(s, p, o)`` call in ``exprs``: the
        latest timestamp of that triple in the active window at the row's instant (a left join with the window's
        timestamps on instant and triple), unbound when the window does not hold it."""
        sols, flags = super().with_exists(sols, exprs, ctx)
        getters: list = []
        for e in exprs:
            interval_calls(e, getters)
        if getters:
            sols, more = interval_values(sols, getters, self.timeline, self.fresh, now_sql)
            flags.update(more)
        calls: list = []
        for e in exprs:
            _timestamp_calls(e, calls)
        if not calls:
            return sols, flags
        active = ctx.active.parts if isinstance(ctx.active, UnionGraph) else (ctx.active,)
        builders = [p.stamps for p in active if p.stamps is not None]
        if not builders:
            raise NotSupportedError("timestamp() outside a stream window: call it inside the WINDOW block whose "
                                    "triples it dates, or over FROM STREAM windows (WINDOW ?w and [RANGE BGP n] "
                                    "windows have no timestamps)")
        stamps = builders[0]()
        for b in builders[1:]:
            stamps = stamps.unionByName(b())
        if len(builders) > 1:
            stamps = stamps.groupBy(KEY, "s", "p", "o").agg(F.max("ts").alias("ts"))
        sols = self.align(sols, (KEY,), ctx)
        for call in calls:
            args = [self._term_column(a, sols) for a in call.args]
            col = self.fresh("ts")
            st = stamps.select(F.col(KEY).alias("__st_k"), F.col("s").alias("__st_s"), F.col("p").alias("__st_p"),
                               F.col("o").alias("__st_o"), F.expr(now_sql(self.timeline, "ts")).alias(col))
            cond = (F.col(KEY) == st["__st_k"]) & (args[0] == st["__st_s"]) & (args[1] == st["__st_p"]) & \
                (args[2] == st["__st_o"])
            df = sols.df.join(st, cond, "left").drop("__st_k", "__st_s", "__st_p", "__st_o")
            flags[id(call)] = col
            sols = sols.with_df(df)
        return sols, flags

    @staticmethod
    def _term_column(term, sols: Solutions):
        if isinstance(term, Variable):
            return sols.col(term.name) if term.name in sols.vars else F.lit(None).cast("string")
        if isinstance(term, BlankNode):  # a blank node of the call is a variable of no solution: unbound
            return F.lit(None).cast("string")
        return F.lit(E.encode(term))

    # ------------------------------------------------------------------------------------ EP-SPARQL (intervals)

    def scan_triple(self, triple, ctx):
        """In an EP-SPARQL pattern a triple pattern over a stream window matches its dated occurrences: each
        solution carries the interval [ts, ts] of the occurrence it matched."""
        if not isinstance(ctx.active, OccurrenceGraph):
            return super().scan_triple(triple, ctx)

        keys = ctx.active.keys
        df, positions, quoted = match_positions(ctx.active.triples(), triple, self.fresh)
        if quoted:
            raise NotSupportedError("quoted triple patterns with variables inside an EP-SPARQL pattern")
        cols = [F.col(k) for k in keys] + [F.col(pos).alias(var_col(n)) for n, pos in positions.items()]
        cols += [F.col("ts0").alias(var_col(START)), F.col("ts").alias(var_col(END))]
        names = (*positions, START, END)
        return Solutions(df.select(*cols), names, frozenset(names), keys)

    def _op_BGP(self, op: ops.BGP, ctx):
        by_pane = isinstance(ctx.active, PaneGraph)
        if not (self.interval_mode or by_pane) or len(op.triples) < 2:
            return super()._op_BGP(op, ctx)

        scans = [self.scan_triple(t, ctx) for t in order_patterns(op.triples)]
        out = scans[0]
        for nxt in scans[1:]:
            out = interval_join(out, nxt, temporal=ctx.active.band if by_pane else None)
        return out

    def _op_Join(self, op: ops.Join, ctx):
        by_pane = isinstance(ctx.active, PaneGraph)
        if not (self.interval_mode or by_pane):
            return super()._op_Join(op, ctx)

        return interval_join(self.compile(op.left, ctx), self.compile(op.right, ctx),
                             temporal=ctx.active.band if by_pane else None)

    def _op_LeftJoin(self, op: ops.LeftJoin, ctx):
        if not self.interval_mode:
            return super()._op_LeftJoin(op, ctx)

        left, right = self.compile(op.left, ctx), self.compile(op.right, ctx)
        left = self.align(left, right.keys, ctx)
        condition = None
        if op.expr is not None:
            exprs = op.expr if isinstance(op.expr, tuple) else (op.expr,)

            def condition(resolve):
                scope = self.condition_scope(resolve)
                out = None
                for e in exprs:
                    c = F.coalesce(compile_ebv(e, scope, self.env), F.lit(False))
                    out = c if out is None else (out & c)
                return out
        return interval_join(left, right, "left", condition, ends_no_later)

    def _op_Minus(self, op: ops.Minus, ctx):
        if self.interval_mode:
            raise NotSupportedError("MINUS inside an EP-SPARQL pattern (express negation with OPTIONALSEQ and "
                                    "!BOUND, as EP-SPARQL does)")
        return super()._op_Minus(op, ctx)

    @compiles(ops.IntervalJoin)
    def _op_IntervalJoin(self, op: ops.IntervalJoin, ctx):
        """EP-SPARQL's SEQ, EQUALS, OPTIONALSEQ, EQUALSOPTIONAL (``rspark.spark.cep.intervals``)."""
        left, right = self.compile(op.left, ctx), self.compile(op.right, ctx)
        if op.kind is ops.IntervalKind.SEQ:
            return interval_join(left, right, temporal=seq_before)
        if op.kind is ops.IntervalKind.EQUALS:
            return interval_join(left, right, temporal=same_interval)
        if op.kind is ops.IntervalKind.OPTIONALSEQ:  # the left side optional, before the mandatory right side
            right = self.align(right, left.keys, ctx)
            left = self.align(left, right.keys, ctx)
            return interval_join(right, left, "left", temporal=lambda r1, r2, l1, l2: l2 < r1)
        if op.kind is ops.IntervalKind.EQUALSOPTIONAL:
            left = self.align(left, right.keys, ctx)
            right = self.align(right, left.keys, ctx)
            return interval_join(left, right, "left", temporal=same_interval)
        raise NotSupportedError(f"the interval join {op.kind}")

    @compiles(ops.Match)
    def _op_Match(self, op: ops.Match, ctx):
        """RSEP-QL's MATCH (eq. 8): ``rspark.spark.cep``."""
        return compile_match(self, op, KEY)

    @compiles(ops.Window)
    def _op_Window(self, op: ops.Window, ctx):
        windows = self.dataset.windows
        if isinstance(op.name, IRI):
            name = E.encode(op.name)
            if name not in windows:
                raise RsparkError(f"WINDOW {op.name.n3()} is not a window of the query's dataset")
            window = windows[name]
            if window.panes is not None and not self.interval_mode and matched_before_window(op.op):
                panes = window.panes()
                if panes is not None:
                    return self._matched_before_window(op.op, panes, name)
            df = _window_content(window.content, op.op)
            source = ActiveGraph(lambda: df, (KEY,), f"window {name}", window.stamps)
            if self.interval_mode:
                source = OccurrenceGraph(window.dated, (KEY,), f"occurrences of {name}")
            graphs = ActiveGraph(window.graphs, (KEY,), f"elements of {name}")
            return self.compile(op.op, Context(source, ctx.keys, ctx.domain, graphs))
        # WINDOW ?w: every named window, the window name as a key (like GRAPH ?g)
        key = f"__w{next(self._graph_keys)}"
        union = None
        for name, window in windows.items():
            part = _window_content(window.content, op.op).withColumn(key, F.lit(name))
            union = part if union is None else union.unionByName(part)
        names = local_frame(self.spark, [(n,) for n in windows], f"{key} string")
        domain = ctx.domain.crossJoin(names)
        keys = S.merge_keys(ctx.keys, (key,), (KEY,))

        def elements() -> DataFrame:  # GRAPH inside WINDOW ?w: the elements of each window, under its name
            out = None
            for name, window in windows.items():
                part = window.graphs().withColumn(key, F.lit(name))
                out = part if out is None else out.unionByName(part)
            return out

        graphs = ActiveGraph(elements, S.merge_keys((KEY,), (key,)), "elements of the windows")
        inner = self.compile(op.op, Context(ActiveGraph(lambda: union, S.merge_keys((KEY,), (key,)), "windows"),
                                            keys, domain, graphs))
        inner = S.align(inner, (key,), domain)
        var = op.name.name
        df = inner.df
        if var in inner.vars:
            df = df.filter(F.col(var_col(var)).isNull() | (F.col(var_col(var)) == F.col(key)))
            names_out = inner.vars
        else:
            names_out = inner.vars + (var,)
        df = df.withColumn(var_col(var), F.col(key))
        out_keys = tuple(k for k in inner.keys if k != key)
        df = df.select(*out_keys, *[var_col(v) for v in names_out], *[c for c, _ in inner.order])
        return Solutions(df, names_out, inner.bound | {var}, out_keys, inner.order)


    def _matched_before_window(self, pattern: ops.Op, panes: PaneContent, name: str) -> Solutions:
        """``WINDOW :w { pattern }`` at every instant, the pattern matched over the stream's triples by pane and
        each match copied into the windows that hold it (:class:`PaneContent`, :func:`matched_before_window`)."""
        sols = self._pane_matches(pattern, panes, name)
        df = panes.spans.into_windows(sols.df, _LO, _HI)
        df = df.select(F.col(INSTANT).alias(KEY), *[var_col(v) for v in sols.vars])
        return Solutions(df, sols.vars, sols.bound, (KEY,))

    def _pane_matches(self, pattern: ops.Op, panes: PaneContent, name: str) -> Solutions:
        """The matches of ``pattern`` over the stream's triples by pane, each once, with the first and last pane
        of its triples (context keys ``_LO``, ``_HI``)."""
        source = PaneGraph(panes.triples, (PANE_BUCKET,), f"window {name} by panes", width=panes.spans.width)
        sols = self.compile(pattern, Context(source, (PANE_BUCKET,)))
        names = tuple(v for v in sols.vars if v not in (START, END))
        df = sols.df.select(PANE_BUCKET, F.col(var_col(START)).alias(_LO), F.col(var_col(END)).alias(_HI),
                            *[var_col(v) for v in names])
        return Solutions(panes.spans.own(df, _HI), names, frozenset(v for v in sols.bound if v in names), (_LO, _HI))

    def _op_Group(self, op: ops.Group, ctx):
        """As the static compiler; a grouping :func:`aggregated_by_pane` over a window whose content is by pane
        (:class:`PaneContent`) is aggregated in two steps: the partial aggregates of each group over the matches
        that span each run of panes, then those of the runs each window holds merged (the panes of Li et al., "No
        pane, no gain", SIGMOD Record 34(1), 2005): a match's per-row work is done once, not once per window that
        holds it, and the copies into windows are of groups, not of matches. With grouping keys, the matches are
        partitioned by them, and both steps run where a group's matches are."""
        window = op.op
        if self.interval_mode or not aggregated_by_pane(op):
            return super()._op_Group(op, ctx)
        content = self.dataset.windows.get(E.encode(window.name))
        panes = content.panes() if content is not None and content.panes is not None else None
        if panes is None:
            return super()._op_Group(op, ctx)
        sols = self._pane_matches(window.op, panes, E.encode(window.name))
        df, key_cols, names = self.group_keys(op, sols)
        scope = self.scope(sols)
        pre: dict = {}
        partials: dict = {}
        merged = [compile_aggregate(agg, scope, self.env, pre, partials).alias(var_col(var.name))
                  for var, agg in op.aggregates]
        if pre:
            df = df.withColumns(pre)
        by = [_LO, _HI, *key_cols]
        if key_cols:
            # each group's matches in one partition: its partial aggregates, their copies into the windows and the
            # merge per window are computed there, with no shuffle of the copies (a 1e7-triple replay's windowed
            # aggregate shuffled 2.7 million of them)
            df = df.repartition(*key_cols)
        parts = df.groupBy(*by).agg(*[c.alias(n) for n, c in partials.items()]) if partials \
            else df.select(*by).distinct()
        windows = panes.spans.into_windows(parts, _LO, _HI).withColumnRenamed(INSTANT, KEY)
        out = windows.groupBy(KEY, *key_cols).agg(*merged) if merged else windows.select(KEY, *key_cols).distinct()
        return self.grouped(op, ctx, dataclasses.replace(sols, keys=(KEY,)), out, key_cols, names)


_LO, _HI = "_w_lo", "_w_hi"  # the first and last pane of a match's triples


def _window_content(content, pattern: ops.Op) -> DataFrame:
    """A named window's content at every instant ``(__t, s, p, o)``: ``content`` is a builder of it, or a
    :class:`BGPWindow`, whose content depends on the pattern that reads it."""
    if isinstance(content, BGPWindow):
        return content.content(pattern)
    return content()


def _durations_as_ticks(op: ops.Op, timeline):
    """``op`` with getDURATION() compared with duration literals as tick counts, in its own expressions."""
    if timeline is None:
        return op
    if isinstance(op, ops.Filter) and _mentions(op.exprs, "GETDURATION"):
        return dataclasses.replace(op, exprs=tuple(rewrite_durations(e, timeline) for e in op.exprs))
    if isinstance(op, ops.Extend) and _mentions((op.expr,), "GETDURATION"):
        return dataclasses.replace(op, expr=rewrite_durations(op.expr, timeline))
    if isinstance(op, ops.LeftJoin) and op.expr is not None:
        exprs = op.expr if isinstance(op.expr, tuple) else (op.expr,)
        if _mentions(exprs, "GETDURATION"):
            new = tuple(rewrite_durations(e, timeline) for e in exprs)
            return dataclasses.replace(op, expr=new if isinstance(op.expr, tuple) else new[0])
    return op


def _mentions(exprs, name: str) -> bool:
    for e in exprs:
        if isinstance(e, Call) and (e.name == name or _mentions(e.args, name)):
            return True
        if isinstance(e, FunctionCall) and _mentions(e.args, name):
            return True
    return False


def element_metadata(src: Stream, assigned: DataFrame) -> DataFrame:
    """The metadata of the elements a window holds, at every instant: ``(__t, s, p, o)``, ``s`` the element.
    ``assigned``: ``(instant, element, ...)``."""
    return assigned.join(src.metadata.withColumnRenamed("s", "element"), "element") \
        .select(F.col("instant").alias(KEY), F.col("element").alias("s"), "p", "o")


def no_graphs(name):
    def refuse() -> DataFrame:
        raise NotSupportedError(f"GRAPH inside WINDOW {name.n3()}: a [RANGE BGP n] window's content is a graph "
                                "of matches, not of elements")
    return refuse


def _timestamp_calls(expr, out: list) -> list:
    """The ``timestamp(s, p, o)`` calls in an expression (not inside EXISTS patterns)."""
    found = expression_nodes(expr, lambda x: isinstance(x, Call) and x.name == "TIMESTAMP", [])
    for call in found:
        if len(call.args) != 3:
            raise NotSupportedError(f"timestamp() with {len(call.args)} argument(s) (it takes a triple: s, p, o)")
    out.extend(found)
    return out


def _expressions(op: ops.Op) -> list:
    if isinstance(op, ops.Extend):
        return [op.expr]
    if isinstance(op, ops.Filter):
        return list(op.exprs)
    if isinstance(op, ops.Group):
        return [e for _, e in op.keys] + [a for _, a in op.aggregates]
    return [c.expr for c in op.conditions]  # OrderBy


def _mentions_now(exprs) -> bool:

    for e in exprs:
        if isinstance(e, Call) and (e.name == "NOW" or _mentions_now(e.args)):
            return True
        if isinstance(e, FunctionCall) and _mentions_now(e.args):
            return True
        if isinstance(e, Aggregate) and e.arg is not None and _mentions_now([e.arg]):
            return True
    return False


def now_sql(timeline, column: str = KEY) -> str:
    """SQL for NOW() in a replay: the evaluation instant ``__t`` (or another ticks ``column``) as an encoded
    literal, an xsd:dateTime (UTC, as the records' times are written) for date-time streams and the instant's number
    for numeric streams."""
    if timeline.kind is TimeKind.DATETIME:
        text = (f"regexp_replace(date_format(timestamp_millis({column}), \"yyyy-MM-dd'T'HH:mm:ss.SSS\"), "
                f"'[.]000$', '')")
        return f"concat('\"', {text}, 'Z\"^^<{XSD}dateTime>')"
    if timeline.scale == 1:
        return f"concat('\"', CAST({column} AS STRING), '\"^^<{XSD}integer>')"
    digits = len(str(timeline.scale)) - 1
    value = f"CAST(CAST({column} AS DECIMAL(38, 0)) / {timeline.scale} AS DECIMAL(38, {digits}))"
    text = f"regexp_replace(regexp_replace(CAST({value} AS STRING), '0+$', ''), '[.]$', '.0')"
    return f"concat('\"', {text}, '\"^^<{XSD}decimal>')"


def pattern_predicates(op: ops.Op) -> frozenset | None:
    """The predicates (encoded IRIs) of every triple pattern of ``op``, EXISTS patterns included; None when some
    pattern may match any predicate (a variable predicate, a property path). A window's content is only ever read
    through these patterns."""

    out = set()
    for node in ops.descendants(op):
        if isinstance(node, ops.PathPattern):
            return None
        if isinstance(node, TriplePattern):
            if not isinstance(node.predicate, IRI):
                return None
            out.add(E.encode(node.predicate))
    return frozenset(out)

