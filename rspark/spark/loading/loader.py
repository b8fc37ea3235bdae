"""Loading RDF into Spark: static graphs (:func:`load_rdf`) and recorded RDF streams (:func:`load_stream`).

Parsing runs on executors (pyoxigraph inside ``mapInArrow``; the pure-Python helpers are in
:mod:`rspark.spark.loading.rdf`), except for a small clean local file (``spark.rspark.load.driverMaxBytes``, 256 KiB
by default), which is parsed on the driver with the same functions into local relations (:func:`parse_small`; a
stream's elements checked by :mod:`rspark.spark.loading.small`):

* N-Triples / N-Quads are read in input splits, so a large file is split across tasks. The lines already in the
  canonical term encoding are cut into terms inside the JVM by rspark's Java line scanner (:mod:`rspark.spark.jvm`;
  in one job, whose result is cached with the text of the lines it did not read): for a local uncompressed file in
  local mode by rspark's data source, which reads the file's bytes itself, else by ``spark.read.text`` and the
  scanner as a UDF (the same rows at the same positions). Those other lines (and every line when the scanner is
  not available) go to Python workers in Arrow batches: vectorised RE2 matches first
  (:func:`rspark.spark.loading.rdf.fast_lines`, tested to read exactly what pyoxigraph reads), then pyoxigraph,
  together, and line by line when the batch holds a bad line, so that a bad line is reported at its physical line number
  (from its split's first byte and the line's index in the split; the lines per split are counted by a second,
  JVM-only pass that only runs when there is something to report).
* Turtle, TriG and RDF/XML are parsed in one task (a one-row local relation of the path, read by the executor;
  a path with a URI scheme other than ``file`` is read with Spark's ``binaryFile`` source instead), which yields
  Arrow batches of quads.

Bad input: a malformed line, statement or graph block (invalid UTF-8 included: the JVM paths pass a line's bytes
as they are, and the Python side reports a line that is not UTF-8 as ``invalid UTF-8 (byte 0xFF)`` at its line and
column, :func:`rspark.spark.loading.rdf.invalid_utf8_lines`) is reported and skipped, or raised in strict mode. A
path that does not exist raises :class:`MissingFileError` before any Spark job. The ``rspark.loading`` logger
says which path parses a file (INFO: rspark's data source, Spark's text source with the scanner UDF and why,
or the Python workers and why; a WARNING the first time that fallback was not asked for) and warns of a stream
with no element.

Terms are encoded as in :mod:`rspark.model.codec`. Blank-node labels get a per-load prefix
(``_:b1`` in a file becomes ``_:b<8 hex>_b1``), so two files (or two loads of one file) never share a blank node,
while a label is one node within its file. RDF-star: ``<< s p o >>`` is the quoted triple term (the RDF-star CG
semantics); pyoxigraph's RDF 1.2 reifiers are undone as :mod:`rspark.results` does.

Cache policy: the parsed rows are ``persist()``-ed (MEMORY_AND_DISK) and materialised at load time, because the
load must report its errors (and raise in strict mode) anyway; the returned DataFrames are lazy projections of that
cache, so using them again never re-parses the file. Derived tables that need a shuffle or a join (``quoted``, a
stream's per-element check, which the load reads, its ``quads`` and ``restricted(...)``'s subsets of ``quads``) are
persisted too and materialise on first use; a stream's ``elements`` is a filter of its per-element check.
``unpersist()`` on the result frees them. The exception is a clean N-Quads stream that rspark's data source reads
whole with canonical integer timestamps (:func:`_scanned_stream`): no parse cache. When each of its elements is
written in one block of lines (the usual case), it is loaded in one pass (:func:`_one_pass_stream`: the data source
attaches each element's timestamp in the scan, one job, one cache); else its per-element check and content are
cached at load, in two jobs that each read the file (reading the file twice costs less than caching its rows).

One module (about 1,000 lines): graphs and streams share the line-parsing job, its error reporting and its cache,
and a stream's per-element check reads that job's rows; the executor-side parsing is in
:mod:`rspark.spark.loading.rdf`.
"""

from __future__ import annotations

import glob
import gzip
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from rspark.errors import DataError, InputError, MissingFileError, MoreProblems, RsparkError
from rspark.model.time import TimeKind
from rspark.model.timestamps import PLAIN_INTEGER_STAMP, PROV_GENERATED_AT_TIME, parse_validity
from rspark.spark import jvm
from rspark.spark.frames import local_frame
from rspark.spark.loading import messages, rdf, small

__all__ = ["LoadedGraph", "LoadedStream", "load_rdf", "load_stream", "no_valid_element", "check_file",
           "MissingFileError", "PROV_GENERATED_AT_TIME", "MAX_ERRORS"]

# the loading path each file takes (INFO), a fallback to the slower Python path that was not asked for and an empty
# stream (WARNING)
log = logging.getLogger("rspark.loading")

MAX_ERRORS = 1000  # problems listed per load (a final entry says how many more there were)

K_QUAD, _K_PROBLEM = 0, 1
_RAW_FIELDS = [
    ("k", pa.int8(), "tinyint"),
    ("s", pa.string(), "string"),
    ("p", pa.string(), "string"),
    ("o", pa.string(), "string"),
    ("g", pa.string(), "string"),
    ("blk", pa.int64(), "long"),
    ("idx", pa.int64(), "long"),
    ("ord", pa.int64(), "long"),
    ("msg", pa.string(), "string"),
    ("col", pa.int64(), "long"),
    ("elem", pa.string(), "string"),
]
RAW_ARROW = pa.schema([(name, typ) for name, typ, _ in _RAW_FIELDS])
_RAW_DDL = ", ".join(f"{name} {ddl}" for name, _, ddl in _RAW_FIELDS)
QUADS_DDL = "s string, p string, o string, g string"
QUOTED_DDL = "t string, s string, p string, o string"


# --------------------------------------------------------------------------------------------------- results


@dataclass
class LoadedGraph:
    """A loaded RDF file.

    ``quads``: columns ``s, p, o, g`` (encoded terms; ``g`` is ``""`` for the default graph).
    ``quoted``: columns ``t, s, p, o``, one row per distinct quoted triple occurring anywhere in the data (nested
    ones too): ``t`` its encoding, ``s``/``p``/``o`` its components' encodings.
    ``errors``: the problems skipped (non-strict mode), in file order.
    """

    quads: DataFrame
    quoted: DataFrame
    errors: list[DataError] = field(default_factory=list)
    _cached: list[DataFrame] = field(default_factory=list, repr=False)

    def unpersist(self) -> None:
        """Free the cached parse (the DataFrames stay usable, but re-parse when used)."""
        for df in self._cached:
            df.unpersist()


@dataclass
class LoadedStream:
    """A recorded RDF stream (docs/streams.md).

    ``elements``: ``element`` (encoded graph name), ``ts`` (long), ``seq`` (long, a key that sorts the elements in
    file order, by their first statement; sparse, not 0, 1, 2, ...: replays order by ``(ts, seq)``). ``quads``: the
    elements' content ``s, p, o, element, ts, seq``.
    ``candidates``: the triples of every named graph of the file, rejected elements' too (``s, p, o``: a superset of
    the content's, for checks that a superset answers more cheaply than the join that makes ``quads``).
    ``restricted(predicates)``: ``quads`` restricted to triples with one of the (encoded) predicates, built and
    cached apart (what a query reads when all its triple patterns have one of these predicates).
    ``metadata``: the default-graph triples other than the elements' timestamps (``s, p, o``). ``quoted``: as in
    :class:`LoadedGraph`, over ``quads`` and ``metadata``. ``time_kind``: DATETIME (``ts`` in epoch
    milliseconds, UTC) or NUMERIC (``ts`` = value * ``time_scale``, the smallest power of ten that makes every
    timestamp integral). ``has_metadata``: whether ``metadata`` has a row (counted at load). ``bounds``: the least
    and greatest ``ts`` of ``elements`` ((None, None) without elements) when the load found them, else None.
    ``errors``: rejected elements and malformed statements, in file order (an element with several timestamps is
    reported with the least and the greatest), the first MAX_ERRORS of each kind, then a :class:`MoreProblems`
    entry counting the others; ``n_rejected``: how many there are in all. ``n_elements``: the rows of ``elements``
    (counted at load). A stream without elements and without problems is logged as a WARNING; one whose every
    element was rejected is the caller's to report (:func:`no_valid_element`).
    """

    iri: str
    elements: DataFrame
    quads: DataFrame
    candidates: DataFrame
    restricted: Callable[[frozenset], DataFrame]
    metadata: DataFrame
    quoted: DataFrame
    time_kind: TimeKind
    time_scale: int
    has_metadata: bool = True
    bounds: tuple[int | None, int | None] | None = None
    errors: list[DataError] = field(default_factory=list)
    n_elements: int | None = None
    n_rejected: int = 0
    # the rows of ``candidates`` when the load counted them (rspark's data source's loads, where they are the
    # content's): the duplicate check then compares the triples' hashes on the driver when they are few
    n_candidates: int | None = None
    # the rows of ``quads`` when the load counted them (rspark's data source's loads, a small file read on the
    # driver): a bound the planner sizes in-memory tables by (rspark.spark.cep.match)
    n_quads: int | None = None
    # the elements valid over an interval (a timestamp literal "start/end"): ``element, te`` (the interval's end
    # in ticks; ``ts`` in ``elements`` is its start); None when every element is a point
    ends: DataFrame | None = None
    _cached: list[DataFrame] = field(default_factory=list, repr=False)
    # files the load wrote (a converted message log), read by Spark until the stream is dropped
    _temporary: list[str] = field(default_factory=list, repr=False)
    # a stream read on the driver: whether its triples (with one of the predicates) occur once each, found there
    # (Stream.triples_unique's duplicate check without a Spark job)
    unique_on_driver: Callable[[frozenset | None], bool] | None = None
    # a stream read on the driver: its elements' timestamps (``ts``), a sorted numpy int64 array
    stamps: object | None = None

    def unpersist(self) -> None:
        """Free the cached parse and derived tables (and the files the load wrote)."""
        for df in self._cached:
            df.unpersist()
        for path in self._temporary:
            try:
                os.remove(path)
            except OSError:
                pass
        self._temporary.clear()


# --------------------------------------------------------------------------------------------------- helpers


def _bare_iri(iri: str) -> str:
    """A stream's IRI without its angle brackets, as LoadedStream holds it."""
    return iri[1:-1] if iri.startswith("<") and iri.endswith(">") else iri


def check_file(path: str | Path) -> None:
    """Raises :class:`MissingFileError` when ``path`` is a local path (or ``file:`` URI) that does not exist, before
    Spark is asked to read it; a glob pattern that matches files and a URI of another scheme pass."""
    local = rdf.local_path(str(path))
    if local is None or os.path.exists(local):
        return
    if "{" in local:  # a Hadoop glob's alternatives, which Python's glob does not read: Spark tells
        return
    if any(ch in local for ch in "*?["):
        if glob.glob(local):
            return
    raise MissingFileError(str(path))


def _graph_term(graph: str | None) -> str:
    if graph is None:
        return ""
    value = graph.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    if not value or any(ch in value for ch in '<>" {}|\\^`\n\r\t'):
        raise InputError(f"graph must be an IRI, not {graph!r}")
    return "<" + value + ">"


