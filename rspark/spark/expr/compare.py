"""Comparisons (SPARQL 1.1 sections 17.3 and 15.1, SPARQL-star triple terms): ``=`` / ``!=`` (value equality for
the known datatypes, RDFterm-equal otherwise), ``<`` ``>`` ``<=`` ``>=``, sameTerm, the decomposition of quoted
triples, and the ORDER BY sort key.

``=`` between two literals that are not the same term, when one of them has a datatype rspark does not know (or is
ill-formed) and neither is language-tagged, is an error (the open-world tests); literals of different known types
are simply not equal. Quoted triples compare through their literals: two triples with the same IRIs and blank
nodes in the same places are equal when their literals are pairwise equal (``<< :a :b 1 >> = << :a :b 1.0 >>``),
and ordered by the first pair of literals that differs.
"""

from __future__ import annotations

from rspark.spark.expr.timepack import any_time_pack, cmp3_time, sort_us
from rspark.spark.expr.values import (
    DBL,
    DEC,
    DEC0,
    FLT,
    INT,
    K_BNODE,
    K_DATE,
    K_DT,
    K_IRI,
    K_NUM,
    K_OTHER,
    K_TRIPLE,
    SQL,
    FacetV,
    Num,
    TermV,
    V,
    b_and,
    b_not,
    b_or,
    bind,
    case,
    current_facets_udf,
    fresh,
    is_name,
    is_triple,
    let,
    num_type,
    promote,
    q,
    raw_lexical,
)

# -------------------------------------------------------------------------------------------- quoted triples

_IRI = r"<[^<> ]*>"
_BNODE = r"_:[^ ]+"
_LIT = r'"(?:[^"\\]|\\.)*"(?:@[^ ]+|\^\^<[^<> ]*>)?'
_T0 = f"(?:{_IRI}|{_BNODE}|{_LIT})"


def _nested(depth: int) -> str:
    inner = _T0
    for _ in range(depth):
        inner = f"(?:<< {inner} {_IRI} {inner} >>|{_T0})"
    return inner


_PARSE_DEPTH = 2
TRIPLE_RE = f"^<< ({_nested(_PARSE_DEPTH)}) ({_IRI}) ({_nested(_PARSE_DEPTH)}) >>$"


def triple_component(c: SQL, index: int) -> SQL:
    """Subject (1), predicate (2) or object (3) of an encoded quoted triple (``c`` simple); NULL for other terms
    (and for triples nested deeper than the parser's depth)."""
    return let(f"regexp_extract({c}, {q(TRIPLE_RE)}, {index})",
               lambda part: f"(CASE WHEN {is_triple(c)} AND {part} != '' THEN {part} END)")


def _shape(c: SQL) -> SQL:
    """A quoted triple with every literal replaced by a placeholder."""
    return f"regexp_replace({c}, {q(_LIT)}, {q(chr(1))})"


def _leaves(c: SQL) -> SQL:
    return f"regexp_extract_all({c}, {q(_LIT)}, 0)"


def _leaf_key(x: str) -> SQL:
    """A literal of a quoted triple as it compares for ``=``: numbers by (double) value, the rest as terms."""
    def body(vs) -> SQL:
        n = vs[0].num()
        return f"(CASE WHEN {n.t} IS NOT NULL THEN concat('N:', CAST({n.dbl} AS STRING)) ELSE {x} END)"
    return bind([TermV(x, True)], body, facets="num")


def triple_eq(a: SQL, b: SQL) -> SQL:
    """``=`` of two quoted triples: the same shape (IRIs, blank nodes, nesting) and pairwise equal literals
    (numbers by value)."""
    x = fresh()
    keys = f"transform(concat({_leaves(a)}, {_leaves(b)}), {x} -> {_leaf_key(x)})"
    return f"(CASE WHEN {_shape(a)} = {_shape(b)} THEN {let(keys, _halves_equal)} ELSE false END)"


