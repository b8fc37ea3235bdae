"""``[RANGE BGP n]``: a count-based window over the matches of a basic graph pattern.

the W3C RSP CG requirements ("Count-based window based on Basic Graph Pattern") gives the idea: a triple-count window
cuts events described by several triples apart, so count "the groups of triples (subgraphs) that match a certain basic
graph pattern" instead. It gives no formal semantics; rspark's, in the terms of RSEP-QL, Sec. 3:

- **The counted pattern** is the basic graph pattern of the block that reads the window: the triple patterns of
  ``WINDOW :w { P }`` that every solution of ``P`` must match (those of its BGPs joined at the top of ``P``, inside
  FILTER, BIND and a sub-SELECT, and on the left of OPTIONAL and MINUS; not those under UNION, OPTIONAL's right side,
  GRAPH, a nested WINDOW or EXISTS). For a ``FROM STREAM`` window, merged into the default graph, it is the query's
  own triple patterns outside WINDOW blocks. Property paths are not triple patterns and are not counted.
- **A match** is a solution of that BGP over the stream's triples (element metadata included), and for a
  ``FROM STREAM`` window over the static default graph it is merged with too (a match needs one stream triple). It
  exists from the moment its last stream triple has arrived: its position is the greatest ``(ts, seq)`` of the
  elements that first hold each of its stream triples.
- **W(S, t)**: the last ``n`` matches by position with ``ts <= t``; matches completed by the same element are
  ordered by their bound terms (as ``[RANGE TRIPLES n]`` orders the triples of one element by s, p, o). The window's
  content is an RDF graph like any other window's: the triples of those matches (the BGP instantiated by each).
  ``P`` is then evaluated over it (for ``FROM STREAM``, over it merged with the static default graph). For the
  usual counted pattern, whose variables all hang together through its triples (an observation and its
  properties), ``P``'s solutions at ``t`` are exactly the ``n`` matches.

A block without a triple pattern to count is refused with a "not supported" error. The window is computed for every
evaluation instant at once: the matches over the whole stream (one Spark plan), ranked with the instants along the
count axis (:func:`rspark.spark.streaming.windows.assign_count`), then instantiated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rspark.algebra import ops
from rspark.errors import NotSupportedError
from rspark.model.terms import BlankNode, QuotedTriple, Variable
from rspark.spark.sparql import solutions as S
from rspark.spark.sparql.compiler import order_patterns
from rspark.spark.sparql.query import construct_frame
from rspark.spark.sparql.solutions import Solutions, var_col
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.windows import assign_count

# Operators whose solutions are all solutions of their first operand's BGP (that BGP is counted through them).
_THROUGH = (ops.Filter, ops.Extend, ops.Project, ops.Distinct, ops.Reduced, ops.OrderBy, ops.Slice, ops.Group)


def counted_triples(op: ops.Op) -> tuple:
    """The triple patterns a ``[RANGE BGP n]`` window read by ``op`` counts (module docstring), each once, in the
    order the query writes them."""
    out: dict = {}

    def walk(x: ops.Op) -> None:
        if isinstance(x, ops.BGP):
            for t in x.triples:
                out.setdefault(t, None)
        elif isinstance(x, ops.Join):
            walk(x.left)
            walk(x.right)
        elif isinstance(x, (ops.LeftJoin, ops.Minus)):
            walk(x.left)
        elif isinstance(x, _THROUGH):
            walk(x.op)

    walk(op)
    return tuple(out)


def window_blocks(op, name) -> list[ops.Op]:
    """The patterns of the ``WINDOW`` blocks of ``op`` that read the named window ``name`` (an IRI): ``WINDOW name
    { P }`` and ``WINDOW ?w { P }``, wherever they are (EXISTS patterns included)."""
    return [x.op for x in ops.descendants(op)
            if isinstance(x, ops.Window) and (x.name == name or isinstance(x.name, Variable))]


def positioned_triples(quads: DataFrame, elements: DataFrame, metadata: DataFrame | None,
                       unique: bool) -> DataFrame:
    """The stream's triples, each once, with ``pos``: the least ``(ts, seq)`` of the elements holding it (element
    metadata is a triple of its element). ``unique``: every quad's triple occurs once (no aggregation needed)."""
    pos = F.struct(F.col("ts"), F.col("seq")).alias("pos")
    triples = quads.select("s", "p", "o", pos)
    if metadata is not None:
        meta = metadata.withColumnRenamed("s", "element").join(elements.select("element", "ts", "seq"), "element")
        triples = triples.unionByName(meta.select(F.col("element").alias("s"), "p", "o", pos))
        unique = False
    if unique:
        return triples
    return triples.groupBy("s", "p", "o").agg(F.min("pos").alias("pos"))


