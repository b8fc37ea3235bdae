"""A query network: queries that register streams (REGISTER STREAM ... AS CONSTRUCT) and the queries reading them,
evaluated in dependency order, and the state loops among them (a query reading its own output stream, or a cycle
of queries reading each other's: the W3C RSP CG document's "SPARQL without Fact", whose running count reads the
count it reported before).

A loop's queries read the streams the loop registers at the instants *before* the current one (a query's output at
an instant is not on its stream when that instant is evaluated), which makes the loop well defined: its records at
an instant depend only on the records of earlier instants. The loop is evaluated by rounds, from empty output
streams: round k is exact for every instant whose chain of dependence on earlier instants of the loop is shorter
than k, and the loop has settled when a round's output streams equal the round before's. A loop that has not
settled after :data:`LOOP_ROUNDS` rounds (a state carried through more instants than that) is an error that says
so, never a partial answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from rspark.algebra import ops
from rspark.algebra.ops import RegisterKind
from rspark.errors import RsparkError
from rspark.model.terms import IRI
from rspark.spark.frames import local_frame
from rspark.spark.streaming.evaluate import EvaluationResult
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.stream import Stream

LOOP_ROUNDS = 16  # the rounds a state loop may take to settle (its depth: the instants a state is carried through)

Query = tuple[ops.QueryPlan, str]


def evaluate_network(queries: Sequence[Query], streams: Mapping[str, Stream],
                     evaluate_one: Callable[[ops.QueryPlan, str, Mapping[str, Stream]], EvaluationResult],
                     unknown: Callable[[Query, Mapping], Exception],
                     loops: Callable[[list], Exception] | None = None) -> list[EvaluationResult]:
    """Evaluates a query network: each query once every stream it reads is known, a query that registers a stream
    (REGISTER STREAM) before the queries reading it, which are given its output stream; the queries of a state loop
    together, by rounds (module docstring). ``evaluate_one`` evaluates one query over the streams known so far;
    ``unknown`` is the error for a query whose stream is neither given nor registered; ``loops``, when given, the
    error for a state loop (which is then not evaluated: live mode's). Returns the results in the order of
    ``queries``."""
    known = dict(streams)
    results: dict[int, EvaluationResult] = {}
    pending = list(enumerate(queries))
    while pending:
        ready = [(i, q) for i, q in pending if all(w.stream.value in known for w in q[0].dataset.windows)]
        if not ready:
            loop = state_loop(pending, known)
            if not loop:
                raise unknown(pending[0][1], known)
            if loops is not None:
                raise loops(loop)
            ready = loop
            results.update(_evaluate_loop(loop, known, evaluate_one))
        else:
            for i, (plan, label) in ready:
                results[i] = evaluate_one(plan, label, known)
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


def _evaluate_loop(loop: list[tuple[int, Query]], known: Mapping[str, Stream],
                   evaluate_one: Callable[[ops.QueryPlan, str, Mapping[str, Stream]], EvaluationResult]
                   ) -> dict[int, EvaluationResult]:
    """The loop's queries by rounds until their output streams settle (module docstring)."""
    labels = ", ".join(label for _, (_, label) in loop)
    outputs = {iri: _empty(iri, loop, known) for iri in (_registers(q[0]) for _, q in loop)}
    before = None
    for _ in range(LOOP_ROUNDS):
        view = {**known, **outputs}
        results = {i: evaluate_one(plan, label, view) for i, (plan, label) in loop}
        # the records run now (each round's plans read the round before's outputs, cut from their lineage)
        results = {i: dataclasses.replace(r, records=iter(list(r.records))) for i, r in results.items()}
        streams = {r.output.iri: r.output for r in results.values() if r.output is not None}
        contents = {iri: sorted(map(tuple, s.quads.select("ts", "s", "p", "o").collect()))
                    for iri, s in streams.items()}
        if contents == before:
            return results
        before = contents
        outputs = {iri: dataclasses.replace(s, feedback=True) for iri, s in streams.items()}
    raise RsparkError(f"the state loop of {labels} did not settle in {LOOP_ROUNDS} rounds: a state it reads back "
                      f"is carried through more than {LOOP_ROUNDS - 1} of its instants (replay a shorter span with "
                      "--until, or carry the state in fewer, longer windows)")


def _empty(iri: str, loop: list[tuple[int, Query]], known: Mapping[str, Stream]) -> Stream:
    """A loop's output stream before its first round: no element, on the timeline of the streams the loop reads."""
    for _, (plan, _) in loop:
        for w in plan.dataset.windows:
            src = known.get(w.stream.value)
            if src is not None:
                spark = src.elements.sparkSession
                triples = local_frame(spark, [], f"{KEY} long, s string, p string, o string")
                return dataclasses.replace(Stream.from_records(iri, triples, src.timeline, None), feedback=True)
    names = ", ".join(label for _, (_, label) in loop)
    raise RsparkError(f"{names}: a state loop reads no stream but its own output (it has nothing to start from)")
