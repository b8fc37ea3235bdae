"""Time: durations and instants as written in queries, and the timeline a stream counts time on.

A duration is either *absolute* (ISO 8601 ``PT10M``, C-SPARQL/CQELS shorthands ``10s``, SPARQLstream ``1 MINUTES``),
kept in milliseconds, or *unitless* (a plain number, in the stream's own time unit, as in the papers' examples).
The engine resolves a unitless duration against the stream's timeline; an absolute one over a numeric stream reads the
stream's timestamps as milliseconds (docs/streams.md).

A stream's timestamps are of one :class:`TimeKind`, and its :class:`Timeline` (kind and scale) turns every instant
and duration into ticks, the integers all of rspark's time arithmetic is done in. The text forms of instants are
read and written by :mod:`rspark.model.timestamps`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from rspark.errors import RsparkError

_MS = {
    "ms": Decimal(1),
    "s": Decimal(1000),
    "m": Decimal(60_000),
    "h": Decimal(3_600_000),
    "d": Decimal(86_400_000),
}

_ISO = re.compile(
    r"^P(?!$)(?:(?P<Y>\d+(?:\.\d+)?)Y)?(?:(?P<Mo>\d+(?:\.\d+)?)M)?(?:(?P<W>\d+(?:\.\d+)?)W)?(?:(?P<D>\d+(?:\.\d+)?)D)?"
    r"(?:T(?=\d)(?:(?P<H>\d+(?:\.\d+)?)H)?(?:(?P<Mi>\d+(?:\.\d+)?)M)?(?:(?P<S>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)
_SHORT = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<u>ms|s|m|h|d)$", re.IGNORECASE)
_WORD_UNITS = {
    "MILLISECOND": "ms",
    "MILLISECONDS": "ms",
    "SECOND": "s",
    "SECONDS": "s",
    "MINUTE": "m",
    "MINUTES": "m",
    "HOUR": "h",
    "HOURS": "h",
    "DAY": "d",
    "DAYS": "d",
}


class DurationError(RsparkError, ValueError):
    """A duration that cannot be read; the message says what is wrong with it."""


# Bounds of the numbers a query writes for durations and instants: 10^18 milliseconds is 31.7 million years (and
# leaves room in a 64-bit tick count), and a number in exponent notation must not expand to a huge text when
# printed (``1e-999999999`` is not a window length). Beyond these a value is rejected rather than misread.
MAX_TIME_VALUE = Decimal(10) ** 18
MIN_TIME_EXPONENT = -60


def time_value_problem(value: Decimal) -> str | None:
    """Why a duration or instant amount cannot be used (not finite, too large, too fine), or None when it can.
    (No arithmetic on ``value``: ``abs(Decimal("1e999999999"))`` overflows the decimal context.)"""
    if not value.is_finite():
        return "is not a finite number"
    if value.copy_abs() > MAX_TIME_VALUE:
        return "is too large (at most 10^18)"
    _, digits, exponent = value.as_tuple()
    trailing_zeros = len(digits) - len("".join(map(str, digits)).rstrip("0"))
    if any(digits) and exponent + trailing_zeros < MIN_TIME_EXPONENT:
        return f"is too fine (at most {-MIN_TIME_EXPONENT} decimal places)"
    return None


def time_number(text: str) -> tuple[Decimal | None, str | None]:
    """``text``, a number as written (sign, digits, point, exponent), as a Decimal and why it cannot be a duration
    or instant amount (:func:`time_value_problem`; None: it can). A Decimal holds exponents up to about 10^18 in
    size: a number written with a larger one is zero (all its digits 0), else too large or too fine, and comes
    back as (None, the problem) when it is not zero. ``InvalidOperation`` for a text that is not a number."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        mantissa, e, exponent = text.strip().lower().partition("e")
        if not e or not exponent.lstrip("+-").isdigit():
            raise
        if not mantissa.strip("+-.0"):
            return Decimal(0), None
        if exponent.startswith("-"):
            return None, f"is too fine (at most {-MIN_TIME_EXPONENT} decimal places)"
        return None, "is too large (at most 10^18)"
    return value, time_value_problem(value)


def _quoted(raw: str) -> str:
    """``raw`` as a message quotes it: a very long one (a 5,000-digit number) is cut."""
    return repr(raw) if len(raw) <= 40 else repr(raw[:40]) + f"... ({len(raw)} characters)"


def _checked(value: Decimal, raw: str) -> Decimal:
    problem = time_value_problem(value)
    if problem is not None:
        raise DurationError(f"duration {_quoted(raw)} {problem}")
    return value


@dataclass(frozen=True, slots=True)
class Duration:
    """A length of time: ``amount`` milliseconds when ``absolute``, else ``amount`` stream time units."""

    amount: Decimal
    absolute: bool
    text: str = ""

    def sse(self) -> str:
        """Printed form for the algebra: ``10000ms`` or ``5`` (stream units)."""
        amount = _plain(self.amount)
        return f"{amount}ms" if self.absolute else amount

    def in_units(self, millis_per_unit: Decimal | int | None) -> Decimal:
        """The duration on a timeline whose unit is ``millis_per_unit`` ms (None: a unitless timeline)."""
        if not self.absolute or millis_per_unit is None:
            return self.amount
        return self.amount / Decimal(millis_per_unit)


