"""What ``rspark serve`` holds: one :class:`~rspark.engine.engine.Engine` with its live streams, static graphs and
registered queries under the names clients gave them, the limits that protect it, and the declarations saved in
the checkpoint directory (``service.json``) so that a restarted service has the same streams, graphs and queries
(live mode's own checkpoint then resumes each query at its last reported instant).

Everything here is synchronous and thread-safe; :mod:`rspark.service.app` calls the slow parts (starting a
stream's source, registering a query, loading a graph: Spark jobs) from a worker thread."""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal

from rspark.algebra.ops import calls_a_service
from rspark.engine.live.files import remove_file, save_json
from rspark.engine.live.view import QueryView, to_json
from rspark.errors import DataError, InputError, RsparkError, printable
from rspark.model.time import Timeline
from rspark.rsp.profiles import ProfileError, get_profile
from rspark.rsp.versions import instant_key
from rspark.rsp.windows import CountWindow, resolve_window
from rspark.service.elements import Element, parse_push
from rspark.service.observers import ObserverSink
from rspark.service.results import ResultLog
from rspark.syntax.translate import QuerySyntaxError, compile_query, ensure_evaluable

log = logging.getLogger("rspark.service")

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
SERVICE_FILE = "service.json"
RECENT_ELEMENTS = 2000  # per stream, for the dashboard's time line
GRAPH_FORMATS = {  # media type -> (pyoxigraph format, file extension)
    "text/turtle": ("TURTLE", "ttl"),
    "application/n-triples": ("N_TRIPLES", "nt"),
    "application/rdf+xml": ("RDF_XML", "rdf"),
    "application/ld+json": ("JSON_LD", "nt"),
}


STREAM_SETTINGS = ("iri", "lateness", "timestamp_predicate", "arrival_time", "end_predicate", "source",
                   "payload_format", "mapping")
# a mapped stream's pushes: media type -> record format
RECORD_MEDIA_TYPES = {"text/csv": "csv", "application/json": "json", "application/x-ndjson": "jsonl",
                      "application/jsonl": "jsonl", "application/json-lines": "jsonl"}


class ServiceError(RsparkError):
    """A request the service refuses: ``status`` is its HTTP status, ``fields`` more JSON for the body (line,
    column, ...)."""

    def __init__(self, status: int, message: str, **fields) -> None:
        super().__init__(message)
        self.status = status
        self.fields = {k: v for k, v in fields.items() if v is not None}


SERVICE_REFUSED = ("SERVICE is refused by rspark serve: a client's query would make the server send requests to "
                   "any address it names; run federated queries with rspark sparql, rspark replay or the Python API")


def refuse_service_calls(plan) -> None:
    """A query sent to the service must not call other endpoints (SERVICE): the server would make requests to
    any address a client names."""
    if calls_a_service(plan.op):
        raise ServiceError(400, SERVICE_REFUSED)


@dataclass
class Limits:
    """What one client may ask of the service (each refused with a 4xx and a message naming the limit)."""

    max_body: int = 16 * 1024 * 1024  # bytes of a request body (413)
    max_queries: int = 32  # registered queries (429)
    max_window_elements: int = 100_000  # a count window's size (422)
    max_instants: int = 10_000  # evaluation instants one push may make due for a query (422)
    keep_events: int = 10_000  # records per query kept for clients that reconnect (Last-Event-ID)


@dataclass
class StreamEntry:
    name: str
    iri: str
    lateness: object = 0
    timestamp_predicate: str | None = None
    arrival_time: bool = False
    end_predicate: str | None = None
    source: str | None = None  # mqtt://, sse://, ws://, kafka:// ...: the source feeding the stream (NETWORK_SOURCES)
    payload_format: str | None = None
    mapping: str | None = None  # the mapping's YAML text: the stream's messages and pushes are JSON or CSV records
    parsed: object = None  # (the mapping read: rspark.spark.loading.mapping.Mapping)
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_ELEMENTS))  # (Element, late)
    oldest: Element | None = None  # the earliest and newest elements pushed (live mode may not have loaded them)
    newest: Element | None = None
    pushes: deque = field(default_factory=lambda: deque(maxlen=1000))  # (wall time, elements) of recent pushes

    def declaration(self) -> dict:
        return {"iri": self.iri, "lateness": self.lateness, "timestamp_predicate": self.timestamp_predicate,
                "arrival_time": self.arrival_time, "end_predicate": self.end_predicate,
                **({"source": self.source, "payload_format": self.payload_format} if self.source else {}),
                **({"mapping": self.mapping} if self.mapping is not None else {})}


