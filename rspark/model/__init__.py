"""The data model shared by every layer: RDF terms and time. Uses nothing else in rspark."""

from rspark.model.terms import IRI, BlankNode, Literal, QuotedTriple, Term, TermOrVar, Variable
from rspark.model.time import Duration, parse_duration

__all__ = [
    "IRI",
    "BlankNode",
    "Duration",
    "Literal",
    "QuotedTriple",
    "Term",
    "TermOrVar",
    "Variable",
    "parse_duration",
]
