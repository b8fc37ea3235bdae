"""Reading SPARQL result documents (the expected results of test suites).

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
    case-insensitively anyway; RDF 1.2 base directions are dropped. Relative IRIs in RDF files are resolved against the
    file's ``file:`` URI unless a ``base_iri`` is given.

    RDF-star: pyoxigraph (>= 0.5) implements RDF 1.2, where Turtle ``<< s p o >>`` stands for a *reifier*
    blank node ``_:r rdf:reifies <<( s p o )>>``. This project and the RDF-star CG test suite use the CG
    semantics, where ``<< s p o >>`` is the quoted triple term itself. With ``rdf_star="cg"`` (the default)
    the reification is undone: every blank node that is the subject of exactly one ``rdf:reifies`` triple
    whose object is a triple term is replaced, everywhere, by that (quoted) triple, and the ``rdf:reifies``
    triple is dropped. Annotation syntax ``s p o {| q z |}`` thereby becomes ``s p o . << s p o >> q z .``
    Pass ``rdf_star="rdf12"`` to keep pyoxigraph's output (triple terms still become :class:`QuotedTriple`).
    N-Triples files are parsed with the Turtle parser, so that the CG ``<< s p o >>`` form written by
    :func:`to_ntriples` reads back.
"""



from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from rspark.model.terms import (
    IRI,
    RDF,
    RDF_LANGSTRING,
    XSD,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
    BlankNode,
    Literal,
    QuotedTriple,
    Term,
)
from rspark.results import (
    BooleanResult,
    DatasetResult,
    GraphResult,
    Quad,
    QueryResult,
    Row,
    SolutionSequence,
    Triple,
    complete_vars,
    from_json,
)

RS = "http://www.w3.org/2001/sw/DataAccess/tests/result-set#"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_RDF_TYPE = IRI(RDF + "type")
_RDF_REIFIES = RDF + "reifies"

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
    return SolutionSequence(complete_vars(vars_, rows), rows)


# --- SPARQL JSON ------------------------------------------------------------------------------------------------


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


def parse_quads(data: str | bytes, fmt: str, base_iri: str | None, rdf_star: str) -> list[Quad]:
    # delayed: pyoxigraph, for the RDF reader only (the results readers need none)
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
                return QuotedTriple(convert(triple.subject, inner), convert(triple.predicate, inner),
                                    convert(triple.object, inner))
            return BlankNode(term.value)
        if isinstance(term, ox.Literal):
            if term.language is not None:
                return Literal(term.value, RDF_LANGSTRING, term.language)
            return Literal(term.value, term.datatype.value)
        if isinstance(term, ox.Triple):
            return QuotedTriple(convert(term.subject, active), convert(term.predicate, active),
                                convert(term.object, active))
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
    return SolutionSequence(complete_vars(vars_, rows), rows, ordered=ordered)


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
    quads = parse_quads(data, format, base_iri, rdf_star)
    if format in _DATASET_FORMATS:
        return DatasetResult(quads)
    triples = [(s, p, o) for s, p, o, _ in quads]
    result_set = _result_set(triples)
    return result_set if result_set is not None else GraphResult(triples)
