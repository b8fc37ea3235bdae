"""SPARQL query results: the value types and their writers.

Result values
    :class:`SolutionSequence` (SELECT), :class:`BooleanResult` (ASK), :class:`GraphResult` (CONSTRUCT/DESCRIBE)
    and :class:`DatasetResult` (quads, for the TriG/N-Quads files of update tests). Terms are the classes of
    :mod:`rspark.model.terms`; a row maps a variable name (without ``?``) to a term, an unbound variable is
    simply absent from the row.

Writers
    :func:`to_json` (SPARQL 1.1 JSON results, as a dict), :func:`to_xml`, :func:`to_csv` (CRLF line ends),
    :func:`to_tsv` (N-Triples-style terms, always in full form, e.g. ``"4"^^<...#integer>``, LF line ends),
    :func:`to_table` (aligned text for terminals), :func:`to_ntriples` and :func:`to_nquads`.

Readers of the result formats and the comparison of results (isomorphism) are in :mod:`rspark.testing`.
"""


from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape as _xml_escape
from xml.sax.saxutils import quoteattr as _xml_quoteattr

from rspark.model.terms import (
    IRI,
    RDF_LANGSTRING,
    XSD_STRING,
    BlankNode,
    Literal,
    QuotedTriple,
    Term,
)

SRX_NS = "http://www.w3.org/2005/sparql-results#"

Row = dict[str, Term]
Triple = tuple[Term, Term, Term]
Quad = tuple[Term, Term, Term, Term | None]


# ---------------------------------------------------------------------------------------------------------------
# Result values
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SolutionSequence:
    """The result of a SELECT query.

    ``vars`` are the projected variable names (no ``?``), ``rows`` the solutions (variable name -> term,
    unbound variables absent). ``ordered`` records that the source fixed the row order (``rs:index``); it is
    informational, :func:`results_equal` takes its own ``ordered`` argument. ``lossy`` marks a sequence read
    from CSV, whose terms are only strings (see the module documentation).
    """

    vars: list[str]
    rows: list[Row]
    ordered: bool = False
    lossy: bool = False


@dataclass(frozen=True)
class BooleanResult:
    """The result of an ASK query."""

    value: bool


@dataclass(frozen=True)
class GraphResult:
    """The result of a CONSTRUCT or DESCRIBE query: a list of triples (compared as a set)."""

    triples: list[Triple]


@dataclass(frozen=True)
class DatasetResult:
    """An RDF dataset (e.g. the expected state after an update): quads ``(s, p, o, g)``, ``g`` is ``None`` for
    the default graph. Compared as a set."""

    quads: list[Quad]


QueryResult = SolutionSequence | BooleanResult | GraphResult | DatasetResult


# ---------------------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------------------


def complete_vars(vars_: list[str], rows: Iterable[Row]) -> list[str]:
    """The declared variables, followed by any variable bound in a row but not declared."""
    out = list(vars_)
    seen = set(out)
    for row in rows:
        for name in row:
            if name not in seen:
                seen.add(name)
                out.append(name)
    return out


def _ordered_names(result: SolutionSequence) -> list[str]:
    return complete_vars(result.vars, result.rows)


def _term_json(term: Term) -> dict[str, Any]:
    if isinstance(term, IRI):
        return {"type": "uri", "value": term.value}
    if isinstance(term, BlankNode):
        return {"type": "bnode", "value": term.id}
    if isinstance(term, Literal):
        out: dict[str, Any] = {"type": "literal", "value": term.lexical}
        if term.language is not None:
            out["xml:lang"] = term.language
        elif term.datatype != XSD_STRING:
            out["datatype"] = term.datatype
        return out
    if isinstance(term, QuotedTriple):
        return {
            "type": "triple",
            "value": {
                "subject": _term_json(term.subject),
                "predicate": _term_json(term.predicate),
                "object": _term_json(term.object),
            },
        }
    raise TypeError(f"not an RDF term: {term!r}")