def _quad_batch(s: pa.Array, p: pa.Array, o: pa.Array, g: pa.Array, pos: list | None) -> pa.RecordBatch:
    """One Arrow record batch (raw schema) of quads; ``pos``: their (blk, idx, ord) arrays, or None (no positions)."""
    n = len(s)
    if pos is None:
        pos = [pa.nulls(n, pa.int64())] * 3
    return pa.RecordBatch.from_arrays(
        [pa.repeat(pa.scalar(K_QUAD, pa.int8()), n), s, p, o, g, *pos,
         pa.nulls(n, pa.string()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.string())],
        schema=RAW_ARROW,
    )


def sink_batches(sink: rdf.Sink, positions: bool = True):
    """Arrow record batches (raw schema) of a sink's quads and problems (quads without their positions unless
    ``positions``: only streams need them)."""
    if len(sink):
        pos = [pa.array(sink.blk, pa.int64()), pa.array(sink.idx, pa.int64()),
               pa.array(sink.ord, pa.int64())] if positions else None
        yield _quad_batch(pa.array(sink.s, pa.string()), pa.array(sink.p, pa.string()),
                          pa.array(sink.o, pa.string()), pa.array(sink.g, pa.string()), pos)
    probs = sink.problems
    if probs:
        m = len(probs)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([_K_PROBLEM] * m, pa.int8()),
                pa.nulls(m, pa.string()),
                pa.nulls(m, pa.string()),
                pa.nulls(m, pa.string()),
                pa.nulls(m, pa.string()),
                pa.array([p.blk for p in probs], pa.int64()),
                pa.array([p.idx for p in probs], pa.int64()),
                pa.array([p.ord for p in probs], pa.int64()),
                pa.array([p.message for p in probs], pa.string()),
                pa.array([p.column for p in probs], pa.int64()),
                pa.array([p.element for p in probs], pa.string()),
            ],
            schema=RAW_ARROW,
        )


_LINE_INDEX_BITS = (1 << 33) - 1  # monotonically_increasing_id(): partition << 33 | the row's index in it


def _text_lines(spark: SparkSession, path: str) -> DataFrame:
    """The lines of a text file: ``value``, ``blk`` (the first byte of the line's input split) and ``idx`` (the
    line's index in its partition, which holds that split: (blk, idx) sorts in file order, and :class:`_Lines` turns
    it into a line number)."""
    local = rdf.local_path(path)
    return spark.read.text(local if local is not None else path).select(
        F.col("value"), F.input_file_block_start().alias("blk"),
        (F.monotonically_increasing_id().bitwiseAND(F.lit(_LINE_INDEX_BITS))).alias("idx"))


def _lines_source(spark: SparkSession, path: str, fmt: str, prefix: str, mode: str = "rows") -> DataFrame | None:
    """rspark's data source over a local line-format file (:func:`rspark.spark.jvm.lines_source`), or None when the
    file is read with Spark's text source instead. A load and its line numbers (:class:`_Lines`) ask the same."""
    local = rdf.local_path(path)
    if local is None:
        return None
    return jvm.lines_source(spark, local, quads=fmt == "nquads", prefix=prefix, mode=mode)


def python_line_parser(fmt: str, base_iri: str | None, token: str, default_graph: str, triple_graph: str | None,
                        positions: bool):
    """The mapInArrow function parsing batches of (value, blk, idx) lines in a Python worker."""

    def parse(batches):
        for batch in batches:
            values, blk_col, idx_col = batch.column(0), batch.column(1), batch.column(2)
            # lines that are not UTF-8 (Spark's text source and rspark's data source pass their bytes as they are):
            # reported as problems, and null for the parsers, which skip them
            values, invalid = rdf.invalid_utf8_lines(values)
            if invalid:
                sink = rdf.Sink()
                rdf.add_invalid_lines(invalid, blk_col.to_pylist(), idx_col.to_pylist(), sink, fmt=fmt, token=token)
                yield from sink_batches(sink, positions)
            ok, s, p, o, g = rdf.fast_lines(values, fmt=fmt, token=token, default_graph=default_graph,
                                             triple_graph=triple_graph)
            n_fast = len(s)
            if n_fast:
                pos = [blk_col.filter(ok), idx_col.filter(ok),
                       pa.repeat(pa.scalar(0, pa.int64()), n_fast)] if positions else None
                yield _quad_batch(s, p, o, g, pos)
            if n_fast < len(values):  # the other lines through pyoxigraph
                rest = np.flatnonzero(~ok.to_numpy(zero_copy_only=False))
                sink = rdf.Sink()
                rdf.parse_lines(pc.take(values, rest).to_pylist(), pc.take(blk_col, rest).to_pylist(),
                                 pc.take(idx_col, rest).to_pylist(), sink, fmt=fmt, base_iri=base_iri, token=token,
                                 default_graph=default_graph, triple_graph=triple_graph)
                yield from sink_batches(sink, positions)

    return parse


def parse_small(data: bytes, fmt: str, *, base_iri: str | None, token: str, default_graph: str,
                triple_graph: str | None, positions: bool) -> pa.Table | None:
    """The quads (raw rows, ``RAW_ARROW``) of a small clean file's bytes, parsed on the driver with the executors'
    functions (the vectorised line reader, pyoxigraph), or None when the file needs the executors' own handling: a
    problem to report (theirs are the messages), a term that may hold a quoted triple (their table of quoted triples
    is built there), or, in a line format, carriage returns, a byte-order mark or bytes that are not UTF-8 (their
    line readers decide what a line is). ``positions``: the quads carry their (blk, idx, ord) (streams need them);
    a document is then parsed statement by statement, as a stream's is."""
    if fmt in rdf.LINE_FORMATS:
        if b"\r" in data or data.startswith(b"\xef\xbb\xbf"):
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        n = len(lines)
        batch = pa.RecordBatch.from_arrays(
            [pa.array(lines, pa.string()), pa.repeat(pa.scalar(0, pa.int64()), n), pa.array(range(n), pa.int64())],
            names=["value", "blk", "idx"])
        parse = python_line_parser(fmt, base_iri, token, default_graph, triple_graph, positions)
        batches = list(parse([batch]))
    else:
        batches = [b for sink in rdf.parse_document(data, fmt=fmt, base_iri=base_iri, token=token,
                                                     default_graph=default_graph, triple_graph=triple_graph,
                                                     strict=not positions, stream=positions)
                   for b in sink_batches(sink, positions)]
    raw = pa.Table.from_batches(batches, schema=RAW_ARROW)
    if raw.num_rows and not pc.all(pc.equal(raw["k"], K_QUAD)).as_py():
        return None
    if any(pc.any(pc.match_substring(raw[c], "<<")).as_py() for c in ("s", "o", "g")):
        return None
    return raw


# a static graph file up to this size is parsed on the driver (a few thousand triples): one local relation, no Spark
# job. A local relation is part of each plan that reads it: at 1 MiB (24,500 triples) a query over it took about
# 60 ms more than over the executors' cached load, so larger files go the executors' way. The session's
# spark.rspark.load.driverMaxBytes sets another size (0: every file is parsed on the executors)
SMALL_GRAPH_BYTES = 256 << 10
DRIVER_MAX_BYTES_CONF = "spark.rspark.load.driverMaxBytes"


MAPPED_DIR_CONF = "spark.rspark.mapped.dir"


def _mapped_dir(spark: SparkSession) -> str | None:
    """Where a mapped replay's executors write the elements' N-Quads for the driver to read (``spark.rspark.mapped.
    dir``, a directory the driver and the executors share; default: the system's temporary directory, which local
    mode's executors share with the driver)."""
    value = spark.conf.get(MAPPED_DIR_CONF, None)
    if value is None:
        return None
    if not os.path.isdir(value):
        raise InputError(f"{MAPPED_DIR_CONF}={value!r}: not a directory")
    return value


def _driver_max_bytes(spark: SparkSession) -> int:
    value = spark.conf.get(DRIVER_MAX_BYTES_CONF, None)
    if value is None:
        return SMALL_GRAPH_BYTES
    try:
        return int(str(value).strip())
    except ValueError:
        raise InputError(f"{DRIVER_MAX_BYTES_CONF}={value!r}: not a number of bytes") from None


def _small_file_bytes(path: str, max_bytes: int) -> bytes | None:
    """The bytes of a local, uncompressed file of at most ``max_bytes``; else None."""
    local = rdf.local_path(path)
    try:
        if local is None or rdf.is_compressed(path) or os.path.getsize(local) > max_bytes:
            return None
        return rdf.read_bytes(local)
    except OSError:
        return None


def small_stream_batch(path: str, fmt: str, *, base_iri: str, pred: str, max_bytes: int) -> small.SmallBatch | None:
    """A stream file (TriG or N-Quads) read on the driver (:mod:`rspark.spark.loading.small`) when it is local,
    uncompressed, at most ``max_bytes`` and clean; else None (the executors' way: :func:`load_stream`). ``pred``:
    the encoded timestamp predicate."""
    data = _small_file_bytes(path, max_bytes)
    raw = None if data is None else parse_small(data, fmt, base_iri=base_iri, token=new_token(), default_graph="",
                                                triple_graph=None, positions=True)
    return small.stream_batch(raw, pred) if raw is not None and raw.num_rows else None


def _small_graph(spark: SparkSession, path: str, fmt: str, base_iri: str, graph: str) -> LoadedGraph | None:
    """A small, clean local file without RDF-star terms, parsed on the driver (:func:`parse_small`) into a local
    relation, where the executors' way costs a Python task and three Spark jobs (parse, counts, quoted triples) for
    a few rows. None: the file goes the executors' way (a larger, compressed or remote
    file, or one with a problem to report: its messages are theirs)."""
    data = _small_file_bytes(path, _driver_max_bytes(spark))
    raw = None if data is None else parse_small(data, fmt, base_iri=base_iri, token=new_token(), default_graph=graph,
                                                triple_graph=graph, positions=False)
    if raw is None:
        return None
    log.info("loading %s (%s) on the driver (a small file: %d triples)", path, _FORMAT_NAMES[fmt], raw.num_rows)
    quads = spark.createDataFrame(raw.select(["s", "p", "o", "g"]), QUADS_DDL)
    return LoadedGraph(quads=quads, quoted=local_frame(spark, [], QUOTED_DDL))


_FORMAT_NAMES = {"ntriples": "N-Triples", "nquads": "N-Quads", "turtle": "Turtle", "trig": "TriG", "rdfxml": "RDF/XML"}
_warned_fallbacks: set = set()  # (session, reason) of the fallbacks logged as a WARNING: once each, then INFO


def _log_python_fallback(spark: SparkSession, path: str, name: str) -> None:
    """The log line of a line-format file parsed in Python workers because rspark's JVM line scanner is not in the
    session: a WARNING (the first time in a session) when that was not asked for, else INFO."""
    reason, unexpected = jvm.python_fallback(spark)
    key = (id(spark._jsparkSession), reason)
    level = logging.WARNING if unexpected and key not in _warned_fallbacks else logging.INFO
    if level == logging.WARNING:
        _warned_fallbacks.add(key)
    log.log(level, "loading %s (%s) in Python workers (pyoxigraph), about 2x slower than rspark's JVM line "
            "scanner: %s", path, name, reason)


