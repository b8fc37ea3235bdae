"""Server-Sent Events as a live source: ``sse://HOST:PORT/PATH`` (``sses://`` over TLS), read as the HTML
standard's EventSource reads it (``data:`` lines joined, ``id:``, ``event:``, ``retry:``; comments ignored).

Each event is one push into the stream's inbox (``LiveRunner.push``, the one path into the buffer every source
takes): a record of another rspark's ``GET /queries/NAME/results`` whose query is a CONSTRUCT or DESCRIBE (services
chained: the record is one element, named ``<URL#TIME>``, stamped with the record's instant, its blank nodes its
own), or RDF text as ``Engine.push`` takes it (TriG, N-Quads, an RDF Message Log), or a JSON-LD document (a
TripleWave feed). A record of a SELECT or ASK query is not RDF: it is quarantined with the reason, as a data item
that does not parse is; the events after it flow on. An ``event: gap`` (the producer dropped records it no longer
holds) is counted and logged.

Resuming: the id of the last event written goes into the name of the inbox file it was written to (hex) and into
``CHECKPOINT/streams/<key>/sse-<hash>.json``; a reconnection, after a dropped connection or a restart on the
checkpoint, sends it as ``Last-Event-ID`` (read from the newest of the state file, the inbox's files and the
stream's last applied files), so a server that honours it (rspark's does) sends each event once. A connection that
fails or ends is logged and tried again after 1 s, doubling to 30 s (or the server's ``retry:``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import urllib.error
import urllib.request
from decimal import Decimal, InvalidOperation
from urllib.parse import quote, urlsplit

from rspark.engine.live.files import save_json
from rspark.engine.live.records import message_base
from rspark.engine.live.registry import stream_key
from rspark.errors import DataError, InputError
from rspark.spark.loading.payload import message_format

log = logging.getLogger("rspark.live")

SCHEMES = {"sse://": "http://", "sses://": "https://"}
RECONNECT = (1.0, 30.0)  # seconds: the first delay before connecting again, and the longest
XSD = "http://www.w3.org/2001/XMLSchema#"


def parse_sse(spec: str) -> dict:
    """``sse://HOST[:PORT]/PATH`` or ``sses://...`` -> {"url": the http(s) URL}; an :class:`InputError` naming
    what is wrong."""
    text = spec.strip()
    for scheme, http in SCHEMES.items():
        if text.startswith(scheme):
            url = http + text[len(scheme):]
            break
    else:
        raise InputError(f"source {spec!r}: expected sse://HOST:PORT/PATH or sses://HOST:PORT/PATH")
    parts = split_url(spec, url, "expected sse://HOST:PORT/PATH")
    return {"url": url if parts.path else url + "/"}


def split_url(spec: str, url: str, usage: str):
    """``url`` (of the source ``spec``) split (``urllib.parse.urlsplit``), with a host and a port from 1 to 65535 if
    any; else an InputError naming ``spec`` (``usage``: the forms it takes)."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # a bracketed host that is not an IPv6 address
        raise InputError(f"source {spec!r}: {exc} ({usage})") from None
    try:
        port = parts.port
    except ValueError:
        raise InputError(f"source {spec!r}: the port must be a number from 1 to 65535") from None
    if not parts.hostname:
        raise InputError(f"source {spec!r}: the host is missing ({usage})")
    if port == 0:
        raise InputError(f"source {spec!r}: the port must be a number from 1 to 65535")
    return parts


def record_nquads(doc: dict, url: str, predicate: str, salt: str) -> str:
    """An rspark record of a CONSTRUCT or DESCRIBE query (``{"query", "time", "triples"}``) as one element in
    N-Quads: its triples in the graph ``<URL#TIME>``, stamped with the record's instant by ``predicate``; blank
    node labels made the element's own with ``salt``."""
    # delayed: pyoxigraph, for a chained record only; rspark run imports the sources before Spark starts
    import pyoxigraph as ox

    time = doc["time"]
    if isinstance(time, str):
        stamp = ox.Literal(time, datatype=ox.NamedNode(XSD + "dateTime"))
    elif isinstance(time, (int, float)) and not isinstance(time, bool):
        try:
            value = Decimal(str(time))
        except InvalidOperation:
            raise DataError(f"the record's time {time!r} is not a number") from None
        if not value.is_finite():
            raise DataError(f"the record's time {time!r} is not a number")
        kind = "integer" if value == value.to_integral_value() else "decimal"
        stamp = ox.Literal(str(int(value)) if kind == "integer" else str(value), datatype=ox.NamedNode(XSD + kind))
    else:
        raise DataError(f"the record's time {time!r} is neither a date-time nor a number")
    lines = doc.get("triples")
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise DataError("the record's triples are not a list of N-Triples lines")
    graph = ox.NamedNode(f"{url}#{quote(str(time), safe='')}")

    def own(term):
        return ox.BlankNode(f"{term.value}x{salt}") if isinstance(term, ox.BlankNode) else term

    try:
        triples = list(ox.parse("\n".join(lines).encode("utf-8"), format=ox.RdfFormat.N_TRIPLES))
    except SyntaxError as exc:
        raise DataError(f"the record's triples do not parse: {exc}") from None
    quads = [ox.Quad(own(t.subject), t.predicate, own(t.object), graph) for t in triples]
    quads.append(ox.Quad(graph, ox.NamedNode(predicate), stamp, ox.DefaultGraph()))
    return ox.serialize(quads, format=ox.RdfFormat.N_QUADS).decode("utf-8")


