"""RDF-star: a quoted triple pattern with variables inside, matched against the quoted triple a solution binds.

A triple pattern such as ``<< ?obs :value ?v >> :confidence ?c`` first matches the quoted triple as one term (the
encoded string ``<< s p o >>``, rspark.model.codec) under a hidden variable; the quoted pattern then decomposes that
term. Two ways, with the same solutions:

* **in place** (:func:`decompose_in_place`), when the session has rspark's JVM helpers: the UDF
  ``rspark.jvm.QuotedParts`` splits the term into its three encoded terms in the same row, and the pattern's
  constants and variables are matched against them. No join, no table of quoted triples: the cost is one string
  scan per candidate row, as the RSP-QL* paper's prototype reads quoted triples as values (Keskisarkka et al.,
  SEMANTiCS 2019, Sec. 6).
* **by join** (the compiler's fallback without the JVM helpers): the solutions join the dataset's table of every
  quoted triple occurring in the data, ``(t, s, p, o)``, on the term.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rspark.model.codec import encode
from rspark.model.terms import QuotedTriple, Variable
from rspark.spark.sparql.solutions import Solutions, pattern_variable, var_col


def decompose_in_place(sols: Solutions, tmp: str, term: QuotedTriple, udf: str,
                       fresh: Callable[[str], str]) -> tuple[Solutions, list[tuple[str, QuotedTriple]]]:
    """``sols`` whose hidden variable ``tmp`` is a quoted triple matching ``term``: the rows where it is not one
    (an IRI, a literal, ...) or does not match are dropped, the pattern's new variables are bound. Returns the
    solutions and the quoted patterns nested in ``term`` still to decompose (each under a fresh hidden variable,
    as :func:`rspark.spark.sparql.compiler.match_positions` names them)."""
    parts = fresh("qp")
    columns = tuple(fresh(f"q{pos}") for pos in ("s", "p", "o"))
    df = sols.df.withColumn(parts, F.expr(f"{udf}({var_col(tmp)})")).filter(F.col(parts).isNotNull())
    df = df.select(*sols.df.columns, *[F.col(f"{parts}.{pos}").alias(c) for pos, c in zip("spo", columns)])
    df, positions, nested = match_positions(df, term, fresh, columns=columns)
    conds: list[Column] = []
    new: dict[str, str] = {}
    coalesced: dict[str, Column] = {}
    for name, col in positions.items():
        if name not in sols.vars:
            new[name] = col
        elif name in sols.bound:
            conds.append(F.col(var_col(name)) == F.col(col))
        else:  # compatible when unbound in the solution, which then takes the quoted triple's term
            conds.append(F.col(var_col(name)).isNull() | (F.col(var_col(name)) == F.col(col)))
            coalesced[name] = F.coalesce(F.col(var_col(name)), F.col(col))
    if conds:
        df = df.filter(functools.reduce(lambda a, b: a & b, conds))
    keep = [F.col(c) for c in sols.df.columns if c not in {var_col(n) for n in coalesced}]
    df = df.select(*keep, *[c.alias(var_col(n)) for n, c in coalesced.items()],
                   *[F.col(c).alias(var_col(n)) for n, c in new.items()])
    out = sols.with_df(df, vars=sols.vars + tuple(new), bound=sols.bound | frozenset(new) | frozenset(coalesced))
    return out, nested


def match_positions(df: DataFrame, triple, fresh: Callable[[str], str], positions: dict[str, str] | None = None,
                    columns: tuple[str, str, str] = ("s", "p", "o")):
    """Match the subject, predicate and object ``columns`` of ``df`` against a triple pattern (or the pattern of a
    quoted triple): constants become filters, a repeated variable an equality. Returns the filtered frame,
    variable -> first column holding it, and the quoted-triple patterns with variables inside, each under a fresh
    name (from ``fresh``, the compilation's), still to be decomposed."""
    positions = dict(positions or {})
    nested: list[tuple[str, QuotedTriple]] = []
    conds: list[Column] = []
    for pos, term in zip(columns, (triple.subject, triple.predicate, triple.object)):
        name = pattern_variable(term)
        if name is not None:
            if name in positions:
                conds.append(F.col(pos) == F.col(positions[name]))
            else:
                positions[name] = pos
        elif isinstance(term, QuotedTriple) and has_variables(term):
            tmp = fresh("q")
            positions[tmp] = pos
            nested.append((tmp, term))
        else:
            conds.append(F.col(pos) == F.lit(encode(term)))
    if conds:  # one filter (one DataFrame to analyse) for all of the pattern's constants
        df = df.filter(functools.reduce(lambda a, b: a & b, conds))
    return df, positions, nested


def has_variables(term: QuotedTriple) -> bool:
    """Does the quoted triple pattern hold a variable (at any depth)?"""
    return any(isinstance(x, Variable) or (isinstance(x, QuotedTriple) and has_variables(x))
               for x in (term.subject, term.predicate, term.object))
