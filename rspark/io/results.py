"""SPARQL query results: value types, readers, writers and comparison.

Result values
    :class:`SolutionSequence` (SELECT), :class:`BooleanResult` (ASK), :class:`GraphResult` (CONSTRUCT/DESCRIBE)
    and :class:`DatasetResult` (quads, for the TriG/N-Quads files of update tests). Terms are the classes of
    :mod:`rspark.model.terms`; a row maps a variable name (without ``?``) to a term, an unbound variable is
    simply absent from the row.

Readers (``from_*`` take the document text, :func:`read_expected` takes a path and dispatches on the extension)
    * SPARQL XML results ``.srx`` (:func:`from_xml`), SPARQL JSON results ``.srj`` (:func:`from_json`), both
      with RDF-star ``triple`` values;
    * SPARQL TSV results ``.tsv`` (:func:`from_tsv`), with Turtle abbreviations (``4``, ``5.5``, ``1e0``,
      ``true``) and ``<< s p o >>`` quoted triples;
    * SPARQL CSV results ``.csv`` (:func:`from_csv`). CSV loses the kind and datatype of terms: every cell is
      read as a plain string literal (``_:x`` as a blank node, an empty cell as unbound) and the sequence is
      marked ``lossy=True``, which makes :func:`results_equal` project the other side to CSV strings first;
    * RDF files ``.ttl``, ``.nt``, ``.rdf`` (:func:`from_rdf`, parsed by pyoxigraph): a graph holding an
      ``rs:ResultSet`` (the DAWG result-set vocabulary of the SPARQL 1.0 tests, with ``rs:index`` for ordered
      results and ``rs:boolean`` for ASK) is read as results, any other graph as a :class:`GraphResult`;
      ``.trig`` and ``.nq`` as a :class:`DatasetResult`.

    Literal lexical forms are kept exactly as written (``"0.0"^^xsd:decimal`` stays ``0.0``). One caveat:
    pyoxigraph lower-cases language tags when parsing RDF files (``@EN`` becomes ``@en``); tags are compared
    case-insensitively anyway; RDF 1.2 base directions are dropped. Relative IRIs in RDF files are resolved against the file's ``file:`` URI unless
    a ``base_iri`` is given.

    RDF-star: pyoxigraph (>= 0.5) implements RDF 1.2, where Turtle ``<< s p o >>`` stands for a *reifier*
    blank node ``_:r rdf:reifies <<( s p o )>>``. This project and the RDF-star CG test suite use the CG
    semantics, where ``<< s p o >>`` is the quoted triple term itself. With ``rdf_star="cg"`` (the default)
    the reification is undone: every blank node that is the subject of exactly one ``rdf:reifies`` triple
    whose object is a triple term is replaced, everywhere, by that (quoted) triple, and the ``rdf:reifies``
    triple is dropped. Annotation syntax ``s p o {| q z |}`` thereby becomes ``s p o . << s p o >> q z .``
    Pass ``rdf_star="rdf12"`` to keep pyoxigraph's output (triple terms still become :class:`QuotedTriple`).
    N-Triples files are parsed with the Turtle parser, so that the CG ``<< s p o >>`` form written by
    :func:`to_ntriples` reads back.

Writers
    :func:`to_json` (SPARQL 1.1 JSON results, as a dict), :func:`to_xml`, :func:`to_csv` (CRLF line ends),
    :func:`to_tsv` (N-Triples-style terms, always in full form, e.g. ``"4"^^<...#integer>``, LF line ends),
    :func:`to_table` (aligned text for terminals), :func:`to_ntriples` and :func:`to_nquads`.

Comparison
    :func:`results_equal` returns ``(equal, message)``. Solution sequences are compared as multisets of rows
    (or in order, see ``ordered``/``order_key``), graphs and datasets as sets of triples/quads; blank nodes
    are compared up to one consistent bijection over the whole result (isomorphism: colour refinement to
    prune, then backtracking search). Literals are compared exactly on lexical form, datatype and language
    tag, the tag case-insensitively.
"""

from __future__ import annotations

import csv
import io
import json
import re
import heapq
import unicodedata
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Sequence, Union
from xml.sax.saxutils import escape as _xml_escape
from xml.sax.saxutils import quoteattr as _xml_quoteattr

from rspark.model.terms import (
    RDF,
    RDF_LANGSTRING,
    XSD,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
    BlankNode,
    IRI,
    Literal,
    QuotedTriple,
    Term,
)

__all__ = [
    "SolutionSequence",
    "BooleanResult",
    "GraphResult",
    "DatasetResult",
    "QueryResult",
    "read_expected",
    "from_xml",
    "from_json",
    "from_tsv",
    "from_csv",
    "from_rdf",
    "to_json",
    "to_xml",
    "to_csv",
    "to_tsv",
    "to_table",
    "to_ntriples",
    "to_nquads",
    "results_equal",
]

