"""The one evaluator of continuous queries: S2R -> R2R -> R2S as one Spark plan per query, at a set of instants.

:func:`evaluate` takes a compiled query (:class:`~rspark.algebra.ops.QueryPlan`), the streams it may read, the
instants to evaluate (:class:`Instants`, in ticks) and the state carried from the evaluation before (a consuming
query's consumption state); it returns the records, the instants it evaluated, the new carried state and the
query's output stream (REGISTER STREAM) as one :class:`EvaluationResult`. Replay (``rspark.engine.replay``) and live
mode (``rspark.engine.live.evaluation``) are its two drivers: the replay asks for every instant up to the end, live
mode for the instants due since the last one reported, over its buffers.

For a query, the evaluation instants ET come from the report policies of its profile
(``rspark.spark.streaming.report``); every window assigns its stream's elements to the instants whose window holds
them (``rspark.spark.streaming.s2r``), which gives each window's content as (instant, s, p, o). The query's algebra
is then compiled once with the instant as a context key (``__t``): every operator carries it, so the plan answers
the query at all instants together, and static data joins in without being copied per instant. R2S compares
neighbouring instants in Spark. Only the answers come to the driver, instant by instant.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.ops import QueryForm, RegisterKind
from rspark.cep.carried import CarriedConsumption
from rspark.cep.patterns import asks_intervals, consumes_events, has_interval_joins
from rspark.errors import NotSupportedError, RsparkError
from rspark.model import codec as E
from rspark.model.terms import IRI
from rspark.model.time import Timeline
from rspark.model.timestamps import format_time
from rspark.rsp.policies import R2S, CountUnit, WindowContent
from rspark.rsp.report import END, instants_after, report_until, stream_operator
from rspark.rsp.windows import CountWindow, TimeWindow, is_stream_to_stream, resolve_window
from rspark.spark.frames import local_frame
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.compiler import Compiler, DatasetView
from rspark.spark.sparql.query import construct_frame, decode_quads, has_graphs, make_env, projected_names
from rspark.spark.sparql.solutions import var_col
from rspark.spark.streaming import diagnostics, s2r
from rspark.spark.streaming.background import versions_at
from rspark.spark.streaming.describe import describe_frame
from rspark.spark.streaming.fetch import answer_tables, items_by_instant, term_columns, with_every_instant
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.r2r import StreamCompiler, StreamContext, StreamDataset, now_sql, pattern_predicates
from rspark.spark.streaming.r2s import relation_to_stream
from rspark.spark.streaming.record import Record
from rspark.spark.streaming.report import WindowInput, evaluation_instants
from rspark.spark.streaming.stream import Stream
from rspark.spark.streaming.windows import LocalInstants, instant_values

# a query evaluated at this many instants or fewer has its answers fetched by one job (no cache, no count of rows
# per instant); an evaluation of a live micro-batch (after a reported instant, or over a live buffer) up to
# LIVE_FEW_INSTANTS
FEW_INSTANTS = 4
LIVE_FEW_INSTANTS = 1_000
# ... and a replay at this many instants or fewer whose streams were all read on the driver (small files: their
# answers are small too), where the cache and the count are a second and a third job of a run that lasts seconds
SMALL_FEW_INSTANTS = 64
# ``hold`` of a carried consumption state: taken just before the evaluation's last instant
LAST = object()


@dataclass(frozen=True)
class Instants:
    """The instants to evaluate, in ticks of the query's timeline. ``until``: the last one (None: the last
    element's timestamp; ``report.END``: the streams closed at their last element, ``report.closing_instant``);
    ``times``: exactly these; ``after``: an instant already reported: only the later ones are evaluated, and that
    one again as R2S's reference under ISTREAM and DSTREAM (every instant when the query consumes events and no
    consumption state is carried, as that state depends on every earlier instant)."""

    until: int | str | None = None
    times: tuple[int, ...] | None = None
    after: int | None = None


@dataclass(frozen=True)
class Carried:
    """A consuming query's consumption state as the evaluation before left it (``CarriedConsumption.saved``; empty
    for the first one) and ``hold``: the earliest instant whose records the next evaluation must give again (the
    state is then taken just before the last instant below it, R2S's reference for it; None: before every instant
    of this one), or :data:`LAST`: the state is taken just before the last instant, which the next evaluation
    evaluates again."""

    state: dict
    hold: object = LAST


@dataclass(frozen=True)
class EvaluationResult:
    """What one evaluation of one query gives back: its records (an iterator that runs the plan, instant by
    instant), the instants evaluated, the new carried consumption state (None: none carried), and the stream it
    registers (REGISTER STREAM ... AS CONSTRUCT), which the queries reading it are then given."""

    records: Iterator[Record]
    instants: list
    carried: dict | None = None
    output: Stream | None = None


def query_streams(plan: ops.QueryPlan, label: str, streams: Mapping[str, Stream]) -> list[Stream]:
    """The stream each of the query's windows reads, in order."""
    if not plan.dataset.windows:
        raise RsparkError(f"{label}: the query reads no stream (no window or FROM STREAM); "
                          "use `rspark sparql` / engine.sparql for static data")
    return [streams[d.stream.value] for d in plan.dataset.windows]


