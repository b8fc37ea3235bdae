"""Element timestamps: a pushed element (rspark.service.elements) and a loaded one (rspark.spark.loading) are judged
by one parser, so an element one entry accepts is never refused, or placed at another instant, by the other."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rspark.errors import DataError
from rspark.model.timestamps import datetime_millis, format_millis, parse_timestamp
from rspark.model.xsd import DATETIME_TYPES, EXACT_NUMBER_TYPES, XSD_DOUBLE
from rspark.service.elements import parse_push

XSD = "http://www.w3.org/2001/XMLSchema#"
PRED = "http://e/t"


def _pushed(lexical: str, datatype: str):
    """(kind, value) of a one-element push with this timestamp, or None when the push is refused."""
    body = (f'<http://e/g> {{ <http://e/s> <http://e/p> <http://e/o> }}\n'
            f'<http://e/g> <{PRED}> "{lexical}"^^<{datatype}> .\n')
    try:
        (element,) = parse_push(body.encode(), "application/trig", predicate=PRED, arrival_time=False, now=0).elements
    except DataError:
        return None
    if str(element.kind) == "datetime":
        return "datetime", Decimal(element.t)
    return "numeric", Decimal(element.time)


def _loaded(lexical: str, datatype: str):
    """(kind, value) of the timestamp as the loader reads it (rspark.spark.loading.loader._check_rows and
    rspark.spark.loading.small), or None when the loader rejects the element."""
    try:
        kind, value, exp = parse_timestamp(f'"{lexical}"^^<{datatype}>')
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


_LEXICAL = st.one_of(
    st.from_regex(r"\A[+-]?[0-9]{1,22}(\.[0-9]{0,22})?([eE][+-]?[0-9]{1,3})?\Z"),
    st.from_regex(r"\A-?[0-9]{4,5}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?)?"
                  r"(Z|[+-][0-9]{2}(:[0-9]{2})?)?\Z"),
    st.datetimes().map(lambda d: d.isoformat()),
    st.sampled_from(["NaN", "INF", "-0", ".5", "5.", " 5", "0x10", "1_000", "٣"]),
    st.text(max_size=12).filter(lambda t: '"' not in t and "\\" not in t),
)


@settings(max_examples=400, deadline=None)
@given(_LEXICAL, st.sampled_from(sorted(DATETIME_TYPES | EXACT_NUMBER_TYPES | {XSD_DOUBLE})))
def test_any_timestamp_is_judged_alike_by_push_and_load(lexical, datatype):
    assert _pushed(lexical, datatype) == _loaded(lexical, datatype)


@pytest.mark.parametrize("text", ["2016-03-01T13:00:00.9996Z", "1969-12-31T23:59:59.9995Z", "2000-01-01T24:00:00Z",
                                  "2016-03-01T13:00:00.5+14:00"])
def test_a_query_instant_is_the_tick_of_an_element_with_the_same_timestamp(text):
    from rspark.syntax.parser import parse_query

    query = parse_query(f'PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :w ON :s [RANGE 5 STARTING AT "{text}"'
                        '^^<http://www.w3.org/2001/XMLSchema#dateTime>] WHERE { WINDOW :w { ?a ?b ?c } }')
    (window,) = query.dataset
    assert window.spec.start.value == _loaded(text, XSD + "dateTime")[1]


@pytest.mark.parametrize("lexical", ["0000-01-01T00:00:00", "-0001-12-31T23:59:59.999Z", "-0400-02-29T12:00:00Z"])
def test_a_year_before_1_is_judged_alike_by_push_and_load(lexical):
    """xsd:dateTime allows year 0000 and negative years: the loader reads them, and the push accepts them alike
    (its formatting of the time no longer goes through Python's datetime, whose years start at 1)."""
    assert _pushed(lexical, XSD + "dateTime") == _loaded(lexical, XSD + "dateTime") is not None


@pytest.mark.parametrize("ms, text", [
    (-48474835990425, "0433-11-22T15:46:49.575Z"),  # through a float of seconds: .574
    (-1, "1969-12-31T23:59:59.999Z"),
    (0, "1970-01-01T00:00:00Z"),
    (datetime_millis("0000-01-01T00:00:00Z"), "0000-01-01T00:00:00Z"),
    (datetime_millis("-0400-02-29T12:00:00Z"), "-0400-02-29T12:00:00Z"),
])
def test_milliseconds_are_formatted_exactly_in_any_year(ms, text):
    assert format_millis(ms) == text
