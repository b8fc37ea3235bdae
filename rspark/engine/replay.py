"""Replaying continuous queries over recorded streams: S2R -> R2R -> R2S as one Spark plan per query.

For a query, the evaluation instants ET come from the report policies of its profile
(``rspark.rsp.report``); every window assigns its stream's elements to the instants whose window holds them
(``rspark.spark.streaming.windows``), which gives each window's content as (instant, s, p, o). The query's algebra is
then compiled once with the instant as a context key (``__t``): every operator carries it, so the plan answers the query
at all instants together, and static data joins in without being copied per instant. R2S compares neighbouring instants
in Spark. Only the answers come to the driver, to be printed in time order.
"""

from __future__ import annotations

import dataclasses
import heapq
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark import results as R
from rspark.algebra import ops
from rspark.algebra.ops import QueryForm, RegisterKind
from rspark.cep.patterns import asks_intervals, consumes_events, has_interval_joins
from rspark.engine.rules import close_streams, is_rule
from rspark.errors import NotSupportedError, RsparkError
from rspark.model import codec as E
from rspark.model.terms import IRI
from rspark.model.time import TimeKind
from rspark.rsp.policies import R2S, CountUnit, WindowContent
from rspark.rsp.report import END
from rspark.rsp.windows import format_time, parse_time
from rspark.spark.cep.match import WindowEvents
from rspark.spark.frames import local_frame
from rspark.spark.loading.loader import quoted_table
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.compiler import memoized
from rspark.spark.sparql.solutions import Solutions, var_col
from rspark.spark.streaming.bgp_window import BGPWindow
from rspark.spark.streaming.fetch import group_by_instant, rows_by_instant
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.r2r import (
    ReplayCompiler,
    ReplayDataset,
    element_metadata,
    no_graphs,
    now_sql,
    pattern_predicates,
)
from rspark.spark.streaming.r2s import relation_to_stream
from rspark.spark.streaming.source import StreamSource
from rspark.syntax.translate import compile_query, ensure_evaluable

# INFO: each query's evaluation instants; WARNING: what makes a replay print less than a user expects (numeric times
# read as epoch milliseconds, windows that skip elements, patterns that match nothing, the window still open at
# the stream's end)
log = logging.getLogger("rspark.replay")

# a query evaluated at this many instants or fewer has its answers fetched by one job (no cache, no count of rows
# per instant); a live micro-batch's evaluation (the instants since the last reported one) up to LIVE_FEW_INSTANTS
FEW_INSTANTS = 4
LIVE_FEW_INSTANTS = 1_000
# a carried consumption state is taken just before the run's last instant (Replayer.run's holds)
_LAST = object()


@dataclass
class ReplayOutput:
    """One evaluation instant of one query: the record ``rspark replay`` prints as a jsonl line."""

    query: str
    ticks: int
    time: Any  # a number (numeric streams) or an ISO 8601 string (date-time streams)
    form: str
    vars: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    boolean: bool | None = None
    triples: list[tuple] = field(default_factory=list)  # (s, p, o), or (s, p, o, g) when ``quads``
    quads: bool = False  # a CONSTRUCT template with GRAPH blocks: g is a graph name, None for the default graph

    def to_json(self) -> dict:
        out: dict[str, Any] = {"query": self.query, "time": self.time}
        if self.form == QueryForm.ASK:
            out["head"] = {}
            out["boolean"] = bool(self.boolean)
        elif self.quads:
            out["quads"] = R.to_nquads(R.DatasetResult(self.triples)).splitlines()
        elif self.form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
            out["triples"] = R.to_ntriples(R.GraphResult(self.triples)).splitlines()
        else:
            js = R.to_json(R.SolutionSequence(self.vars, self.rows))
            out["head"] = js["head"]
            out["results"] = js["results"]
        return out

    @property
    def value(self):
        if self.form == QueryForm.ASK:
            return R.BooleanResult(bool(self.boolean))
        if self.quads:
            return R.DatasetResult(self.triples)
        if self.form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
            return R.GraphResult(self.triples)
        return R.SolutionSequence(self.vars, self.rows)


# -------------------------------------------------------------------------------------- the replay


