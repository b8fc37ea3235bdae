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
from rspark.model.terms import IRI, Variable
from rspark.model.time import Duration
from rspark.rsp.windows import (  # noqa: F401 - and the stream model's window specifications
    CountWindow,
    Instant,
    IntervalWindow,
    LandmarkWindow,
    NowWindow,
    TimeWindow,
)

# ------------------------------------------------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True)
class TriplesBlock:
    triples: tuple
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class GroupPattern:
    elements: tuple
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class OptionalPattern:
    group: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class MinusPattern:
    group: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class UnionPattern:
    """``{A} op {B} op {C}``: ``op`` is UNION or one of the EP-SPARQL operators, applied left to right."""

    groups: tuple
    ops: tuple
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class GraphPattern:
    name: object
    group: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class ServicePattern:
    name: object
    group: object
    silent: bool
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class FilterPattern:
    expr: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class BindPattern:
    expr: object
    var: Variable
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class ValuesPattern:
    """Inline data; a row holds a term or None (UNDEF) per variable."""

    vars: tuple
    rows: tuple
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class SubSelect:
    query: Query
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class WindowPattern:
    """RSP-QL ``WINDOW :w { P }`` (or ``WINDOW ?w { P }`` over every named window)."""

    name: object
    group: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class StreamPattern:
    """CQELS ``STREAM :s [window] { P }``: an anonymous window declared where it is used."""

    stream: IRI
    spec: object
    group: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class MatchPattern:
    """RSEP-QL ``MATCH [CONSUME policy] { event expression }``."""

    consume: str | None
    expr: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class EventRef:
    name: str
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class EventFirst:
    expr: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class EventLast:
    expr: object
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class EventSeq:
    """``E1 SEQ[policy] E2``; ``selection`` is None (unrestricted), NAIVE, CHRONOLOGICAL or RECENT."""

    left: object
    right: object
    selection: str | None = None
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


# ------------------------------------------------------------------------------------------------------- dataset


@dataclass(frozen=True, slots=True)
class DefaultGraphSource:
    iri: IRI


@dataclass(frozen=True, slots=True)
class NamedGraphSource:
    iri: IRI


@dataclass(frozen=True, slots=True)
class WindowSource:
    """A window over a stream. ``merged``: its content joins the default graph (C-SPARQL ``FROM STREAM``, with
    ``name`` None; SPARQLstream ``FROM NAMED STREAM :s``, with ``name`` the stream's IRI, which also names it)."""

    name: object  # IRI, or None when merged (C-SPARQL) / anonymous
    stream: IRI
    spec: object  # None: no window given (the query's profile decides)
    merged: bool = False
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class EventDecl:
    """RSEP-QL ``EVENT ON :w { BGP } AS E1``."""

    window: IRI
    group: object
    name: str
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Register:
    """``REGISTER [R2S] [STREAM|QUERY] name [COMPUTED EVERY d] AS``."""

    name: object  # IRI or str (a C-SPARQL bare name)
    kind: str | None = None  # STREAM | QUERY
    r2s: str | None = None
    every: Duration | None = None
    entailment: IRI | None = None  # UNDER ENTAILMENT REGIME <iri> (refused before evaluation: no regime is applied)
    line: int = field(default=0, compare=False)  # of UNDER ENTAILMENT REGIME
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Projection:
    """One SELECT item: a variable, or ``(expr AS var)``."""

    var: Variable
    expr: object | None = None
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query. ``form`` is SELECT, CONSTRUCT, ASK or DESCRIBE."""

    form: str
    where: object | None
    projection: tuple | None = None  # None: SELECT *
    modifier: str | None = None  # DISTINCT | REDUCED
    r2s: str | None = None
    template: tuple | None = None
    describe: tuple | None = None  # None with DESCRIBE: DESCRIBE *
    dataset: tuple = ()
    events: tuple = ()
    group_by: tuple = ()  # Projection items (var may be None)
    having: tuple = ()
    order_by: tuple = ()
    limit: int | None = None
    offset: int | None = None
    values: ValuesPattern | None = None
    register: Register | None = None
    base: str | None = None
    prefixes: tuple = ()  # (prefix, namespace) in declaration order
    where_form_construct: bool = False  # CONSTRUCT WHERE { template }
    # where the text says what (none of it takes part in equality): the query form keyword (line, column), the
    # GROUP BY / HAVING / ORDER BY keywords ((keyword, line, column), ...), and every labelled blank node in text
    # order ((label, line, column), ...), so that errors found by the translation can point into the text
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)
    clause_positions: tuple = field(default=(), compare=False)
    bnode_positions: tuple = field(default=(), compare=False)
