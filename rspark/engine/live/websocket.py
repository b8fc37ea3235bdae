"""WebSocket as a live source: ``ws://HOST:PORT/PATH`` (``wss://`` over TLS), read with the ``websockets``
library's synchronous client in a thread of its own.

Each message is one push into the stream's inbox (``LiveRunner.push``, the one path into the buffer every source
takes), read as a Server-Sent Events source reads an event's data (:func:`rspark.engine.live.sse.event_push`): a
TripleWave-style JSON-LD document (its named graphs the elements, their timestamps in the default graph), RDF text
as ``Engine.push`` takes it (TriG, N-Quads, an RDF Message Log announced by its first statement, ``VERSION
"1.2-messages"``), or a record of another rspark's CONSTRUCT or DESCRIBE query (one element, named ``<URL#TIME>``).
When the server's handshake response carries the header ``RDF-Message-Content-Type`` (a media type:
``application/trig``, ``application/n-quads; version=1.2-messages``, ``application/ld+json``,
``application/x-ld+ndjson``, ...), every message is read in that format; a media type that is no RDF syntax rspark
reads makes every message of that connection quarantined with that reason.

A binary message is decoded as UTF-8 and read as a text message is (servers that send text in binary frames); one
that is not UTF-8 is quarantined with the reason (its bytes kept). A message that is not RDF (a SELECT query's
record, a broken JSON document) is quarantined with the reason, as a file that does not parse is, and counted in
the source's ``rejected``; the messages after it flow on. RDF text that does not parse is written and quarantined by
the stream's loader (counted in the stream's ``quarantined``).

WebSocket has no standard way to ask for the messages after a given one: a message the server sends while rspark is
not connected (the server gone, a reconnection's back-off, rspark stopped) is not received (at most once); a message
received is written into the stream's inbox before the next one is read, and the inbox is in the checkpoint, so a
message written before rspark is killed is read after a restart on the same checkpoint; rspark never writes a
message twice (a server that sends its history again to each new connection gives its elements again). A
connection that fails or ends is logged and tried again after 1 s, doubling to 30 s; the source's state (connected,
error, counters) is in ``live_status()["streams"][IRI]["sources"]``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from urllib.parse import urlunsplit

from rspark.engine.live.records import message_base
from rspark.engine.live.registry import stream_key
from rspark.engine.live.sse import event_push, split_url
from rspark.errors import DataError, InputError
from rspark.spark.loading.payload import message_format

log = logging.getLogger("rspark.live")

SCHEMES = ("ws://", "wss://")
RECONNECT = (1.0, 30.0)  # seconds: the first delay before connecting again, and the longest
HEADER = "RDF-Message-Content-Type"
MAX_MESSAGE = 64 * 1024 * 1024  # bytes: a larger message closes the connection (code 1009), logged, then reconnected
OPEN_TIMEOUT = 10.0  # seconds for the TCP, TLS and WebSocket handshakes
# an RDF syntax's media type without a messages version label -> the format Engine.push reads it in
_SYNTAXES = {"application/trig": "trig", "text/turtle": "trig", "application/n-quads": "nquads",
             "application/n-triples": "nquads"}


def parse_ws(spec: str) -> dict:
    """``ws://HOST[:PORT]/PATH[?QUERY]`` or ``wss://...`` -> {"url": the URL}; an :class:`InputError` naming what
    is wrong."""
    text = spec.strip()
    usage = "expected ws://HOST:PORT/PATH or wss://HOST:PORT/PATH"
    if not text.startswith(SCHEMES):
        raise InputError(f"source {spec!r}: {usage}")
    parts = split_url(spec, text, usage)
    if parts.fragment or text.endswith("#"):
        raise InputError(f"source {spec!r}: a WebSocket URL has no fragment (#...; RFC 6455, section 3)")
    if any(c.isspace() or ord(c) < 32 for c in text):
        raise InputError(f"source {spec!r}: a URL holds no white space or control character")
    return {"url": urlunsplit(parts._replace(path=parts.path or "/"))}


def content_format(media_type: str, text: str) -> str | None:
    """The format ``Engine.push`` reads a message in whose connection's ``RDF-Message-Content-Type`` is
    ``media_type``: a converted one (``trig-messages``, ``jsonld``, ``ndjsonld``, ...), ``trig`` or ``nquads``; a
    :class:`DataError` for a media type that is no RDF syntax rspark reads."""
    # delayed: pyoxigraph (the messages module parses with it), for a server that names a content type only
    from rspark.spark.loading import messages

    converted = messages.media_type_format(media_type, text)
    if converted is not None:
        return converted
    main = media_type.split(";", 1)[0].strip().lower()
    if main in _SYNTAXES:
        return _SYNTAXES[main]
    raise DataError(f"the server's {HEADER} {media_type!r} is not an RDF syntax rspark reads (TriG, Turtle, "
                    "N-Quads, N-Triples, JSON-LD, NDJSON-LD; a version=...-messages parameter for an RDF Message Log)")


def utf8_text(data: str | bytes) -> str:
    """A message's text: a binary message decoded as UTF-8 (a :class:`DataError` when it is not)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"a binary message of {len(raw)} bytes that is not UTF-8 text (byte {exc.start}: "
                            f"{raw[exc.start:exc.start + 1]!r})") from None
    return data