SRX_NS = "http://www.w3.org/2005/sparql-results#"
RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_RDF_TYPE = IRI(RDF + "type")
_RDF_REIFIES = RDF + "reifies"

Row = dict[str, Term]
Triple = tuple[Term, Term, Term]
Quad = tuple[Term, Term, Term, Union[Term, None]]


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


QueryResult = Union[SolutionSequence, BooleanResult, GraphResult, DatasetResult]


# ---------------------------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------------------------

_RDF_FORMATS = {
    ".ttl": "TURTLE",
    ".turtle": "TURTLE",
    ".nt": "TURTLE",  # N-Triples is a Turtle subset; the Turtle parser also takes CG-style << s p o >>
    ".n3": "N3",
    ".rdf": "RDF_XML",
    ".owl": "RDF_XML",
    ".trig": "TRIG",
    ".nq": "N_QUADS",
    ".jsonld": "JSON_LD",
}
_DATASET_FORMATS = {"TRIG", "N_QUADS"}


def read_expected(path: str | Path, *, base_iri: str | None = None) -> QueryResult:
    """Read an expected-result file of the W3C SPARQL test suites, choosing the reader by extension.

    ``.srx``/``.xml`` -> :func:`from_xml`, ``.srj``/``.json`` -> :func:`from_json`, ``.tsv`` -> :func:`from_tsv`,
    ``.csv`` -> :func:`from_csv`, RDF extensions (``.ttl``, ``.nt``, ``.rdf``, ``.trig``, ``.nq``, ...) ->
    :func:`from_rdf` with ``base_iri`` defaulting to the file's ``file:`` URI.
    """
    path = Path(path)
    ext = path.suffix.lower()
    if ext in (".srx", ".xml"):
        return from_xml(path.read_bytes())
    if ext in (".srj", ".json"):
        return from_json(path.read_text(encoding="utf-8"))
    if ext == ".tsv":
        return from_tsv(path.read_text(encoding="utf-8"))
    if ext == ".csv":
        with open(path, encoding="utf-8", newline="") as handle:
            return from_csv(handle.read())
    if ext in _RDF_FORMATS:
        base = base_iri if base_iri is not None else path.resolve().as_uri()
        return from_rdf(path.read_bytes(), _RDF_FORMATS[ext], base_iri=base)
    raise ValueError(f"unknown result file extension {ext!r}: {path}")


def _complete_vars(vars_: list[str], rows: Iterable[Row]) -> list[str]:
    """The declared variables, followed by any variable bound in a row but not declared."""
    out = list(vars_)
    seen = set(out)
    for row in rows:
        for name in row:
            if name not in seen:
                seen.add(name)
                out.append(name)
    return out


# --- SPARQL XML -------------------------------------------------------------------------------------------------


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _xml_term(elem: ET.Element) -> Term:
    kind = _local(elem.tag)
    if kind == "uri":
        return IRI((elem.text or "").strip())
    if kind == "bnode":
        return BlankNode((elem.text or "").strip())
    if kind == "literal":
        text = elem.text or ""
        lang = elem.get(_XML_LANG)
        if lang is not None:
            return Literal(text, RDF_LANGSTRING, lang)
        return Literal(text, elem.get("datatype") or XSD_STRING)
    if kind == "triple":
        parts = {}
        for child in elem:
            children = list(child)
            if len(children) != 1:
                raise ValueError(f"<{_local(child.tag)}> in <triple> must hold exactly one term")
            parts[_local(child.tag)] = _xml_term(children[0])
        try:
            return QuotedTriple(parts["subject"], parts["predicate"], parts["object"])
        except KeyError as exc:
            raise ValueError(f"<triple> without <{exc.args[0]}>") from None
    raise ValueError(f"unknown term element <{kind}> in SPARQL XML results")


def from_xml(text: str | bytes) -> SolutionSequence | BooleanResult:
    """Parse a SPARQL Query Results XML document (namespaces are ignored, only local names matter)."""
    root = ET.fromstring(text)
    vars_: list[str] = []
    rows: list[Row] = []
    for part in root:
        name = _local(part.tag)
        if name == "head":
            vars_ = [v.get("name", "") for v in part if _local(v.tag) == "variable"]
        elif name == "boolean":
            value = (part.text or "").strip()
            if value not in ("true", "false"):
                raise ValueError(f"bad <boolean> value {value!r}")
            return BooleanResult(value == "true")
        elif name == "results":
            for result in part:
                if _local(result.tag) != "result":
                    continue
                row: Row = {}
                for binding in result:
                    if _local(binding.tag) != "binding":
                        continue
                    children = list(binding)
                    if len(children) != 1:
                        raise ValueError(f"binding of {binding.get('name')!r} must hold exactly one term")
                    row[binding.get("name", "")] = _xml_term(children[0])
                rows.append(row)
    return SolutionSequence(_complete_vars(vars_, rows), rows)


