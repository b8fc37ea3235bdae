"""The value model of compiled expressions (their columns are Spark SQL text, see ``expr_sql``).

A compiled SPARQL sub-expression is a :class:`V`.

Every ``V`` gives its encoded term (``enc()``: the N-Triples-star string of ``rspark.model.codec``, NULL for
unbound / error) and the facets the operators need: the numeric value (:class:`Num`), the effective boolean value,
the string parts (lexical form + language tag), the comparison categories (:class:`Cats`). A plain ``TermV`` (a
variable, an extension function's result) derives them from the encoded string; operator results keep them
(``NumV``: the number of ``?a + 1``; ``BoolV``: the boolean of ``?a < 3``; ``StrV``: the lexical form of
``UCASE(?s)``), so nested expressions do not re-parse what they just built; ``ConstV`` knows everything in Python,
and conditions known in Python ("static booleans": ``True`` / ``False`` or SQL text) fold branches away
(:func:`b_and`, :func:`b_or`, :func:`b_not`, :func:`case`).

Spark has no let-expression, and a fragment used twice is a copied subtree: :func:`bind` evaluates a non-trivial
value once (a one-element ``transform_values``, :func:`let_in`) so that trees grow linearly with the SPARQL
expression.

Numbers: the type code is INT (xsd:integer and its derived types), DEC, FLT, DBL (promotion = max). xsd:integer and
xsd:decimal values are ``decimal(38,18)`` (|value| < 1e20), xsd:float and xsd:double values are ``double`` (a
float rounded to float precision). Computed numbers are written in the canonical form of XPath's cast to
xs:string: ``3``, ``2.5``, ``1050`` (no trailing ``.0``); doubles and floats in plain notation when
1e-6 <= |x| < 1e6 and ``1.0E6`` / ``1.5E-7`` otherwise, ``INF``, ``-INF``, ``NaN``, ``-0``.

One module (about 1,000 lines): the ``V`` classes and the facet derivations they share (numbers, booleans,
strings, comparison categories, time packs) are one model that every operator module reads; the operators
themselves are in the sibling modules.
"""

from __future__ import annotations

import re
import struct
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal, InvalidOperation

from rspark.model.codec import encode
from rspark.model.terms import (
    IRI,
    RDF_LANGSTRING,
    XSD,
    XSD_BOOLEAN,
    XSD_DATETIME,
    XSD_INTEGER,
    XSD_STRING,
    BlankNode,
    Literal,
    QuotedTriple,
)
from rspark.model.xsd import XSD_DATE, XSD_DAYTIMEDURATION, XSD_FLOAT  # noqa: F401 - re-exported, as below
from rspark.spark.expr.sql import (  # noqa: F401 - re-exported for the other expr_* modules
    DBL,
    DEC,
    DEC0,
    DEC_T,
    FALSE_ENC,
    FLT,
    INT,
    INT_SFXS,
    INTEGER_DERIVED,
    NULL_BOOL,
    NULL_STR,
    NUM_DATATYPES,
    RE_DATE,
    RE_DBL,
    RE_DEC,
    RE_DT,
    RE_INT,
    SFX_BOOL,
    SFX_DATE,
    SFX_DBL,
    SFX_DEC,
    SFX_DT,
    SFX_FLT,
    SQL,
    TRUE_ENC,
    TYPE_IRI,
    SBool,
    b_and,
    b_not,
    b_or,
    case,
    cast,
    dbl_lit,
    dec_lit,
    escape,
    fresh,
    is_bnode,
    is_iri,
    is_literal,
    is_name,
    is_triple,
    let,
    let_in,
    make_iri,
    make_literal,
    q,
    raw_lexical,
    sfx_of,
    sql_bool,
    suffix,
    to_column,
    token,
    unescape,
)
from rspark.spark.expr.timepack import const_time_pack, date_as_datetime, time_pack

# -------------------------------------------------------------------------------------------------- numbers