def to_json(result: SolutionSequence | BooleanResult) -> dict[str, Any]:
    """SPARQL 1.1 Query Results JSON, as a dict (``json.dumps`` it to get the document)."""
    if isinstance(result, BooleanResult):
        return {"head": {}, "boolean": result.value}
    if not isinstance(result, SolutionSequence):
        raise TypeError(f"SPARQL JSON results hold solutions or a boolean, not {type(result).__name__}")
    names = _ordered_names(result)
    bindings = [{name: _term_json(row[name]) for name in names if name in row} for row in result.rows]
    return {"head": {"vars": names}, "results": {"bindings": bindings}}


def _xml_text(text: str) -> str:
    # '\r' would be turned into '\n' by any XML parser; a character reference keeps it.
    return _xml_escape(text).replace("\r", "&#13;")


def _term_xml(term: Term) -> str:
    if isinstance(term, IRI):
        return f"<uri>{_xml_text(term.value)}</uri>"
    if isinstance(term, BlankNode):
        return f"<bnode>{_xml_text(term.id)}</bnode>"
    if isinstance(term, Literal):
        if term.language is not None:
            return f"<literal xml:lang={_xml_quoteattr(term.language)}>{_xml_text(term.lexical)}</literal>"
        if term.datatype != XSD_STRING:
            return f"<literal datatype={_xml_quoteattr(term.datatype)}>{_xml_text(term.lexical)}</literal>"
        return f"<literal>{_xml_text(term.lexical)}</literal>"
    if isinstance(term, QuotedTriple):
        return (
            f"<triple><subject>{_term_xml(term.subject)}</subject>"
            f"<predicate>{_term_xml(term.predicate)}</predicate>"
            f"<object>{_term_xml(term.object)}</object></triple>"
        )
    raise TypeError(f"not an RDF term: {term!r}")


def to_xml(result: SolutionSequence | BooleanResult) -> str:
    """SPARQL Query Results XML (with RDF-star ``<triple>`` terms). Characters XML 1.0 cannot carry (most C0
    controls) are not representable and are written as they are."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', f'<sparql xmlns="{SRX_NS}">']
    if isinstance(result, BooleanResult):
        lines += ["  <head/>", f"  <boolean>{'true' if result.value else 'false'}</boolean>"]
    elif isinstance(result, SolutionSequence):
        names = _ordered_names(result)
        lines.append("  <head>")
        lines += [f"    <variable name={_xml_quoteattr(name)}/>" for name in names]
        lines += ["  </head>", "  <results>"]
        for row in result.rows:
            lines.append("    <result>")
            for name in names:
                if name in row:
                    lines.append(f"      <binding name={_xml_quoteattr(name)}>{_term_xml(row[name])}</binding>")
            lines.append("    </result>")
        lines.append("  </results>")
    else:
        raise TypeError(f"SPARQL XML results hold solutions or a boolean, not {type(result).__name__}")
    lines.append("</sparql>")
    return "\n".join(lines) + "\n"


def csv_text(term: Term) -> str:
    """The CSV form of a term: IRI as written, literal lexical form, ``_:label``; quoted triples in N-Triples-star."""
    if isinstance(term, IRI):
        return term.value
    if isinstance(term, Literal):
        return term.lexical
    if isinstance(term, BlankNode):
        return f"_:{term.id}"
    return term.n3()


def to_csv(result: SolutionSequence) -> str:
    """SPARQL 1.1 CSV results: header of variable names, CRLF line ends, fields quoted when needed."""
    if not isinstance(result, SolutionSequence):
        raise TypeError(f"CSV results hold solutions only, not {type(result).__name__}")
    names = _ordered_names(result)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(names)
    for row in result.rows:
        writer.writerow([csv_text(row[name]) if name in row else "" for name in names])
    return out.getvalue()


def to_tsv(result: SolutionSequence) -> str:
    """SPARQL 1.1 TSV results: ``?var`` header, N-Triples-style terms (full form, escapes for tab/CR/LF)."""
    if not isinstance(result, SolutionSequence):
        raise TypeError(f"TSV results hold solutions only, not {type(result).__name__}")
    names = _ordered_names(result)
    lines = ["\t".join(f"?{name}" for name in names)]
    for row in result.rows:
        lines.append("\t".join(row[name].n3() if name in row else "" for name in names))
    return "\n".join(lines) + "\n"


def _width(text: str) -> int:
    """Terminal display width (wide East Asian characters take two cells, combining marks none)."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def _table(header: list[str], body: list[list[str]]) -> str:
    widths = [_width(h) for h in header]
    for cells in body:
        for i, cell in enumerate(cells):
            widths[i] = max(widths[i], _width(cell))

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c + " " * (w - _width(c)) for c, w in zip(cells, widths)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule] + [line(cells) for cells in body])


