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

from rspark.engine.live.buffer import save_json
from rspark.errors import DataError, InputError, RsparkError, printable
from rspark.service.elements import Element, parse_push
from rspark.service.observers import ObserverSink
from rspark.service.results import ResultLog

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


class ServiceError(RsparkError):
    """A request the service refuses: ``status`` is its HTTP status, ``fields`` more JSON for the body (line,
    column, ...)."""

    def __init__(self, status: int, message: str, **fields) -> None:
        super().__init__(message)
        self.status = status
        self.fields = {k: v for k, v in fields.items() if v is not None}


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
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_ELEMENTS))  # (Element, late)
    first_t: Decimal | None = None  # the earliest and newest timestamps pushed (live mode may not have loaded them)
    last_t: Decimal | None = None
    pushes: deque = field(default_factory=lambda: deque(maxlen=1000))  # (wall time, elements) of recent pushes

    def declaration(self) -> dict:
        return {"iri": self.iri, "lateness": self.lateness, "timestamp_predicate": self.timestamp_predicate,
                "arrival_time": self.arrival_time}


@dataclass
class QueryEntry:
    name: str
    text: str
    profile: str | None
    query: object  # rspark.engine.live.registry.LiveQuery
    results: ResultLog
    observers: dict = field(default_factory=dict)  # id -> ObserverSink