class Num:
    """A numeric value: type code ``t`` (int; None = not a number; or SQL, NULL = not a number), the decimal
    value ``d`` (for INT and DEC) and the double value ``f`` (for FLT and DBL). ``d`` / ``f`` may be given as
    zero-argument callables, built only when used. ``types``: the codes a dynamic ``t`` can take where the value
    is used (None: any), so that branches for the others are not written at all (AVG's result is never an
    integer: its SQL then holds the decimal quotient once, not once per integer and decimal branch)."""

    __slots__ = ("t", "_d", "_f", "types")

    def __init__(self, t, d=None, f=None, types=None) -> None:
        self.t = t
        self._d = d
        self._f = f
        self.types = None if types is None else frozenset(types)

    @property
    def d(self) -> SQL:
        if callable(self._d):
            self._d = self._d()
        return self._d if self._d is not None else f"CAST(NULL AS {DEC_T})"

    @property
    def f(self) -> SQL:
        if callable(self._f):
            self._f = self._f()
        return self._f if self._f is not None else "CAST(NULL AS DOUBLE)"

    def is_num(self) -> SBool:
        if self.t is None:
            return False
        if isinstance(self.t, int):
            return True
        return f"({self.t} IS NOT NULL)"

    def t_is(self, *codes: int) -> SBool:
        """Static test of the type code."""
        if self.t is None:
            return False
        if isinstance(self.t, int):
            return self.t in codes
        if self.types is not None:
            codes = tuple(c for c in codes if c in self.types)
            if not codes:
                return False
        if len(codes) == 1:
            return f"({self.t} = {codes[0]})"
        return f"({self.t} IN ({', '.join(str(c) for c in codes)}))"

    @property
    def dbl(self) -> SQL:
        """The value as a double, whatever the type."""
        return case([(self.t_is(INT, DEC0, DEC), cast(self.d, "DOUBLE")), (self.t_is(FLT, DBL), self.f)])

    @property
    def dec(self) -> SQL:
        """The value as a decimal (INT and DEC only)."""
        return case([(self.t_is(INT, DEC0, DEC), self.d)])

    def value_ok(self) -> SBool:
        """A number whose value is representable (not an error)."""
        return b_and(self.is_num(), b_or(b_and(self.t_is(INT, DEC0, DEC), f"({self.d} IS NOT NULL)"),
                                         b_and(self.t_is(FLT, DBL), f"({self.f} IS NOT NULL)")))

    def lexical(self) -> SQL:
        """The lexical form of a computed value: XML Schema 1.0's canonical representation (integer ``3``,
        decimal ``3.0``, double ``3.0E0``), as the W3C expected results and Jena-based engines write them."""
        return case([
            (self.t_is(INT), format_integer(self.d)),
            (self.t_is(DEC0), format_decimal(self.d)),
            (self.t_is(DEC), canonical_decimal(self.d)),
            (self.t_is(FLT, DBL), canonical_double(self.f, is_float=self.t_is(FLT))),
        ])

    def xpath_string(self) -> SQL:
        """XPath's cast of the value to xs:string (decimal ``3``, double ``3`` / ``1.0E7``): what xsd:string(n)
        gives (the W3C cast-string results)."""
        return case([
            (self.t_is(INT), format_integer(self.d)),
            (self.t_is(DEC0, DEC), format_decimal(self.d)),
            (self.t_is(FLT, DBL), format_double(self.f, is_float=self.t_is(FLT))),
        ])

    def datatype(self) -> SQL:
        if self.t is None:
            return NULL_STR
        if isinstance(self.t, int):
            return q(TYPE_IRI[self.t])
        return case([(f"{self.t} = {code}", q(iri)) for code, iri in TYPE_IRI.items()
                     if self.types is None or code in self.types])

    def enc(self) -> SQL:
        if self.t is None:
            return NULL_STR
        if isinstance(self.t, int):
            return f"concat('\"', {self.lexical()}, {q(chr(34) + '^^<' + TYPE_IRI[self.t] + '>')})"
        return f"concat('\"', {self.lexical()}, '\"^^<', {self.datatype()}, '>')"


def promote(*ts):
    """The promoted type code of numeric operands (max); None when one is statically not a number."""
    if any(t is None for t in ts):
        return None
    if all(isinstance(t, int) for t in ts):
        return max(ts)
    statics = [t for t in ts if isinstance(t, int)]
    cols = [t for t in ts if not isinstance(t, int)]
    if statics and max(statics) > INT:  # max(t, INT) is t
        cols.append(str(max(statics)))
    out = cols[0] if len(cols) == 1 else f"greatest({', '.join(cols)})"
    if len(cols) == 1:
        return out
    nulls = " OR ".join(f"{t} IS NULL" for t in ts if not isinstance(t, int))
    return f"(CASE WHEN {nulls} THEN NULL ELSE {out} END)"


def datatype_of_kind(c: SQL, sfx: SQL) -> SQL:
    return (f"(CASE WHEN {is_literal(c)} THEN (CASE WHEN startswith({sfx}, '^^<') "
            f"THEN substring({sfx}, 4, length({sfx}) - 4) WHEN startswith({sfx}, '@') THEN {q(RDF_LANGSTRING)} "
            f"ELSE {q(XSD_STRING)} END) END)")


def to_float_precision(f: SQL) -> SQL:
    return cast(cast(f, "FLOAT"), "DOUBLE")


def format_integer(d: SQL) -> SQL:
    return cast(cast(d, "DECIMAL(38,0)"), "STRING")


_E18 = Decimal(10) ** 18


def format_decimal(d: SQL) -> SQL:
    """XPath canonical xs:decimal: no trailing zeros, no trailing point (``2``, ``2.5``, ``-0.001``)."""
    def body(x: str) -> SQL:
        s = cast(x, "STRING")  # BigDecimal.toString: plain when |x| >= 1e-6, else scientific
        plain = f"rtrim('.', rtrim('0', {s}))"
        frac = f"({cast(f'abs({x})', 'DECIMAL(19,18)')} * {dec_lit(_E18, 19, 0)})"
        digits = f"rtrim('0', lpad({cast(cast(frac, 'DECIMAL(38,0)'), 'STRING')}, 18, '0'))"
        tiny = f"concat(CASE WHEN {x} < 0 THEN '-' ELSE '' END, '0.', {digits})"
        return (f"(CASE WHEN {x} = 0 THEN '0' WHEN abs({x}) < {dec_lit('0.000001', 7, 6)} THEN {tiny} "
                f"ELSE {plain} END)")
    return body(d) if is_name(d) else let(d, body)


def _java_string(x: SQL, is_float: SBool) -> SQL:
    """Java's Double.toString (Float.toString when ``is_float``) of ``x``: Spark's cast to STRING."""
    as_float = f"CAST(CAST({x} AS FLOAT) AS STRING)"
    if is_float is True:
        return as_float
    if is_float is False:
        return f"CAST({x} AS STRING)"
    return f"(CASE WHEN {is_float} THEN {as_float} ELSE CAST({x} AS STRING) END)"


def _with_java_strings(f: SQL, is_float: SBool, body) -> SQL:
    """``body(p)`` with ``p.s`` the Java string of ``f``, ``p.a`` that of ``abs(f)`` and ``p.v`` = ``abs(f)``:
    what both lexical forms of a double are built from."""
    return let(f"named_struct('s', {_java_string(f, is_float)}, 'a', {_java_string(f'abs({f})', is_float)}, "
               f"'v', abs({f}))", body)


