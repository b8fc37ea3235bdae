"""The data model shared by every layer: RDF terms, XSD datatypes and time. Uses nothing else in rspark."""

from rspark.model.terms import IRI, BlankNode, Literal, QuotedTriple, Term, TermOrVar, Variable
from rspark.model.time import Duration, TimeKind, Timeline, parse_duration

__all__ = [
    "IRI",
    "BlankNode",
    "Duration",
    "Literal",
    "QuotedTriple",
    "Term",
    "TermOrVar",
    "TimeKind",
    "Timeline",
    "Variable",
    "parse_duration",
]