@dataclass
class QueryEntry:
    name: str
    text: str
    profile: str | None
    results: ResultLog
    paused: bool = False
    observers: dict = field(default_factory=dict)  # id -> ObserverSink


class Service:
    """The streams, graphs and queries of one ``rspark serve``."""

    def __init__(self, engine, *, limits: Limits | None = None, base_url: str = "http://127.0.0.1:8175",
                 kafka: bool = False) -> None:
        """``kafka``: the engine's session has Spark's Kafka connector (rspark serve --kafka): a stream may then
        be declared with a kafka:// source."""
        self.engine = engine
        self.kafka = kafka
        self.live = engine.live
        self.limits = limits or Limits()
        self.base_url = base_url.rstrip("/")
        self.streams: dict[str, StreamEntry] = {}
        self.graphs: dict[str, dict] = {}
        self.queries: dict[str, QueryEntry] = {}
        self.lock = threading.RLock()
        self.started = time.time()
        self.sse_clients = 0
        self.requests = 0
        self.refused = 0
        self._observer_ids = 0
        self._graph_versions = 0
        self.folder = os.path.join(self.live.checkpoint, "service")
        os.makedirs(self.folder, exist_ok=True)

    # ------------------------------------------------------------------------------------------------ saved state

    def restore(self) -> None:
        """Declares again what the checkpoint's ``service.json`` holds (streams, graphs, queries, observers)."""
        path = os.path.join(self.live.checkpoint, SERVICE_FILE)
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
        def again(what: str, fn, *args, **kwargs) -> bool:
            """One declaration restored; one that fails now (a file gone, a profile renamed) is logged and the
            others are still restored."""
            try:
                fn(*args, save=False, **kwargs)
                return True
            except (RsparkError, OSError) as exc:
                log.error("%s from %s not restored: %s", what, path, exc)
                return False

        for name, decl in saved.get("streams", {}).items():
            again(f"stream {name}", self.declare_stream, name, decl)
        for name, g in saved.get("graphs", {}).items():
            again(f"graph {name}", self._put_graph_file, name, g)
        for name, q in saved.get("queries", {}).items():
            if again(f"query {name}", self.register, name, q["text"], q.get("profile")):
                self.queries[name].paused = bool(q.get("paused"))
                self.live.pause(name, bool(q.get("paused")))
                for url in q.get("observers", []):
                    again(f"an observer of query {name}", self.add_observer, name, url)
        log.info("restored %d streams, %d graphs and %d queries from %s", len(self.streams), len(self.graphs),
                 len(self.queries), path)

    def save(self) -> None:
        with self.lock:
            state = {
                "streams": {n: s.declaration() for n, s in self.streams.items()},
                "graphs": {n: {"iri": g["iri"], "versions": [{k: v[k] for k in ("since", "path", "media_type")}
                                                             for v in g["versions"]]}
                           for n, g in self.graphs.items()},
                "queries": {n: {"text": q.text, "profile": q.profile, "paused": q.paused,
                                "observers": [o.url for o in q.observers.values()]}
                            for n, q in self.queries.items()},
            }
        save_json(os.path.join(self.live.checkpoint, SERVICE_FILE), state)

    # ------------------------------------------------------------------------------------------------ streams

    def declare_stream(self, name: str, decl: dict, *, save: bool = True) -> bool:
        """Declares (or updates) the stream ``name``; returns whether it is new."""
        _check_name(name, "stream")
        if not isinstance(decl, dict):
            raise ServiceError(400, "a stream declaration is a JSON object: {\"iri\": ..., \"lateness\": ...}")
        unknown = set(decl) - set(STREAM_SETTINGS)
        if unknown:
            raise ServiceError(400, f"unknown stream setting{'s' if len(unknown) > 1 else ''} "
                                    f"{', '.join(sorted(unknown))} ({', '.join(STREAM_SETTINGS)})")
        mapping_text, mapping = _stream_mapping(name, decl)
        source, payload_format = _stream_source(decl, mapping, kafka=self.kafka)
        iri = decl.get("iri") or f"{self.base_url}/streams/{name}"
        _check_iri(iri, "the stream's iri")
        with self.lock:
            entry = self.streams.get(name)
            if entry is not None and entry.iri != iri:
                raise ServiceError(409, f"stream {name} is declared with the IRI <{entry.iri}>; delete it first "
                                        "to give it another")
            other = next((s.name for s in self.streams.values() if s.iri == iri and s.name != name), None)
            if other is not None:
                raise ServiceError(409, f"the IRI <{iri}> is stream {other}'s")
            if entry is not None and (entry.source, entry.payload_format) != (source, payload_format):
                raise ServiceError(409, f"stream {name} is declared with the source {entry.source or '(pushes)'} "
                                        f"and payload format {entry.payload_format}; delete it first to change them")
            if entry is not None and entry.mapping != mapping_text:
                raise ServiceError(409, f"stream {name} is declared {'with another' if entry.mapping else 'without a'}"
                                        " mapping; delete it first to change it")
            new = entry is None
            lateness = decl.get("lateness", 0) or 0
            predicate = decl.get("timestamp_predicate")
            arrival = bool(decl.get("arrival_time", False))
            if predicate is not None:
                _check_iri(predicate, "the timestamp_predicate")
            end = decl.get("end_predicate")
            if end is not None:
                _check_iri(end, "the end_predicate")
            try:  # a bad setting is refused before it changes the stream (live mode checks the lateness first)
                mapped = {"mapping": mapping} if mapping is not None else {}
                if source is not None and entry is None:  # the source's client starts once
                    self.engine.source(iri, source, lateness=lateness, timestamp_predicate=predicate,
                                       arrival_time=arrival, end_predicate=end, payload_format=payload_format,
                                       **mapped)
                else:
                    self.live.stream(iri, lateness=lateness, timestamp_predicate=predicate, arrival_time=arrival,
                                     end_predicate=end, **mapped)
            except RsparkError as exc:
                raise ServiceError(400, str(exc)) from None
            entry = entry or StreamEntry(name, iri, source=source, payload_format=payload_format,
                                         mapping=mapping_text, parsed=mapping)
            entry.lateness, entry.timestamp_predicate, entry.arrival_time = lateness, predicate, arrival
            entry.end_predicate = end
            self.streams[name] = entry
        if save:
            self.save()
        return new

    def stream(self, name: str) -> StreamEntry:
        entry = self.streams.get(name)
        if entry is None:
            raise ServiceError(404, f"no stream named {name} (declare it with PUT /streams/{name})")
        return entry

    def delete_stream(self, name: str) -> None:
        entry = self.stream(name)
        try:
            self.live.drop(entry.iri)
        except InputError as exc:
            raise ServiceError(409, str(exc)) from None
        with self.lock:
            self.streams.pop(name, None)
        self.save()

    def push(self, name: str, body: bytes, media_type: str | None) -> dict:
        """Checks and appends a push's elements to the stream's inbox; refused whole (400, 422) or accepted whole.
        Returns the answer: the elements that go on to be evaluated (``accepted``) and their ``triples``, and the
        ``late`` ones (at or before an instant already reported: written to ``late_to`` instead)."""
        entry = self.stream(name)
        live = self.live.describe_stream(entry.iri)
        predicate = entry.timestamp_predicate or (live.timestamp_predicate if live else
                                                  "http://www.w3.org/ns/prov#generatedAtTime")
        if entry.parsed is not None:  # JSON or CSV records: mapped to N-Quads, then checked as any push
            body, media_type = _mapped_push(entry, body, media_type, predicate), "application/n-quads"
        try:
            pushed = parse_push(body, media_type, predicate=predicate, arrival_time=entry.arrival_time,
                                now=time.time())
        except DataError as exc:
            raise ServiceError(400, str(exc), line=exc.line, column=exc.column, element=exc.element) from None
        self._check_instants(entry, pushed.elements)
        self.live.append_checked(entry.iri, pushed.nquads)  # checked and stamped already: into the inbox as it is
        late = self.live.late(entry.iri, [el.time for el in pushed.elements])
        with self.lock:
            oldest = min(pushed.elements, key=lambda el: el.t)
            newest = max(pushed.elements, key=lambda el: el.t)
            entry.oldest = oldest if entry.oldest is None or oldest.t < entry.oldest.t else entry.oldest
            entry.newest = newest if entry.newest is None or newest.t > entry.newest.t else entry.newest
            entry.pushes.append((time.time(), len(pushed.elements)))
            for el, is_late in zip(pushed.elements, late):
                entry.recent.append((el, is_late))
        on_time = [el for el, is_late in zip(pushed.elements, late) if not is_late]
        answer = {"accepted": len(on_time), "triples": sum(el.triples for el in on_time),
                  "late": len(pushed.elements) - len(on_time)}
        if answer["late"]:
            answer["late_to"] = os.path.join(self.live.late_directory(entry.iri), "")
        return answer

    def _check_instants(self, entry: StreamEntry, elements: list[Element]) -> None:
        """Refuses a push that would make more than ``max_instants`` evaluation instants of a query due at once
        (a timestamp far ahead of the stream with a small slide)."""
        if not elements:
            return
        newest = max([*elements, *([entry.newest] if entry.newest else [])], key=lambda el: el.t)
        oldest = min([*elements, *([entry.oldest] if entry.oldest else [])], key=lambda el: el.t)
        with self.lock:
            names = list(self.queries)
        for q in names:
            due = self.live.due_instants(q, entry.iri, newest.time, oldest.time)
            if due > self.limits.max_instants:
                raise ServiceError(422, f"the push would make {due} evaluation instants of query {q} due "
                                        f"at once (the limit is {self.limits.max_instants}: --max-instants); "
                                        "its newest timestamp is far ahead of the stream")

    def stream_view(self, entry: StreamEntry | None, iri: str) -> dict:
        """A stream's declaration and counters (live mode's read model of it)."""
        live = self.live.describe_stream(iri)
        now = time.time()
        recent = sum(n for t, n in (entry.pushes if entry else ()) if now - t <= 60)
        span = min(60.0, max(1.0, now - self.started))
        counters = {k: getattr(live, k) if live else 0 for k in ("elements", "late", "rejected", "quarantined",
                                                                  "batches")}
        return {
            "name": entry.name if entry else None, "iri": iri,
            "kind": live.kind if live else None,
            "lateness": entry.lateness if entry else (live.lateness if live else 0),
            "arrival_time": entry.arrival_time if entry else False,
            "source": entry.source if entry else None,
            "mapped": bool(live and live.mapped),
            "sources": list(live.sources) if live else [],
            **counters, "rate": round(recent / span, 3),
            "last": live.last if live else None, "watermark": live.watermark if live else None,
            "evaluated": live.evaluated if live else None,
        }

    def streams_view(self) -> list[dict]:
        with self.lock:
            named = {s.iri: s for s in self.streams.values()}
        iris = list(dict.fromkeys(list(named) + self.live.stream_iris()))
        return [self.stream_view(named.get(iri), iri) for iri in iris]

    def elements_view(self, name: str, limit: int) -> dict:
        entry = self.stream(name)
        with self.lock:
            recent = list(entry.recent)[-limit:] if limit > 0 else []
        live = self.live.describe_stream(entry.iri)
        return {"name": name, "iri": entry.iri, "kind": live.kind if live else None,
                "elements": [{"time": _json_time(el.time), "t": el.t, "triples": el.triples, "graph": el.graph,
                              "late": late} for el, late in recent]}

    # ------------------------------------------------------------------------------------------------ graphs

    def put_graph(self, name: str, body: bytes, media_type: str | None, iri: str | None, *,
                  valid_from: str | None = None, save: bool = True) -> tuple[bool, int]:
        """Loads (or replaces) the static graph ``name``; returns whether it is new and its triples. With
        ``valid_from`` (a number or an ISO 8601 date-time) the body is a version of the graph valid from that
        instant (docs/language.md, background graphs that change over time), added to its versions (one of the
        same instant replaced); without, the body replaces the graph and all its versions."""
        # delayed: pyoxigraph; `rspark serve` imports this module to check its options before Spark starts
        import pyoxigraph as ox

        _check_name(name, "graph")
        since = None if valid_from is None else _version_instant(valid_from)
        mt = (media_type or "text/turtle").split(";")[0].strip().lower()
        if mt not in GRAPH_FORMATS:
            raise ServiceError(415, f"Content-Type {mt}: a graph is Turtle (text/turtle), N-Triples "
                                    "(application/n-triples), RDF/XML (application/rdf+xml) or JSON-LD "
                                    "(application/ld+json)")
        fmt, ext = GRAPH_FORMATS[mt]
        iri = iri or f"{self.base_url}/graphs/{name}"
        _check_iri(iri, "the graph's iri")
        try:
            triples = list(ox.parse(body, format=getattr(ox.RdfFormat, fmt)))
        except SyntaxError as exc:
            # delayed: rdf imports pyoxigraph, which importing this module must not load (see above)
            from rspark.spark.loading.rdf import document_problem

            reason, line, column = document_problem(exc, body)
            raise ServiceError(400, printable(f"request body:{line}:{column}: malformed {fmt.lower()}: {reason}"),
                               line=line, column=column) from None
        except ValueError as exc:
            raise ServiceError(400, f"request body: unreadable {fmt.lower()}: {exc}") from None
        if any(not isinstance(t.graph_name, ox.DefaultGraph) for t in triples):
            raise ServiceError(400, "a graph holds triples: the data names graphs (use one PUT per graph)")
        if fmt == "JSON_LD":  # kept as N-Triples, which the loader reads
            body = ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES)
            mt, ext = "application/n-triples", "nt"
        self._graph_versions += 1
        path = os.path.join(self.folder, f"graph-{name}-{int(time.time() * 1000)}-{self._graph_versions}.{ext}")
        tmp = path + ".tmp"
        with open(tmp, "wb") as out:
            out.write(body)
        version = {"since": since, "path": path, "media_type": mt, "triples": len(triples), "loaded": time.time()}
        with self.lock:
            old = self.graphs.get(name)
            if old is not None and old["iri"] != iri:
                os.remove(tmp)
                raise ServiceError(409, f"graph {name} is <{old['iri']}>; delete it first to give it another IRI")
            os.replace(tmp, path)
            kept = [] if old is None or since is None else \
                [v for v in old["versions"] if v["since"] is None or instant_key(v["since"]) != instant_key(since)]
            versions = sorted(kept + [version], key=lambda v: instant_key(v["since"]))
            # between evaluations: queries see the old graph or the new one
            self.live.replace_graph(iri, [(v["path"], v["since"]) for v in versions])
            self.graphs[name] = {"iri": iri, "versions": versions, **_latest_of(versions)}
        if old is not None:  # the engine no longer reads the files of the versions replaced
            for v in old["versions"]:
                if v not in versions:
                    remove_file(v["path"])
        if save:
            self.save()
        return old is None, len(triples)

    def _put_graph_file(self, name: str, g: dict, *, save: bool) -> None:
        """A graph saved in the checkpoint, loaded again (its versions in order)."""
        saved = g.get("versions") or [{"since": None, "path": g["path"], "media_type": g["media_type"]}]
        for v in saved:
            with open(v["path"], "rb") as f:
                self.put_graph(name, f.read(), v["media_type"], g["iri"], valid_from=v["since"], save=save)
            if all(v["path"] != now["path"] for now in self.graphs[name]["versions"]):
                remove_file(v["path"])  # the saved copy was copied to a new file

    def graph(self, name: str) -> dict:
        g = self.graphs.get(name)
        if g is None:
            raise ServiceError(404, f"no graph named {name} (load it with PUT /graphs/{name})")
        return g

    def graph_version(self, name: str, valid_from: str | None) -> dict:
        """The version of graph ``name`` valid from ``valid_from`` (None: its latest version)."""
        g = self.graph(name)
        if valid_from is None:
            return g["versions"][-1]
        key = instant_key(_version_instant(valid_from))
        for v in g["versions"]:
            if v["since"] is not None and instant_key(v["since"]) == key:
                return v
        raise ServiceError(404, f"graph {name} has no version valid from {valid_from} (its versions: "
                                f"{', '.join(v['since'] or 'from the beginning' for v in g['versions'])})")

    def delete_graph(self, name: str) -> None:
        g = self.graph(name)
        with self.lock:
            self.live.replace_graph(g["iri"], [])
            self.graphs.pop(name, None)
        for v in g["versions"]:
            remove_file(v["path"])
        self.save()

    # ------------------------------------------------------------------------------------------------ queries

    def register(self, name: str, text: str, profile: str | None, *, save: bool = True) -> QueryEntry:
        _check_name(name, "query")
        with self.lock:
            if name in self.queries:
                raise ServiceError(409, f"a query named {name} is registered (DELETE /queries/{name} first)")
            if len(self.queries) >= self.limits.max_queries:
                raise ServiceError(429, f"{len(self.queries)} queries are registered, the limit "
                                        f"(--max-queries {self.limits.max_queries}); delete one first")
        try:
            if profile is not None:
                get_profile(profile)
            plan = compile_query(text, source=name)
            refuse_service_calls(plan)
            ensure_evaluable(plan, continuous=True, source=name, profile=profile or self.engine.profile)
        except QuerySyntaxError as exc:
            raise ServiceError(400, str(exc), line=getattr(exc, "line", None),
                               column=getattr(exc, "column", None)) from None
        except (ProfileError, RsparkError) as exc:
            raise ServiceError(400, str(exc)) from None
        self._check_cost(name, plan, profile)
        results = ResultLog(self.limits.keep_events, path=self._results_path(name))
        try:  # the log is the query's sink before a micro-batch can evaluate it; it keeps the records held
            # before a restart as far as the query's progress goes
            self.live.add_query(text, name=name, profile=profile, sinks=(results,), resumed=results.resume)
        except RsparkError as exc:
            results.close()
            raise ServiceError(400, str(exc)) from None
        entry = QueryEntry(name, text, profile, results)
        with self.lock:
            self.queries[name] = entry
        if save:
            self.save()
        return entry

    def _results_path(self, name: str) -> str:
        """Where the records kept for resuming SSE clients of query ``name`` are (they survive a restart)."""
        return os.path.join(self.folder, "results", f"{name}.jsonl")

    def _check_cost(self, name: str, plan, profile: str | None) -> None:
        for d in plan.dataset.windows:
            try:
                rw = resolve_window(d.spec, get_profile(profile or self.engine.profile), Timeline.datetime(),
                                    first_ts=0)
            except RsparkError:
                continue
            if isinstance(rw, CountWindow) and rw.size > self.limits.max_window_elements:
                raise ServiceError(422, f"query {name}: a count window of {rw.size} holds more than "
                                        f"{self.limits.max_window_elements} (--max-window-elements)")

    def query(self, name: str) -> QueryEntry:
        q = self.queries.get(name)
        if q is None:
            raise ServiceError(404, f"no query named {name} (register it with PUT /queries/{name})")
        return q

    def delete_query(self, name: str) -> None:
        entry = self.query(name)
        self.live.unregister(name)
        with self.lock:
            self.queries.pop(name, None)
        entry.results.discard()
        self.save()

    def pause(self, name: str, paused: bool) -> None:
        self.query(name).paused = paused
        self.live.pause(name, paused)
        self.save()

    def add_observer(self, name: str, url: str, *, save: bool = True) -> ObserverSink:
        entry = self.query(name)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ServiceError(400, f"an observer is an http:// or https:// URL, not {url!r}")
        with self.lock:
            self._observer_ids += 1
            obs = ObserverSink(str(self._observer_ids), url)
            entry.observers[obs.id] = obs
        self.live.attach(name, obs)
        if save:
            self.save()
        return obs

    def delete_observer(self, name: str, ident: str) -> None:
        entry = self.query(name)
        with self.lock:
            obs = entry.observers.pop(ident, None)
        if obs is None:
            raise ServiceError(404, f"query {name} has no observer {ident}")
        self.live.detach(name, obs)
        obs.close()
        self.save()

    def query_view(self, entry: QueryEntry, full: bool = False) -> dict:
        """A query's status (``full``: with its text, algebra, windows with their bands, interval variables and
        observers), from live mode's read model of it."""
        view = self.live.describe_query(entry.name)
        if view is None:
            raise ServiceError(404, f"query {entry.name} is not registered in live mode")
        out = {
            "name": entry.name, "label": view.label, "profile": entry.profile, "reads": list(view.reads),
            "writes": view.writes, "paused": view.paused, "evaluations": view.evaluations, "records": view.records,
            "last": view.last, "lag": view.lag, "late": view.late, "elements": view.elements,
            "latency_p50": view.latency_p50, "latency_p99": view.latency_p99, "errors": self._errors(view),
            "error": view.error, "consumed": view.consumed, "sse_clients": len(entry.results.subscribers),
        }
        if full:
            out.update(_details(entry, view))
            out["observers"] = [o.describe() for o in entry.observers.values()]
        return out

    def _errors(self, view: QueryView) -> int:
        """Rejected elements and quarantined files of the streams a query reads."""
        streams = [self.live.describe_stream(iri) for iri in view.reads]
        return sum(s.rejected + s.quarantined for s in streams if s is not None)

    def queries_view(self) -> list[dict]:
        with self.lock:
            entries = list(self.queries.values())
        return [self.query_view(e) for e in entries]

    def close(self) -> None:
        with self.lock:
            entries = list(self.queries.values())
        for e in entries:
            e.results.close()
            for obs in e.observers.values():
                obs.close()