def _parse_lines_df(spark: SparkSession, path: str, *, fmt: str, base_iri: str | None, token: str,
                    default_graph: str, triple_graph: str | None, positions: bool,
                    pred: str | None) -> tuple[DataFrame, list, dict | None]:
    """Raw rows of an N-Triples/N-Quads file, parsed on executors, the DataFrames persisted for them, and
    :func:`_materialise`'s counts when the parse job could compute them (else None).

    With rspark's JVM line scanner (:mod:`rspark.spark.jvm`), one job cuts the lines it reads inside the JVM and
    keeps the text of the others, into Spark's cache; only those others (usually none) then go to the Python
    workers. That job also counts what the load needs to know of the rows (:func:`_materialise`), so that when
    the JVM read every line the parse is not read again for it. Without the scanner, every line goes through the
    Python workers (``fast_lines``, then pyoxigraph)."""
    python_parse = python_line_parser(fmt, base_iri, token, default_graph, triple_graph, positions)
    prefix = f"_:{token}_"
    # one row per line with something to read: the terms when the JVM read it, else the text for Python
    source = _lines_source(spark, path, fmt, prefix)
    name = _FORMAT_NAMES[fmt]
    if source is not None:  # rspark's data source: lines cut from the file's bytes
        log.info("loading %s (%s) with rspark's JVM data source", path, name)
        stage = source.persist(StorageLevel.MEMORY_AND_DISK)
    else:  # Spark's text source and the scanner as a UDF
        lines = _text_lines(spark, path)
        udf = jvm.line_parser(spark)
        if udf is None:
            _log_python_fallback(spark, path, name)
            raw = lines.mapInArrow(python_parse, _RAW_DDL).persist(StorageLevel.MEMORY_AND_DISK)
            return raw, [raw], None
        log.info("loading %s (%s) with Spark's text source and rspark's JVM line scanner (a UDF), not rspark's data "
                 "source: %s", path, name, jvm.source_unavailable(spark, rdf.local_path(path) or path)
                 or "it could not read the file")
        cut = F.call_function(udf, F.col("value"), F.lit(fmt == "nquads"), F.lit(prefix)).alias("r")
        stage = (
            lines.select(cut, "value", "blk", "idx")
            .filter(F.col("r").isNull() | F.col("r.s").isNotNull())
            .select(F.col("r.s").alias("s"), F.col("r.p").alias("p"), F.col("r.o").alias("o"),
                    F.col("r.g").alias("g"), F.when(F.col("r").isNull(), F.col("value")).alias("value"), "blk",
                    "idx")
            .persist(StorageLevel.MEMORY_AND_DISK)
        )
    read = F.col("s").isNotNull()
    try:  # the job that reads the file, and _materialise's counts of what the JVM read (ord is 0 on this path)
        per_split = stage.groupBy("blk").agg(
            F.count(F.when(~read, 1)).alias("python"), F.count(F.when(read, 1)).alias("count"),
            F.max(F.when(read, F.col("idx"))).alias("mi"), F.lit(0).alias("mo"),
            *_row_flags(F.when(read, F.col("g")), pred)).collect()
    except BaseException:
        stage.unpersist()
        raise
    n_python = sum(r["python"] for r in per_split)
    if fmt == "ntriples":
        graph = F.lit(triple_graph if triple_graph is not None else default_graph)
    else:
        graph = F.when(F.col("g") == "", F.lit(default_graph)).otherwise(F.col("g"))
    null_long = F.lit(None).cast("long")
    fast = stage.filter(F.col("s").isNotNull()).select(
        F.lit(K_QUAD).cast("tinyint").alias("k"), "s", "p", "o", graph.alias("g"),
        *((F.col("blk"), F.col("idx"), F.lit(0).cast("long")) if positions else (null_long,) * 3),
        F.lit(None).cast("string").alias("msg"), null_long.alias("col"), F.lit(None).cast("string").alias("elem"),
    ).toDF(*(name for name, _, _ in _RAW_FIELDS))
    if not n_python:
        return fast, [stage], _counts([(K_QUAD, r) for r in per_split], pred)
    rest = stage.filter(F.col("s").isNull()).select("value", "blk", "idx") \
        .mapInArrow(python_parse, _RAW_DDL).persist(StorageLevel.MEMORY_AND_DISK)
    return fast.unionByName(rest), [stage, rest], None


def _parse_document_df(spark: SparkSession, path: str, *, fmt: str, base_iri: str | None, token: str,
                       default_graph: str, triple_graph: str | None, strict: bool, stream: bool) -> DataFrame:
    """Raw rows of a Turtle/TriG/RDF-XML file, parsed in one executor task."""
    log.info("loading %s (%s) in one Python task (pyoxigraph)", path, _FORMAT_NAMES[fmt])
    local = rdf.local_path(path)
    compressed = rdf.is_compressed(path)
    if local is not None:
        source = local_frame(spark, [(local,)], "path string")  # read by the JVM: no Python worker for the path
    else:
        source = spark.read.format("binaryFile").load(path).select("content")

    def parse(batches):
        for batch in batches:
            for value in batch.column(0).to_pylist():
                if isinstance(value, str):
                    data = rdf.read_bytes(value)
                else:
                    data = value
                    if compressed:
                        data = gzip.decompress(data)
                for sink in rdf.parse_document(data, fmt=fmt, base_iri=base_iri, token=token,
                                                default_graph=default_graph, triple_graph=triple_graph,
                                                strict=strict, stream=stream):
                    yield from sink_batches(sink, stream)

    return source.mapInArrow(parse, _RAW_DDL)


def _parse(spark: SparkSession, path: str, *, fmt: str, base_iri: str | None, token: str, default_graph: str,
           triple_graph: str | None, strict: bool, pred: str | None = None) -> tuple[DataFrame, list, dict]:
    """The raw rows of a file (schema ``_RAW_DDL``), the DataFrames persisted for them, and :func:`_materialise`'s
    counts (the parse job's own when it could count them, else :func:`_materialise` runs the parse). ``pred``: a
    stream's timestamp predicate (encoded), None for a graph."""
    stream = pred is not None
    if fmt in rdf.LINE_FORMATS:
        raw, cached, counts = _parse_lines_df(spark, path, fmt=fmt, base_iri=base_iri, token=token,
                                              default_graph=default_graph, triple_graph=triple_graph,
                                              positions=stream, pred=pred)
    else:
        raw = _parse_document_df(spark, path, fmt=fmt, base_iri=base_iri, token=token, default_graph=default_graph,
                                 triple_graph=triple_graph, strict=strict, stream=stream)
        raw, counts = raw.persist(StorageLevel.MEMORY_AND_DISK), None
        cached = [raw]
    if counts is None:
        try:
            counts = _materialise(raw, pred)
        except BaseException:
            for df in cached:
                df.unpersist()
            raise
    return raw, cached, counts


class _Lines:
    """Turns a position (blk, idx) into a physical line number; for line formats it counts the lines of each
    Spark input split and finds each split's first ``idx`` (one JVM-only pass over the file), only when first
    needed."""

    def __init__(self, spark: SparkSession, path: str, fmt: str) -> None:
        self.spark, self.path, self.fmt = spark, path, fmt
        self._splits: dict[int, tuple[int, int]] | None = None  # blk -> (lines before the split, its first idx)

    def line(self, blk: int | None, idx: int | None) -> int | None:
        if idx is None:
            return None
        if self.fmt not in rdf.LINE_FORMATS:
            return idx + 1
        if self._splits is None:
            counts = _lines_source(self.spark, self.path, self.fmt, "_:b_", mode="count")
            if counts is not None:  # the positions of rspark's data source: idx from 0 in each split
                rows = counts.select("blk", "n", F.lit(0).alias("first")).collect()
            else:
                rows = _text_lines(self.spark, self.path).groupBy("blk") \
                    .agg(F.count(F.lit(1)).alias("n"), F.min("idx").alias("first")).collect()
            splits, total = {}, 0
            for row in sorted(rows, key=lambda r: r["blk"]):
                splits[row["blk"]] = (total, row["first"])
                total += row["n"]
            self._splits = splits
        before, first = self._splits.get(blk or 0, (0, 0))
        return before + idx - first + 1


def _problems(raw: DataFrame, total: int, lines: _Lines, path: str) -> list[DataError]:
    """The parse problems (first MAX_ERRORS in file order) as DataErrors."""
    if not total:
        return []
    rows = (
        raw.filter(F.col("k") == _K_PROBLEM)
        .select("blk", "idx", "ord", "msg", "col", "elem")
        .orderBy(F.col("blk").asc_nulls_first(), F.col("idx").asc_nulls_first(), "ord")
        .limit(MAX_ERRORS)
        .collect()
    )
    out = [
        DataError(r["msg"], file=path, line=lines.line(r["blk"], r["idx"]), column=r["col"], element=r["elem"])
        for r in rows
    ]
    if total > len(rows):
        out.append(MoreProblems(total - len(rows), "problems", file=path))
    return out


def quoted_table(*frames: DataFrame) -> DataFrame:
    """Distinct quoted triples (nested ones too) among the s and o columns of the frames: t, s, p, o."""
    terms = None
    for df in frames:
        for col in ("s", "o"):
            part = df.select(F.col(col).alias("t")).filter(F.col("t").startswith("<< "))
            terms = part if terms is None else terms.unionByName(part)
    terms = terms.distinct()

    def explode(batches):
        for batch in batches:
            t_, s_, p_, o_ = [], [], [], []
            for value in batch.column(0).to_pylist():
                for t, s, p, o in rdf.iter_quoted(value):
                    t_.append(t)
                    s_.append(s)
                    p_.append(p)
                    o_.append(o)
            yield pa.RecordBatch.from_arrays(
                [pa.array(t_, pa.string()), pa.array(s_, pa.string()), pa.array(p_, pa.string()),
                 pa.array(o_, pa.string())],
                names=["t", "s", "p", "o"],
            )

    return terms.mapInArrow(explode, "t string, s string, p string, o string").distinct()


def new_token() -> str:
    return "b" + uuid.uuid4().hex[:8]


def _row_flags(g: Column, pred: str | None) -> list[Column]:
    """Counts of a stream's default-graph quads (``g`` is "" for them, NULL for rows that are no quad) whose
    predicate is not the timestamp predicate (element metadata: ``other``), and of timestamp quads whose object is
    not a canonical integer (``stamps_other``: when there is none, the load reads every timestamp as a long)."""
    if pred is None:
        return [F.lit(0).alias("other"), F.lit(0).alias("stamps_other")]
    default = g == ""
    return [F.count(F.when(default & (F.col("p") != pred), 1)).alias("other"),
            F.count(F.when(default & (F.col("p") == pred) & ~F.col("o").rlike(PLAIN_INTEGER_STAMP), 1))
            .alias("stamps_other")]


def _counts(rows: list, pred: str | None) -> dict:
    """The counts of :func:`_materialise` from its aggregate's rows, given as (kind, row) pairs."""
    counts: dict = {"other": 0, "stamps_other": 0}
    blks, max_idx, max_ord = set(), 0, 0
    for k, row in rows:
        counts[k] = counts.get(k, 0) + row["count"]
        counts["other"] += row["other"]
        counts["stamps_other"] += row["stamps_other"]
        if pred is not None and row["blk"] is not None and row["count"]:
            blks.add(row["blk"])
            max_idx, max_ord = max(max_idx, row["mi"] or 0), max(max_ord, row["mo"] or 0)
    if pred is not None:
        counts["positions"] = _FileOrder(sorted(blks), max_idx, max_ord)
    return counts