# --- SPARQL JSON ------------------------------------------------------------------------------------------------


def _json_term(obj: dict[str, Any]) -> Term:
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
        return QuotedTriple(_json_term(s), _json_term(p), _json_term(o))
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
        {name: _json_term(term) for name, term in binding.items()}
        for binding in data.get("results", {}).get("bindings", [])
    ]
    return SolutionSequence(_complete_vars(vars_, rows), rows)


# --- TSV --------------------------------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"[+-]?(?:(?P<double>(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+)|(?P<decimal>[0-9]*\.[0-9]+)|(?P<integer>[0-9]+))"
)
_LANGTAG = re.compile(r"[A-Za-z]+(?:-[A-Za-z0-9]+)*")
_PREFIXES = {"xsd": XSD, "rdf": RDF}
_PNAME = re.compile(r"([A-Za-z][\w.-]*)?:([\w.-]*)")
_STRING_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


class _TermReader:
    """A small reader for one RDF term in Turtle/N-Triples(-star) syntax, as used in TSV results."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> ValueError:
        return ValueError(f"{what} at offset {self.pos} in TSV term {self.text!r}")

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def unescape_uchar(self, start: int) -> tuple[str, int]:
        kind = self.text[start]
        width = 4 if kind == "u" else 8
        digits = self.text[start + 1 : start + 1 + width]
        if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
            raise self.error("bad \\u escape")
        return chr(int(digits, 16)), start + 1 + width

    def iri(self) -> str:
        self.pos += 1  # '<'
        out = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("unterminated IRI")
            ch = self.text[self.pos]
            if ch == ">":
                self.pos += 1
                return "".join(out)
            if ch == "\\" and self.pos + 1 < len(self.text) and self.text[self.pos + 1] in "uU":
                char, self.pos = self.unescape_uchar(self.pos + 1)
                out.append(char)
                continue
            out.append(ch)
            self.pos += 1

    def string(self) -> str:
        quote = self.text[self.pos]
        long = self.text.startswith(quote * 3, self.pos)
        delim = quote * 3 if long else quote
        self.pos += len(delim)
        out = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("unterminated string")
            if self.text.startswith(delim, self.pos):
                self.pos += len(delim)
                return "".join(out)
            ch = self.text[self.pos]
            if ch == "\\":
                nxt = self.text[self.pos + 1 : self.pos + 2]
                if nxt in ("u", "U"):
                    char, self.pos = self.unescape_uchar(self.pos + 1)
                    out.append(char)
                    continue
                if nxt not in _STRING_ESCAPES:
                    raise self.error(f"bad string escape \\{nxt}")
                out.append(_STRING_ESCAPES[nxt])
                self.pos += 2
                continue
            out.append(ch)
            self.pos += 1

    def datatype(self) -> str:
        if self.text.startswith("<", self.pos):
            return self.iri()
        match = _PNAME.match(self.text, self.pos)
        if not match or (match.group(1) or "") not in _PREFIXES:
            raise self.error("unknown datatype (only <IRI>, xsd: and rdf: are understood)")
        self.pos = match.end()
        return _PREFIXES[match.group(1) or ""] + match.group(2)

    def term(self) -> Term:
        self.skip_ws()
        text, pos = self.text, self.pos
        if text.startswith("<<", pos):
            self.pos += 2
            s, p, o = self.term(), self.term(), self.term()
            self.skip_ws()
            if not self.text.startswith(">>", self.pos):
                raise self.error("expected '>>'")
            self.pos += 2
            return QuotedTriple(s, p, o)
        if text.startswith("<", pos):
            return IRI(self.iri())
        if text.startswith("_:", pos):
            end = pos + 2
            while end < len(text) and not text[end].isspace() and not text.startswith(">>", end):
                end += 1
            if end == pos + 2:
                raise self.error("empty blank node label")
            self.pos = end
            return BlankNode(text[pos + 2 : end])
        if text.startswith(('"', "'"), pos):
            lexical = self.string()
            if self.text.startswith("@", self.pos):
                match = _LANGTAG.match(self.text, self.pos + 1)
                if not match:
                    raise self.error("bad language tag")
                self.pos = match.end()
                return Literal(lexical, RDF_LANGSTRING, match.group(0))
            if self.text.startswith("^^", self.pos):
                self.pos += 2
                return Literal(lexical, self.datatype())
            return Literal(lexical)
        for word in ("true", "false"):
            if text.startswith(word, pos):
                self.pos += len(word)
                return Literal(word, XSD_BOOLEAN)
        match = _NUMBER.match(text, pos)
        if match:
            self.pos = match.end()
            kind = XSD_DOUBLE if match.group("double") else XSD_DECIMAL if match.group("decimal") else XSD_INTEGER
            return Literal(match.group(0), kind)
        raise self.error("cannot read a term")


def _parse_term(text: str) -> Term:
    reader = _TermReader(text)
    term = reader.term()
    reader.skip_ws()
    if reader.pos != len(text):
        raise reader.error("trailing characters")
    return term


def from_tsv(text: str) -> SolutionSequence:
    """Parse SPARQL 1.1 TSV results: a ``?var``-header line, then one line per row, tab-separated Turtle terms
    (an empty field is an unbound variable; an empty line is a row with nothing bound)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final line end
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not lines:
        raise ValueError("TSV results without a header line")
    header, body = lines[0], lines[1:]
    vars_ = [name.strip()[1:] if name.strip()[:1] in "?$" else name.strip() for name in header.split("\t")]
    if vars_ == [""]:
        vars_ = []
    rows: list[Row] = []
    for number, line in enumerate(body, start=2):
        cells = line.split("\t") if vars_ else ([] if line == "" else [line])
        if len(cells) != len(vars_):
            raise ValueError(f"TSV line {number}: {len(cells)} fields for {len(vars_)} variables")
        rows.append({name: _parse_term(cell) for name, cell in zip(vars_, cells) if cell.strip() != ""})
    return SolutionSequence(vars_, rows)