def _check_name(name: str, what: str) -> None:
    if not NAME.match(name or ""):
        raise ServiceError(400, f"{what} name {name!r}: letters, digits, '.', '_' and '-', at most 100, "
                                "starting with a letter or digit")


def _check_iri(iri, what: str) -> None:
    if not isinstance(iri, str) or not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]*$", iri):
        raise ServiceError(400, f"{what} {iri!r} is not an absolute IRI")


def _details(entry: QueryEntry, view: QueryView) -> dict:
    """A query's text, algebra, windows (as declared), their current and next bands, and its interval
    variables: what the dashboard draws."""
    return {
        "query": entry.text, "algebra": view.algebra,
        "windows": [w.parameters() for w in view.windows],
        "bands": [{"window": w.name, "stream": w.stream, "kind": w.kind,
                   "current": None if w.current is None else to_json(w.current),
                   "next": None if w.next is None else to_json(w.next)} for w in view.windows],
        "interval_variables": None if view.interval_variables is None else to_json(view.interval_variables),
    }


def _json_time(value):
    """A pushed element's time as JSON carries it: a number (a Decimal or a numeric text) as an int or a float, an
    ISO 8601 text as it is."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, str):
        try:
            d = Decimal(value)
            return int(d) if d == d.to_integral_value() else float(d)
        except ArithmeticError:
            return value
    return value


def _version_instant(valid_from: str) -> str:
    """A graph version's ``valid_from`` checked (a number or an ISO 8601 date-time), as given."""
    try:
        instant_key(valid_from)
    except RsparkError as exc:
        raise ServiceError(400, f"valid_from={valid_from}: {exc}") from None
    return valid_from


