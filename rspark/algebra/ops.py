"""Logical operators: the SPARQL 1.1 algebra (section 18) plus the RSP nodes (windows, event patterns, EP-SPARQL
interval joins) and the continuous-query envelope (dataset, events, R2S, registration).

Operators are immutable values; two translations of the same query compare equal. Expressions are the nodes of
``rspark.algebra.expr`` (``Call``, ``FunctionCall``, ``Aggregate``, ``Exists`` with an operator inside, terms,
variables).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from rspark.algebra.expr import Aggregate, Expr, Node, OrderCondition, Path, QuadPattern, TriplePattern
from rspark.model.terms import IRI, Variable
from rspark.rsp.policies import R2S, MatchConsumption, SeqSelection
from rspark.rsp.windows import WindowSpec


class Op:
    """Base class of algebra operators."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class BGP(Op):
    """Basic graph pattern: triple patterns (``rspark.algebra.expr.TriplePattern`` with simple predicates)."""

    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True, slots=True)
class PathPattern(Op):
    """A property path between two nodes (only for paths that do not reduce to triple patterns)."""

    subject: Node
    path: Path
    object: Node


@dataclass(frozen=True, slots=True)
class Table(Op):
    """Inline solutions (VALUES); ``Table((), ((),))`` is the unit table (one empty solution)."""

    vars: tuple[Variable, ...]
    rows: tuple[tuple[Node | None, ...], ...]  # a term or None (UNDEF) per variable

    @property
    def is_unit(self) -> bool:
        return not self.vars and len(self.rows) == 1


UNIT = Table((), ((),))


@dataclass(frozen=True, slots=True)
class Join(Op):
    left: Op
    right: Op


@dataclass(frozen=True, slots=True)
class LeftJoin(Op):
    left: Op
    right: Op
    expr: Expr | tuple[Expr, ...] | None = None  # the FILTERs of the OPTIONAL group


@dataclass(frozen=True, slots=True)
class Filter(Op):
    exprs: tuple[Expr, ...]
    op: Op


@dataclass(frozen=True, slots=True)
class Union(Op):
    left: Op
    right: Op


@dataclass(frozen=True, slots=True)
class Minus(Op):
    left: Op
    right: Op


@dataclass(frozen=True, slots=True)
class Graph(Op):
    name: IRI | Variable
    op: Op


@dataclass(frozen=True, slots=True)
class Service(Op):
    """``SERVICE [SILENT] name { P }``; ``query``: the SPARQL query sent to the endpoint, ``SELECT * WHERE { P }``
    as text (written by the translation, which has the syntax tree)."""

    name: IRI | Variable
    op: Op
    silent: bool = False
    query: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Extend(Op):
    op: Op
    var: Variable
    expr: Expr


@dataclass(frozen=True, slots=True)
class Group(Op):
    """Grouping and aggregation: ``keys`` are (Variable | None, expr); ``aggregates`` are (Variable, Aggregate)."""

    op: Op
    keys: tuple[tuple[Variable | None, Expr], ...]
    aggregates: tuple[tuple[Variable, Aggregate], ...]


@dataclass(frozen=True, slots=True)
class OrderBy(Op):
    op: Op
    conditions: tuple[OrderCondition, ...]


@dataclass(frozen=True, slots=True)
class Project(Op):
    op: Op
    vars: tuple[Variable, ...]


@dataclass(frozen=True, slots=True)
class Distinct(Op):
    op: Op


@dataclass(frozen=True, slots=True)
class Reduced(Op):
    op: Op


@dataclass(frozen=True, slots=True)
class Slice(Op):
    op: Op
    start: int
    length: int | None


# ------------------------------------------------------------------------------------------------------ RSP nodes


@dataclass(frozen=True, slots=True)
class Window(Op):
    """RSP-QL window graph pattern: evaluate ``op`` over the snapshot of window ``name`` (an IRI, or a variable
    ranging over every named window)."""

    name: IRI | Variable
    op: Op


class IntervalKind(StrEnum):
    """The EP-SPARQL operators (member names) and the interval joins they denote (values, as SSE prints them)."""

    SEQ = "seq-join"  # the left solution's interval ends before the right one's starts
    EQUALS = "eq-join"  # the two intervals are the same
    OPTIONALSEQ = "seq-right-join"  # SEQ with the left side optional (the right side mandatory)
    EQUALSOPTIONAL = "eq-left-join"  # EQUALS with the right side optional (the left side mandatory)


