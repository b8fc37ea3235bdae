"""The XML Schema datatypes rspark reads (XSD 1.1 Part 2): their IRIs, and the groups the evaluator, the loader and
the service test a literal's datatype against. One list per meaning, so that a datatype is numeric, or an integer,
for every part of rspark alike."""

from __future__ import annotations

XSD = "http://www.w3.org/2001/XMLSchema#"

XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_FLOAT = XSD + "float"
XSD_DOUBLE = XSD + "double"
XSD_DATE = XSD + "date"
XSD_DATETIME = XSD + "dateTime"
XSD_DATETIMESTAMP = XSD + "dateTimeStamp"
XSD_DURATION = XSD + "duration"
XSD_DAYTIMEDURATION = XSD + "dayTimeDuration"
XSD_YEARMONTHDURATION = XSD + "yearMonthDuration"

# The datatypes derived from xsd:integer by restriction (XSD 1.1 Part 2, section 3.4.13 onwards): a literal of one
# of them is an integer for arithmetic, comparison and timestamps.
INTEGER_DERIVED = tuple(XSD + name for name in (
    "nonPositiveInteger", "negativeInteger", "long", "int", "short", "byte", "nonNegativeInteger",
    "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte", "positiveInteger"))
INTEGER_TYPES = frozenset((XSD_INTEGER, *INTEGER_DERIVED))

# The datatypes of an element's timestamp (docs/streams.md): a date-time, or an exact number (an integer or a
# decimal; a float or double is no instant: it is not exact).
DATETIME_TYPES = frozenset((XSD_DATETIME, XSD_DATETIMESTAMP))
EXACT_NUMBER_TYPES = frozenset((*INTEGER_TYPES, XSD_DECIMAL))

DURATION_TYPES = frozenset((XSD_DURATION, XSD_DAYTIMEDURATION, XSD_YEARMONTHDURATION))
