"""Stream elements pushed over HTTP (``POST /streams/{name}``): parsed and checked before anything is accepted.

A push is accepted whole or refused whole: malformed RDF gives a :class:`~rspark.errors.DataError` with the line
and column, and an element without a usable timestamp names the element (docs/streams.md: one named graph per
element, its timestamp in the default graph). What is accepted is written to the stream's inbox as N-Quads, where
live mode loads it with the same loader as a replay. A timestamp is judged by the loader's own parser
(:func:`rspark.model.timestamps.parse_timestamp`), so a push accepted here is never refused by that load."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from rspark.errors import DataError
from rspark.model.codec import encode_literal
from rspark.model.time import TimeKind
from rspark.model.timestamps import format_millis, parse_validity
from rspark.model.xsd import XSD_DATETIME

# media type -> pyoxigraph format name
MEDIA_TYPES = {
    "application/trig": "TRIG",
    "application/n-quads": "N_QUADS",
    "text/x-nquads": "N_QUADS",
    "application/ld+json": "JSON_LD",
    "application/json": "JSON_LD",
}


@dataclass(frozen=True)
class Element:
    """One pushed element: its graph name, timestamp (the ISO 8601 text or the number), position on the time axis
    (``t``: epoch milliseconds, or the number) and number of triples."""

    graph: str
    time: str | Decimal
    t: float
    triples: int
    kind: TimeKind


@dataclass(frozen=True)
class Push:
    nquads: str
    elements: list[Element]


def parse_push(body: bytes, media_type: str | None, *, predicate: str, arrival_time: bool,
               now: float) -> Push:
    """The elements of a push body. ``media_type``: TriG, N-Quads or JSON-LD (``None`` or ``text/plain``: N-Quads
    when the first statement looks like one, else TriG). Elements without a timestamp get ``now`` (seconds since
    the epoch) when ``arrival_time``, else the push is refused."""
    # delayed: pyoxigraph (rdf imports it too); `rspark serve` imports the service to check options before Spark
    import pyoxigraph as ox

    from rspark.spark.loading.rdf import document_problem

    body, media_type = _converted(body, media_type, predicate)
    fmt = _format(body, media_type)
    try:
        quads = list(ox.parse(body, format=getattr(ox.RdfFormat, fmt)))
    except SyntaxError as exc:
        reason, line, column = document_problem(exc, body)
        raise DataError(f"malformed {_NAMES[fmt]}: {reason}", file="request body", line=line,
                        column=column) from None
    except ValueError as exc:  # not UTF-8, ...
        raise DataError(f"unreadable {_NAMES[fmt]}: {exc}", file="request body") from None
    pred = ox.NamedNode(predicate)
    counts: dict = {}
    for q in quads:
        if not isinstance(q.graph_name, ox.DefaultGraph):
            counts[q.graph_name] = counts.get(q.graph_name, 0) + 1
    if not counts:
        raise DataError("no stream element: the data has no named graph (an element is a named graph with a "
                        f"<{predicate}> timestamp in the default graph)", file="request body")
    stamps: dict = {}
    for q in quads:
        if isinstance(q.graph_name, ox.DefaultGraph) and q.predicate == pred and q.subject in counts:
            stamps.setdefault(q.subject, set()).add(q.object)
    elements, kinds = [], set()
    stamp = None
    for g, n in counts.items():
        found = stamps.get(g, set())
        if not found:
            if not arrival_time:
                raise DataError(f"no timestamp: the element has no <{predicate}> triple in the default graph "
                                "(declare the stream with \"arrival_time\": true to stamp it on arrival)",
                                file="request body", element=str(g))
            if stamp is None:
                iso = datetime.fromtimestamp(now, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                stamp = ox.Literal(iso, datatype=ox.NamedNode(XSD_DATETIME))
            quads.append(ox.Quad(g, pred, stamp, ox.DefaultGraph()))
            found = {stamp}
        if len(found) > 1:
            raise DataError(f"{len(found)} timestamps: an element has one", file="request body", element=str(g))
        (lit,) = found
        value, t, kind = _timestamp(lit, g)
        kinds.add(kind)
        elements.append(Element(_name(g), value, t, n, kind))
    if len(kinds) > 1:
        raise DataError("date-time and numeric timestamps in one push: a stream has one kind", file="request body")
    elements.sort(key=lambda e: e.t)
    return Push(ox.serialize(quads, format=ox.RdfFormat.N_QUADS).decode("utf-8"), elements)


_NAMES = {"TRIG": "TriG", "N_QUADS": "N-Quads", "JSON_LD": "JSON-LD"}


def _converted(body: bytes, media_type: str | None, predicate: str) -> tuple[bytes, str | None]:
    """An RDF Message Log (``application/trig; version=1.2-messages``, or a body announcing ``VERSION
    "1.2-messages"``), NDJSON-LD (``application/x-ld+ndjson``) or JSON-LD body as N-Quads
    (:mod:`rspark.spark.loading.messages`); any other as it is. A problem in one message refuses the push."""
    # delayed: pyoxigraph, as in parse_push
    from rspark.spark.loading import messages

    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body, media_type  # parse_push reports it
    mt = (media_type or "").split(";")[0].strip().lower()
    fmt = messages.media_type_format(media_type, text)
    if fmt is None and mt in ("", "text/plain", "application/octet-stream"):
        fmt = messages.pushed_format(text, None)
    if fmt is None:
        return body, media_type
    conv = messages.convert_push(text, fmt, stream="", pred=predicate, file="request body")
    if conv.errors:
        raise conv.errors[0]
    return conv.nquads, "application/n-quads"


def _format(body: bytes, media_type: str | None) -> str:
    mt = (media_type or "").split(";")[0].strip().lower()
    if mt in MEDIA_TYPES:
        return MEDIA_TYPES[mt]
    if mt and mt not in ("text/plain", "application/octet-stream"):
        raise DataError(f"Content-Type {mt}: a push is TriG (application/trig), N-Quads (application/n-quads) or "
                        "JSON-LD (application/ld+json)", file="request body")
    for line in body.decode("utf-8", "replace").splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        is_nq = s.endswith(".") and "{" not in s and not s.lower().startswith(("@prefix", "prefix", "@base", "base"))
        return "N_QUADS" if is_nq else "TRIG"
    return "TRIG"


def _name(g) -> str:
    # delayed: pyoxigraph, as in parse_push
    import pyoxigraph as ox

    return g.value if isinstance(g, ox.NamedNode) else "_:" + g.value


def _timestamp(lit, g) -> tuple[str | Decimal, float, TimeKind]:
    """The timestamp ``lit`` of element ``g``: its value (the ISO 8601 text in UTC, to the millisecond, or the
    exact number), its position on the time axis (epoch milliseconds, or the number) and its kind."""
    # delayed: pyoxigraph, as in parse_push
    import pyoxigraph as ox

    if not isinstance(lit, ox.Literal):
        raise DataError(f"the timestamp {lit} is not a literal", file="request body", element=str(g))
    try:
        # (an element valid over an interval is placed at its start)
        kind, value, exp, _, _ = parse_validity(encode_literal(lit.value, lit.datatype.value, lit.language))
    except ValueError as exc:
        raise DataError(f"bad timestamp: {exc}", file="request body", element=str(g)) from None
    if kind is TimeKind.DATETIME:
        return format_millis(value), float(value), kind
    number = Decimal(value).scaleb(-exp)
    return number, float(number), kind