def format_double(f: SQL, is_float: SBool = False) -> SQL:
    """XPath's xs:string of an xs:double / xs:float (``f`` simple; ``is_float`` a static boolean), from Java's
    Double.toString / Float.toString: plain decimal notation for 1e-6 <= |x| < 1e6, ``d.dddE[-]n`` otherwise."""
    def body(p: str) -> SQL:
        s, a, v = f"{p}.s", f"{p}.a", f"{p}.v"
        plain = f"rtrim('.', rtrim('0', CAST(CAST({a} AS DECIMAL(38,24)) AS STRING)))"
        sig = f"rtrim('0', replace({a}, '.', ''))"  # 1234567.0 -> 1234567
        mid = (f"concat(substring({sig}, 1, 1), '.', CASE WHEN length({sig}) = 1 THEN '0' ELSE substring({sig}, 2) END,"
               f" 'E6')")
        return (f"(CASE WHEN {s} = 'NaN' THEN 'NaN' WHEN {s} = 'Infinity' THEN 'INF' WHEN {s} = '-Infinity' THEN '-INF'"
                f" WHEN {v} = 0 THEN (CASE WHEN startswith({s}, '-') THEN '-0' ELSE '0' END)"
                f" ELSE concat(CASE WHEN startswith({s}, '-') THEN '-' ELSE '' END, (CASE WHEN {v} >= 1e-6D AND"
                f" {v} < 1e6D THEN {plain} WHEN {v} >= 1e6D AND {v} < 1e7D THEN {mid} ELSE {a} END)) END)")

    return _with_java_strings(f, is_float, body)


def canonical_decimal(d: SQL) -> SQL:
    """XML Schema 1.0 canonical xs:decimal: XPath's form with a point and at least one digit after it
    (``2.0``, ``2.5``, ``0.0``, ``-0.001``)."""
    return let(format_decimal(d), lambda s: f"(CASE WHEN instr({s}, '.') = 0 THEN concat({s}, '.0') ELSE {s} END)")


def canonical_double(f: SQL, is_float: SBool = False) -> SQL:
    """XML Schema 1.0 canonical xs:double / xs:float: one non-zero digit before the point, at least one after,
    then the exponent (``2.5E0``, ``2.0E-1``, ``1.0E7``, ``0.0E0``), ``INF``, ``-INF``, ``NaN``. Built from Java's
    shortest round-trip digits (Double.toString / Float.toString), so ``0.1`` stays ``1.0E-1``."""
    def body(p: str) -> SQL:
        s, a, v = f"{p}.s", f"{p}.a", f"{p}.v"
        whole, frac = f"substring_index({a}, '.', 1)", f"substring_index({a}, '.', -1)"
        sig = f"TRIM(TRAILING '0' FROM TRIM(LEADING '0' FROM concat({whole}, {frac})))"
        exp = (f"(CASE WHEN {whole} <> '0' THEN length({whole}) - 1 "
               f"ELSE -(length({frac}) - length(TRIM(LEADING '0' FROM {frac})) + 1) END)")
        sci = (f"concat(substring({sig}, 1, 1), '.', CASE WHEN length({sig}) = 1 THEN '0' ELSE substring({sig}, 2) END,"
               f" 'E', CAST({exp} AS STRING))")
        sign = f"(CASE WHEN startswith({s}, '-') THEN '-' ELSE '' END)"
        return (f"(CASE WHEN {s} = 'NaN' THEN 'NaN' WHEN {s} = 'Infinity' THEN 'INF' WHEN {s} = '-Infinity' THEN '-INF'"
                f" WHEN {v} = 0 THEN concat({sign}, '0.0E0')"
                f" ELSE concat({sign}, CASE WHEN instr({a}, 'E') > 0 THEN {a} ELSE {sci} END) END)")

    return _with_java_strings(f, is_float, body)


# ------------------------------------------------------------------------------------------- the value classes


class Cats:
    """Comparison categories of a value, as static booleans: valid numeric, simple / xsd:string literal,
    language-tagged literal, valid boolean, valid dateTime, valid date, literal of another (or an ill-formed
    known) datatype, literal at all, quoted triple, IRI, blank node; ``null`` is "is unbound / an error"."""

    __slots__ = ("null", "num", "str", "lang", "bool", "dt", "date", "other", "lit", "triple", "iri", "bnode")

    def __init__(self, **kw) -> None:
        for k in self.__slots__:
            setattr(self, k, kw.get(k, False))