def message_push(data: str | bytes, url: str, predicate: str, salt: str,
                 media_type: str | None = None) -> tuple[str, str | None]:
    """What one message pushes: (text, format for ``Engine.push``, None for RDF text told by its first statement).
    A :class:`DataError` for a message that is not RDF: a binary one that is not UTF-8, a record of a SELECT or ASK
    query, or any message of a connection whose ``media_type`` rspark does not read."""
    data = utf8_text(data)
    if media_type is None:
        return event_push(data, url, predicate, salt)
    fmt = content_format(media_type, data)
    if fmt == "jsonld":  # (a chained record is JSON too: recognised as it is without the header)
        return event_push(data, url, predicate, salt)
    return data, fmt


class WebSocketSource:
    """Reads the messages of the WebSocket at ``spec`` into the live stream ``iri`` (see the module's
    documentation)."""

    def __init__(self, runner, iri: str, spec: str, *, payload_format: str | None = None, **options) -> None:
        self.runner, self.iri, self.spec = runner, iri, spec
        self.url = parse_ws(spec)["url"]
        self.stream = runner.stream(iri, **options)
        # a mapped stream's record format (rspark.engine.live.records); None: RDF, told from each message
        self.records = message_format(spec, payload_format, self.stream.mapping, rdf=False)
        self.key = key = hashlib.sha1(f"{iri}\0{self.url}".encode()).hexdigest()[:12]
        self.folder = os.path.join(runner.checkpoint, "streams", stream_key(iri))
        os.makedirs(self.folder, exist_ok=True)
        self.nonce = os.urandom(8).hex()  # the blank nodes of chained records: their own in each run
        self.connected = False
        self.error: str | None = None
        self.media_type: str | None = None
        self.counters = {"messages": 0, "binary": 0, "rejected": 0, "connections": 0, "disconnections": 0}
        self.delay = RECONNECT[0]
        self.stopping = threading.Event()
        self.stopped = False  # (set by LiveRunner.drop: nothing more is written)
        self.connection = None
        self.thread = threading.Thread(target=self._run, name=f"rspark-ws-{key}", daemon=True)
        self.stream.feeds.append(self)

    def start(self) -> WebSocketSource:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.stopped = True
        connection = self.connection
        if connection is not None:
            connection.close()  # (the reading thread's iteration ends)
        self.thread.join(timeout=5)

    def status(self) -> dict:
        return {"kind": "websocket", "source": self.spec, "connected": self.connected, "error": self.error,
                "content_type": self.media_type, **self.counters}

    # ------------------------------------------------------------------------------------------------ reading

    def _run(self) -> None:
        # delayed: websockets, for a ws:// source only (rspark run imports the sources before Spark starts)
        from websockets.exceptions import ConnectionClosedOK, WebSocketException

        while not self.stopping.is_set():
            try:
                reason = self._read()
            except ConnectionClosedOK as exc:
                reason = f"the server closed the connection ({exc})"
            except (OSError, WebSocketException, ValueError) as exc:
                reason = f"{type(exc).__name__}: {exc}" if not str(exc) else str(exc)
            self.connection = None
            if self.stopping.is_set():
                break
            if self.connected:
                self.counters["disconnections"] += 1
            self.connected = False
            self.error = reason
            log.warning("<%s>: the WebSocket %s: %s; connecting again in %.0f s", self.iri, self.url, reason,
                        self.delay)
            self.stopping.wait(self.delay)
            self.delay = min(RECONNECT[1], self.delay * 2)
        self.connected = False

    def _read(self) -> str:
        """Reads one connection's messages until it ends; returns how it ended."""
        # delayed: websockets, for a ws:// source only (as in _run)
        from websockets.sync.client import connect

        with connect(self.url, open_timeout=OPEN_TIMEOUT, close_timeout=2, max_size=MAX_MESSAGE) as connection:
            self.connection = connection
            if self.stopping.is_set():  # (stop() came during the handshake)
                return "stopped"
            self.media_type = connection.response.headers.get(HEADER)
            self.connected, self.error, self.delay = True, None, RECONNECT[0]
            self.counters["connections"] += 1
            if self.media_type is not None:
                try:
                    content_format(self.media_type, "")
                except DataError as exc:
                    self.error = str(exc)
                    log.warning("<%s>: the WebSocket %s: %s; its messages are quarantined", self.iri, self.url, exc)
            log.info("<%s>: reading the WebSocket %s%s", self.iri, self.url,
                     f" ({HEADER}: {self.media_type})" if self.media_type else "")
            for message in connection:
                if self.stopping.is_set():
                    return "stopped"
                self._message(message)
        code, why = connection.close_code, connection.close_reason
        return f"the server closed the connection (code {code}{f': {why}' if why else ''})"

    def _message(self, data: str | bytes) -> None:
        """One message: written into the inbox, or quarantined (not RDF)."""
        self.counters["messages"] += 1
        number = self.counters["messages"]
        if isinstance(data, bytes):
            self.counters["binary"] += 1
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        salt = hashlib.sha1(f"{self.nonce}\0{number}\0{text}".encode()).hexdigest()[:10]
        try:
            if self.records is None and self.stream.mapping is not None:  # mapped after the source started
                self.records = message_format(self.spec, None, self.stream.mapping)
            if self.records is not None:  # a record (or records) the stream's mapping maps
                pushed, fmt = utf8_text(data), self.records
            else:
                pushed, fmt = message_push(data, self.url, self.stream.timestamp_predicate, salt, self.media_type)
            with self.stream.inbox_lock:
                if self.stopped:  # the stream was dropped
                    return
                self.runner.push(self.iri, pushed, format=fmt, where=f"{self.url} message {number}",
                                 element_base=message_base(self.url, self.nonce, number))
        except (DataError, InputError, SyntaxError, ValueError) as exc:
            self.counters["rejected"] += 1
            self._quarantine(number, data, exc)

    def _quarantine(self, number: int, data: str | bytes, exc: Exception) -> None:
        """A message that is not RDF: its data (bytes as they came) and the reason go to the checkpoint's
        quarantine, as a file's."""
        name = f"ws-{self.key}-message-{number}.{'txt' if isinstance(data, str) else 'bin'}"
        reason = exc if self.records is not None and isinstance(exc, DataError) and exc.file else \
            DataError(f"message {number}: {exc}", file=self.url)  # ("URL: message N: ...")
        self.runner.quarantine_message(self.stream, name, data, [reason])
