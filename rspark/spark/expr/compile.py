"""SPARQL 1.1 (+ SPARQL-star) expressions compiled into Spark Column expressions.

Every RDF term is an encoded string (``rspark.model.codec``); a compiled expression is a Column of that
encoding, NULL for unbound or an error (section 17.3: errors propagate, FILTER keeps only true). The public entry
points:

``compile_expr(expr, scope, env)``       the value of an expression as an encoded-term Column
``compile_ebv(expr, scope, env)``        its effective boolean value (boolean Column, NULL = error)
``compile_aggregate(agg, scope, env)``   an aggregate Column for ``df.groupBy(...).agg(...)``
``order_keys(col, ascending)``           sort Columns giving SPARQL's ORDER BY order for an encoded column
``term_literal(term)``                   the literal Column of a constant term

The scope (:class:`ExprScope`) tells what the variables are bound to; the environment (:class:`ExprEnv`) holds
what is fixed for one evaluation (NOW(), the base IRI). Everything runs as Spark's built-in functions (no Python
UDF): an expression is compiled into Spark SQL text and becomes one ``F.expr`` (see ``expr_sql``). The compiled
expressions assume ``spark.sql.ansi.enabled=false`` (as ``rspark.spark.session`` configures it): an invalid cast
or a decimal overflow is then NULL, i.e. a SPARQL error.

The work is split by the specification's sections: ``expr_sql`` (SQL building, the encoding in SQL),
``expr_values`` (the value model, number formatting, let-binding), ``expr_numeric`` (arithmetic, casts),
``expr_compare`` (=, <, ORDER BY, quoted triples), ``expr_string`` (string and term functions),
``expr_datetime`` (dates), ``expr_aggregate`` (aggregates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import Column
from pyspark.sql import functions as F

from rspark.algebra.expr import Aggregate, Call, Exists, FunctionCall
from rspark.errors import NotSupportedError
from rspark.model.codec import encode
from rspark.model.terms import (
    IRI,
    XSD_BOOLEAN,
    XSD_DATETIME,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
    BlankNode,
    Literal,
    QuotedTriple,
    Variable,
    is_ground,
)
from rspark.spark.expr import strings as S
from rspark.spark.expr.aggregate import build_aggregate
from rspark.spark.expr.compare import compare, eq, same_term, sort_key, triple_component
from rspark.spark.expr.datetimes import cast_datetime, date_part
from rspark.spark.expr.guarded import numeric_comparisons
from rspark.spark.expr.numeric import arith, cast_boolean, cast_numeric, cast_string, identity, negate, rounding
from rspark.spark.expr.sql import naming, parsed
from rspark.spark.expr.values import (
    DBL,
    XSD_DATE,
    XSD_FLOAT,
    BoolV,
    ConstV,
    FacetV,
    NullV,
    Num,
    NumV,
    TermV,
    V,
    bind,
    facet_pack,
    facets_udf,
    fresh,
    let_in,
    to_column,
    token,
)

__all__ = ["ExprScope", "ExprEnv", "compile_expr", "compile_ebv", "compile_aggregate", "order_keys", "term_literal"]


class ExprScope(Protocol):
    def column(self, name: str) -> Column | None:
        """The encoded-term column of variable ``name`` (no '?'); None: not in scope (always unbound)."""

    def exists(self, node) -> Column:
        """A non-null boolean column: does ``node.pattern`` have a compatible solution (``node.negated`` is
        ignored; the compiler applies NOT)."""

    def row_id(self) -> Column:
        """A column unique per solution (BNODE(str) gives one label per string within a solution)."""

    def extension(self, call) -> Column | None:
        """An encoded-term column for an RSP function the scope knows (TIMESTAMP, GETDURATION, ...); None:
        unknown. An optional ``all_columns()`` method (the solution's columns) enables COUNT(DISTINCT *)."""


@dataclass(frozen=True)
class ExprEnv:
    now: str  # the xsd:dateTime lexical form NOW() returns, fixed for one evaluation
    base_iri: str | None = None  # for IRI() / URI() of relative strings
    now_sql: str | None = None  # SQL giving NOW()'s encoded term per row instead (a replay: the evaluation instant)
    sum_avg: str | None = None  # the session's JVM UDF for SUM's / AVG's final value (None: their SQL)
    facets: str | None = None  # the session's JVM UDF for a term's facets (None: their SQL, values.facet_pack)


def compile_expr(expr, scope: ExprScope, env: ExprEnv) -> Column:
    """The value of ``expr`` as an encoded-term string Column (NULL = unbound or error)."""
    with naming(), facets_udf(env.facets):
        c = _Compiler(scope, env)
        return c.column(c.with_shared_facets(expr, lambda: bind([c.value(expr)],
                                                                    lambda vs: f"CAST({vs[0].enc()} AS STRING)")))


def compile_ebv(expr, scope: ExprScope, env: ExprEnv) -> Column:
    """The effective boolean value of ``expr``: a boolean Column, NULL for an error (FILTER drops it). Comparisons
    of numeric literals with constants take a guarded fast path (:mod:`rspark.spark.expr.guarded`)."""
    with naming(), facets_udf(env.facets):
        c = _Compiler(scope, env)

        def var_sql(name: str) -> str | None:
            v = c.value(Variable(name))
            return v.enc() if isinstance(v, TermV) else None

        # the variables' own columns first (the general compilation then binds shared ones to their facets)
        guarded = numeric_comparisons(expr, var_sql, "{general}")
        general = c.with_shared_facets(expr, lambda: bind(
            [c.value(expr)], lambda vs: f"CAST({vs[0].ebv()} AS BOOLEAN)", facets="num"))
        return c.column(general if guarded is None else guarded.replace("{general}", general, 1))


def compile_aggregate(agg: Aggregate, scope: ExprScope, env: ExprEnv, pre: dict | None = None,
                      partials: dict | None = None) -> Column:
    """An aggregate Column (encoded term or NULL) over the rows of a group; ``scope`` is the input's scope.
    ``pre``: a dict that receives per-row columns (name -> Column) to add to the input before grouping.
    ``partials``: a dict that receives the aggregate's partial values over parts of a group (name -> aggregate
    Column); the Column returned then merges them (``rspark.spark.expr.aggregate.build_aggregate``)."""
    with naming(), facets_udf(env.facets):
        return build_aggregate(agg, _Compiler(scope, env), pre, partials)


def order_keys(col: Column, ascending: bool = True, facets: str | None = None) -> list[Column]:
    """Sort Columns giving SPARQL's ORDER BY order (15.1) for an encoded-term column: unbound first, then blank
    nodes, IRIs, literals (numbers by value, strings by code point, date-times by value, the rest by lexical
    form), quoted triples; ``ascending=False`` reverses it (unbound last). ``facets``: the session's facets UDF
    (:attr:`ExprEnv.facets`; None: the facets in SQL)."""
    return [directed(order_key(col, facets), ascending)]


def directed(key: Column, ascending: bool) -> Column:
    """The sort order of an :func:`order_key` column: ascending with unbound first, or descending with unbound
    last."""
    return key.asc_nulls_first() if ascending else key.desc_nulls_last()


def order_key(col: Column, facets: str | None = None) -> Column:
    """The orderable struct of :func:`order_keys` (NULL for unbound)."""
    with naming(), facets_udf(facets):
        return to_column(sort_key(TermV(token(0), simple=True)), [col])


def term_literal(term) -> Column:
    """The literal Column of a constant term (IRI, literal, blank node, ground quoted triple; None = NULL)."""
    if term is None:
        return F.lit(None).cast("string")
    return F.lit(encode(term))


_CASTS = (XSD_INTEGER, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE)
_ARITY = {
    "STR": 1, "LANG": 1, "DATATYPE": 1, "IRI": 1, "URI": 1, "ABS": 1, "CEIL": 1, "FLOOR": 1, "ROUND": 1,
    "STRLEN": 1, "UCASE": 1, "LCASE": 1, "ENCODE_FOR_URI": 1, "YEAR": 1, "MONTH": 1, "DAY": 1, "HOURS": 1,
    "MINUTES": 1, "SECONDS": 1, "TIMEZONE": 1, "TZ": 1, "MD5": 1, "SHA1": 1, "SHA256": 1, "SHA384": 1,
    "SHA512": 1, "ISIRI": 1, "ISURI": 1, "ISBLANK": 1, "ISLITERAL": 1, "ISNUMERIC": 1, "ISTRIPLE": 1,
    "SUBJECT": 1, "PREDICATE": 1, "OBJECT": 1, "LANGMATCHES": 2, "CONTAINS": 2, "STRSTARTS": 2, "STRENDS": 2,
    "STRBEFORE": 2, "STRAFTER": 2, "STRLANG": 2, "STRDT": 2, "SAMETERM": 2, "IF": 3, "TRIPLE": 3,
    "NOW": 0, "RAND": 0, "UUID": 0, "STRUUID": 0, "BOUND": 1,
}


# operators that look at their operands' lexical form and numeric value many times: their variables are bound
# once with those facets precomputed
_FACETED = {name: "cmp" for name in ("=", "!=", "<", ">", "<=", ">=", "IN", "NOT IN")}
_FACETED.update({name: "num" for name in ("+", "-", "*", "/", "UPLUS", "UMINUS", "ABS", "CEIL", "FLOOR", "ROUND",
                                          "&&", "||", "!", "IF", "SUBSTR")})
_FACETED_ARGS = {"IF": (0,), "SUBSTR": (1, 2)}  # only these arguments need the facets
_XSD_CASTS = (XSD_INTEGER, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE, XSD_BOOLEAN, XSD_STRING, XSD_DATETIME, XSD_DATE)


def _faceted_uses(expr, levels: dict) -> None:
    """Collect, per variable, the facet levels of the operators that take it directly as an operand."""
    if isinstance(expr, Call):
        level = _FACETED.get(expr.name)
        if level == "cmp" and any(isinstance(a, (Literal, IRI)) and not _date_literal(a) for a in expr.args):
            level = "leaf"
        for i, arg in enumerate(expr.args):
            wanted = expr.name not in _FACETED_ARGS or i in _FACETED_ARGS[expr.name]
            if level and isinstance(arg, Variable) and wanted:
                levels.setdefault(arg.name, []).append(level)
            _faceted_uses(arg, levels)
    elif isinstance(expr, FunctionCall):
        for arg in expr.args:
            if isinstance(arg, Variable) and expr.iri.value in _XSD_CASTS:
                levels.setdefault(arg.name, []).append("num")
            _faceted_uses(arg, levels)


def _date_literal(term) -> bool:
    return isinstance(term, Literal) and term.datatype in (XSD_DATETIME, XSD_DATE)


class _Compiler:
    def __init__(self, scope: ExprScope, env: ExprEnv) -> None:
        self.scope = scope
        self.env = env
        self.inputs: list[Column] = []
        self._vars: dict[str, str] = {}
        self._facet_vars: dict[str, V] = {}

    def with_shared_facets(self, expr, build) -> str:
        """``build()`` with the variables that several operators look into bound once, with their facets."""
        levels: dict[str, list[str]] = {}
        _faceted_uses(expr, levels)
        shared = {}
        for name, uses in levels.items():
            if len(uses) < 2:
                continue
            v = self.value(Variable(name))
            if isinstance(v, TermV):
                shared[name] = (v, "cmp" if "cmp" in uses else "leaf" if "leaf" in uses else "num")
        if not shared:
            return build()
        x = fresh()
        fields = []
        for i, (name, (v, level)) in enumerate(shared.items()):
            fields.append(f"'v{i}', {facet_pack(v.enc(), level)}")
            self._facet_vars[name] = FacetV(f"{x}.v{i}", level)
        return let_in(f"named_struct({', '.join(fields)})", x, build())

    def input(self, col: Column) -> str:
        """The SQL placeholder of a Column the scope gave."""
        self.inputs.append(col)
        return token(len(self.inputs) - 1)

    def column(self, sql: str) -> Column:
        return to_column(sql, self.inputs)

    # ------------------------------------------------------------------------------------------------ dispatch
    def value(self, expr) -> V:
        if isinstance(expr, Variable):
            if expr.name in self._facet_vars:
                return self._facet_vars[expr.name]
            if expr.name not in self._vars:
                col = self.scope.column(expr.name)
                self._vars[expr.name] = None if col is None else self.input(col)
            ref = self._vars[expr.name]
            return NullV() if ref is None else TermV(ref, simple=True)
        if isinstance(expr, (IRI, Literal, BlankNode)):
            return ConstV(expr)
        if isinstance(expr, QuotedTriple):
            if is_ground(expr):
                return ConstV(expr)
            parts = [self.value(expr.subject), self.value(expr.predicate), self.value(expr.object)]
            return bind(parts, lambda vs: S.fn_triple(*vs))
        if isinstance(expr, Exists):
            found = self.input(self.scope.exists(expr))
            return BoolV(f"(NOT {found})" if expr.negated else found, simple=not expr.negated)
        if isinstance(expr, Call):
            return self.call(expr)
        if isinstance(expr, FunctionCall):
            return self.function(expr)
        if isinstance(expr, Aggregate):
            raise NotSupportedError(f"aggregate {expr.name} outside a grouped query's projection / HAVING")
        raise NotSupportedError(f"expression {expr!r}")

    def extension(self, call) -> V | None:
        col = self.scope.extension(call)
        if col is None:
            return None
        return TermV(self.input(col), simple=True)

    def function(self, call: FunctionCall) -> V:
        iri = call.iri.value
        if not call.distinct and len(call.args) == 1:
            cast = None
            if iri in _CASTS:
                cast = lambda v: cast_numeric(iri, v)  # noqa: E731
            elif iri == XSD_BOOLEAN:
                cast = cast_boolean
            elif iri == XSD_STRING:
                cast = lambda v: cast_string(v, S.iri_string(v))  # noqa: E731
            elif iri in (XSD_DATETIME, XSD_DATE):
                cast = lambda v: cast_datetime(iri, v)  # noqa: E731
            if cast is not None:
                return bind([self.value(call.args[0])], lambda vs: cast(vs[0]), facets="num")
        ext = self.extension(call)
        if ext is not None:
            return ext
        raise NotSupportedError(f"function <{iri}>")

    def call(self, call: Call) -> V:
        name = call.name
        args = call.args
        arity = _ARITY.get(name)
        if arity is not None and len(args) != arity:
            raise NotSupportedError(f"{name} with {len(args)} argument(s)")
        if name == "BOUND":
            if not isinstance(args[0], Variable):
                raise NotSupportedError("BOUND of a non-variable")
            v = self.value(args[0])
            return BoolV("false" if isinstance(v, NullV) else f"({v.enc()} IS NOT NULL)")
        handler = _HANDLERS.get(name)
        if handler is None:
            ext = self.extension(call)
            if ext is not None:
                return ext
            raise NotSupportedError(f"function {name}")
        vals = [self.value(a) for a in args]
        facets = _FACETED.get(name)
        if facets == "cmp" and not (vals[0].maybe_time and any(v.maybe_time for v in vals[1:])):
            facets = "leaf"  # no two operands can both be dates: no time values needed
        return bind(vals, lambda vs: handler(self, vs), facets=facets, faceted=_FACETED_ARGS.get(name))


def _logical(op: str):
    def handler(c: _Compiler, vs) -> V:
        ea, eb = vs[0].ebv(), vs[1].ebv()
        return BoolV(f"({ea} {'OR' if op == '||' else 'AND'} {eb})")
    return handler


def _h_eq(negated: bool):
    def handler(c: _Compiler, vs) -> V:
        e = eq(vs[0], vs[1])
        return BoolV(f"(NOT {e})" if negated else e)
    return handler


def _h_in(negated: bool):
    def handler(c: _Compiler, vs) -> V:
        lhs = vs[0]
        if len(vs) == 1:
            return BoolV("true" if negated else "false")
        tests = [eq(lhs, item) for item in vs[1:]]
        if negated:
            return BoolV("(" + " AND ".join(f"(NOT {t})" for t in tests) + ")")
        return BoolV("(" + " OR ".join(tests) + ")")
    return handler


def _h_compare(op: str):
    return lambda c, vs: BoolV(compare(op, vs[0], vs[1]))


def _h_arith(op: str):
    return lambda c, vs: NumV(arith(op, vs[0].num(), vs[1].num()))


def _h_bnode(c: _Compiler, vs) -> V:
    if not vs:
        return S.fn_bnode(None, None)
    return S.fn_bnode(vs[0], c.input(c.scope.row_id()))


def _h_coalesce(c: _Compiler, vs) -> V:
    if not vs:
        return NullV()
    if len(vs) == 1:
        return vs[0]
    return TermV("coalesce(" + ", ".join(v.enc() for v in vs) + ")", simple=False)


def _h_if(c: _Compiler, vs) -> V:
    cond, a, b = vs
    e = cond.ebv()
    return TermV(f"(CASE WHEN {e} THEN {a.enc()} WHEN NOT {e} THEN {b.enc()} END)", simple=False)


def _h_component(index: int):
    return lambda c, vs: TermV(triple_component(vs[0].enc(), index), simple=False)


def _one(fn):
    return lambda c, vs: fn(vs[0])


def _opt(vs, i: int):
    return vs[i] if len(vs) > i else None


_HANDLERS = {
    "||": _logical("||"),
    "&&": _logical("&&"),
    "!": lambda c, vs: BoolV(f"(NOT {vs[0].ebv()})"),
    "=": _h_eq(False),
    "!=": _h_eq(True),
    "<": _h_compare("<"),
    ">": _h_compare(">"),
    "<=": _h_compare("<="),
    ">=": _h_compare(">="),
    "+": _h_arith("+"),
    "-": _h_arith("-"),
    "*": _h_arith("*"),
    "/": _h_arith("/"),
    "UPLUS": lambda c, vs: NumV(identity(vs[0].num())),
    "UMINUS": lambda c, vs: NumV(negate(vs[0].num())),
    "IN": _h_in(False),
    "NOT IN": _h_in(True),
    "STR": _one(S.fn_str),
    "LANG": _one(S.fn_lang),
    "DATATYPE": _one(S.fn_datatype),
    "IRI": lambda c, vs: S.fn_iri(vs[0], c.env.base_iri),
    "URI": lambda c, vs: S.fn_iri(vs[0], c.env.base_iri),
    "BNODE": _h_bnode,
    "COALESCE": _h_coalesce,
    "IF": _h_if,
    "SAMETERM": lambda c, vs: BoolV(same_term(vs[0], vs[1])),
    "ISIRI": _one(lambda v: S.fn_is("ISIRI", v)),
    "ISURI": _one(lambda v: S.fn_is("ISIRI", v)),
    "ISBLANK": _one(lambda v: S.fn_is("ISBLANK", v)),
    "ISLITERAL": _one(lambda v: S.fn_is("ISLITERAL", v)),
    "ISNUMERIC": _one(lambda v: S.fn_is("ISNUMERIC", v)),
    "ISTRIPLE": _one(lambda v: S.fn_is("ISTRIPLE", v)),
    "ABS": _one(lambda v: NumV(rounding("ABS", v.num()))),
    "CEIL": _one(lambda v: NumV(rounding("CEIL", v.num()))),
    "FLOOR": _one(lambda v: NumV(rounding("FLOOR", v.num()))),
    "ROUND": _one(lambda v: NumV(rounding("ROUND", v.num()))),
    "RAND": lambda c, vs: NumV(Num(DBL, f="rand()")),
    "NOW": lambda c, vs: (ConstV(Literal(c.env.now, XSD_DATETIME)) if c.env.now_sql is None
                          else TermV(c.input(parsed(c.env.now_sql)), simple=True)),
    "UUID": lambda c, vs: S.fn_uuid(),
    "STRUUID": lambda c, vs: S.fn_struuid(),
    "STRLEN": _one(S.fn_strlen),
    "UCASE": _one(lambda v: S.fn_case("UCASE", v)),
    "LCASE": _one(lambda v: S.fn_case("LCASE", v)),
    "ENCODE_FOR_URI": _one(S.fn_encode_for_uri),
    "CONTAINS": lambda c, vs: S.fn_test("CONTAINS", *vs),
    "STRSTARTS": lambda c, vs: S.fn_test("STRSTARTS", *vs),
    "STRENDS": lambda c, vs: S.fn_test("STRENDS", *vs),
    "STRBEFORE": lambda c, vs: S.fn_before_after("STRBEFORE", *vs),
    "STRAFTER": lambda c, vs: S.fn_before_after("STRAFTER", *vs),
    "SUBSTR": lambda c, vs: S.fn_substr(vs[0], vs[1], _opt(vs, 2)),
    "CONCAT": lambda c, vs: S.fn_concat(vs),
    "REGEX": lambda c, vs: S.fn_regex(vs[0], vs[1], _opt(vs, 2)),
    "REPLACE": lambda c, vs: S.fn_replace(vs[0], vs[1], vs[2], _opt(vs, 3)),
    "MD5": _one(lambda v: S.fn_hash("MD5", v)),
    "SHA1": _one(lambda v: S.fn_hash("SHA1", v)),
    "SHA256": _one(lambda v: S.fn_hash("SHA256", v)),
    "SHA384": _one(lambda v: S.fn_hash("SHA384", v)),
    "SHA512": _one(lambda v: S.fn_hash("SHA512", v)),
    "LANGMATCHES": lambda c, vs: S.fn_langmatches(*vs),
    "STRDT": lambda c, vs: S.fn_strdt(*vs),
    "STRLANG": lambda c, vs: S.fn_strlang(*vs),
    "YEAR": _one(lambda v: date_part("YEAR", v)),
    "MONTH": _one(lambda v: date_part("MONTH", v)),
    "DAY": _one(lambda v: date_part("DAY", v)),
    "HOURS": _one(lambda v: date_part("HOURS", v)),
    "MINUTES": _one(lambda v: date_part("MINUTES", v)),
    "SECONDS": _one(lambda v: date_part("SECONDS", v)),
    "TIMEZONE": _one(lambda v: date_part("TIMEZONE", v)),
    "TZ": _one(lambda v: date_part("TZ", v)),
    "TRIPLE": lambda c, vs: S.fn_triple(*vs),
    "SUBJECT": _h_component(1),
    "PREDICATE": _h_component(2),
    "OBJECT": _h_component(3),
}
