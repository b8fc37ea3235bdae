"""The pieces of a query that the syntax tree and the algebra share: expressions, property paths, triple and
quad patterns, order conditions.

The parser builds them (``rspark.syntax``) and the algebra's operators hold them (``rspark.algebra.ops``); the
Spark compilers read them from here, never from the syntax tree.
"""

from __future__ import annotations

from dataclasses import dataclass

from rspark.model.terms import IRI, BlankNode, Literal, QuotedTriple, Variable

# an RDF term or a variable: what a triple pattern's positions and an expression's leaves hold
Node = Variable | IRI | Literal | BlankNode | QuotedTriple

# ------------------------------------------------------------------------------------------------------ expressions


@dataclass(frozen=True, slots=True)
class Call:
    """An operator or built-in function: ``name`` is the operator symbol (``+``, ``&&``, ``IN``) or the upper-case
    built-in name (``STR``, ``REGEX``, ``GETDURATION``, ``TIMESTAMP``)."""

    name: str
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A call of a function named by an IRI (casts such as ``xsd:integer(?x)`` and extension functions)."""

    iri: IRI
    args: tuple[Expr, ...] = ()
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class Aggregate:
    """An aggregate: ``name`` is COUNT, SUM, MIN, MAX, AVG, SAMPLE or GROUP_CONCAT; ``arg`` None means ``*``."""

    name: str
    arg: Expr | None
    distinct: bool = False
    separator: str | None = None


@dataclass(frozen=True, slots=True)
class Exists:
    """EXISTS / NOT EXISTS: ``pattern`` is a GroupPattern in the syntax tree and an operator in the algebra (the
    syntax tree is a layer above this module, so the field names neither type)."""

    pattern: object
    negated: bool = False


Expr = Call | FunctionCall | Aggregate | Exists | Variable | IRI | Literal | BlankNode | QuotedTriple

# ---------------------------------------------------------------------------------------------------- property paths


@dataclass(frozen=True, slots=True)
class PathInv:
    path: Path


@dataclass(frozen=True, slots=True)
class PathSeq:
    parts: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class PathAlt:
    parts: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class PathMod:
    """``path?`` / ``path*`` / ``path+``."""

    path: Path
    mod: str  # ?, * or +


@dataclass(frozen=True, slots=True)
class PathNegated:
    """``!(a|^b)``: forward IRIs and inverse IRIs that must not match."""

    forward: tuple[IRI, ...]
    inverse: tuple[IRI, ...]


Path = IRI | PathInv | PathSeq | PathAlt | PathMod | PathNegated


def is_simple_predicate(p: object) -> bool:
    """A predicate that is a term or variable, not a property path."""
    return isinstance(p, (IRI, Variable))


@dataclass(frozen=True, slots=True)
class TriplePattern:
    """A triple pattern; ``predicate`` may be a property path in WHERE clauses."""

    subject: Node
    predicate: Node | Path
    object: Node


@dataclass(frozen=True, slots=True)
class QuadPattern:
    """A triple of a CONSTRUCT template inside ``GRAPH g { ... }``: the constructed triple goes to graph ``g`` (an
    IRI, a variable or a blank node, fresh per solution like the template's other blank nodes)."""

    graph: IRI | Variable | BlankNode
    subject: Node
    predicate: Node
    object: Node


@dataclass(frozen=True, slots=True)
class OrderCondition:
    expr: Expr
    ascending: bool = True
