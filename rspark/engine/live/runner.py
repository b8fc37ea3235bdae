"""Live mode: continuous queries over streams as they arrive, evaluated by the replay's evaluator per micro-batch.

Every live stream is a directory of element files (TriG or N-Quads, docs/streams.md): a directory the user names
(``engine.watch``), or rspark's inbox for the stream, where ``engine.push``, a TCP socket and a paced replay write
their input. Spark Structured Streaming's file source watches each user's directory (its checkpoint holds which
files were read); the inbox, rspark's own, is read as soon as a file is written (:mod:`rspark.engine.live.inbox`).
Each micro-batch's new files are loaded with the replay's loader and appended to the stream's buffer
(:mod:`rspark.engine.live.buffer`). Then the queries whose instants became due are evaluated
(:class:`~rspark.engine.live.evaluation.LiveScheduler`): the evaluator (:mod:`rspark.spark.streaming.evaluate`)
runs each query's compiled plan over the buffers up to the query's horizon (one tick before the least watermark of
the streams it reads, a watermark being the greatest timestamp seen minus the allowed lateness) after the last
instant it reported, so a live query gives, instant for instant, what a replay of the same elements gives.

State (``checkpoint/state.json``, written atomically after each batch): per stream, the buffer's segments and
counters, the last micro-batch of each source applied (and the inbox files it read); per query, the last instant
reported, and for a query that consumes events its consumption state (:mod:`rspark.cep.carried`). A batch run
again after a crash (same batch id, same files) is not applied twice; its records are evaluated again and the file
sinks drop what they already hold (:mod:`rspark.engine.live.sinks`), so a restart writes nothing twice.

The stream and query records are in :mod:`rspark.engine.live.registry`, the scheduling of evaluations (groups,
horizons, the instants due, delivery, pruning) in :mod:`rspark.engine.live.evaluation`; this module holds the
sources, the micro-batches, the registry of queries, the state, the status and closing.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import TYPE_CHECKING
from urllib.parse import unquote

from rspark.cep.carried import check_saved, occurrence_count
from rspark.engine.live.buffer import LiveBuffer
from rspark.engine.live.evaluation import LiveScheduler
from rspark.engine.live.files import save_json
from rspark.engine.live.history import start_from_history
from rspark.engine.live.inbox import InboxReader
from rspark.engine.live.ingest import combine, read_small
from rspark.engine.live.reading import LiveReading
from rspark.engine.live.records import NoRecordMapped
from rspark.engine.live.refresh import GraphRefresh, stream_horizon
from rspark.engine.live.registry import (
    Closing,
    LiveQuery,
    LiveStream,
    check_lateness,
    looks_like_nquads,
    readable_key,
    rescale,
    stream_key,
    write_inbox,
)
from rspark.engine.live.spool import spool_files
from rspark.engine.live.stamp import stamp_arrivals
from rspark.engine.replay import query_label
from rspark.errors import WARNINGS_PER_FILE, DataError, InputError, MoreProblems, RsparkError, summarised
from rspark.model.time import parse_duration
from rspark.model.timestamps import format_time, parse_time
from rspark.spark.failures import memory_limit_error
from rspark.spark.loading import messages
from rspark.spark.loading.loader import load_stream
from rspark.spark.loading.mapping import Mapping as RecordMapping
from rspark.spark.loading.mapping import convert_records, load_mapping, push_element_base, record_format
from rspark.spark.loading.rdf import file_base_iri
from rspark.syntax.translate import compile_query, ensure_evaluable

if TYPE_CHECKING:  # (annotations only: the compiler and the stream type need PySpark, imported by the engine)
    from rspark.algebra import ops
    from rspark.spark.sparql.compiler import DatasetView
    from rspark.spark.streaming.stream import Stream

__all__ = ["LiveQuery", "LiveRunner", "LiveStream", "stream_key", "write_inbox"]

log = logging.getLogger("rspark.live")

# what a watched directory's file source reads
STREAM_FILES = "*.{trig,nq,nquads,trig.gz,nq.gz,nquads.gz,ndjsonld,jsonld}"
RECORD_FILES = "*.{csv,json,jsonl,ndjson}"  # a mapped stream's directory: its record files
RECORD_FORMAT_NAMES = ("csv", "json", "jsonl", "ndjson")
STATE_FILE = "state.json"
DRIVER_READ_CONF = "spark.rspark.live.driverRead"
BINARY_FILE_SCHEMA = "path string, modificationTime timestamp, length long, content binary"




class LiveRunner(LiveReading):
    """The live streams and queries of one :class:`~rspark.engine.engine.Engine` (``engine.live``). A client that
    serves them (the HTTP service) reads them through :class:`~rspark.engine.live.reading.LiveReading`'s read model
    (``describe_stream``, ``describe_query``, ``due_instants``)."""

    def __init__(self, spark, *, static: Callable[[ops.QueryPlan], DatasetView], recorded: Mapping[str, Stream],
                 profile: str | None = None, replace_graph: Callable[[str, Sequence], None] | None = None,
                 checkpoint: str | None = None, trigger: float = 0.1) -> None:
        """``static``: a query's static dataset; ``recorded``: the recorded streams a live query may read beside
        live ones; ``profile``: the default profile of registered queries; ``replace_graph(iri, versions)``: drops
        the static graph ``iri`` and loads its ``versions`` ((path, the instant it is valid from or None), none:
        dropped only) in its place, for :meth:`replace_graph`."""
        self.spark = spark
        self.recorded = recorded
        self.profile = profile
        self.graph_replacer = replace_graph
        self.temporary = checkpoint is None
        self.checkpoint = os.path.abspath(checkpoint) if checkpoint else tempfile.mkdtemp(prefix="rspark-live-")
        os.makedirs(self.checkpoint, exist_ok=True)
        self.trigger = trigger
        # small clean batches read on the driver (rspark.engine.live.ingest); False (the session's setting
        # spark.rspark.live.driverRead=false): every batch loaded by load_stream, parsed on the executors
        self.driver_ingest = str(self.spark.conf.get(DRIVER_READ_CONF, "true")).strip().lower() != "false"
        self.streams: dict[str, LiveStream] = {}
        self.queries: dict[str, LiveQuery] = {}
        self.lock = threading.RLock()
        self.errors: list = []  # input problems (DataError), the latest 1000
        # guards ``errors`` and the streams' rejected counters for a source's network thread, which must not wait
        # for ``lock`` (a micro-batch holds it for seconds; an MQTT client's thread also answers the broker's pings)
        self.count_lock = threading.Lock()
        self.failure: BaseException | None = None
        self._reader_pool: ThreadPoolExecutor | None = None  # reads inbox files as they are written (_prefetch)
        self._pool_lock = threading.Lock()
        self._saved = self._read_state()
        self._closed = False
        self._closing = False  # close() has begun: a micro-batch that starts now is refused (read again on restart)
        self.until = None  # a time value no evaluation passes (rspark run --until)
        self.scheduler = LiveScheduler(self.spark, static, recorded, self.streams, self.queries)
        self.paced: list = []  # paced replays (rspark.engine.live.sources.PacedReplay) writing into inboxes
        self.refreshes: dict = {}  # graphs read again every period, by IRI (rspark.engine.live.refresh)

    # ------------------------------------------------------------------------------------------------ streams

    def stream(self, iri: str, *, lateness=0, timestamp_predicate: str | None = None,
               arrival_time: bool = False, end_predicate: str | None = None, history: str | None = None,
               mapping=None) -> LiveStream:
        """Declares a live stream (idempotent: an existing one is returned, its settings updated). ``history``: a
        recorded stream file the stream starts from, before every live element (:mod:`~rspark.engine.live.
        history`; once per checkpoint). ``mapping``: a mapping file's path or a parsed
        :class:`~rspark.spark.loading.mapping.Mapping` (docs/streams.md, "JSON and CSV records"): pushes in
        ``csv``, ``json`` or ``jsonl`` and a directory's .csv, .json, .jsonl files are mapped with it."""
        check_lateness(iri, lateness)  # before anything changes: a bad value leaves the stream as it was
        if mapping is not None and not isinstance(mapping, RecordMapping):
            mapping = load_mapping(str(mapping))
        if mapping is not None and (arrival_time or end_predicate):
            raise InputError(f"stream <{iri}>: a mapped stream's elements take their timestamp from the mapping "
                             f"(no {'arrival time' if arrival_time else 'end predicate'})")
        with self.lock:
            st = self.streams.get(iri)
            if st is None:
                key = stream_key(iri)
                buf = LiveBuffer(self.spark, iri, os.path.join(self.checkpoint, "streams", key, "buffer"))
                st = LiveStream(iri, buf, os.path.join(self.checkpoint, "streams", key, "inbox"))
                saved = self._saved.get("streams", {}).get(iri)
                if saved:
                    buf.restore(saved["buffer"])
                    st.batches = dict(saved.get("batches", {}))
                    st.counters.update(saved.get("counters", {}))
                    st.evaluated = saved.get("evaluated")
                    st.inbox_applied = list(saved.get("inbox_applied", []))
                os.makedirs(st.inbox, exist_ok=True)
                if self.driver_ingest:
                    st.prefetch = functools.partial(self._prefetch, st)
                self.streams[iri] = st
                st.reader = InboxReader(self, st).start()
            st.lateness = lateness if lateness is not None else 0
            st.arrival_time = arrival_time
            if timestamp_predicate:
                st.timestamp_predicate = st.buffer.timestamp_predicate = timestamp_predicate
            if end_predicate:
                st.end_predicate = end_predicate
            if mapping is not None:
                st.mapping = mapping
            if history is not None:
                n = start_from_history(st, history, os.path.join(self.checkpoint, "streams", stream_key(iri)))
                if n:
                    log.info("<%s> starts from its history: %d elements of %s", iri, n, history)
            return st

    def refresh_graph(self, iri: str, source: str, every) -> dict:
        """Reads the static graph ``iri`` from ``source`` (a file, or an ``http(s)://`` SPARQL endpoint) now and
        again every ``every`` (a duration: ``PT20S``, ``20s``, or seconds); a changed content is a new version of
        the graph, valid from the instant after the streams' watermark (``rspark.engine.live.refresh``). The
        first read is the graph from the beginning; its failure is raised. Returns the refresh's counters."""
        if self.graph_replacer is None:
            raise RsparkError("live mode was started without static graphs to replace")
        seconds = refresh_period(every)
        old = self.refreshes.pop(iri, None)
        if old is not None:
            old.stop()
        folder = os.path.join(self.checkpoint, "refresh", stream_key(iri))

        def horizon() -> tuple:
            return stream_horizon(list(self.streams.values()), list(self.queries.values()))

        refresh = GraphRefresh(iri, source, seconds, folder, self.replace_graph, horizon, self.lock)
        refresh.check()
        self.refreshes[iri] = refresh
        refresh.start()
        return refresh.status()

    def watch(self, iri: str, directory: str, **options) -> LiveStream:
        """Feeds ``iri`` from the element files that appear in ``directory`` (read once each, in order of
        modification time; write a file elsewhere and move it in, or give it a name starting with ``.`` or ``_``
        while it is written: Spark skips those)."""
        if not os.path.isdir(directory):
            raise InputError(f"--source {iri}: {directory} is not a directory")
        st = self.stream(iri, **options)
        with self.lock:
            path = os.path.abspath(directory)
            if path not in st.directories:
                st.directories.append(path)
                self._watch(st, path, "dir-" + stream_key(path))
        return st

    def push(self, iri: str, data: str | bytes, *, format: str | None = None, tag: str | None = None,
             where: str = "pushed data", element_base: str | None = None) -> str:
        """Appends elements (TriG or N-Quads text) to ``iri``'s inbox; returns the file written. The stream is
        declared with the defaults if it was not. With ``arrival_time``, graphs without a timestamp get the time
        of the push. ``tag``: letters and digits that end the inbox file's name (a source's mark of what it
        wrote, :func:`~rspark.engine.live.registry.write_inbox`). Records (``format`` csv, json, jsonl) are mapped
        with the stream's mapping (:meth:`mapped`; ``where`` and ``element_base`` as there)."""
        st = self.streams.get(iri) or self.stream(iri)
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        if format is not None and format.strip().lower() in RECORD_FORMAT_NAMES:
            return st.write(self.mapped(st, text, record_format(format), where, element_base), "nq", tag)
        if st.mapping is not None and format is None:
            raise InputError(f"push to <{iri}>: the stream maps records: give their format (csv, json or jsonl), "
                             "or trig / nquads for RDF")
        converted = messages.pushed_format(text, format)
        if converted is not None:  # an RDF Message Log, NDJSON-LD, JSON-LD: its elements as N-Quads
            text, format = self._converted(iri, text, converted, st.timestamp_predicate), "nquads"
        fmt = (format or ("nquads" if looks_like_nquads(text) else "trig")).lower()
        if fmt not in ("trig", "nquads", "nq"):
            raise InputError(f"push to <{iri}>: the format is trig or nquads, not {format!r}")
        if st.arrival_time:
            text = stamp_arrivals(text, fmt, st.timestamp_predicate, time.time())
            fmt = "nquads"
        return st.write(text, "nq" if fmt in ("nquads", "nq") else "trig", tag)

    def mapped(self, st: LiveStream, text: str, fmt: str, file: str, element_base: str | None = None) -> str:
        """Records (``fmt``: csv, json, jsonl) mapped with the stream's mapping to N-Quads; a rejected record is
        logged and kept in ``errors`` (``file``: where the text came from, then line and record), and the others go
        on. Raises the first problem when no record is left, and :class:`InputError` when the stream has no
        mapping. ``element_base``: the elements' names when the mapping has no ``element`` template (default: from
        the stream and the text, :func:`~rspark.spark.loading.mapping.push_element_base`)."""
        if st.mapping is None:
            raise InputError(f"push to <{st.iri}>: {fmt} records need a mapping on the stream (live_stream(iri, "
                             "mapping=FILE), rspark run --mapping IRI=FILE)")
        conv = convert_records(text, fmt, st.mapping, file=file, pred=st.timestamp_predicate,
                               element_base=element_base or push_element_base(st.iri, text))
        if conv.errors and not conv.nquads:
            raise NoRecordMapped(conv.errors)
        self.rejected_records(st, conv.errors)
        return conv.nquads.decode("utf-8")

    def rejected_records(self, st: LiveStream, errors: list) -> None:
        """The records a mapping rejected: warned of (the first WARNINGS_PER_FILE), kept, counted."""
        if not errors:
            return
        for line in summarised(errors, WARNINGS_PER_FILE):
            log.warning("<%s>: %s", st.iri, line)
        with self.count_lock:
            self.errors.extend(errors)
            st.counters["rejected"] += len(errors)
            del self.errors[:-1000]

    def _mapped_files(self, st: LiveStream, paths: list[str], source: str, batch_id: int) -> list[str]:
        """A directory's record files (.csv, .json, .jsonl) mapped into N-Quads files beside the stream's inbox
        (``CHECKPOINT/streams/<key>/mapped``), read on the driver (live files are small); a file none of whose
        records maps is logged, and no file is loaded for it."""
        folder = os.path.join(self.checkpoint, "streams", stream_key(st.iri), "mapped")
        os.makedirs(folder, exist_ok=True)
        out = []
        for i, path in enumerate(paths):
            local = _local_path(path)
            try:
                with open(local, encoding="utf-8") as f:
                    text = f.read()
                fmt = record_format(None, local)
                conv = convert_records(text, fmt, st.mapping, file=local, pred=st.timestamp_predicate,
                                       element_base=file_base_iri(local) + "#record-")
            except (OSError, UnicodeDecodeError, RsparkError) as exc:
                log.warning("<%s>: %s: %s", st.iri, local, exc)
                with self.count_lock:
                    self.errors.append(exc if isinstance(exc, RsparkError) else DataError(str(exc), file=local))
                    st.counters["rejected"] += 1
                continue
            self.rejected_records(st, conv.errors)
            if conv.nquads:
                target = os.path.join(folder, f"{source}-{batch_id:08d}-{i:04d}.nq")
                with open(target, "wb") as f:
                    f.write(conv.nquads)
                out.append(target)
        return out

    def _converted(self, iri: str, text: str, fmt: str, predicate: str) -> str:
        """A push in a converted format as N-Quads; its problems (a message that does not parse, ...) are logged and
        kept in ``errors``, and the other messages go on. Raises the first problem when no message is left."""
        conv = messages.convert_push(text, fmt, stream=iri, pred=predicate)
        if conv.errors and not conv.nquads:
            raise conv.errors[0]
        for line in summarised(conv.errors, WARNINGS_PER_FILE):
            log.warning("push to <%s>: %s", iri, line)
        with self.count_lock:
            self.errors.extend(conv.errors)
            del self.errors[:-1000]
        return conv.nquads.decode("utf-8")

    def drop(self, iri: str) -> bool:
        """Removes a live stream: its sources stop and its buffer, inbox and offsets are deleted. Refused while a
        registered query reads it. Returns whether the stream existed."""
        with self.lock:
            st = self.streams.get(iri)
            if st is None:
                return False
            readers = sorted(q.name for q in self.queries.values() if not q.stopped and iri in q.reads)
            if readers:
                raise InputError(f"stream <{iri}> is read by the registered quer{'y' if len(readers) == 1 else 'ies'} "
                                 f"{', '.join(readers)}: unregister {'it' if len(readers) == 1 else 'them'} first")
            for query in st.queries:
                try:
                    query.stop()
                except Exception:  # noqa: BLE001 - the JVM may be gone already; nothing left to stop then
                    pass
            if st.reader is not None:
                st.reader.stop(wait=False)  # (a batch of its own is not running: this thread holds the lock)
            for feed in st.feeds:
                feed.stopped = True  # it writes nothing more; its client is stopped below, the lock released
            del self.streams[iri]
            self._saved.get("streams", {}).pop(iri, None)
            self._save_state()
            shutil.rmtree(os.path.join(self.checkpoint, "streams", stream_key(iri)), ignore_errors=True)
        for feed in st.feeds:
            feed.stop()
        return True

    def _watch(self, st: LiveStream, directory: str, source: str) -> None:
        """Starts the Structured Streaming query that feeds ``st`` from ``directory`` (a user's: its files are
        never deleted)."""
        files = RECORD_FILES if st.mapping is not None else STREAM_FILES
        reader = self.spark.readStream.format("binaryFile").schema(BINARY_FILE_SCHEMA) \
            .option("pathGlobFilter", files)
        reader = reader.load(directory).select("path", "modificationTime")
        ckpt = os.path.join(self.checkpoint, "streams", stream_key(st.iri), "sources", source)

        def on_batch(df, batch_id: int) -> None:
            rows = df.collect()
            paths = [r["path"] for r in sorted(rows, key=lambda r: (r["modificationTime"], r["path"]))]
            if st.mapping is not None:
                paths = self._mapped_files(st, paths, source, batch_id)
            self.on_batch(st.iri, source, batch_id, paths)

        query = (reader.writeStream.foreachBatch(on_batch).option("checkpointLocation", ckpt)
                 .trigger(processingTime=f"{int(self.trigger * 1000)} milliseconds")
                 .queryName(f"rspark-{stream_key(st.iri)}-{source}").start())
        st.queries.append(query)

    # ------------------------------------------------------------------------------------------------ batches

    def on_batch(self, iri: str, source: str, batch_id: int, paths: list[str], inbox: list[str] | None = None,
                 arrived: float | None = None) -> None:
        """One micro-batch of a stream's source: load its files, append them, evaluate what became due, save.
        ``inbox``: the names of the inbox files it reads (the state names them until they are deleted);
        ``arrived``: when its input arrived (seconds since the epoch; default: now), from which the latency of its
        records is counted."""
        started = time.time()
        arrived = started if arrived is None else min(arrived, started)
        with self.lock:
            if self._closed or self._closing:
                # not applied and not committed (the exception tells Spark so): a restart reads these files again
                raise Closing("rspark's live mode is closing")
            st = self.streams.get(iri)
            if st is None:  # dropped while this batch waited for the lock: its files went with it
                return
            try:
                if batch_id <= st.batches.get(source, -1):
                    log.info("<%s> %s: micro-batch %d was applied before a restart", iri, source, batch_id)
                else:
                    self._ingest_batch(st, [_local_path(p) for p in paths], source, batch_id)
                    st.batches[source] = batch_id
                    if inbox is not None:
                        st.inbox_applied = list(inbox)
                    st.counters["batches"] += 1
                    if paths:
                        st.arrivals.append((arrived, st.buffer.last))
                        del st.arrivals[:-100]
                loaded = time.time()
                delivered = self.evaluate(arrived=arrived)  # (and the state saved, the batch's with it)
                log.info("<%s> %s batch %d: %d file%s loaded in %.2f s, %d record%s in %.2f s", iri, source, batch_id,
                         len(paths), "" if len(paths) == 1 else "s", loaded - started, delivered,
                         "" if delivered == 1 else "s", time.time() - loaded)
            except Closing:
                raise
            except Exception as exc:  # noqa: BLE001 - kept for status() and re-raised to Spark (the query stops)
                # out of memory (the garbage-collection watchdog's cancellation among others) says so
                memory = memory_limit_error(exc, f"the live batch of <{iri}>")
                log.error("live batch of <%s> failed: %s", iri, memory or exc)
                self.failure = memory or exc
                raise

    def _ingest_batch(self, st: LiveStream, paths: list[str], source: str, batch_id: int) -> None:
        """Loads a micro-batch's files: those that parse cleanly together, as one N-Quads file (one load for the
        batch, :mod:`rspark.engine.live.spool`), every other file alone (its messages then name its own lines)."""
        st.counters["files"] += len(paths)
        if source == "inbox":
            st.read += len(paths)
        if paths and self.driver_ingest and self._read_on_driver(st, paths):
            return
        if len(paths) == 1:
            self._ingest(st, paths[0], source, batch_id)
            return
        spool_dir = os.path.join(self.checkpoint, "streams", stream_key(st.iri), "spool")
        spooled, origins, alone = spool_files(paths, spool_dir, f"{source}-{batch_id:08d}")
        if spooled is not None:
            try:
                self._ingest(st, spooled, source, batch_id, origins)
            finally:
                os.remove(spooled)
        for path in alone:
            self._ingest(st, path, source, batch_id)

    def _prefetch(self, st: LiveStream, path: str) -> None:
        """Starts reading the inbox file ``path`` on the driver, in the runner's reading thread, as it is written:
        at a high rate the next micro-batch's files are parsed (Arrow and pyoxigraph, which leave Python's lock to
        other threads) while the JVM evaluates the batch before, instead of after it."""
        if not self.driver_ingest or st.end_predicate is not None or self._closing:  # (the loader's, or not read)
            return
        with self._pool_lock:
            if self._reader_pool is None:
                self._reader_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rspark-read")
            future = self._reader_pool.submit(read_small, path, st.timestamp_predicate)
        st.prefetched[os.path.basename(path)] = (st.timestamp_predicate, future)

    def _read_on_driver(self, st: LiveStream, paths: list[str]) -> bool:
        """Reads a micro-batch's files on the driver and appends them as one segment, when each is small and clean
        and they combine (:mod:`rspark.engine.live.ingest`) and none of their elements is late; False (and nothing
        changed): the batch is the loader's."""
        # the files whose reading began as they were written (every one is taken off, whichever path the batch takes)
        started = [st.prefetched.pop(os.path.basename(path), None) for path in paths]
        if st.prefetched:  # a reading registered after its file was taken (the reader looked in between): dropped
            newest = max(os.path.basename(path) for path in paths)  # (inbox names sort in the order of writing)
            for name in [name for name in list(st.prefetched) if name < newest]:
                st.prefetched.pop(name, None)
        if st.end_predicate is not None:  # (the driver's reading knows one timestamp triple per element)
            return False
        batches = []
        for path, early in zip(paths, started):
            if early is not None and early[0] == st.timestamp_predicate:
                batch = early[1].result()
            else:
                batch = read_small(path, st.timestamp_predicate)
            if batch is None:
                return False
            batches.append(batch)
        batch = combine(batches)
        if batch is None:
            return False
        scale = st.buffer.scale
        result = st.buffer.append_small(batch, st.evaluated)
        if result is None:
            return False
        if st.evaluated is not None and st.buffer.scale != scale:  # finer timestamps arrived: ticks rescaled
            st.evaluated *= st.buffer.scale // scale
        st.counters["elements"] += result.accepted
        return True

    def _ingest(self, st: LiveStream, local: str, source: str, batch_id: int, origins=None) -> None:
        """Loads one file (or a batch's spool, whose lines ``origins`` maps back to their files) and appends it."""
        try:
            loaded = load_stream(self.spark, st.iri, local, timestamp_predicate=st.timestamp_predicate,
                                 end_predicate=st.end_predicate)
        except RsparkError as exc:  # the whole file is unreadable: quarantined, the stream goes on
            self.quarantine(st, local, [exc])
            return
        try:
            if loaded.errors:
                with self.count_lock:
                    st.counters["rejected"] += loaded.n_rejected or len(loaded.errors)
                if origins is None:
                    self.quarantine(st, local, loaded.errors)
                else:  # each message names the file the element came from
                    by_file: dict = {}
                    for err in loaded.errors:
                        origin = origins.file_of(getattr(err, "line", None)) or local
                        by_file.setdefault(origin, []).append(
                            MoreProblems(err.count, err.what, file=origin) if isinstance(err, MoreProblems)
                            else DataError(getattr(err, "reason", str(err)), file=origin))
                    for origin, errors in by_file.items():
                        self.quarantine(st, origin, errors)
            dead = os.path.join(self.late_directory(st.iri), f"{source}-{batch_id:08d}.nq")
            scale = st.buffer.scale
            try:
                result = st.buffer.append(loaded, st.evaluated, dead)
            except RsparkError as exc:  # a batch of the other time kind
                self.quarantine(st, local, [exc])
                return
            if st.evaluated is not None and st.buffer.scale != scale:  # finer timestamps arrived: ticks rescaled
                st.evaluated *= st.buffer.scale // scale
            st.counters["elements"] += result.accepted
            if result.late:
                st.counters["late"] += result.late
                log.warning("<%s>: %d late element%s in %s (at or before the evaluated instant %s), written to %s: %s",
                            st.iri, result.late, "" if result.late == 1 else "s", local,
                            format_time(st.evaluated, st.timeline()), dead, ", ".join(result.late_elements[:5]))
        finally:
            loaded.unpersist()

    def closing(self) -> bool:
        """Whether :meth:`close` has begun (a source then writes nothing more: what it holds is read on a
        restart)."""
        return self._closing or self._closed

    def late_directory(self, iri: str) -> str:
        """Where the late elements of the stream ``iri`` are written (docs/live.md)."""
        return os.path.join(self.checkpoint, "late", readable_key(iri))

    def quarantine_message(self, st: LiveStream, name: str, data: str | bytes, errors: list) -> None:
        """A message of a network source that gave no element (not RDF, no record mapped): its data as it came
        (``name``: the file's name in the quarantine) and the reasons, as :meth:`quarantine` keeps a file's; the
        records a mapping rejected (a :class:`NoRecordMapped`'s) are counted in the stream's ``rejected``."""
        folder = os.path.join(self.checkpoint, "quarantine", readable_key(st.iri))
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name)
        with open(path, "wb") as out:
            out.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data))
        records = [e for err in errors if isinstance(err, NoRecordMapped) for e in err.errors]
        with self.count_lock:
            st.counters["rejected"] += len(records)
        self.quarantine(st, path, [e for err in errors for e in (err.errors if isinstance(err, NoRecordMapped)
                                                                 else [err])])

    def quarantine(self, st: LiveStream, path: str, errors: list) -> None:
        """A file with problems: its messages are logged and kept in ``errors``; a copy of the file and the messages
        go to ``checkpoint/quarantine`` (the file itself stays where it is: it may be the user's). The elements
        that loaded are kept."""
        folder = os.path.join(self.checkpoint, "quarantine", readable_key(st.iri))
        os.makedirs(folder, exist_ok=True)
        name = os.path.basename(path)
        try:
            if os.path.abspath(path) != os.path.abspath(os.path.join(folder, name)):
                shutil.copyfile(path, os.path.join(folder, name))
        except OSError:
            pass  # the file went away: its messages are still written
        with open(os.path.join(folder, name + ".errors.txt"), "w", encoding="utf-8") as out:
            out.writelines(f"{err}\n" for err in errors)
        st.counters["quarantined"] += 1
        limit = None if log.isEnabledFor(logging.INFO) else WARNINGS_PER_FILE
        for line in summarised(errors, limit, hint=f"all in {name}.errors.txt in {folder}"):
            log.warning("<%s>: %s", st.iri, line)
        with self.count_lock:
            self.errors.extend(errors)
            del self.errors[:-1000]

    # ------------------------------------------------------------------------------------------------ queries

    def register(self, text: str, *, name: str | None = None, profile: str | None = None,
                 sinks: tuple = ()) -> LiveQuery:
        """Adds a live query, its ``sinks`` attached before any micro-batch can evaluate it."""
        plan = compile_query(text, source=name or "query")
        ensure_evaluable(plan, continuous=True, source=name or "query", profile=profile or self.profile)
        if not plan.dataset.windows:
            raise RsparkError(f"{name or 'the query'} reads no stream (no window or FROM STREAM); "
                              "use engine.sparql for static data")
        label = query_label(plan, name or f"query{len(self.queries) + 1}")
        qname = name or label
        with self.lock:
            if qname in self.queries and not self.queries[qname].stopped:
                raise RsparkError(f"a live query named {qname!r} is registered already")
            q = LiveQuery(qname, text, plan, profile or self.profile, label)
            saved = self._saved.get("queries", {}).get(qname)
            if saved and saved.get("text") == text:
                q.restore(saved.get("last"), saved.get("horizon"))
                q.evaluations, q.records = saved.get("evaluations", 0), saved.get("records", 0)
                if saved.get("last") is not None or "consumption" in saved:
                    # a checkpoint without it (an older rspark's) has kept the stream whole: evaluated from its start
                    q.consumption = saved.get("consumption")
                    if q.consumption is not None:
                        check_saved(q.consumption, f"{os.path.join(self.checkpoint, STATE_FILE)}, query {qname}")
            elif saved:
                log.warning("live query %s: its text differs from the checkpoint's; it starts afresh", qname)
            for iri in q.reads:
                if iri not in self.streams and not any(o.writes == iri for o in self.queries.values()) \
                        and iri not in self.recorded:
                    self.stream(iri)  # fed later (push, watch), or by a query registered later
            q.sinks.extend(sinks)
            self.queries[qname] = q
        return q

    def unregister(self, name: str) -> None:
        """Stops the query and forgets its progress: registered again, it starts afresh (the buffers may no longer
        hold what it would resume from)."""
        with self.lock:
            q = self.queries.pop(name, None)
            if q is not None:
                q.stopped = True
                for sink in q.sinks:
                    sink.close()
            self._saved.get("queries", {}).pop(name, None)
            self._save_state()

    def evaluate(self, *, until=None, arrived: float | None = None, final: bool = False) -> int:
        """Evaluates every query whose instants up to its horizon were not all reported; returns the records
        delivered (:meth:`LiveScheduler.evaluate`). ``until``: a time value no horizon passes (default: the
        runner's). The state is saved then, so that a restart does not deliver again what this evaluation did
        (a query's first evaluation at its registration, or a refresh, runs outside any micro-batch)."""
        with self.lock:
            delivered = self.scheduler.evaluate(until=self.until if until is None else until, arrived=arrived,
                                                final=final)
            self._save_state()
            return delivered

    # ------------------------------------------------------------------------------------------------ state

    def _read_state(self) -> dict:
        path = os.path.join(self.checkpoint, STATE_FILE)
        if not os.path.exists(path):
            return {}
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def _save_state(self) -> None:
        state = {"streams": {}, "queries": {}}
        for iri, st in self.streams.items():
            state["streams"][iri] = {"buffer": st.buffer.state(), "batches": st.batches, "counters": st.counters,
                                     "evaluated": st.evaluated, "inbox_applied": st.inbox_applied}
        for name, q in self.queries.items():
            last, horizon = q.times()
            state["queries"][name] = {"text": q.text, "last": last, "horizon": horizon,
                                      "evaluations": q.evaluations, "records": q.records}
            if q.consumption is not None:
                state["queries"][name]["consumption"] = q.consumption
        # queries not registered again since a restart keep their saved state
        for name, saved in self._saved.get("queries", {}).items():
            state["queries"].setdefault(name, saved)
        save_json(os.path.join(self.checkpoint, STATE_FILE), state)
        for st in self.streams.values():
            st.buffer.drop_unused()

    # ------------------------------------------------------------------------------------------------ status

    def status(self) -> dict:
        """Counters per stream and per query (docs/live.md, Status). Read without waiting for a running batch."""
        # no lock: the counters are plain values, read as they are between two batches' updates
        out: dict = {"streams": {}, "queries": {}, "checkpoint": self.checkpoint,
                     "refreshed": {iri: r.status() for iri, r in list(self.refreshes.items())},
                     "failure": None if self.failure is None else str(self.failure)}
        for iri, st in list(self.streams.items()):
            tl = st.timeline()
            wm = st.watermark()
            out["streams"][iri] = {
                **st.counters,
                "last": None if st.buffer.last is None else format_time(st.buffer.last, tl),
                "watermark": None if wm is None else format_time(wm, tl),
                "evaluated": None if st.evaluated is None else format_time(st.evaluated, tl),
                "held_from": None if st.buffer.low is None else format_time(st.buffer.low, tl),
                "directories": list(st.directories), "inbox": st.inbox,
                "sources": [feed.status() for feed in list(st.feeds)],
            }
        for name, q in list(self.queries.items()):
            lat = sorted(q.latencies)
            last, horizon = q.times()
            out["queries"][name] = {
                "evaluations": q.evaluations, "records": q.records, "last": last, "horizon": horizon,
                "paused": q.paused, "reads": q.reads,
                "latency_p50": lat[len(lat) // 2] if lat else None,
                "latency_p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else None,
                "late": sum(self.streams[i].counters["late"] for i in q.reads if i in self.streams),
                "elements": sum(self.streams[i].counters["elements"] for i in q.reads if i in self.streams),
                "lag": self._lag(q),
                "consumed": None if q.consumption is None else occurrence_count(q.consumption),
            }
        return out

    def _lag(self, q: LiveQuery):
        """How far the query's horizon is behind the newest element of the streams it reads, in their unit
        (milliseconds for date-time streams); None before its first evaluation."""
        if q.horizon is None:
            return None
        lags = []
        for iri in q.reads:
            st = self.streams.get(iri)
            if st is not None and st.buffer.last is not None:
                tl = st.timeline()
                lags.append(Decimal(st.buffer.last - rescale(q.horizon, q.timeline, tl)) / tl.scale)
        if not lags:
            return None
        lag = max(lags)
        return int(lag) if lag == lag.to_integral_value() else float(lag)

    def reached(self, until) -> bool:
        """Whether every stream the queries read has reached ``until`` (a time value): its watermark is at or after
        it, so no element at or before ``until`` is still to come in time; closing then reports up to ``until``."""
        with self.lock:
            live = [q for q in self.queries.values() if not q.stopped]
            inputs = {iri for q in live for iri in q.reads} - {q.writes for q in live}
            if not inputs:
                return False
            for iri in inputs:
                st = self.streams.get(iri)
                if st is None:
                    if iri in self.recorded:
                        continue
                    return False
                wm = st.watermark()
                if wm is None or wm < parse_time(until, st.timeline()):
                    return False
            return True

    def idle(self) -> bool:
        """Whether every source has read every file there is (no micro-batch running or pending, and every file
        this process wrote into an inbox loaded)."""
        for st in self.streams.values():
            if st.read < st.written or (st.reader is not None and not st.reader.idle()):
                return False
            for query in st.queries:
                status = query.status
                if status.get("isDataAvailable") or status.get("isTriggerActive"):
                    return False
        return True

    def wait_idle(self, timeout: float = 60.0, settle: float | None = None) -> bool:
        """Waits until the sources have nothing more to read (or ``timeout`` seconds); returns whether they were
        idle. ``settle``: how long they must stay idle (default: three triggers), since a file written just now
        is seen at the next trigger."""
        settle = 3 * self.trigger + 0.3 if settle is None else settle
        deadline = time.time() + timeout
        quiet_since = None
        while time.time() < deadline:
            if self.failure is not None:
                raise RsparkError(f"live mode stopped: {self.failure}") from self.failure
            if self.idle():
                quiet_since = quiet_since or time.time()
                if time.time() - quiet_since >= settle:
                    return True
            else:
                quiet_since = None
            time.sleep(0.05)
        return False

    def close(self, *, flush: bool = False) -> None:
        """Stops the sources (and with ``flush``, reports every instant up to the last element seen first)."""
        for paced in self.paced:
            paced.stop()
        for refresh in self.refreshes.values():
            refresh.stop()
        for q in list(self.queries.values()):  # a sink waiting for its destination gives up: the batch ends
            for sink in q.sinks:
                sink.interrupt()
        with self.lock:  # the batch running now ends first: stopping a query interrupts its batch's Spark jobs
            self._closing = True
        for st in list(self.streams.values()):
            for feed in st.feeds:  # (a broker's client: it writes nothing once closing has begun)
                feed.stop()
            if st.reader is not None:
                st.reader.stop()
            for query in st.queries:
                try:
                    query.stop()
                except Exception:  # noqa: BLE001 - the JVM may be gone already; nothing left to stop then
                    pass
        with self.lock:
            if flush and self.failure is None:
                self.evaluate(final=True)
            self._closed = True
        with self._pool_lock:
            if self._reader_pool is not None:
                self._reader_pool.shutdown(wait=False, cancel_futures=True)
        with self.lock:
            for q in self.queries.values():
                for sink in q.sinks:
                    sink.close()
        if self.temporary:
            shutil.rmtree(self.checkpoint, ignore_errors=True)


def _local_path(path: str) -> str:
    """A file source's path (``file:/...``) as a local path."""
    local = path[len("file:"):] if path.startswith("file:") else path
    while local.startswith("//"):
        local = local[1:]

    return unquote(local)


def refresh_period(every) -> float:
    """A refresh period in seconds: a duration (``PT20S``, ``20s``) or a number (of seconds), positive."""
    if isinstance(every, (int, float)) and not isinstance(every, bool):
        seconds = float(every)
    else:
        duration = parse_duration(str(every))  # a plain number: seconds
        seconds = float(duration.amount) / (1000 if duration.absolute else 1)
    if not seconds > 0:
        raise RsparkError(f"refresh period {every}: it must be positive")
    return seconds
