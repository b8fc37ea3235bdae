"""The syntax tree of a query: what the text says, with prefixes expanded and terms built.

Expressions (``Call``, ``FunctionCall``, ``Aggregate``, ``Exists``) are shared with the algebra. Graph patterns here
keep the shape of the text (a group is a list of elements); ``rspark.algebra.translate`` turns them into operators.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from rspark.model.terms import IRI, BlankNode, Literal, QuotedTriple, Variable
from rspark.model.time import Duration

# ------------------------------------------------------------------------------------------------------ expressions


@dataclass(frozen=True, slots=True)
class Call:
    """An operator or built-in function: ``name`` is the operator symbol (``+``, ``&&``, ``IN``) or the upper-case
    built-in name (``STR``, ``REGEX``, ``GETDURATION``, ``TIMESTAMP``)."""

    name: str
    args: tuple = ()


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A call of a function named by an IRI (casts such as ``xsd:integer(?x)`` and extension functions)."""

    iri: IRI
    args: tuple = ()
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class Aggregate:
    """An aggregate: ``name`` is COUNT, SUM, MIN, MAX, AVG, SAMPLE or GROUP_CONCAT; ``arg`` None means ``*``."""

    name: str
    arg: object | None
    distinct: bool = False
    separator: str | None = None


@dataclass(frozen=True, slots=True)
class Exists:
    """EXISTS / NOT EXISTS: ``pattern`` is a GroupPattern in the syntax tree and an operator in the algebra."""

    pattern: object
    negated: bool = False


Expr = Union[Call, FunctionCall, Aggregate, Exists, Variable, IRI, Literal, BlankNode, QuotedTriple]

# ---------------------------------------------------------------------------------------------------- property paths


@dataclass(frozen=True, slots=True)
class PathInv:
    path: object


@dataclass(frozen=True, slots=True)
class PathSeq:
    parts: tuple


@dataclass(frozen=True, slots=True)
class PathAlt:
    parts: tuple


@dataclass(frozen=True, slots=True)
class PathMod:
    """``path?`` / ``path*`` / ``path+``."""

    path: object
    mod: str


@dataclass(frozen=True, slots=True)
class PathNegated:
    """``!(a|^b)``: forward IRIs and inverse IRIs that must not match."""

    forward: tuple
    inverse: tuple


Path = Union[IRI, PathInv, PathSeq, PathAlt, PathMod, PathNegated]


def is_simple_predicate(p: object) -> bool:
    """A predicate that is a term or variable, not a property path."""
    return isinstance(p, (IRI, Variable))


@dataclass(frozen=True, slots=True)
class TriplePattern:
    """A triple pattern; ``predicate`` may be a property path in WHERE clauses."""

    subject: object
    predicate: object
    object: object


@dataclass(frozen=True, slots=True)
class QuadPattern:
    """A triple of a CONSTRUCT template inside ``GRAPH g { ... }``: the constructed triple goes to graph ``g`` (an
    IRI, a variable or a blank node, fresh per solution like the template's other blank nodes)."""

    graph: object
    subject: object
    predicate: object
    object: object


# ------------------------------------------------------------------------------------------------------- patterns


@dataclass(frozen=True, slots=True)
class TriplesBlock:
    triples: tuple


@dataclass(frozen=True, slots=True)
class GroupPattern:
    elements: tuple


@dataclass(frozen=True, slots=True)
class OptionalPattern:
    group: object


@dataclass(frozen=True, slots=True)
class MinusPattern:
    group: object


@dataclass(frozen=True, slots=True)
class UnionPattern:
    """``{A} op {B} op {C}``: ``op`` is UNION or one of the EP-SPARQL operators, applied left to right."""

    groups: tuple
    ops: tuple


@dataclass(frozen=True, slots=True)
class GraphPattern:
    name: object
    group: object


@dataclass(frozen=True, slots=True)
class ServicePattern:
    name: object
    group: object
    silent: bool


@dataclass(frozen=True, slots=True)
class FilterPattern:
    expr: object


@dataclass(frozen=True, slots=True)
class BindPattern:
    expr: object
    var: Variable


@dataclass(frozen=True, slots=True)
class ValuesPattern:
    """Inline data; a row holds a term or None (UNDEF) per variable."""

    vars: tuple
    rows: tuple


@dataclass(frozen=True, slots=True)
class SubSelect:
    query: "Query"


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


@dataclass(frozen=True, slots=True)
class MatchPattern:
    """RSEP-QL ``MATCH [CONSUME policy] { event expression }``."""

    consume: str | None
    expr: object


@dataclass(frozen=True, slots=True)
class EventRef:
    name: str
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class EventFirst:
    expr: object


@dataclass(frozen=True, slots=True)
class EventLast:
    expr: object


@dataclass(frozen=True, slots=True)
class EventSeq:
    """``E1 SEQ[policy] E2``; ``selection`` is None (unrestricted), NAIVE, CHRONOLOGICAL or RECENT."""

    left: object
    right: object
    selection: str | None = None


# -------------------------------------------------------------------------------------------------- windows, dataset


@dataclass(frozen=True, slots=True)
class Instant:
    """A time instant as written: a number (stream units) or an xsd:dateTime (epoch milliseconds)."""

    value: object  # Decimal
    absolute: bool
    text: str

    def sse(self) -> str:
        return self.text if not self.absolute else f'"{self.text}"'


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """Time-based sliding window (tumbling when slide == range); ``start`` is t0 (None: the epoch). ``slide`` is
    None when the query wrote none: the engine profile decides (``implicit_slide``: the range, or one tick)."""

    range: Duration
    slide: Duration | None
    start: Instant | None = None
    offset: Duration | None = None  # [FROM NOW-a TO NOW-b]: the window ends b before the evaluation instant


@dataclass(frozen=True, slots=True)
class LandmarkWindow:
    start: Instant | None = None


@dataclass(frozen=True, slots=True)
class IntervalWindow:
    start: Instant
    end: Instant


@dataclass(frozen=True, slots=True)
class CountWindow:
    """Count-based window over the last ``size`` TRIPLES, ELEMENTS or BGP matches."""

    unit: str
    size: int


@dataclass(frozen=True, slots=True)
class NowWindow:
    """CQELS ``[NOW]``: the elements stamped with the evaluation instant."""


@dataclass(frozen=True, slots=True)
class DefaultGraphSource:
    iri: IRI


@dataclass(frozen=True, slots=True)
class NamedGraphSource:
    iri: IRI


@dataclass(frozen=True, slots=True)
class WindowSource:
    """A window over a stream. ``merged``: C-SPARQL ``FROM STREAM`` (content joins the default graph)."""

    name: object  # IRI, or None when merged / anonymous
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
    entailment: IRI | None = None  # UNDER ENTAILMENT REGIME <iri> (recorded; no regime is applied)


@dataclass(frozen=True, slots=True)
class OrderCondition:
    expr: object
    ascending: bool = True


@dataclass(frozen=True, slots=True)
class Projection:
    """One SELECT item: a variable, or ``(expr AS var)``."""

    var: Variable
    expr: object | None = None


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