def query_timeline(sources: list[Stream], label: str) -> Timeline:
    """The timeline the query's instants are on: its streams' (the finest scale), which are all of one kind."""
    if len({s.timeline.kind for s in sources}) > 1:
        raise RsparkError(f"{label}: the query mixes date-time and numeric streams")
    return max((s.timeline for s in sources), key=lambda t: t.scale)


def in_time_order(results: Sequence[EvaluationResult]) -> Iterator[Record]:
    """The records of several queries merged in time order (ties: the order of ``results``)."""
    keyed = [((out.ticks, i, out) for out in r.records) for i, r in enumerate(results)]
    return (out for _, _, out in heapq.merge(*keyed, key=lambda x: (x[0], x[1])))


def evaluate(spark, plan: ops.QueryPlan, label: str, streams: Mapping[str, Stream], static: DatasetView,
             instants: Instants, profile, carried: Carried | None = None) -> EvaluationResult:
    """Builds the query's plan over ``streams`` (the errors are raised now) at ``instants``; ``static``: the
    query's static dataset; ``profile``: the engine profile (``rspark.rsp.profiles``). The result's records run
    the plan when read (``toLocalIterator`` over the answers partitioned by instant), so the driver holds a few
    partitions of answers at a time."""
    decls = plan.dataset.windows
    sources = query_streams(plan, label, streams)
    timeline = query_timeline(sources, label)
    resolved = [resolve_window(d.spec, profile, timeline, first_ts=src.bounds()[0])
                for d, src in zip(decls, sources)]
    every = None
    if plan.register is not None and plan.register.every is not None:
        every = timeline.duration(plan.register.every, "COMPUTED EVERY")
    diagnostics.check_windows(plan, label, profile, decls, resolved, sources)
    stream_quoted = list({id(src): src.quoted for src in sources if src.quoted is not None}.values())
    env = dataclasses.replace(make_env(plan.base), now_sql=now_sql(timeline))
    # a [RANGE BGP n] window's matches are found by its triple-pattern scans, and they are needed for the evaluation
    # instants (the non-empty filter)
    scanner = None
    inputs, bgp_windows = [], {}
    for d, rw, src in zip(decls, resolved, sources):
        matches = None
        if isinstance(rw, CountWindow) and rw.unit == CountUnit.BGP:
            if src.feedback:
                raise NotSupportedError(f"{label}: a [RANGE BGP n] window over the stream its state loop reads back")
            if any(v.graph == "" for v in static.versions):
                raise NotSupportedError(f"{label}: a [RANGE BGP n] window over a default graph that changes over "
                                        "time (its matches are counted over one default graph)")
            # (the BGP's matches are counted over the default graph, which has no versions: checked above)
            scanner = scanner or Compiler(spark, StreamDataset(dataclasses.replace(static, versions=()), [], {},
                                                               stream_quoted), env)
            bw = bgp_windows[id(d)] = s2r.bgp_window(scanner.scan_triple, static.default, plan.op, d, rw, src)
            matches = bw.match_times()
        # a triple window counts the quads; a partitioned one finds its elements' keys there
        counted = isinstance(rw, CountWindow) and (rw.unit == CountUnit.TRIPLES or rw.partition is not None)
        triples = src.quads if counted else None

        def elements(src=src, rw=rw):  # (read only when the instants are found by a job)
            frame = s2r.partitioned(src, src.elements, rw)
            if src.ends is not None and rw.meets:  # the non-empty filter's assignment
                frame = src.with_ends(frame)
            return frame

        # (a recorded stream read on the driver knows its timestamps too: its instants are found there, no job)
        stamps = src.stamps if src.stamps is not None else src.known_stamps
        inputs.append(WindowInput(rw, elements, triples, matches, src.bounds(), stamps, src.feedback))
    carry = None
    if carried is not None and consumes_events(plan.op, profile):
        carry = CarriedConsumption.load(carried.state, timeline.scale)
    # a query whose streams are all read with no window (stream-to-stream) reports each element's results once: RSTREAM
    # unless it names another operator, and no record for an element with no result
    s2s = all(is_stream_to_stream(rw) for rw in resolved)
    r2s = stream_operator(plan.r2s, profile, resolved)
    values = _instant_values(spark, plan, inputs, profile, every, instants, carry, r2s)
    if values is None:  # nothing due since the reported instant (a live micro-batch inside a window)
        return EvaluationResult(iter(()), [instants.after], None)
    # a live buffer's local relations; instants from the report policies hold every timestamp of a stream read
    # with no window (content change), whose elements are then assigned by range
    values = instant_values(values, local=all(src.stamps is not None for src in sources),
                            every_stamp=not instants.times and any(is_stream_to_stream(rw) for rw in resolved))
    if carry is not None and len(values):
        carry.resume = _resume_instant(values, carried.hold)
        carry.floors = {E.encode(d.name): (carry.resume - rw.reach if isinstance(rw, TimeWindow) else None)
                        for d, rw in zip(decls, resolved) if d.name is not None}
    diagnostics.report_instants(label, values, timeline, list(zip(resolved, sources)), every=every,
                                profile=profile, requested=instants.until is not None or bool(instants.times))
    domain = local_frame(spark, [(t,) for t in values], f"{KEY} long")
    merged, named = s2r.window_contents(plan.op, decls, sources, resolved, values, bgp_windows,
                                        as_dataset=profile.window_content == WindowContent.DATASET,
                                        predicates=pattern_predicates(plan.op))
    interval_mode = has_interval_joins(plan.op) or (
        asks_intervals(plan.op) and not any(isinstance(n, ops.Match) for n in ops.descendants(plan.op)))
    context = StreamContext(timeline, profile, plan.op, domain, interval_mode, carry)
    by_instant = versions_at(spark, static.versions, timeline, domain) if static.versions else None
    comp = StreamCompiler(spark, StreamDataset(static, merged, named, stream_quoted, by_instant), env, context)
    sols = S.align(comp.compile(plan.op), (KEY,), domain)
    new_state = carry.saved() if carry is not None else None
    live = instants.after is not None or isinstance(values, LocalInstants)
    small = all(src.known_stamps is not None for src in sources)
    few = len(values) <= (LIVE_FEW_INSTANTS if live else SMALL_FEW_INSTANTS if small else FEW_INSTANTS)
    emit_empty = (profile.emit_empty and not s2s) or plan.form == QueryForm.ASK
    # DESCRIBE reads the default graph at each instant
    default = (static.default, [w.content for w in merged] + ([comp.dataset.versions_of("")]
                                                              if "" in comp.dataset.versioned else []))
    records, output = _records(plan, label, sols, values, timeline, r2s, emit_empty, sources[0], few, default,
                               comp.env.facets)
    return EvaluationResult(records, values, new_state, output)