class Replayer:
    """Runs one replay of one or more queries over the engine's streams and static data."""

    def __init__(self, engine, profile=None) -> None:
        self.engine = engine
        self.spark = engine.spark
        self.profile = profile
        self.sources: dict[str, StreamSource] = dict(engine.streams)
        self._numeric_times_warned = False  # "numbers are epoch milliseconds" is said once a replay
        # each query's evaluation instants (ticks), by label, as run_query found them (live mode reads the last one)
        self.instants: dict[str, list[int]] = {}
        # a consuming query's consumption state after the run, by label (given a carried state: live mode)
        self.carried: dict[str, dict] = {}

    def run(self, queries: list[tuple[str, str]], *, until=None, times=None,
            after: dict | None = None, carried: dict | None = None,
            holds: dict | None = None) -> Iterator[ReplayOutput]:
        """``queries``: (text, name) pairs. Returns an iterator of every output record in time order (ties: query
        order). ``until``: the last instant (a number or an ISO 8601 date-time), None for the last element's
        timestamp, or ``"end"``: the streams closed at their last element (``report.closing_instant``; documented at
        ``Engine.replay_iter``). ``after``: query label -> an instant already reported (a time value, as ``until``)
        or None: only the later instants are evaluated (live mode's due instants), and that one again as R2S's
        reference under ISTREAM and DSTREAM; every instant when the query consumes events, whose state depends on
        every earlier instant, unless ``carried`` gives that state. ``carried``: query label -> the consumption
        state of a query that consumes events as the run before this one left it (as
        :meth:`~rspark.cep.carried.CarriedConsumption.saved` gives it; empty for the first run): the run resumes
        from it, evaluates the reported instant again (the state is the one before it) and leaves the new state in
        ``self.carried``, taken just before the run's last instant, which the next run evaluates again. ``holds``:
        query label -> the earliest instant (ticks) whose records the next run must give again, or None for every
        instant of this one, for a query in ``carried`` whose output stream other queries read: its state is then
        taken just before the last instant below that one (R2S's reference for it), which the next run is given as
        ``after``.

        The plans are built (and streams registered, errors raised) now; the records then stream from Spark
        instant by instant (``toLocalIterator`` over the answers partitioned by instant), so the driver holds a
        few partitions of answers at a time, not the whole replay."""
        plans = []
        for text, name in queries:
            plan = compile_query(text, source=name)
            ensure_evaluable(plan, continuous=True, source=name)
            label = query_label(plan, name)
            plans.append((plan, label))
        rules = [(plan, label) for plan, label in plans if is_rule(plan)]
        if rules:  # EP-SPARQL's CONSTRUCT rules: the streams they read become their Q-closure
            close_streams(self, rules)
        streams: list[tuple[int, Iterator[ReplayOutput]]] = []
        pending = list(enumerate(plans))
        while pending:
            ready = [(i, p) for i, p in pending if all(w.stream.value in self.sources for w in p[0].dataset.windows)]
            if not ready:
                i, (plan, label) = pending[0]
                missing = [w.stream.value for w in plan.dataset.windows if w.stream.value not in self.sources]
                by = next((lb for p, lb in plans if p.form != QueryForm.CONSTRUCT and p.register is not None
                           and p.register.kind == RegisterKind.STREAM and isinstance(p.register.name, IRI)
                           and p.register.name.value == missing[0]), None)
                if by is not None:  # a SELECT or ASK registered as a stream: its records are no RDF stream
                    raise RsparkError(f"{label}: stream <{missing[0]}> is registered by {by}, a {_form(plans, by)} "
                                      "query, whose records are solutions, not RDF: only a CONSTRUCT query's output "
                                      "is a stream other queries read")
                raise RsparkError(f"{label}: unknown stream <{missing[0]}> (give it with --stream {missing[0]}=PATH "
                                  f"or engine.add_stream)")
            for i, (plan, label) in ready:
                streams.append((i, self.run_query(plan, label, until=until, times=times,
                                                  after=(after or {}).get(label),
                                                  carried=(carried or {}).get(label),
                                                  hold=(holds or {}).get(label, _LAST))))
            done = {i for i, _ in ready}
            pending = [(i, p) for i, p in pending if i not in done]
        keyed = [_keyed(i, records) for i, records in streams]
        return (out for _, _, out in heapq.merge(*keyed, key=lambda x: (x[0], x[1])))

    def run_query(self, plan: ops.QueryPlan, label: str, *, until=None, times=None,
                  after=None, carried: dict | None = None, hold=_LAST) -> Iterator[ReplayOutput]:
        """Builds the query's plan now (registering its output stream, if it has one); returns the iterator of
        its records, which runs the plan. ``after`` and ``carried``: as :meth:`run`'s, for this query; ``hold``: its
        entry of :meth:`run`'s ``holds`` (``_LAST`` when it has none)."""
        from rspark.cep.carried import CarriedConsumption
        from rspark.rsp.profiles import get_profile
        from rspark.rsp.report import instants_after
        from rspark.rsp.windows import CountSpec, TimeSpec, resolve_window
        from rspark.spark.sparql.query import construct_frame, decode_quads, has_graphs, make_env, projected_names
        from rspark.spark.streaming.report import WindowInput, evaluation_instants
        from rspark.spark.streaming.windows import LocalInstants

        profile = get_profile(self.profile or self.engine.profile)
        r2s = plan.r2s or profile.r2s
        decls = plan.dataset.windows
        if not decls:
            raise RsparkError(f"{label}: the query reads no stream (no window or FROM STREAM); "
                              "use `rspark sparql` / engine.sparql for static data")
        sources = [self.sources[d.stream.value] for d in decls]
        kinds = {s.time_kind for s in sources}
        if len(kinds) > 1:
            raise RsparkError(f"{label}: the query mixes date-time and numeric streams")
        timeline = max((s.timeline() for s in sources), key=lambda t: t.scale)
        resolved = [resolve_window(d.spec, profile, timeline, first_ts=src.bounds()[0])
                    for d, src in zip(decls, sources)]
        every = None
        if plan.register is not None and plan.register.every is not None:
            every = timeline.duration(plan.register.every, "COMPUTED EVERY")
        self._check_windows(plan, label, profile, decls, resolved, sources)
        ticks_times = [parse_time(t, timeline) for t in times] if times else None
        if _is_end(until):
            ticks_until = END
        else:
            ticks_until = parse_time(until, timeline) if until is not None else None
        self._check_times(timeline, times, until)
        # the compiler first (its dataset's windows are filled below): a [RANGE BGP n] window's matches are found
        # by its triple-pattern scans, and they are needed for the evaluation instants (the non-empty filter)
        merged, named = [], {}
        static = self.engine.dataset_for(_static_part(plan))
        stream_quoted = list({id(src): src.quoted for src in sources if src.quoted is not None}.values())
        dataset = ReplayDataset(static, merged, named, stream_quoted)
        env = dataclasses.replace(make_env(plan.base), now_sql=now_sql(timeline))
        comp = ReplayCompiler(self.spark, dataset, env)
        comp.timeline = timeline
        comp.profile = profile
        comp.query_op = plan.op
        comp.interval_mode = has_interval_joins(plan.op) or (
            asks_intervals(plan.op) and not any(isinstance(n, ops.Match) for n in ops.descendants(plan.op)))
        inputs, bgp_windows = [], {}
        for d, rw, src in zip(decls, resolved, sources):
            matches = None
            if isinstance(rw, CountSpec) and rw.unit == CountUnit.BGP:
                bw = bgp_windows[id(d)] = self._bgp_window(comp, plan.op, d, rw, src)
                matches = bw.match_times()
            triples = src.quads if isinstance(rw, CountSpec) and rw.unit == CountUnit.TRIPLES else None  # (its count)
            inputs.append(WindowInput(rw, src.elements, triples, matches, src.bounds(), src.stamps))
        carry = None
        if carried is not None and consumes_events(plan.op, profile):
            carry = CarriedConsumption.load(carried, timeline.scale)
        if after is not None and (carry is not None or not consumes_events(plan.op, profile)):
            # the later instants only are collected (a live query's instants since its stream began can be many):
            # on the driver when they can be (time windows, timestamps held there), else by a job
            reported = parse_time(after, timeline)
            later = None
            if isinstance(ticks_until, int) and not ticks_times:
                later = instants_after(inputs, profile, reported, ticks_until, every)
            if later is None:
                et = evaluation_instants(inputs, profile, every=every, times=ticks_times, until=ticks_until,
                                         spark=self.spark)
                later = dataclasses.replace(et, frame=et.frame.filter(F.col("instant") > F.lit(reported))).values()
            instant_values = [reported] + later
            if not later and (plan.register is None or plan.register.kind != RegisterKind.STREAM):
                # nothing due since the reported instant (a live micro-batch inside a window): no plan to run
                self.instants[label] = instant_values
                return iter(())
            if later and (plan.form == QueryForm.ASK or r2s == R2S.RSTREAM) and carry is None:
                # the reported instant is R2S's reference for ISTREAM and DSTREAM only: RSTREAM (and ASK) answer
                # each instant alone, so it is not evaluated again (a REGISTER STREAM query with nothing due
                # still is: its output stream is registered from it; a carried consumption state is the one
                # before it: it is evaluated again)
                instant_values = later
        else:
            instant_values = evaluation_instants(inputs, profile, every=every, times=ticks_times, until=ticks_until,
                                                 spark=self.spark).values()
        if all(src.stamps is not None for src in sources):  # a live buffer's local relations
            instant_values = LocalInstants(instant_values)
        self.instants[label] = instant_values
        if carry is not None and len(instant_values):
            carry.resume = _resume_instant(instant_values, hold)
            carry.floors = {E.encode(d.name): (carry.resume - rw.reach if isinstance(rw, TimeSpec) else None)
                            for d, rw in zip(decls, resolved) if d.name is not None}
        comp.carried = carry
        self._report_instants(label, instant_values, timeline, list(zip(resolved, sources)), every=every,
                              profile=profile, until=until, times=times)
        instants = local_frame(self.spark, [(t,) for t in instant_values], f"{KEY} long")

        predicates = pattern_predicates(plan.op)
        for d, rw, src in zip(decls, resolved, sources):
            # a window's content is built when a pattern reads it (a query whose window only feeds event
            # patterns never builds it, nor runs the duplicate check the content may ask for)
            if id(d) in bgp_windows:
                bw = bgp_windows[id(d)]
                bw.instants = instant_values
                content = memoized(lambda bw=bw: bw.content(plan.op)) if d.merged or d.name is None else bw
            elif profile.window_content == WindowContent.DATASET and not (d.merged or d.name is None):
                content = memoized(lambda src=src, rw=rw: self._default_graphs(src, rw, instant_values))
            else:
                content = memoized(lambda src=src, rw=rw: self._content(src, rw, instant_values, predicates))
            stamps = None
            if id(d) not in bgp_windows:
                stamps = memoized(lambda src=src, rw=rw: self._stamps(src, rw, instant_values))
            dated = memoized(lambda src=src, rw=rw: self._occurrences(src, rw, instant_values))
            if d.merged or d.name is None:
                merged.append(content)
                dataset.merged_stamps.append(stamps)
                dataset.merged_dated.append(dated)
            else:
                name = E.encode(d.name)
                named[name] = content
                dataset.named_stamps[name] = stamps
                dataset.named_dated[name] = dated
                dataset.window_events[name] = self._window_events(src, rw, instant_values, d)
                dataset.named_graphs[name] = (
                    no_graphs(d.name) if id(d) in bgp_windows else
                    memoized(lambda src=src, rw=rw: self._element_graphs(src, rw, instant_values)))
        comp.domain = instants
        sols = S.align(comp.compile(plan.op), (KEY,), instants)
        if carry is not None:
            self.carried[label] = carry.saved()

        form = plan.form
        quads = False
        names: list[str] = []
        order: list = []
        if form == QueryForm.SELECT:
            names = projected_names(sols)
            cols = [var_col(n) for n in names]
            df = sols.df.select(KEY, *cols, *[c for c, _ in sols.order])
            if sols.order:
                df = relation_to_stream(df, cols + [c for c, _ in sols.order], r2s, instants)
                order = S.sort_columns(sols)
            else:
                df = relation_to_stream(df, cols, r2s, instants)
            df = df.select(KEY, *cols, *[c for c, _ in sols.order])  # the order's hidden columns last

            columns = [(i + 1, n) for i, n in enumerate(names)]  # (the row's column, the variable)
            decode = E.decode

            def item(row):
                return {n: decode(row[i]) for i, n in columns if row[i] is not None}
        elif form == QueryForm.ASK:
            df = sols.df.select(KEY).distinct()

            def item(row):
                return True
        elif form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
            if form == QueryForm.DESCRIBE:
                raise RsparkError(f"{label}: DESCRIBE is not available in continuous queries; use CONSTRUCT")
            # R2S compares the solution mappings of neighbouring instants (RSP-QL, Sec. 2: the streaming
            # operators map sequences of solution mappings), then the template is instantiated: so a template with
            # blank nodes (fresh per solution) still gives ISTREAM only what is new
            cols = [var_col(n) for n in sols.vars]
            chosen = relation_to_stream(sols.df.select(KEY, *cols), cols, r2s, instants)
            quads = has_graphs(plan.template)
            df = construct_frame(dataclasses.replace(sols, df=chosen, keys=(KEY,), order=()), plan.template)
            reg = plan.register
            if reg is not None and reg.kind == RegisterKind.STREAM and isinstance(reg.name, IRI):
                if quads:
                    raise NotSupportedError(f"{label}: GRAPH blocks in the template of a REGISTER STREAM query "
                                            "(its output stream is one element per instant)")
                self._register_stream(plan.register.name.value, df, sources[0],
                                      max(instant_values) if len(instant_values) else None)
            df = df.select(KEY, "s", "p", "o", *(["g"] if quads else []))

            def item(row):
                if quads:
                    return decode_quads([row], 1)[0]
                return E.decode(row[1]), E.decode(row[2]), E.decode(row[3])
        else:
            raise RsparkError(f"{label}: {form} is not a continuous query form")
        # a live micro-batch's answers go to its sinks at once: one job brings them, rather than a cache, a count per
        # instant and a fetch per range (which pay Spark's planning of the query twice and bound the driver's memory
        # in a long replay)
        few = len(instant_values) <= (FEW_INSTANTS if after is None else LIVE_FEW_INSTANTS)
        rows = rows_by_instant(df, order, few=few)
        emit_empty = profile.emit_empty or form == QueryForm.ASK

        def record(t: int, items: list) -> ReplayOutput:
            out = ReplayOutput(label, t, format_time(t, timeline), form, names)
            if form == QueryForm.SELECT:
                out.rows = items
            elif form == QueryForm.ASK:
                out.boolean = bool(items)
            else:
                out.triples = items
                out.quads = quads
            return out

        def records() -> Iterator[ReplayOutput]:
            for t, items in group_by_instant(rows, instant_values, item):
                if items or emit_empty:
                    yield record(t, items)

        return records()

    def _content(self, src: StreamSource, rw, instants, predicates: frozenset | None = None) -> DataFrame:
        """A window's content at every instant: (__t, s, p, o), a set per instant (the snapshot is an RDF graph).

        ``instants``: the instant values (a list, so that the window code knows how many there are and broadcasts
        them). A window that selects by timestamp alone (time-based, landmark, interval, NOW) assigns the quads
        themselves, which carry their element's timestamp: there is no (instant, element) join, and Spark pushes
        the query's triple-pattern selections and filters below the copy into windows, so only matching triples
        are copied. Count windows rank elements (or triples) first and join the content to the ranks.

        ``predicates``: those of every triple pattern of the query (:func:`pattern_predicates`), or None: the
        content is a set without a DISTINCT when the stream's triples with these predicates are unique."""
        from rspark.spark.streaming.windows import CountSpec, assign_window

        if isinstance(rw, CountSpec) and rw.unit == CountUnit.TRIPLES:
            assigned = assign_window(src.elements, rw, instants, quads=src.quads)
            return assigned.select(F.col("instant").alias(KEY), "s", "p", "o").distinct()
        quads = src.content(predicates)  # (a triple window, above, counts every triple: it reads them all)
        if isinstance(rw, CountSpec):
            assigned = assign_window(src.elements, rw, instants).select("instant", "element")
            content = assigned.join(quads.select("element", "s", "p", "o"), "element")
        else:
            content = assign_window(quads.select("element", "ts", "seq", "s", "p", "o"), rw, instants)
            assigned = None
        content = content.select(F.col("instant").alias(KEY), "s", "p", "o")
        if src.has_metadata():
            if assigned is None:
                assigned = assign_window(src.elements, rw, instants).select("instant", "element")
            content = content.unionByName(element_metadata(src, assigned))
        if assigned is None and src.triples_unique(predicates):
            return content  # each triple the query reads is in one element: no duplicate to remove
        return content.distinct()

    @staticmethod
    def _dated(src: StreamSource, rw, instants, metadata: bool = False) -> DataFrame:
        """A window's quads at every instant with their element: ``(instant, element, s, p, o, ts)``; with
        ``metadata``, also the elements' metadata (``s`` the element)."""
        from rspark.spark.streaming.windows import CountSpec, assign_window

        cols = ("instant", "element", "s", "p", "o", "ts")
        if isinstance(rw, CountSpec) and rw.unit == CountUnit.TRIPLES:  # a triple window holds no metadata
            return assign_window(src.elements, rw, instants, quads=src.quads).select(*cols)
        if not isinstance(rw, CountSpec) and not metadata:
            return assign_window(src.quads.select("element", "ts", "seq", "s", "p", "o"), rw, instants).select(*cols)
        assigned = assign_window(src.elements, rw, instants).select("instant", "element", "ts")
        triples = src.quads.select("element", "s", "p", "o")
        if metadata and src.has_metadata():
            triples = triples.unionByName(src.metadata.select(F.col("s").alias("element"), F.col("s"), "p", "o"))
        return assigned.join(triples, "element").select(*cols)

    def _occurrences(self, src: StreamSource, rw, instants) -> DataFrame:
        """A window's dated triple occurrences at every instant (EP-SPARQL patterns): ``(__t, s, p, o, ts0, ts)``,
        ``[ts0, ts]`` the occurrence's interval (``ts0`` differs from ``ts`` for triples derived by rules)."""
        dated = self._dated(src, rw, instants)
        if src.starts is not None:
            dated = dated.join(src.starts, "element", "left").withColumn("ts0", F.coalesce(F.col("start"),
                                                                                            F.col("ts")))
        else:
            dated = dated.withColumn("ts0", F.col("ts"))
        return dated.select(F.col("instant").alias(KEY), "s", "p", "o", "ts0", "ts").distinct()

    @staticmethod
    def _window_events(src: StreamSource, rw, instants, decl) -> WindowEvents:
        """What event patterns over this window read (``rspark.spark.cep.match``): the stream's quads, and the
        assignment of element-keyed rows to the instants whose window holds their element."""
        from rspark.spark.streaming.windows import CountSpec, assign_window

        def quads(predicates: frozenset | None = None) -> DataFrame:
            # a live buffer's quads of the pattern's predicates are selected on the driver (a smaller local
            # relation); a loaded stream's cached quads are read whole (the pattern's scan selects them)
            content = src.content(predicates) if src.SELECTS_CHEAPLY else src.quads
            return content.select("element", "ts", "seq", "s", "p", "o")

        def assign(rows: DataFrame) -> DataFrame:
            if isinstance(rw, CountSpec):
                if rw.unit != CountUnit.ELEMENTS:
                    raise NotSupportedError(f"EVENT ON {decl.name.n3()}: a [RANGE {rw.unit} n] window holds parts of "
                                            "elements, and a basic event pattern matches whole elements (RSEP-QL, "
                                            "eq. 4); use a time, landmark or [RANGE ELEMENTS n] window")
                held = assign_window(src.elements, rw, instants).select("instant", "element")
                return held.join(rows, "element")
            return assign_window(rows, rw, instants)

        return WindowEvents(quads, assign)

    def _stamps(self, src: StreamSource, rw, instants) -> DataFrame:
        """A window's timestamps at every instant: ``(__t, s, p, o, ts)``, the latest timestamp (ticks) of each
        triple of its content (element metadata is dated by its element)."""
        return self._dated(src, rw, instants, metadata=True) \
            .groupBy(F.col("instant").alias(KEY), "s", "p", "o").agg(F.max("ts").alias("ts"))

    def _default_graphs(self, src: StreamSource, rw, instants) -> DataFrame:
        """A window as RSP-QL*'s dataset DS(W) sees it (Def. 6): its default graph is the union of its elements'
        default graphs, the timestamp triples (in canonical form: NOW()'s) and the other metadata, at every
        instant ``(__t, s, p, o)``. The elements' own graphs are its named graphs (:meth:`_element_graphs`)."""
        from rspark.spark.streaming.windows import CountSpec, assign_window

        if isinstance(rw, CountSpec) and rw.unit == CountUnit.TRIPLES:
            assigned = assign_window(src.elements, rw, instants, quads=src.quads).select("instant", "element", "ts")
        else:
            assigned = assign_window(src.elements, rw, instants).select("instant", "element", "ts")
        assigned = assigned.distinct()
        out = assigned.select(F.col("instant").alias(KEY), F.col("element").alias("s"),
                              F.lit(src.stamp_predicate).alias("p"), F.expr(now_sql(src.timeline(), "ts")).alias("o"))
        if src.has_metadata():
            out = out.unionByName(element_metadata(src, assigned)).distinct()
        return out

    def _element_graphs(self, src: StreamSource, rw, instants) -> DataFrame:
        """A window's elements as named graphs at every instant (``GRAPH ?g`` inside ``WINDOW``; RSP-QL*, Def. 6):
        ``(__t, g, s, p, o)``, ``g`` the element's name."""
        return self._dated(src, rw, instants).select(F.col("instant").alias(KEY), F.col("element").alias("g"),
                                                     "s", "p", "o")

    def _bgp_window(self, comp: ReplayCompiler, pattern: ops.Op, decl, rw, src: StreamSource):
        """A ``[RANGE BGP n]`` window (rspark.spark.streaming.bgp_window): the patterns it counts are those of the
        blocks that read it (a named window), or the query's own triple patterns (a FROM STREAM window)."""
        from rspark.spark.sparql.compiler import Context, GraphSource
        from rspark.spark.streaming.bgp_window import positioned_triples, window_blocks

        def scan(triple, frame: DataFrame, key: str) -> Solutions:
            return comp.scan_triple(triple, Context(GraphSource(lambda: frame, (key,), "stream")))

        def positioned() -> DataFrame:
            return positioned_triples(src.quads, src.elements, src.metadata if src.has_metadata() else None,
                                      src.triples_unique())

        if decl.merged or decl.name is None:
            return BGPWindow(f"FROM STREAM {decl.stream.n3()}", rw.size, [pattern], positioned, scan,
                             background=comp.dataset.default)
        return BGPWindow(decl.name.n3(), rw.size, window_blocks(pattern, decl.name), positioned, scan)

    def _register_stream(self, iri: str, triples: DataFrame, like: StreamSource, last: int | None) -> None:
        """The output of REGISTER STREAM :out AS CONSTRUCT ... as a stream other queries read: one element per
        instant, stamped with the instant (an instant without triples gives none), which goes on to the query's
        ``last`` instant: the queries reading it are evaluated up to there, as live mode evaluates them up to the
        instant their group's input streams reached, not only up to its last element."""
        elem = F.concat(F.lit(f"<{iri}#t"), F.col(KEY).cast("string"), F.lit(">"))
        quads = triples.select("s", "p", "o", elem.alias("element"), F.col(KEY).alias("ts"), F.col(KEY).alias("seq"))
        elements = quads.select("element", "ts", "seq").distinct()
        self.sources[iri] = StreamSource(iri, elements, quads, None, quoted_table(quads), like.time_kind,
                                         like.time_scale, checks_duplicates=False, end=last)

    # ---------------------------------------------------------------------------------- what the log tells

    def _check_times(self, timeline, times, until) -> None:
        """WARNING (once a replay): numbers given as --times / --until over a date-time stream, which parse_time
        reads as epoch milliseconds."""
        if self._numeric_times_warned or timeline.kind is not TimeKind.DATETIME:
            return
        given = [("until", until)] if until is not None and not _is_end(until) else []
        given += [("times", t) for t in times or ()]
        for what, value in given:
            if _is_number(value):
                self._numeric_times_warned = True
                log.warning("numeric --%s values over a date-time stream are read as epoch milliseconds: %s is %s; "
                            "write an ISO 8601 date-time (2026-03-01T13:00:00Z) to mean a date", what,
                            str(value).strip(), format_time(parse_time(value, timeline), timeline))
                return

    def _check_windows(self, plan: ops.QueryPlan, label: str, profile, decls, resolved, sources) -> None:
        """WARNINGs about windows that leave elements out: a time window sliding by more than its range (the
        elements between two windows are in none), and, under a profile whose windows are datasets
        (``rspql-star``), triple patterns directly in a WINDOW block, which only match the window's default graph
        (the elements' timestamps and metadata), not the elements' graphs."""
        from rspark.rsp.windows import TimeSpec

        for d, rw in zip(decls, resolved):
            if isinstance(rw, TimeSpec) and rw.slide > rw.range:
                spec = d.spec
                log.warning("%s: window %s [RANGE %s SLIDE %s] slides by more than its range: the elements between "
                            "the end of one window and the start of the next are in no window", label,
                            _window_name(d), spec.range.text or spec.range.amount,
                            spec.slide.text or spec.slide.amount)
        if profile.window_content != WindowContent.DATASET:
            return
        stamps = {src.stamp_predicate for src in sources}
        named = {d.name for d in decls if d.name is not None and not d.merged}
        for node in ops.descendants(plan.op):
            if isinstance(node, ops.Window) and (node.name in named or not isinstance(node.name, IRI)):
                patterns = _patterns_outside_graph(node.op)
                if any(not (isinstance(t.predicate, IRI) and E.encode(t.predicate) in stamps) for t in patterns):
                    name = node.name.n3() if hasattr(node.name, "n3") else str(node.name)
                    log.warning("%s: under the %s profile, WINDOW %s { ... } matches its triple patterns against the "
                                "window's default graph (the elements' timestamps and metadata), not the elements' "
                                "graphs, so a pattern over the elements' data matches nothing: write WINDOW %s "
                                "{ GRAPH ?g { ... } } (docs/profiles.md, Window content)", label, profile.name,
                                name, name)

    def _report_instants(self, label: str, instants: list, timeline, windows, *, every, profile, until,
                         times) -> None:
        """INFO: how many evaluation instants the query has. WARNING, with the default ``until``: a stream whose last
        elements are after the last instant, in a window still open there that ``until="end"`` would report.
        ``windows``: (resolved window, its stream) pairs."""
        from rspark.rsp.report import closing_instant, report_policies

        if instants:
            log.info("%s: %d evaluation instant%s, %s to %s", label, len(instants), "" if len(instants) == 1 else "s",
                     format_time(instants[0], timeline), format_time(instants[-1], timeline))
        else:
            log.info("%s: no evaluation instant", label)
        if until is not None or times:
            return
        last = instants[-1] if instants else None
        closing: dict[int, tuple] = {}  # id(stream) -> (stream, the latest closing instant of its windows)
        for rw, src in windows:
            hi = src.bounds()[1]
            if hi is None or (last is not None and hi <= last):
                continue
            t = closing_instant(rw, report_policies(profile, rw, every), hi, every)
            if t is not None and (last is None or t > last):
                closing[id(src)] = (src, max(t, closing.get(id(src), (src, t))[1]))
        for src, _ in closing.values():
            # from the stream's bounds, known since its load: no Spark job for a warning
            what = f"the last element of <{src.iri}> (at {format_time(src.bounds()[1], timeline)}) is"
            where = f"after the last evaluation instant {format_time(last, timeline)}" if last is not None else \
                "in no reported window (the query has no evaluation instant)"
            log.warning("%s: %s %s: the window holding it is still open; pass until='end' (rspark replay --until end) "
                        "to close the stream at its last element", label, what, where)