def _latest_of(versions: list[dict]) -> dict:
    """What the graph's listing shows of it: its latest version's file, format and triples."""
    latest = versions[-1]
    return {"path": latest["path"], "media_type": latest["media_type"], "triples": latest["triples"],
            "loaded": latest["loaded"]}


# the live sources a client may name in a stream's declaration (URL schemes); kafka:// only with rspark serve --kafka
NETWORK_SOURCES = ("mqtt://", "sse://", "sses://", "ws://", "wss://")
SOURCE_FORMS = ("mqtt://HOST:PORT/TOPIC, sse://HOST:PORT/PATH (sses:// over TLS), ws://HOST:PORT/PATH (wss:// over "
                "TLS) or kafka://HOST:PORT/TOPIC (rspark serve --kafka)")


def _stream_mapping(name: str, decl: dict) -> tuple:
    """A declaration's ``mapping`` (the YAML text of a mapping file, docs/streams.md "JSON and CSV records"): (its
    text, the :class:`~rspark.spark.loading.mapping.Mapping` read), or (None, None). A 400 names its problem (line
    and key)."""
    text = decl.get("mapping")
    if text is None:
        return None, None
    if not isinstance(text, str):
        raise ServiceError(400, "a stream's mapping is the text of a mapping file (YAML, docs/streams.md \"JSON and "
                                "CSV records\") in a JSON string")
    # delayed: the mapping module imports PyYAML, which a service without mapped streams does not need
    from rspark.spark.loading.mapping import MappingError, parse_mapping

    try:
        return text, parse_mapping(text, file=f"the mapping of stream {name}")
    except MappingError as exc:
        raise ServiceError(400, str(exc)) from None