def _plain(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def parse_duration(text: str) -> Duration:
    """Read a window duration: ISO 8601 (``PT1M30S``, ``P1D``), shorthand (``10s``, ``5m``, ``100ms``) or a number.

    Calendar components (years, months) have no fixed length and are rejected.
    """
    raw = text.strip()
    if not raw:
        raise DurationError("empty duration")
    try:
        return _parse_duration(raw)
    except ArithmeticError:  # a number too large for the decimal context (an exponent beyond 999999)
        raise DurationError(f"duration {_quoted(raw)} is too large (at most 10^18)") from None


def _parse_duration(raw: str) -> Duration:
    if raw[0] in "Pp":
        match = _ISO.match(raw)
        if not match:
            raise DurationError(f"not an ISO 8601 duration: {_quoted(raw)} (expected e.g. PT10M, PT1M30S, P1D)")
        if match.group("Y") or match.group("Mo"):
            raise DurationError(
                f"duration {_quoted(raw)} uses years or months, which have no fixed length; use days (P30D) or hours"
            )
        total = Decimal(0)
        for group, unit_ms in (("W", 7 * 86_400_000), ("D", 86_400_000), ("H", 3_600_000), ("Mi", 60_000), ("S", 1000)):
            part = match.group(group)
            if part:
                total += Decimal(part) * unit_ms
        return Duration(_checked(total, raw), True, raw)
    match = _SHORT.match(raw)
    if match:
        return Duration(_checked(Decimal(match.group("n")) * _MS[match.group("u").lower()], raw), True, raw)
    parts = raw.split()
    if len(parts) == 2 and parts[1].upper() in _WORD_UNITS:
        try:
            return Duration(_checked(Decimal(parts[0]) * _MS[_WORD_UNITS[parts[1].upper()]], raw), True, raw)
        except InvalidOperation as exc:
            raise DurationError(f"not a number in duration {_quoted(raw)}") from exc
    try:
        value = Decimal(raw)
    except InvalidOperation as exc:
        raise DurationError(f"not a duration: {_quoted(raw)} (expected PT10M, 10s or a number)") from exc
    return Duration(_checked(value, raw), False, raw)


# ---------------------------------------------------------------------------------------------- instants, timeline


class TimeKind(StrEnum):
    """What a stream's timestamps are: xsd:dateTime values (``ts`` in epoch milliseconds, UTC) or numbers (in the
    stream's own unit). The value is the spelling of JSON and status output."""

    DATETIME = "datetime"
    NUMERIC = "numeric"

    @property
    def noun(self) -> str:
        """The kind as messages name it (``date-time timestamps``, ``numeric timestamps``)."""
        return "date-time" if self is TimeKind.DATETIME else "numeric"


class WindowError(RsparkError, ValueError):
    """A window that cannot be applied to a stream (bad parameters, or units the stream cannot represent)."""


@dataclass(frozen=True, slots=True)
class Instant:
    """A time instant as written: a number (stream units) or an xsd:dateTime (epoch milliseconds)."""

    value: object  # Decimal
    absolute: bool
    text: str

    def sse(self) -> str:
        return self.text if not self.absolute else f'"{self.text}"'


@dataclass(frozen=True, slots=True)
class Timeline:
    """How a stream's ``ts`` column counts time.

    ``datetime``: ``ts`` is epoch milliseconds. ``numeric``: ``ts = value * time_scale`` (``time_scale`` a power of
    ten, 1 for integer timestamps). A number in a query (``[RANGE 5]``, ``STARTING AT 3``) is in the stream's unit
    (milliseconds for a date-time stream); an ISO 8601 duration or date-time over a numeric stream reads the
    stream's numbers as milliseconds (docs/streams.md). Either way a query value ``v`` is ``v * scale`` ticks.
    """

    kind: TimeKind = TimeKind.NUMERIC
    time_scale: int = 1

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", TimeKind(self.kind))
        except ValueError:
            raise WindowError(f"timeline kind {self.kind!r}: expected 'datetime' or 'numeric'") from None
        if self.time_scale < 1:
            raise WindowError(f"time_scale {self.time_scale}: expected a positive power of ten")

    @classmethod
    def datetime(cls) -> Timeline:
        return cls(TimeKind.DATETIME, 1)

    @classmethod
    def numeric(cls, time_scale: int = 1) -> Timeline:
        return cls(TimeKind.NUMERIC, time_scale)

    @classmethod
    def of(cls, kind: TimeKind, time_scale: int = 1) -> Timeline:
        """The timeline of a stream with timestamps of ``kind`` (``time_scale`` counts for numeric ones only)."""
        return cls.datetime() if kind is TimeKind.DATETIME else cls.numeric(time_scale)

    @property
    def scale(self) -> int:
        """Ticks per query unit (per millisecond or per stream unit)."""
        return 1 if self.kind is TimeKind.DATETIME else self.time_scale

    def ticks(self, value: Decimal | int, what: str = "value") -> int:
        """``value`` (query units) in ticks; raises when the stream's resolution cannot represent it."""
        scaled = Decimal(value) * self.scale
        if scaled != scaled.to_integral_value():
            unit = "millisecond" if self.kind is TimeKind.DATETIME else f"1/{self.time_scale} of the stream's unit"
            raise WindowError(f"{what} {value} is finer than the stream's time resolution ({unit})")
        return int(scaled)

    def duration(self, duration: Duration, what: str = "duration") -> int:
        return self.ticks(duration.amount, f"{what} {duration.text or duration.amount}")

    def instant(self, instant: Instant | Decimal | int, what: str = "instant") -> int:
        if isinstance(instant, Instant):
            return self.ticks(instant.value, f"{what} {instant.text}")
        return self.ticks(instant, what)