def _halves_equal(arr: str) -> SQL:
    return f"(slice({arr}, 1, size({arr}) DIV 2) = slice({arr}, size({arr}) DIV 2 + 1, size({arr}) DIV 2))"


def _leaf_cmp(x: str, y: str) -> SQL:
    """Order of two literals of quoted triples: numbers by value, simple literals by code point, identical terms
    equal; anything else is an error."""
    def body(vs) -> SQL:
        a, b = vs
        na, nb = a.num(), b.num()
        return (f"(CASE WHEN {x} = {y} THEN 0 WHEN {na.t} IS NOT NULL AND {nb.t} IS NOT NULL THEN "
                f"{_cmp(na.dbl, nb.dbl)} WHEN {a.sfx()} = '' AND {b.sfx()} = '' THEN {_cmp(a.lexr(), b.lexr())} END)")
    return bind([TermV(x, True), TermV(y, True)], body, facets="num")


def triple_cmp3(a: SQL, b: SQL) -> SQL:
    """Order of two quoted triples of the same shape: the first pair of literals that is not equal decides (a
    difference in an IRI or a blank node is an error, as comparing those is)."""
    x, y, acc, c = fresh(), fresh(), fresh(), fresh()
    pairs = f"zip_with({_leaves(a)}, {_leaves(b)}, ({x}, {y}) -> {_leaf_cmp(x, y)})"
    first = f"aggregate({pairs}, 0, ({acc}, {c}) -> CASE WHEN {acc} = 0 THEN {c} ELSE {acc} END)"
    return f"(CASE WHEN {_shape(a)} = {_shape(b)} THEN {first} END)"


# ------------------------------------------------------------------------------------------------ equality


def num_eq(a: Num, b: Num) -> SQL:
    n = Num(promote(a.t, b.t))
    return case([
        (n.t_is(INT, DEC0, DEC), f"({a.d} = {b.d})"),
        (n.t_is(FLT, DBL), f"({a.dbl} = {b.dbl} AND NOT isnan({a.dbl}))"),
    ])


def time_of(v: V) -> SQL:
    t = v.time()
    return any_time_pack(v.sfx(), v.lexr()) if t is None else t


def _time_cmp(a: V, b: V) -> SQL:
    pa, pb = time_of(a), time_of(b)
    if _simple(pa) and _simple(pb):
        return cmp3_time(pa, pb)
    return let(f"named_struct('a', {pa}, 'b', {pb})", lambda x: cmp3_time(f"{x}.a", f"{x}.b"))


def _simple(sql: SQL) -> bool:
    return sql.startswith("named_struct('l', CAST(") or ("(" not in sql and " " not in sql)


def eq(a: V, b: V, depth: int = 1) -> SQL:
    """``a = b`` (a, b simple): a boolean, NULL for an error."""
    ca, cb = a.cats(), b.cats()
    ea, eb = a.enc(), b.enc()
    branches = [(b_or(ca.null, cb.null), None)]
    both = b_and(ca.num, cb.num)
    if both is not False:
        branches.append((both, num_eq(a.num(), b.num())))
    both = b_and(ca.str, cb.str)
    if both is not False:
        branches.append((both, f"({ea} = {eb})"))
    both = b_and(ca.bool, cb.bool)
    if both is not False:
        branches.append((both, f"({a.bool_value()} = {b.bool_value()})"))
    both = b_or(b_and(ca.dt, cb.dt), b_and(ca.date, cb.date))
    if both is not False and depth > 0:  # inside quoted triples, dates compare as terms
        branches.append((both, f"({_time_cmp(a, b)} = 0)"))
    both = b_and(ca.triple, cb.triple)
    if both is not False:
        branches.append((both, triple_eq(ea, eb) if depth > 0 else f"({ea} = {eb})"))
    if not (a.known or b.known):  # a computed number or boolean equals only by value
        branches.append((f"({ea} = {eb})", "true"))
    branches.append((b_and(ca.lit, cb.lit, b_or(ca.other, cb.other), b_not(ca.lang), b_not(cb.lang)), None))
    return f"CAST({case(branches, 'false')} AS BOOLEAN)"


