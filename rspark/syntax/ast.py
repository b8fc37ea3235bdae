"""The syntax tree of a query: what the text says, with prefixes expanded and terms built.

Expressions, property paths and triple patterns are the algebra's (``rspark.algebra.expr``), window specifications
the stream model's (``rspark.rsp.windows``). Graph patterns here keep the shape of the text (a group is a list of
elements); ``rspark.syntax.translate`` turns them into operators.

Nodes that errors point at carry the ``line`` and ``column`` (1-based, in the query text as written: before its
``\\u`` escapes are decoded) of their first token; 0 when unknown (a tree built by hand). Positions take no part in
equality, so two parses of equivalent texts compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rspark.algebra.expr import (  # noqa: F401 - the syntax tree holds the algebra's expressions
    Aggregate,
    Call,
    Exists,
    Expr,
    FunctionCall,
    Node,
    OrderCondition,
    Path,
    PathAlt,
    PathInv,
    PathMod,
    PathNegated,
    PathSeq,
    QuadPattern,
    TriplePattern,
    is_simple_predicate,
)
from rspark.algebra.ops import QueryForm, RegisterKind, SelectModifier
from rspark.model.terms import IRI, Variable
from rspark.model.time import (
    Duration,
    Instant,  # noqa: F401 - the syntax tree holds the stream model's instants
)
from rspark.rsp.policies import R2S, MatchConsumption, SeqSelection
from rspark.rsp.windows import (  # noqa: F401 - and its window specifications
    CountWindowSpec,
    IntervalWindowSpec,
    LandmarkWindowSpec,
    NowWindowSpec,
    TimeWindowSpec,
    WindowSpec,
)

# ------------------------------------------------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True, kw_only=True)
class Positioned:
    """A node that errors point at: the ``line`` and ``column`` of its first token (0: unknown). Keyword-only, so
    they follow each node's own fields, and left out of equality."""

    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)



@dataclass(frozen=True, slots=True)
class TriplesBlock(Positioned):
    triples: tuple[TriplePattern, ...]


@dataclass(frozen=True, slots=True)
class GroupPattern(Positioned):
    elements: tuple[Element, ...]


@dataclass(frozen=True, slots=True)
class OptionalPattern(Positioned):
    group: GroupPattern


@dataclass(frozen=True, slots=True)
class MinusPattern(Positioned):
    group: GroupPattern


@dataclass(frozen=True, slots=True)
class UnionPattern(Positioned):
    """``{A} op {B} op {C}``: ``op`` is UNION or one of the EP-SPARQL operators, applied left to right."""

    groups: tuple[GroupPattern, ...]
    ops: tuple[str, ...]  # UNION, SEQ, EQUALS, OPTIONALSEQ or EQUALSOPTIONAL, between consecutive groups


@dataclass(frozen=True, slots=True)
class GraphPattern(Positioned):
    name: IRI | Variable
    group: GroupPattern


@dataclass(frozen=True, slots=True)
class ServicePattern(Positioned):
    name: IRI | Variable
    group: GroupPattern
    silent: bool


@dataclass(frozen=True, slots=True)
class FilterPattern(Positioned):
    expr: Expr


@dataclass(frozen=True, slots=True)
class BindPattern(Positioned):
    expr: Expr
    var: Variable


@dataclass(frozen=True, slots=True)
class ValuesPattern(Positioned):
    """Inline data; a row holds a term or None (UNDEF) per variable."""

    vars: tuple[Variable, ...]
    rows: tuple[tuple[Node | None, ...], ...]


@dataclass(frozen=True, slots=True)
class SubSelect(Positioned):
    query: Query


@dataclass(frozen=True, slots=True)
class WindowPattern(Positioned):
    """RSP-QL ``WINDOW :w { P }`` (or ``WINDOW ?w { P }`` over every named window)."""

    name: IRI | Variable
    group: GroupPattern


@dataclass(frozen=True, slots=True)
class StreamPattern(Positioned):
    """CQELS ``STREAM :s [window] { P }``: an anonymous window declared where it is used."""

    stream: IRI
    spec: WindowSpec | None
    group: GroupPattern


@dataclass(frozen=True, slots=True)
class MatchPattern(Positioned):
    """RSEP-QL ``MATCH [CONSUME policy] { event expression }``; ``consume`` None when it names no policy."""

    consume: MatchConsumption | None
    expr: EventExpression


