"""The text forms of instants, read and written: an element's timestamp literal (one parser for every entry: the
loader's Python workers, the service's push, live mode's batches), a time a user types (``--until``, ``--times``),
and a tick count formatted for records, JSON and status views.

The timestamp parser follows XSD 1.1 Part 2: an xsd:dateTime (or xsd:dateTimeStamp) by its lexical space (section
3.3.7), read exactly to the millisecond (finer digits floored), no timezone meaning UTC; a number is an xsd:decimal
or an integer type (:data:`~rspark.model.xsd.EXACT_NUMBER_TYPES`) in its lexical space, kept exact as a mantissa and
a decimal exponent. Pure Python (no PySpark): Python workers run it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from rspark.errors import RsparkError
from rspark.model.time import TimeKind, Timeline, WindowError, parse_duration, time_number, time_value_problem
from rspark.model.xsd import DATETIME_TYPES, EXACT_NUMBER_TYPES, XSD_DECIMAL

# (ASCII digits only: XSD's lexical spaces have no other digits, though Python's int() reads them)
_DATETIME = re.compile(r"(-?\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)

# the default timestamp predicate of a stream's elements
PROV_GENERATED_AT_TIME = "http://www.w3.org/ns/prov#generatedAtTime"

# A canonical xsd:integer / xsd:long timestamp of at most 17 digits: parse_timestamp gives (NUMERIC, int, 0). The
# loader reads such timestamps with Spark's and Arrow's own functions (a regular expression, then a cast).
PLAIN_INTEGER_STAMP = r'^"-?(0|[1-9][0-9]{0,16})"\^\^<http://www\.w3\.org/2001/XMLSchema#(integer|long)>$'


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, any year (H. Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400  # Python's floor division: the era of a negative year too
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of a day counted from 1970-01-01, any year (the inverse of
    :func:`days_from_civil`)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def month_days(y: int, m: int) -> int:
    """The number of days of month ``m`` of year ``y`` (proleptic Gregorian)."""
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    return 30 if m in (4, 6, 9, 11) else 31


class DateTimeError(ValueError):
    """A text in the shape of an xsd:dateTime that is none; ``reason`` names the part that is out of range."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def is_datetime_shaped(text: str) -> bool:
    """Whether ``text`` has the shape of an xsd:dateTime (its parts may still be out of range)."""
    return _DATETIME.fullmatch(text.strip()) is not None


def datetime_millis(lexical: str) -> int:
    """Epoch milliseconds (UTC) of an xsd:dateTime lexical form; no timezone means UTC; sub-millisecond digits
    are truncated towards the past (floor). Raises ValueError (a :class:`DateTimeError` for a part out of
    range)."""
    m = _DATETIME.fullmatch(lexical.strip())
    if m is None:
        raise ValueError(f"not an xsd:dateTime: {lexical!r}")
    year_s, mo, d, h, mi, s, frac, tz = m.groups()
    if year_s.lstrip("-").startswith("0") and len(year_s.lstrip("-")) > 4:
        raise DateTimeError(f"not an xsd:dateTime (year with a leading zero): {lexical!r}", "year with a leading zero")
    year, month, day, hour, minute, second = int(year_s), int(mo), int(d), int(h), int(mi), int(s)
    date = _date_problem(year, month, day)
    if date is not None:
        raise DateTimeError(f"not a valid date: {lexical!r} ({date})", date)
    time = _time_problem(hour, minute, second, frac)
    if time is not None:
        raise DateTimeError(f"not a valid time of day: {lexical!r} ({time})", time)
    millis = int((frac or "0")[:3].ljust(3, "0"))
    total = ((days_from_civil(year, month, day) * 24 + hour) * 60 + minute) * 60 + second
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        th, tm = int(tz[1:3]), int(tz[4:6])
        if tm > 59 or th > 14 or (th == 14 and tm):
            reason = f"timezone offset {tz} is beyond -14:00..+14:00"
            raise DateTimeError(f"not a valid timezone offset: {lexical!r} ({reason})", reason)
        total -= sign * (th * 3600 + tm * 60)
    return total * 1000 + millis