class V:
    """A compiled value. Subclasses override what they know better than the encoded string.

    ``simple``: the value's SQL is cheap to repeat (an input, a lambda variable, a literal); ``pack()`` /
    ``unpacker()`` turn the value into one SQL value and back, for :func:`bind`."""

    simple = True
    known = False  # True: a computed number / boolean, whose value alone decides = (no term identity needed)
    maybe_time = True  # may be an xsd:dateTime / xsd:date
    _packed = None  # the one SQL value this V was unpacked from (see bind)

    def enc(self) -> SQL:
        raise NotImplementedError

    def pack(self) -> SQL:
        return self._packed if self._packed is not None else self.enc()

    def unpacker(self):
        return lambda x, simple: TermV(x, simple)

    def const(self):
        """The Python term when the value is a constant (None otherwise)."""
        return None

    def is_null(self) -> SBool:
        return f"({self.enc()} IS NULL)"

    # facets, derived from the encoded string by default
    def sfx(self) -> SQL:
        """The literal suffix (``^^<dt>``, ``@lang``, '') — some other text for non-literals."""
        return suffix(self.enc())

    def lexr(self) -> SQL:
        """The still-escaped lexical form (meaningful for literals)."""
        return raw_lexical(self.enc(), self.sfx())

    def num(self) -> Num:
        return num_of(self.sfx(), self.lexr())

    def time(self) -> SQL | None:
        """The time value (see ``expr_datetime.time_pack``) of a valid dateTime / date, else NULL; None when
        it is not precomputed (the caller builds it from the lexical form)."""
        return None

    def ebv(self) -> SQL:
        return ebv_of(self.enc(), self.sfx(), self.lexr(), self.num())

    def string(self):
        """(lexical, language) of a string literal (simple, xsd:string or language-tagged); both NULL otherwise.
        The language is '' for a simple literal; it is a Python str when statically known."""
        c, sfx = self.enc(), self.sfx()
        ok = f"({is_literal(c)} AND NOT startswith({sfx}, '^'))"
        return (f"(CASE WHEN {ok} THEN {unescape(self.lexr())} END)",
                f"(CASE WHEN {ok} THEN (CASE WHEN startswith({sfx}, '@') THEN substring({sfx}, 2) ELSE '' END) END)")

    def lexical(self) -> SQL:
        """Lexical form of a literal (NULL for other terms)."""
        return f"(CASE WHEN {is_literal(self.enc())} THEN {unescape(self.lexr())} END)"

    def datatype(self) -> SQL:
        """The datatype IRI of a literal (NULL otherwise)."""
        return datatype_of_kind(self.enc(), self.sfx())

    def language(self) -> SQL:
        """The language tag of a literal ('' when none; NULL for other terms)."""
        c, sfx = self.enc(), self.sfx()
        return (f"(CASE WHEN {is_literal(c)} THEN (CASE WHEN startswith({sfx}, '@') THEN substring({sfx}, 2) "
                f"ELSE '' END) END)")

    def iri_string(self) -> SQL:
        """The string of an IRI (NULL for other terms)."""
        c = self.enc()
        return f"(CASE WHEN {is_iri(c)} THEN substring({c}, 2, length({c}) - 2) END)"

    def bool_value(self) -> SQL:
        """The value of a valid xsd:boolean literal (NULL otherwise)."""
        lex = self.lexr()
        return (f"(CASE WHEN {self.sfx()} = {q(SFX_BOOL)} THEN (CASE WHEN {lex} IN ('true', '1') THEN true "
                f"WHEN {lex} IN ('false', '0') THEN false END) END)")

    def cats(self) -> Cats:
        c, sfx, lex = self.enc(), self.sfx(), self.lexr()
        lit = is_literal(c)
        num_ok = sql_bool(self.num().is_num())
        strl = f"({lit} AND {sfx} = '')"
        lang = f"({lit} AND startswith({sfx}, '@'))"
        boolv = f"({sfx} = {q(SFX_BOOL)} AND {lex} IN ('true', 'false', '1', '0'))"
        dt = f"({sfx} = {q(SFX_DT)} AND {lex} RLIKE {q(RE_DT)})"
        date = f"({sfx} = {q(SFX_DATE)} AND {lex} RLIKE {q(RE_DATE)})"
        other = f"({lit} AND NOT ({num_ok} OR {sfx} = '' OR startswith({sfx}, '@') OR {boolv} OR {dt} OR {date}))"
        return Cats(null=f"({c} IS NULL)", num=num_ok, str=strl, lang=lang, bool=boolv, dt=dt, date=date,
                    other=other, lit=lit, triple=is_triple(c), iri=is_iri(c), bnode=is_bnode(c))


class TermV(V):
    """Any encoded term (a variable, an extension function's result)."""

    def __init__(self, col: SQL, simple: bool | None = None) -> None:
        self.col = col
        self.simple = is_name(col) if simple is None else simple

    def enc(self) -> SQL:
        return self.col


K_NUM, K_STR, K_LANG, K_BOOL, K_DT, K_DATE, K_OTHER, K_IRI, K_BNODE, K_TRIPLE = range(10)


_KIND_MAP = f"map('boolean', {K_BOOL}, 'dateTime', {K_DT}, 'date', {K_DATE})"
_KIND_RE = f"map({K_BOOL}, '^(true|false|1|0)$', {K_DT}, {q(RE_DT)}, {K_DATE}, {q(RE_DATE)})"


def kind_code(c: SQL, sfx: SQL, lexr: SQL, t: SQL) -> SQL:
    """The comparison category of a term as a small integer (see the K_* codes; NULL for unbound)."""
    k0 = f"try_element_at({_KIND_MAP}, {xsd_local(sfx)})"
    known = f"(CASE WHEN {lexr} RLIKE try_element_at({_KIND_RE}, {k0}) THEN {k0} ELSE {K_OTHER} END)"
    return (f"(CASE WHEN {c} IS NULL THEN NULL WHEN NOT {is_literal(c)} THEN (CASE WHEN {is_bnode(c)} THEN {K_BNODE}"
            f" WHEN {is_triple(c)} THEN {K_TRIPLE} ELSE {K_IRI} END)"
            f" WHEN {t} IS NOT NULL THEN {K_NUM} WHEN {sfx} = '' THEN {K_STR} WHEN startswith({sfx}, '@') THEN {K_LANG}"
            f" ELSE {known} END)")