def _instant_values(spark, plan: ops.QueryPlan, inputs: list, profile, every, instants: Instants, carry, r2s):
    """The instants to evaluate (ticks); None when an evaluation after a reported instant has none due (and the
    query registers no stream, which is registered from the reported instant then). Found on the driver when they
    can be (time windows and, for content change and the non-empty filter, the timestamps held there: a live
    buffer's), else by a job. ``r2s``: the query's stream operator."""
    until = instants.until
    if (until is None or until == END) and not instants.times and all(w.bounds is not None for w in inputs):
        # (a replay's last instant from the streams' bounds, as evaluation_instants finds it)
        until = report_until(until, [(w.window, w.bounds[1]) for w in inputs], profile, every)
    on_driver = isinstance(until, int) and not instants.times
    if instants.after is None or (carry is None and consumes_events(plan.op, profile)):
        found = instants_after(inputs, profile, None, until, every) if on_driver else None
        if found is None:
            found = evaluation_instants(inputs, profile, every=every, times=instants.times, until=instants.until,
                                        spark=spark).values()
        return found
    # the later instants only are collected (a live query's instants since its stream began can be many)
    reported = instants.after
    later = instants_after(inputs, profile, reported, until, every) if on_driver else None
    if later is None:
        et = evaluation_instants(inputs, profile, every=every, times=instants.times, until=instants.until,
                                 spark=spark)
        later = dataclasses.replace(et, frame=et.frame.filter(F.col("instant") > F.lit(reported))).values()
    if not later and (plan.register is None or plan.register.kind != RegisterKind.STREAM):
        return None
    if later and (plan.form == QueryForm.ASK or r2s == R2S.RSTREAM) and carry is None:
        # the reported instant is R2S's reference for ISTREAM and DSTREAM only: RSTREAM (and ASK) answer each
        # instant alone, so it is not evaluated again (a REGISTER STREAM query with nothing due still is: its
        # output stream is registered from it; a carried consumption state is the one before it: it is evaluated
        # again)
        return later
    return [reported] + later