# --- CSV --------------------------------------------------------------------------------------------------------


def from_csv(text: str) -> SolutionSequence:
    """Parse SPARQL 1.1 CSV results. CSV keeps no term kinds: a cell ``_:x`` becomes a blank node, an empty
    cell an unbound variable, anything else a plain string literal; the sequence is marked ``lossy``."""
    records = list(csv.reader(io.StringIO(text, newline="")))
    if not records:
        raise ValueError("CSV results without a header line")
    vars_ = records[0]
    rows: list[Row] = []
    for number, record in enumerate(records[1:], start=2):
        if record == [] and len(vars_) == 1:
            record = [""]
        if len(record) != len(vars_):
            raise ValueError(f"CSV record {number}: {len(record)} fields for {len(vars_)} variables")
        row: Row = {}
        for name, cell in zip(vars_, record):
            if cell == "":
                continue
            row[name] = BlankNode(cell[2:]) if cell.startswith("_:") and len(cell) > 2 else Literal(cell)
        rows.append(row)
    return SolutionSequence(vars_, rows, lossy=True)


# --- RDF (pyoxigraph) -------------------------------------------------------------------------------------------


def _parse_quads(data: str | bytes, fmt: str, base_iri: str | None, rdf_star: str) -> list[Quad]:
    import pyoxigraph as ox

    if rdf_star not in ("cg", "rdf12"):
        raise ValueError(f"rdf_star must be 'cg' or 'rdf12', not {rdf_star!r}")
    raw = list(ox.parse(data, getattr(ox.RdfFormat, fmt), base_iri=base_iri))

    reifiers: dict[str, Any] = {}
    if rdf_star == "cg":
        counts: Counter[str] = Counter()
        candidates: dict[str, Any] = {}
        for quad in raw:
            if (
                quad.predicate.value == _RDF_REIFIES
                and isinstance(quad.subject, ox.BlankNode)
                and isinstance(quad.object, ox.Triple)
            ):
                counts[quad.subject.value] += 1
                candidates[quad.subject.value] = quad.object
        reifiers = {label: triple for label, triple in candidates.items() if counts[label] == 1}

    def convert(term: Any, active: frozenset[str] = frozenset()) -> Term | None:
        if isinstance(term, ox.NamedNode):
            return IRI(term.value)
        if isinstance(term, ox.BlankNode):
            if term.value in reifiers and term.value not in active:
                triple = reifiers[term.value]
                inner = active | {term.value}
                return QuotedTriple(convert(triple.subject, inner), convert(triple.predicate, inner), convert(triple.object, inner))
            return BlankNode(term.value)
        if isinstance(term, ox.Literal):
            if term.language is not None:
                return Literal(term.value, RDF_LANGSTRING, term.language)
            return Literal(term.value, term.datatype.value)
        if isinstance(term, ox.Triple):
            return QuotedTriple(convert(term.subject, active), convert(term.predicate, active), convert(term.object, active))
        if isinstance(term, ox.DefaultGraph):
            return None
        raise ValueError(f"unexpected term from pyoxigraph: {term!r}")

    quads: list[Quad] = []
    for quad in raw:
        if (
            reifiers
            and quad.predicate.value == _RDF_REIFIES
            and isinstance(quad.subject, ox.BlankNode)
            and quad.subject.value in reifiers
        ):
            continue
        quads.append((convert(quad.subject), convert(quad.predicate), convert(quad.object), convert(quad.graph_name)))
    return quads