class FacetV(TermV):
    """A term whose suffix, raw lexical form, numeric value, category (and time value) were computed once:
    fields of a struct bound by :func:`bind` (see :func:`facet_pack`)."""

    def __init__(self, x: str, level: str) -> None:
        TermV.__init__(self, f"{x}.enc", simple=True)
        self.x = x
        self.level = level

    def sfx(self) -> SQL:
        return f"{self.x}.sfx"

    def lexr(self) -> SQL:
        return f"{self.x}.lexr"

    def num(self) -> Num:
        return Num(f"{self.x}.t", d=f"{self.x}.d", f=f"{self.x}.f")

    def time(self) -> SQL | None:
        return f"{self.x}.tp" if self.level == "cmp" else None

    def cats(self) -> Cats:
        if self.level == "num":
            return TermV.cats(self)
        k = f"{self.x}.k"
        return Cats(null=f"({k} IS NULL)", num=f"({k} = {K_NUM})", str=f"({k} = {K_STR})", lang=f"({k} = {K_LANG})",
                    bool=f"({k} = {K_BOOL})", dt=f"({k} = {K_DT})", date=f"({k} = {K_DATE})",
                    other=f"({k} = {K_OTHER})", lit=f"({k} <= {K_OTHER})", iri=f"({k} = {K_IRI})",
                    bnode=f"({k} = {K_BNODE})", triple=f"({k} = {K_TRIPLE})")


# The name of the session's UDF giving a term's facets (``rspark.jvm.TermFacets``) for the compilation under way in
# this thread (set by rspark.spark.expr.compile from its ExprEnv; None: the facets are computed in SQL)
_FACETS_UDF: ContextVar[str | None] = ContextVar("rspark_facets_udf", default=None)


@contextmanager
def facets_udf(name: str | None):
    """The facet structs built inside are the UDF ``name``'s (None: their SQL)."""
    previous = _FACETS_UDF.set(name)
    try:
        yield
    finally:
        _FACETS_UDF.reset(previous)


def current_facets_udf() -> str | None:
    """The facets UDF of the compilation under way (:func:`facets_udf`), or None."""
    return _FACETS_UDF.get()


def facet_pack(c: SQL, level: str = "num") -> SQL:
    """The facet struct of an encoded term: enc, sfx, lexr, t, d, f; with level "cmp" / "leaf" also the
    category ``k``; with "cmp" also the time value ``tp`` of a dateTime / date. With the session's JVM helpers
    (:func:`facets_udf`) one UDF call gives the struct with ``k`` (for every level: a field nobody reads costs
    nothing to analyse), else it is built in SQL, with the same values (tests/test_term_facets.py)."""
    udf = _FACETS_UDF.get()
    if udf is not None:
        packed = f"{udf}({c})"
        return let(packed, _with_time) if level == "cmp" else packed
    if not is_name(c):
        return let(c, lambda x: facet_pack(x, level))
    sfx = suffix(c)

    def body(y: str) -> SQL:
        enc, sfx_, t0 = f"{y}.enc", f"{y}.sfx", f"{y}.t0"
        lexr = raw_lexical(enc, sfx_)
        t = decimal_scale(f"(CASE WHEN {lexr} RLIKE try_element_at({_NUM_RE}, {t0}) THEN {t0} END)", lexr)
        d = f"(CASE WHEN {t0} <= {DEC} THEN CAST({lexr} AS {DEC_T}) END)"
        f = (f"(CASE WHEN {t0} = {DBL} THEN CAST({lexr} AS DOUBLE) "
             f"WHEN {t0} = {FLT} THEN {to_float_precision(cast(lexr, 'DOUBLE'))} END)")
        fields = [f"'enc', {enc}", f"'sfx', {sfx_}", f"'lexr', {lexr}", f"'t', {t}", f"'d', {d}", f"'f', {f}"]
        if level in ("cmp", "leaf"):
            fields.append(f"'k', {kind_code(enc, sfx_, lexr, t)}")
        packed = "named_struct(" + ", ".join(fields) + ")"
        if level != "cmp":
            return packed
        return let(packed, _with_time)

    return let(f"named_struct('enc', {c}, 'sfx', {sfx}, 't0', {num_type0(sfx)})", body)


def _with_time(z: str) -> SQL:
    """The facet struct ``z`` (with ``k``) and the time value ``tp`` of a dateTime / date."""
    names = ("enc", "sfx", "lexr", "t", "d", "f", "k")
    norm = f"(CASE WHEN {z}.k = {K_DATE} THEN {date_as_datetime(z + '.lexr')} ELSE {z}.lexr END)"
    tp = f"(CASE WHEN {z}.k IN ({K_DT}, {K_DATE}) THEN {time_pack(norm)} END)"
    return "named_struct(" + ", ".join(f"'{n}', {z}.{n}" for n in names) + f", 'tp', {tp})"


class NullV(V):
    """The unbound / error value (an out-of-scope variable, a statically failing expression)."""

    maybe_time = False

    def enc(self) -> SQL:
        return NULL_STR

    def unpacker(self):
        return lambda x, simple: NullV()

    def is_null(self) -> SBool:
        return True

    def num(self) -> Num:
        return Num(None)

    def ebv(self) -> SQL:
        return NULL_BOOL

    def string(self):
        return NULL_STR, NULL_STR

    def lexical(self) -> SQL:
        return NULL_STR

    def datatype(self) -> SQL:
        return NULL_STR

    def language(self) -> SQL:
        return NULL_STR

    def iri_string(self) -> SQL:
        return NULL_STR

    def bool_value(self) -> SQL:
        return NULL_BOOL

    def cats(self) -> Cats:
        return Cats(null=True)