def _materialise(raw: DataFrame, pred: str | None = None) -> dict:
    """Run the parse once into the cache; returns row counts per kind, and with ``pred`` (a stream's timestamp
    predicate) also the counts of :func:`_row_flags` and under ``"positions"`` what :class:`_FileOrder` needs (the
    splits' first bytes, the greatest line index and statement ordinal): the same job, a few rows per input
    split."""
    keys = ["k"] + (["blk"] if pred is not None else [])
    g = F.when(F.col("k") == K_QUAD, F.col("g"))
    rows = raw.groupBy(*keys).agg(F.count(F.lit(1)).alias("count"), F.max("idx").alias("mi"),
                                  F.max("ord").alias("mo"), *_row_flags(g, pred)).collect()
    return _counts([(row["k"], row) for row in rows], pred)


# --------------------------------------------------------------------------------------------------- static RDF


def load_rdf(spark: SparkSession, path: str | Path, *, graph: str | None = None, base_iri: str | None = None,
             format: str | None = None, strict: bool = True) -> LoadedGraph:
    """Load an RDF file into Spark (parsed on executors; see the module documentation).

    ``format``: ``"turtle"``, ``"ntriples"``, ``"nquads"``, ``"trig"`` or ``"rdfxml"``; by default from the
    extension (``.ttl .turtle .nt .nq .trig .rdf .owl .xml``, ``.n3`` read as Turtle, ``.gz`` looked through).
    ``graph``: an IRI; the triples of a triple format, and the default-graph quads of a quad format, go into that
    named graph (``g = "<IRI>"``); None: the default graph (``g = ""``). Relative IRIs resolve against
    ``base_iri``, else the file's ``file:`` URI.

    ``strict`` (default): the first syntax error raises :class:`DataError` (file, line, column). Otherwise
    malformed lines (N-Triples, N-Quads) or statements / graph blocks (Turtle, TriG) are skipped and listed in
    ``errors``; RDF/XML keeps what precedes its first error (pyoxigraph gives no line for RDF/XML errors).
    """
    path = str(path)
    check_file(path)
    fmt = rdf.detect_format(path, format)
    base = base_iri if base_iri is not None else rdf.file_base_iri(path)
    g = _graph_term(graph)
    small = _small_graph(spark, path, fmt, base, g)
    if small is not None:
        return small
    raw, cached, counts = _parse(spark, path, fmt=fmt, base_iri=base, token=new_token(), default_graph=g,
                                 triple_graph=g, strict=strict)

    def free() -> None:
        for df in cached:
            df.unpersist()

    try:
        errors = _problems(raw, counts.get(_K_PROBLEM, 0), _Lines(spark, path, fmt), path)
    except BaseException:
        free()
        raise
    if strict and errors:
        free()
        raise errors[0]
    quads = raw.filter(F.col("k") == K_QUAD).select("s", "p", "o", "g")
    quoted = quoted_table(quads).persist(StorageLevel.MEMORY_AND_DISK)
    return LoadedGraph(quads=quads, quoted=quoted, errors=errors, _cached=[*cached, quoted])


# --------------------------------------------------------------------------------------------------- streams

_CHECK_DDL = ("element string, blk long, idx long, ord long, kind string, m long, e int, ms long, "
              "err string, eblk long, eidx long, eord long, me long, ee int")


_CHECK_SCHEMA = pa.schema([
    ("element", pa.string()), ("blk", pa.int64()), ("idx", pa.int64()), ("ord", pa.int64()),
    ("kind", pa.string()), ("m", pa.int64()), ("e", pa.int32()), ("ms", pa.int64()),
    ("err", pa.string()), ("eblk", pa.int64()), ("eidx", pa.int64()), ("eord", pa.int64()),
    # an interval's end (RSP CG document's validity intervals): epoch ms (``ee`` 0) or a number's mantissa and
    # exponent as ``m`` and ``e``; NULL for a point
    ("me", pa.int64()), ("ee", pa.int32()),
])


def _check_elements(batches):
    """Per candidate element: its timestamp parsed, or the reason it is rejected (with the position to report).
    Elements with one canonical integer timestamp (the common case of a numeric stream) are read with Arrow's
    vectorised functions; the others row by row (:func:`_check_rows`), with the same results."""
    for batch in batches:
        vals = batch.column("vals")
        single = pc.fill_null(pc.equal(pc.list_value_length(vals), 1), False)
        padded = pc.if_else(single, vals, pa.scalar([""], type=vals.type))
        first = pc.list_element(padded, 0)
        fast = pc.fill_null(pc.and_(single, pc.match_substring_regex(first, PLAIN_INTEGER_STAMP)), False)
        n = pc.sum(fast).as_py() or 0
        if n:
            part = batch.filter(fast)
            lexical = pc.list_element(pc.split_pattern(first.filter(fast), '"'), 1)
            yield pa.RecordBatch.from_arrays([
                part.column("element"), part.column("blk"), part.column("idx"), part.column("ord"),
                pa.repeat(pa.scalar(TimeKind.NUMERIC.value), n), pc.cast(lexical, pa.int64()),
                pa.repeat(pa.scalar(0, pa.int32()), n), pa.nulls(n, pa.int64()), pa.nulls(n, pa.string()),
                part.column("tblk"), part.column("tidx"), part.column("tord"),
                pa.nulls(n, pa.int64()), pa.nulls(n, pa.int32()),
            ], schema=_CHECK_SCHEMA)
        if n < batch.num_rows:
            yield from _check_rows(batch.filter(pc.invert(fast)))


_NO_TIMESTAMP = "no timestamp (a default-graph triple <element> <timestamp-predicate> literal)"


def _several(values: list[str]) -> str:
    return "more than one timestamp: " + ", ".join(sorted(values))


def _check_rows(batch: pa.RecordBatch):
    """:func:`_check_elements` for one batch, row by row in Python (every case)."""
    cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    out = {name: [] for name in ("element", "blk", "idx", "ord", "kind", "m", "e", "ms", "err", "eblk", "eidx",
                                 "eord", "me", "ee")}
    for i, element in enumerate(cols["element"]):
        vals = cols["vals"][i]
        kind = m = e = ms = err = me = ee = None
        epos = (cols["blk"][i], cols["idx"][i], cols["ord"][i])  # where a problem is reported
        if not vals:
            err = _NO_TIMESTAMP
        elif len(vals) > 1:
            err = _several(vals)
            epos = (cols["tblk"][i], cols["tidx"][i], cols["tord"][i])
        else:
            epos = (cols["tblk"][i], cols["tidx"][i], cols["tord"][i])
            try:
                kind, value, exp, end, end_exp = parse_validity(vals[0])
                if kind is TimeKind.DATETIME:
                    ms = value
                else:
                    m, e = value, exp
                if end is not None:
                    me, ee = end, end_exp
            except ValueError as exc:
                err = "bad timestamp: " + str(exc)
        row = (element, cols["blk"][i], cols["idx"][i], cols["ord"][i], kind, m, e, ms, err, *epos, me, ee)
        for name, value in zip(out, row):
            out[name].append(value)
    yield pa.RecordBatch.from_pydict(out, schema=_CHECK_SCHEMA)


# plain integer timestamps checked by Spark's functions (False: all through Python, and no _plain_elements)
JVM_STAMPS = True


def _checked_elements(candidates: DataFrame) -> DataFrame:
    """:func:`_check_elements` over the candidate elements. Those with one canonical integer timestamp (the common
    case of a numeric stream) are read by Spark's own functions, as the vectorised Python path reads them; only the
    others (when there are any: a count over the cached aggregate decides) go to Python workers."""
    if not JVM_STAMPS:
        return candidates.mapInArrow(_check_elements, _CHECK_DDL)
    first = F.element_at("vals", 1)
    plain = (F.size("vals") == 1) & first.rlike(PLAIN_INTEGER_STAMP)
    plain = F.coalesce(plain, F.lit(False))
    null = F.lit(None)
    fast = candidates.filter(plain).select(
        "element", "blk", "idx", "ord", F.lit(TimeKind.NUMERIC.value).alias("kind"),
        F.substring_index(F.substring(first, 2, 1 << 30), '"', 1).cast("long").alias("m"),
        F.lit(0).cast("int").alias("e"), null.cast("long").alias("ms"), null.cast("string").alias("err"),
        F.col("tblk").alias("eblk"), F.col("tidx").alias("eidx"), F.col("tord").alias("eord"),
        null.cast("long").alias("me"), null.cast("int").alias("ee"))
    rest = candidates.filter(~plain)
    if rest.isEmpty():
        return fast
    return fast.unionByName(rest.mapInArrow(_check_elements, _CHECK_DDL))


def no_valid_element(path: str, loaded: LoadedStream) -> DataError | None:
    """The error of a stream file none of whose elements is valid while some were rejected or some statements are
    malformed (a binary file, a file of another format): nothing to replay, and nothing that a warning per problem
    would make clearer. ``errors`` holds the problems. None when the stream has an element, or nothing to report
    (an empty stream: a warning)."""
    if loaded.n_elements or not loaded.n_rejected:
        return None
    first = next((e for e in loaded.errors if not isinstance(e, MoreProblems)), None)
    where = ""
    if first is not None and first.line is not None:
        where = f"line {first.line}" + (f", column {first.column}" if first.column is not None else "") + ": "
    shown = f"; first: {where}{first.reason}" if first is not None else ""
    err = DataError(f"no valid stream element ({loaded.n_rejected} rejected{shown})", file=path)
    err.errors = list(loaded.errors)
    return err


