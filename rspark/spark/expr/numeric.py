"""Numbers (SPARQL 1.1 sections 17.3, 17.4.4 and 17.5): arithmetic with XPath type promotion, unary operators,
ABS / CEIL / FLOOR / ROUND, and the XSD casts to numbers, booleans and strings.

Decimal arithmetic runs on Spark ``decimal(38,18)``: + and - are exact; * and / are exact to 18 fractional digits
while the operands fit Spark's fixed result types (factors below 1e9 and 1e10; a dividend below 1e17 and an
integer divisor, or a dividend below 1e11 and a divisor with at most 6 fractional digits), beyond which Spark's own
decimal product / quotient (6 fractional digits) is used. Quotients are truncated at the 18th fractional digit.
Integer results must stay below 1e20 in magnitude (an error otherwise).
"""

from __future__ import annotations

from decimal import Decimal

from rspark.model.terms import XSD_BOOLEAN, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, XSD_STRING
from rspark.spark.expr.datetimes import canonical_dt
from rspark.spark.expr.values import (
    DBL,
    DEC,
    DEC0,
    DEC_T,
    FLT,
    INT,
    RE_DBL,
    RE_DEC,
    RE_DT,
    RE_INT,
    SFX_DT,
    SQL,
    XSD_FLOAT,
    BoolV,
    Num,
    NumV,
    StrV,
    V,
    b_and,
    case,
    cast,
    dec_lit,
    is_static_lang,
    let,
    promote,
    q,
    sql_bool,
    to_float_precision,
)

_TRUNC18 = dec_lit(Decimal("1E-18"), 19, 18)
_E6 = dec_lit(10 ** 6, 7, 0)


def _t_max(t, floor_code: int):
    """max(t, floor_code) for a static or SQL type code (NULL stays NULL)."""
    if t is None or isinstance(t, int):
        return None if t is None else max(t, floor_code)
    return f"(CASE WHEN {t} IS NOT NULL THEN greatest({t}, {floor_code}) END)"


def _t_is(t, *codes):
    return Num(t).t_is(*codes)


# ------------------------------------------------------------------------------------------- decimal kernels


def dec_add(a: SQL, b: SQL, sub: bool = False) -> SQL:
    op = "-" if sub else "+"
    exact = f"CAST(CAST({a} AS DECIMAL(37,18)) {op} CAST({b} AS DECIMAL(37,18)) AS {DEC_T})"
    wide = f"CAST({a} {op} {b} AS {DEC_T})"
    return f"coalesce({exact}, {wide})"


def int_mul(a: SQL, b: SQL) -> SQL:
    return f"CAST(CAST({a} AS DECIMAL(38,0)) * CAST({b} AS DECIMAL(38,0)) AS {DEC_T})"


def dec_mul(a: SQL, b: SQL) -> SQL:
    p1 = f"CAST(CAST({a} AS DECIMAL(27,18)) * CAST({b} AS DECIMAL(28,18)) AS {DEC_T})"
    p2 = f"CAST(CAST({a} AS DECIMAL(28,18)) * CAST({b} AS DECIMAL(27,18)) AS {DEC_T})"
    return f"coalesce({p1}, {p2}, CAST({a} * {b} AS {DEC_T}))"


def _div_by_integer(a: SQL, bi: SQL) -> SQL:
    # decimal(37,19) / decimal(20,0) is a decimal(38,20): truncate it to 18 digits
    return let(f"CAST({a} AS DECIMAL(37,19)) / {bi}",
               lambda qv: f"CAST({qv} - {qv} % {_TRUNC18} AS {DEC_T})")