def _date_problem(year: int, month: int, day: int) -> str | None:
    if not 1 <= month <= 12:
        return f"month {month} is out of range"
    if not 1 <= day <= month_days(year, month):
        return f"day {day} is out of range for the month"
    return None


def _time_problem(hour: int, minute: int, second: int, frac: str | None) -> str | None:
    if minute > 59:
        return f"minute {minute} is out of range"
    if second > 59:
        return f"second {second} is out of range"
    if hour > 24 or (hour == 24 and (minute or second or (frac and int(frac)))):
        return f"hour {hour} is out of range (24 only in 24:00:00, the end of a day)"
    return None


def parse_timestamp(encoded: str) -> tuple[TimeKind, int, int]:
    """An encoded timestamp literal (:mod:`rspark.model.codec`) -> ``(DATETIME, epoch_ms, 0)`` or ``(NUMERIC,
    mantissa, exponent)`` where the number is exactly ``mantissa * 10**-exponent`` with no trailing zero digits in
    the mantissa's fraction (``exponent`` >= 0 is the number of digits after the point). Raises ValueError with a
    readable message."""
    if not encoded.startswith('"'):
        raise ValueError(f"the timestamp {encoded} is not a literal")
    cut = encoded.rfind('"')
    lexical = encoded[1:cut]
    suffix = encoded[cut + 1:]
    datatype = suffix[3:-1] if suffix.startswith("^^<") else None
    if datatype in DATETIME_TYPES:
        return TimeKind.DATETIME, datetime_millis(lexical), 0
    if datatype in EXACT_NUMBER_TYPES:
        mantissa, exp = _exact_number(lexical, datatype)
        return TimeKind.NUMERIC, mantissa, exp
    if datatype is not None:
        kind = f"of type <{datatype}>"
    else:
        kind = "a language-tagged string" if suffix.startswith("@") else "a plain string"
    raise ValueError(
        f"the timestamp {encoded} is {kind}; expected xsd:dateTime or a number (xsd:integer, xsd:decimal, xsd:long)"
    )


XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_NUMBER_END = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)", re.ASCII)


def parse_validity(encoded: str) -> tuple[TimeKind, int, int, int | None, int]:
    """An element's timestamp literal, a point or an interval: ``(kind, start, start_exp, end, end_exp)``, ``end``
    None for a point (:func:`parse_timestamp`'s values). An interval is a plain (or ``xsd:string``) literal in
    ISO 8601's forms ``start/end``, ``start/duration`` or ``duration/end`` with xsd:dateTime ends
    (``"2016-03-01T13:00:00Z/2016-03-01T13:00:10Z"``, the W3C RSP CG document's ``:atInterval`` example), or
    ``start/end`` with two numbers for a numeric stream (``"3/7"``); both ends are inside the interval, and the end
    is not before the start. Raises ValueError."""
    cut = encoded.rfind('"')
    suffix = encoded[cut + 1:]
    if not encoded.startswith('"') or "/" not in encoded[1:cut] or suffix not in ("", f"^^<{XSD_STRING}>"):
        kind, value, exp = parse_timestamp(encoded)
        return kind, value, exp, None, 0
    lexical = encoded[1:cut]
    first, _, second = lexical.partition("/")
    if "/" in second:
        raise ValueError(f"the interval {encoded} has more than one '/' (ISO 8601: start/end)")
    if _NUMBER_END.fullmatch(first.strip()) and _NUMBER_END.fullmatch(second.strip()):
        (start, e0), (end, e1) = (_exact_number(x.strip(), XSD_DECIMAL) for x in (first, second))
        if Decimal(end).scaleb(-e1) < Decimal(start).scaleb(-e0):
            raise ValueError(f"the interval {encoded} ends before it starts")
        return TimeKind.NUMERIC, start, e0, end, e1
    try:
        if first.strip()[:1] in ("P", "p"):
            end = datetime_millis(second)
            start = end - _duration_millis(first, encoded)
        else:
            start = datetime_millis(first)
            end = start + _duration_millis(second, encoded) if second.strip()[:1] in ("P", "p") \
                else datetime_millis(second)
    except DateTimeError as exc:
        raise DateTimeError(f"the interval {encoded}: {exc}", exc.reason) from None
    except ValueError as exc:
        raise ValueError(f"the interval {encoded} is not ISO 8601 start/end, start/duration or duration/end "
                         f"of xsd:dateTime values ({exc})") from None
    if end < start:
        raise ValueError(f"the interval {encoded} ends before it starts")
    return TimeKind.DATETIME, start, 0, end, 0