def _display(term: Term) -> str:
    # Keep each cell on one line: n3() already escapes \n, \r and \t.
    return term.n3()


def to_table(result: QueryResult) -> str:
    """An aligned plain-text table for terminals, followed by a row count line."""
    if isinstance(result, BooleanResult):
        return "true\n" if result.value else "false\n"
    if isinstance(result, SolutionSequence):
        names = _ordered_names(result)
        header = [f"?{name}" for name in names]
        body = [[_display(row[name]) if name in row else "" for name in names] for row in result.rows]
        count = len(result.rows)
    elif isinstance(result, GraphResult):
        header = ["subject", "predicate", "object"]
        body = [[_display(t) for t in triple] for triple in result.triples]
        count = len(result.triples)
    elif isinstance(result, DatasetResult):
        header = ["subject", "predicate", "object", "graph"]
        body = [[_display(t) for t in quad[:3]] + [_display(quad[3]) if quad[3] is not None else ""]
                for quad in result.quads]
        count = len(result.quads)
    else:
        raise TypeError(f"not a query result: {type(result).__name__}")
    noun = "row" if count == 1 else "rows"
    if not header:
        return f"({count} {noun})\n"
    return _table(header, body) + f"\n({count} {noun})\n"


def to_ntriples(result: GraphResult) -> str:
    """N-Triples (N-Triples-star ``<< s p o >>`` for quoted triples), one triple per line, in list order."""
    if not isinstance(result, GraphResult):
        raise TypeError(f"N-Triples holds a graph, not {type(result).__name__}")
    return "".join(f"{s.n3()} {p.n3()} {o.n3()} .\n" for s, p, o in result.triples)


def to_nquads(result: DatasetResult) -> str:
    """N-Quads (N-Quads-star for quoted triples), one quad per line, in list order."""
    if not isinstance(result, DatasetResult):
        raise TypeError(f"N-Quads holds a dataset, not {type(result).__name__}")
    return "".join(
        f"{s.n3()} {p.n3()} {o.n3()}{'' if g is None else ' ' + g.n3()} .\n" for s, p, o, g in result.quads
    )


# ------------------------------------------------------------------------------------------- reading SPARQL JSON


def json_term(obj: dict[str, Any]) -> Term:
    """A term of the SPARQL 1.1 Query Results JSON Format (and the RDF-star CG's ``triple`` terms)."""
    kind = obj.get("type")
    if kind == "uri":
        return IRI(obj["value"])
    if kind == "bnode":
        return BlankNode(obj["value"])
    if kind in ("literal", "typed-literal"):
        lang = obj.get("xml:lang", obj.get("lang"))
        if lang is not None:
            return Literal(obj["value"], RDF_LANGSTRING, lang)
        return Literal(obj["value"], obj.get("datatype") or XSD_STRING)
    if kind == "triple":
        value = obj["value"]
        s = value.get("subject", value.get("s"))
        p = value.get("predicate", value.get("p"))
        o = value.get("object", value.get("o"))
        if s is None or p is None or o is None:
            raise ValueError(f"incomplete triple value: {value!r}")
        return QuotedTriple(json_term(s), json_term(p), json_term(o))
    raise ValueError(f"unknown term type {kind!r} in SPARQL JSON results")


def from_json(data: str | bytes | dict[str, Any]) -> SolutionSequence | BooleanResult:
    """Parse a SPARQL 1.1 Query Results JSON document (text or already-decoded dict)."""
    if not isinstance(data, dict):
        data = json.loads(data)
    if "boolean" in data:
        value = data["boolean"]
        if not isinstance(value, bool):
            raise ValueError(f"bad boolean value {value!r}")
        return BooleanResult(value)
    vars_ = list(data.get("head", {}).get("vars", []))
    rows = [
        {name: json_term(term) for name, term in binding.items()}
        for binding in data.get("results", {}).get("bindings", [])
    ]
    return SolutionSequence(complete_vars(vars_, rows), rows)