def dec_div(a: SQL, b: SQL) -> SQL:
    """a / b for decimal(38,18) operands (simple SQL); NULL when b = 0."""
    bi = f"CAST({b} AS DECIMAL(20,0))"
    p1 = f"(CASE WHEN {bi} = {b} THEN {_div_by_integer(a, bi)} END)"
    a6 = f"(CAST({a} AS DECIMAL(31,18)) * {_E6})"
    b6 = f"(CAST({b} AS DECIMAL(31,18)) * {_E6})"
    b6i = f"CAST({b6} AS DECIMAL(20,0))"
    p2 = f"(CASE WHEN {b6i} = {b6} THEN {_div_by_integer(a6, b6i)} END)"
    return f"coalesce({p1}, {p2}, CAST({a} / {b} AS {DEC_T}))"


def dec_div_by_count(a: SQL, n: SQL) -> SQL:
    """a / n for a decimal(38,18) ``a`` and a BIGINT count ``n`` (AVG): :func:`dec_div` for an integer divisor,
    whose second form (a divisor with fraction digits) cannot apply, so that its SQL is not written (it is
    analysed and optimised with every query that averages)."""
    return f"coalesce({_div_by_integer(a, f'CAST({n} AS DECIMAL(20,0))')}, CAST({a} / CAST({n} AS {DEC_T}) AS {DEC_T}))"


def dbl_div(x: SQL, y: SQL) -> SQL:
    """IEEE division (Spark's is NULL for a zero divisor)."""
    neg_zero = f"startswith(CAST({y} AS STRING), '-')"
    positive = f"(({x} > 0 AND NOT {neg_zero}) OR ({x} < 0 AND {neg_zero}))"
    return (f"(CASE WHEN {y} = 0 THEN (CASE WHEN isnan({x}) OR {x} = 0 THEN CAST('NaN' AS DOUBLE) "
            f"WHEN {positive} THEN CAST('Infinity' AS DOUBLE) ELSE CAST('-Infinity' AS DOUBLE) END) "
            f"ELSE {x} / {y} END)")


# -------------------------------------------------------------------------------------------------- operators


def arith(op: str, a: Num, b: Num) -> Num:
    """``a op b`` for op in + - * / with XPath numeric type promotion (operands: simple SQL)."""
    t = promote(a.t, b.t)
    if t is None:
        return Num(None)
    if op == "/":
        scale0 = _t_is(t, DEC0)
        t = _t_max(t, DEC)
        if scale0 is not False:
            # as Java's BigDecimal: decimals without fraction digits divided exactly keep none (W3C
            # divide-numbers-cast: "3"^^xsd:decimal / 3 = "1"); integer / integer has at least one (AVG: "2.0")
            quotient = dec_div(a.d, b.d)
            t = f"(CASE WHEN {sql_bool(scale0)} AND {quotient} = floor({quotient}) THEN {DEC0} ELSE {t} END)"

    def dec_value() -> SQL:
        da, db = a.d, b.d
        if op == "+":
            return dec_add(da, db)
        if op == "-":
            return dec_add(da, db, sub=True)
        if op == "*":
            return case([(_t_is(t, INT), int_mul(da, db)), (_t_is(t, DEC0, DEC), dec_mul(da, db))])
        return dec_div(da, db)

    def dbl_value() -> SQL:
        def body(p: str) -> SQL:
            x, y = f"{p}.x", f"{p}.y"
            return dbl_div(x, y) if op == "/" else f"({x} {op} {y})"

        is_flt = _t_is(t, FLT)
        x, y = a.dbl, b.dbl
        if is_flt is not False:  # XPath promotes the operands to xs:float first
            def as_float(z: SQL) -> SQL:
                if is_flt is True:
                    return to_float_precision(z)
                return f"(CASE WHEN {is_flt} THEN {to_float_precision(z)} ELSE {z} END)"
            x, y = as_float(x), as_float(y)
        r = let(f"named_struct('x', {x}, 'y', {y})", body)
        if is_flt is True:
            return to_float_precision(r)
        if is_flt is False:
            return r
        return let(r, lambda rv: f"(CASE WHEN {is_flt} THEN {to_float_precision(rv)} ELSE {rv} END)")

    return Num(t, d=dec_value if _t_is(t, INT, DEC0, DEC) is not False else None,
               f=dbl_value if _t_is(t, FLT, DBL) is not False else None)


