"""What the log tells about an evaluation of a continuous query: INFO, its number of evaluation instants; WARNING,
what makes it give less than a user expects (windows that skip elements, patterns that match nothing, the window
still open at the stream's end)."""

from __future__ import annotations

import logging

from rspark.algebra import ops
from rspark.model import codec as E
from rspark.model.terms import IRI
from rspark.model.timestamps import format_time
from rspark.rsp.policies import WindowContent
from rspark.rsp.report import closing_instant, report_policies
from rspark.rsp.windows import TimeWindow
from rspark.spark.streaming.s2r import patterns_outside_graph

log = logging.getLogger("rspark.replay")


def check_windows(plan: ops.QueryPlan, label: str, profile, decls, resolved, sources) -> None:
    """WARNINGs about windows that leave elements out: a time window sliding by more than its range (the
    elements between two windows are in none), and, under a profile whose windows are datasets
    (``rspql-star``), triple patterns directly in a WINDOW block, which only match the window's default graph
    (the elements' timestamps and metadata), not the elements' graphs."""
    for d, rw in zip(decls, resolved):
        if isinstance(rw, TimeWindow) and rw.slide > rw.range:
            spec = d.spec
            log.warning("%s: window %s [RANGE %s SLIDE %s] slides by more than its range: the elements between "
                        "the end of one window and the start of the next are in no window", label,
                        window_name(d), spec.range.text or spec.range.amount, spec.slide.text or spec.slide.amount)
    if profile.window_content != WindowContent.DATASET:
        return
    stamps = {src.stamp_predicate for src in sources}
    named = {d.name for d in decls if d.name is not None and not d.merged}
    for node in ops.descendants(plan.op):
        if isinstance(node, ops.Window) and (node.name in named or not isinstance(node.name, IRI)):
            patterns = patterns_outside_graph(node.op)
            if any(not (isinstance(t.predicate, IRI) and E.encode(t.predicate) in stamps) for t in patterns):
                name = node.name.n3() if hasattr(node.name, "n3") else str(node.name)
                log.warning("%s: under the %s profile, WINDOW %s { ... } matches its triple patterns against the "
                            "window's default graph (the elements' timestamps and metadata), not the elements' "
                            "graphs, so a pattern over the elements' data matches nothing: write WINDOW %s "
                            "{ GRAPH ?g { ... } } (docs/profiles.md, Window content)", label, profile.name,
                            name, name)


def report_instants(label: str, instants: list, timeline, windows, *, every, profile, requested: bool) -> None:
    """INFO: how many evaluation instants the query has. WARNING, when no last instant or instants were
    ``requested``: a stream whose last elements are after the last instant, in a window still open there that
    ``until="end"`` would report. ``windows``: (resolved window, its stream) pairs."""
    if instants:
        log.info("%s: %d evaluation instant%s, %s to %s", label, len(instants), "" if len(instants) == 1 else "s",
                 format_time(instants[0], timeline), format_time(instants[-1], timeline))
    else:
        log.info("%s: no evaluation instant", label)
    if requested:
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


def window_name(decl: ops.WindowDecl) -> str:
    if decl.name is not None and not decl.merged:
        return decl.name.n3() if hasattr(decl.name, "n3") else str(decl.name)
    return f"FROM STREAM {decl.stream.n3()}"