def event_push(data: str, url: str, predicate: str, salt: str) -> tuple[str, str | None]:
    """What an event's data pushes: (text, format for ``Engine.push``: ``nquads``, ``jsonld`` or None for RDF
    text told by its first statement). A :class:`DataError` for a record that is not RDF."""
    head = data.lstrip()[:1]
    if head in ("{", "["):
        try:
            doc = json.loads(data)
        except ValueError:
            return data, "jsonld"  # the JSON-LD reader names the problem
        if isinstance(doc, dict) and "query" in doc and "time" in doc:
            if "triples" in doc:
                return record_nquads(doc, url, predicate, salt), "nquads"
            what = "quads (a template with GRAPH blocks)" if "quads" in doc else "solutions or a boolean"
            raise DataError(f"an rspark record of query {doc['query']!r} at {doc['time']} holds {what}, not one "
                            "graph: chain the results of a CONSTRUCT query (REGISTER STREAM ... AS CONSTRUCT)")
        return data, "jsonld"
    return data, None


def id_tag(event_id: str) -> str:
    """An event id as the tag of an inbox file's name (hex of its UTF-8; an id is at most 100 bytes here)."""
    return "sse" + event_id.encode("utf-8").hex()


def tag_id(name: str) -> str | None:
    """The event id in an inbox file's name, None when it has none."""
    stem = os.path.basename(name).rsplit(".", 1)[0]
    tag = stem.rsplit("-", 1)[-1]
    if not tag.startswith("sse"):
        return None
    try:
        return bytes.fromhex(tag[3:]).decode("utf-8")
    except ValueError:
        return None