@dataclass(frozen=True, slots=True)
class IntervalJoin(Op):
    """EP-SPARQL operators over interval-annotated solutions (EP-SPARQL): SEQ -> SeqJoin, EQUALS -> EqJoin,
    OPTIONALSEQ -> SeqRightJoin (right side mandatory), EQUALSOPTIONAL -> EqLeftJoin (left side mandatory)."""

    kind: IntervalKind
    left: Op
    right: Op


@dataclass(frozen=True, slots=True)
class EventPattern:
    """RSEP-QL basic event pattern ``EVENT w P``: one match per stream element of window ``window``."""

    name: str
    window: IRI
    op: Op


@dataclass(frozen=True, slots=True)
class EventSeq:
    left: EventExpr
    right: EventExpr
    selection: SeqSelection | None = None  # None: a plain SEQ (the profile's policy; unrestricted, eq. 7, by default)


@dataclass(frozen=True, slots=True)
class EventFirst:
    expr: EventExpr


@dataclass(frozen=True, slots=True)
class EventLast:
    expr: EventExpr


# an event expression of RSEP-QL (what MATCH holds)
EventExpr = EventPattern | EventSeq | EventFirst | EventLast


@dataclass(frozen=True, slots=True)
class Match(Op):
    """RSEP-QL event graph pattern ``MATCH E`` with an optional consumption policy (Def. 10)."""

    expr: EventExpr
    consume: MatchConsumption | None = None  # None: no CONSUME (the profile's policy)


# ------------------------------------------------------------------------------------------------- query envelope


class QueryForm(StrEnum):
    """The form of a query (SPARQL 1.1, section 16): what its answers are."""

    SELECT = "SELECT"
    CONSTRUCT = "CONSTRUCT"
    ASK = "ASK"
    DESCRIBE = "DESCRIBE"


class SelectModifier(StrEnum):
    """``SELECT DISTINCT`` or ``SELECT REDUCED`` (SPARQL 1.1, section 18.2.5.3-4); a SELECT with neither has none."""

    DISTINCT = "DISTINCT"
    REDUCED = "REDUCED"


class RegisterKind(StrEnum):
    """``REGISTER STREAM`` (the answers form a stream that other queries can read) or ``REGISTER QUERY``."""

    STREAM = "STREAM"
    QUERY = "QUERY"


@dataclass(frozen=True, slots=True)
class WindowDecl:
    """A window of the streaming dataset: ``name`` None for C-SPARQL windows merged into the default graph."""

    name: IRI | None
    stream: IRI
    spec: WindowSpec | None  # None: no window written (the profile's default window)
    merged: bool = False


@dataclass(frozen=True, slots=True)
class Dataset:
    default_graphs: tuple[IRI, ...] = ()
    named_graphs: tuple[IRI, ...] = ()
    windows: tuple[WindowDecl, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.default_graphs or self.named_graphs or self.windows)


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """A translated query: its form, algebra expression and, for continuous queries, the streaming dataset, event
    declarations, R2S operator and registration."""

    form: QueryForm
    op: Op
    dataset: Dataset = field(default_factory=Dataset)
    template: tuple[TriplePattern | QuadPattern, ...] | None = None
    describe: tuple[IRI | Variable, ...] | None = None
    r2s: R2S | None = None
    # the syntax tree's REGISTER clause (rspark.syntax.ast.Register: the syntax tree is a layer above the algebra)
    register: object | None = None
    events: tuple[EventPattern, ...] = ()
    prefixes: tuple[tuple[str, str], ...] = ()
    base: str | None = None
    # the constructs of the query that rspark does not evaluate (rspark.syntax.refusals.Refusal), refused before
    # it runs by ensure_evaluable
    refusals: tuple = field(default=(), compare=False)

    @property
    def is_continuous(self) -> bool:
        """True when the query reads a stream (has windows) or is registered."""
        return bool(self.dataset.windows) or self.register is not None or self.r2s is not None

    @property
    def name(self):
        return self.register.name if self.register is not None else None


def descendants(node) -> Iterator:
    """Every value inside an operator, an expression or a term, depth first: the dataclass nodes themselves and
    the items of their fields (tuples and lists looked through), ``node`` included."""
    if isinstance(node, (tuple, list)):
        for item in node:
            yield from descendants(item)
        return
    yield node
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            yield from descendants(getattr(node, f.name))


def calls_a_service(op: Op) -> bool:
    """Whether ``op`` holds a SERVICE pattern (its evaluation sends a request to another address)."""
    return any(isinstance(node, Service) for node in descendants(op))

