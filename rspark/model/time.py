"""Time: durations as written in queries, and instants.

A duration is either *absolute* (ISO 8601 ``PT10M``, C-SPARQL/CQELS shorthands ``10s``, SPARQLstream ``1 MINUTES``),
kept in milliseconds, or *unitless* (a plain number, in the stream's own time unit, as in the papers' examples).
The engine resolves a unitless duration against the stream's timeline; an absolute one over a numeric stream reads the
stream's timestamps as milliseconds (CONTRACT section 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

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


class DurationError(ValueError):
    """A duration that cannot be read; the message says what is wrong with it."""


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
    if raw[0] in "Pp":
        match = _ISO.match(raw)
        if not match:
            raise DurationError(f"not an ISO 8601 duration: {raw!r} (expected e.g. PT10M, PT1M30S, P1D)")
        if match.group("Y") or match.group("Mo"):
            raise DurationError(
                f"duration {raw!r} uses years or months, which have no fixed length; use days (P30D) or hours"
            )
        total = Decimal(0)
        for group, unit_ms in (("W", 7 * 86_400_000), ("D", 86_400_000), ("H", 3_600_000), ("Mi", 60_000), ("S", 1000)):
            part = match.group(group)
            if part:
                total += Decimal(part) * unit_ms
        return Duration(total, True, raw)
    match = _SHORT.match(raw)
    if match:
        return Duration(Decimal(match.group("n")) * _MS[match.group("u").lower()], True, raw)
    parts = raw.split()
    if len(parts) == 2 and parts[1].upper() in _WORD_UNITS:
        try:
            return Duration(Decimal(parts[0]) * _MS[_WORD_UNITS[parts[1].upper()]], True, raw)
        except InvalidOperation as exc:
            raise DurationError(f"not a number in duration {raw!r}") from exc
    try:
        value = Decimal(raw)
    except InvalidOperation as exc:
        raise DurationError(f"not a duration: {raw!r} (expected PT10M, 10s or a number)") from exc
    return Duration(value, False, raw)