def bgp_matches(scan: Callable, triples: tuple, positioned: DataFrame) -> tuple[DataFrame, tuple[str, ...]]:
    """Every match of the BGP ``triples`` over ``positioned`` (:func:`positioned_triples`): the variables' columns
    plus ``ts`` and ``seq``, the position at which the match is complete. ``scan(triple, source_frame, key)`` is the
    compiler's scan of one triple pattern over a frame keyed by ``key`` (so quoted triple patterns match as in any
    other window). Returns the frame and the variable names."""
    acc: Solutions | None = None
    keys = []
    for i, triple in enumerate(order_patterns(triples)):
        key = f"__bp{i}"
        keys.append(key)
        part = scan(triple, positioned.withColumnRenamed("pos", key), key)
        acc = part if acc is None else S.join(acc, part)
    assert acc is not None
    # GREATEST skips NULLs: background triples (no position) never make a match late; a match of them alone has
    # no position and is no stream match
    last: Column = F.greatest(*[F.col(k) for k in keys]) if len(keys) > 1 else F.col(keys[0])
    names = tuple(acc.vars)
    df = acc.df.select(*[var_col(n) for n in names], last["ts"].alias("ts"), last["seq"].alias("seq"))
    return df.where(F.col("ts").isNotNull()), names


def _as_pattern_term(term):
    """A BGP term as a template term: blank nodes are the BGP's non-distinguished variables (named ``_:label`` by
    the compiler), so they are instantiated by their match, not made fresh."""
    if isinstance(term, BlankNode):
        return Variable("_:" + term.id)
    if isinstance(term, QuotedTriple):
        return QuotedTriple(_as_pattern_term(term.subject), _as_pattern_term(term.predicate),
                            _as_pattern_term(term.object))
    return term


def bgp_window_content(matches: DataFrame, names: tuple[str, ...], triples: tuple, size: int,
                       instants) -> DataFrame:
    """The window's content at every instant: ``(__t, s, p, o)``, the triples of the last ``size`` matches
    (distinct)."""
    cols = [var_col(n) for n in names]
    held = assign_count(matches, size, instants, order=("ts", "seq", *cols))
    sols = Solutions(held.select(F.col("instant").alias(KEY), *cols), names, frozenset(names), (KEY,))
    template = [dataclasses.replace(t, subject=_as_pattern_term(t.subject), predicate=_as_pattern_term(t.predicate),
                                    object=_as_pattern_term(t.object)) for t in triples]
    return construct_frame(sols, template)


@dataclasses.dataclass
class BGPWindow:
    """One ``[RANGE BGP n]`` window of a replay: its content for each counted pattern, built once per pattern.

    ``blocks``: the patterns that read it (:func:`window_blocks`; for a FROM STREAM window, the query's pattern);
    ``positioned()`` gives :func:`positioned_triples`; ``scan`` as in :func:`bgp_matches`; ``instants``: the
    evaluation instants, known after the report policies ran (which need :meth:`match_times`)."""

    label: str  # how errors name the window
    size: int
    blocks: list
    positioned: Callable[[], DataFrame]
    scan: Callable
    background: Callable[[], DataFrame] | None = None  # a FROM STREAM window's static default graph (s, p, o)
    instants: list | None = None
    _matches: dict = dataclasses.field(default_factory=dict)

    def matches(self, block: ops.Op) -> tuple[DataFrame, tuple[str, ...], tuple]:
        triples = counted_triples(block)
        if not triples:
            raise NotSupportedError(f"a [RANGE BGP n] window ({self.label}) read by a pattern without a triple "
                                    "pattern to count (the counted BGP is the block's mandatory triple patterns)")
        if triples not in self._matches:
            positioned = self.positioned()
            if self.background is not None:
                positioned = positioned.unionByName(self.background().select(
                    "s", "p", "o", F.lit(None).cast(positioned.schema["pos"].dataType).alias("pos")))
            self._matches[triples] = bgp_matches(self.scan, triples, positioned)
        df, names = self._matches[triples]
        return df, names, triples

    def content(self, block: ops.Op) -> DataFrame:
        """The window's content for the counted pattern of ``block``, at every instant (``__t, s, p, o``)."""
        df, names, triples = self.matches(block)
        content = bgp_window_content(df, names, triples, self.size, self.instants)
        if self.background is not None:  # already in the default graph the window is merged into
            content = content.join(self.background().select("s", "p", "o"), ["s", "p", "o"], "left_anti")
        return content

    def match_times(self) -> DataFrame | None:
        """``ts`` of every match of every counted pattern (the window is non-empty from the first one on); None
        when no block reads the window."""
        frames = [self.matches(b)[0].select("ts") for b in self.blocks]
        if not frames:
            return None
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out
