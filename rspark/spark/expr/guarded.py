"""Guarded fast paths: a specialised SQL expression for the common case, behind a guard that proves the case,
with the general compilation as the fallback (``CASE WHEN guard THEN fast ELSE general END``).

Why: the general compilation binds a term's facets (datatype, lexical form, numeric value) once with a
one-element ``transform_values``, which Spark evaluates interpreted, row by row, outside its generated code,
several times slower than the same comparison written by hand (docs/evaluation.md, "Guarded fast paths").

The case handled: a FILTER that is a comparison (``= != < > <= >=``) of a variable with an integer or decimal
constant, or a conjunction (``&&``) of such comparisons, where every variable holds a number of a guarded class:
an ``xsd:integer`` / ``xsd:int`` / ``xsd:long`` of 1 to 18 digits (compared as 64-bit integers, or as decimals
against a constant with a fraction), an ``xsd:decimal`` of at most 20 characters (as ``DECIMAL(38,18)``, the
general path's own cast), or an ``xsd:double`` other than INF / NaN (as doubles, the constant promoted, as SPARQL
does). There no operand is an error, so the comparison and the conjunction are Spark's own. Any other row
(floats, other datatypes, unbound, ill-typed or longer numbers, INF, NaN) takes the general expression, whose
semantics are unchanged.
"""

from __future__ import annotations

import re
from decimal import Decimal

from rspark.algebra.expr import Call
from rspark.model.terms import XSD, XSD_DECIMAL, XSD_INTEGER, Literal, Variable

__all__ = ["numeric_comparisons"]

_FLIP = {"=": "=", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_SQL_OP = {"=": "=", "!=": "<>", "<": "<", ">": ">", "<=": "<=", ">=": ">="}
_INTEGER_DATATYPES = ("integer", "int", "long")
_SUFFIXES = ", ".join(f"'^^<{XSD}{name}>'" for name in _INTEGER_DATATYPES)
_CONSTANT = {XSD_INTEGER: re.compile(r"[+-]?[0-9]{1,18}"), XSD_DECIMAL: re.compile(r"[+-]?[0-9]{0,18}\.?[0-9]{0,18}")}


def _constant(term) -> Decimal | None:
    if isinstance(term, Literal) and term.datatype in _CONSTANT and _CONSTANT[term.datatype].fullmatch(term.lexical):
        if any(ch.isdigit() for ch in term.lexical):
            return Decimal(term.lexical)
    return None


def _comparisons(expr, out: list) -> bool:
    """Collect (variable, operator, constant) from a comparison or a conjunction of them; False: another shape."""
    if isinstance(expr, Call) and expr.name == "&&":
        return all(_comparisons(a, out) for a in expr.args)
    if isinstance(expr, Call) and expr.name in _FLIP and len(expr.args) == 2:
        a, b = expr.args
        for var, const, op in ((a, b, expr.name), (b, a, _FLIP[expr.name])):
            value = _constant(const)
            if isinstance(var, Variable) and value is not None:
                out.append((var.name, op, value))
                return True
    return False


_XSD_DECIMAL_SUFFIX = f"'^^<{XSD}decimal>'"
_XSD_DOUBLE_SUFFIX = f"'^^<{XSD}double>'"
_DECIMAL_RE = r"'^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)$'"  # the general path's xsd:decimal check
_DOUBLE_RE = r"'^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?$'"  # xsd:double without INF / NaN


def _classes(col: str) -> tuple[str, list[tuple[str, str]]]:
    """A term's lexical form, and the guards of the number classes handled: integer, decimal, double."""
    sfx = f"substring_index({col}, '\"', -1)"
    # The text between the first two quotes, found on bytes (substring and length count characters, which costs a
    # pass over the string per call): it is the lexical form whenever a guard below holds, since then the lexical
    # form is digits, signs and a point. A lexical form with a quote (written \") is cut at its backslash, which
    # no guard accepts, as none accepted the whole form either.
    lexical = f"substring_index(substring_index({col}, '\"', 2), '\"', -1)"
    quoted = f"startswith({col}, '\"')"
    return lexical, [
        ("int", f"({quoted} AND {sfx} IN ({_SUFFIXES}) AND {lexical} RLIKE '^[+-]?[0-9]{{1,18}}$')"),
        ("dec", f"({quoted} AND {sfx} = {_XSD_DECIMAL_SUFFIX} AND length({lexical}) <= 20 "
                f"AND {lexical} RLIKE {_DECIMAL_RE})"),
        ("dbl", f"({quoted} AND {sfx} = {_XSD_DOUBLE_SUFFIX} AND {lexical} RLIKE {_DOUBLE_RE})"),
    ]


def _compare(cls: str, lexical: str, op: str, value: Decimal) -> str:
    """The comparison of a guarded term of class ``cls`` with the constant, as SPARQL's numeric promotion does it."""
    if cls == "int" and value == value.to_integral_value():  # 64-bit integers
        return f"(CAST({lexical} AS BIGINT) {_SQL_OP[op]} {int(value)}L)"
    if cls == "dbl":  # the constant promoted to xsd:double
        return f"(CAST({lexical} AS DOUBLE) {_SQL_OP[op]} CAST('{value}' AS DOUBLE))"
    return f"(CAST({lexical} AS DECIMAL(38,18)) {_SQL_OP[op]} CAST('{value}' AS DECIMAL(38,18)))"


def numeric_comparisons(expr, column, general: str) -> str | None:
    """The guarded SQL of a FILTER ``expr`` of the shape this module handles (``general``: its general SQL), else
    None. ``column(name)``: the SQL of a variable's encoded-term column (None: the variable is out of scope)."""
    found: list = []
    if not _comparisons(expr, found):
        return None
    cols = {}
    for name, _, _ in found:
        col = column(name)
        if col is None:
            return None
        cols[name] = _classes(col)
    if len(found) == 1:  # one CASE, each guard evaluated at most once
        name, op, value = found[0]
        lexical, classes = cols[name]
        branches = " ".join(f"WHEN {guard} THEN {_compare(cls, lexical, op, value)}" for cls, guard in classes)
        return f"(CASE {branches} ELSE {general} END)"
    guard = " AND ".join(f"({' OR '.join(g for _, g in classes)})" for _, classes in cols.values())
    tests = []
    for name, op, value in found:
        lexical, classes = cols[name]
        (c1, g1), (c2, g2), (c3, _) = classes
        tests.append(f"(CASE WHEN {g1} THEN {_compare(c1, lexical, op, value)} "
                     f"WHEN {g2} THEN {_compare(c2, lexical, op, value)} ELSE {_compare(c3, lexical, op, value)} END)")
    return f"(CASE WHEN {guard} THEN {' AND '.join(tests)} ELSE {general} END)"
