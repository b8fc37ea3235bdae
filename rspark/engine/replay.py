"""Replaying continuous queries over recorded streams: the replay driver of the evaluator
(:func:`rspark.spark.streaming.evaluate.evaluate`).

A replay compiles each query text once, closes the streams EP-SPARQL's CONSTRUCT rules read under them
(``rspark.engine.rules``), evaluates every query at all of its evaluation instants up to the end (a query reading a
stream another query registers after that one, with the registered stream), and merges the queries' records in
time order. The instants given by a user (``until``, ``times``) are read on each query's timeline here; the records
carry their instant formatted as the stream's timestamps are written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal, InvalidOperation

from rspark.algebra import ops
from rspark.algebra.ops import QueryForm, RegisterKind
from rspark.engine.rules import close_streams, is_rule
from rspark.errors import RsparkError
from rspark.model.terms import IRI
from rspark.model.time import TimeKind
from rspark.model.timestamps import format_time, parse_time
from rspark.rsp.profiles import get_profile
from rspark.rsp.report import END
from rspark.spark.sparql.compiler import DatasetView
from rspark.spark.streaming.evaluate import (
    EvaluationResult,
    Instants,
    evaluate,
    in_time_order,
    query_streams,
    query_timeline,
)
from rspark.spark.streaming.network import evaluate_network
from rspark.spark.streaming.record import Record
from rspark.spark.streaming.stream import Stream
from rspark.syntax.translate import compile_query, ensure_evaluable

# WARNING: numeric times read as epoch milliseconds (the evaluator logs the rest on the same logger)
log = logging.getLogger("rspark.replay")


class Replayer:
    """One replay of one or more queries over recorded streams and static data. ``static``: a query's static
    dataset (``Engine.dataset_for``); ``streams``: the recorded streams by IRI; ``profile``: an engine profile
    name (``rspark.rsp.profiles``)."""

    def __init__(self, spark, static: Callable[[ops.QueryPlan], DatasetView], streams: Mapping[str, Stream],
                 profile: str | None) -> None:
        self.spark = spark
        self.static = static
        self.streams: dict[str, Stream] = dict(streams)
        self.profile = get_profile(profile)
        self._numeric_times_warned = False  # "numbers are epoch milliseconds" is said once a replay

    def run(self, queries: list[tuple[str, str]], *, until=None, times=None) -> Iterator[Record]:
        """``queries``: (text, name) pairs. Returns an iterator of every output record in time order (ties: query
        order). ``until``: the last instant (a number or an ISO 8601 date-time), None for the last element's
        timestamp, or ``"end"``: the streams closed at their last element (``report.closing_instant``; documented at
        ``Engine.replay_iter``); ``times``: exactly these instants.

        The plans are built (and streams registered, errors raised) now; the records then stream from Spark
        instant by instant."""
        plans = []
        for text, name in queries:
            plan = compile_query(text, source=name)
            ensure_evaluable(plan, continuous=True, source=name, profile=self.profile)
            plans.append((plan, query_label(plan, name)))
        rules = [(plan, label) for plan, label in plans if is_rule(plan)]
        if rules:  # EP-SPARQL's CONSTRUCT rules: the streams they read become their Q-closure
            self.streams.update(close_streams(self.spark, self.static, self.profile, self.streams, rules))
        results = evaluate_network(plans, self.streams, self._evaluate(until, times),
                                   lambda first, known: _unknown_stream(plans, first, known))
        return in_time_order(results)

    def _evaluate(self, until, times):
        def run(plan: ops.QueryPlan, label: str, streams: Mapping[str, Stream], after: int | None) -> EvaluationResult:
            return self.run_query(plan, label, streams, until=until, times=times, after=after)
        return run

    def run_query(self, plan: ops.QueryPlan, label: str, streams: Mapping[str, Stream], *, until=None,
                  times=None, after: int | None = None) -> EvaluationResult:
        """One query at every instant up to ``until`` (or at ``times``), as :meth:`run` reads them; ``after``: an
        instant of the query's own (ticks): the later ones only (a state loop's rounds after its settled prefix)."""
        timeline = query_timeline(query_streams(plan, label, streams), label)
        self._check_times(timeline, times, until)
        if _is_end(until):
            ticks_until = END
        else:
            ticks_until = parse_time(until, timeline) if until is not None else None
        ticks_times = tuple(parse_time(t, timeline) for t in times) if times else None
        return evaluate(self.spark, plan, label, streams, self.static(plan),
                        Instants(until=ticks_until, times=ticks_times, after=after), self.profile)

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


def _unknown_stream(plans: list, first: tuple, streams: Mapping) -> RsparkError:
    """The error for a query whose stream no query registers and no recorded stream is."""
    plan, label = first
    missing = [w.stream.value for w in plan.dataset.windows if w.stream.value not in streams]
    by = next((lb for p, lb in plans if p.form != QueryForm.CONSTRUCT and p.register is not None
               and p.register.kind == RegisterKind.STREAM and isinstance(p.register.name, IRI)
               and p.register.name.value == missing[0]), None)
    if by is not None:  # a SELECT or ASK registered as a stream: its records are no RDF stream
        form = next(p.form for p, lb in plans if lb == by)
        return RsparkError(f"{label}: stream <{missing[0]}> is registered by {by}, a {form} query, whose records "
                           "are solutions, not RDF: only a CONSTRUCT query's output is a stream other queries read")
    return RsparkError(f"{label}: unknown stream <{missing[0]}> (give it with --stream {missing[0]}=PATH "
                       f"or engine.add_stream)")


def _is_end(value) -> bool:
    return isinstance(value, str) and value.strip().lower() == END


def _is_number(value) -> bool:
    """Whether a --times / --until value is a number (as parse_time reads it), not a date-time."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float, Decimal)):
        return True
    try:
        Decimal(str(value).strip())
        return True
    except (InvalidOperation, ValueError):
        return False


def query_label(plan: ops.QueryPlan, source: str) -> str:
    """The name a query's records carry: its REGISTER name, else the file name."""
    if plan.register is not None and plan.register.name is not None:
        name = plan.register.name
        return name.value if isinstance(name, IRI) else str(name)
    return source