def negate(n: Num) -> Num:
    if n.t is None:
        return Num(None)
    return Num(n.t, d=(lambda: f"(- {n.d})") if n.t_is(INT, DEC0, DEC) is not False else None,
               f=(lambda: f"(- {n.f})") if n.t_is(FLT, DBL) is not False else None)


def identity(n: Num) -> Num:
    return Num(n.t, d=(lambda: n.d) if n.t_is(INT, DEC0, DEC) is not False else None,
               f=(lambda: n.f) if n.t_is(FLT, DBL) is not False else None)


def _dbl_floor(x: SQL) -> SQL:
    return f"(CASE WHEN rint({x}) > {x} THEN rint({x}) - 1 ELSE rint({x}) END)"


def _dbl_ceil(x: SQL) -> SQL:
    return f"(CASE WHEN rint({x}) < {x} THEN rint({x}) + 1 ELSE rint({x}) END)"


def _dbl_round(x: SQL) -> SQL:
    """XPath fn:round: the nearest integer, halves towards positive infinity (an integral x is kept, a negative
    x rounding to zero gives -0)."""
    return let(f"{x} + 0.5D", lambda h: (f"(CASE WHEN abs({x}) >= 4503599627370496.0D OR isnan({x}) THEN {x} "
                                         f"WHEN {x} < 0 AND {h} >= 0 THEN -0.0D ELSE {_dbl_floor(h)} END)"))


def _dec_round(d: SQL) -> SQL:
    exact = f"CAST(floor(CAST({d} AS DECIMAL(37,18)) + {dec_lit('0.5', 2, 1)}) AS {DEC_T})"
    return f"coalesce({exact}, CAST(floor({d} + {dec_lit('0.5', 2, 1)}) AS {DEC_T}))"


def rounding(name: str, n: Num) -> Num:
    """ABS, CEIL, FLOOR, ROUND, keeping the numeric type."""
    if n.t is None:
        return Num(None)
    if name == "ABS":
        dec_f, dbl_f = (lambda d: f"abs({d})"), (lambda x: f"abs({x})")
    elif name == "CEIL":
        dec_f, dbl_f = (lambda d: f"CAST(ceil({d}) AS {DEC_T})"), _dbl_ceil
    elif name == "FLOOR":
        dec_f, dbl_f = (lambda d: f"CAST(floor({d}) AS {DEC_T})"), _dbl_floor
    else:
        dec_f, dbl_f = _dec_round, _dbl_round

    def dec_value() -> SQL:
        if name == "ABS":
            return dec_f(n.d)
        return case([(n.t_is(INT), n.d), (n.t_is(DEC0, DEC), dec_f(n.d))])

    t = n.t
    if name != "ABS":  # CEIL / FLOOR / ROUND of a decimal: no fraction digits (W3C ceil01, floor01, round01: "3")
        t = (DEC0 if t == DEC else t) if isinstance(t, int) else f"(CASE WHEN {t} = {DEC} THEN {DEC0} ELSE {t} END)"
    return Num(t, d=dec_value if n.t_is(INT, DEC0, DEC) is not False else None,
               f=(lambda: dbl_f(n.f)) if n.t_is(FLT, DBL) is not False else None)


# ------------------------------------------------------------------------------------------------------ casts


def _trunc(d: SQL) -> SQL:
    return f"CAST(CASE WHEN {d} >= 0 THEN floor({d}) ELSE ceil({d}) END AS {DEC_T})"


