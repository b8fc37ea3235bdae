"""A live stream's buffer: the elements that arrived and that some evaluation may still read, as Spark tables.

Every batch of input (the files a source delivered) is read on the driver when it is small and clean
(:mod:`rspark.engine.live.ingest`, :meth:`LiveBuffer.append_small`), else loaded by the replay's own loader
(:func:`rspark.spark.loading.loader.load_stream`: same formats, same checks, same messages), then appended to the
buffer: elements whose timestamp is at or before the stream's *evaluated horizon* (every instant up to it has been
reported) are late and go to the dead-letter directory instead.

The buffer is log-structured: each batch's accepted elements are written as one *segment* (small Parquet tables in
the checkpoint directory: written by Spark and read back cached, or written by Arrow from the driver and kept as
Arrow tables, which every plan reads as one scan of their record batches) and never rewritten, so a batch costs
the writing of its own rows, not of the whole buffer. The buffer's tables are the union of its segments. Pruning
(:meth:`LiveBuffer.prune`) raises the least timestamp the buffer holds (rows below it are filtered out when read)
and drops the segments wholly below it; the metadata triples of a dropped segment about no element of it are carried
into a small segment of their own. When there are more than ``MAX_SEGMENTS`` segments (a landmark window keeps
everything), or, at the end of a micro-batch (:meth:`LiveBuffer.compact`, after the evaluation's prune), more than
``MAX_DRIVER_ROWS`` quads held as Arrow tables, they are merged into one: by Arrow into a segment the driver holds
when every segment is held there and the quads at or after the prune's bound are within ``MAX_DRIVER_ROWS`` (a long
window's many batches: milliseconds), else by Spark (a segment written and cached by Spark: seconds). The state
(:meth:`LiveBuffer.state`, saved by the runner) names the segments, so that a restart finds the buffer as it was; a
segment no saved state names is deleted once a newer state is saved.

Elements keep the order of arrival: ``seq`` is the number of elements that arrived before them plus their rank in
their file (file order), so ties of timestamps keep arrival order, as a replay of the files concatenated in that
order would.
"""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import _parse_datatype_string

from rspark.errors import RsparkError
from rspark.model.codec import encode
from rspark.model.terms import Literal
from rspark.model.time import TimeKind, Timeline
from rspark.model.timestamps import format_time
from rspark.model.xsd import XSD_DATETIME, XSD_DECIMAL, XSD_INTEGER
from rspark.spark.frames import local_frame
from rspark.spark.jvm import arrow_frame
from rspark.spark.loading.small import triples_unique
from rspark.spark.streaming.stream import Stream
from rspark.spark.streaming.windows import stream_bounds

_TABLES = {
    "elements": "element string, ts long, seq long",
    "quads": "s string, p string, o string, element string, ts long, seq long",
    "metadata": "s string, p string, o string",
    "quoted": "t string, s string, p string, o string",
    "ends": "element string, te long",  # the elements valid over an interval: their end (docs/streams.md)
}

# segments beyond which they are merged into one (each is a scan in every plan that reads the buffer), and quads held
# on the driver (segments written from there) beyond which they are (into a segment written and cached by Spark)
MAX_SEGMENTS = 24
MAX_DRIVER_ROWS = 300_000
# a table of the segments the driver holds, up to this many rows, is one partition: a window's plan over it runs as
# one task, without the shuffle a DISTINCT or an aggregate needs over several (measured: about a quarter less time
# per evaluation at 10,000 triples/s, with the window bounds as parameters: rspark.spark.streaming.windows)
SINGLE_PARTITION_ROWS = 200_000


@dataclass
class BatchResult:
    """What one batch brought: elements accepted and late (their names, for the dead-letter note), and the time
    kind the batch had."""

    accepted: int = 0
    late: int = 0
    late_elements: list = field(default_factory=list)