def load_stream(spark: SparkSession, iri: str, path: str | Path, *,
                timestamp_predicate: str = PROV_GENERATED_AT_TIME, base_iri: str | None = None,
                strict: bool = False, format: str | None = None,
                end_predicate: str | None = None, mapping=None) -> LoadedStream:
    """Load a recorded RDF stream: a TriG or N-Quads file (RDF-star too) in the format of docs/streams.md.
    With ``mapping`` (a :class:`~rspark.spark.loading.mapping.Mapping` or its file's path), a CSV, JSON or JSON
    Lines file of records (``format``: ``csv``, ``json``, ``jsonl``; else its extension), each record mapped to an
    element on Spark's executors (:func:`_mapped_stream`).

    Each named graph is one element; its timestamp is the object of the default-graph triple
    ``<g> <timestamp_predicate> literal``: ``xsd:dateTime`` (-> epoch ms, UTC; no timezone = UTC) or a number
    (``xsd:integer``, ``xsd:decimal``, ``xsd:long`` and the other integer types) in abstract units. The stream's
    kind is that of its first element; an element with no timestamp, more than one, a bad one, one of the other
    kind, or malformed RDF (a graph block of a TriG file, a line of an N-Quads file) is rejected with a
    :class:`DataError` naming file, line and element. Rejected elements are skipped (listed in ``errors``) unless
    ``strict``, where the first problem raises. A malformed statement elsewhere is reported and skipped too. A
    local file of 0 bytes is an empty stream, with a warning and no Spark job.

    A timestamp literal ``"start/end"`` (ISO 8601; :func:`rspark.model.timestamps.parse_validity`) makes its
    element valid over an interval: ``ts`` is its start and ``ends`` gives its end. With ``end_predicate``, an
    element's interval ends at the object of its default-graph triple ``<g> <end_predicate> literal`` (an
    instant), and starts at its timestamp; an element without one is a point.
    """
    path = str(path)
    check_file(path)
    if mapping is not None:
        return _mapped_stream(spark, iri, path, format, mapping, timestamp_predicate=timestamp_predicate,
                              strict=strict, end_predicate=end_predicate)
    converted = messages.stream_format(path, format, messages.file_head(path))
    if converted is not None:
        return _converted_stream(spark, iri, path, converted, timestamp_predicate=timestamp_predicate,
                                 base_iri=base_iri, strict=strict, end_predicate=end_predicate)
    fmt = rdf.detect_format(path, format)
    if fmt not in rdf.QUAD_FORMATS:
        raise InputError(f"a stream file must be TriG or N-Quads (or an RDF Message Log, NDJSON-LD or JSON-LD: "
                         f"docs/streams.md), not {fmt}: {path}")
    if rdf.is_empty_file(path):  # known from its size: no Spark job
        log.warning("%s", rdf.empty_stream_warning(_bare_iri(iri), path))
        return _empty_stream(spark, iri)
    base = base_iri if base_iri is not None else rdf.file_base_iri(path)
    pred = _graph_term(timestamp_predicate)
    end_pred = _graph_term(end_predicate) if end_predicate is not None else None
    if end_pred is None:  # (the driver's and the scanner's checks know one timestamp per element)
        on_driver = _small_stream(spark, iri, path, fmt, base, pred)
        if on_driver is not None:
            return on_driver
        scanned = _scanned_stream(spark, iri, path, fmt, pred)
        if scanned is not None:
            return scanned
    # strict or not, the whole file is parsed so that strict mode raises the first problem in file order
    raw, cached, counts = _parse(spark, path, fmt=fmt, base_iri=base, token=new_token(), default_graph="",
                                 triple_graph=None, strict=False, pred=pred)
    lines = _Lines(spark, path, fmt)
    try:
        errors = _problems(raw, counts.get(_K_PROBLEM, 0), lines, path)
        result = _build_stream(spark, iri, raw, pred, path, lines, strict, errors, cached, counts, end_pred)
    except BaseException:
        for df in cached:
            df.unpersist()
        raise
    return result


def _converted_stream(spark: SparkSession, iri: str, path: str, fmt: str, *, timestamp_predicate: str,
                      base_iri: str | None, strict: bool, end_predicate: str | None) -> LoadedStream:
    """An RDF Message Log, NDJSON-LD or JSON-LD stream (:mod:`rspark.spark.loading.messages`): converted on the
    driver into an N-Quads file, loaded as any stream file. The problems of both steps name the source: its file,
    its line and the message; strict, the first of them in file order is raised."""
    local = rdf.local_path(path)
    if local is None:
        raise InputError(f"{path}: an RDF Message Log or JSON-LD stream is read from a local file")
    data = rdf.read_bytes(local)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(f"invalid UTF-8 (byte 0x{data[exc.start]:02X})", file=path, line=line) from None
    element_base = rdf.file_base_iri(path) + "#message-"
    conv = messages.convert(text, fmt, file=path, pred=timestamp_predicate, element_base=element_base,
                            base_iri=base_iri if base_iri is not None else rdf.file_base_iri(path),
                            end_pred=end_predicate)
    log.info("converted %s (%s): %d messages, %d problems", path, fmt, conv.messages, len(conv.errors))
    fd, target = tempfile.mkstemp(prefix="rspark-messages-", suffix=".nq")
    with os.fdopen(fd, "wb") as out:
        out.write(conv.nquads)
    try:
        if conv.nquads:
            loaded = load_stream(spark, iri, target, timestamp_predicate=timestamp_predicate, strict=False,
                                 format="nquads", end_predicate=end_predicate)
        else:
            loaded = _empty_stream(spark, iri)
            if not conv.errors:
                log.warning("stream <%s> has no elements (file %s)", _bare_iri(iri), path)
    except BaseException:
        os.remove(target)
        raise
    loaded._temporary.append(target)
    errors = conv.errors + [_source_problem(err, conv, path) for err in loaded.errors]
    errors.sort(key=lambda e: (e.line is None, e.line or 0, e.column or 0))
    loaded.errors = errors
    loaded.n_rejected += len(conv.errors)
    if strict and errors:
        loaded.unpersist()
        raise errors[0]
    return loaded


def _mapped_stream(spark: SparkSession, iri: str, path: str, format: str | None, mapping, *,
                   timestamp_predicate: str, strict: bool, end_predicate: str | None) -> LoadedStream:
    """A CSV, JSON or JSON Lines file of records mapped to stream elements (docs/streams.md, "JSON and CSV
    records"). The mapping runs on Spark's executors, in a Python ``mapPartitions`` over the file's lines (read
    by ``textFile`` in input splits, numbered by ``zipWithIndex``; a JSON document is one task, read whole):
    each partition writes its elements as N-Quads lines (Spark's ``saveAsTextFile``, the part files in file
    order), which are joined into one N-Quads file the loader reads as any stream file. The driver only reads a
    CSV file's header line and the rejected records (up to ``MAX_ERRORS``, with a count of the others), which are
    :class:`DataError` naming the file, the line and the record."""
    # delayed: the mapping module imports PyYAML, which a replay of RDF files does not need
    from rspark.spark.loading import mapping as mapping_module

    if end_predicate is not None:
        raise InputError(f"{path}: a mapped stream's elements are points (a mapping has no end field): no "
                         "end predicate")
    mp = mapping if isinstance(mapping, mapping_module.Mapping) else mapping_module.load_mapping(str(mapping))
    fmt = mapping_module.record_format(format, path)
    started = time.monotonic()
    sc = spark.sparkContext
    base = rdf.file_base_iri(path) + "#record-"
    pred = timestamp_predicate
    if fmt == "json":
        docs = sc.wholeTextFiles(path)  # a JSON document is read whole, by one task

        def run(part, _mp=mp, _path=path, _pred=pred, _base=base):
            for _, text in part:
                try:
                    recs = list(mapping_module.records(text, "json", _mp, file=_path))
                except DataError as exc:
                    yield 1, f"{exc.line or ''}\t\t{exc.reason}"
                    continue
                for rec in recs:
                    if rec.problem is None:
                        try:
                            yield 0, "".join(mapping_module.map_record(_mp, rec.value, _base + rec.name, _pred))
                            continue
                        except mapping_module.RecordError as e:
                            rec.problem = str(e)
                    yield 1, f"\t{rec.name}\t{rec.problem}"

        out = docs.mapPartitions(run)
    else:
        lines = sc.textFile(path)
        columns = mp.columns
        if fmt == "csv" and columns is None:
            head = lines.take(1)
            if not head:
                log.warning("stream <%s> has no elements (file %s)", _bare_iri(iri), path)
                return _empty_stream(spark, iri)
            columns = mapping_module.csv_header(head[0], mp, path)
        elif fmt == "csv":
            mapping_module.check_columns(columns, mp, path)

        def run(part, _mp=mp, _fmt=fmt, _cols=columns, _path=path, _pred=pred, _base=base):
            return mapping_module.map_lines(_mp, _fmt, part, columns=_cols, file=_path, pred=_pred,
                                            element_base=_base)

        out = lines.zipWithIndex().mapPartitions(run)
    out = out.persist(StorageLevel.MEMORY_AND_DISK)
    folder = tempfile.mkdtemp(prefix="rspark-mapped-", dir=_mapped_dir(spark))
    target = folder + ".nq"
    n_parts = out.getNumPartitions()
    try:
        out.filter(lambda r: r[0] == 0).map(lambda r: r[1][:-1]).saveAsTextFile("file://" + folder + "/parts")
        problems = out.filter(lambda r: r[0] == 1).map(lambda r: r[1])
        shown = problems.take(MAX_ERRORS + 1)
        n_problems = problems.count() if len(shown) > MAX_ERRORS else len(shown)
    finally:
        out.unpersist()
    parts = sorted(glob.glob(os.path.join(folder, "parts", "part-*")))
    if len(parts) != n_parts:  # written on executors' disks the driver does not see: the content would be partial
        shutil.rmtree(folder, ignore_errors=True)
        raise RsparkError(f"{path}: the mapped records were written by Spark's executors under {folder}, and "
                          f"{len(parts)} of their {n_parts} parts are on the driver's file system: on a cluster, give "
                          f"a directory the driver and every executor share: --conf {MAPPED_DIR_CONF}=DIR")
    with open(target, "wb") as whole:
        for part in parts:
            with open(part, "rb") as f:
                while chunk := f.read(1 << 20):
                    whole.write(chunk)
    shutil.rmtree(folder, ignore_errors=True)
    errors: list[DataError] = []
    for text in shown[:MAX_ERRORS]:
        line, record, reason = text.split("\t", 2)
        what = f"record {record}: " if record else ""
        errors.append(DataError(what + reason, file=path, line=int(line) if line else None))
    errors.sort(key=lambda e: (e.line is None, e.line or 0))
    if n_problems > MAX_ERRORS:
        errors.append(MoreProblems(n_problems - MAX_ERRORS, "rejected records", file=path))
    log.info("mapped %s (%s, mapping %s) on the executors in %.1f s: %d records rejected", path, fmt, mp.file,
             time.monotonic() - started, n_problems)
    try:
        if os.path.getsize(target):
            loaded = load_stream(spark, iri, target, timestamp_predicate=timestamp_predicate, strict=False,
                                 format="nquads")
        else:
            loaded = _empty_stream(spark, iri)
            if not errors:
                log.warning("stream <%s> has no elements (file %s)", _bare_iri(iri), path)
    except BaseException:
        os.remove(target)
        raise
    loaded._temporary.append(target)
    # what the load of the mapped N-Quads rejects (two records named as one element: two timestamps) names the
    # source file and the element (a line of the mapped file would mean nothing to the user)
    later = [MoreProblems(e.count, e.what, file=path) if isinstance(e, MoreProblems)
             else DataError(e.reason, file=path) for e in loaded.errors]
    loaded.errors = errors + later
    loaded.n_rejected += n_problems
    if strict and loaded.errors:
        loaded.unpersist()
        raise loaded.errors[0]
    return loaded


def _source_problem(err: DataError, conv: messages.Converted, path: str) -> DataError:
    """A problem the load found in a converted file, named where it comes from: the source's line and message."""
    if isinstance(err, MoreProblems):
        return MoreProblems(err.count, err.what, file=path)
    origin = conv.origin(err.line) if err.line is not None else None
    reason = err.reason
    if err.element is not None and reason.endswith(f" (element {err.element})"):
        reason = reason[: -len(f" (element {err.element})")]
    if origin is None:
        return DataError(reason, file=path, element=err.element)
    return DataError(f"message {origin[1]}: {reason}", file=path, line=origin[0], element=err.element)


ELEMENTS_DDL = "element string, ts long, seq long"
CONTENT_DDL = "s string, p string, o string, element string, ts long, seq long"
TRIPLES_DDL = "s string, p string, o string"