class NumV(V):
    """A computed number."""

    maybe_time = False

    known = True  # never an IRI, a blank node, a triple or a literal of another category

    def __init__(self, n: Num, simple: bool = False) -> None:
        self.n = n
        self.simple = simple or n.t is None

    def enc(self) -> SQL:
        return self.n.enc()

    def _layout(self):
        n = self.n
        dyn = n.t is not None and not isinstance(n.t, int)
        return dyn, n.t_is(INT, DEC0, DEC) is not False, n.t_is(FLT, DBL) is not False

    def pack(self) -> SQL:
        n = self.n
        if self._packed is not None:
            return self._packed
        if n.t is None:
            return "NULL"
        dyn, has_d, has_f = self._layout()
        fields = ([f"'t', {n.t}"] if dyn else []) + ([f"'d', {n.d}"] if has_d else []) + \
            ([f"'f', {n.f}"] if has_f else [])
        return "named_struct(" + ", ".join(fields) + ")"

    def unpacker(self):
        t = self.n.t
        if t is None:
            return lambda x, simple: NumV(Num(None))
        dyn, has_d, has_f = self._layout()
        return lambda x, simple: NumV(Num(f"{x}.t" if dyn else t, d=f"{x}.d" if has_d else None,
                                          f=f"{x}.f" if has_f else None), simple)

    def is_null(self) -> SBool:
        return b_not(self.n.value_ok())

    def num(self) -> Num:
        return self.n

    def ebv(self) -> SQL:
        n = self.n
        return case([(n.t_is(INT, DEC0, DEC), f"({n.d} != 0)"),
                     (n.t_is(FLT, DBL), f"({n.f} != 0 AND NOT isnan({n.f}))")])

    def string(self):
        return NULL_STR, NULL_STR

    def lexical(self) -> SQL:
        return self.n.lexical()

    def datatype(self) -> SQL:
        ok = self.n.value_ok()
        if ok is False:
            return NULL_STR
        return f"(CASE WHEN {sql_bool(ok)} THEN {self.n.datatype()} END)"

    def language(self) -> SQL:
        return f"(CASE WHEN {sql_bool(self.n.value_ok())} THEN '' END)"

    def iri_string(self) -> SQL:
        return NULL_STR

    def bool_value(self) -> SQL:
        return NULL_BOOL

    def cats(self) -> Cats:
        ok = self.n.value_ok()
        return Cats(null=b_not(ok), num=ok, lit=ok)


class BoolV(V):
    """A computed xsd:boolean (``b`` NULL = error)."""

    maybe_time = False

    known = True

    def __init__(self, b: SQL, simple: bool = False) -> None:
        self.b = b
        self.simple = simple or is_name(b) or b in ("true", "false")

    def enc(self) -> SQL:
        return f"(CASE WHEN {self.b} THEN {q(TRUE_ENC)} WHEN NOT {self.b} THEN {q(FALSE_ENC)} END)"

    def pack(self) -> SQL:
        return self._packed if self._packed is not None else self.b

    def unpacker(self):
        return lambda x, simple: BoolV(x, simple)

    def is_null(self) -> SBool:
        return f"({self.b} IS NULL)"

    def num(self) -> Num:
        return Num(None)

    def ebv(self) -> SQL:
        return self.b

    def string(self):
        return NULL_STR, NULL_STR

    def lexical(self) -> SQL:
        return f"(CASE WHEN {self.b} THEN 'true' WHEN NOT {self.b} THEN 'false' END)"

    def datatype(self) -> SQL:
        return f"(CASE WHEN {self.b} IS NOT NULL THEN {q(XSD_BOOLEAN)} END)"

    def language(self) -> SQL:
        return f"(CASE WHEN {self.b} IS NOT NULL THEN '' END)"

    def iri_string(self) -> SQL:
        return NULL_STR

    def bool_value(self) -> SQL:
        return self.b

    def cats(self) -> Cats:
        return Cats(null=f"({self.b} IS NULL)", bool=f"({self.b} IS NOT NULL)", lit=f"({self.b} IS NOT NULL)")


class StrV(V):
    """A computed string literal: lexical form and language tag (Python '' = simple literal; or SQL, '' meaning
    simple). A NULL lexical form is an error."""

    maybe_time = False

    def __init__(self, lex: SQL, lang=None, simple: bool = False, packed: SQL | None = None) -> None:
        self.lex = lex
        self.lang = SIMPLE if lang is None else lang
        self.simple = simple
        self._packed = packed

    def enc(self) -> SQL:
        body = f"concat('\"', {escape(self.lex)}, '\"')"
        if _static_lang(self.lang):
            return body if self.lang == "" else f"concat({body}, {q('@' + self.lang.lower())})"
        return f"(CASE WHEN {self.lang} = '' THEN {body} ELSE concat({body}, '@', lower({self.lang})) END)"

    def pack(self) -> SQL:
        if self._packed is not None:
            return self._packed
        if _static_lang(self.lang):
            return self.lex
        return f"named_struct('lex', {self.lex}, 'lang', {self.lang})"

    def unpacker(self):
        lang = self.lang
        if _static_lang(lang):
            return lambda x, simple: StrV(x, lang, simple)
        return lambda x, simple: StrV(f"{x}.lex", f"{x}.lang", simple)

    def is_null(self) -> SBool:
        if _static_lang(self.lang):
            return f"({self.lex} IS NULL)"
        return f"({self.lex} IS NULL OR {self.lang} IS NULL)"

    def num(self) -> Num:
        return Num(None)

    def ebv(self) -> SQL:
        if _static_lang(self.lang):
            return f"(length({self.lex}) > 0)" if self.lang == "" else NULL_BOOL
        return f"(CASE WHEN {self.lang} = '' THEN length({self.lex}) > 0 END)"

    def string(self):
        return self.lex, self.lang

    def lexical(self) -> SQL:
        return self.lex

    def datatype(self) -> SQL:
        if _static_lang(self.lang):
            return f"(CASE WHEN {self.lex} IS NOT NULL THEN {q(XSD_STRING if self.lang == '' else RDF_LANGSTRING)} END)"
        return (f"(CASE WHEN {self.lex} IS NOT NULL THEN (CASE WHEN {self.lang} = '' THEN {q(XSD_STRING)} "
                f"ELSE {q(RDF_LANGSTRING)} END) END)")

    def language(self) -> SQL:
        if _static_lang(self.lang):
            return f"(CASE WHEN {self.lex} IS NOT NULL THEN {q(self.lang)} END)"
        return f"(CASE WHEN {self.lex} IS NOT NULL THEN lower({self.lang}) END)"

    def iri_string(self) -> SQL:
        return NULL_STR

    def bool_value(self) -> SQL:
        return NULL_BOOL

    def cats(self) -> Cats:
        ok = b_not(self.is_null())
        if _static_lang(self.lang):
            return Cats(null=self.is_null(), str=ok if self.lang == "" else False,
                        lang=ok if self.lang != "" else False, lit=ok)
        return Cats(null=self.is_null(), str=b_and(ok, f"({self.lang} = '')"),
                    lang=b_and(ok, f"({self.lang} != '')"), lit=ok)