def _is_end(value) -> bool:
    return isinstance(value, str) and value.strip().lower() == END


def _is_number(value) -> bool:
    """Whether a --times / --until value is a number (as parse_time reads it), not a date-time."""
    from decimal import Decimal, InvalidOperation

    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float, Decimal)):
        return True
    try:
        Decimal(str(value).strip())
        return True
    except (InvalidOperation, ValueError):
        return False


def _form(plans: list, label: str) -> str:
    return next(p.form for p, lb in plans if lb == label)


def _window_name(decl: ops.WindowDecl) -> str:
    if decl.name is not None and not decl.merged:
        return decl.name.n3() if hasattr(decl.name, "n3") else str(decl.name)
    return f"FROM STREAM {decl.stream.n3()}"


def _patterns_outside_graph(op) -> list:
    """The triple patterns in ``op`` that are not inside a GRAPH block (EXISTS patterns included)."""
    from rspark.algebra.expr import TriplePattern

    out = []

    def walk(node) -> None:
        if isinstance(node, ops.Graph):
            return
        if isinstance(node, TriplePattern):
            out.append(node)
            return
        if isinstance(node, (tuple, list)):
            for item in node:
                walk(item)
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name))

    walk(op)
    return out


def _keyed(i: int, records: Iterator[ReplayOutput]) -> Iterator[tuple[int, int, ReplayOutput]]:
    return ((out.ticks, i, out) for out in records)


def _resume_instant(instants, hold) -> int:
    """The instant a carried consumption state is taken just before (:meth:`Replayer.run`): the last of
    ``instants``, or, with ``hold`` the earliest instant whose records the next run must give again, the last one
    below it (its first one when there is none below it, or when ``hold`` is None)."""
    if hold is _LAST:
        return max(instants)
    below = [] if hold is None else [t for t in instants if t < hold]
    return max(below) if below else min(instants)


def _static_part(plan: ops.QueryPlan) -> ops.QueryPlan:
    import dataclasses

    return dataclasses.replace(plan, dataset=ops.Dataset(plan.dataset.default_graphs, plan.dataset.named_graphs, ()))


def query_label(plan: ops.QueryPlan, source: str) -> str:
    """The name a query's records carry: its REGISTER name, else the file name."""
    if plan.register is not None and plan.register.name is not None:
        name = plan.register.name
        return name.value if isinstance(name, IRI) else str(name)
    return source