def _resume_instant(instants, hold) -> int:
    """The instant a carried consumption state is taken just before (:class:`Carried`): the last of ``instants``,
    or, with ``hold`` the earliest instant whose records the next evaluation must give again, the last one below it
    (its first one when there is none below it, or when ``hold`` is None)."""
    if hold is LAST:
        return max(instants)
    below = [] if hold is None else [t for t in instants if t < hold]
    return max(below) if below else min(instants)


def _records(plan: ops.QueryPlan, label: str, sols, values, timeline: Timeline, r2s: R2S, emit_empty: bool,
             like: Stream, few: bool, default, facets: str | None) -> tuple[Iterator[Record], Stream | None]:
    """R2S (``r2s``) and the query form: the records at every instant (``emit_empty``: also the instants with no
    answer), and the query's output stream (REGISTER STREAM). ``default``: the static default graph's builder
    and the FROM STREAM windows' content builders, which DESCRIBE reads."""
    form = plan.form
    quads, output = False, None
    names: list[str] = []
    order: list = []
    keys: dict = {}  # SELECT's sort keys, added as columns (rspark.spark.sparql.solutions.sort_key_columns)
    if form == QueryForm.SELECT:
        names = projected_names(sols)
        cols = [var_col(n) for n in names]
        df = sols.df.select(KEY, *cols, *[c for c, _ in sols.order])
        df = relation_to_stream(df, cols + [c for c, _ in sols.order] if sols.order else cols, r2s, values)
        if sols.order:
            keys, order = S.sort_key_columns(sols, facets)
        df = df.select(KEY, *cols, *[c for c, _ in sols.order])  # the order's hidden columns last
        if keys:  # their sort keys, computed once a row (dropped after the sort)
            df = df.withColumns(keys)
        positions = range(1, len(names) + 1)  # the variables' columns (after the instant)
        mapping = _mapping_maker(names)

        def items(table) -> list:
            # a solution mapping a row, built column by column; an unbound variable (NULL) is left out
            if not names:
                return [{} for _ in range(table.num_rows)]
            terms = term_columns(table.select(list(positions)), frozenset(range(len(names))))
            if all(table.column(i).null_count == 0 for i in positions):
                return list(map(mapping, *terms))
            return [{n: v for n, v in zip(names, row) if v is not None} for row in zip(*terms)]
    elif form == QueryForm.ASK:
        df = sols.df.select(KEY).distinct()

        def items(table) -> list:
            return [True] * table.num_rows
    elif form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
        # R2S compares the solution mappings of neighbouring instants (RSP-QL, Sec. 2: the streaming operators map
        # sequences of solution mappings), then the template is instantiated (or the resources described): so a
        # template with blank nodes (fresh per solution) still gives ISTREAM only what is new
        cols = [var_col(n) for n in sols.vars]
        chosen = dataclasses.replace(sols, df=relation_to_stream(sols.df.select(KEY, *cols), cols, r2s, values),
                                     keys=(KEY,), order=())
        if form == QueryForm.DESCRIBE:
            static_default, merged = default
            df = describe_frame(chosen, plan.describe, static_default(), merged)
        else:
            quads = has_graphs(plan.template)
            df = construct_frame(chosen, plan.template)
        reg = plan.register
        if reg is not None and reg.kind == RegisterKind.STREAM and isinstance(reg.name, IRI):
            if quads:
                raise NotSupportedError(f"{label}: GRAPH blocks in the template of a REGISTER STREAM query "
                                        "(its output stream is one element per instant)")
            # computed once, here: the queries reading the stream (its elements, quads, quoted triples, bounds)
            # and this query's records then read the triples, not copies of the whole plan that makes them (a
            # reader's plan holding several copies of a five-window producer's is too large to analyse)
            df = df.localCheckpoint()
            output = Stream.from_records(plan.register.name.value, df, like.timeline,
                                         max(values) if len(values) else None)
        df = df.select(KEY, "s", "p", "o", *(["g"] if quads else []))

        def item(row):
            if quads:
                return decode_quads([row], 1)[0]
            return E.decode(row[1]), E.decode(row[2]), E.decode(row[3])

        def items(table) -> list:
            return [item(row) for row in zip(*term_columns(table, frozenset()))]
    else:
        raise RsparkError(f"{label}: {form} is not a continuous query form")
    tables = answer_tables(df, order, few=few, drop=list(keys))

    def record(t: int, items: list) -> Record:
        out = Record(label, t, format_time(t, timeline), form, names)
        if form == QueryForm.SELECT:
            out.rows = items
        elif form == QueryForm.ASK:
            out.boolean = bool(items)
        else:
            out.triples = items
            out.graph_names = quads
        return out

    def records() -> Iterator[Record]:
        for t, got in with_every_instant(items_by_instant(tables, items), values):
            if got or emit_empty:
                yield record(t, got)

    return records(), output


def _mapping_maker(names) -> Callable[..., dict]:
    """A function of one value per name that gives the dict {name: value}: a dict display made once for these
    names (as collections.namedtuple makes its classes), called with each row's values, a third of the time of
    dict(zip(names, row)) a row. The names are only string keys in it (their repr)."""
    params = [f"v{i}" for i in range(len(names))]
    body = ", ".join(f"{n!r}: {v}" for n, v in zip(names, params))
    return eval(f"lambda {', '.join(params)}: {{{body}}}", {})  # noqa: S307 (a display of constants and parameters)