def _mapped_push(entry: StreamEntry, body: bytes, media_type: str | None, predicate: str) -> bytes:
    """A push to a mapped stream: its JSON, JSON Lines or CSV records (told by the media type) as N-Quads. Accepted
    whole or refused whole, as any push: a record the mapping rejects refuses it, naming its line and number."""
    # delayed: as in _stream_mapping
    from rspark.spark.loading.mapping import convert_records, push_element_base

    mt = (media_type or "").split(";")[0].strip().lower()
    fmt = RECORD_MEDIA_TYPES.get(mt)
    if fmt is None:
        raise ServiceError(400, f"stream {entry.name} maps records: a push is CSV (text/csv), JSON "
                                "(application/json) or JSON Lines (application/x-ndjson), not "
                                f"{mt or 'without a Content-Type'}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServiceError(400, f"request body: not UTF-8 text (byte {exc.start})") from None
    try:
        conv = convert_records(text, fmt, entry.parsed, file="request body", pred=predicate,
                               element_base=push_element_base(entry.iri, text))
    except RsparkError as exc:  # not JSON; a CSV header without the mapping's columns
        raise ServiceError(400, str(exc), line=getattr(exc, "line", None), column=getattr(exc, "column", None)) \
            from None
    if conv.errors:
        first, more = conv.errors[0], len(conv.errors) - 1
        raise ServiceError(400, f"{first}{f' (and {more} more rejected records)' if more else ''}", line=first.line)
    if not conv.nquads:
        raise ServiceError(400, f"request body: no {fmt} record")
    return conv.nquads


def _stream_source(decl: dict, mapping=None, *, kafka: bool = False) -> tuple:
    """A declaration's ``source`` (a URL of :data:`NETWORK_SOURCES`' schemes, ``kafka://...`` when the service was
    started with Spark's Kafka connector (``kafka``), or None: the stream is fed by pushes) and ``payload_format``
    (an MQTT source's ``trig`` or ``nquads``, or None: told from each message; with a ``mapping``, an MQTT, SSE or
    WebSocket source's ``json``, ``jsonl`` or ``csv``, default json). A client names no directory, TCP server or
    file of the service's machine: those sources (a directory, ``tcp://``, ``replay:``) are the command line's. The
    URL itself is checked when the source starts (:meth:`Engine.source`: a 400 naming what is wrong)."""
    source, payload_format = decl.get("source"), decl.get("payload_format")
    if source is not None:
        if not isinstance(source, str):
            raise ServiceError(400, f"a stream's source is a URL: {SOURCE_FORMS}; without a source, the stream is "
                                    "fed by POST /streams/NAME")
        text = source.strip()
        if text.startswith("kafka://"):
            if not kafka:
                raise ServiceError(400, "a kafka:// source needs Spark's Kafka connector: start the service with "
                                        "rspark serve --kafka")
        elif not text.startswith(NETWORK_SOURCES):
            raise ServiceError(400, f"a stream's source is {SOURCE_FORMS}, not {source!r}: a directory, tcp:// or "
                                    "replay: source reads a file or a port of the server's machine on a client's "
                                    "word, so it is rspark run's (--source) only; without a source, the stream is "
                                    "fed by POST /streams/NAME")
    if payload_format is not None:
        text = source.strip() if isinstance(source, str) else ""
        if not isinstance(payload_format, str) or not text.startswith(NETWORK_SOURCES):
            raise ServiceError(400, "payload_format goes with an mqtt://, sse:// or ws:// source: trig or nquads "
                                    "(mqtt://), or with a mapping json, jsonl or csv (a Kafka address says format=)")
        # delayed: as in _stream_mapping
        from rspark.spark.loading.payload import message_format

        try:
            message_format(text, payload_format, mapping, rdf=text.startswith("mqtt://"))
        except RsparkError as exc:
            raise ServiceError(400, str(exc)) from None
    return (source.strip() if source else None), payload_format