def same_term(a: V, b: V) -> SQL:
    return f"({a.enc()} = {b.enc()})"


# --------------------------------------------------------------------------------------------------- ordering


def _cmp(x: SQL, y: SQL) -> SQL:
    def body(u: str, w: str) -> SQL:
        return f"(CASE WHEN {u} < {w} THEN -1 WHEN {u} > {w} THEN 1 WHEN {u} = {w} THEN 0 END)"
    if is_name(x) and is_name(y):
        return body(x, y)
    return let(f"named_struct('x', {x}, 'y', {y})", lambda p: body(f"{p}.x", f"{p}.y"))


def num_cmp(a: Num, b: Num) -> SQL:
    n = Num(promote(a.t, b.t))
    x, y = a.dbl, b.dbl
    return case([
        (n.t_is(INT, DEC0, DEC), _cmp(a.d, b.d)),
        (n.t_is(FLT, DBL), f"(CASE WHEN isnan({x}) OR isnan({y}) THEN 2 ELSE {_cmp(x, y)} END)"),
    ])


def cmp3(a: V, b: V, depth: int = 1) -> SQL:
    """Order of two values for ``<`` and friends: -1, 0, 1, 2 (unordered: NaN), NULL (error)."""
    ca, cb = a.cats(), b.cats()
    ea, eb = a.enc(), b.enc()
    branches = [(b_or(ca.null, cb.null), None)]
    both = b_and(ca.num, cb.num)
    if both is not False:
        branches.append((both, num_cmp(a.num(), b.num())))
    both = b_and(ca.str, cb.str)
    if both is not False:
        branches.append((both, _cmp(a.string()[0], b.string()[0])))
    both = b_and(ca.bool, cb.bool)
    if both is not False:
        branches.append((both, _cmp(f"CAST({a.bool_value()} AS INT)", f"CAST({b.bool_value()} AS INT)")))
    both = b_or(b_and(ca.dt, cb.dt), b_and(ca.date, cb.date))
    if both is not False and depth > 0:  # inside quoted triples, dates compare as terms
        branches.append((both, _time_cmp(a, b)))
    both = b_and(ca.triple, cb.triple)
    if both is not False:
        branches.append((both, triple_cmp3(ea, eb) if depth > 0 else f"(CASE WHEN {ea} = {eb} THEN 0 END)"))
    return f"CAST({case(branches)} AS INT)"


def compare(op: str, a: V, b: V) -> SQL:
    """``<`` ``>`` ``<=`` ``>=`` as a boolean (NULL for an error)."""
    return let(cmp3(a, b), lambda c: {"<": f"({c} = -1)", ">": f"({c} = 1)", "<=": f"({c} IN (-1, 0))",
                                      ">=": f"({c} IN (0, 1))"}[op])


# ---------------------------------------------------------------------------------------------- ORDER BY keys