def _duration_millis(text: str, encoded: str) -> int:
    """An ISO 8601 duration of an interval literal in milliseconds (no years or months: no fixed length)."""
    duration = parse_duration(text)
    millis = duration.amount
    if millis != int(millis):
        raise ValueError(f"the duration {text.strip()!r} is finer than a millisecond")
    return int(millis)


def _exact_number(lexical: str, datatype: str) -> tuple[int, int]:
    """``(mantissa, exponent)`` of a number timestamp (see :func:`parse_timestamp`)."""
    if not (_DECIMAL if datatype == XSD_DECIMAL else _INTEGER).fullmatch(lexical):
        raise ValueError(f"not a valid {datatype.rsplit('#', 1)[1]}: {lexical!r}")
    try:
        value = Decimal(lexical)
    except InvalidOperation:
        raise ValueError(f"not a number: {lexical!r}") from None
    value = value.normalize() if value != 0 else Decimal(0)
    sign, digits, exp = value.as_tuple()
    mantissa = int("".join(map(str, digits)) or "0")
    if exp > 0:
        mantissa *= 10 ** exp
        exp = 0
    if sign:
        mantissa = -mantissa
    if abs(mantissa) >= 10 ** 18 or -exp > 18:
        raise ValueError(f"timestamp {lexical!r} has too many digits (at most 18 are supported)")
    return mantissa, -exp


def format_millis(ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 date-time in UTC, ``Z``-suffixed, milliseconds shown when not zero; any
    year xsd:dateTime allows (year 0 and before included: ``0000``, ``-0001``)."""
    days, ms_of_day = divmod(ms, 86_400_000)
    y, mo, d = civil_from_days(days)
    seconds, millis = divmod(ms_of_day, 1000)
    h, rest = divmod(seconds, 3600)
    mi, sec = divmod(rest, 60)
    year = f"-{-y:04d}" if y < 0 else f"{y:04d}"
    fraction = f".{millis:03d}" if millis else ""
    return f"{year}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{sec:02d}{fraction}Z"


def parse_time(value, timeline: Timeline) -> int:
    """A --times / --until value (number, or ISO 8601 date-time for date-time streams) in ticks; a number within the
    bounds of the query's instants (:func:`~rspark.model.time.time_value_problem`), else a WindowError. A text in
    xsd:dateTime form is read as an element's timestamp is (:func:`datetime_millis`); other ISO 8601 forms (a date,
    a space for the ``T``) as Python reads them."""
    if isinstance(value, (int, Decimal, float)):
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        problem = time_value_problem(number)
        if problem is not None:
            raise WindowError(f"time {value} {problem}")
        return timeline.ticks(number, "time")
    text = str(value).strip()
    try:
        number, problem = time_number(text)
    except ArithmeticError:
        pass
    else:
        if problem is not None and (number is None or number.is_finite()):
            raise WindowError(f"time {text} {problem}")
        if number is not None and number.is_finite():
            return timeline.ticks(number, "time")
    try:
        return datetime_millis(text) * timeline.scale  # numeric streams read ISO instants as milliseconds
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise RsparkError(f"not a time: {text!r} (a number or an ISO 8601 date-time)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000) * timeline.scale


def format_time(ticks: int, timeline: Timeline) -> Any:
    """``ticks`` as records, JSON and status views show an instant: an ISO 8601 date-time for a date-time stream,
    else a number in the stream's unit (an int when whole)."""
    if timeline.kind is TimeKind.DATETIME:
        return format_millis(ticks)
    if timeline.scale == 1:
        return int(ticks)
    value = Decimal(ticks) / Decimal(timeline.scale)
    return float(value) if value != value.to_integral_value() else int(value)
