"""A live stream's buffer: the elements that arrived and that some evaluation may still read, as Spark tables.

Every batch of input (the files a source delivered) is loaded by the replay's own loader
(:func:`rspark.spark.loading.loader.load_stream`: same formats, same checks, same messages), then appended to the
buffer: elements whose timestamp is at or before the stream's *evaluated horizon* (every instant up to it has been
reported) are late and go to the dead-letter directory instead. The buffer is written as Parquet into the
checkpoint directory at every batch (a new version each time, read back so that no plan grows batch after batch),
so that a restart finds it as it was. Elements no query can read again are pruned (:meth:`LiveBuffer.prune`).

Elements keep the order of arrival: ``seq`` is the number of elements that arrived before them plus their rank in
their file (file order), so ties of timestamps keep arrival order, as a replay of the files concatenated in that
order would.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from rspark.errors import RsparkError
from rspark.model.codec import encode
from rspark.model.terms import IRI
from rspark.spark.streaming.source import StreamSource

_TABLES = {
    "elements": "element string, ts long, seq long",
    "quads": "s string, p string, o string, element string, ts long, seq long",
    "metadata": "s string, p string, o string",
    "quoted": "t string, s string, p string, o string",
}


@dataclass
class BatchResult:
    """What one batch brought: elements accepted and late (their names, for the dead-letter note), and the time
    kind the batch had."""

    accepted: int = 0
    late: int = 0
    late_elements: list = field(default_factory=list)


@dataclass
class LiveBuffer:
    """The buffered content of one live stream, persisted under ``directory``.

    ``kind``: ``"datetime"`` or ``"number"`` (fixed by the first batch; a batch of the other kind is rejected);
    ``scale``: the time scale of ``ts`` (numeric streams: the smallest power of ten that makes every timestamp seen
    integral; it only grows, and the buffer's ``ts`` are rescaled when it does); ``first``: the least timestamp ever
    accepted (ticks; windows anchored at the first element keep their origin when it is pruned); ``last``: the
    greatest; ``count``: elements accepted so far (the next ``seq`` base)."""

    spark: SparkSession
    iri: str
    directory: str
    timestamp_predicate: str = "http://www.w3.org/ns/prov#generatedAtTime"
    kind: str | None = None
    scale: int = 1
    first: int | None = None
    last: int | None = None
    low: int | None = None  # the least timestamp the buffer may hold (ticks): ``first``, then the prune's bound
    count: int = 0
    version: int = 0
    tables: dict = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------------ state

    def state(self) -> dict:
        return {"kind": self.kind, "scale": self.scale, "first": self.first, "last": self.last, "low": self.low,
                "count": self.count, "version": self.version}

    def restore(self, state: dict) -> None:
        """Reads the version ``state`` names (after a restart)."""
        self.kind, self.scale = state.get("kind"), state.get("scale", 1)
        self.first, self.last, self.low = state.get("first"), state.get("last"), state.get("low")
        self.count, self.version = state.get("count", 0), state.get("version", 0)
        if self.version:
            self.tables = {name: self.spark.read.schema(ddl).parquet(self._path(self.version, name)).cache()
                           for name, ddl in _TABLES.items()}

    def _path(self, version: int, name: str) -> str:
        return os.path.join(self.directory, f"v{version:08d}", name)

    # ------------------------------------------------------------------------------------------------ input

    def append(self, loaded, horizon: int | None, dead_letter: str | None) -> BatchResult:
        """Adds a loaded batch (:class:`~rspark.spark.loading.loader.LoadedStream`): its elements after
        ``horizon`` (ticks at the buffer's scale; None: nothing evaluated yet) join the buffer, the others are late:
        written as N-Quads into ``dead_letter`` (a file path) and counted. Returns what was accepted and late; the
        new version is written but the state is the caller's to save."""
        kind = "datetime" if loaded.time_kind == "datetime" else "number"
        if loaded.bounds is not None:
            lo, _ = loaded.bounds
        else:  # the load did not find them (date-time and other timestamps than canonical integers)
            from rspark.spark.streaming.windows import stream_bounds

            lo, _ = stream_bounds(loaded.elements)
        if lo is None:  # the batch has no valid element (its errors are reported by the caller)
            return BatchResult()
        if self.kind is not None and kind != self.kind:
            raise RsparkError(f"stream <{self.iri}> has {self._kind_name(self.kind)} timestamps; this batch has "
                              f"{self._kind_name(kind)} ones")
        scale = max(self.scale, loaded.time_scale)
        factor_old, factor_new = scale // self.scale, scale // loaded.time_scale
        if factor_old != 1 and self.tables:
            self.tables = {name: (df.withColumn("ts", F.col("ts") * F.lit(factor_old)) if "ts" in df.columns else df)
                           for name, df in self.tables.items()}
        if factor_old != 1:
            self.first = None if self.first is None else self.first * factor_old
            self.last = None if self.last is None else self.last * factor_old
            self.low = None if self.low is None else self.low * factor_old
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
                    _write_nquads(late, loaded, dead_letter, self.timestamp_predicate, self.kind, self.scale)
            if not result.accepted:
                return result
            new = {
                "elements": elements.filter(~F.col("late")).drop("late"),
                "quads": quads.filter(~F.col("late")).select("s", "p", "o", "element", "ts", "seq"),
                "metadata": loaded.metadata.select("s", "p", "o") if loaded.has_metadata else None,
                "quoted": loaded.quoted.select("t", "s", "p", "o"),
            }
            merged = {}
            for name, ddl in _TABLES.items():
                old = self.tables.get(name)
                df = new[name]
                if df is None:
                    df = old
                elif old is not None:
                    df = old.unionByName(df)
                if name == "quoted" and df is not None:
                    df = df.distinct()
                merged[name] = df if df is not None else self.spark.createDataFrame([], ddl)
            self._write(merged)
            self.first = new_lo if self.first is None else min(self.first, new_lo)
            self.last = new_hi if self.last is None else max(self.last, new_hi)
            self.low = new_lo if self.low is None else min(self.low, new_lo)
            self.count += result.accepted + result.late
            return result
        finally:
            elements.unpersist()

    def prune(self, keep_from: int) -> None:
        """Drops the elements whose timestamp is before ``keep_from`` (ticks): no evaluation reads them again."""
        if not self.tables:
            return
        elements = self.tables["elements"]
        self.low = keep_from
        if elements.filter(F.col("ts") < F.lit(keep_from)).isEmpty():
            return
        kept = elements.filter(F.col("ts") >= F.lit(keep_from))
        quads = self.tables["quads"].filter(F.col("ts") >= F.lit(keep_from))
        metadata = self.tables["metadata"].join(
            elements.filter(F.col("ts") < F.lit(keep_from)).select(F.col("element").alias("s")), "s", "left_anti")
        self._write({"elements": kept, "quads": quads, "metadata": metadata, "quoted": self.tables["quoted"]})

    def _write(self, tables: dict) -> None:
        """Writes ``tables`` as the next version, the four tables' jobs at once (each a small job whose time is
        mostly Spark's scheduling and the output's commit, which overlap), and reads it back cached."""
        from concurrent.futures import ThreadPoolExecutor

        version = self.version + 1
        with ThreadPoolExecutor(len(tables)) as pool:
            for done in [pool.submit(df.write.mode("overwrite").parquet, self._path(version, name))
                         for name, df in tables.items()]:
                done.result()
        for df in self.tables.values():
            df.unpersist()
        self.tables = {name: self.spark.read.schema(_TABLES[name]).parquet(self._path(version, name)).cache()
                       for name in _TABLES}
        self.version = version

    def drop_old_versions(self) -> None:
        """Removes the versions before the current one (called once the state naming it is saved)."""
        if not os.path.isdir(self.directory):
            return
        for entry in os.listdir(self.directory):
            if entry.startswith("v") and entry[1:].isdigit() and int(entry[1:]) < self.version:
                shutil.rmtree(os.path.join(self.directory, entry), ignore_errors=True)

    # ------------------------------------------------------------------------------------------------ reading

    def source(self) -> StreamSource | None:
        """The buffer as the stream a replay reads (None before the first element)."""
        if not self.tables or self.first is None:
            return None
        meta = self.tables["metadata"]
        return StreamSource(self.iri, self.tables["elements"], self.tables["quads"], meta, self.tables["quoted"],
                            self.kind, self.scale, _bounds=(self.first, self.last),
                            stamp_predicate=encode(IRI(self.timestamp_predicate)))

    @staticmethod
    def _kind_name(kind: str) -> str:
        return "date-time" if kind == "datetime" else "numeric"


def _write_nquads(quads: DataFrame, loaded, path: str, predicate: str, kind: str, scale: int) -> None:
    """The late elements as N-Quads (their triples and their timestamps), appended to ``path``."""
    from rspark.model.terms import Literal
    from rspark.rsp.windows import Timeline, format_time

    timeline = Timeline.datetime() if kind == "datetime" else Timeline.numeric(scale)
    rows = quads.select("s", "p", "o", "element", "ts").orderBy("seq").collect()
    stamped: dict = {}
    lines = []
    for r in rows:
        lines.append(f"{r['s']} {r['p']} {r['o']} {r['element']} .\n")
        stamped.setdefault(r["element"], r["ts"])
    dtype = "http://www.w3.org/2001/XMLSchema#dateTime" if kind == "datetime" else None
    for element, ts in stamped.items():
        value = format_time(ts, timeline)
        if dtype is not None:
            lit = encode(Literal(str(value), datatype=dtype))
        else:
            lit = encode(Literal(str(value), datatype="http://www.w3.org/2001/XMLSchema#" +
                                 ("integer" if isinstance(value, int) else "decimal")))
        lines.append(f"{element} <{predicate}> {lit} .\n")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a", encoding="utf-8") as out:
        out.writelines(lines)


def save_json(path: str, data: dict) -> None:
    """Writes ``data`` as JSON atomically (a temporary file renamed over ``path``)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