def sort_fields(v: FacetV) -> list[SQL]:
    """Ascending sort fields of a term (a FacetV with the "cmp" facets): kind (blank node, IRI, literal,
    triple), then for literals numbers by value, dates and times by value, the rest by lexical form and datatype
    / language; quoted triples component by component (numbers by value, the rest as text)."""
    c, k = v.enc(), f"{v.x}.k"
    n = v.num()
    kind = f"(CASE WHEN {k} = {K_BNODE} THEN 0 WHEN {k} = {K_IRI} THEN 1 WHEN {k} <= {K_OTHER} THEN 2 ELSE 3 END)"
    rank = f"(CASE WHEN {k} = {K_NUM} THEN 0 WHEN {k} IN ({K_DT}, {K_DATE}) THEN 1 WHEN {k} <= {K_OTHER} THEN 2 END)"
    numf = f"(CASE WHEN {k} = {K_NUM} THEN {n.dbl} END)"
    numd = f"(CASE WHEN {k} = {K_NUM} THEN {n.dec} END)"
    time = f"(CASE WHEN {k} IN ({K_DT}, {K_DATE}) THEN {sort_us(v.time())} END)"
    text = (f"(CASE WHEN {k} = {K_IRI} THEN substring({c}, 2, length({c}) - 2) WHEN {k} = {K_BNODE} "
            f"THEN substring({c}, 3) WHEN {k} <= {K_OTHER} THEN {v.lexical()} END)")
    sfx = f"(CASE WHEN {k} <= {K_OTHER} THEN {v.sfx()} END)"
    triple = f"(CASE WHEN {k} = {K_TRIPLE} THEN {let(triple_parts(c), _component_keys)} END)"
    return [kind, rank, numf, numd, time, text, sfx, triple]


def triple_parts(c: SQL) -> SQL:
    """The [subject, predicate, object] array of an encoded quoted triple (one regular expression pass)."""
    return f"split(regexp_replace({c}, {q(TRIPLE_RE)}, {q('$1' + chr(1) + '$2' + chr(1) + '$3')}), {q(chr(1))})"


# the SQL type of _component_keys' struct: a NULL of it is the triple field of a key written out for a term that is
# not a quoted triple (expr_aggregate's guarded MIN / MAX)
TRIPLE_KEY_T = "STRUCT<" + ", ".join(f"{n}: STRUCT<k: INT, n: DOUBLE, t: STRING>" for n in "spo") + ">"


def _component_keys(parts: str) -> SQL:
    udf = current_facets_udf()

    def key(x: str) -> SQL:
        kind = (f"(CASE WHEN startswith({x}, '_:') THEN 0 WHEN startswith({x}, '<< ') THEN 3 "
                f"WHEN startswith({x}, '<') THEN 1 ELSE 2 END)")
        text = f"(CASE WHEN {kind} = 1 THEN substring({x}, 2, length({x}) - 2) ELSE {x} END)"
        if udf is not None:  # the facets' numeric type and raw lexical form are num_type's and raw_lexical's
            return let(f"{udf}({x})", lambda z: f"named_struct('k', {kind}, 'n', (CASE WHEN {z}.t IS NOT NULL "
                                                f"THEN CAST({z}.lexr AS DOUBLE) END), 't', {text})")
        sfx = f"substring_index({x}, '\"', -1)"
        lexr = raw_lexical(x, sfx)
        num = f"CAST({lexr} AS DOUBLE)"
        return (f"named_struct('k', {kind}, 'n', (CASE WHEN {num_type(sfx, lexr)} IS NOT NULL THEN {num} END), "
                f"'t', {text})")
    return "named_struct(" + ", ".join(f"'{n}', {let(f'element_at({parts}, {i})', key)}"
                                       for i, n in ((1, "s"), (2, "p"), (3, "o"))) + ")"


def struct_sql(fields: list[SQL]) -> SQL:
    return "named_struct(" + ", ".join(f"'k{i}', {f}" for i, f in enumerate(fields)) + ")"


def sort_struct(v: V) -> SQL:
    """One orderable struct giving the ORDER BY order of bound terms (a value that is not a plain term, such as
    a computed number, is ordered through its encoding)."""
    term = v if type(v) is TermV else TermV(v.enc(), simple=False)
    return bind([term], lambda vs: struct_sql(sort_fields(vs[0])), facets="cmp")


def sort_key(v: V) -> SQL:
    """One orderable struct giving the ORDER BY order (NULL for unbound)."""
    return let(v.enc(), lambda x: f"(CASE WHEN {x} IS NOT NULL THEN {sort_struct(TermV(x, True))} END)")


__all__ = ["eq", "cmp3", "compare", "same_term", "sort_key", "sort_struct", "triple_component", "triple_parts"]
