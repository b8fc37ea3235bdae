"""A query network: queries that register streams (REGISTER STREAM ... AS CONSTRUCT) and the queries reading them,
evaluated in dependency order, and the state loops among them (a query reading its own output stream, or a cycle
of queries reading each other's: the W3C RSP CG document's "SPARQL without Fact", whose running count reads the
count it reported before).

A loop's queries read the streams the loop registers at the instants *before* the current one (a query's output at
an instant is not on its stream when that instant is evaluated), which makes the loop well defined: its records at
an instant depend only on the records of earlier instants. The loop is evaluated by rounds from a settled prefix
(its outputs up to an instant, known to be final: none at first, or, live, what the micro-batch before settled):
round k is exact for every later instant whose chain of dependence on the loop's earlier instants is shorter than
k, and the loop has settled when a round's outputs equal the round before's. Two rounds that agree up to an instant
are final up to it (the instants up to it read only what agrees), so when :data:`LOOP_ROUNDS` rounds have not
settled the loop, the prefix moves to the first instant where the last two differ and the rounds start again from
there, evaluating the later instants only: a state carried through any number of instants settles, at most
:data:`LOOP_ROUNDS` rounds per step. The first instant after the prefix reads the prefix alone, so it cannot differ
from round to round unless the evaluation itself does (RAND(), a fresh blank node): that loop never settles, and
is an error that names it, never a partial answer.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.ops import RegisterKind
from rspark.errors import RsparkError
from rspark.model.terms import IRI
from rspark.spark.frames import local_frame
from rspark.spark.streaming.evaluate import EvaluationResult
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.stream import Stream

LOOP_ROUNDS = 16  # a state loop's rounds before its settled prefix moves on (module docstring)

Query = tuple[ops.QueryPlan, str]
# evaluates one query: (plan, label, the streams known, the instant after which its instants are wanted)
Evaluate = Callable[[ops.QueryPlan, str, Mapping[str, Stream], "int | None"], EvaluationResult]


@dataclass(frozen=True)
class LoopSeed:
    """A loop's settled prefix: ``outputs`` the triples (``KEY``, s, p, o) each stream the loop registers holds at
    the instants up to ``settled`` (ticks), final; ``after`` a loop query's label -> the last instant of its own it
    reported (its evaluation starts after it, R2S's reference under ISTREAM and DSTREAM)."""

    outputs: dict[str, DataFrame]
    settled: int
    after: dict[str, int | None] = field(default_factory=dict)


def evaluate_network(queries: Sequence[Query], streams: Mapping[str, Stream], evaluate_one: Evaluate,
                     unknown: Callable[[Query, Mapping], Exception],
                     seed: LoopSeed | None = None) -> list[EvaluationResult]:
    """Evaluates a query network: each query once every stream it reads is known, a query that registers a stream
    (REGISTER STREAM) before the queries reading it, which are given its output stream; the queries of a state loop
    together, by rounds (module docstring). ``evaluate_one(plan, label, streams, after)`` evaluates one query over
    the streams known so far, at its instants after ``after`` (None: all of them); ``unknown`` is the error for a
    query whose stream is neither given nor registered; ``seed``: the loops' settled prefix (live mode's, from the
    micro-batch before). Returns the results in the order of ``queries``."""
    known = dict(streams)
    results: dict[int, EvaluationResult] = {}
    pending = list(enumerate(queries))
    while pending:
        ready = [(i, q) for i, q in pending if all(w.stream.value in known for w in q[0].dataset.windows)]
        if not ready:
            loop = state_loop(pending, known)
            if not loop:
                raise unknown(pending[0][1], known)
            ready = loop
            results.update(_evaluate_loop(loop, known, evaluate_one, seed))
        else:
            for i, (plan, label) in ready:
                results[i] = evaluate_one(plan, label, known, None)
        for i, _ in ready:
            if results[i].output is not None:
                known[results[i].output.iri] = results[i].output
        done = {i for i, _ in ready}
        pending = [(i, q) for i, q in pending if i not in done]
    return [results[i] for i in range(len(queries))]


def _registers(plan: ops.QueryPlan) -> str | None:
    reg = plan.register
    if reg is not None and reg.kind == RegisterKind.STREAM and isinstance(reg.name, IRI):
        return reg.name.value
    return None


def loop_members(queries: Sequence[Query]) -> set[str]:
    """The labels of the queries that are part of a state loop, or feed one from the network (:func:`state_loop`
    over the queries, every stream none of them registers taken as given)."""
    registered = {_registers(plan) for plan, _ in queries} - {None}
    given = {w.stream.value for plan, _ in queries for w in plan.dataset.windows} - registered
    return {label for _, (_, label) in state_loop(list(enumerate(queries)), dict.fromkeys(given))}


def state_loop(pending: list[tuple[int, Query]], known: Mapping[str, Stream]) -> list[tuple[int, Query]]:
    """The pending queries that form state loops: each reads only known streams and streams registered by the
    others, and its own output is read by one of them (the queries downstream of a loop, whose output no loop query
    reads, are evaluated after it, as any reader). Empty when some stream is neither known nor registered."""
    registered = {_registers(q[0]) for _, q in pending} - {None}
    loop = [(i, q) for i, q in pending
            if all(w.stream.value in known or w.stream.value in registered for w in q[0].dataset.windows)]
    while True:
        read = {w.stream.value for _, q in loop for w in q[0].dataset.windows}
        kept = [(i, q) for i, q in loop if _registers(q[0]) in read]
        if len(kept) == len(loop):
            return kept
        loop = kept


def _evaluate_loop(loop: list[tuple[int, Query]], known: Mapping[str, Stream], evaluate_one: Evaluate,
                   seed: LoopSeed | None) -> dict[int, EvaluationResult]:
    """The loop's queries by rounds until their output streams settle, moving the settled prefix on when
    :data:`LOOP_ROUNDS` rounds do not (module docstring)."""
    like = _timeline_stream(loop, known)
    iris = [_registers(q[0]) for _, q in loop]
    settled = seed.settled if seed is not None else None
    given = seed.outputs if seed is not None else {}
    prefix = {iri: given[iri] if iri in given else _no_triples(like) for iri in iris}
    after = {i: seed.after.get(label) if seed is not None else None for i, (_, label) in loop}
    kept: dict[int, list] = {i: [] for i, _ in loop}  # each query's records up to the settled instant
    instants: dict[int, set] = {i: set() for i, _ in loop}
    outputs = {iri: _stream(iri, prefix[iri], like, settled) for iri in iris}
    while True:
        older = newer = None
        for _ in range(max(2, LOOP_ROUNDS)):
            view = {**known, **outputs}
            results = {i: evaluate_one(plan, label, view, after[i]) for i, (plan, label) in loop}
            # the records run now (each round's plans read the round before's outputs, cut from their lineage)
            records = {i: [rec for rec in r.records if settled is None or rec.ticks > settled]
                       for i, r in results.items()}
            fresh = {r.output.iri: _after(r.output, settled) for r in results.values() if r.output is not None}
            ends = {r.output.iri: r.output.end for r in results.values() if r.output is not None}
            contents = {iri: Counter(map(tuple, df.collect())) for iri, df in fresh.items()}
            if contents == newer:
                return {i: dataclasses.replace(
                    r, records=iter(kept[i] + records[i]), instants=sorted(instants[i] | set(r.instants)),
                    output=None if r.output is None else _stream(
                        r.output.iri, prefix[r.output.iri].unionByName(fresh[r.output.iri]), like, r.output.end,
                        feedback=False)) for i, r in results.items()}
            older, newer = newer, contents
            outputs = {iri: _stream(iri, prefix[iri].unionByName(df), like, ends[iri]) for iri, df in fresh.items()}
        # the last two rounds agree up to their first difference: final up to it (module docstring)
        moved = min(row[0] for iri in newer for row in (older[iri] - newer[iri]) + (newer[iri] - older[iri]))
        first = min((t for r in results.values() for t in r.instants if settled is None or t > settled),
                    default=moved)
        if moved <= first:
            raise RsparkError(f"the state loop of {', '.join(label for _, (_, label) in loop)} does not settle: its "
                              "output at its first instant differs from one evaluation to the next (RAND(), NOW() "
                              "or a fresh blank node in what it registers), so no round agrees with the one before")
        for i, r in results.items():
            kept[i] += [rec for rec in records[i] if rec.ticks <= moved]
            instants[i] |= {t for t in r.instants if t <= moved}
            after[i] = max((t for t in r.instants if t <= moved), default=after[i])
        prefix = {iri: prefix[iri].unionByName(df.where(F.col(KEY) <= moved)).localCheckpoint()
                  for iri, df in fresh.items()}
        settled = moved
        outputs = {iri: _stream(iri, prefix[iri], like, settled) for iri in iris}


def _after(output: Stream, settled: int | None) -> DataFrame:
    """A round's output stream as triples (``KEY``, s, p, o), at the instants after ``settled``."""
    df = output.quads.select(F.col("ts").alias(KEY), "s", "p", "o")
    return df if settled is None else df.where(F.col(KEY) > settled)


def _stream(iri: str, triples: DataFrame, like: Stream, end: int | None, feedback: bool = True) -> Stream:
    """A loop's output stream from its triples: read inside the loop (``feedback``: before each instant), or by
    the queries after it."""
    return dataclasses.replace(Stream.from_records(iri, triples, like.timeline, end), feedback=feedback)


def _no_triples(like: Stream) -> DataFrame:
    return local_frame(like.elements.sparkSession, [], f"{KEY} long, s string, p string, o string")


def _timeline_stream(loop: list[tuple[int, Query]], known: Mapping[str, Stream]) -> Stream:
    """A stream the loop reads beside its own outputs: the loop's outputs are on its timeline."""
    for _, (plan, _) in loop:
        for w in plan.dataset.windows:
            src = known.get(w.stream.value)
            if src is not None:
                return src
    names = ", ".join(label for _, (_, label) in loop)
    raise RsparkError(f"{names}: a state loop reads no stream but its own output (it has nothing to start from)")