@dataclass
class Segment:
    """A part of the buffer written at once (a batch's accepted elements, a merge, or carried metadata), in the
    directory ``name`` under the buffer's. ``scale``: the time scale its ``ts`` are written at (the buffer's at the
    time; read at the buffer's current one); ``lo`` / ``hi``: its elements' least and greatest ``ts`` at that scale
    (None: it holds no element); ``meta``: it has metadata rows; ``quoted``: it may have quoted-triple rows.
    ``tables``: the cached DataFrames read from it, or for a segment written from the driver its Arrow tables (a
    table it does not have is absent)."""

    name: str
    scale: int
    lo: int | None
    hi: int | None
    meta: bool
    quoted: bool = True
    tables: dict = field(default_factory=dict, repr=False)

    def state(self) -> dict:
        return {"name": self.name, "scale": self.scale, "lo": self.lo, "hi": self.hi, "meta": self.meta,
                "quoted": self.quoted, "tables": sorted(self.tables)}


@dataclass
class LiveBuffer:
    """The buffered content of one live stream, persisted under ``directory``.

    ``kind``: the :class:`~rspark.model.time.TimeKind` of its timestamps (fixed by the first batch; a batch of the
    other kind is rejected); ``scale``: the time scale of ``ts`` (numeric streams: the smallest power of ten that
    makes every timestamp seen integral; it only grows, and the segments' ``ts`` are rescaled when read); ``first``:
    the least timestamp ever accepted (ticks; windows anchored at the first element keep their origin when it is
    pruned); ``last``: the greatest; ``low``: the least the buffer holds (``first``, then the prune's bound);
    ``count``: elements accepted so far (the next ``seq`` base); ``next_id``: the number of the next segment."""

    spark: SparkSession
    iri: str
    directory: str
    timestamp_predicate: str = "http://www.w3.org/ns/prov#generatedAtTime"
    kind: TimeKind | None = None
    scale: int = 1
    first: int | None = None
    last: int | None = None
    low: int | None = None
    count: int = 0
    next_id: int = 1
    # the longest validity interval of an element accepted so far (ticks; 0: points only): a prune keeps the
    # elements that started that much before its bound, whose intervals may still reach it
    span: int = 0
    segments: list = field(default_factory=list)
    empty: dict = field(default_factory=dict)  # table name -> its empty frame (made once: a table no segment has)

    # ------------------------------------------------------------------------------------------------ state

    def state(self) -> dict:
        return {"kind": self.kind, "scale": self.scale, "first": self.first, "last": self.last, "low": self.low,
                "count": self.count, "next": self.next_id, "span": self.span,
                "segments": [seg.state() for seg in self.segments]}

    def restore(self, state: dict) -> None:
        """Reads the segments ``state`` names (after a restart)."""
        self.kind, self.scale = _saved_kind(state.get("kind")), state.get("scale", 1)
        self.first, self.last, self.low = state.get("first"), state.get("last"), state.get("low")
        self.count = state.get("count", 0)
        self.span = state.get("span", 0)
        if "segments" in state:
            self.next_id = state.get("next", 1)
            saved = state["segments"]
        else:  # a checkpoint of the earlier layout: one directory per version, the whole buffer in it
            version = state.get("version", 0)
            self.next_id = version + 1
            name = f"v{version:08d}"
            saved = [{"name": name, "scale": self.scale, "lo": self.low, "hi": self.last, "meta": True, "quoted": True,
                      "tables": [t for t in _TABLES if os.path.isdir(os.path.join(self.directory, name, t))]}] \
                if version else []
        self.segments = []
        for s in saved:
            seg = Segment(s["name"], s["scale"], s["lo"], s["hi"], s["meta"], s.get("quoted", True))
            seg.tables = {name: self._read(seg.name, name) for name in s.get("tables", _TABLES)}
            self.segments.append(seg)

    def _read(self, segment: str, name: str) -> DataFrame:
        return self.spark.read.schema(_TABLES[name]).parquet(os.path.join(self.directory, segment, name)).cache()

    # ------------------------------------------------------------------------------------------------ input

    def append(self, loaded, horizon: int | None, dead_letter: str | None) -> BatchResult:
        """Adds a loaded batch (:class:`~rspark.spark.loading.loader.LoadedStream`): its elements after
        ``horizon`` (ticks at the buffer's scale; None: nothing evaluated yet) join the buffer as a new segment, the
        others are late: written as N-Quads into ``dead_letter`` (a file path) and counted. Returns what was
        accepted and late; the segment is written but the state is the caller's to save."""
        kind = loaded.time_kind
        if loaded.bounds is not None:
            lo, _ = loaded.bounds
        else:  # the load did not find them (date-time and other timestamps than canonical integers)
            lo, _ = stream_bounds(loaded.elements)
        if lo is None:  # the batch has no valid element (its errors are reported by the caller)
            return BatchResult()
        if self.kind is not None and kind != self.kind:
            raise RsparkError(f"stream <{self.iri}> has {self.kind.noun} timestamps; this batch has {kind.noun} ones")
        scale = max(self.scale, loaded.time_scale)
        factor_old, factor_new = scale // self.scale, scale // loaded.time_scale
        self._rescale(factor_old)  # the segments keep their scale; the bounds follow the new one
        horizon = None if horizon is None else horizon * factor_old
        self.kind, self.scale = kind, scale

        # arrival order: seq = elements before this batch + the element's rank in its file
        rank = F.row_number().over(Window.orderBy("seq")) - 1
        elements = loaded.elements.select("element", (F.col("ts") * F.lit(factor_new)).alias("ts"),
                                          (F.lit(self.count) + rank).cast("long").alias("seq"))
        # the load counted the elements and found their bounds: when the least is after the horizon none is late,
        # and no job of its own counts them (a stream that arrives in order)
        in_order = (loaded.n_elements is not None and loaded.bounds is not None and loaded.bounds[0] is not None
                    and (horizon is None or loaded.bounds[0] * factor_new > horizon))
        if horizon is not None and not in_order:
            elements = elements.withColumn("late", F.col("ts") <= F.lit(horizon))
        else:
            elements = elements.withColumn("late", F.lit(False))
        elements = elements.cache()
        try:
            result = BatchResult()
            if in_order:
                result.accepted = loaded.n_elements
                new_lo, new_hi = loaded.bounds[0] * factor_new, loaded.bounds[1] * factor_new
            else:
                counts = elements.groupBy("late").agg(F.count("*").alias("n"), F.min("ts").alias("lo"),
                                                      F.max("ts").alias("hi")).collect()
                new_lo = new_hi = None
                for row in counts:
                    if row["late"]:
                        result.late = row["n"]
                    else:
                        result.accepted, new_lo, new_hi = row["n"], row["lo"], row["hi"]
            quads = loaded.quads.select("s", "p", "o", "element").join(
                elements.select("element", "ts", "seq", "late"), "element")
            if result.late:
                late = quads.filter(F.col("late"))
                result.late_elements = [r["element"] for r in
                                        elements.filter(F.col("late")).orderBy("seq").limit(20).collect()]
                if dead_letter is not None:
                    ends = None
                    if loaded.ends is not None:  # a late element valid over an interval keeps it in the dead letters
                        ends = {r["element"]: r["te"] * factor_new for r in
                                loaded.ends.join(elements.filter(F.col("late")).select("element"), "element").collect()}
                    _write_nquads(late, loaded, dead_letter, self.timestamp_predicate, self.kind, self.scale, ends)
            if not result.accepted:
                return result
            tables = {
                "elements": elements.filter(~F.col("late")).drop("late"),
                "quads": quads.filter(~F.col("late")).select("s", "p", "o", "element", "ts", "seq"),
                "quoted": loaded.quoted.select("t", "s", "p", "o"),
            }
            if loaded.has_metadata:
                tables["metadata"] = loaded.metadata.select("s", "p", "o")
            if loaded.ends is not None:
                ends = loaded.ends.select("element", (F.col("te") * F.lit(factor_new)).alias("te")) \
                    .join(tables["elements"].select("element", "ts"), "element")
                span = ends.agg(F.max(F.col("te") - F.col("ts")).alias("span")).first()["span"]
                if span is not None:
                    self.span = max(self.span, int(span))
                    tables["ends"] = ends.select("element", "te")
            self._add(tables, new_lo, new_hi, meta=loaded.has_metadata)
            self._extend(new_lo, new_hi, result.accepted + result.late)
            return result
        finally:
            elements.unpersist()

    def append_small(self, batch, horizon: int | None) -> BatchResult | None:
        """Adds a batch read on the driver (:class:`~rspark.engine.live.ingest.SmallBatch`) as a new segment
        written by Arrow: no Spark job. None (and nothing changed): the batch must go through :meth:`append`, because
        an element is late (at or before ``horizon``) or its timestamps are of the other kind (append says so)."""
        if self.kind is not None and batch.time_kind != self.kind:
            return None
        scale = max(self.scale, batch.time_scale)
        factor_old, factor_new = scale // self.scale, scale // batch.time_scale
        lo, hi = batch.lo * factor_new, batch.hi * factor_new
        if horizon is not None and lo <= horizon * factor_old:
            return None
        self._rescale(factor_old)
        self.kind, self.scale = batch.time_kind, scale
        n = batch.n_elements
        elements = pa.table({
            "element": batch.elements["element"],
            "ts": pc.multiply(batch.elements["ts"], pa.scalar(factor_new, pa.int64())),
            "seq": pc.add(batch.elements["rank"], pa.scalar(self.count, pa.int64())),
        })
        quads = batch.quads.join(elements, keys="element").select(["s", "p", "o", "element", "ts", "seq"])
        tables = {"elements": elements, "quads": quads}
        if batch.metadata is not None:
            tables["metadata"] = batch.metadata
        self._add(tables, lo, hi, meta=batch.metadata is not None, quoted=False)
        self._extend(lo, hi, n)
        return BatchResult(accepted=n)

    def _rescale(self, factor: int) -> None:
        """The bounds at a scale ``factor`` times finer (the segments keep theirs: :meth:`table` rescales)."""
        if factor != 1:
            self.span *= factor
            self.first = None if self.first is None else self.first * factor
            self.last = None if self.last is None else self.last * factor
            self.low = None if self.low is None else self.low * factor

    def _extend(self, lo: int, hi: int, arrived: int) -> None:
        """The bounds and the arrival count after a batch of ``arrived`` elements accepted between ``lo`` and
        ``hi``."""
        self.first = lo if self.first is None else min(self.first, lo)
        self.last = hi if self.last is None else max(self.last, hi)
        self.low = lo if self.low is None else min(self.low, lo)
        self.count += arrived

    def _add(self, tables: dict, lo: int | None, hi: int | None, *, meta: bool, quoted: bool = True) -> Segment:
        """Writes ``tables`` as a new segment (at the buffer's scale), merging the segments when there are too
        many. (Too many quads on the driver wait for :meth:`compact`, after the evaluation's prune.)"""
        seg = Segment(f"s{self.next_id:08d}", self.scale, lo, hi, meta, quoted)
        self.next_id += 1
        self._write(seg, tables)
        self.segments.append(seg)
        if len(self.segments) > MAX_SEGMENTS:
            self.merge()
        return seg

    def compact(self) -> None:
        """Keeps the quads the driver holds within ``MAX_DRIVER_ROWS``: called once the queries were evaluated and
        the buffer pruned (a micro-batch's end), so that only the quads a later evaluation may still read count.
        More than that many of those: every segment is merged by Spark (written and cached there). Within it, but
        the driver still holding pruned quads beyond it (a segment partly before ``low``): merged by Arrow, which
        leaves them out. A batch read on the driver therefore adds its quads for one micro-batch before the rows
        it pushed out of the windows are dropped: at a high rate its segment does not send the whole buffer
        through a Spark job (seconds) only because the quads the evaluation is about to prune are still there."""
        if self.driver_rows() > MAX_DRIVER_ROWS:
            self.merge()

    def _partly_pruned(self, seg: Segment) -> bool:
        """Whether ``seg`` holds elements before ``low`` (left out when read)."""
        return self.low is not None and seg.lo is not None and seg.lo * (self.scale // seg.scale) < self.low

    def _live_driver_rows(self) -> int:
        """The quads the driver holds at or after ``low`` (those a later evaluation may read)."""
        n = 0
        for seg in self.segments:
            table = seg.tables.get("quads")
            if not isinstance(table, pa.Table):
                continue
            factor = self.scale // seg.scale
            if self._partly_pruned(seg):
                n += pc.sum(pc.greater_equal(pc.multiply(table["ts"], pa.scalar(factor, pa.int64())),
                                             pa.scalar(self.low, pa.int64()))).as_py() or 0
            else:
                n += table.num_rows
        return n

    def merge(self) -> None:
        """Merges every segment into one (what is below ``low`` left out)."""
        old = self.segments
        if len(old) < 2:
            return
        los = [seg.lo * (self.scale // seg.scale) for seg in old if seg.lo is not None]
        his = [seg.hi * (self.scale // seg.scale) for seg in old if seg.hi is not None]
        lo = None if not los else max(min(los), self.low) if self.low is not None else min(los)
        on_driver = all(isinstance(t, pa.Table) for seg in old for t in seg.tables.values()) and \
            self._live_driver_rows() <= MAX_DRIVER_ROWS
        if on_driver:  # merged by Arrow into a segment the driver holds: no Spark job
            tables = {name: self._arrow_table(name, old) for name in _TABLES}
        else:
            tables = {name: self.table(name, old) for name in _TABLES}
        tables = {name: df for name, df in tables.items() if df is not None}
        self.segments = []
        self._add(tables, lo, max(his) if his else None, meta=any(seg.meta for seg in old),
                  quoted=any(seg.quoted for seg in old))
        self._unpersist(old)

    def prune(self, keep_from: int) -> None:
        """Drops the elements whose timestamp is before ``keep_from`` (ticks): no evaluation reads them again. The
        segments wholly before it go (their metadata about no element of theirs is carried into a segment of its
        own); the others' rows before it are filtered out when read."""
        if not self.segments:
            return
        keep_from -= self.span  # an element that started before the bound may be valid at it
        self.low = keep_from if self.low is None else max(self.low, keep_from)
        gone = [seg for seg in self.segments if seg.hi is not None and seg.hi * (self.scale // seg.scale) < self.low]
        if not gone:
            return
        self.segments = [seg for seg in self.segments if seg not in gone]
        if any(seg.meta for seg in gone):
            meta = self.table("metadata", gone)
            names = self.table("elements", gone, everything=True).select(F.col("element").alias("s"))
            carried = {"metadata": meta.join(names, "s", "left_anti")}
            quoted = self.table("quoted", gone)
            if quoted is not None:
                carried["quoted"] = quoted
            self._add(carried, None, None, meta=True, quoted=quoted is not None)
        self._unpersist(gone)

    def _write(self, seg: Segment, tables: dict) -> None:
        """Writes a segment's tables. Spark DataFrames: their jobs at once (each a small job whose time is mostly
        Spark's scheduling and the output's commit, which overlap), read back cached. Arrow tables (a batch read on
        the driver): written by Arrow and kept (:meth:`table` gives them to Spark)."""
        if all(isinstance(t, pa.Table) for t in tables.values()):
            for name, table in tables.items():
                folder = os.path.join(self.directory, seg.name, name)
                shutil.rmtree(folder, ignore_errors=True)  # a batch applied again after a crash
                os.makedirs(folder)
                pq.write_table(table, os.path.join(folder, "part-00000.parquet"))
            seg.tables = dict(tables)
            return
        with ThreadPoolExecutor(len(tables)) as pool:
            for done in [pool.submit(df.write.mode("overwrite").parquet, os.path.join(self.directory, seg.name, name))
                         for name, df in tables.items()]:
                done.result()
        seg.tables = {name: self._read(seg.name, name) for name in tables}

    @staticmethod
    def _unpersist(segments: list) -> None:
        for seg in segments:
            for df in seg.tables.values():
                if isinstance(df, DataFrame):
                    df.unpersist()

    def drop_unused(self) -> None:
        """Removes the segment directories the buffer no longer names (called once the state naming what it holds
        is saved)."""
        if not os.path.isdir(self.directory):
            return
        keep = {seg.name for seg in self.segments}
        for entry in os.listdir(self.directory):
            if entry[:1] in ("s", "v") and entry[1:].isdigit() and entry not in keep:
                shutil.rmtree(os.path.join(self.directory, entry), ignore_errors=True)

    # ------------------------------------------------------------------------------------------------ reading

    def table(self, name: str, segments: list | None = None, *, everything: bool = False,
              predicates: frozenset | None = None) -> DataFrame | None:
        """One of the buffer's tables (``elements``, ``quads``, ``metadata``, ``quoted``): the union of its
        segments' (``segments``: of these only), ``ts`` at the buffer's scale, rows before ``low`` left out (unless
        ``everything``), quoted triples distinct; ``predicates`` (encoded IRIs; ``quads`` only): the quads with one
        of them. None: no segment has it. The segments written from the driver are given to Spark as one relation
        (their Arrow tables concatenated, and cut by Arrow; one partition up to ``SINGLE_PARTITION_ROWS`` rows): a
        plan over one relation is planned and run about twice as fast as over a union of one a batch, and Arrow
        selects by ``predicates`` and ``low`` in bulk before Spark reads a row. The relation scans the table's
        record batches (:func:`rspark.spark.jvm.arrow_frame`), not a local relation, whose rows Catalyst hashes
        whenever it analyses a union or a self-join of it (docs/live.md)."""
        segments = self.segments if segments is None else segments
        chosen = None if predicates is None else pa.array(sorted(predicates), pa.string())
        frames, arrows = [], []
        for seg in segments:
            df = seg.tables.get(name)
            if df is None:
                continue
            factor = self.scale // seg.scale
            cut = not everything and self._partly_pruned(seg)
            if isinstance(df, pa.Table):
                arrows.append(self._arrow_part(df, factor, cut, chosen))
                continue
            if "te" in df.columns and factor != 1:
                df = df.withColumn("te", F.col("te") * F.lit(factor))
            if "ts" in df.columns:
                if factor != 1:
                    df = df.withColumn("ts", F.col("ts") * F.lit(factor))
                if cut:
                    df = df.filter(F.col("ts") >= F.lit(self.low))
            if predicates is not None:
                df = df.filter(F.col("p").isin(*sorted(predicates)))
            frames.append(df)
        if arrows:
            arrow = pa.concat_tables(arrows)
            struct = _parse_datatype_string(_TABLES[name])
            # one partition up to SINGLE_PARTITION_ROWS rows, else about one per core
            rows = max(SINGLE_PARTITION_ROWS, -(-arrow.num_rows // self.spark.sparkContext.defaultParallelism))
            local = arrow_frame(self.spark, arrow, struct, rows)
            if local is None:  # (no rows, or a session without rspark's jar: a local relation)
                local = self.spark.createDataFrame(arrow, struct)
                if arrow.num_rows <= SINGLE_PARTITION_ROWS:
                    local = local.coalesce(1)
            frames.append(local)
        if not frames:
            return None
        out = reduce(DataFrame.unionByName, frames)
        if name == "quoted" and sum(1 for seg in segments if seg.quoted and "quoted" in seg.tables) > 1:
            out = out.distinct()
        return out

    def _arrow_part(self, table: pa.Table, factor: int, cut: bool, chosen: pa.Array | None) -> pa.Table:
        """A segment's Arrow table as :meth:`table` reads it: ``ts`` rescaled ``factor`` times, the rows before
        ``low`` left out when ``cut``, the quads of the ``chosen`` predicates only (None: all)."""
        if "ts" in table.column_names:
            if factor != 1:
                table = table.set_column(table.column_names.index("ts"), "ts",
                                         pc.multiply(table["ts"], pa.scalar(factor, pa.int64())))
            if cut:
                table = table.filter(pc.greater_equal(table["ts"], pa.scalar(self.low, pa.int64())))
        if chosen is not None:
            table = table.filter(pc.is_in(table["p"], value_set=chosen))
        return table

    def _arrow_table(self, name: str, segments: list) -> pa.Table | None:
        """:meth:`table` of ``segments`` that are all held by the driver, as one Arrow table (a merge's)."""
        parts = []
        for seg in segments:
            table = seg.tables.get(name)
            if table is not None:
                parts.append(self._arrow_part(table, self.scale // seg.scale, self._partly_pruned(seg), None))
        if not parts:
            return None
        out = pa.concat_tables(parts)
        if name == "quoted" and sum(1 for seg in segments if seg.quoted and "quoted" in seg.tables) > 1:
            out = out.group_by(out.column_names, use_threads=False).aggregate([])
        return out

    def driver_triples_unique(self, predicates: frozenset | None = None) -> bool | None:
        """Whether every triple of the buffer (with one of ``predicates``, encoded IRIs) occurs once, found by
        Arrow when the driver holds every segment's quads (None when Spark holds one). Quads before ``low`` are
        counted too: a duplicate there only costs the DISTINCT it would have saved."""
        held = self._driver_tables("quads")
        if held is None:
            return None
        return triples_unique([table for _, table in held], predicates)

    def _driver_tables(self, name: str) -> list | None:
        """(segment, Arrow table) of each segment that has table ``name``, when the driver holds all of them;
        None when Spark holds one."""
        held = []
        for seg in self.segments:
            table = seg.tables.get(name)
            if table is None:
                continue
            if not isinstance(table, pa.Table):
                return None
            held.append((seg, table))
        return held

    def driver_rows(self) -> int:
        """The quads the buffer holds on the driver (in the Arrow tables of the segments written from there)."""
        return sum(seg.tables["quads"].num_rows for seg in self.segments
                   if isinstance(seg.tables.get("quads"), pa.Table))

    def driver_stamps(self):
        """The elements' timestamps (a sorted numpy int64 array at the buffer's scale, those before ``low`` left
        out) when every segment holding elements is held on the driver; else None."""
        held = self._driver_tables("elements")
        if held is None:
            return None
        parts = [table["ts"].to_numpy().astype(np.int64) * (self.scale // seg.scale) for seg, table in held]
        stamps = np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
        if self.low is not None:
            stamps = stamps[int(np.searchsorted(stamps, self.low)):]
        return stamps

    def source(self) -> Stream | None:
        """The buffer as the stream a replay reads (None before the first element)."""
        if self.first is None:
            return None

        def table(name: str, predicates: frozenset | None = None) -> DataFrame:
            df = self.table(name, predicates=predicates)
            if df is None:  # (a table no segment has is empty)
                if name not in self.empty:
                    self.empty[name] = local_frame(self.spark, [], _TABLES[name])
                df = self.empty[name]
            return df

        return Stream.from_buffer(self.iri, Timeline.of(self.kind, self.scale), table,
                                  bounds=(self.first, self.last), has_metadata=any(seg.meta for seg in self.segments),
                                  stamps=self.driver_stamps(), timestamp_predicate=self.timestamp_predicate,
                                  unique=self.driver_triples_unique,
                                  ends=self.table("ends") if any("ends" in seg.tables for seg in self.segments)
                                  else None)


def _write_nquads(quads: DataFrame, loaded, path: str, predicate: str, kind: TimeKind, scale: int,
                  ends: dict | None = None) -> None:
    """The late elements as N-Quads (their triples and their timestamps, ``ends``: the end of those valid over an
    interval, by element, whose timestamp is then the interval ``"start/end"``), appended to ``path``."""
    timeline = Timeline.of(kind, scale)
    rows = quads.select("s", "p", "o", "element", "ts").orderBy("seq").collect()
    stamped: dict = {}
    lines = []
    for r in rows:
        lines.append(f"{r['s']} {r['p']} {r['o']} {r['element']} .\n")
        stamped.setdefault(r["element"], r["ts"])
    for element, ts in stamped.items():
        value = format_time(ts, timeline)
        if ends and element in ends:
            lines.append(f'{element} <{predicate}> "{value}/{format_time(ends[element], timeline)}" .\n')
            continue
        if kind is TimeKind.DATETIME:
            lit = encode(Literal(str(value), datatype=XSD_DATETIME))
        else:
            lit = encode(Literal(str(value), datatype=XSD_INTEGER if isinstance(value, int) else XSD_DECIMAL))
        lines.append(f"{element} <{predicate}> {lit} .\n")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        out.writelines(lines)


def _saved_kind(value: str | None) -> TimeKind | None:
    """The time kind a saved buffer state names (None: no element yet); "number", another spelling of numeric a
    checkpoint may hold, is read as NUMERIC."""
    if value is None:
        return None
    return TimeKind.NUMERIC if value == "number" else TimeKind(value)