def _result_set(triples: list[Triple]) -> SolutionSequence | BooleanResult | None:
    """Read the DAWG result-set vocabulary (``rs:ResultSet``) out of a graph, or None when there is none."""
    props: dict[Term, list[tuple[Term, Term]]] = defaultdict(list)
    for s, p, o in triples:
        props[s].append((p, o))
    rs_props = {IRI(RS + name) for name in ("resultVariable", "solution", "boolean")}
    roots = [s for s, p, o in triples if p == _RDF_TYPE and o == IRI(RS + "ResultSet")]
    if not roots:
        roots = list(dict.fromkeys(s for s, p, _ in triples if p in rs_props))
    roots = list(dict.fromkeys(roots))
    if not roots:
        return None
    if len(roots) > 1:
        raise ValueError(f"{len(roots)} rs:ResultSet nodes in one graph")
    root = roots[0]

    def values(node: Term, name: str) -> list[Term]:
        return [o for p, o in props.get(node, []) if p == IRI(RS + name)]

    def text(term: Term) -> str:
        if not isinstance(term, Literal):
            raise ValueError(f"expected a literal in the result set, got {term.n3()}")
        return term.lexical

    booleans = values(root, "boolean")
    if booleans:
        value = text(booleans[0]).strip()
        if value not in ("true", "false", "1", "0"):
            raise ValueError(f"bad rs:boolean value {value!r}")
        return BooleanResult(value in ("true", "1"))
    vars_ = list(dict.fromkeys(text(v) for v in values(root, "resultVariable")))
    numbered: list[tuple[int | None, Row]] = []
    for solution in values(root, "solution"):
        row: Row = {}
        for binding in values(solution, "binding"):
            names, terms = values(binding, "variable"), values(binding, "value")
            if len(names) != 1 or len(terms) != 1:
                raise ValueError("an rs:binding needs exactly one rs:variable and one rs:value")
            row[text(names[0])] = terms[0]
        index = values(solution, "index")
        numbered.append((int(text(index[0])) if index else None, row))
    ordered = any(index is not None for index, _ in numbered)
    if ordered:
        numbered.sort(key=lambda item: (item[0] is None, item[0] or 0))
    rows = [row for _, row in numbered]
    return SolutionSequence(_complete_vars(vars_, rows), rows, ordered=ordered)


def from_rdf(
    data: str | bytes,
    format: str,
    *,
    base_iri: str | None = None,
    rdf_star: str = "cg",
) -> SolutionSequence | BooleanResult | GraphResult | DatasetResult:
    """Parse an RDF document with pyoxigraph into a result.

    ``format`` is a :class:`pyoxigraph.RdfFormat` attribute name (``"TURTLE"``, ``"N_TRIPLES"``, ``"RDF_XML"``,
    ``"TRIG"``, ``"N_QUADS"``, ...). Dataset formats (TriG, N-Quads) give a :class:`DatasetResult`; a graph with
    an ``rs:ResultSet`` gives a :class:`SolutionSequence` or :class:`BooleanResult`; any other graph a
    :class:`GraphResult`. See the module documentation for ``rdf_star``.
    """
    quads = _parse_quads(data, format, base_iri, rdf_star)
    if format in _DATASET_FORMATS:
        return DatasetResult(quads)
    triples = [(s, p, o) for s, p, o, _ in quads]
    result_set = _result_set(triples)
    return result_set if result_set is not None else GraphResult(triples)


# ---------------------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------------------


def _ordered_names(result: SolutionSequence) -> list[str]:
    return _complete_vars(result.vars, result.rows)


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


def _csv_text(term: Term) -> str:
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
        writer.writerow([_csv_text(row[name]) if name in row else "" for name in names])
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
        body = [[_display(t) for t in quad[:3]] + [_display(quad[3]) if quad[3] is not None else ""] for quad in result.quads]
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


# ---------------------------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------------------------

Item = tuple  # a row as (var, term, var, term, ...) sorted by var, a triple or a quad; elements are terms or plain values


def _normalize(term: Term) -> Term:
    """Language tags compare case-insensitively: lower-case them."""
    if isinstance(term, Literal) and term.language is not None and term.language != term.language.lower():
        return Literal(term.lexical, RDF_LANGSTRING, term.language.lower())
    if isinstance(term, QuotedTriple):
        return QuotedTriple(_normalize(term.subject), _normalize(term.predicate), _normalize(term.object))
    return term


def _lossy(term: Term) -> Term | None:
    """The CSV view of a term: blank nodes stay, everything else becomes its CSV string; "" means unbound."""
    if isinstance(term, BlankNode):
        return term
    text = _csv_text(term)
    return Literal(text) if text != "" else None


def _has_bnode(elem: Any) -> bool:
    if isinstance(elem, BlankNode):
        return True
    if isinstance(elem, QuotedTriple):
        return _has_bnode(elem.subject) or _has_bnode(elem.predicate) or _has_bnode(elem.object)
    return False


