"""S2R: a stream window's content at every evaluation instant (RSP-QL, Dell'Aglio et al. 2015, section 4), built
from the stream, the window resolved on the stream's timeline, and the instants.

Each builder is a function of (stream, resolved window, instants) that returns a Spark frame keyed by the instant
column ``__t``; :func:`window_contents` gathers, for every window of a query, the builders the R2R compiler reads
(:class:`~rspark.spark.streaming.r2r.WindowContent`). Nothing is built until a pattern reads it: a query whose window
only feeds event patterns never builds its content, nor runs the duplicate check the content may ask for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.algebra.expr import TriplePattern
from rspark.errors import NotSupportedError
from rspark.model import codec as E
from rspark.model.terms import IRI
from rspark.rsp.policies import CountUnit
from rspark.rsp.windows import CountWindow, ElementWindow, TimeWindow
from rspark.spark.cep.match import WindowEvents
from rspark.spark.sparql.compiler import ActiveGraph, Context, memoized
from rspark.spark.sparql.solutions import Solutions
from rspark.spark.streaming.bgp_window import BGPWindow, positioned_triples, window_blocks
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.r2r import PaneContent, WindowContent, element_metadata, no_graphs, now_sql
from rspark.spark.streaming.stream import Stream
from rspark.spark.streaming.windows import PANE, PANE_BUCKET, assign_window, pane_spans

# (triple pattern, frame, key column) -> its solutions: how a [RANGE BGP n] window matches its counted pattern
Scan = Callable[[TriplePattern, DataFrame, str], Solutions]


def assign_elements(src: Stream, frame: DataFrame, rw, instants, **kwargs) -> DataFrame:
    """:func:`assign_window` over ``frame`` (rows of ``src``'s elements: ``element``, ``ts``, ``seq``, ...), with the
    end of each element's validity when ``src`` has elements valid over an interval and ``rw`` holds them while
    they meet it (rspark.rsp.windows); the result has ``frame``'s columns plus ``instant``."""
    frame = partitioned(src, frame, rw)
    if src.parameterized:
        kwargs.setdefault("parameters", True)
    if not rw.meets or src.ends is None or isinstance(rw, (CountWindow, ElementWindow)):
        return before_instant(src, assign_window(frame, rw, instants, **kwargs))
    return before_instant(src, assign_window(src.with_ends(frame), rw, instants, **kwargs).drop("te"))


def partitioned(src: Stream, frame: DataFrame, rw) -> DataFrame:
    """``frame`` (rows of ``src``'s elements), those of elements with a key when ``rw`` is a partitioned time window
    (``[RANGE d PARTITION BY p]``: the union over the keys of each key's time range holds the elements that have
    a ``p`` triple, in the range)."""
    if not isinstance(rw, TimeWindow) or rw.partition is None:
        return frame
    keyed = src.quads.where(F.col("p") == F.lit(E.encode(IRI(rw.partition)))).select("element")
    return frame.join(keyed, "element", "left_semi")


def before_instant(src: Stream, assigned: DataFrame) -> DataFrame:
    """``assigned`` (rows of ``src`` with their ``instant``), those before their instant when ``src`` is a stream a
    state loop reads back (rspark.spark.streaming.network)."""
    return assigned.where(F.col("ts") < F.col("instant")) if src.feedback else assigned


def content(src: Stream, rw, instants, predicates: frozenset | None = None) -> DataFrame:
    """A window's content at every instant: (__t, s, p, o), a set per instant (the snapshot is an RDF graph).

    ``instants``: the instant values (a list, so that the window code knows how many there are and broadcasts
    them). A window that selects by timestamp alone (time-based, landmark, interval, NOW) assigns the quads
    themselves, which carry their element's timestamp: there is no (instant, element) join, and Spark pushes
    the query's triple-pattern selections and filters below the copy into windows, so only matching triples
    are copied. Count windows rank elements (or triples) first and join the content to the ranks.

    ``predicates``: those of every triple pattern of the query (``r2r.pattern_predicates``), or None: the
    content is a set without a DISTINCT when the stream's triples with these predicates are unique."""
    if isinstance(rw, CountWindow) and rw.unit == CountUnit.TRIPLES:
        assigned = assign_elements(src, src.elements, rw, instants, quads=src.quads)
        return assigned.select(F.col("instant").alias(KEY), "s", "p", "o").distinct()
    quads = src.content(predicates)  # (a triple window, above, counts every triple: it reads them all)
    if isinstance(rw, CountWindow):
        assigned = assign_elements(src, src.elements, rw, instants, quads=src.quads).select("instant", "element")
        out = assigned.join(quads.select("element", "s", "p", "o"), "element")
    else:
        out = assign_elements(src, quads.select("element", "ts", "seq", "s", "p", "o"), rw, instants)
        assigned = None
    out = out.select(F.col("instant").alias(KEY), "s", "p", "o")
    if src.has_metadata():
        if assigned is None:
            assigned = assign_elements(src, src.elements, rw, instants, quads=src.quads).select("instant", "element")
        out = out.unionByName(element_metadata(src, assigned))
    if assigned is None and src.triples_unique(predicates):
        return out  # each triple the query reads is in one element: no duplicate to remove
    return out.distinct()


def pane_content(src: Stream, rw, instants, predicates: frozenset | None) -> Callable[[], PaneContent | None] | None:
    """A window's triples by pane, for a conjunctive pattern matched before the window
    (:class:`~rspark.spark.streaming.r2r.PaneContent`), when the window is assigned by panes over a stream Spark
    reads, and its elements are points in time, taken at their timestamp: a function that gives it once every
    triple the query reads (``predicates``, as :func:`content`) lies in one element and the stream has no element
    metadata (a job each, the first asks and :func:`content` would ask too), else None."""
    spans = pane_spans(rw, instants)
    if spans is None or src.feedback or src.parameterized or (src.ends is not None and rw.meets):
        return None

    def build() -> PaneContent | None:
        if src.has_metadata() or not src.triples_unique(predicates):
            return None

        def triples() -> DataFrame:  # (an occurrence over [pane, pane], as PaneGraph reads it)
            bucketed = spans.bucketed(src.content(predicates).select("ts", "s", "p", "o"))
            return bucketed.select(PANE_BUCKET, "s", "p", "o", F.col(PANE).alias("ts0"), F.col(PANE).alias("ts"))

        return PaneContent(memoized(triples), spans)

    return memoized(build)


def dated(src: Stream, rw, instants, metadata: bool = False) -> DataFrame:
    """A window's quads at every instant with their element: ``(instant, element, s, p, o, ts)``; with
    ``metadata``, also the elements' metadata (``s`` the element)."""
    cols = ("instant", "element", "s", "p", "o", "ts")
    if isinstance(rw, CountWindow) and rw.unit == CountUnit.TRIPLES:  # a triple window holds no metadata
        return assign_elements(src, src.elements, rw, instants, quads=src.quads).select(*cols)
    if not isinstance(rw, CountWindow) and not metadata:
        return assign_elements(src, src.quads.select("element", "ts", "seq", "s", "p", "o"), rw, instants).select(*cols)
    assigned = assign_elements(src, src.elements, rw, instants, quads=src.quads).select("instant", "element", "ts")
    triples = src.quads.select("element", "s", "p", "o")
    if metadata and src.has_metadata():
        triples = triples.unionByName(src.metadata.select(F.col("s").alias("element"), F.col("s"), "p", "o"))
    return assigned.join(triples, "element").select(*cols)


def occurrences(src: Stream, rw, instants) -> DataFrame:
    """A window's dated triple occurrences at every instant (EP-SPARQL patterns): ``(__t, s, p, o, ts0, ts)``,
    ``[ts0, ts]`` the occurrence's interval: an element's validity interval (``[ts, ts]`` for a point), or a triple
    derived by rules, stamped with its interval's end and started at its ``start``."""
    out = dated(src, rw, instants)
    if src.starts is not None:
        out = out.join(src.starts, "element", "left").withColumn("ts0", F.coalesce(F.col("start"), F.col("ts")))
    else:
        out = out.withColumn("ts0", F.col("ts"))
    if src.ends is not None and rw.meets:
        out = out.join(src.ends, "element", "left").withColumn("ts", F.coalesce(F.col("te"), F.col("ts")))
    return out.select(F.col("instant").alias(KEY), "s", "p", "o", "ts0", "ts").distinct()


def window_events(src: Stream, rw, instants, decl: ops.WindowDecl) -> WindowEvents:
    """What event patterns over this window read (``rspark.spark.cep.match``): the stream's quads, and the
    assignment of element-keyed rows to the instants whose window holds their element, with the end ``te`` of each
    element's validity when the stream has elements valid over an interval (and the profile reads them so)."""

    def quads(predicates: frozenset | None = None) -> DataFrame:
        # a live buffer's quads of the pattern's predicates are selected on the driver (a smaller local
        # relation); a loaded stream's cached quads are read whole (the pattern's scan selects them)
        selected = src.content(predicates) if src.selects_cheaply else src.quads
        return selected.select("element", "ts", "seq", "s", "p", "o")

    def assign(rows: DataFrame) -> DataFrame:
        if isinstance(rw, CountWindow):
            if rw.unit != CountUnit.ELEMENTS:
                raise NotSupportedError(f"EVENT ON {decl.name.n3()}: a [RANGE {rw.unit} n] window holds parts of "
                                        "elements, and a basic event pattern matches whole elements (RSEP-QL, "
                                        "eq. 4); use a time, landmark or [RANGE ELEMENTS n] window")
            held = assign_elements(src, src.elements, rw, instants, quads=src.quads).select("instant", "element")
            return with_ends(held.join(rows, "element"))
        if src.ends is not None and rw.meets and not isinstance(rw, ElementWindow):
            # (keeps each element's end)
            return before_instant(src, assign_window(src.with_ends(partitioned(src, rows, rw)), rw, instants))
        return with_ends(assign_elements(src, rows, rw, instants))

    def with_ends(rows: DataFrame) -> DataFrame:
        return src.with_ends(rows) if src.ends is not None and rw.meets else rows

    return WindowEvents(quads, assign, rows_bound=memoized(lambda: one_pattern_rows(src, rw, instants)))


def one_pattern_rows(src: Stream, rw, instants) -> int | None:
    """An upper bound on the rows :func:`window_events`' ``assign`` gives for the matches of one triple pattern
    over the stream's elements (each quad matches it at most once) at all ``instants``: the stream's quads, when
    its load counted them, times the most instants any element is assigned to. An element lies in at most
    ``ceil(range / slide)`` consecutive windows (:attr:`TimeWindow.overlap`), each evaluated at the instants whose
    window index is its own. None when there is no such bound: another kind of window, or elements valid over an
    interval that the window holds while they meet it."""
    if src.n_quads is None or not isinstance(rw, TimeWindow) or (src.ends is not None and rw.meets):
        return None
    if not isinstance(instants, (list, tuple)):
        return None
    indexes = [k for k in (rw.window_index(int(t)) for t in set(instants)) if k is not None]
    if not indexes:
        return 0
    windows, counts = np.unique(np.asarray(indexes, dtype=np.int64), return_counts=True)
    before = np.concatenate(([0], np.cumsum(counts)))
    # the instants of windows k .. k + overlap - 1, from each window k that has some
    ends = np.searchsorted(windows, windows + rw.overlap, side="left")
    return src.n_quads * int((before[ends] - before[:-1]).max())


def stamps(src: Stream, rw, instants) -> DataFrame:
    """A window's timestamps at every instant: ``(__t, s, p, o, ts)``, the latest timestamp (ticks) of each
    triple of its content (element metadata is dated by its element)."""
    return dated(src, rw, instants, metadata=True) \
        .groupBy(F.col("instant").alias(KEY), "s", "p", "o").agg(F.max("ts").alias("ts"))


def default_graphs(src: Stream, rw, instants) -> DataFrame:
    """A window as RSP-QL*'s dataset DS(W) sees it (Def. 6): its default graph is the union of its elements'
    default graphs, the timestamp triples (in canonical form: NOW()'s) and the other metadata, at every
    instant ``(__t, s, p, o)``. The elements' own graphs are its named graphs (:func:`element_graphs`)."""
    assigned = assign_elements(src, src.elements, rw, instants, quads=src.quads) \
        .select("instant", "element", "ts").distinct()
    stamp = F.expr(now_sql(src.timeline, "ts"))
    if src.ends is not None and rw.meets:  # an element valid over an interval: "start/end", as the stream writes it
        assigned = assigned.join(src.ends, "element", "left")
        lexical = r'^"([^"]*)"'
        interval = F.concat(F.lit('"'), F.regexp_extract(stamp, lexical, 1), F.lit("/"),
                            F.regexp_extract(F.expr(now_sql(src.timeline, "te")), lexical, 1), F.lit('"'))
        stamp = F.when(F.col("te").isNotNull(), interval).otherwise(stamp)
    out = assigned.select(F.col("instant").alias(KEY), F.col("element").alias("s"),
                          F.lit(src.stamp_predicate).alias("p"), stamp.alias("o"))
    if src.has_metadata():
        out = out.unionByName(element_metadata(src, assigned)).distinct()
    return out


def element_graphs(src: Stream, rw, instants) -> DataFrame:
    """A window's elements as named graphs at every instant (``GRAPH ?g`` inside ``WINDOW``; RSP-QL*, Def. 6):
    ``(__t, g, s, p, o)``, ``g`` the element's name."""
    return dated(src, rw, instants).select(F.col("instant").alias(KEY), F.col("element").alias("g"), "s", "p", "o")


def bgp_window(scan: Scan, background, pattern: ops.Op, decl: ops.WindowDecl, rw, src: Stream) -> BGPWindow:
    """A ``[RANGE BGP n]`` window (rspark.spark.streaming.bgp_window): the patterns it counts are those of the
    blocks that read it (a named window), or the query's own triple patterns (a FROM STREAM window, merged with
    ``background``, the static default graph)."""

    def graph_scan(triple, frame: DataFrame, key: str) -> Solutions:
        return scan(triple, Context(ActiveGraph(lambda: frame, (key,), "stream")))

    def positioned() -> DataFrame:
        return positioned_triples(src.quads, src.elements, src.metadata if src.has_metadata() else None,
                                  src.triples_unique())

    if decl.merged or decl.name is None:
        return BGPWindow(f"FROM STREAM {decl.stream.n3()}", rw.size, [pattern], positioned, graph_scan,
                         background=background)
    return BGPWindow(decl.name.n3(), rw.size, window_blocks(pattern, decl.name), positioned, graph_scan)


def window_contents(pattern: ops.Op, decls: Sequence[ops.WindowDecl], streams: Sequence[Stream],
                    resolved: Sequence, instants, bgp_windows: dict, *, as_dataset: bool,
                    predicates: frozenset | None) -> tuple[list[WindowContent], dict[str, WindowContent]]:
    """Every window of a query at ``instants``: the FROM STREAM windows (merged into the default graph) in order,
    and the named windows by encoded name. ``bgp_windows``: the ``[RANGE BGP n]`` windows, by ``id(decl)``;
    ``as_dataset``: a named window's content is its default graph under RSP-QL*'s window-as-dataset reading
    (the ``rspql-star`` profile), else its elements' triples; ``predicates``: those of the query's triple
    patterns (:func:`content`)."""
    merged: list[WindowContent] = []
    named: dict[str, WindowContent] = {}
    for d, rw, src in zip(decls, resolved, streams):
        is_merged = d.merged or d.name is None
        bw = bgp_windows.get(id(d))
        if bw is not None:
            bw.instants = instants
            built = memoized(lambda bw=bw: bw.content(pattern)) if is_merged else bw
        elif as_dataset and not is_merged:
            built = memoized(lambda src=src, rw=rw: default_graphs(src, rw, instants))
        else:
            built = memoized(lambda src=src, rw=rw: content(src, rw, instants, predicates))
        window = WindowContent(
            content=built,
            stamps=None if bw is not None else memoized(lambda src=src, rw=rw: stamps(src, rw, instants)),
            dated=memoized(lambda src=src, rw=rw: occurrences(src, rw, instants)),
            graphs=no_graphs(d.name) if bw is not None or is_merged else
            memoized(lambda src=src, rw=rw: element_graphs(src, rw, instants)),
            events=None if is_merged else window_events(src, rw, instants, d),
            panes=None if bw is not None or is_merged or as_dataset else pane_content(src, rw, instants, predicates))
        if is_merged:
            merged.append(window)
        else:
            named[E.encode(d.name)] = window
    return merged, named


def patterns_outside_graph(op) -> list:
    """The triple patterns in ``op`` that are not inside a GRAPH block (EXISTS patterns included)."""
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
