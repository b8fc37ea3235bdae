"""Date-time values for comparison: an xsd:dateTime or xsd:date lexical form as microseconds (``local``, the wall
clock as if it were UTC, and ``tz``, the offset in minutes, NULL without a timezone), in SQL and for constants.

Comparing a value with a timezone to one without follows XSD's partial order: determinate only when they are more
than 14 hours apart, an error otherwise. The value layer (``rspark.spark.expr.values``) packs every date-time term
this way; the date-time functions (``rspark.spark.expr.datetimes``) build on it.
"""

from __future__ import annotations

import calendar
import re
from decimal import Decimal

from rspark.model.terms import XSD_DATETIME, Literal
from rspark.model.timestamps import days_from_civil
from rspark.spark.expr.sql import RE_DATE, RE_DT, SFX_DATE, SFX_DT, SQL, XSD_DATE, is_name, let, q

_US_DAY = 86_400_000_000
_US_HOUR = 3_600_000_000
_US_MIN = 60_000_000
_14H = 14 * _US_HOUR


def date_as_datetime(x: SQL) -> SQL:
    """The dateTime lexical form of a date's first instant (``2010-06-21Z`` -> ``2010-06-21T00:00:00Z``)."""
    return (f"(CASE WHEN endswith({x}, 'Z') THEN concat(substring({x}, 1, length({x}) - 1), 'T00:00:00Z') "
            f"WHEN substring({x}, -3, 1) = ':' THEN concat(substring({x}, 1, length({x}) - 6), 'T00:00:00', "
            f"substring({x}, -6)) ELSE concat({x}, 'T00:00:00') END)")


class DTParts:
    """The fields of a valid xsd:dateTime lexical form, from a struct ``p`` holding its date part ``ds``, time
    part ``ts`` and timezone text ``tz`` ('Z', '+hh:mm', '-hh:mm' or '') — see :func:`with_parts`."""

    def __init__(self, p: str) -> None:
        ds, ts, tz = f"{p}.ds", f"{p}.ts", f"{p}.tz"
        self.date_s, self.time_s, self.tz_s = ds, ts, tz
        self.year = f"CAST(substring({ds}, 1, length({ds}) - 6) AS INT)"
        self.month = f"CAST(substring({ds}, -5, 2) AS INT)"
        self.day = f"CAST(substring({ds}, -2, 2) AS INT)"
        self.hour = f"CAST(substring({ts}, 1, 2) AS INT)"
        self.minute = f"CAST(substring({ts}, 4, 2) AS INT)"
        self.sec_s = f"substring({ts}, 7, length({ts}) - 6 - length({tz}))"

    @property
    def tz_minutes(self) -> SQL:
        z = self.tz_s
        return (f"(CASE WHEN {z} = 'Z' THEN 0 WHEN {z} = '' THEN CAST(NULL AS INT) ELSE "
                f"(CASE WHEN startswith({z}, '-') THEN -1 ELSE 1 END) * "
                f"(CAST(substring({z}, 2, 2) AS INT) * 60 + CAST(substring({z}, 5, 2) AS INT)) END)")

    @property
    def local_us(self) -> SQL:
        days = f"CAST(unix_date(make_date({self.year}, {self.month}, {self.day})) AS BIGINT)"
        sec_us = f"CAST(CAST({self.sec_s} AS DECIMAL(20,6)) * 1000000 AS BIGINT)"
        return (f"({days} * {_US_DAY} + CAST({self.hour} AS BIGINT) * {_US_HOUR} + "
                f"CAST({self.minute} AS BIGINT) * {_US_MIN} + {sec_us})")


def split_dt(x: str) -> SQL:
    """named_struct(ds, ts, tz) of a dateTime lexical form ``x`` (simple SQL)."""
    tz = (f"(CASE WHEN endswith({x}, 'Z') THEN 'Z' WHEN substring({x}, -6, 1) IN ('+', '-') "
          f"AND substring({x}, -3, 1) = ':' THEN substring({x}, -6) ELSE '' END)")
    return f"named_struct('ds', substring_index({x}, 'T', 1), 'ts', substring_index({x}, 'T', -1), 'tz', {tz})"


def with_parts(lex: SQL, body) -> SQL:
    """``body(DTParts)`` for a valid dateTime lexical form."""
    if is_name(lex):
        return let(split_dt(lex), lambda p: body(DTParts(p)))
    return let(lex, lambda x: let(split_dt(x), lambda p: body(DTParts(p))))


