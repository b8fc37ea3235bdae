"""The formats of a stream's messages (a push, an MQTT payload, an event, a WebSocket message, a Kafka record's
value): RDF, or JSON, JSON Lines or CSV records that a mapping turns into elements (docs/streams.md, "JSON and CSV
records"). Pure Python, no import beyond rspark's errors: the live sources, the command line and the service check
a payload format by the same rules before anything starts."""

from __future__ import annotations

from rspark.errors import InputError

RECORD_FORMATS = ("csv", "json", "jsonl")  # records a mapping maps
RDF_FORMATS = ("trig", "nquads")  # what an MQTT source's payload format names without a mapping
DEFAULT_RECORD_FORMAT = "json"  # a mapped message source's records unless its payload format says otherwise


def message_format(spec: str, payload_format: str | None, mapping, *, rdf: bool = True) -> str | None:
    """The format of a message source's messages: a mapped stream's record format (``payload_format``, default
    ``json``), or the RDF syntax ``payload_format`` names (``trig``, ``nquads``; ``rdf``: whether the source takes
    one), or None (RDF told from each message). An :class:`InputError` names a format that does not go with the
    stream."""
    fmt = payload_format.strip().lower() if isinstance(payload_format, str) else payload_format
    if fmt == "ndjson":
        fmt = "jsonl"
    if mapping is not None:
        if fmt is None:
            return DEFAULT_RECORD_FORMAT
        if fmt not in RECORD_FORMATS:
            raise InputError(f"source {spec!r}: the stream maps records: its messages are csv, json or jsonl, not "
                             f"{payload_format!r}")
        return fmt
    if fmt is None:
        return None
    if fmt in RECORD_FORMATS:
        raise InputError(f"source {spec!r}: {fmt} messages need a mapping on the stream (--mapping IRI=FILE, "
                         "live_stream(iri, mapping=FILE), a declaration's \"mapping\")")
    if not rdf or fmt not in RDF_FORMATS:
        named = "trig or nquads, or with a mapping csv, json or jsonl" if rdf else "with a mapping csv, json or jsonl"
        raise InputError(f"source {spec!r}: the payload format is {named}, not {payload_format!r}")
    return fmt