class Lang(str):
    """A language tag known in Python (as opposed to SQL text computing one)."""


def static_lang(tag: str) -> Lang:
    return Lang(tag.lower())


SIMPLE = Lang("")


def is_static_lang(lang) -> bool:
    return isinstance(lang, Lang)


def _static_lang(lang) -> bool:
    return isinstance(lang, Lang)


class ConstV(V):
    """A constant term, known in Python."""

    def __init__(self, term) -> None:
        self.term = term
        self._enc = encode(term)

    def enc(self) -> SQL:
        return q(self._enc)

    def unpacker(self):
        return lambda x, simple: self

    def const(self):
        return self.term

    def is_null(self) -> SBool:
        return False

    def sfx(self) -> SQL:
        t = self.term
        if isinstance(t, Literal):
            return q(self._enc[self._enc.rindex('"') + 1:])
        return suffix(self.enc())

    def lexr(self) -> SQL:
        t = self.term
        if isinstance(t, Literal):
            return q(self._enc[1:self._enc.rindex('"')])
        return raw_lexical(self.enc())

    def num(self) -> Num:
        return const_num(self.term)

    def time(self) -> SQL | None:
        return const_time_pack(self.term)

    @property
    def maybe_time(self) -> bool:
        cats = self.cats()
        return bool(cats.dt or cats.date)

    def ebv(self) -> SQL:
        value = const_ebv(self.term)
        return NULL_BOOL if value is None else ("true" if value else "false")

    def string(self):
        t = self.term
        if isinstance(t, Literal) and t.datatype in (XSD_STRING, RDF_LANGSTRING):
            return q(t.lexical), static_lang(t.language or "")
        return NULL_STR, NULL_STR

    def lexical(self) -> SQL:
        return q(self.term.lexical) if isinstance(self.term, Literal) else NULL_STR

    def datatype(self) -> SQL:
        return q(self.term.datatype) if isinstance(self.term, Literal) else NULL_STR

    def language(self) -> SQL:
        return q((self.term.language or "").lower()) if isinstance(self.term, Literal) else NULL_STR

    def iri_string(self) -> SQL:
        return q(self.term.value) if isinstance(self.term, IRI) else NULL_STR

    def bool_value(self) -> SQL:
        t = self.term
        if isinstance(t, Literal) and t.datatype == XSD_BOOLEAN and t.lexical in ("true", "false", "1", "0"):
            return "true" if t.lexical in ("true", "1") else "false"
        return NULL_BOOL

    def cats(self) -> Cats:
        t = self.term
        if not isinstance(t, Literal):
            return Cats(triple=isinstance(t, QuotedTriple), iri=isinstance(t, IRI), bnode=isinstance(t, BlankNode))
        num = const_num(t).t is not None
        strl = t.datatype == XSD_STRING
        lang = t.datatype == RDF_LANGSTRING
        boolv = t.datatype == XSD_BOOLEAN and t.lexical in ("true", "false", "1", "0")
        dt = t.datatype == XSD_DATETIME and re.match(_py_re(RE_DT), t.lexical) is not None
        date = t.datatype == XSD_DATE and re.match(_py_re(RE_DATE), t.lexical) is not None
        other = not (num or strl or lang or boolv or dt or date)
        return Cats(num=num, str=strl, lang=lang, bool=boolv, dt=dt, date=date, other=other, lit=True)


def _py_re(java_re: str) -> str:
    return java_re[:-1] + r"\Z" if java_re.endswith("$") else java_re


# --------------------------------------------------------------------------------------- facets of a constant


def const_num(term) -> Num:
    if not isinstance(term, Literal):
        return Num(None)
    dt = term.datatype
    code = INT if dt in INTEGER_DERIVED else NUM_DATATYPES.get(dt)
    if code is None:
        return Num(None)
    lex = term.lexical
    pattern = {INT: RE_INT, DEC: RE_DEC}.get(code, RE_DBL)
    if re.match(_py_re(pattern), lex) is None:
        return Num(None)
    if code in (INT, DEC):
        try:
            value = Decimal(lex)
        except InvalidOperation:  # pragma: no cover - the pattern excludes it
            return Num(None)
        if code == DEC and "." not in lex:
            code = DEC0
        if abs(value) >= Decimal(10) ** 20:
            return Num(code, d=f"CAST(NULL AS {DEC_T})")
        return Num(code, d=dec_lit(value))
    fv = float(lex.replace("INF", "inf"))
    if code == FLT and fv == fv and abs(fv) != float("inf"):
        try:
            fv = struct.unpack("f", struct.pack("f", fv))[0]
        except OverflowError:
            fv = float("inf") if fv > 0 else float("-inf")
    return Num(code, f=dbl_lit(fv))


