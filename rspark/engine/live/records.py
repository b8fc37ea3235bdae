"""JSON and CSV records that arrive as messages: an MQTT payload, a Server-Sent Event's data, a WebSocket message or
a Kafka record's value, on a stream with a mapping (docs/streams.md, "JSON and CSV records: mappings").

A mapped stream's messages are records, not RDF: each message is one text in the stream's record format (``json``
unless the source says ``csv`` or ``jsonl``: a source's ``payload_format``, a Kafka address's ``format=``; the
rules: :mod:`rspark.spark.loading.payload`), which the mapping turns into elements as it turns a pushed text's (a
JSON document's iterator may give several records, a CSV message has its header line unless the mapping names the
columns). A rejected record is warned of, kept and
counted and the message's other records go on; a message none of whose records maps is quarantined with the
reasons, and the messages after it flow on.

An element the mapping names no ``element`` template for is named from the message's identity in its source
(``urn:rspark:record:HASH:N``, N the record's number in the message), so two messages with the same text are two
elements.
"""

from __future__ import annotations

import hashlib

from rspark.errors import DataError, InputError


class NoRecordMapped(DataError):
    """A text none of whose records the stream's mapping maps: its message is the first problem's (and how many
    more there are); ``errors`` all of them (:class:`DataError`, naming where, line and record)."""

    def __init__(self, errors: list) -> None:
        more = f" (and {len(errors) - 1} more rejected record{'s' if len(errors) > 2 else ''})" if len(errors) > 1 \
            else ""
        super().__init__(f"{errors[0]}{more}")
        self.errors = list(errors)
        self.file, self.line = errors[0].file, errors[0].line


def message_base(*identity: object) -> str:
    """The names of a message's elements (``urn:rspark:record:HASH:``, a record's number follows): HASH from the
    message's identity in its source (a Kafka topic, partition and offset; an MQTT payload's digest; ...)."""
    digest = hashlib.sha1("\0".join(str(part) for part in identity).encode("utf-8", "surrogatepass")).hexdigest()
    return f"urn:rspark:record:{digest[:16]}:"


def map_messages(rows, mapping, fmt: str, pred: str, where: str):
    """The executors' side of a mapped Kafka source: ``rows`` (a record's value, topic, partition, offset) ->
    ``(partition, offset, N-Quads text, problems, failed)`` per record: ``problems`` the rejected records'
    ``(reason, file, line)`` (``file``: ``where`` and the record's place in the topic), ``failed`` the value when
    none of its records gave an element (None otherwise)."""
    # delayed: the mapping module imports PyYAML, loaded on the executors that map records only
    from rspark.spark.loading.mapping import convert_records

    for value, topic, partition, offset in rows:
        if value is None or not value.strip():
            continue
        place = f"{where} (topic {topic}, partition {partition}, offset {offset})"
        try:
            conv = convert_records(value, fmt, mapping, file=place, pred=pred,
                                   element_base=message_base(topic, partition, offset))
        except (DataError, InputError) as exc:  # not JSON; a CSV header without the mapping's columns
            yield partition, offset, "", [_problem(exc)], value
            continue
        problems = [_problem(e) for e in conv.errors]
        yield partition, offset, conv.nquads.decode("utf-8"), problems, (None if conv.nquads else value)


def _problem(exc: Exception) -> tuple:
    """A problem as the driver builds its :class:`DataError` again: (reason, file, line)."""
    if isinstance(exc, DataError):
        return exc.reason, exc.file, exc.line
    return str(exc), None, None
