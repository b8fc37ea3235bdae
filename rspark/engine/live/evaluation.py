"""Live mode's driver of the evaluator (:func:`rspark.spark.streaming.evaluate.evaluate`): when a live query's
instants are due and which ones. The running queries are evaluated in groups (a query network, one profile); a
group's horizon is one tick before the least watermark of the streams it reads; each query is evaluated over its
input buffers (as streams) at the instants due since the last one it reported, up to the horizon, from its compiled
plan and the state the evaluation before left (its consumption, the instant a consuming query resumes from); the
records are delivered to the sinks once each, and the buffers pruned to what a later evaluation may still read.

Every instant here is in ticks of the group's timeline (``rspark.model.time.Timeline``); time values are read and
written only at the edges (``until``, the checkpoint, the status).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from decimal import Decimal

from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.ops import RegisterKind
from rspark.cep.carried import resume_ticks
from rspark.cep.patterns import consumes_events
from rspark.engine.live.registry import LiveQuery, LiveStream, rescale
from rspark.engine.rules import close_streams, is_rule
from rspark.errors import RsparkError
from rspark.model.time import Timeline
from rspark.model.timestamps import parse_time
from rspark.rsp.policies import R2S
from rspark.rsp.profiles import get_profile
from rspark.rsp.report import may_report, report_policies, stream_operator
from rspark.rsp.windows import ElementWindow, TimeWindow, resolve_window
from rspark.spark.sparql.compiler import DatasetView
from rspark.spark.streaming.evaluate import (
    LAST,
    Carried,
    EvaluationResult,
    Instants,
    evaluate,
    in_time_order,
)
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.network import LoopSeed, evaluate_network, loop_members
from rspark.spark.streaming.stream import Stream


class LiveScheduler:
    """Evaluates live mode's queries as their instants become due. ``static``: a query's static dataset;
    ``recorded``: the recorded streams a live query may read beside live ones (they have no watermark);
    ``streams`` and ``queries``: live mode's streams and queries by IRI and name (read, not owned: the runner
    adds and removes them, under its lock)."""

    def __init__(self, spark, static: Callable[[ops.QueryPlan], DatasetView], recorded: Mapping[str, Stream],
                 streams: Mapping[str, LiveStream], queries: Mapping[str, LiveQuery]) -> None:
        self.spark = spark
        self.static = static
        self.recorded = recorded
        self.streams = streams
        self.queries = queries

    def evaluate(self, *, until=None, arrived: float | None = None, final: bool = False) -> int:
        """Evaluates every query whose instants up to its horizon were not all reported; returns the records
        delivered. ``final``: the streams are closed where they are: the horizon is the greatest timestamp seen
        (the watermark ignores the lateness), as a replay of what arrived evaluates up to its last element.
        ``until``: a time value no horizon passes."""
        delivered = 0
        for group in self._groups():
            inputs = {iri for q in group for iri in q.reads} - {q.writes for q in group}
            horizon = self._horizon(inputs, final)
            if horizon is None:
                continue
            tl, ticks = horizon
            for q in group:
                q.on_timeline(tl)
            if until is not None:
                ticks = min(ticks, parse_time(until, tl))
            fresh = [q for q in group if q.horizon is None or q.horizon < ticks]
            if not fresh:
                continue
            if not final and all(self._nothing_due(q, tl, ticks) for q in fresh):
                # no window closes and no period ends before the new horizon (most micro-batches of a window
                # longer than a batch): the horizon moves on without a plan, as the replay would find no instant
                self._advance(group, inputs, ticks, tl)
                continue
            results = self._evaluate_group(group, inputs, tl, ticks)
            delivered += self._deliver(group, results, arrived)
            self._advance(group, inputs, ticks, tl)
        if delivered:  # a sink that gathers records (Kafka) writes the micro-batch's, every query's, at once
            for sink in {id(s): s for q in self.queries.values() for s in q.sinks}.values():
                sink.flush()
        self._prune()
        return delivered

    def _evaluate_group(self, group: list[LiveQuery], inputs: set, tl: Timeline, until: int) -> list:
        """Each query of the group at its instants due up to ``until``, over the input buffers. A query whose
        output stream another query of the group reads is evaluated from the buffer's start: its records at the
        instants before its last one are that stream's content (:meth:`_need` keeps the elements they read); the
        others from their last reported instant. A query that consumes events resumes from the consumption state
        the evaluation before left, and from the instant that state was taken before; feeding others, it is taken
        before the earliest records they may still read."""
        streams = dict(self.recorded)
        streams.update({iri: self.streams[iri].buffer.source() for iri in inputs if iri in self.streams})
        rules = [(q.plan, q.label) for q in group if is_rule(q.plan)]
        if rules:  # EP-SPARQL's CONSTRUCT rules: the streams they read become their Q-closure
            streams.update(close_streams(self.spark, self.static, get_profile(group[0].profile), streams, rules))
        fed = {iri for q in group for iri in q.reads}
        feeding = {q.label for q in group if q.writes and q.writes in fed}
        first = None
        if any(q.label in feeding and q.consumption is not None for q in group):
            first = min(self.streams[iri].buffer.first for iri in inputs if iri in self.streams)
        by_label = {q.label: q for q in group}
        loops = {by_label[label] for label in loop_members([(q.plan, q.label) for q in group])}

        def run(plan: ops.QueryPlan, label: str, known: Mapping[str, Stream], after: int | None) -> EvaluationResult:
            q = by_label[label]
            if q in loops:  # (its consumption state, if any, is not carried: the rounds evaluate it again)
                return evaluate(self.spark, plan, label, known, self.static(plan), Instants(until=until, after=after),
                                get_profile(q.profile))
            carried = None
            if q.consumption is not None:
                hold = LAST
                if q.label in feeding:
                    hold = self._readers_need(q, tl, first, frozenset({q.name}))
                carried = Carried(q.consumption, hold)
            instants = Instants(until=until, after=_resumes_after(q, q.label in feeding, tl))
            return evaluate(self.spark, plan, label, known, self.static(plan), instants, get_profile(q.profile),
                            carried)

        def unknown(first_query, known) -> RsparkError:
            missing = [w.stream.value for w in first_query[0].dataset.windows if w.stream.value not in known]
            return RsparkError(f"{first_query[1]}: unknown stream <{missing[0]}>")

        results = evaluate_network([(q.plan, q.label) for q in group], streams, run, unknown,
                                   seed=_loop_seed(loops, tl))
        for q, result in zip(group, results):
            if q in loops and result.output is not None:  # what the next micro-batch's rounds start from
                triples = result.output.quads.select(F.col("ts").alias(KEY), "s", "p", "o")
                q.loop_output = (tl, until, triples.where(F.col(KEY) <= until).localCheckpoint(eager=True))
        return results

    def _deliver(self, group: list[LiveQuery], results: list, arrived: float | None) -> int:
        """Gives each record not reported before to its query's sinks; moves each query's last reported instant
        and carried consumption state to where its evaluation left them."""
        delivered = 0
        by_label = {q.label: q for q in group}
        for rec in in_time_order(results):
            q = by_label[rec.query]
            if q.last is not None and rec.ticks <= q.last:
                continue  # reported before (R2S's reference instant, or a batch run again)
            if q.paused:
                continue
            for sink in q.sinks:
                sink.write(rec)
            q.records += 1
            delivered += 1
            if arrived is not None:
                q.latencies.append(time.time() - arrived)
                del q.latencies[:-1000]
        for q, result in zip(group, results):
            if len(result.instants):
                newest = max(result.instants)
                if q.last is None or newest > q.last:
                    q.last = newest
            if result.carried is not None:
                q.consumption = result.carried
        return delivered

    def _advance(self, group: list[LiveQuery], inputs: set, ticks: int, tl: Timeline) -> None:
        """The group was evaluated up to ``ticks``: its queries' horizon, and their input streams' evaluated
        instant, move there."""
        for q in group:
            q.horizon = ticks
            q.evaluations += 1
        for iri in inputs:
            st = self.streams.get(iri)
            if st is not None:
                h = rescale(ticks, tl, st.timeline())
                st.evaluated = h if st.evaluated is None else max(st.evaluated, h)

    def _nothing_due(self, q: LiveQuery, tl: Timeline, until: int) -> bool:
        """Whether ``q`` certainly has no instant in (its last reported one, ``until``], known without Spark: each
        of its windows is time-based, reports at its closes or periods (RSEP-QL, Def. 5; the report policies of
        :mod:`rspark.spark.streaming.report`), and none falls there. False when it may have one, or when that
        depends on the data (content change), on earlier instants (consumed events, when no consumption state
        is carried), or on other queries (a REGISTER STREAM query, a stream another query writes)."""
        plan = q.plan
        if q.last is None or (plan.register is not None and plan.register.kind == RegisterKind.STREAM):
            return False
        profile = get_profile(q.profile)
        if q.consumption is None and consumes_events(plan.op, profile):
            return False
        every = None
        if plan.register is not None and plan.register.every is not None:
            every = tl.duration(plan.register.every, "COMPUTED EVERY")
        for d in plan.dataset.windows:
            st = self.streams.get(d.stream.value)
            if st is None or st.buffer.first is None or st.timeline() != tl:
                return False
            rw = resolve_window(d.spec, profile, tl, first_ts=st.buffer.first)
            if may_report(rw, report_policies(profile, rw, every), st.buffer.first, q.last, until, every) \
                    is not False:
                return False
        return True

    def _groups(self) -> list[list[LiveQuery]]:
        """The running queries in groups that are evaluated together: a query that registers a stream and the
        queries that read it (a query network), under one profile."""
        live = [q for q in self.queries.values() if not q.stopped]
        groups: list[list[LiveQuery]] = []
        for q in live:
            linked = [g for g in groups if any(o.writes in q.reads or q.writes in o.reads for o in g
                                               if o.writes or q.writes)]
            merged = [q]
            for g in linked:
                groups.remove(g)
                merged = g + merged
            groups.append(merged)
        return groups

    def _horizon(self, inputs: set, final: bool) -> tuple[Timeline, int] | None:
        """The group's timeline and horizon: the least watermark of its input streams (None while one has no
        element); ``final``: the least greatest timestamp seen."""
        marks, timelines = [], []
        for iri in inputs:
            st = self.streams.get(iri)
            if st is None:
                if iri in self.recorded:  # a recorded stream read beside live ones: it has no watermark
                    continue
                return None
            mark = st.buffer.last if final else st.watermark()
            if mark is None:
                return None
            if not final:
                mark -= 1  # the instants before the watermark: an element at the watermark is still on time
            tl = st.timeline()
            timelines.append(tl)
            marks.append(Decimal(mark) / tl.scale)
        if not marks:
            return None
        if len({tl.kind for tl in timelines}) > 1:
            raise RsparkError("a live query mixes date-time and numeric streams")
        tl = max(timelines, key=lambda t: t.scale)
        return tl, int(min(marks) * tl.scale)

    def _prune(self) -> None:
        """Drops from each buffer the elements no query can read again; then keeps what the driver holds of each
        within its limit (:meth:`~rspark.engine.live.buffer.LiveBuffer.compact`)."""
        for iri, st in self.streams.items():
            keep = self._keep_from(iri, st)
            if keep is not None and st.buffer.low is not None and keep > st.buffer.low:
                st.buffer.prune(keep)
            st.buffer.compact()

    def _keep_from(self, iri: str, st: LiveStream) -> int | None:
        """The earliest timestamp (ticks) a query reading ``iri`` may still read: the last reported instant minus
        the range and slide of its time windows (R2S compares the next instant with that one); for a query whose
        output stream feeds other queries, the earliest instant those may still read of it comes first. None: keep
        everything (no query reads the stream yet, or one reads it, or reads what it feeds, through a landmark,
        interval or count window, or consumes events without carrying its consumption state from run to run,
        which then depends on every earlier instant)."""
        readers = [q for q in self.queries.values() if not q.stopped and iri in q.reads]
        if not readers or st.buffer.first is None:
            return None
        tl = st.timeline()
        keep = None
        for q in readers:
            need = self._need(q, iri, tl, st.buffer.first, frozenset())
            if need is None:
                return None
            keep = need if keep is None else min(keep, need)
        return keep

    def _need(self, q: LiveQuery, iri: str, tl: Timeline, first: int, seen: frozenset) -> int | None:
        """The earliest timestamp (ticks of ``tl``) of ``iri`` that ``q``, or a query ``q``'s output feeds, may
        still read; None: every one."""
        profile = get_profile(q.profile)
        if q.last is None or q.name in seen or (q.consumption is None and consumes_events(q.plan.op, profile)):
            return None
        reach = 0
        resolved = [resolve_window(d.spec, profile, tl, first_ts=first) for d in q.plan.dataset.windows]
        for d, rw in zip(q.plan.dataset.windows, resolved):
            if d.stream.value != iri or isinstance(rw, ElementWindow):  # (no window: only the element's instant)
                continue
            if not isinstance(rw, TimeWindow):
                return None
            reach = max(reach, rw.reach)
        start = q.last_on(tl)
        if reach == 0 and stream_operator(q.plan.r2s, profile, resolved) is R2S.RSTREAM:
            start += 1  # the reported instant is not evaluated again (no R2S reference): nothing of it is read
        if q.consumption is not None:  # the next run starts where its carried state was taken
            resume = resume_ticks(q.consumption, tl.scale)
            if resume is not None:
                start = min(start, resume)
        if q.writes:  # its records at the instants its readers' windows still cover are evaluated again
            start = self._readers_need(q, tl, first, seen | {q.name}, start)
            if start is None:
                return None
        return start - reach

    def _readers_need(self, q: LiveQuery, tl: Timeline, first: int, seen: frozenset, need=None) -> int | None:
        """The earliest timestamp (ticks) of ``q``'s output stream that a query reading it may still read, or
        ``need`` if that is earlier; None: every one (or no query reads it and ``need`` is None)."""
        for reader in self.queries.values():
            if not reader.stopped and q.writes in reader.reads:
                theirs = self._need(reader, q.writes, tl, first, seen)
                if theirs is None:
                    return None
                need = theirs if need is None else min(need, theirs)
        return need


def _loop_seed(loops: set[LiveQuery], tl: Timeline) -> LoopSeed | None:
    """The state loops' settled prefix: each loop query's output up to the horizon of the evaluation before, when
    every one of them has it on ``tl`` (else None: the rounds start from the buffers' start, which a loop's
    readers keep whole)."""
    held = [q.loop_output for q in loops]
    if not loops or any(h is None or h[0] != tl for h in held) or len({h[1] for h in held}) != 1:
        return None
    return LoopSeed({q.writes: q.loop_output[2] for q in loops}, held[0][1], {q.label: q.last for q in loops})


def _resumes_after(q: LiveQuery, feeding: bool, tl: Timeline) -> int | None:
    """The instant ``q``'s evaluation starts after (ticks; None: the buffer's start): the instant its carried
    consumption state was taken before, else its last reported instant, or the buffer's start when its output
    stream feeds a query of its group."""
    if q.consumption is not None:
        start = resume_ticks(q.consumption, tl.scale)
        return q.last if start is None else start
    return None if feeding else q.last