def _bnodes(elem: Any, out: set[BlankNode]) -> None:
    if isinstance(elem, BlankNode):
        out.add(elem)
    elif isinstance(elem, QuotedTriple):
        _bnodes(elem.subject, out)
        _bnodes(elem.predicate, out)
        _bnodes(elem.object, out)


def _shape(elem: Any, colors: dict[BlankNode, Hashable], me: BlankNode | None = None) -> Hashable:
    """The element with every blank node replaced by its colour (``me`` by a distinct marker)."""
    if isinstance(elem, BlankNode):
        return ("\0bnode", "self" if elem == me else colors.get(elem, 0))
    if isinstance(elem, QuotedTriple):
        return ("\0triple", _shape(elem.subject, colors, me), _shape(elem.predicate, colors, me), _shape(elem.object, colors, me))
    return elem


def _signature(item: Item, colors: dict[BlankNode, Hashable]) -> Hashable:
    return tuple(_shape(elem, colors) for elem in item)


def _refine_step(colors: dict[BlankNode, Hashable], occurrences: dict[BlankNode, list[Item]]) -> dict[BlankNode, Hashable]:
    """One round of colour refinement: a blank node's new colour summarises, independently of labels and of
    item order, its old colour and the items it occurs in (other blank nodes seen through their colours).
    Isomorphic inputs get equal colours, so an isomorphism can only map a blank node to one of equal colour."""
    return {
        b: hash((colors[b], frozenset(Counter(tuple(_shape(e, colors, b) for e in item) for item in items).items())))
        for b, items in occurrences.items()
    }


def _occurrences(items: list[Item]) -> dict[BlankNode, list[Item]]:
    occurrences: dict[BlankNode, list[Item]] = {}
    for item in items:
        found: set[BlankNode] = set()
        for elem in item:
            _bnodes(elem, found)
        for b in found:
            occurrences.setdefault(b, []).append(item)
    return occurrences


def _match(
    actual: list[Item],
    expected: list[Item],
    blocks_a: list[Hashable] | None = None,
    blocks_e: list[Hashable] | None = None,
) -> dict[BlankNode, BlankNode] | None:
    """Find a blank-node bijection under which ``actual`` and ``expected`` are equal as multisets, items only
    matching items of the same block (when blocks are given). Returns the mapping (actual -> expected) or None.

    Colour refinement first (cheap, prunes almost everything), then a backtracking search over the items that
    hold blank nodes, taken in an order where each item shares blank nodes with earlier ones when possible.
    """
    if len(actual) != len(expected):
        return None
    blocks_a = blocks_a if blocks_a is not None else [0] * len(actual)
    blocks_e = blocks_e if blocks_e is not None else [0] * len(expected)

    occ_a, occ_e = _occurrences(actual), _occurrences(expected)
    if len(occ_a) != len(occ_e):
        return None
    colors_a: dict[BlankNode, Hashable] = dict.fromkeys(occ_a, 0)
    colors_e: dict[BlankNode, Hashable] = dict.fromkeys(occ_e, 0)
    for _ in range(len(occ_a)):
        next_a, next_e = _refine_step(colors_a, occ_a), _refine_step(colors_e, occ_e)
        if Counter(next_a.values()) != Counter(next_e.values()):
            return None
        grew = len(set(next_a.values())) > len(set(colors_a.values()))
        colors_a, colors_e = next_a, next_e
        if not grew:
            break

    keys_a = [(block, _signature(item, colors_a)) for block, item in zip(blocks_a, actual)]
    keys_e = [(block, _signature(item, colors_e)) for block, item in zip(blocks_e, expected)]
    if Counter(keys_a) != Counter(keys_e):
        return None

    # Ground items were matched by the signature check; search a bijection for the items with blank nodes.
    pending = [i for i, item in enumerate(actual) if any(_has_bnode(e) for e in item)]
    by_key: dict[Hashable, list[int]] = defaultdict(list)
    for j, item in enumerate(expected):
        if any(_has_bnode(e) for e in item):
            by_key[keys_e[j]].append(j)

    # Search order: start with the item with fewest candidates, then prefer items sharing a blank node with
    # an item already placed (their candidates are then constrained by the mapping).
    item_bnodes: dict[int, set[BlankNode]] = {}
    for i in pending:
        found: set[BlankNode] = set()
        for elem in actual[i]:
            _bnodes(elem, found)
        item_bnodes[i] = found
    items_of: dict[BlankNode, list[int]] = defaultdict(list)
    for i in pending:
        for b in item_bnodes[i]:
            items_of[b].append(i)
    rank = lambda i: (len(by_key[keys_a[i]]), i)  # noqa: E731
    order: list[int] = []
    placed: set[int] = set()
    frontier: list[tuple[tuple[int, int], int]] = []
    rest = sorted(pending, key=rank)
    rest_pos = 0
    while len(order) < len(pending):
        while frontier and frontier[0][1] in placed:
            heapq.heappop(frontier)
        if frontier:
            _, i = heapq.heappop(frontier)
        else:
            while rest[rest_pos] in placed:
                rest_pos += 1
            i = rest[rest_pos]
        placed.add(i)
        order.append(i)
        for b in item_bnodes[i]:
            for k in items_of[b]:
                if k not in placed:
                    heapq.heappush(frontier, (rank(k), k))

    m_ae: dict[BlankNode, BlankNode] = {}
    m_ea: dict[BlankNode, BlankNode] = {}

    def unify(a: Any, e: Any, added: list[BlankNode]) -> bool:
        if isinstance(a, BlankNode):
            if not isinstance(e, BlankNode):
                return False
            bound = m_ae.get(a)
            if bound is not None:
                return bound == e
            if e in m_ea:
                return False
            m_ae[a], m_ea[e] = e, a
            added.append(a)
            return True
        if isinstance(a, QuotedTriple):
            return (
                isinstance(e, QuotedTriple)
                and unify(a.subject, e.subject, added)
                and unify(a.predicate, e.predicate, added)
                and unify(a.object, e.object, added)
            )
        return a == e

    def undo(added: list[BlankNode]) -> None:
        for a in added:
            del m_ea[m_ae.pop(a)]

    used = [False] * len(expected)

    def candidates(i: int) -> Iterable[int]:
        seen: set[Item] = set()
        for j in by_key[keys_a[i]]:
            if not used[j] and expected[j] not in seen:
                seen.add(expected[j])  # equal expected items are interchangeable: try only one of them
                yield j

    # Iterative depth-first search (no recursion limit to worry about).
    choices: list[tuple[int, list[BlankNode]]] = []
    iterators = [candidates(order[0])] if order else []
    while len(choices) < len(order):
        level = len(choices)
        i = order[level]
        for j in iterators[level]:
            added: list[BlankNode] = []
            if all(unify(a, e, added) for a, e in zip(actual[i], expected[j])):
                used[j] = True
                choices.append((j, added))
                if len(choices) < len(order):
                    iterators.append(candidates(order[len(choices)]))
                break
            undo(added)
        else:
            iterators.pop()
            if not choices:
                return None
            j, added = choices.pop()
            used[j] = False
            undo(added)
    return dict(m_ae)


