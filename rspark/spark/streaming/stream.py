"""A stream as the evaluator reads it: its elements, its quads and what the plans ask of it (bounds, duplicates, the
content restricted to a query's predicates), each computed once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.model.time import TimeKind, Timeline


@dataclass
class StreamStats:
    """What the plans ask of a stream that costs a Spark job or a cached frame, each computed once per stream and
    kept here by :class:`Stream`'s methods: its bounds (:meth:`Stream.bounds`), whether it has element metadata
    (:meth:`Stream.has_metadata`), :meth:`Stream.triples_unique`'s answers and :meth:`Stream.content`'s restricted
    quads, by predicate set. A stream's constructor fills in what it already knows (a load's bounds and metadata
    count, a live buffer's)."""

    bounds: tuple[int | None, int | None] | None = None
    has_metadata: bool | None = None
    unique: dict[frozenset | None, bool] = field(default_factory=dict)
    restricted: dict[frozenset, DataFrame] = field(default_factory=dict)


@dataclass
class Stream:
    """A stream the evaluator reads: a recorded file, a live buffer, or the output of a registered query (REGISTER
    STREAM). What its plans ask of it and cost a job or a cached frame is kept in its :class:`StreamStats`."""

    # whether ``restricted(predicates)`` is a cheap selection (a live buffer's, by Arrow on the driver), which event
    # patterns then read instead of the whole ``quads``; a loaded stream's is a join cached apart, which costs more
    # than reading its cached quads whole
    SELECTS_CHEAPLY: ClassVar[bool] = False

    iri: str
    elements: DataFrame  # element, ts, seq
    quads: DataFrame  # s, p, o, element, ts, seq
    metadata: DataFrame | None  # s, p, o (element metadata in the default graph of the stream file)
    quoted: DataFrame | None
    time_kind: TimeKind
    time_scale: int = 1
    checks_duplicates: bool = True  # False: triples_unique() is not computed and says False
    # a superset of the content's triples (s, p, o: a file's named graphs before the rejected elements are dropped),
    # which triples_unique() reads instead of ``quads`` when given: no element join
    candidates: DataFrame | None = None
    # the content restricted to some predicates (a loaded stream's LoadedStream.restricted), cached by content()
    restricted: Callable[[frozenset], DataFrame] | None = None
    # the timestamp predicate (encoded IRI), for windows seen as datasets; a registered stream's elements are
    # stamped with prov:generatedAtTime (as --format trig writes them)
    stamp_predicate: str = "<http://www.w3.org/ns/prov#generatedAtTime>"
    # elements derived by EP-SPARQL CONSTRUCT rules (rspark.engine.rules): (element, start), the start of the
    # interval of each derived occurrence (its ``ts`` is the interval's end)
    starts: DataFrame | None = None
    # the elements' timestamps (a sorted numpy int64 array) when the driver holds them (a live buffer's segments
    # read on the driver): a micro-batch's instants are then found without a job (rspark.rsp.report.instants_after)
    stamps: object | None = None
    # a registered stream's end: the last instant of the query that writes it (its bounds reach it even when the
    # query's output there is empty, so the stream has no element there)
    end: int | None = None
    # what has been computed of this stream (a stream built from another starts with stats of its own)
    stats: StreamStats = field(default_factory=StreamStats)

    def triples_unique(self, predicates: frozenset | None = None) -> bool:
        """Whether every triple of the stream occurs once, in one element (one aggregate job, once per predicate
        set). Then a time-selected window's content is a set without a DISTINCT over all its copies.

        ``predicates`` (encoded IRIs): only the triples with one of these predicates are checked, for a query
        whose triple patterns all have one of them: the other triples never match, so their duplicates do not
        matter (a DISTINCT commutes with the patterns' selections). They are read from :meth:`content`'s cache
        for these predicates, which the query reads next (one scan of the stream instead of two)."""
        if predicates is not None and not predicates:
            return True
        if predicates not in self.stats.unique:
            unique = self.checks_duplicates
            if unique:
                if predicates is not None and self.restricted is not None:
                    triples = self.content(predicates)
                else:
                    triples = self.candidates if self.candidates is not None else self.quads
                    if predicates is not None:
                        triples = triples.filter(F.col("p").isin(*sorted(predicates)))
                # by a 64-bit hash of the triple (a collision only costs the DISTINCT it would have saved)
                unique = triples.groupBy(F.xxhash64("s", "p", "o")).count().filter(F.col("count") > 1).isEmpty()
            self.stats.unique[predicates] = unique
        return self.stats.unique[predicates]

    def content(self, predicates: frozenset | None = None) -> DataFrame:
        """The quads (``quads``' columns) a query reads whose triple patterns all have one of ``predicates``
        (None: any): with them, only those quads (for a 1e7-triple stream's windowed filter, 833,333 of
        4,166,665), joined with their elements and cached apart, once per predicate set. (Caches per predicate,
        shared by the sets, made each pattern scan a union of caches: the two-stream join at 1e5 took about twice
        as long, relative to its load.)"""
        if not predicates or self.restricted is None:
            return self.quads
        if predicates not in self.stats.restricted:
            self.stats.restricted[predicates] = self.restricted(predicates)
        return self.stats.restricted[predicates]

    def has_metadata(self) -> bool:
        """Whether the stream has element metadata (one small job, once)."""
        if self.stats.has_metadata is None:
            self.stats.has_metadata = self.metadata is not None and not self.metadata.isEmpty()
        return self.stats.has_metadata

    def bounds(self) -> tuple[int | None, int | None]:
        if self.stats.bounds is None:
            from rspark.spark.streaming.windows import stream_bounds

            lo, hi = stream_bounds(self.elements)
            if hi is not None and self.end is not None:
                hi = max(hi, self.end)
            self.stats.bounds = (lo, hi)
        return self.stats.bounds

    def timeline(self) -> Timeline:
        return Timeline.of(self.time_kind, self.time_scale)