def _empty_stream(spark: SparkSession, iri: str) -> LoadedStream:
    """A stream without elements, as local relations."""
    quads = local_frame(spark, [], CONTENT_DDL)
    return LoadedStream(
        iri=_bare_iri(iri),
        elements=local_frame(spark, [], ELEMENTS_DDL),
        quads=quads,
        candidates=quads.select("s", "p", "o"),
        restricted=lambda predicates: quads,
        metadata=local_frame(spark, [], TRIPLES_DDL),
        has_metadata=False,
        bounds=(None, None),
        n_elements=0,
        quoted=local_frame(spark, [], QUOTED_DDL),
        time_kind=TimeKind.NUMERIC,
        time_scale=1,
    )


def _small_stream(spark: SparkSession, iri: str, path: str, fmt: str, base_iri: str, pred: str) -> LoadedStream | None:
    """A small, clean local stream file read on the driver (:mod:`rspark.spark.loading.small`) as local relations,
    where the executors' way costs a Python task and four Spark jobs for a few rows; None: the executors' way (a
    larger, compressed or remote file, or one with anything to report: its messages are theirs). ``seq`` is the
    element's rank in file order (the executors' is a sparse key of the same order)."""
    batch = small_stream_batch(path, fmt, base_iri=base_iri, pred=pred, max_bytes=_driver_max_bytes(spark))
    if batch is None:
        return None
    log.info("loading %s (%s) on the driver (a small file: %d elements, %d triples)", path, _FORMAT_NAMES[fmt],
             batch.n_elements, batch.quads.num_rows)
    elements = batch.elements.rename_columns(["element", "ts", "seq"])
    content = batch.quads.join(elements, keys="element").select(["s", "p", "o", "element", "ts", "seq"])
    quads = spark.createDataFrame(content, CONTENT_DDL)
    meta = batch.metadata
    return LoadedStream(
        iri=_bare_iri(iri),
        elements=spark.createDataFrame(elements, ELEMENTS_DDL),
        quads=quads,
        candidates=quads.select("s", "p", "o"),
        restricted=lambda predicates: quads.filter(F.col("p").isin(*sorted(predicates))),
        metadata=spark.createDataFrame(meta, TRIPLES_DDL) if meta is not None else local_frame(spark, [], TRIPLES_DDL),
        has_metadata=meta is not None,
        bounds=(batch.lo, batch.hi),
        n_elements=batch.n_elements,
        quoted=local_frame(spark, [], QUOTED_DDL),
        time_kind=batch.time_kind,
        time_scale=batch.time_scale,
        unique_on_driver=lambda predicates: small.triples_unique([content], predicates),
        n_quads=content.num_rows,
        stamps=np.sort(elements["ts"].to_numpy()),
    )


# A clean stream file the JVM reads whole loads in two Spark jobs (False: always the general load of _build_stream)
SCANNED_STREAMS = True
_PEEK_BYTES = 1 << 16  # the part of a stream file read on the driver to guess its timestamps' kind
# what follows the timestamp predicate on a default-graph line whose timestamp is a canonical integer
_PLAIN_STAMP_STATEMENT_END = re.compile(PLAIN_INTEGER_STAMP.strip("^$").encode() + rb"\s*\.\s*$")


def _first_stamp_plain(path: str, pred: str) -> bool:
    """Whether the first line of the file's first 64 KiB with the timestamp predicate ends in a canonical integer
    (or no line there has it): the driver's guess of whether :func:`_scanned_stream` can load the file, so that a
    stream of ``xsd:dateTime`` timestamps goes to the general load without a job spent finding out. Only a guess:
    the load checks every line."""
    with open(path, "rb") as f:
        head = f.read(_PEEK_BYTES)
    lines = head.splitlines()
    if len(head) == _PEEK_BYTES:
        lines = lines[:-1]  # perhaps cut
    needle = pred.encode()
    for line in lines:
        at = line.find(needle)
        if at > 0 and line[at - 1:at].isspace():
            return _PLAIN_STAMP_STATEMENT_END.match(line[at + len(needle):].strip()) is not None
    return True


