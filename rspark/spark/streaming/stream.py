"""A stream as the evaluator reads it: a frozen :class:`Stream` value (its elements, its quads, its timeline and what
selects its content), built by one named constructor per kind of stream, and its :class:`StreamStats`, what the
plans ask of it (bounds, duplicates, the content restricted to a query's predicates), each computed once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.model.codec import encode
from rspark.model.terms import IRI
from rspark.model.time import Timeline
from rspark.spark.loading.loader import PROV_GENERATED_AT_TIME, quoted_table
from rspark.spark.streaming.keys import KEY
from rspark.spark.streaming.windows import stream_bounds

if TYPE_CHECKING:
    from rspark.spark.loading.loader import LoadedStream

# the timestamp predicate of a registered stream's elements (as --format trig writes them), encoded
GENERATED_AT_TIME = encode(IRI(PROV_GENERATED_AT_TIME))

# A stream whose duplicate check reads at most this many rows (when its load counted them, or when the predicate
# set's quads cached for the query are that few: their hashes are fetched up to one more, by the job that caches
# them) has the triples' 64-bit hashes fetched and compared on the driver (up to 16 MB): one scan of the cache the
# query reads next and no shuffle, where the hash aggregate's job shuffles them (83,333 triples of a 1e6 stream:
# 0.3 s less a check, 1.3 s less the process's first; 833,333 of a 1e7 stream: 0.5 s less)
DRIVER_CHECK_ROWS = 2_000_000


def _hashes_unique(triples: DataFrame, most: int | None = None) -> bool | None:
    """Whether no two rows of ``triples`` (``s, p, o``) have the same 64-bit hash, compared on the driver; with
    ``most``, None when there are more rows than that (one job either way: the hashes fetched up to one more)."""
    hashes = triples.select(F.xxhash64("s", "p", "o").alias("h"))
    if most is not None:
        hashes = hashes.limit(most + 1)
    values = np.sort(hashes.toArrow().column(0).to_numpy())
    if most is not None and len(values) > most:
        return None
    return not bool((values[1:] == values[:-1]).any())


@dataclass
class StreamStats:
    """What the plans ask of a stream that costs a Spark job or a cached frame, each computed once per stream and
    kept here by :class:`Stream`'s methods: its bounds (:meth:`Stream.bounds`), whether it has element metadata
    (:meth:`Stream.has_metadata`), :meth:`Stream.triples_unique`'s answers and :meth:`Stream.content`'s restricted
    quads, by predicate set. Every stream starts with stats of its own; its constructor fills in what it already
    knows (a load's bounds and metadata count, a live buffer's)."""

    bounds: tuple[int | None, int | None] | None = None
    has_metadata: bool | None = None
    unique: dict[frozenset | None, bool] = field(default_factory=dict)
    restricted: dict[frozenset, DataFrame] = field(default_factory=dict)


@dataclass(frozen=True, eq=False, kw_only=True)
class Stream:
    """A stream the evaluator reads: a recorded file (:meth:`from_loaded`), a live buffer (:meth:`from_buffer`), the
    output of a registered query (REGISTER STREAM, :meth:`from_records`), or one of these with the elements
    EP-SPARQL rules derived (:meth:`with_derived`). What its plans ask of it and cost a job or a cached frame is
    kept in its :attr:`stats`, which no other stream shares."""

    iri: str
    timeline: Timeline
    # gives the elements (element, ts, seq), called once, when a plan first reads :attr:`elements` (a live
    # evaluation whose instants are found on the driver and whose time windows select the quads by their
    # timestamps never does: the buffer's elements are then not given to Spark at all)
    read_elements: Callable[[], DataFrame] = field(repr=False)
    # gives the quads (s, p, o, element, ts, seq), called once, when a plan first reads :attr:`quads`
    read_quads: Callable[[], DataFrame] = field(repr=False)
    metadata: DataFrame | None  # s, p, o (element metadata in the default graph of the stream file)
    quoted: DataFrame | None
    # the timestamp predicate (encoded IRI), for windows seen as datasets
    stamp_predicate: str = GENERATED_AT_TIME
    # elements derived by EP-SPARQL CONSTRUCT rules (rspark.engine.rules): (element, start), the start of the
    # interval of each derived occurrence (its ``ts`` is the interval's end)
    starts: DataFrame | None = None
    # the elements' timestamps (a sorted numpy int64 array) when the driver holds them (a live buffer's segments
    # read on the driver): a micro-batch's instants are then found without a job (rspark.rsp.report.instants_after)
    stamps: object | None = None
    # a recorded stream read on the driver (a small file): its elements' timestamps (a sorted numpy int64 array),
    # for finding its evaluation instants without a job only (its tables are Spark's, as any recorded stream's)
    known_stamps: object | None = None
    # a stream a state loop reads back (rspark.spark.streaming.network): a window at instant t holds its elements
    # before t only (the loop's output at t is not on the stream while t is evaluated)
    feedback: bool = False
    # the elements valid over an interval (docs/streams.md): ``element, te``, the interval's end in ticks (``ts``
    # is its start); None when every element is a point
    ends: DataFrame | None = None
    # a registered stream's end: the last instant of the query that writes it (its bounds reach it even when the
    # query's output there is empty, so the stream has no element there)
    end: int | None = None

    # what selects the content:
    checks_duplicates: bool = True  # False: triples_unique() runs no job and says False (unless unique_on_driver)
    # a check of triples_unique() without Spark (a live buffer's, by Arrow on the driver): True or False, or None
    # when it cannot tell
    unique_on_driver: Callable[[frozenset | None], bool | None] | None = None
    # a superset of the content's triples (s, p, o: a file's named graphs before the rejected elements are dropped),
    # which triples_unique() reads instead of ``quads`` when given: no element join
    candidates: DataFrame | None = None
    # how many rows ``candidates`` has, when the load counted them: up to DRIVER_CHECK_ROWS, triples_unique()
    # compares the triples' hashes on the driver instead of aggregating them in a Spark job
    n_candidates: int | None = None
    # how many rows :attr:`quads` has, when the load counted them (a bound on a one-triple pattern's matches)
    n_quads: int | None = None
    # the content restricted to some predicates (a loaded stream's LoadedStream.restricted), cached by content()
    restricted: Callable[[frozenset], DataFrame] | None = None
    # whether ``restricted(predicates)`` is a cheap selection (a live buffer's, by Arrow on the driver), which event
    # patterns then read instead of the whole ``quads``; a loaded stream's is a join cached apart, which costs more
    # than reading its cached quads whole
    selects_cheaply: bool = False
    # whether the windows take their bounds and instants as parameters rather than literals (a live buffer's: its
    # plans are built again at every evaluation over new local relations, and with literals Spark compiled their
    # generated code again each time; a loaded stream's cached tables are pruned by literal bounds instead:
    # rspark.spark.streaming.windows)
    parameterized: bool = False

    stats: StreamStats = field(init=False, default_factory=StreamStats, repr=False)

    @classmethod
    def from_loaded(cls, iri: str, loaded: LoadedStream, timestamp_predicate: str) -> Stream:
        """A recorded stream as ``rspark.spark.loading.loader.load_stream`` loaded it, its elements stamped with
        ``timestamp_predicate`` (an IRI): its cached tables, the triples of the file's named graphs as the duplicate
        check's candidates, its content restricted by the load, and the bounds and metadata count the load found."""
        quads, elements = loaded.quads, loaded.elements
        stream = cls(iri=iri, timeline=Timeline.of(loaded.time_kind, loaded.time_scale), read_elements=lambda: elements,
                     read_quads=lambda: quads, metadata=loaded.metadata, quoted=loaded.quoted,
                     stamp_predicate=encode(IRI(timestamp_predicate)), candidates=loaded.candidates,
                     restricted=loaded.restricted, ends=loaded.ends, unique_on_driver=loaded.unique_on_driver,
                     n_candidates=loaded.n_candidates, n_quads=loaded.n_quads,
                     known_stamps=loaded.stamps if loaded.ends is None else None)
        stream.stats.bounds, stream.stats.has_metadata = loaded.bounds, loaded.has_metadata
        return stream

    @classmethod
    def from_buffer(cls, iri: str, timeline: Timeline, table: Callable[..., DataFrame], *,
                    bounds: tuple[int, int], has_metadata: bool, stamps, timestamp_predicate: str,
                    unique: Callable[[frozenset | None], bool | None] | None = None,
                    ends: DataFrame | None = None) -> Stream:
        """A live buffer (``rspark.engine.live.buffer.LiveBuffer.source``): ``table(name)`` gives its table
        ``name`` (elements, quads, metadata, quoted) and ``table("quads", predicates)`` its quads with one of
        ``predicates``, selected by Arrow on the driver. Its whole quads are given to Spark only when a plan first
        reads them all: a query whose triple patterns all have constant predicates reads ``content(predicates)``
        instead, and an event pattern its own predicates' quads. ``stamps``: the elements' timestamps when the
        driver holds them all (:attr:`stamps`). The buffer changes every batch: a DISTINCT over each window's
        content costs less than a job over the whole buffer finding whether it may be left out, so the duplicate
        check is ``unique(predicates)``, the buffer's own on the driver (None: it cannot tell, and the DISTINCT
        stays)."""
        stream = cls(iri=iri, timeline=timeline, read_elements=lambda: table("elements"),
                     read_quads=lambda: table("quads"),
                     metadata=table("metadata"), quoted=table("quoted"),
                     stamp_predicate=encode(IRI(timestamp_predicate)), stamps=stamps, checks_duplicates=False,
                     restricted=lambda predicates: table("quads", predicates), selects_cheaply=True,
                     unique_on_driver=unique, ends=ends, parameterized=True)
        stream.stats.bounds, stream.stats.has_metadata = bounds, has_metadata
        return stream

    @classmethod
    def from_records(cls, iri: str, triples: DataFrame, timeline: Timeline, end: int | None) -> Stream:
        """The output of REGISTER STREAM :out AS CONSTRUCT ... as a stream other queries read, from ``triples``
        (``__t``, s, p, o), the query's triples at each instant: one element per instant, stamped with the instant
        by prov:generatedAtTime (an instant without triples gives none). The stream goes on to ``end``, the
        query's last instant: the queries reading it are evaluated up to there, as live mode evaluates them up to
        the instant their group's input streams reached, not only up to its last element."""
        elem = F.concat(F.lit(f"<{iri}#t"), F.col(KEY).cast("string"), F.lit(">"))
        quads = triples.select("s", "p", "o", elem.alias("element"), F.col(KEY).alias("ts"), F.col(KEY).alias("seq"))
        elements = quads.select("element", "ts", "seq").distinct()
        return cls(iri=iri, timeline=timeline, read_elements=lambda: elements, read_quads=lambda: quads, metadata=None,
                   quoted=quoted_table(quads), checks_duplicates=False, end=end)

    def with_derived(self, derived: DataFrame) -> Stream:
        """This stream with the elements EP-SPARQL's CONSTRUCT rules derived from it (``rspark.engine.rules``):
        ``derived`` (s, p, o, element, ts, seq, start), one element per derived triple occurrence, stamped with the
        end of its interval, ``start`` its start. Its content is no longer the one the candidates or the restricted
        quads select, and its stats are its own."""
        quads = self.quads.unionByName(derived.drop("start"), allowMissingColumns=True)
        elements = self.elements.unionByName(derived.select("element", "ts", "seq").distinct(),
                                             allowMissingColumns=True)
        return dataclasses.replace(self, read_elements=lambda: elements, read_quads=lambda: quads, candidates=None,
                                   n_candidates=None, n_quads=None, restricted=None, selects_cheaply=False,
                                   unique_on_driver=None, starts=derived.select("element", "start").distinct())

    def with_ends(self, frame: DataFrame) -> DataFrame:
        """``frame`` (``element`` and ``ts`` columns) with the end of each element's validity, ``te`` (``ts`` for an
        element that is a point): what the windows read to take an element while its interval meets theirs.
        ``frame`` itself when every element is a point."""
        if self.ends is None:
            return frame
        return frame.join(self.ends, "element", "left").withColumn("te", F.coalesce(F.col("te"), F.col("ts")))

    @cached_property
    def elements(self) -> DataFrame:
        """The elements (element, ts, seq), given by ``read_elements`` when first read."""
        return self.read_elements()

    @cached_property
    def quads(self) -> DataFrame:
        """The quads (s, p, o, element, ts, seq), given by ``read_quads`` when first read."""
        return self.read_quads()

    def triples_unique(self, predicates: frozenset | None = None) -> bool:
        """Whether every triple of the stream occurs once, in one element (one aggregate job, once per predicate
        set, or :attr:`unique_on_driver`'s answer). Then a time-selected window's content is a set without a
        DISTINCT over all its copies.

        ``predicates`` (encoded IRIs): only the triples with one of these predicates are checked, for a query
        whose triple patterns all have one of them: the other triples never match, so their duplicates do not
        matter (a DISTINCT commutes with the patterns' selections). They are read from :meth:`content`'s cache
        for these predicates, which the query reads next (one scan of the stream instead of two)."""
        if predicates is not None and not predicates:
            return True
        if predicates not in self.stats.unique:
            known = self.unique_on_driver(predicates) if self.unique_on_driver is not None else None
            if known is None:
                known = self.checks_duplicates and self._unique_by_job(predicates)
            self.stats.unique[predicates] = known
        return self.stats.unique[predicates]

    def _unique_by_job(self, predicates: frozenset | None) -> bool:
        if predicates is not None and self.restricted is not None:
            triples = self.content(predicates)
        else:
            triples = self.candidates if self.candidates is not None else self.quads
            if predicates is not None:
                triples = triples.filter(F.col("p").isin(*sorted(predicates)))
        # by a 64-bit hash of the triple (a collision only costs the DISTINCT it would have saved)
        if self.n_candidates is not None and self.n_candidates <= DRIVER_CHECK_ROWS:
            return _hashes_unique(triples)
        if predicates is not None and self.restricted is not None:
            # a predicate set's cached quads (the query reads them next), cached by the job that fetches their
            # hashes, when they are few enough for the driver
            known = _hashes_unique(triples, DRIVER_CHECK_ROWS)
            if known is not None:
                return known
        return triples.groupBy(F.xxhash64("s", "p", "o")).count().filter(F.col("count") > 1).isEmpty()

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
        """The least and greatest timestamps of the elements, the greatest at least :attr:`end` (one job, once)."""
        if self.stats.bounds is None:
            lo, hi = stream_bounds(self.elements)
            if hi is not None and self.end is not None:
                hi = max(hi, self.end)
            self.stats.bounds = (lo, hi)
        return self.stats.bounds