def const_ebv(term):
    """EBV of a constant term in Python: True / False / None (error)."""
    if not isinstance(term, Literal):
        return None
    dt = term.datatype
    if dt == XSD_BOOLEAN:
        return term.lexical in ("true", "1")
    if dt == XSD_STRING:
        return term.lexical != ""
    code = INT if dt in INTEGER_DERIVED else NUM_DATATYPES.get(dt)
    if code is None:
        return None
    pattern = {INT: RE_INT, DEC: RE_DEC}.get(code, RE_DBL)
    if re.match(_py_re(pattern), term.lexical) is None:
        return False
    if code in (INT, DEC):
        return Decimal(term.lexical) != 0
    fv = float(term.lexical.replace("INF", "inf"))
    return fv == fv and fv != 0


# ------------------------------------------------------------------------------------ facets of an encoded term


_XSD_SFX = "^^<" + XSD


def xsd_local(sfx: SQL) -> SQL:
    """The local name of an XSD datatype suffix (``^^<...XMLSchema#integer>`` -> ``integer``), else NULL."""
    n = len(_XSD_SFX)
    return f"(CASE WHEN startswith({sfx}, {q(_XSD_SFX)}) THEN substring({sfx}, {n + 1}, length({sfx}) - {n + 1}) END)"


_NUM_MAP = "map(" + ", ".join(f"{q(d[len(XSD):])}, {INT}" for d in (XSD_INTEGER,) + INTEGER_DERIVED) + \
    f", 'decimal', {DEC}, 'float', {FLT}, 'double', {DBL})"
NUM_RE_MAP = _NUM_RE = f"map({INT}, {q(RE_INT)}, {DEC}, {q(RE_DEC)}, {FLT}, {q(RE_DBL)}, {DBL}, {q(RE_DBL)})"


def num_type0(sfx: SQL) -> SQL:
    """The numeric type code a literal's datatype announces (its lexical form not checked)."""
    return f"try_element_at({_NUM_MAP}, {xsd_local(sfx)})"


def num_type(sfx: SQL, lex: SQL) -> SQL:
    """The numeric type code of a literal from its suffix and raw lexical form (NULL: not a valid number)."""
    t0 = num_type0(sfx)
    return decimal_scale(f"(CASE WHEN {lex} RLIKE try_element_at({_NUM_RE}, {t0}) THEN {t0} END)", lex)


def decimal_scale(t: SQL, lex: SQL) -> SQL:
    """DEC0 for a decimal written without a point, else the type code ``t``."""
    return f"(CASE WHEN {t} = {DEC} AND instr({lex}, '.') = 0 THEN {DEC0} ELSE {t} END)"


def num_of(sfx: SQL, lex: SQL, t: SQL | None = None) -> Num:
    t = num_type(sfx, lex) if t is None else t
    return Num(t, d=lambda: f"(CASE WHEN {t} <= {DEC} THEN CAST({lex} AS {DEC_T}) END)",
               f=lambda: (f"(CASE WHEN {t} = {DBL} THEN CAST({lex} AS DOUBLE) "
                          f"WHEN {t} = {FLT} THEN {to_float_precision(cast(lex, 'DOUBLE'))} END)"))


NUMERIC_SFXS = INT_SFXS + [SFX_DEC, SFX_DBL, SFX_FLT]


def ebv_of(c: SQL, sfx: SQL, lex: SQL, n: Num) -> SQL:
    """Effective boolean value (17.2.2) of an encoded term: NULL = error."""
    num_ebv = case([(n.t_is(INT, DEC0, DEC), f"({n.d} != 0)"),
                    (n.t_is(FLT, DBL), f"({n.f} != 0 AND NOT isnan({n.f}))")])
    nums = ", ".join(q(s) for s in NUMERIC_SFXS)
    return (f"(CASE WHEN {sfx} = {q(SFX_BOOL)} THEN {lex} IN ('true', '1')"
            f" WHEN {sfx} IN ({nums}) THEN coalesce({num_ebv}, false)"
            f" WHEN {is_literal(c)} AND {sfx} = '' THEN length({lex}) > 0 END)")


# ------------------------------------------------------------------------------------------------ let-binding


def bind(values: list, fn_, facets: str | None = None, faceted: tuple | None = None):
    """Call ``fn_`` on values that are all cheap to repeat: every non-simple value is evaluated once (a
    one-element ``transform_values``, :func:`let_in`) and ``fn_`` sees a simple copy. With ``facets`` ("num",
    "cmp", "leaf"), plain terms are bound together with their facets (:func:`facet_pack`), for operators that look
    at those many times. ``fn_`` returns SQL or a V; so does ``bind``."""
    def faceting(i: int, v) -> bool:
        return facets is not None and type(v) is TermV and (faceted is None or i in faceted)

    idx = [i for i, v in enumerate(values) if not v.simple or faceting(i, v)]
    if not idx:
        return fn_(list(values))
    packs, unpackers = [], []
    for i in idx:
        v = values[i]
        if faceting(i, v):
            packs.append(facet_pack(v.enc(), facets))
            unpackers.append(lambda x, simple, level=facets: FacetV(x, level))
        else:
            packs.append(v.pack())
            unpackers.append(v.unpacker())
    name = fresh()
    packed = "named_struct(" + ", ".join(f"'f{k}', {p}" for k, p in enumerate(packs)) + ")"
    inner = list(values)
    for k, i in enumerate(idx):
        inner[i] = unpackers[k](f"{name}.f{k}", True)
    out = fn_(inner)
    if isinstance(out, str):
        return let_in(packed, name, out)
    result = let_in(packed, name, out.pack())
    v = out.unpacker()(result, False)
    if not v.simple:
        v._packed = result
    return v