@dataclass(frozen=True, slots=True)
class EventRef(Positioned):
    name: str


@dataclass(frozen=True, slots=True)
class EventFirst(Positioned):
    expr: EventExpression


@dataclass(frozen=True, slots=True)
class EventLast(Positioned):
    expr: EventExpression


@dataclass(frozen=True, slots=True)
class EventSeq(Positioned):
    """``E1 SEQ[policy] E2``; ``selection`` None for a plain ``SEQ`` (the profile's policy)."""

    left: EventExpression
    right: EventExpression
    selection: SeqSelection | None = None


# an element of a group graph pattern, as the text writes it
Element = (TriplesBlock | GroupPattern | OptionalPattern | MinusPattern | UnionPattern | GraphPattern | ServicePattern
           | FilterPattern | BindPattern | ValuesPattern | SubSelect | WindowPattern | StreamPattern | MatchPattern)

# an RSEP-QL event expression, as the text writes it (an event is referred to by name)
EventExpression = EventRef | EventFirst | EventLast | EventSeq


# ------------------------------------------------------------------------------------------------------- dataset


@dataclass(frozen=True, slots=True)
class DefaultGraphSource:
    iri: IRI


@dataclass(frozen=True, slots=True)
class NamedGraphSource:
    iri: IRI


@dataclass(frozen=True, slots=True)
class WindowSource(Positioned):
    """A window over a stream. ``merged``: its content joins the default graph (C-SPARQL ``FROM STREAM``, with
    ``name`` None; SPARQLstream ``FROM NAMED STREAM :s``, with ``name`` the stream's IRI, which also names it)."""

    name: IRI | None  # None when merged (C-SPARQL) / anonymous
    stream: IRI
    spec: WindowSpec | None  # None: no window given (the query's profile decides)
    merged: bool = False


@dataclass(frozen=True, slots=True)
class EventDecl(Positioned):
    """RSEP-QL ``EVENT ON :w { BGP } AS E1``."""

    window: IRI
    group: GroupPattern
    name: str


DatasetSource = DefaultGraphSource | NamedGraphSource | WindowSource


@dataclass(frozen=True, slots=True)
class Register(Positioned):
    """``REGISTER [R2S] [STREAM|QUERY] name [COMPUTED EVERY d] AS``; its position is that of UNDER ENTAILMENT
    REGIME."""

    name: IRI | str  # str: a C-SPARQL bare name
    kind: RegisterKind | None = None
    r2s: R2S | None = None
    every: Duration | None = None
    entailment: IRI | None = None  # UNDER ENTAILMENT REGIME <iri> (refused before evaluation: no regime is applied)


@dataclass(frozen=True, slots=True)
class Projection(Positioned):
    """One SELECT item: a variable, or ``(expr AS var)``."""

    var: Variable | None  # None: a GROUP BY expression with no AS
    expr: Expr | None = None


@dataclass(frozen=True, slots=True)
class Query(Positioned):
    """A parsed query. ``form`` is SELECT, CONSTRUCT, ASK or DESCRIBE."""

    form: QueryForm
    where: GroupPattern | None
    projection: tuple[Projection, ...] | None = None  # None: SELECT *
    modifier: SelectModifier | None = None  # None: neither DISTINCT nor REDUCED
    r2s: R2S | None = None
    template: tuple[TriplePattern | QuadPattern, ...] | None = None
    describe: tuple[IRI | Variable, ...] | None = None  # None with DESCRIBE: DESCRIBE *
    dataset: tuple[DatasetSource, ...] = ()
    events: tuple[EventDecl, ...] = ()
    group_by: tuple[Projection, ...] = ()  # Projection items (var may be None)
    having: tuple[Expr, ...] = ()
    order_by: tuple[OrderCondition, ...] = ()
    limit: int | None = None
    offset: int | None = None
    values: ValuesPattern | None = None
    register: Register | None = None
    base: str | None = None
    prefixes: tuple[tuple[str, str], ...] = ()  # (prefix, namespace) in declaration order
    where_form_construct: bool = False  # CONSTRUCT WHERE { template }
    # where the text says what (none of it takes part in equality): the query form keyword (line, column: its
    # position), the GROUP BY / HAVING / ORDER BY keywords ((keyword, line, column), ...), and every labelled blank
    # node in text order ((label, line, column), ...), so that errors found by the translation can point into the text
    clause_positions: tuple = field(default=(), compare=False)
    bnode_positions: tuple = field(default=(), compare=False)
