"""Element timestamps: a pushed element (rspark.service.elements) and a loaded one (rspark.spark.loading) are judged
by one parser, so an element one entry accepts is never refused, or placed at another instant, by the other."""

from __future__ import annotations

from decimal import Decimal

import pytest

from rspark.errors import DataError
from rspark.service.elements import parse_push
from rspark.spark.loading import rdf

XSD = "http://www.w3.org/2001/XMLSchema#"
PRED = "http://e/t"


def _pushed(lexical: str, datatype: str):
    """(kind, value) of a one-element push with this timestamp, or None when the push is refused."""
    body = f'<http://e/g> {{ <http://e/s> <http://e/p> <http://e/o> }}\n<http://e/g> <{PRED}> "{lexical}"^^<{datatype}> .\n'
    try:
        (element,) = parse_push(body.encode(), "application/trig", predicate=PRED, arrival_time=False, now=0).elements
    except DataError:
        return None
    if str(element.kind) == "datetime":
        return "datetime", Decimal(element.t)
    return "numeric", Decimal(element.time)


def _loaded(lexical: str, datatype: str):
    """(kind, value) of the timestamp as the loader reads it, or None when the loader rejects the element."""
    try:
        kind, value, exp = rdf.parse_timestamp(f'"{lexical}"^^<{datatype}>')
    except ValueError:
        return None
    if str(kind) == "datetime":
        return "datetime", Decimal(value)
    return "numeric", Decimal(value).scaleb(-exp)


@pytest.mark.parametrize(("lexical", "datatype"), [
    ("1e3", XSD + "integer"),  # not an xsd:integer
    ("1.5", XSD + "integer"),
    ("NaN", XSD + "decimal"),
    ("1.0000000000000000001", XSD + "decimal"),  # more digits than a tick count holds
    ("12345678901234567890", XSD + "integer"),
    ("2024-01-01", XSD + "dateTime"),  # a date, not a date-time
    ("2024-01-01T10:00:00+05", XSD + "dateTime"),  # an offset without minutes
    ("2000-01-01T24:00:00Z", XSD + "dateTime"),  # the end of the day
    ("1969-12-31T23:59:59.9995Z", XSD + "dateTime"),  # sub-millisecond before the epoch: floored
    ("+5", XSD + "integer"),
    ("7", XSD + "unsignedByte"),
])
def test_a_timestamp_is_judged_alike_by_push_and_load(lexical, datatype):
    assert _pushed(lexical, datatype) == _loaded(lexical, datatype)
