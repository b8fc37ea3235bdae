"""Dates and times (SPARQL 1.1 section 17.4.5 and the dateTime casts): YEAR ... SECONDS, TIMEZONE, TZ, the value of
an xsd:dateTime / xsd:date for comparisons and ORDER BY, and xsd:dateTime(...) / xsd:date(...).

A value is kept as microseconds: ``local`` (the wall clock as if it were UTC) and ``tz`` (the offset in minutes,
NULL without a timezone). An xsd:date is its first instant (``T00:00:00``). Comparing a value with a timezone to
one without follows XSD's partial order: determinate only when they are more than 14 hours apart, an error
otherwise.
"""

from __future__ import annotations

from rspark.model.terms import XSD_DATETIME
from rspark.spark.expr.timepack import (
    DTParts,
    any_time_pack,
    cmp3_time,
    date_as_datetime,
    sort_us,
    time_pack,
    with_parts,
)
from rspark.spark.expr.values import (
    DEC,
    DEC0,
    DEC_T,
    INT,
    RE_DATE,
    RE_DT,
    SFX_DATE,
    SFX_DT,
    SQL,
    XSD_DATE,
    XSD_DAYTIMEDURATION,
    Num,
    NumV,
    StrV,
    TermV,
    V,
    case,
    is_static_lang,
    let,
    make_literal,
    q,
)


def date_part(name: str, v: V) -> V:
    """YEAR, MONTH, DAY, HOURS, MINUTES, SECONDS (of an xsd:dateTime; YEAR, MONTH, DAY, TIMEZONE and TZ also of
    an xsd:date), TIMEZONE (an xsd:dayTimeDuration; an error without a timezone), TZ."""
    allow_date = name in ("YEAR", "MONTH", "DAY", "TIMEZONE", "TZ")
    sfx, lex = v.sfx(), v.lexr()
    dt_ok = f"({sfx} = {q(SFX_DT)} AND {lex} RLIKE {q(RE_DT)})"
    date_ok = f"({sfx} = {q(SFX_DATE)} AND {lex} RLIKE {q(RE_DATE)})" if allow_date else False
    norm = case([(dt_ok, lex), (date_ok, date_as_datetime(lex))])

    def pick(field) -> SQL:
        return let(norm, lambda x: f"(CASE WHEN {x} IS NOT NULL THEN {with_parts(x, field)} END)")

    if name in ("YEAR", "MONTH", "DAY", "HOURS", "MINUTES"):
        attr = {"YEAR": "year", "MONTH": "month", "DAY": "day", "HOURS": "hour", "MINUTES": "minute"}[name]
        value = pick(lambda p: getattr(p, attr))
        if name == "HOURS":
            value = let(value, lambda h: f"(CASE WHEN {h} = 24 THEN 0 ELSE {h} END)")
        return NumV(Num(INT, d=f"CAST({value} AS {DEC_T})"))
    if name == "SECONDS":
        # "01" -> 1 (no fraction digits: DEC0), "01.50" -> 1.5 (W3C seconds-01)
        t = pick(lambda p: f"(CASE WHEN instr({p.sec_s}, '.') = 0 THEN {DEC0} ELSE {DEC} END)")
        return NumV(Num(t, d=f"CAST({pick(lambda p: p.sec_s)} AS {DEC_T})"))
    if name == "TZ":
        return StrV(pick(lambda p: _canonical_tz(p.tz_s)))

    def duration(p: DTParts) -> SQL:
        return let(p.tz_minutes, _duration)

    return TermV(make_literal(pick(duration), XSD_DAYTIMEDURATION), simple=False)


def _duration(m: str) -> SQL:
    a = f"abs({m})"
    h, mm = f"CAST({a} DIV 60 AS INT)", f"({a} % 60)"
    body = (f"concat('PT', CASE WHEN {h} > 0 THEN concat(CAST({h} AS STRING), 'H') ELSE '' END, "
            f"CASE WHEN {mm} > 0 THEN concat(CAST({mm} AS STRING), 'M') ELSE '' END)")
    return (f"(CASE WHEN {m} IS NULL THEN NULL WHEN {m} = 0 THEN 'PT0S' WHEN {m} < 0 THEN concat('-', {body}) "
            f"ELSE {body} END)")


def _canonical_tz(tz: SQL) -> SQL:
    return f"(CASE WHEN {tz} IN ('+00:00', '-00:00') THEN 'Z' ELSE {tz} END)"


def canonical_dt(lex: SQL) -> SQL:
    """Canonical form of a valid dateTime lexical form: fractional seconds without trailing zeros, UTC as Z."""
    def body(p: DTParts) -> SQL:
        return let(p.sec_s, lambda s: (
            f"concat({p.date_s}, 'T', substring({p.time_s}, 1, 6), "
            f"CASE WHEN instr({s}, '.') > 0 THEN concat(substring({s}, 1, 2), "
            f"CASE WHEN rtrim('0', substring_index({s}, '.', -1)) = '' THEN '' "
            f"ELSE concat('.', rtrim('0', substring_index({s}, '.', -1))) END) ELSE {s} END, "
            f"{_canonical_tz(p.tz_s)})"))
    return with_parts(lex, body)


def _checked(lex: SQL) -> SQL:
    """The dateTime lexical form when its date exists (2001-02-30 does not), else NULL."""
    return let(lex, lambda x: f"(CASE WHEN {with_parts(x, lambda p: p.local_us)} IS NOT NULL THEN {x} END)")


def cast_datetime(target: str, v: V) -> V:
    """xsd:dateTime(v) / xsd:date(v) from a dateTime, a date or a simple / xsd:string literal (v simple)."""
    sfx, raw = v.sfx(), v.lexr()
    is_dt = f"({sfx} = {q(SFX_DT)} AND {raw} RLIKE {q(RE_DT)})"
    is_date = f"({sfx} = {q(SFX_DATE)} AND {raw} RLIKE {q(RE_DATE)})"
    lex, lang = v.string()
    plain = (lang == "") if is_static_lang(lang) else f"({lang} = '')"
    as_dt = case([
        (is_dt, raw),
        (is_date, date_as_datetime(raw)),
        (plain, f"(CASE WHEN {lex} RLIKE {q(RE_DT)} THEN {lex} END)" if target == XSD_DATETIME else
         f"(CASE WHEN {lex} RLIKE {q(RE_DATE)} THEN {date_as_datetime(lex)} END)"),
    ])
    value = _checked(canonical_dt(as_dt))
    if target == XSD_DATETIME:
        return TermV(make_literal(value, XSD_DATETIME), simple=False)
    date = with_parts(value, lambda p: f"concat({p.date_s}, {p.tz_s})")
    return TermV(make_literal(date, XSD_DATE), simple=False)


__all__ = ["DTParts", "with_parts", "time_pack", "any_time_pack", "cmp3_time", "sort_us", "date_part",
           "cast_datetime"]