def _dbl_to_dec(f: SQL, is_float: bool = False) -> SQL:
    """The decimal of a double through its shortest decimal string (0.1e0 -> 0.1); NULL for NaN / INF / huge."""
    text = f"CAST(CAST({f} AS FLOAT) AS STRING)" if is_float else f"CAST({f} AS STRING)"
    return f"(CASE WHEN NOT isnan({f}) AND abs({f}) < CAST('Infinity' AS DOUBLE) THEN CAST({text} AS {DEC_T}) END)"


def _plain_string(v: V):
    """(lexical form, is simple or xsd:string); casts from strings accept only those."""
    lex, lang = v.string()
    if is_static_lang(lang):
        return lex, lang == ""
    return lex, f"({lang} = '')"


def cast_numeric(target: str, v: V) -> V:
    """xsd:integer / xsd:decimal / xsd:float / xsd:double (v), v simple."""
    code = {XSD_INTEGER: INT, XSD_DECIMAL: DEC, XSD_FLOAT: FLT, XSD_DOUBLE: DBL}[target]
    n = v.num()
    cats = v.cats()
    b = v.bool_value()
    lex, plain = _plain_string(v)
    from_str = b_and(cats.str, plain)
    if code in (INT, DEC):
        pattern = RE_INT if code == INT else RE_DEC
        from_num = case([
            (n.t_is(INT), n.d),
            (n.t_is(DEC0, DEC), _trunc(n.d) if code == INT else n.d),
            (n.t_is(FLT), _dbl_to_dec(n.f, True) if code == DEC else _trunc(_dbl_to_dec(n.f, True))),
            (n.t_is(DBL), _dbl_to_dec(n.f) if code == DEC else _trunc(_dbl_to_dec(n.f))),
        ])
        d = case([
            (cats.num, from_num),
            (cats.bool, f"CAST(CASE WHEN {b} THEN 1 ELSE 0 END AS {DEC_T})"),
            (from_str, f"(CASE WHEN {lex} RLIKE {q(pattern)} THEN CAST({lex} AS {DEC_T}) END)"),
        ])
        return NumV(Num(code, d=d))
    f = case([
        (cats.num, n.dbl),
        (cats.bool, f"(CASE WHEN {b} THEN 1.0D ELSE 0.0D END)"),
        (from_str, f"(CASE WHEN {lex} RLIKE {q(RE_DBL)} THEN CAST({lex} AS DOUBLE) END)"),
    ])
    if code == FLT:
        f = to_float_precision(f)
    return NumV(Num(code, f=f))


def cast_boolean(v: V) -> V:
    n = v.num()
    cats = v.cats()
    lex, plain = _plain_string(v)
    num_bool = case([(n.t_is(INT, DEC0, DEC), f"({n.d} != 0)"),
                     (n.t_is(FLT, DBL), f"({n.f} != 0 AND NOT isnan({n.f}))")])
    return BoolV(cast(case([
        (cats.bool, v.bool_value()),
        (cats.num, num_bool),
        (b_and(cats.str, plain),
         f"(CASE WHEN {lex} IN ('true', '1') THEN true WHEN {lex} IN ('false', '0') THEN false END)"),
    ]), "BOOLEAN"))


def cast_string(v: V, iri_string: SQL) -> V:
    """xsd:string(v): IRIs give their string, numbers and booleans their canonical form, literals their lexical
    form; blank nodes and triples are errors."""
    cats = v.cats()
    n = v.num()
    b = v.bool_value()
    dt = b_and(v.maybe_time, f"({v.sfx()} = {q(SFX_DT)} AND {v.lexr()} RLIKE {q(RE_DT)})")
    return StrV(cast(case([
        (cats.iri, iri_string),
        (cats.num, n.xpath_string()),
        (cats.bool, f"(CASE WHEN {b} THEN 'true' ELSE 'false' END)"),
        (dt, canonical_dt(v.lexr())),
        (cats.lit, v.lexical()),
    ]), "STRING"))


CAST_TARGETS = (XSD_INTEGER, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE, XSD_BOOLEAN, XSD_STRING)
