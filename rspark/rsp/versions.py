"""Time-varying background graphs (RSP-QL's G(t)): which version of a graph a query reads at an instant.

A background graph may be given in versions, each valid from an instant: the version valid at instant ``t`` is the
one with the latest start at or before ``t``; a graph's data given with no instant is the version valid from the
beginning (before its first dated version). Before its first version a graph that has only dated versions is
empty. A version replaces the graph: nothing of the version before it stays. Pure arithmetic in ticks; the
DataFrame form is ``rspark.spark.streaming.background``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from rspark.model.time import Timeline
from rspark.model.timestamps import parse_time

# the bounds of a version's span that has none (no start: from the beginning; no later version: for ever)
FIRST = -(2**63)
LAST = 2**63 - 1


def instant_key(since) -> int:
    """A version's instant as given (a number or an ISO 8601 date-time; None: from the beginning) as a number to
    compare versions by, on no stream's timeline (numbers as milliseconds); a RsparkError names a value that is
    no instant."""
    return FIRST if since is None else parse_time(since, Timeline.datetime())


def version_spans(versions: Sequence[tuple[Hashable, int | None]]) -> list[tuple[int, int]]:
    """For each ``(graph, start)`` (``start`` in ticks, None: from the beginning), the span ``[from, until)`` of
    instants at which it is the version of its graph a query reads: from its start until the next later start of
    the same graph. Versions of a graph with equal starts are one version (both are read over the same span)."""
    starts: dict[Hashable, list[int]] = {}
    for graph, start in versions:
        starts.setdefault(graph, []).append(FIRST if start is None else start)
    for values in starts.values():
        values.sort()
    spans = []
    for graph, start in versions:
        begin = FIRST if start is None else start
        later = [s for s in starts[graph] if s > begin]
        spans.append((begin, later[0] if later else LAST))
    return spans


def valid_at(spans: Sequence[tuple[int, int]], t: int) -> list[int]:
    """The indexes of the spans holding instant ``t``."""
    return [i for i, (begin, until) in enumerate(spans) if begin <= t < until]
