"""The Python API: ``Engine`` holds the static data and streams and answers queries on Spark."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark import results as R
from rspark.algebra.ops import QueryPlan
from rspark.engine.live.handle import QueryHandle
from rspark.engine.live.sinks import CallbackSink, QueueSink, Sink
from rspark.engine.live.sources import start_source
from rspark.errors import RsparkError
from rspark.model.codec import decode, encode
from rspark.model.terms import IRI, Literal
from rspark.model.xsd import INTEGER_TYPES, XSD_BOOLEAN, XSD_DATETIME, XSD_DECIMAL, XSD_DOUBLE, XSD_FLOAT
from rspark.rsp.versions import instant_key
from rspark.spark.failures import jvm_exit_code, jvm_gone, memory_limit_error
from rspark.spark.session import get_session, use_session
from rspark.spark.sparql.compiler import DatasetView, GraphVersion
from rspark.spark.sparql.query import make_env, prepare_query
from rspark.syntax.translate import compile_query, ensure_evaluable

QUADS_SCHEMA = "s string, p string, o string, g string"
QUOTED_SCHEMA = "t string, s string, p string, o string"
PLAN_CACHE_SIZE = 64  # compiled static queries an Engine keeps for reuse


class SparqlResult:
    """The answer of a one-shot query: SELECT solutions, an ASK boolean, or a CONSTRUCT/DESCRIBE graph.

    ``value`` is the result value of :mod:`rspark.results` (terms of :mod:`rspark.model.terms`).
    Iterating a SELECT result gives one dict per solution (variable name -> term, unbound variables absent);
    a graph result gives (s, p, o) triples, a dataset result (CONSTRUCT with GRAPH blocks in its template)
    (s, p, o, g) quads with ``g`` None for the default graph; an ASK result gives its single boolean."""

    def __init__(self, value: R.QueryResult, form: str) -> None:
        self.value = value
        self.form = form

    @property
    def vars(self) -> list[str]:
        return list(self.value.vars) if isinstance(self.value, R.SolutionSequence) else []

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.value, R.SolutionSequence):
            return iter(self.value.rows)
        if isinstance(self.value, R.GraphResult):
            return iter(self.value.triples)
        if isinstance(self.value, R.DatasetResult):
            return iter(self.value.quads)
        return iter([self.value.value])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __bool__(self) -> bool:
        if isinstance(self.value, R.BooleanResult):
            return self.value.value
        return len(self) > 0

    def to_json(self) -> dict:
        """SPARQL 1.1 Query Results JSON (a dict); for graphs ``{"triples": [N-Triples lines]}``, for datasets
        ``{"quads": [N-Quads lines]}``."""
        if isinstance(self.value, R.GraphResult):
            return {"triples": R.to_ntriples(self.value).splitlines()}
        if isinstance(self.value, R.DatasetResult):
            return {"quads": R.to_nquads(self.value).splitlines()}
        return R.to_json(self.value)

    def serialize(self, fmt: str = "json") -> str:
        """Text in one of: json, xml, csv, tsv, table, ntriples, nquads."""
        if fmt == "json":
            return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"
        if fmt == "ntriples":
            if isinstance(self.value, R.DatasetResult):
                raise RsparkError("this CONSTRUCT builds quads (GRAPH blocks in its template): use --format nquads")
            if not isinstance(self.value, R.GraphResult):
                raise RsparkError("--format ntriples needs a CONSTRUCT or DESCRIBE query")
            return R.to_ntriples(self.value)
        if fmt == "nquads":
            if isinstance(self.value, R.GraphResult):
                return R.to_ntriples(self.value)  # every triple in the default graph: N-Quads lines of 3 terms
            if not isinstance(self.value, R.DatasetResult):
                raise RsparkError("--format nquads needs a CONSTRUCT or DESCRIBE query")
            return R.to_nquads(self.value)
        if isinstance(self.value, (R.GraphResult, R.DatasetResult)):
            if fmt == "table":
                return R.to_table(self.value)
            raise RsparkError(f"a graph result is written as ntriples, nquads or json, not {fmt}")
        writer = {"xml": R.to_xml, "csv": R.to_csv, "tsv": R.to_tsv, "table": R.to_table}.get(fmt)
        if writer is None:
            raise RsparkError(f"unknown result format {fmt!r} (json, xml, csv, tsv, table, ntriples, nquads)")
        if fmt in ("csv", "tsv") and isinstance(self.value, R.BooleanResult):
            raise RsparkError(f"an ASK result has no {fmt} form; use json, xml or table")
        return writer(self.value)

    def to_pandas(self):
        """A pandas DataFrame, one column per variable: IRIs as strings, literals as Python values where the
        datatype has one (int, Decimal, float, bool, datetime), other literals as their lexical form, blank
        nodes as ``_:label``, quoted triples in N-Triples-star form, unbound as None."""
        # delayed: pandas costs ~0.3 s and only to_pandas needs it
        import pandas as pd

        if isinstance(self.value, R.SolutionSequence):
            return pd.DataFrame([{v: _python_value(row.get(v)) for v in self.value.vars} for row in self.value.rows],
                                columns=self.value.vars)
        if isinstance(self.value, R.GraphResult):
            return pd.DataFrame([[_python_value(t) for t in tr] for tr in self.value.triples],
                                columns=["subject", "predicate", "object"])
        if isinstance(self.value, R.DatasetResult):
            return pd.DataFrame([[_python_value(t) for t in q] for q in self.value.quads],
                                columns=["subject", "predicate", "object", "graph"])
        return pd.DataFrame({"boolean": [self.value.value]})

    def __repr__(self) -> str:
        if isinstance(self.value, R.SolutionSequence):
            return f"<SparqlResult SELECT {len(self.value.rows)} solutions of {self.value.vars}>"
        if isinstance(self.value, R.GraphResult):
            return f"<SparqlResult graph of {len(self.value.triples)} triples>"
        if isinstance(self.value, R.DatasetResult):
            return f"<SparqlResult dataset of {len(self.value.quads)} quads>"
        return f"<SparqlResult ASK {self.value.value}>"


def _python_value(term):
    if term is None:
        return None
    if isinstance(term, IRI):
        return term.value
    if isinstance(term, Literal):
        dt, lex = term.datatype, term.lexical
        try:
            if dt in INTEGER_TYPES:
                return int(lex)
            if dt == XSD_DECIMAL:
                return Decimal(lex)
            if dt in (XSD_DOUBLE, XSD_FLOAT):
                return float(lex.replace("INF", "inf"))
            if dt == XSD_BOOLEAN:
                return lex in ("true", "1")
            if dt == XSD_DATETIME:
                return datetime.fromisoformat(lex.replace("Z", "+00:00"))
        except (ValueError, InvalidOperation):
            return lex
        return lex
    return term.n3()


class Engine:
    """rspark's entry point: static data, streams and queries over one SparkSession.

    ``Engine()`` runs Spark locally (``local[*]``); ``Engine(master="spark://host:7077")`` uses a cluster.
    ``profile`` names the engine profile continuous queries use by default (see docs/profiles.md)."""

    def __init__(self, master: str | None = None, *, profile: str | None = None, spark=None,
                 conf: dict[str, str] | None = None, checkpoint: str | None = None) -> None:
        # a session the user brings: rspark sets on it the settings its answers depend on (ANSI mode off, UTC;
        # rspark.spark.session.ANSWER_CONF), logging each change, and leaves the rest (log level included) alone
        self.spark = get_session(master, conf) if spark is None else use_session(spark)
        self.profile = profile
        self._quads: DataFrame | None = None
        self._quoted: DataFrame | None = None
        self._graphs: set[str] = set()  # encoded names of loaded named graphs
        self.errors: list = []
        self.streams: dict[str, Any] = {}
        self._loaded: list = []  # load results, to free their cached parses on clear()
        # (encoded graph name or None, load result, the instant it is valid from or None) of each static load;
        # a graph with a load valid from an instant changes over time (load(valid_from=...))
        self._static: list = []
        # compiled static queries by (text, base IRI, source), executed again when the same query comes back
        # (spark.query.PreparedQuery); emptied whenever the data changes
        self._plans: dict = {}
        # Queries may come from several threads at once. _lock guards the plan cache and the static data's
        # frames together with _version (bumped by every change of the data): a plan compiled while data was
        # loaded would otherwise be cached after the load emptied the cache and answer later queries without the
        # new data, two loads could each union onto the same old frame (one load lost), and the cache's eviction
        # could iterate the dict while another thread changes it. Held only for these few dict / field updates,
        # never while Spark works.
        self._lock = threading.Lock()
        self._version = 0
        # _graph_lock: a FROM graph loaded on demand (_ensure_graph) is loaded once when several queries name it at
        # the same time (twice, its quads would be in the dataset twice: duplicate solutions)
        self._graph_lock = threading.Lock()
        # live mode (rspark.engine.live), started by the first watch / push / register: its state goes to
        # ``checkpoint`` (a temporary directory, removed on close, when None)
        self.checkpoint = checkpoint
        self._live = None

    # ------------------------------------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop live mode (its sources and queries) and release cached data (the SparkSession stays, for reuse in
        the same process). Nothing to release when the Spark JVM has stopped (after an out-of-memory error in
        local mode)."""
        if self._live is not None:
            live, self._live = self._live, None
            try:
                live.close()
            except Exception as exc:
                if not jvm_gone(exc) and jvm_exit_code() is None:
                    raise
        try:
            self.clear()
        except Exception as exc:
            if not jvm_gone(exc) and jvm_exit_code() is None:
                raise
            self._loaded.clear()  # the JVM, and the cached data with it, is gone
            self._static.clear()

    def clear(self) -> None:
        """Drop all static data and streams."""
        for loaded in self._loaded:
            loaded.unpersist()
        self._loaded.clear()
        self._static.clear()
        with self._lock:  # see __init__
            self._plans.clear()
            self._version += 1
            self._quads = self._quoted = None
        self._graphs.clear()
        self.errors = []
        self.streams.clear()

    # ---------------------------------------------------------------------------------------------- static data

    def load(self, path: str | os.PathLike, *, graph: str | None = None, base_iri: str | None = None,
             format: str | None = None, strict: bool = True, valid_from=None) -> Engine:
        """Load an RDF file into the default graph, or into the named graph ``graph`` (an IRI).

        ``valid_from`` (a number or an ISO 8601 date-time, as the streams' timestamps): the file is a version of
        the graph, which replaces the graph's earlier versions from that instant on, for continuous queries (RSP-QL's
        time-varying graph G(t); docs/language.md, "Background graphs that change over time"). A static query
        (``sparql``) reads each graph's latest version. The file then holds triples (Turtle, N-Triples, RDF/XML):
        a version is one graph.

        The format comes from the extension (.ttl .nt .nq .trig .rdf .n3), or ``format=``; relative IRIs resolve
        against ``base_iri``, else the file's URI. ``strict=False`` skips bad lines (listed in ``engine.errors``);
        ``strict`` raises :class:`~rspark.errors.DataError` at the first (file, line, column, reason). A path that
        does not exist raises :class:`~rspark.errors.MissingFileError` (a ``DataError`` and a
        ``FileNotFoundError``) before Spark reads anything."""
        # delayed: the loader imports pyoxigraph, not needed until data is loaded
        from rspark.spark.loading.loader import load_rdf

        since = None if valid_from is None else _version_instant(valid_from, path, format)
        loaded = load_rdf(self.spark, str(path), graph=graph, base_iri=base_iri, format=format, strict=strict)
        self.errors.extend(loaded.errors)
        self._loaded.append(loaded)
        name = encode(IRI(graph)) if graph is not None else None
        self._static.append((name, loaded, since))
        if since is None:
            self._add(loaded.quads, loaded.quoted)
        else:  # read through dataset_for's versions
            self._add(None, loaded.quoted)
        if name is not None:
            self._graphs.add(name)
        return self

    def drop_graph(self, graph: str) -> bool:
        """Remove the named graph ``graph`` (an IRI) from the static data; returns whether it was loaded. Queries
        compiled from now on (a live query: from its next evaluation on) no longer see it."""
        name = encode(IRI(graph))
        with self._lock:  # see __init__
            if name not in self._graphs:
                return False
            self._plans.clear()
            self._version += 1
            dropped = [loaded for n, loaded, _ in self._static if n == name]
            self._static = [entry for entry in self._static if entry[0] != name]
            quads = quoted = None
            for _, loaded, since in self._static:  # the frames again, without the graph's loads (their files may go)
                if since is None:
                    quads = loaded.quads if quads is None else quads.unionByName(loaded.quads)
                quoted = loaded.quoted if quoted is None else quoted.unionByName(loaded.quoted).distinct()
            # a dataset file (TriG, N-Quads) loaded into the default graph may hold the graph too
            self._quads = None if quads is None else quads.filter(F.col("g") != name)
            self._quoted = quoted
            self._graphs.discard(name)
        for loaded in dropped:
            loaded.unpersist()
            self._loaded.remove(loaded)
        return True

    def graphs(self) -> list[str]:
        """The IRIs of the named graphs loaded."""
        return sorted(decode(name).value for name in self._graphs)

    def _add(self, quads: DataFrame | None, quoted: DataFrame) -> None:
        with self._lock:  # see __init__
            self._plans.clear()
            self._version += 1
            if quads is not None:
                self._quads = quads if self._quads is None else self._quads.unionByName(quads)
            self._quoted = quoted if self._quoted is None else self._quoted.unionByName(quoted).distinct()

    def quads(self) -> DataFrame:
        """The static quads loaded without an instant (s, p, o, g; g '' for the default graph) as encoded terms
        (the versions of graphs that change over time are read through :meth:`dataset_for`)."""
        if self._quads is None:
            return self.spark.createDataFrame([], QUADS_SCHEMA)
        return self._quads

    def quoted(self) -> DataFrame:
        if self._quoted is None:
            return self.spark.createDataFrame([], QUOTED_SCHEMA)
        return self._quoted

    def dataset_for(self, plan: QueryPlan, *, over_time: bool = False) -> DatasetView:
        """The RDF dataset of a query: FROM / FROM NAMED when it has them, else the default graph and every
        named graph loaded. A FROM graph that is not loaded but names a local file (``file:`` IRI) is loaded.

        A graph loaded in versions (``load(valid_from=...)``) is read as its latest version, or, ``over_time``
        (a continuous query), given as its versions (``DatasetView.versions``), which the evaluation reads at each
        instant; ``default`` and ``named`` then leave it out."""
        ds = plan.dataset
        explicit = bool(ds.default_graphs or ds.named_graphs)
        for iri in list(ds.default_graphs) + list(ds.named_graphs):
            self._ensure_graph(iri)
        with self._lock:
            entries = list(self._static)
        versions = _graph_versions(entries)
        quads = self.quads  # the loads with no instant
        if versions:
            left_out = F.col("g").isin(list(versions))
            latest = [] if over_time else [(g, _latest(v)) for g, v in versions.items()]

            def quads() -> DataFrame:
                out = self.quads().filter(~left_out)
                for graph, builder in latest:
                    out = out.unionByName(builder().select("s", "p", "o", F.lit(graph).alias("g")))
                return out
        if not explicit:
            dated = [GraphVersion(g, g, since, b) for g, vs in versions.items() for since, b in vs] if over_time else []
            return DatasetView(lambda: quads().filter(F.col("g") == "").select("s", "p", "o"),
                               lambda: quads().filter(F.col("g") != ""), self.quoted, tuple(dated))
        defaults = [encode(i) for i in ds.default_graphs]
        named = [encode(i) for i in ds.named_graphs]
        dated = []
        if over_time:
            dated = [GraphVersion(g, "", since, b) for g in defaults for since, b in versions.get(g, ())]
            dated += [GraphVersion(g, g, since, b) for g in named for since, b in versions.get(g, ())]

        def default() -> DataFrame:
            df = quads().filter(F.col("g").isin(defaults)).select("s", "p", "o")
            return df.distinct() if len(defaults) > 1 else df

        return DatasetView(default, lambda: quads().filter(F.col("g").isin(named)), self.quoted, tuple(dated))

    def continuous_dataset(self, plan: QueryPlan) -> DatasetView:
        """The dataset of a continuous query: :meth:`dataset_for` with the graphs' versions."""
        return self.dataset_for(plan, over_time=True)

    def _ensure_graph(self, iri: IRI) -> None:
        name = encode(iri)
        if name in self._graphs:
            return
        value = iri.value
        if value.startswith("file:"):
            path = unquote(urlparse(value).path)
            if os.path.exists(path):
                with self._graph_lock:  # see __init__: one load when several queries need the graph at once
                    if name not in self._graphs:
                        self.load(path, graph=value)
                return
        raise RsparkError(f"the query's dataset names graph {iri.n3()}, which is not loaded "
                          f"(load it with engine.load(path, graph={value!r}) or --graph {value}=PATH)")

    # ---------------------------------------------------------------------------------------------------- queries

    def sparql(self, query: str, *, base_iri: str | None = None, source: str | None = None) -> SparqlResult:
        """Answer a SPARQL 1.1 (SPARQL-star) query over the static data.

        The query's compiled plan is kept: asked again (same text, ``base_iri`` and ``source``), the plan is
        optimised and run afresh without being built again, until data is loaded or cleared. Queries with NOW(),
        RAND(), UUID(), STRUUID(), BNODE(), a ``*`` / ``+`` path, and DESCRIBE are compiled at every run
        (docs/evaluation.md, "Compiled queries kept for reuse")."""
        key = (query, base_iri, source)
        with self._lock:  # see __init__; popped: one thread at a time executes a kept plan, others compile anew
            prepared = self._plans.pop(key, None)
            version = self._version
        try:
            if prepared is None:
                plan = compile_query(query, base_iri=base_iri, source=source, sparql=True)
                if plan.is_continuous:
                    raise RsparkError(
                        "this query reads streams or registers a continuous query: use engine.replay(...)")
                ensure_evaluable(plan, continuous=False, source=source)
                prepared = prepare_query(self.spark, plan, self.dataset_for(plan), make_env(plan.base))
            value = prepared.execute()
        except Exception as exc:
            err = memory_limit_error(exc, "the query", jvm=True)
            if err is None:
                raise
            raise err from exc
        if prepared.reusable:  # the most recently used last; the data's changes empty the cache (_add, clear)
            with self._lock:
                if self._version == version:  # else the data changed since: the plan may read the old data
                    self._plans[key] = prepared
                    while len(self._plans) > PLAN_CACHE_SIZE:
                        self._plans.pop(next(iter(self._plans)))
        return SparqlResult(value, prepared.plan.form)

    # ---------------------------------------------------------------------------------------------------- streams

    def add_stream(self, iri: str, path: str | os.PathLike, *,
                   timestamp_predicate: str = "http://www.w3.org/ns/prov#generatedAtTime",
                   base_iri: str | None = None, strict: bool = False, end_predicate: str | None = None,
                   format: str | None = None, mapping: str | os.PathLike | None = None) -> Engine:
        """Add a recorded stream (TriG or N-Quads, docs/streams.md) under the IRI ``iri``.

        ``mapping``: a mapping file (docs/streams.md, "JSON and CSV records"): ``path`` is then a CSV, JSON or
        JSON Lines file of records (``format``: ``"csv"``, ``"json"``, ``"jsonl"``; else the extension), each
        mapped to an element on Spark's executors; a record without a valid timestamp is rejected (``errors``).

        ``format``: by default from the file's extension and, for an RDF Message Log (a file announcing
        ``VERSION "1.2-messages"``), its first line; or ``"trig"``, ``"nquads"``, ``"ndjsonld"``, ``"jsonld"``,
        ``"trig-messages"``, ``"nquads-messages"``, ``"turtle-messages"``, ``"ntriples-messages"``
        (docs/streams.md, "RDF Messages and JSON-LD streams").

        Elements without a (valid) timestamp and malformed elements (invalid UTF-8 included) are reported in
        ``engine.errors`` and skipped, unless ``strict``. A path that does not exist raises
        :class:`~rspark.errors.MissingFileError` (a :class:`~rspark.errors.DataError` and a
        ``FileNotFoundError``) before Spark reads anything. A file with problems and no valid element (a binary
        file, a file of another format) raises a :class:`~rspark.errors.DataError`, ``FILE: no valid stream
        element (K rejected; first: ...)``, whose ``errors`` lists the problems, and the stream is not added; a
        stream with no element and nothing to report is logged as a WARNING on the ``rspark`` logger.

        An element valid over an interval (docs/streams.md) has the interval literal ``"start/end"`` as its
        timestamp, or, with ``end_predicate``, its timestamp as the start and the object of its default-graph
        triple ``<g> <end_predicate> instant`` as the end."""
        return self.add_streams({iri: path}, timestamp_predicate=timestamp_predicate, base_iri=base_iri,
                                strict=strict, end_predicate=end_predicate, format=format, mapping=mapping)

    def add_streams(self, streams, *, timestamp_predicate: str = "http://www.w3.org/ns/prov#generatedAtTime",
                    base_iri: str | None = None, strict: bool = False, end_predicate: str | None = None,
                    format: str | None = None, mapping: str | os.PathLike | None = None) -> Engine:
        """Add several recorded streams at once (``streams``: a mapping or (IRI, path) pairs), loaded
        concurrently: Spark runs one load's jobs while the other's driver plans or waits, as ``rspark replay``
        loads its ``--stream`` files. Errors are reported in the order of ``streams``; if one load fails, none of these
        streams is added and the first failure in that order is raised. ``format``: every file's, as
        :meth:`add_stream`'s, and so is ``mapping`` (read once, checked before any stream is loaded)."""
        # delayed: the loader imports pyoxigraph, not needed until data is loaded
        from rspark.spark.loading.loader import check_file, load_stream, no_valid_element

        pairs = list(streams.items()) if hasattr(streams, "items") else [tuple(p) for p in streams]
        seen: set = set()
        for iri, _ in pairs:
            if iri in self.streams or iri in seen:
                raise RsparkError(f"stream <{iri}> is already added")
            seen.add(iri)
        for _, path in pairs:
            check_file(path)  # a missing file: MissingFileError (a DataError) before any stream is loaded
        if mapping is not None:
            # delayed: the mapping module imports PyYAML, which a stream of RDF does not need
            from rspark.spark.loading.mapping import Mapping, load_mapping

            if not isinstance(mapping, Mapping):
                mapping = load_mapping(os.fspath(mapping))  # a bad mapping: MappingError before any load

        def load(pair):
            iri, path = pair
            loaded = load_stream(self.spark, iri, str(path), timestamp_predicate=timestamp_predicate,
                                 base_iri=base_iri, strict=strict, end_predicate=end_predicate, format=format,
                                 mapping=mapping)
            failure = no_valid_element(str(path), loaded)
            if failure is not None:
                loaded.unpersist()
                raise failure
            return loaded

        if len(pairs) <= 1:
            results = [load(pair) for pair in pairs]
        else:
            with ThreadPoolExecutor(max_workers=min(len(pairs), 4), thread_name_prefix="rspark-load") as pool:
                futures = [pool.submit(load, pair) for pair in pairs]
            failures = [f.exception() for f in futures if f.exception() is not None]
            if failures:
                for f in futures:
                    if f.exception() is None:
                        f.result().unpersist()
                raise failures[0]
            results = [f.result() for f in futures]
        for (iri, _), loaded in zip(pairs, results):
            self._register_stream(iri, loaded, timestamp_predicate)
        return self

    def _register_stream(self, iri: str, loaded, timestamp_predicate: str) -> None:
        # delayed: Stream imports the loader, and with it pyoxigraph
        from rspark.spark.streaming.stream import Stream

        self.errors.extend(loaded.errors)
        self._loaded.append(loaded)
        self.streams[iri] = Stream.from_loaded(iri, loaded, timestamp_predicate)

    def replay(self, queries, *, until=None, times=None, profile: str | None = None, names=None) -> list:
        """Replay continuous queries over the recorded streams: one output per evaluation instant of each query,
        in time order (``out.time``, ``out.query``, ``out.to_json()`` as the jsonl line of ``rspark replay``).

        ``queries``: one query text or a list of them (queries that REGISTER STREAM feed the queries reading that
        stream); ``until``: the last instant (default: the last element), or ``"end"`` (see :meth:`replay_iter`);
        ``times``: evaluate exactly at these instants; ``profile``: an engine profile name (docs/profiles.md),
        default the engine's. Returns a list; :meth:`replay_iter` gives the same records one at a time."""
        return list(self.replay_iter(queries, until=until, times=times, profile=profile, names=names))

    def replay_iter(self, queries, *, until=None, times=None, profile: str | None = None, names=None):
        """:meth:`replay` as an iterator: the records stream from Spark as they are read, so a long replay whose
        records are written out as they come (as ``rspark replay`` does) keeps the driver's memory bounded. The
        queries are compiled and checked (unknown streams, bad windows) before it returns.

        ``until``: the last evaluation instant: a number or an ISO 8601 date-time, like the stream's timestamps (a
        number over a date-time stream is epoch milliseconds, logged as a warning); by default the last element's
        timestamp ``L``, where the window that holds the last elements is still open and is never reported (a
        warning says so). ``until="end"`` closes the stream at ``L``: the last instant becomes the first instant at
        or after ``L`` at which the query's report policy reports a window holding ``L``: under window close the
        report instant of the first window that holds it (its close; one tick later under the strict close rule of
        ``rspql-star``), under a periodic policy the first period instant at or after that close (at or after ``L``
        for windows that are not time-based), under content change ``L`` itself (no element comes after it, so
        there is no later instant). An element in no window (a slide longer than the range) closes nothing. With
        several windows the latest of their instants is the last (docs/profiles.md, "Closing the stream").

        Logged on the ``rspark`` logger: each query's number of evaluation instants (INFO), and as WARNINGs what
        makes a replay print less than expected (numeric times over a date-time stream, a slide longer than the
        range, triple patterns directly in a WINDOW block under ``rspql-star``, the elements after the last
        instant)."""
        # delayed: the replay's modules import pyoxigraph (through the loader); a one-shot query needs none
        from rspark.engine.replay import Replayer

        texts = [queries] if isinstance(queries, str) else list(queries)
        labels = list(names) if names is not None else [f"query{i + 1}" if len(texts) > 1 else "query"
                                                         for i in range(len(texts))]
        replayer = Replayer(self.spark, self.continuous_dataset, self.streams, profile or self.profile)
        try:
            records = replayer.run(list(zip(texts, labels)), until=until, times=times)
        except Exception as exc:
            err = memory_limit_error(exc, "the replay", jvm=True)
            if err is None:
                raise
            raise err from exc
        return _memory_guarded(records)


    # ---------------------------------------------------------------------------------------------- live mode

    @property
    def live(self):
        """The live streams and queries (:class:`rspark.engine.live.runner.LiveRunner`), started on first use."""
        if self._live is None:
            # delayed: live mode's ~35 modules and pyoxigraph (through the loader), on first use only
            from rspark.engine.live.runner import LiveRunner

            with self._lock:
                if self._live is None:
                    self._live = LiveRunner(self.spark, static=self.continuous_dataset, recorded=self.streams,
                                            profile=self.profile, replace_graph=self._replace_graph,
                                            checkpoint=self.checkpoint)
        return self._live

    def _replace_graph(self, iri: str, versions: list) -> None:
        """Drops the static graph ``iri`` and loads its ``versions`` ((path, the instant it is valid from or None))
        in its place (none: dropped only)."""
        self.drop_graph(iri)
        for path, since in versions:
            self.load(path, graph=iri, valid_from=since)

    def refresh_graph(self, iri: str, source: str | os.PathLike, every) -> dict:
        """Live mode: read the named graph ``iri`` from ``source`` (a file, or an ``http(s)://`` SPARQL endpoint,
        asked ``CONSTRUCT WHERE { ?s ?p ?o }``) now and again every ``every`` (``PT20S``, ``20s``, or a number
        of seconds), the W3C RSP CG requirements' RESCAN. A read whose content changed is a new version of the
        graph, valid from the instant after the live streams' watermark (docs/language.md, "Background graphs
        that change over time"); a failed read is logged and counted in ``live_status()["refreshed"]``."""
        return self.live.refresh_graph(iri, str(source), every)

    def live_stream(self, iri: str, *, lateness=0, timestamp_predicate: str | None = None,
                    arrival_time: bool = False, end_predicate: str | None = None,
                    history: str | os.PathLike | None = None, mapping: str | os.PathLike | None = None) -> Engine:
        """Declare a live stream fed by :meth:`push` (docs/live.md). ``lateness``: how far behind the greatest
        timestamp seen an element may arrive and still be evaluated (a number in the stream's unit or an ISO 8601
        duration); an element at or before an instant already reported is late: counted and written to the
        checkpoint's ``late/`` directory. ``arrival_time``: elements pushed without a timestamp get the push's
        time (else they are rejected with a message). ``end_predicate``: the predicate of the triple that ends an
        element's validity interval (docs/streams.md), as :meth:`add_stream`'s. ``history``: a recorded stream
        file (TriG or N-Quads) the stream starts from: its elements come before every live one, so the first
        windows hold them and the records are a replay's over the history and then the live elements
        (docs/live.md); written once per ``checkpoint``. ``mapping``: a mapping file (docs/streams.md, "JSON and
        CSV records"): :meth:`push` then takes ``format="csv"``, ``"json"`` or ``"jsonl"`` records, each mapped to
        an element (a rejected record is listed in ``engine.live.errors``), and :meth:`watch` reads a directory's
        .csv, .json and .jsonl files."""
        self.live.stream(iri, lateness=lateness, timestamp_predicate=timestamp_predicate, arrival_time=arrival_time,
                         end_predicate=end_predicate, history=None if history is None else os.fspath(history),
                         mapping=_mapping_arg(mapping))
        return self

    def watch(self, iri: str, directory: str | os.PathLike, *, lateness=0,
              timestamp_predicate: str | None = None, end_predicate: str | None = None,
              mapping: str | os.PathLike | None = None) -> Engine:
        """Feed the live stream ``iri`` from the TriG / N-Quads files that appear in ``directory`` (Spark
        Structured Streaming's file source: each file read once, also across restarts with the same
        ``checkpoint``). Write a file elsewhere and move it in, so that it is never read half-written."""
        self.live.watch(iri, str(directory), lateness=lateness, timestamp_predicate=timestamp_predicate,
                        end_predicate=end_predicate, mapping=_mapping_arg(mapping))
        return self

    def push(self, iri: str, data: str | bytes, *, format: str | None = None) -> None:
        """Append elements (TriG or N-Quads text, docs/streams.md) to the live stream ``iri``: written to its inbox
        (a replayable log in the checkpoint directory) and evaluated at the next micro-batch. An RDF Message Log
        (text announcing ``VERSION "1.2-messages"``), or ``format="ndjsonld"`` / ``"jsonld"`` /
        ``"trig-messages"`` ..., is converted first, each message one element (docs/streams.md, "RDF Messages and
        JSON-LD streams"); a message that cannot be read is listed in ``engine.live.errors`` and the others go on.
        ``format="csv"``, ``"json"`` or ``"jsonl"``: records mapped with the stream's mapping
        (:meth:`live_stream`'s ``mapping``), each one element."""
        self.live.push(iri, data, format=format)

    def source(self, iri: str, spec: str, **options) -> Engine:
        """A live source from its command-line form: a directory, ``kafka://HOST:PORT/TOPIC[?options]`` (a Kafka
        topic whose records are TriG or N-Quads documents; the engine needs ``conf={"spark.rspark.kafka": "true"}``,
        docs/live.md), ``tcp://HOST:PORT`` (N-Quads lines), ``replay:PATH@SPEED`` (a recorded stream written into
        the inbox at SPEED times its own pace), ``mqtt://HOST:PORT/TOPIC`` (each message on the topic, QoS 1, a
        TriG or N-Quads document; docs/live.md, "MQTT"), ``sse://HOST:PORT/PATH`` (Server-Sent Events: another
        rspark's ``/queries/NAME/results``, or RDF or JSON-LD events; docs/live.md, "Server-Sent Events") or
        ``ws://HOST:PORT/PATH`` / ``wss://`` (each WebSocket message a JSON-LD document, RDF text or another
        rspark's CONSTRUCT record; docs/live.md, "WebSocket"). ``options``: the stream's settings (``lateness``,
        ``timestamp_predicate``, ``arrival_time``, ``end_predicate``), ``mapping`` (a mapping file or
        :class:`~rspark.spark.loading.mapping.Mapping`: the messages of a directory, Kafka, MQTT, SSE or WebSocket
        source are JSON, JSON Lines or CSV records, each mapped to an element; docs/streams.md, "JSON and CSV
        records") and, for MQTT, SSE and WebSocket, ``payload_format`` (MQTT: ``trig`` or ``nquads``, default told
        from each message; a mapped stream's: ``json``, ``jsonl`` or ``csv``, default ``json``; a Kafka address
        says ``format=``). The source's state is in ``live_status()["streams"][iri]["sources"]``."""
        start_source(self, iri, spec, **options)
        return self

    def register(self, query: str, *, name: str | None = None, profile: str | None = None, sinks=()):
        """Register a continuous query over live streams; returns its
        :class:`~rspark.engine.live.handle.QueryHandle` (``subscribe``, ``results``, ``status``, ``stop``). Its
        records are those ``replay`` gives over the same elements, delivered as the instants become due: every
        instant up to the least watermark of the streams it reads.

        ``sinks``: where the records go from the first one on (:class:`~rspark.engine.live.sinks.Sink` objects,
        or callables called with each record), attached before the query is first evaluated. A sink added to the
        handle later (``subscribe``, ``write_to``) gets the records delivered after it is added: those of an
        evaluation at registration (what the buffers, or a checkpoint's, already hold) can be gone by then."""
        runner = self.live
        attached = [QueueSink()]
        for sink in sinks:
            if isinstance(sink, Sink):
                attached.append(sink)
            elif callable(sink):
                attached.append(CallbackSink(sink))
            else:
                raise TypeError(f"register(sinks=...): a Sink or a callable, not {type(sink).__name__}")
        handle = QueryHandle(runner, runner.register(query, name=name, profile=profile, sinks=tuple(attached)),
                             attached[0])
        with runner.lock:  # what the buffers hold already is evaluated now
            runner.evaluate()
        return handle

    def live_status(self) -> dict:
        """Counters of the live streams and queries (docs/live.md, Status)."""
        return self.live.status()