def _row_item(row: Row) -> Item:
    return tuple(x for name in sorted(row) for x in (name, row[name]))


def _show_row(row: Row, names: Sequence[str]) -> str:
    cells = [f"?{name}={row[name].n3()}" for name in names if name in row]
    cells += [f"?{name}={row[name].n3()}" for name in sorted(row) if name not in names]
    return "{" + ", ".join(cells) + "}" if cells else "{}"


def _show_item(item: Item) -> str:
    return " ".join("<default graph>" if e is None else e.n3() for e in item)


def _listing(title: str, lines: list[str], limit: int = 10) -> list[str]:
    out = [f"  {title} ({len(lines)}):"]
    out += [f"    {line}" for line in lines[:limit]]
    if len(lines) > limit:
        out.append(f"    ... and {len(lines) - limit} more")
    return out


def _multiset_diff(actual: list[Item], expected: list[Item], show: Callable[[Item], str]) -> list[str]:
    """Lines listing items missing from / unexpected in ``actual``, blank nodes treated as wildcards."""
    blank = {}

    def sig(item: Item) -> Hashable:
        return _signature(item, blank)

    ca, ce = Counter(map(sig, actual)), Counter(map(sig, expected))
    missing_keys, extra_keys = ce - ca, ca - ce
    missing, extra = [], []
    for item in expected:
        if missing_keys[sig(item)] > 0:
            missing_keys[sig(item)] -= 1
            missing.append(show(item))
    for item in actual:
        if extra_keys[sig(item)] > 0:
            extra_keys[sig(item)] -= 1
            extra.append(show(item))
    out = []
    if missing:
        out += _listing("missing (expected but not found)", missing)
    if extra:
        out += _listing("unexpected (found but not expected)", extra)
    return out