def _scanned_stream(spark: SparkSession, iri: str, path: str, fmt: str, pred: str) -> LoadedStream | None:
    """The common case of a large stream file: first in one pass (:func:`_one_pass_stream`, when each element is
    written in one block of lines), else in two Spark jobs that each read the file with rspark's data source,
    and nothing cached but the per-element table and the content (no parse cache): every line read by the JVM
    scanner, every timestamp a canonical integer, every element valid, no RDF-star term (which the scanner leaves
    to Python). Job 1 aggregates the rows by element name (the element's first position, its timestamps as codes,
    counts of what would send the file to the general load) and reads its summary (how many elements, the
    stream's bounds, whether it has metadata); job 2 joins the named graphs' quads with the elements into the
    content's cache (and a third caches the metadata, when there is some): the file is read at load only, as the
    general load reads it. An element's ``seq`` is ``blk + idx`` of its first line: a line's index in its split is
    below its byte offset from the split's first byte, so these keys are distinct and in file order.

    None, and the general load reads the file (and reports what it finds), when rspark's data source cannot read
    it, when its first timestamp is not a canonical integer (:func:`_first_stamp_plain`), or when job 1 finds a
    line left to Python, another timestamp, a rejected element or no element."""
    local = rdf.local_path(path)
    if not (SCANNED_STREAMS and PLAIN_ELEMENTS and JVM_STAMPS) or fmt != "nquads" or local is None:
        return None
    if not _first_stamp_plain(local, pred):
        return None
    if ONE_PASS:
        loaded, retry = _one_pass_stream(spark, iri, local, pred)
        if loaded is not None or not retry:
            return loaded
    src = _lines_source(spark, path, fmt, f"_:{new_token()}_")
    if src is None:
        return None
    g, p, o = F.col("g"), F.col("p"), F.col("o")
    named, default = g != "", g == ""
    stamp = default & (p == pred)
    plain = o.rlike(PLAIN_INTEGER_STAMP)
    rows = src.filter(F.col("idx").isNotNull() | default).select(  # a run's later lines in a graph: nothing new
        F.when(named, g).otherwise(F.col("s")).alias("element"),
        F.when(named, F.col("blk") + F.col("idx")).alias("npos"),
        F.when(stamp & plain, _stamp_code(o)).alias("val"),
        F.when(F.col("s").isNull() | (stamp & ~plain), 1).alias("odd"),  # a line for Python, another timestamp
        F.when(default & (p != pred), 1).alias("other"),  # metadata
    )
    per_element = rows.groupBy("element").agg(
        F.min("npos").alias("pos"), F.min("val").alias("v0"), F.max("val").alias("v1"),
        F.count("odd").alias("odd"), F.count("other").alias("other"),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    is_element = F.col("pos").isNotNull()
    ok = is_element & F.coalesce(F.col("v0") == F.col("v1"), F.lit(False))
    ts = F.shiftright(F.col("v0"), 1)
    try:
        summary = per_element.agg(
            F.count(F.when(ok, 1)).alias("n_ok"),
            F.count(F.when(is_element & ~ok, 1)).alias("n_bad"),
            F.count(F.when(~is_element & F.col("v0").isNotNull(), 1)).alias("n_meta"),
            F.sum("odd").alias("odd"), F.sum("other").alias("other"),
            F.min(F.when(ok, ts)).alias("lo"), F.max(F.when(ok, ts)).alias("hi"),
        ).collect()[0]
    except BaseException:
        per_element.unpersist()
        raise
    if summary["odd"] or summary["n_bad"] or not summary["n_ok"]:
        per_element.unpersist()
        log.debug("%s: the general load (lines left to Python or timestamps that are not canonical integers: %d, "
                  "rejected elements: %d, elements: %d)", path, summary["odd"], summary["n_bad"], summary["n_ok"])
        return None
    log.info("loading %s (%s) with rspark's JVM data source (%d elements, integer timestamps: two jobs)", path,
             _FORMAT_NAMES[fmt], summary["n_ok"])
    cached = [per_element]
    elements = per_element.filter(ok).select("element", ts.alias("ts"), F.col("pos").alias("seq"))
    join = "broadcast" if summary["n_ok"] <= _broadcast_limit(spark) else "shuffle_hash"
    named_quads = src.filter(named).select("s", "p", "o", g.alias("element"))
    # read from the file now, as the general load reads it only at load: what is loaded stays what the file held
    content = named_quads.join(elements.hint(join), "element").select("s", "p", "o", "element", "ts", "seq")
    content = content.persist(StorageLevel.MEMORY_AND_DISK)
    cached.append(content)
    n_meta = summary["other"] + summary["n_meta"]
    if n_meta:  # the other default-graph triples, and the timestamp triples of names that are no element
        names = per_element.filter(is_element).select(F.col("element").alias("__element"))
        meta = src.filter(default).join(names, (F.col("s") == F.col("__element")) & (p == F.lit(pred)),
                                        "left_anti").select("s", "p", "o").persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(meta)
    else:
        meta = local_frame(spark, [], TRIPLES_DDL)
    try:
        n_quads = content.count()
        if n_meta:
            meta.count()
    except BaseException:
        for df in cached:
            df.unpersist()
        raise

    return _scanned(spark, iri, content, elements, meta, n_meta, summary, cached, n_quads)


def _scanned(spark: SparkSession, iri: str, content: DataFrame, elements: DataFrame, meta: DataFrame, n_meta: int,
             summary, cached: list, n_quads: int) -> LoadedStream:
    """A stream rspark's data source read whole (:func:`_scanned_stream`, :func:`_one_pass_stream`): every element
    valid, integer timestamps, no RDF-star term; ``summary`` its element count and bounds (``n_ok``, ``lo``,
    ``hi``); ``cached`` the caches the stream owns (a predicate set's content is cached apart and added there);
    ``n_quads`` the content's rows."""

    def restricted(predicates: frozenset) -> DataFrame:
        # the content's quads with one of these predicates, cached apart (from the load's cache)
        out = content.filter(F.col("p").isin(*sorted(predicates))).persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(out)
        return out

    return LoadedStream(
        iri=_bare_iri(iri),
        elements=elements,
        quads=content,
        candidates=content.select("s", "p", "o"),  # every element is valid: the content's triples
        restricted=restricted,
        metadata=meta,
        has_metadata=n_meta > 0,
        bounds=(summary["lo"], summary["hi"]),
        n_elements=summary["n_ok"],
        n_candidates=n_quads,  # the candidates are the content's triples
        n_quads=n_quads,
        quoted=local_frame(spark, [], QUOTED_DDL),  # the JVM scanner reads no RDF-star term
        time_kind=TimeKind.NUMERIC,
        time_scale=1,
        _cached=cached,
    )


# A clean stream file whose elements are each written in one block of lines is read in one pass (False: the two jobs
# of _scanned_stream)
ONE_PASS = True
# statements that may wait in memory for their element's timestamp in a split of the one-pass load (more: the two jobs)
ONE_PASS_PENDING = 1 << 16


# longs before a split's name hashes in the one-pass load's summary row (NQuadsSource.StreamReader.SUMMARY_HEADER):
# its elements, their least and greatest timestamp, its metadata triples, its statements
SUMMARY_HEADER = 5


def _split_summaries(rows: list) -> dict:
    """The one-pass load's summary of the whole file from its splits' summary rows (``ts``: problems, ``seq``:
    things unresolved within the split, ``h``: the split's counts then its sorted name hashes, little-endian longs):
    the elements, their bounds, the metadata triples and statements, the problems, the unresolved, and whether a
    name is in two splits' lists (two splits then each resolved part of it)."""
    out = {"n_ok": 0, "lo": None, "hi": None, "n_meta": 0, "n_quads": 0, "bad": 0, "unresolved": 0}
    lists = []
    for row in rows:
        out["bad"] += row["ts"] or 0
        out["unresolved"] += row["seq"] or 0
        longs = np.frombuffer(row["h"], dtype="<i8")
        elements, lo, hi, meta, quads = (int(v) for v in longs[:SUMMARY_HEADER])
        if elements:
            out["lo"] = lo if out["lo"] is None else min(out["lo"], lo)
            out["hi"] = hi if out["hi"] is None else max(out["hi"], hi)
        out["n_ok"] += elements
        out["n_meta"] += meta
        out["n_quads"] += quads
        if len(longs) > SUMMARY_HEADER:
            lists.append(longs[SUMMARY_HEADER:])
    every = np.sort(np.concatenate(lists)) if len(lists) > 1 else None
    out["shared"] = every is not None and bool((every[1:] == every[:-1]).any())
    return out


def _one_pass_stream(spark: SparkSession, iri: str, local: str, pred: str) -> tuple[LoadedStream | None, bool]:
    """:func:`_scanned_stream`'s load in one pass over the file, one Spark job: rspark's data source in its stream
    mode (``NQuadsSource.StreamReader``) attaches each element's timestamp and first position to its statements in
    the scan, within the input split that reads the element (splits are cut between blocks of lines of one name),
    and gives the elements, the metadata and a summary per split with them, all into one cache; the content, the
    elements and the metadata are its projections (no aggregation by element, no join, no second read of the file).

    Returns (the stream, False), or (None, False) when the file needs the general load (a line the scanner leaves
    to Python, a timestamp that is not a canonical integer, an element with two timestamps, no element), or (None,
    True) when this pass could not resolve every element within one split (an element written in lines far from
    its timestamp, or a name seen by two splits): :func:`_scanned_stream`'s two jobs load it."""
    src = jvm.lines_source(spark, local, quads=True, prefix=f"_:{new_token()}_", mode="stream", pred=pred,
                           pending=ONE_PASS_PENDING)
    if src is None:
        return None, False
    rows = src.persist(StorageLevel.MEMORY_AND_DISK)
    k = F.col("k")
    try:
        # one row per split, the last of each: the scan that builds the cache reads the summaries' batches only
        summary = _split_summaries(rows.where(k == 3).select("ts", "seq", "h").collect())
    except BaseException:
        rows.unpersist()
        raise
    shared = not summary["bad"] and not summary["unresolved"] and summary["shared"]
    if summary["bad"] or summary["unresolved"] or shared or not summary["n_ok"]:
        rows.unpersist()
        log.debug("%s: not loaded in one pass (problems for the general load: %d, elements unresolved within a "
                  "split: %d, names in several splits: %s, elements: %d)", local, summary["bad"],
                  summary["unresolved"], shared, summary["n_ok"])
        return None, bool(summary["unresolved"] or shared)
    log.info("loading %s (N-Quads) with rspark's JVM data source in one pass (%d elements, integer timestamps)",
             local, summary["n_ok"])
    cached = [rows]
    content = rows.where(k == 0).select("s", "p", "o", "element", "ts", "seq")
    elements = rows.where(k == 1).select("element", "ts", "seq")
    n_meta = summary["n_meta"]
    meta = rows.where(k == 2).select("s", "p", "o") if n_meta else local_frame(spark, [], TRIPLES_DDL)

    return _scanned(spark, iri, content, elements, meta, n_meta, summary, cached, summary["n_quads"]), False


# bytes of JVM memory per element broadcast: ~20x an element's row (name, ts, seq), ~10x its hashed relation
BROADCAST_BYTES_PER_ELEMENT = 2000


def _broadcast_limit(spark: SparkSession) -> int:
    """How many elements a stream may have for its element table to be broadcast to the content join: one per
    BROADCAST_BYTES_PER_ELEMENT bytes of the driver's memory (1 GB: about 537,000), and of the executors' on a
    cluster (in local mode the driver's JVM runs the tasks)."""
    conf = spark.sparkContext._jsc.sc().conf()
    keys = ["spark.driver.memory"]
    if not spark.sparkContext.master.startswith("local"):
        keys.append("spark.executor.memory")
    return min(conf.getSizeAsBytes(key, "1g") for key in keys) // BROADCAST_BYTES_PER_ELEMENT


class _FileOrder:
    """A long that sorts statements in file order, computed from their position ``(blk, idx, ord)`` alone (no
    sort, no shuffle): ``rank(blk) * R + idx * O + ord`` with ``O`` the greatest ordinal + 1 and ``R`` the greatest
    line index + 1 times ``O``, ``rank`` the split's rank among the file's splits (``blks``, sorted). It is sparse
    (not 0, 1, 2, ...): an element's ``seq`` only orders elements with equal timestamps. When the product does
    not fit in 63 bits (a file of billions of lines with a line of billions of statements), ``seq`` is a row
    number over the elements sorted by position instead (a sort in one task)."""

    LIMIT = 1 << 62

    def __init__(self, blks: list[int], max_idx: int, max_ord: int) -> None:
        self.blks = blks or [0]
        self.o = max_ord + 1
        self.r = (max_idx + 1) * self.o
        self.fits = len(self.blks) * self.r < self.LIMIT

    def key(self, blk: Column, idx: Column, ord_: Column) -> Column:
        """The key of a position (long columns), or of the element rows' position when ``fits`` is False."""
        if not self.fits:
            return (F.row_number().over(Window.orderBy(blk, idx, ord_)) - 1).cast("long")
        if len(self.blks) == 1:
            rank = F.lit(0).cast("long")
        else:
            pairs = []
            for i, b in enumerate(self.blks):
                pairs += [F.lit(b).cast("long"), F.lit(i).cast("long")]
            rank = F.element_at(F.create_map(*pairs), blk)
        return rank * F.lit(self.r) + idx * F.lit(self.o) + ord_

    def position(self, key: int) -> tuple[int, int, int]:
        """The position ``(blk, idx, ord)`` of a key (the inverse of :meth:`key`, when ``fits``)."""
        rank, rest = divmod(key, self.r)
        idx, ord_ = divmod(rest, self.o)
        return self.blks[rank], idx, ord_


PLAIN_ELEMENTS = True  # a stream whose timestamps are all canonical integers: its elements checked by _plain_elements


@dataclass
class _Elements:
    """What the element check of a stream load found: ``per_element`` (one row a name, cached: ``element``,
    ``pos`` NULL for a name that has no statement in a named graph, ``rej`` whether one of its statements was
    malformed, ``v0`` NULL when it has no timestamp), the valid ``elements`` (``element, ts, seq``, not yet
    cached), the stream's time kind and scale exponent, how many valid elements there are, how many timestamp
    triples name no element (metadata), and the rejected elements: the first MAX_ERRORS in file order as (element,
    message, blk, idx), and their number."""

    per_element: DataFrame
    elements: DataFrame
    kind: TimeKind
    scale_exp: int
    n_elements: int
    n_meta: int
    bad: list[tuple[str, str, int | None, int | None]]
    n_bad: int
    bounds: tuple[int | None, int | None] | None = None  # the valid elements' least and greatest ts, when known
    ends: DataFrame | None = None  # the ends of the elements valid over an interval (element, te); None: none


def _is_stamp(pred: str) -> Column:
    """A raw row that is a timestamp triple: a default-graph quad with the timestamp predicate."""
    return (F.col("k") == K_QUAD) & (F.col("g") == "") & (F.col("p") == pred)


def _element_rows(raw: DataFrame, pred: str, pos: Column, val: Column) -> DataFrame:
    """The rows the element check aggregates by element name: each statement of a named graph (its ``pos``), each
    timestamp triple (``val``, and its position as ``spos``), each malformed statement of an element (``rej``)."""
    is_named = (F.col("k") == K_QUAD) & (F.col("g") != "")
    is_stamp = _is_stamp(pred)
    is_rejected = (F.col("k") == _K_PROBLEM) & F.col("elem").isNotNull()
    # a statement without a line index continues a run of its element's lines (rspark's data source): the run's
    # first statement, which has one, is before it in the file, so it cannot be the element's first
    first = F.col("idx").isNotNull()
    return raw.filter((is_named & first) | is_stamp | is_rejected).select(
        F.when(is_named, F.col("g")).when(is_stamp, F.col("s")).otherwise(F.col("elem")).alias("element"),
        F.when(is_named, pos).alias("npos"),
        F.when(is_stamp, val).alias("val"),
        F.when(is_stamp, pos).alias("spos"),
        is_rejected.alias("rej"),
    )


def _by_element(rows: DataFrame) -> DataFrame:
    # the distinct timestamp values are only needed to tell one from several: their least and greatest
    return rows.groupBy("element").agg(F.min("npos").alias("pos"), F.min("val").alias("v0"),
                                       F.max("val").alias("v1"), F.min("spos").alias("tpos"),
                                       F.max("rej").alias("rej")).persist(StorageLevel.MEMORY_AND_DISK)


def _stamp_code(o: Column) -> Column:
    """A canonical integer timestamp (``o`` matches PLAIN_INTEGER_STAMP) as a long: twice its value, plus one for
    ``xsd:long``, so that equal codes are equal terms (its value is the code shifted right by one)."""
    return F.substring_index(F.substring(o, 2, 1 << 30), '"', 1).cast("long") * 2 + o.endswith("#long>").cast("long")


def _plain_elements(raw: DataFrame, pred: str, order: _FileOrder, cached: list) -> _Elements:
    """The element check of a stream whose timestamps are all canonical integers (``xsd:integer`` or
    ``xsd:long`` of at most 17 digits) and whose positions fit :class:`_FileOrder`'s key: every value the
    aggregation by element keeps is a long (the position key; a timestamp as twice its value, plus one for
    ``xsd:long``, so that equal codes are equal terms), which Spark aggregates in a hash table rather than by
    sorting the stream's rows; the summary is read in the job that caches the aggregate. Same results as
    :func:`_general_elements`."""
    key = order.key(F.col("blk"), F.col("idx"), F.col("ord"))
    per_element = _by_element(_element_rows(raw, pred, key, _stamp_code(F.col("o"))))
    cached.append(per_element)
    candidate = F.col("pos").isNotNull() & ~F.col("rej")
    ok = candidate & (F.col("v0") == F.col("v1"))  # NULL (no timestamp): not ok
    ts = F.shiftright(F.col("v0"), 1)  # a valid element's timestamp (its code without the xsd:long bit)
    rejected = candidate & ~F.coalesce(ok, F.lit(False))
    summary = per_element.agg(
        F.count(F.when(ok, 1)).alias("n_ok"),
        F.count(F.when(rejected, 1)).alias("n_err"),
        F.count(F.when(F.col("pos").isNull() & ~F.col("rej") & F.col("v0").isNotNull(), 1)).alias("n_meta"),
        # the stream's bounds (as stream_bounds computes them over the elements below), in the same job
        F.min(F.when(ok, ts)).alias("lo"),
        F.max(F.when(ok, ts)).alias("hi"),
    ).collect()[0]
    bad = []
    if summary["n_err"]:
        rows = per_element.filter(rejected) \
            .select("element", "v0", F.when(F.col("v0").isNull(), F.col("pos")).otherwise(F.col("tpos")).alias("at")) \
            .orderBy("at").limit(MAX_ERRORS).collect()
        several = [r["element"] for r in rows if r["v0"] is not None]
        stamps: dict[str, set] = {}
        if several:  # their timestamps as written (the general check lists the least and the greatest string)
            for r in raw.filter(_is_stamp(pred) & F.col("s").isin(*several)).select("s", "o").collect():
                stamps.setdefault(r["s"], set()).add(r["o"])
        for r in rows:
            blk, idx, _ = order.position(r["at"])
            values = stamps.get(r["element"])
            msg = _NO_TIMESTAMP if r["v0"] is None else _several([min(values), max(values)])
            bad.append((r["element"], msg, blk, idx))
    elements = per_element.filter(ok).select(
        "element", ts.alias("ts"), F.col("pos").alias("seq"))
    return _Elements(per_element, elements, TimeKind.NUMERIC, 0, summary["n_ok"], summary["n_meta"], bad,
                     summary["n_err"], (summary["lo"], summary["hi"]))


def _general_elements(raw: DataFrame, pred: str, path: str, order: _FileOrder, cached: list) -> _Elements:
    """The element check of any stream: timestamps of every kind (row by row in Python workers for those that
    are not canonical integers, :func:`_check_elements`), positions as (blk, idx, ord) structs."""
    pos = ["blk", "idx", "ord"]
    # One aggregation by element name over the named graphs' quads, the timestamp triples and the rejected
    # statements (instead of three aggregates joined): the element's first position, its timestamp values and
    # their first position, and whether a statement of it was malformed.
    position = F.struct(*pos)
    per_element = _by_element(_element_rows(raw, pred, position, F.col("o")))
    cached.append(per_element)
    vals = F.when(F.col("v0").isNull(), F.array().cast("array<string>")) \
        .when(F.col("v0") == F.col("v1"), F.array("v0")).otherwise(F.array("v0", "v1"))
    candidates = per_element.filter(F.col("pos").isNotNull() & ~F.col("rej")).select(
        "element",
        *[F.col("pos." + c).alias(c) for c in pos],
        vals.alias("vals"),
        *[F.col("tpos." + c).alias("t" + c) for c in pos],
    )
    checked = _checked_elements(candidates).persist(StorageLevel.MEMORY_AND_DISK)
    cached.append(checked)

    # One aggregate job: the stream's kind (that of its first element in file order with a good timestamp), the
    # decimal scale numeric timestamps need, and how many elements are rejected of each reason.
    ok = F.col("err").isNull()
    is_number = ok & (F.col("kind") == TimeKind.NUMERIC.value)
    end_number = is_number & F.col("me").isNotNull()
    summary = checked.agg(
        F.min(F.when(ok, F.struct(*pos, "kind"))).alias("first"),
        F.greatest(F.max(F.when(is_number, F.col("e"))), F.max(F.when(end_number, F.col("ee")))).alias("e"),
        F.greatest(F.max(F.when(is_number, F.length(F.abs(F.col("m")).cast("string")) - F.col("e"))),
                   F.max(F.when(end_number, F.length(F.abs(F.col("me")).cast("string")) - F.col("ee"))))
        .alias("digits"),
        F.count(F.when(ok & F.col("me").isNotNull(), 1)).alias("n_interval"),
        F.count(F.when(~ok, 1)).alias("n_err"),
        F.count(F.when(is_number, 1)).alias("n_number"),
        F.count(F.when(ok & (F.col("kind") == TimeKind.DATETIME.value), 1)).alias("n_datetime"),
    ).collect()[0]
    kind = TimeKind(summary["first"]["kind"]) if summary["first"] is not None else TimeKind.NUMERIC
    scale_exp = 0
    if kind is TimeKind.NUMERIC:
        scale_exp = summary["e"] or 0
        if summary["digits"] is not None and summary["digits"] + scale_exp > 18:
            raise DataError(
                f"the timestamps need 10^{scale_exp} units per time unit to be integral, which overflows a 64-bit "
                "count: use fewer decimal digits", file=path)
    other = TimeKind.DATETIME if kind is TimeKind.NUMERIC else TimeKind.NUMERIC
    n_bad = summary["n_err"] + summary["n_datetime" if kind is TimeKind.NUMERIC else "n_number"]
    bad = []
    if n_bad:
        rows = checked.filter(~ok | (F.col("kind") == other.value)).orderBy("eblk", "eidx", "eord") \
            .limit(MAX_ERRORS).collect()
        for r in rows:
            msg = r["err"] or (
                f"the timestamp is {'a number' if kind is TimeKind.DATETIME else 'an xsd:dateTime'}, but the "
                f"stream's first element has {'xsd:dateTime' if kind is TimeKind.DATETIME else 'numeric'} "
                "timestamps (one stream "
                "uses one kind)"
            )
            bad.append((r["element"], msg, r["eblk"], r["eidx"]))

    valid = checked.filter(ok & (F.col("kind") == kind.value))
    if kind is TimeKind.DATETIME:
        ts, te = F.col("ms"), F.col("me")
    else:
        ts = F.col("m") * F.pow(F.lit(10.0), F.lit(scale_exp) - F.col("e")).cast("long")
        te = F.col("me") * F.pow(F.lit(10.0), F.lit(scale_exp) - F.col("ee")).cast("long")
    seq = order.key(*(F.col(c) for c in pos))
    elements = valid.select("element", ts.cast("long").alias("ts"), seq.alias("seq"))
    ends = None
    if summary["n_interval"]:  # the elements valid over an interval: their end (their ts is the start)
        ends = valid.where(F.col("me").isNotNull()).select("element", te.cast("long").alias("te"))
    n_elements = summary["n_datetime" if kind is TimeKind.DATETIME else "n_number"]
    n_meta = per_element.filter(F.col("pos").isNull() & ~F.col("rej") & F.col("v0").isNotNull()).count()
    return _Elements(per_element, elements, kind, scale_exp, n_elements, n_meta, bad, n_bad, ends=ends)


def _with_end_triples(raw: DataFrame, pred: str, end_pred: str) -> DataFrame:
    """``raw`` with each timestamp triple of an element that also has an end triple (``<g> <end_pred> literal``)
    turned into the interval literal ``"start/end"`` of the two literals' lexical forms, which the element check
    reads as any interval timestamp (an element with two ends gets two values: 'more than one timestamp')."""
    is_end = (F.col("k") == K_QUAD) & (F.col("g") == "") & (F.col("p") == end_pred)
    ends = raw.filter(is_end).select(F.col("s").alias("_end_s"), F.col("o").alias("_end_o"))
    joined = raw.join(ends, (F.col("s") == F.col("_end_s")) & _is_stamp(pred), "left")

    def lexical(c: Column) -> Column:
        return F.regexp_extract(c, r'^"(.*)"', 1)
    interval = F.concat(F.lit('"'), lexical(F.col("o")), F.lit("/"), lexical(F.col("_end_o")), F.lit('"'))
    return joined.withColumn("o", F.when(F.col("_end_o").isNotNull(), interval).otherwise(F.col("o"))) \
        .drop("_end_s", "_end_o")


def _build_stream(spark, iri, raw, pred, path, lines, strict, errors, cached, counts: dict,
                  end_pred: str | None = None) -> LoadedStream:
    order = counts["positions"]
    quads = raw.filter(F.col("k") == K_QUAD)
    named = quads.filter(F.col("g") != "")
    default = quads.filter(F.col("g") == "")

    if end_pred is not None:
        check = _general_elements(_with_end_triples(raw, pred, end_pred), pred, path, order, cached)
    elif PLAIN_ELEMENTS and JVM_STAMPS and order.fits and not counts["stamps_other"]:
        check = _plain_elements(raw, pred, order, cached)
    else:
        check = _general_elements(raw, pred, path, order, cached)
    if check.n_bad:
        for element, msg, blk, idx in check.bad:
            errors.append(DataError(msg, file=path, line=lines.line(blk, idx), element=element))
        if check.n_bad > len(check.bad):
            errors.append(MoreProblems(check.n_bad - len(check.bad), "rejected elements", file=path))
        errors.sort(key=lambda e: (e.line is None, e.line or 0))
    if strict and errors:
        raise errors[0]
    n_rejected = counts.get(_K_PROBLEM, 0) + check.n_bad  # malformed statements, rejected elements
    if not check.n_elements and not n_rejected:  # a replay would print nothing at all for it
        log.warning("stream <%s> has no elements (file %s)", _bare_iri(iri), path)

    # not cached apart: a filter and projection of the cached per-element check, read when used (by the content
    # join, and for the bounds when the check did not find them; a cache of its own costs a job of its own), unless
    # seq is a row number over all the elements (positions beyond _FileOrder's long key): a sort
    # not to repeat
    elements = check.elements
    if not order.fits:
        elements = elements.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(elements)
    # a hash join on the element (its table is one row an element, far smaller than the quads), not a sort of
    # every quad by element name; broadcast when the elements' table is small for the JVMs' memory, so that the
    # quads are not shuffled at all
    join = "broadcast" if check.n_elements <= _broadcast_limit(spark) else "shuffle_hash"
    named_quads = named.select("s", "p", "o", F.col("g").alias("element"))

    def dated(quads: DataFrame) -> DataFrame:
        out = quads.join(elements.hint(join), "element").select("s", "p", "o", "element", "ts", "seq")
        out = out.persist(StorageLevel.MEMORY_AND_DISK)
        cached.append(out)
        return out

    content = dated(named_quads)

    def restricted(predicates: frozenset) -> DataFrame:
        # the content's quads with one of these predicates, joined and cached apart
        return dated(named_quads.filter(F.col("p").isin(*sorted(predicates))))
    per_element = check.per_element
    element_names = per_element.filter(F.col("pos").isNotNull() | F.col("rej")).select("element")
    # metadata: the other default-graph triples, and the timestamp triples of names that are no element
    n_meta = counts["other"] + check.n_meta
    stamps = [pred] if end_pred is None else [pred, end_pred]  # an element's end is a timestamp too, no metadata
    meta = default.join(
        element_names, (default["s"] == element_names["element"]) & default["p"].isin(*stamps), "left_anti"
    ).select("s", "p", "o")
    quoted = quoted_table(content, meta).persist(StorageLevel.MEMORY_AND_DISK)
    cached.append(quoted)
    return LoadedStream(
        iri=_bare_iri(iri),
        elements=elements,
        quads=content,
        candidates=named.select("s", "p", "o"),
        restricted=restricted,
        metadata=meta,
        has_metadata=n_meta > 0,
        bounds=check.bounds,
        n_elements=check.n_elements,
        quoted=quoted,
        time_kind=check.kind,
        time_scale=10 ** check.scale_exp,
        errors=errors,
        n_rejected=n_rejected,
        ends=check.ends,
        _cached=cached,
    )