def _mapping_arg(mapping):
    """A mapping argument: a file's path as a string; a parsed Mapping (or None) as it is."""
    return os.fspath(mapping) if isinstance(mapping, str | os.PathLike) else mapping


def _version_instant(valid_from, path, format) -> object:
    """``valid_from`` checked: a number, or a text that is a number or an ISO 8601 date-time (read as an
    element's timestamp is); the file a triple format."""
    # delayed: rdf imports pyoxigraph
    from rspark.spark.loading import rdf

    if isinstance(valid_from, bool) or not isinstance(valid_from, (int, float, str)):
        raise RsparkError(f"valid_from={valid_from!r}: a number or an ISO 8601 date-time")
    try:
        instant_key(valid_from)
    except RsparkError as exc:
        raise RsparkError(f"valid_from={valid_from!r}: {exc}") from None
    if rdf.detect_format(str(path), format) in ("nquads", "trig"):
        raise RsparkError(f"{path}: a version of a graph is one graph: load it from a triple format (Turtle, "
                          "N-Triples, RDF/XML), not a dataset (TriG, N-Quads)")
    return valid_from


def _graph_versions(entries) -> dict[str, list]:
    """The graphs loaded in versions: encoded name ("" the default graph) -> [(the instant it is valid from or
    None, a builder of its (s, p, o))], one entry per instant (the loads of one instant are one version). A load
    of such a graph with no instant is its version from the beginning."""
    dated = {n or "" for n, _, since in entries if since is not None}
    loads: dict[str, dict] = {}
    for n, loaded, since in entries:
        if (n or "") in dated:
            key = instant_key(since)
            loads.setdefault(n or "", {}).setdefault(key, (since, []))[1].append(loaded)
    return {graph: [(since, _union_of(graph, group)) for since, group in by_key.values()]
            for graph, by_key in loads.items()}


def _union_of(graph: str, group: list):
    def build() -> DataFrame:
        out = None
        for loaded in group:
            part = loaded.quads.filter(F.col("g") == graph).select("s", "p", "o")
            out = part if out is None else out.unionByName(part)
        return out

    return build


def _latest(versions: list):
    """The builder of the latest of a graph's versions."""
    return max(versions, key=lambda v: instant_key(v[0]))[1]


def _memory_guarded(records):
    """The records, with an out-of-memory failure of Spark turned into a :class:`MemoryLimitError` (and the JVM's
    end into a :class:`SparkStoppedError`)."""
    try:
        yield from records
    except Exception as exc:
        err = memory_limit_error(exc, "the replay", jvm=True)
        if err is None:
            raise
        raise err from exc