def _compare_rows(
    actual: SolutionSequence,
    expected: SolutionSequence,
    ordered: bool,
    order_key: Callable[[Row], Hashable] | None,
    check_vars: bool,
) -> tuple[bool, str]:
    notes = []
    if set(actual.vars) != set(expected.vars):
        note = f"variables differ: actual {sorted(actual.vars)}, expected {sorted(expected.vars)}"
        if check_vars:
            return False, note
        notes.append(f"  note: {note}")

    lossy = actual.lossy or expected.lossy

    def prepare(rows: list[Row]) -> list[Row]:
        out = []
        for row in rows:
            new: Row = {}
            for name, term in row.items():
                value = _lossy(term) if lossy else _normalize(term)
                if value is not None:
                    new[name] = value
            out.append(new)
        return out

    rows_a, rows_e = prepare(actual.rows), prepare(expected.rows)
    items_a, items_e = [_row_item(r) for r in rows_a], [_row_item(r) for r in rows_e]
    names = _complete_vars(expected.vars, expected.rows)
    show_item = lambda item: _show_row(dict(zip(item[0::2], item[1::2])), names)  # noqa: E731

    blocks_a = blocks_e = None
    if ordered and len(items_a) == len(items_e):
        if order_key is None:
            blocks_a = blocks_e = list(range(len(items_e)))
        else:
            # Runs of consecutive expected rows with equal ORDER BY keys may appear in any order within the run.
            blocks_e, run, previous = [], -1, object()
            for row in expected.rows:
                key = order_key(row)
                if run < 0 or key != previous:
                    run, previous = run + 1, key
                blocks_e.append(run)
            blocks_a = blocks_e
    if _match(items_a, items_e, blocks_a, blocks_e) is not None:
        return True, "results are equal"

    lines = [f"solution sequences differ: {len(items_a)} actual rows, {len(items_e)} expected rows" + (" (CSV view)" if lossy else "")]
    diff = _multiset_diff(items_a, items_e, show_item)
    if diff:
        lines += diff
    elif ordered and _match(items_a, items_e) is not None:
        position = next(
            (i for i, (a, e) in enumerate(zip(items_a, items_e)) if _signature(a, {}) != _signature(e, {})), None
        )
        lines.append("  the rows are equal as a multiset but their order differs" + ("" if order_key is None else " (beyond ties of the order key)"))
        if position is not None:
            lines.append(f"    first difference at row {position}:")
            lines.append(f"      expected {show_item(items_e[position])}")
            lines.append(f"      actual   {show_item(items_a[position])}")
    else:
        lines.append("  the rows agree up to blank-node labels, but no consistent blank-node mapping exists")
    return False, "\n".join(lines + notes)


def _compare_items(actual: list[Item], expected: list[Item], what: str) -> tuple[bool, str]:
    # Graphs and datasets are sets: duplicates do not count.
    norm = lambda items: list(dict.fromkeys(tuple(None if e is None else _normalize(e) for e in item) for item in items))  # noqa: E731
    items_a, items_e = norm(actual), norm(expected)
    if _match(items_a, items_e) is not None:
        return True, f"{what}s are isomorphic"
    lines = [f"{what}s differ: {len(items_a)} actual, {len(items_e)} expected distinct statements"]
    diff = _multiset_diff(items_a, items_e, _show_item)
    lines += diff or ["  the statements agree up to blank-node labels, but no consistent blank-node mapping exists"]
    return False, "\n".join(lines)


def results_equal(
    actual: QueryResult,
    expected: QueryResult,
    *,
    ordered: bool,
    order_key: Callable[[Row], Hashable] | None = None,
    check_vars: bool = False,
) -> tuple[bool, str]:
    """Compare a computed result with an expected one; returns ``(equal, message)``.

    Solution sequences: equal when some bijection between their blank nodes (one for the whole result) makes
    the rows equal as multisets. With ``ordered=True`` the row order must match as well: by default exactly
    (row i against row i, still under one blank-node bijection); when ``order_key`` is given (a function
    giving the ORDER BY key values of an expected row, comparable with ``==``), consecutive expected rows with
    equal keys form a run whose rows may come in any order at the same positions in ``actual``. Projected
    variable lists are only compared when ``check_vars`` is true (otherwise a difference is only mentioned).
    If either sequence was read from CSV (``lossy``), both are compared in their CSV view (strings).

    Booleans compare by value; graphs and datasets by isomorphism, as sets (``ordered`` is ignored).
    Literals compare on exact lexical form, datatype and language tag (the tag case-insensitively).
    The message explains the difference (missing/unexpected rows, order, blank-node mapping) for test reports.
    """
    if type(actual) is not type(expected):
        return False, f"result kinds differ: actual {type(actual).__name__}, expected {type(expected).__name__}"
    if isinstance(actual, BooleanResult):
        if actual.value == expected.value:
            return True, "results are equal"
        return False, f"boolean results differ: actual {str(actual.value).lower()}, expected {str(expected.value).lower()}"
    if isinstance(actual, SolutionSequence):
        return _compare_rows(actual, expected, ordered, order_key, check_vars)
    if isinstance(actual, GraphResult):
        return _compare_items(list(actual.triples), list(expected.triples), "graph")
    if isinstance(actual, DatasetResult):
        return _compare_items(list(actual.quads), list(expected.quads), "dataset")
    raise TypeError(f"not a query result: {type(actual).__name__}")