class SseSource:
    """Reads the event stream at ``spec`` into the live stream ``iri`` (see the module's documentation)."""

    def __init__(self, runner, iri: str, spec: str, *, payload_format: str | None = None, **options) -> None:
        self.runner, self.iri, self.spec = runner, iri, spec
        self.url = parse_sse(spec)["url"]
        self.stream = runner.stream(iri, **options)
        # a mapped stream's record format (rspark.engine.live.records); None: RDF, told from each event
        self.records = message_format(spec, payload_format, self.stream.mapping, rdf=False)
        key = hashlib.sha1(f"{iri}\0{self.url}".encode()).hexdigest()[:12]
        folder = os.path.join(runner.checkpoint, "streams", stream_key(iri))
        os.makedirs(folder, exist_ok=True)
        self.state_path = os.path.join(folder, f"sse-{key}.json")
        self.last_id = self._resume_id()
        self.connected = False
        self.error: str | None = None
        self.counters = {"events": 0, "gaps": 0, "rejected": 0, "connections": 0, "disconnections": 0}
        self.delay = RECONNECT[0]
        self.stopping = threading.Event()
        self.response = None
        self.thread = threading.Thread(target=self._run, name=f"rspark-sse-{key}", daemon=True)
        self.stream.feeds.append(self)

    def start(self) -> SseSource:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        response = self.response
        if response is not None:
            try:
                response.close()
            except OSError:  # closed already
                pass
        self.thread.join(timeout=5)

    def status(self) -> dict:
        return {"kind": "sse", "source": self.spec, "connected": self.connected, "error": self.error,
                "last_event_id": self.last_id, **self.counters}

    # ----------------------------------------------------------------------------------------------- resuming

    def _resume_id(self) -> str | None:
        """The id of the last event written: the newest of the state file's, the inbox's files' and the stream's
        last applied files' (their names sort in the order they were written)."""
        found: list[tuple[str, str]] = []
        if os.path.exists(self.state_path):
            with open(self.state_path, encoding="utf-8") as f:
                saved = json.load(f)
            if saved.get("id") is not None:
                found.append((saved.get("file", ""), saved["id"]))
        names = list(self.stream.inbox_applied)
        if os.path.isdir(self.stream.inbox):
            names += [n.lstrip(".") for n in os.listdir(self.stream.inbox)]
        for name in names:
            event_id = tag_id(name)
            if event_id is not None:
                found.append((os.path.basename(name), event_id))
        return max(found)[1] if found else None

    # ------------------------------------------------------------------------------------------------ reading

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._read()
                reason = "the server ended the stream"
            except (OSError, urllib.error.URLError, ValueError) as exc:
                reason = str(exc)
            if self.stopping.is_set():
                break
            if self.connected:
                self.counters["disconnections"] += 1
            self.connected = False
            self.error = reason
            log.warning("<%s>: the event stream %s: %s; connecting again in %.0f s", self.iri, self.url, reason,
                        self.delay)
            self.stopping.wait(self.delay)
            self.delay = min(RECONNECT[1], self.delay * 2)

    def _read(self) -> None:
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self.last_id is not None:
            headers["Last-Event-ID"] = self.last_id
        request = urllib.request.Request(self.url, headers=headers)
        with urllib.request.urlopen(request, timeout=120) as response:
            self.response = response
            self.connected, self.error, self.delay = True, None, RECONNECT[0]
            self.counters["connections"] += 1
            log.info("<%s>: reading the event stream %s (from event %s)", self.iri, self.url, self.last_id)
            data: list[str] = []
            kind, event_id = "message", self.last_id
            for raw in response:
                if self.stopping.is_set():
                    return
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not line:
                    if data:
                        self._event(kind, event_id, "\n".join(data))
                    data, kind = [], "message"
                    continue
                if line.startswith(":"):
                    continue
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data":
                    data.append(value)
                elif field == "event":
                    kind = value or "message"
                elif field == "id" and "\0" not in value:
                    event_id = value
                elif field == "retry" and value.isdigit():
                    self.delay = max(0.1, int(value) / 1000)

    def _event(self, kind: str, event_id: str | None, data: str) -> None:
        """One dispatched event: written into the inbox (its id in the file's name, then in the state file), or
        counted (a gap) or quarantined (not RDF)."""
        self.counters["events"] += 1
        if kind == "gap":
            self.counters["gaps"] += 1
            log.warning("<%s>: the event stream %s says records were dropped before this connection: %s", self.iri,
                        self.url, data)
            self._written(event_id, None)
            return
        tag = id_tag(event_id) if event_id is not None and len(event_id.encode("utf-8")) <= 100 else None
        salt = hashlib.sha1(f"{event_id}\0{data}".encode()).hexdigest()[:10]
        try:
            if self.records is None and self.stream.mapping is not None:  # mapped after the source started
                self.records = message_format(self.spec, None, self.stream.mapping)
            if self.records is not None:  # a record (or records) the stream's mapping maps
                text, fmt = data, self.records
            else:
                text, fmt = event_push(data, self.url, self.stream.timestamp_predicate, salt)
            where = f"{self.url} event {event_id or self.counters['events']}"
            # the inbox reader removes a file only after its id is in the state file (or the last applied files)
            with self.stream.inbox_lock:
                path = self.runner.push(self.iri, text, format=fmt, tag=tag, where=where,
                                        element_base=message_base(self.url, event_id, self.counters["events"], data))
                self._written(event_id, path)
        except (DataError, InputError, SyntaxError, ValueError) as exc:
            self.counters["rejected"] += 1
            self._quarantine(event_id, data, exc)
            self._written(event_id, None)

    def _written(self, event_id: str | None, path: str | None) -> None:
        if event_id is None:
            return
        self.last_id = event_id
        save_json(self.state_path, {"id": event_id, "file": os.path.basename(path) if path else ""})

    def _quarantine(self, event_id: str | None, data: str, exc: Exception) -> None:
        """An event that gave no element (not RDF; no record mapped): its data and the reason go to the checkpoint's
        quarantine, as a file's."""
        reason = exc if self.records is not None and isinstance(exc, DataError) and exc.file else \
            DataError(f"event {event_id or self.counters['events']} of {self.url}: {exc}", file=self.url)
        self.runner.quarantine_message(self.stream, f"sse-event-{self.counters['events']}.txt", data, [reason])
