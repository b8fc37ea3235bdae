"""RDF terms: IRIs, literals, blank nodes, quoted triples (RDF-star), and query variables.

Terms are immutable and hashable. A literal keeps its exact lexical form (``"01"^^xsd:integer`` stays ``01``);
value-based comparison is the evaluator's business, not the term's. ``n3()`` gives the N-Triples(-star) form,
which is also the form the printed algebra uses.
"""

from __future__ import annotations

from dataclasses import dataclass

# the XSD datatypes as the terms' users name them (rspark.model.xsd has them all)
from rspark.model.xsd import (  # noqa: F401
    XSD,
    XSD_BOOLEAN,
    XSD_DATETIME,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
)

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDF_LANGSTRING = RDF + "langString"
RDF_TYPE = RDF + "type"
RDF_FIRST = RDF + "first"
RDF_REST = RDF + "rest"
RDF_NIL = RDF + "nil"
RDF_REIFIES = RDF + "reifies"

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def escape_string(text: str) -> str:
    """Escape a lexical form for a double-quoted N-Triples string."""
    return "".join(_ESCAPES.get(ch, ch) for ch in text)


@dataclass(frozen=True, slots=True)
class IRI:
    """An IRI reference (kept as written once resolved against the base, if any)."""

    value: str

    def n3(self) -> str:
        return f"<{self.value}>"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class BlankNode:
    """A blank node, identified by its label within one graph or query."""

    id: str

    def n3(self) -> str:
        return f"_:{self.id}"

    def __str__(self) -> str:
        return self.n3()


@dataclass(frozen=True, slots=True)
class Literal:
    """An RDF literal: lexical form plus datatype IRI, or a language tag (then the datatype is rdf:langString).

    A simple literal has datatype xsd:string. The lexical form is kept exactly as written.
    """

    lexical: str
    datatype: str = XSD_STRING
    language: str | None = None

    def __post_init__(self) -> None:
        if self.language is not None and self.datatype != RDF_LANGSTRING:
            object.__setattr__(self, "datatype", RDF_LANGSTRING)

    def n3(self) -> str:
        quoted = f'"{escape_string(self.lexical)}"'
        if self.language is not None:
            return f"{quoted}@{self.language}"
        if self.datatype == XSD_STRING:
            return quoted
        return f"{quoted}^^<{self.datatype}>"

    def __str__(self) -> str:
        return self.lexical


@dataclass(frozen=True, slots=True)
class QuotedTriple:
    """An RDF-star quoted triple ``<< s p o >>``, itself a term (RDF-star CG semantics)."""

    subject: Term
    predicate: Term
    object: Term

    def n3(self) -> str:
        return f"<< {self.subject.n3()} {self.predicate.n3()} {self.object.n3()} >>"

    def __str__(self) -> str:
        return self.n3()


@dataclass(frozen=True, slots=True)
class Variable:
    """A query variable (``?x`` or ``$x``; both spell the same variable)."""

    name: str

    def n3(self) -> str:
        return f"?{self.name}"

    def __str__(self) -> str:
        return self.n3()


Term = IRI | BlankNode | Literal | QuotedTriple
TermOrVar = IRI | BlankNode | Literal | QuotedTriple | Variable


def is_ground(term: TermOrVar) -> bool:
    """True when the term has no variable inside (quoted triples are looked into)."""
    if isinstance(term, Variable):
        return False
    if isinstance(term, QuotedTriple):
        return is_ground(term.subject) and is_ground(term.predicate) and is_ground(term.object)
    return True


def variables_of(term: TermOrVar) -> list[Variable]:
    """The variables in a term, in order of appearance (quoted triples are looked into)."""
    if isinstance(term, Variable):
        return [term]
    if isinstance(term, QuotedTriple):
        return variables_of(term.subject) + variables_of(term.predicate) + variables_of(term.object)
    return []