class Service:
    """The streams, graphs and queries of one ``rspark serve``."""

    def __init__(self, engine, *, limits: Limits | None = None, base_url: str = "http://127.0.0.1:8175") -> None:
        self.engine = engine
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
                self.queries[name].query.paused = bool(q.get("paused"))
                for url in q.get("observers", []):
                    again(f"an observer of query {name}", self.add_observer, name, url)
        log.info("restored %d streams, %d graphs and %d queries from %s", len(self.streams), len(self.graphs),
                 len(self.queries), path)

    def save(self) -> None:
        with self.lock:
            state = {
                "streams": {n: s.declaration() for n, s in self.streams.items()},
                "graphs": {n: {k: g[k] for k in ("iri", "path", "media_type")} for n, g in self.graphs.items()},
                "queries": {n: {"text": q.text, "profile": q.profile, "paused": q.query.paused,
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
        unknown = set(decl) - {"iri", "lateness", "timestamp_predicate", "arrival_time"}
        if unknown:
            raise ServiceError(400, f"unknown stream setting{'s' if len(unknown) > 1 else ''} "
                                    f"{', '.join(sorted(unknown))} (iri, lateness, timestamp_predicate, arrival_time)")
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
            new = entry is None
            lateness = decl.get("lateness", 0) or 0
            predicate = decl.get("timestamp_predicate")
            arrival = bool(decl.get("arrival_time", False))
            if predicate is not None:
                _check_iri(predicate, "the timestamp_predicate")
            try:  # a bad setting is refused before it changes the stream (live mode checks the lateness first)
                self.live.stream(iri, lateness=lateness, timestamp_predicate=predicate, arrival_time=arrival)
            except RsparkError as exc:
                raise ServiceError(400, str(exc)) from None
            entry = entry or StreamEntry(name, iri)
            entry.lateness, entry.timestamp_predicate, entry.arrival_time = lateness, predicate, arrival
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
        st = self.live.streams.get(entry.iri)
        predicate = entry.timestamp_predicate or (st.timestamp_predicate if st else
                                                  "http://www.w3.org/ns/prov#generatedAtTime")
        try:
            pushed = parse_push(body, media_type, predicate=predicate, arrival_time=entry.arrival_time,
                                now=time.time())
        except DataError as exc:
            raise ServiceError(400, str(exc), line=exc.line, column=exc.column, element=exc.element) from None
        self._check_instants(entry, pushed.elements)
        st = self.live.streams.get(entry.iri) or self.live.stream(entry.iri)
        st.write(pushed.nquads, "nq")  # checked and stamped already: into the inbox as it is
        late = self._late(entry, pushed.elements)
        times = [Decimal(str(e.t)) for e in pushed.elements]
        with self.lock:
            entry.first_t = min(times) if entry.first_t is None else min(entry.first_t, min(times))
            entry.last_t = max(times) if entry.last_t is None else max(entry.last_t, max(times))
            entry.pushes.append((time.time(), len(pushed.elements)))
            for el, is_late in zip(pushed.elements, late):
                entry.recent.append((el, is_late))
        on_time = [el for el, is_late in zip(pushed.elements, late) if not is_late]
        answer = {"accepted": len(on_time), "triples": sum(el.triples for el in on_time),
                  "late": len(pushed.elements) - len(on_time)}
        if answer["late"]:
            answer["late_to"] = os.path.join(self.live.late_directory(entry.iri), "")
        return answer

    def _late(self, entry: StreamEntry, elements: list[Element]) -> list[bool]:
        """Whether each element is at or before an instant already reported (live mode counts it late)."""
        st = self.live.streams.get(entry.iri)
        if st is None or st.evaluated is None or st.buffer.kind is None:
            return [False] * len(elements)
        evaluated = Decimal(st.evaluated) / st.timeline().scale
        return [Decimal(str(el.t)) <= evaluated for el in elements]

    def _check_instants(self, entry: StreamEntry, elements: list[Element]) -> None:
        """Refuses a push that would make more than ``max_instants`` evaluation instants of a query due at once
        (a timestamp far ahead of the stream with a small slide)."""
        from rspark.rsp.profiles import get_profile
        from rspark.rsp.windows import Timeline, TimeSpec, parse_time, resolve_window

        st = self.live.streams.get(entry.iri)
        if not elements or st is None:
            return
        tl = st.timeline() if st.buffer.kind is not None else (
            Timeline.datetime() if elements[0].kind == "datetime" else Timeline.numeric(1))
        newest = max([Decimal(str(e.t)) for e in elements]
                     + ([Decimal(st.buffer.last) / tl.scale] if st.buffer.last is not None else [])
                     + ([entry.last_t] if entry.last_t is not None else []))
        try:
            mark = newest - Decimal(st.lateness_ticks()) / tl.scale
        except RsparkError:
            return
        first = min([Decimal(str(e.t)) for e in elements]
                    + ([Decimal(st.buffer.first) / tl.scale] if st.buffer.first is not None else [])
                    + ([entry.first_t] if entry.first_t is not None else []))
        for q in list(self.live.queries.values()):
            if q.stopped or entry.iri not in q.reads:
                continue
            last = q.times()[0]
            start = Decimal(parse_time(last, tl)) / tl.scale if last is not None else first
            for d in q.plan.dataset.windows:
                if d.stream.value != entry.iri:
                    continue
                try:
                    rw = resolve_window(d.spec, get_profile(q.profile), tl, first_ts=int(first * tl.scale))
                except RsparkError:
                    continue
                if not isinstance(rw, TimeSpec) or rw.slide <= 0:
                    continue
                due = int((mark - start) * tl.scale // rw.slide)
                if due > self.limits.max_instants:
                    raise ServiceError(422, f"the push would make {due} evaluation instants of query {q.name} due "
                                            f"at once (the limit is {self.limits.max_instants}: --max-instants); "
                                            "its newest timestamp is far ahead of the stream")

    def stream_view(self, entry: StreamEntry | None, iri: str, live_status: dict | None = None) -> dict:
        """A stream's declaration and counters; ``live_status``: live mode's status, when the caller has it."""
        st = self.live.streams.get(iri)
        status = (live_status or self.live.status())["streams"].get(iri, {})
        now = time.time()
        recent = sum(n for t, n in (entry.pushes if entry else ()) if now - t <= 60)
        span = min(60.0, max(1.0, now - self.started))
        return {
            "name": entry.name if entry else None, "iri": iri,
            "kind": _kind(st),
            "lateness": entry.lateness if entry else (st.lateness if st else 0),
            "arrival_time": entry.arrival_time if entry else False,
            "elements": status.get("elements", 0), "late": status.get("late", 0),
            "rejected": status.get("rejected", 0), "quarantined": status.get("quarantined", 0),
            "batches": status.get("batches", 0), "rate": round(recent / span, 3),
            "last": status.get("last"), "watermark": status.get("watermark"), "evaluated": status.get("evaluated"),
        }

    def streams_view(self) -> list[dict]:
        with self.lock:
            named = {s.iri: s for s in self.streams.values()}
        iris = list(dict.fromkeys(list(named) + list(self.live.streams)))
        status = self.live.status()
        return [self.stream_view(named.get(iri), iri, status) for iri in iris]

    def elements_view(self, name: str, limit: int) -> dict:
        entry = self.stream(name)
        with self.lock:
            recent = list(entry.recent)[-limit:] if limit > 0 else []
        st = self.live.streams.get(entry.iri)
        return {"name": name, "iri": entry.iri, "kind": _kind(st),
                "elements": [{"time": _json_time(el.time), "t": el.t, "triples": el.triples, "graph": el.graph,
                              "late": late} for el, late in recent]}

    # ------------------------------------------------------------------------------------------------ graphs

    def put_graph(self, name: str, body: bytes, media_type: str | None, iri: str | None, *,
                  save: bool = True) -> tuple[bool, int]:
        """Loads (or replaces) the static graph ``name``; returns whether it is new and its triples."""
        import pyoxigraph as ox

        _check_name(name, "graph")
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
        with self.live.lock:  # not during an evaluation: queries see the old graph or the new one, never half
            with self.lock:
                old = self.graphs.get(name)
                if old is not None and old["iri"] != iri:
                    os.remove(tmp)
                    raise ServiceError(409, f"graph {name} is <{old['iri']}>; delete it first to give it another IRI")
                os.replace(tmp, path)
                self.engine.drop_graph(iri)
                self.engine.load(path, graph=iri)
                self.graphs[name] = {"iri": iri, "path": path, "media_type": mt, "triples": len(triples),
                                     "loaded": time.time()}
        if old is not None and old["path"] != path:  # the engine no longer reads the old version's file
            _remove(old["path"])
        if save:
            self.save()
        return old is None, len(triples)

    def _put_graph_file(self, name: str, g: dict, *, save: bool) -> None:
        with open(g["path"], "rb") as f:
            self.put_graph(name, f.read(), g["media_type"], g["iri"], save=save)
        if g["path"] != self.graphs[name]["path"]:
            _remove(g["path"])  # the saved copy was copied to a new version

    def graph(self, name: str) -> dict:
        g = self.graphs.get(name)
        if g is None:
            raise ServiceError(404, f"no graph named {name} (load it with PUT /graphs/{name})")
        return g

    def delete_graph(self, name: str) -> None:
        g = self.graph(name)
        with self.live.lock:
            with self.lock:
                self.engine.drop_graph(g["iri"])
                self.graphs.pop(name, None)
        _remove(g["path"])
        self.save()

    # ------------------------------------------------------------------------------------------------ queries

    def register(self, name: str, text: str, profile: str | None, *, save: bool = True) -> QueryEntry:
        from rspark.syntax.translate import QuerySyntaxError, compile_query, ensure_evaluable
        from rspark.rsp.profiles import ProfileError, get_profile

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
            ensure_evaluable(plan, continuous=True, source=name)
        except QuerySyntaxError as exc:
            raise ServiceError(400, str(exc), line=getattr(exc, "line", None),
                               column=getattr(exc, "column", None)) from None
        except (ProfileError, RsparkError) as exc:
            raise ServiceError(400, str(exc)) from None
        self._check_cost(name, plan, profile)
        results = ResultLog(self.limits.keep_events, path=self._results_path(name))
        with self.live.lock:
            try:  # the log is the query's sink before a micro-batch can evaluate it
                q = self.live.register(text, name=name, profile=profile, sinks=(results,))
            except RsparkError as exc:
                results.close()
                raise ServiceError(400, str(exc)) from None
            results.resume(q.times()[0])  # the records held before a restart, as far as the query's progress goes
            entry = QueryEntry(name, text, profile, q, results)
            with self.lock:
                self.queries[name] = entry
            self.live.evaluate()  # what the buffers hold already
        if save:
            self.save()
        return entry

    def _results_path(self, name: str) -> str:
        """Where the records kept for resuming SSE clients of query ``name`` are (they survive a restart)."""
        return os.path.join(self.folder, "results", f"{name}.jsonl")

    def _check_cost(self, name: str, plan, profile: str | None) -> None:
        from rspark.rsp.profiles import get_profile
        from rspark.rsp.windows import CountSpec, Timeline, resolve_window

        for d in plan.dataset.windows:
            try:
                rw = resolve_window(d.spec, get_profile(profile or self.engine.profile), Timeline.datetime(),
                                    first_ts=0)
            except RsparkError:
                continue
            if isinstance(rw, CountSpec) and rw.size > self.limits.max_window_elements:
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
        self.query(name).query.paused = paused
        self.save()

    def add_observer(self, name: str, url: str, *, save: bool = True) -> ObserverSink:
        entry = self.query(name)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ServiceError(400, f"an observer is an http:// or https:// URL, not {url!r}")
        with self.lock:
            self._observer_ids += 1
            obs = ObserverSink(str(self._observer_ids), url)
            entry.observers[obs.id] = obs
        with self.live.lock:
            entry.query.sinks.append(obs)
        if save:
            self.save()
        return obs

    def delete_observer(self, name: str, ident: str) -> None:
        entry = self.query(name)
        with self.lock:
            obs = entry.observers.pop(ident, None)
        if obs is None:
            raise ServiceError(404, f"query {name} has no observer {ident}")
        with self.live.lock:
            if obs in entry.query.sinks:
                entry.query.sinks.remove(obs)
        obs.close()
        self.save()

    def query_view(self, entry: QueryEntry, full: bool = False, live_status: dict | None = None) -> dict:
        """A query's status (``full``: with its text, algebra, windows and observers); ``live_status``: live mode's
        status, when the caller has it."""
        q = entry.query
        live_status = live_status or self.live.status()
        status = live_status["queries"].get(entry.name, {})
        out = {
            "name": entry.name, "label": q.label, "profile": entry.profile, "reads": q.reads, "writes": q.writes,
            "paused": q.paused, "evaluations": status.get("evaluations", 0), "records": status.get("records", 0),
            "last": _json_time(status.get("last")), "lag": status.get("lag"), "late": status.get("late", 0),
            "elements": status.get("elements", 0), "latency_p50": status.get("latency_p50"),
            "latency_p99": status.get("latency_p99"), "errors": _errors(live_status["streams"], q.reads),
            "error": q.error, "consumed": status.get("consumed"),
            "sse_clients": len(entry.results.subscribers),
        }
        if full:
            from rspark.algebra.sse import to_sse

            out["query"] = entry.text
            out["algebra"] = to_sse(q.plan)
            out["windows"] = self._windows(entry)
            out["observers"] = [o.describe() for o in entry.observers.values()]
        return out

    def _windows(self, entry: QueryEntry) -> list[dict]:
        """The query's windows as the dashboard draws them: range and slide in the stream's unit."""
        from rspark.rsp.profiles import get_profile
        from rspark.rsp.windows import (
            CountSpec,
            IntervalSpec,
            LandmarkSpec,
            NowSpec,
            Timeline,
            TimeSpec,
            resolve_window,
        )

        out = []
        q = entry.query
        for d in q.plan.dataset.windows:
            st = self.live.streams.get(d.stream.value)
            tl = st.timeline() if st is not None and st.buffer.kind is not None else Timeline.datetime()
            first = st.buffer.first if st is not None else None
            item = {"name": getattr(d.name, "value", None), "stream": d.stream.value, "kind": None, "range": None,
                    "slide": None, "size": None}
            try:
                rw = resolve_window(d.spec, get_profile(q.profile), tl, first_ts=first or 0)
            except RsparkError:
                out.append(item)
                continue
            if isinstance(rw, TimeSpec):
                item.update(kind="time", range=_unit(rw.range, tl), slide=_unit(rw.slide, tl))
            elif isinstance(rw, CountSpec):
                item.update(kind="count", size=rw.size)
            elif isinstance(rw, LandmarkSpec):
                item.update(kind="landmark", start=_unit(rw.start, tl))
            elif isinstance(rw, IntervalSpec):
                item.update(kind="interval", start=_unit(rw.start, tl), end=_unit(rw.end, tl))
            elif isinstance(rw, NowSpec):
                item.update(kind="now")
            out.append(item)
        return out

    def queries_view(self) -> list[dict]:
        with self.lock:
            entries = list(self.queries.values())
        status = self.live.status()
        return [self.query_view(e, live_status=status) for e in entries]

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


def _errors(streams: dict, reads: list[str]) -> int:
    """Rejected elements and quarantined files of the streams a query reads (live mode's status per stream)."""
    return sum(streams.get(i, {}).get("rejected", 0) + streams.get(i, {}).get("quarantined", 0) for i in reads)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:  # gone already: nothing to remove
        pass


def _kind(st) -> str | None:
    """A live stream's kind of timestamps: "datetime", "numeric", or None before its first element."""
    if st is None or st.buffer.kind is None:
        return None
    return "datetime" if st.buffer.kind == "datetime" else "numeric"


def _unit(ticks: int, tl) -> int | float:
    value = Decimal(ticks) / tl.scale
    return int(value) if value == value.to_integral_value() else float(value)


def _json_time(value):
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, str):
        try:
            d = Decimal(value)
            return int(d) if d == d.to_integral_value() else float(d)
        except ArithmeticError:
            return value
    return value