def time_pack(lex: SQL) -> SQL:
    """named_struct(l: local microseconds, z: timezone minutes) of a valid dateTime lexical form."""
    return with_parts(lex, lambda p: f"named_struct('l', {p.local_us}, 'z', {p.tz_minutes})")


def cmp3_time(a: SQL, b: SQL) -> SQL:
    """-1 / 0 / 1 of two time packs (simple SQL), NULL when indeterminate (one value with a timezone, one
    without, less than 14 hours apart)."""
    la, lb, ta, tb = f"{a}.l", f"{b}.l", f"{a}.z", f"{b}.z"
    ia = f"({la} - CAST({ta} AS BIGINT) * {_US_MIN})"
    ib = f"({lb} - CAST({tb} AS BIGINT) * {_US_MIN})"
    return (f"(CASE WHEN {ta} IS NOT NULL AND {tb} IS NOT NULL THEN {_sign(f'{ia} - {ib}')}"
            f" WHEN {ta} IS NULL AND {tb} IS NULL THEN {_sign(f'{la} - {lb}')}"
            f" WHEN {ta} IS NOT NULL THEN (CASE WHEN {ia} < {lb} - {_14H} THEN -1 WHEN {ia} > {lb} + {_14H} THEN 1 END)"
            f" ELSE (CASE WHEN {la} + {_14H} < {ib} THEN -1 WHEN {la} - {_14H} > {ib} THEN 1 END) END)")


def _sign(x: SQL) -> SQL:
    return f"(CASE WHEN {x} < 0 THEN -1 WHEN {x} > 0 THEN 1 WHEN {x} = 0 THEN 0 END)"


def any_time_pack(sfx: SQL, lexr: SQL) -> SQL:
    """The time pack of a valid dateTime or date literal (from its suffix and raw lexical form), else NULL."""
    ok = (f"(({sfx} = {q(SFX_DT)} AND {lexr} RLIKE {q(RE_DT)}) OR "
          f"({sfx} = {q(SFX_DATE)} AND {lexr} RLIKE {q(RE_DATE)}))")
    norm = f"(CASE WHEN {sfx} = {q(SFX_DATE)} THEN {date_as_datetime(lexr)} ELSE {lexr} END)"
    return f"(CASE WHEN {ok} THEN {time_pack(norm)} END)"


_PY_DT = re.compile(r"^(-?[0-9]{4,})-([0-9]{2})-([0-9]{2})(?:T([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?))?"
                    r"(Z|[+-][0-9]{2}:[0-9]{2})?\Z")


def const_time_pack(term) -> SQL:
    """The time pack of a constant term, computed in Python (NULL when it is no valid dateTime / date)."""
    if not isinstance(term, Literal) or term.datatype not in (XSD_DATETIME, XSD_DATE):
        return "CAST(NULL AS STRUCT<l: BIGINT, z: INT>)"
    m = _PY_DT.match(term.lexical)
    if m is None or (m.group(4) is None) != (term.datatype == XSD_DATE):
        return "CAST(NULL AS STRUCT<l: BIGINT, z: INT>)"
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    try:
        if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(2000 if year <= 0 else year, month)[1]:
            raise ValueError
    except ValueError:
        return "CAST(NULL AS STRUCT<l: BIGINT, z: INT>)"
    hour = int(m.group(4) or 0)
    minute = int(m.group(5) or 0)
    sec = Decimal(m.group(6) or 0)
    local = days_from_civil(year, month, day) * _US_DAY + hour * _US_HOUR + minute * _US_MIN + int(sec * 1000000)
    tz = m.group(7)
    if tz is None:
        z = "CAST(NULL AS INT)"
    elif tz == "Z":
        z = "0"
    else:
        z = str((-1 if tz[0] == "-" else 1) * (int(tz[1:3]) * 60 + int(tz[4:6])))
    return f"named_struct('l', CAST({local} AS BIGINT), 'z', {z})"


def sort_us(pack: SQL) -> SQL:
    """A sort key of a time pack (timezone applied; a value without one is taken as UTC)."""
    return f"({pack}.l - CAST(coalesce({pack}.z, 0) AS BIGINT) * {_US_MIN})"


# ------------------------------------------------------------------------------------------------- functions


