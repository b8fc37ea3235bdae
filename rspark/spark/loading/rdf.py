"""Pure-Python RDF parsing helpers for the Spark loader (:mod:`rspark.spark.loading.loader`); no Spark here.

Everything is parsed by pyoxigraph; this module only feeds it the right pieces and turns its output into the term
encoding of :mod:`rspark.model.codec`:

* :func:`detect_format` / :func:`file_base_iri`: which parser, and the base IRI relative IRIs resolve against.
* :class:`TermEncoder`: pyoxigraph terms -> encoded strings. Blank-node labels get a per-load prefix (so two files
  never share a blank node) and labels pyoxigraph generated (``[]``, collections, ...) are renamed by order of first
  appearance, so a re-parse gives the same labels. RDF-star: pyoxigraph 0.5 implements RDF 1.2, where
  ``<< s p o >>`` is a reifier blank node ``_:r rdf:reifies <<( s p o )>>``; as in :mod:`rspark.results`, every
  blank node that is the subject of exactly one ``rdf:reifies`` triple whose object is a triple term is replaced by
  that (quoted) triple and the ``rdf:reifies`` triple dropped (the RDF-star CG semantics this project uses).
* :func:`parse_lines`: a batch of N-Triples / N-Quads lines (one Spark Arrow batch), errors per physical line.
* :func:`split_statements`: a Turtle/TriG document cut into top-level statements (directives, default-graph
  triples, graph blocks) with their line and column, so that one malformed statement or graph block can be reported
  and skipped while the rest loads. It is a tokenizer (strings, IRIs, comments, brackets), not a parser.
* :func:`parse_document`: a whole Turtle/TriG/RDF-XML document (one executor task), strict or error-isolating.

Parse output goes into a :class:`Sink` (column lists) that the Spark side turns into Arrow batches. A position is
``(blk, idx, ord)``: for line formats ``blk`` is the byte offset of the Spark input split and ``idx`` the line's
index in it (the loader turns this into a physical line number); for whole documents ``blk`` is 0, ``idx`` the
0-based line and ``ord`` the statement's ordinal (it orders statements that share a line).

One module (about 1,100 lines): it is the code the Python workers run, imported as one unit by every parse task,
and its pieces share the term encoder, the sink and the error positions.
"""

from __future__ import annotations

import bisect
import gzip
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyoxigraph as ox

from rspark.errors import InputError
from rspark.model.codec import decode, encode, encode_literal
from rspark.model.terms import QuotedTriple

RDF_REIFIES = "http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies"

# --------------------------------------------------------------------------------------------------- formats

_EXTENSIONS = {
    ".ttl": "turtle",
    ".turtle": "turtle",
    ".n3": "turtle",
    ".nt": "ntriples",
    ".ntriples": "ntriples",
    ".nq": "nquads",
    ".nquads": "nquads",
    ".trig": "trig",
    ".rdf": "rdfxml",
    ".owl": "rdfxml",
    ".xml": "rdfxml",
}
_ALIASES = {
    "turtle": "turtle", "ttl": "turtle", "n3": "turtle",
    "ntriples": "ntriples", "nt": "ntriples",
    "nquads": "nquads", "nq": "nquads",
    "trig": "trig",
    "rdfxml": "rdfxml", "rdf": "rdfxml", "xml": "rdfxml", "owl": "rdfxml",
}
FORMATS = ("turtle", "ntriples", "nquads", "trig", "rdfxml")
LINE_FORMATS = frozenset({"ntriples", "nquads"})
QUAD_FORMATS = frozenset({"nquads", "trig"})
OX_FORMATS = {"turtle": "TURTLE", "ntriples": "N_TRIPLES", "nquads": "N_QUADS", "trig": "TRIG", "rdfxml": "RDF_XML"}
COMPRESSED = (".gz",)


def detect_format(path: str | Path, format: str | None = None) -> str:
    """The canonical format name (one of :data:`FORMATS`) given explicitly or from the file extension
    (``.gz`` is looked through)."""
    if format is not None:
        key = re.sub(r"[-_/ ]", "", format.strip().lower())
        if key not in _ALIASES:
            raise InputError(f"unknown RDF format {format!r}; expected one of {', '.join(FORMATS)}")
        return _ALIASES[key]
    name = str(path).lower()
    for ext in COMPRESSED:
        if name.endswith(ext):
            name = name[: -len(ext)]
    suffix = Path(name).suffix
    if suffix not in _EXTENSIONS:
        raise InputError(
            f"cannot tell the RDF format of {path} from its extension {suffix or '(none)'}: pass format= "
            f"({', '.join(FORMATS)})"
        )
    return _EXTENSIONS[suffix]


def has_scheme(path: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path) is not None


def local_path(path: str) -> str | None:
    """The absolute local path of ``path``, a path or a ``file:`` URI (None for a URI with another scheme, which
    Spark reads)."""
    if path.startswith("file://"):
        return unquote(urlparse(path).path)
    if has_scheme(path):
        return None
    return str(Path(path).resolve())


def is_empty_file(path: str) -> bool:
    """Whether ``path`` is a local file of 0 bytes (known from its size, without reading it; a glob pattern, a
    directory or a URI Spark reads is not)."""
    local = local_path(str(path))
    return local is not None and os.path.isfile(local) and os.path.getsize(local) == 0


def empty_stream_warning(iri: str, path: str) -> str:
    """The warning about a stream file of 0 bytes, the same before Spark starts (``rspark replay``) and at load."""
    return f"stream <{iri}> has no elements ({path} is empty)"


def file_base_iri(path: str | Path) -> str:
    """The default base IRI of a file: its ``file:`` URI (a URI with a scheme is used as it is)."""
    text = str(path)
    if has_scheme(text):
        return text
    return Path(text).resolve().as_uri()


def is_compressed(path: str) -> bool:
    return str(path).lower().endswith(COMPRESSED)


def read_bytes(path: str) -> bytes:
    """The bytes of a local (possibly gzipped) file."""
    if is_compressed(path):
        with gzip.open(path, "rb") as handle:
            return handle.read()
    with open(path, "rb") as handle:
        return handle.read()


def decode_text(data: bytes) -> str:
    text = data.decode("utf-8")
    return text[1:] if text.startswith("\ufeff") else text


# --------------------------------------------------------------------------------------------------- invalid UTF-8
# RDF's text formats are UTF-8. A byte sequence that is not valid UTF-8 is a problem of the line (N-Triples,
# N-Quads) or the statement / graph block (Turtle, TriG) that holds it, reported with its line and column as
# INVALID_UTF8 and the invalid bytes, and skipped like any malformed statement; the rest of the file loads.

INVALID_UTF8 = "invalid UTF-8"
_ESCAPED = re.compile("[\udc80-\udcff]+")  # the invalid bytes of a text decoded with "surrogateescape"


def invalid_utf8_message(raw: bytes) -> str:
    """The problem's message for the invalid bytes ``raw``: ``invalid UTF-8 (byte 0xFF)``."""
    shown = " ".join(f"0x{b:02X}" for b in raw[:4]) + (" ..." if len(raw) > 4 else "")
    return f"{INVALID_UTF8} ({'byte' if len(raw) == 1 else 'bytes'} {shown})"


def decode_marking(data: bytes) -> tuple[str, list[tuple[int, int, int, str]]]:
    """A document's text (a leading byte order mark dropped) and its invalid UTF-8 sequences as (character offset,
    0-based line, 1-based column, message), in order; each invalid sequence is one U+FFFD in the text."""
    try:
        return decode_text(data), []
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", errors="surrogateescape")
    if text.startswith("\ufeff"):
        text = text[1:]
    found, parts, pos, size = [], [], 0, 0
    for m in _ESCAPED.finditer(text):
        parts.append(text[pos:m.start()])
        size += m.start() - pos
        found.append((size, invalid_utf8_message(bytes(ord(c) - 0xDC00 for c in m.group()))))
        parts.append("\ufffd")
        size += 1
        pos = m.end()
    parts.append(text[pos:])
    text = "".join(parts)
    bad, line, at = [], 0, 0
    for offset, message in found:  # lines counted once over the text, not from its start for each
        line += text.count("\n", at, offset)
        at = offset
        bad.append((offset, line, offset - text.rfind("\n", 0, offset), message))
    return text, bad


def first_invalid_utf8(data: bytes) -> tuple[int, int, str] | None:
    """The line (1-based), column (1-based, in characters) and message of the first invalid UTF-8 sequence of
    ``data``, or None when it is valid UTF-8."""
    try:
        data.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        start, end = exc.start, exc.end
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8")) + 1
    if line_start == 0 and data.startswith(b"\xef\xbb\xbf"):
        column -= 1  # the byte order mark is no character of the line
    return data.count(b"\n", 0, start) + 1, column, invalid_utf8_message(data[start:end])


def invalid_utf8_lines(values) -> tuple[object, list[tuple[int, str, int, str]]]:
    """The lines of an Arrow string array (a Spark batch) that are not valid UTF-8, and the array with them null
    (so that the parsers skip them): ``(values, [(index, line, column, message)])``, the line decoded with
    "surrogateescape" (its invalid bytes as lone surrogates), the column (1-based, in characters) of its first
    invalid sequence. One validation pass over the batch when every line is valid (the usual case)."""
    # delayed: pyarrow (~0.15 s): the command line imports this module to check files before Spark starts
    import pyarrow as pa

    try:
        values.validate(full=True)
        return values, []
    except pa.ArrowInvalid:
        pass
    binary = values.view(pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary())
    kept, bad = [], []
    for i, raw in enumerate(binary.to_pylist()):
        if raw is None:
            kept.append(None)
            continue
        try:
            kept.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            kept.append(None)
            column = len(raw[:exc.start].decode("utf-8")) + 1
            bad.append((i, raw.decode("utf-8", "surrogateescape"), column,
                        invalid_utf8_message(raw[exc.start:exc.end])))
    return pa.array(kept, values.type), bad


def might_be_star(data: bytes | str) -> bool:
    """Whether a document may hold RDF-star/RDF 1.2 reifiers (then it is parsed into memory before encoding)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return any(mark in data for mark in (b"<<", b"{|", b"reifies", b"annotation"))


# --------------------------------------------------------------------------------------------------- errors


@dataclass
class ParseProblem:
    """One syntax (or data) problem found on an executor; the loader turns it into a :class:`DataError`."""

    message: str
    blk: int = 0
    idx: int | None = None     # 0-based line within blk (None: unknown)
    ord: int = 0
    column: int | None = None
    element: str | None = None  # encoded graph name of the element it belongs to, when known


_LOCATION_PREFIX = re.compile(r"^Parser error (?:at line \d+ (?:between columns \d+ and \d+|column \d+)"
                              r"|between line \d+ column \d+ and line \d+ column \d+)?: ")


def syntax_message(error: SyntaxError) -> str:
    """pyoxigraph's message without its own location prefix (the loader adds file:line:column)."""
    msg = error.msg if isinstance(getattr(error, "msg", None), str) else str(error)
    return _LOCATION_PREFIX.sub("", msg)


def syntax_location(error: SyntaxError) -> tuple[int | None, int | None]:
    return getattr(error, "lineno", None), getattr(error, "offset", None)


def line_start(text: str, line: int, known: tuple[int, int] = (1, 0)) -> int:
    """The offset in ``text`` where its 1-based ``line`` starts (``known``: a line and its start offset at or
    before it, to count from)."""
    number, offset = known
    while number < line:
        at = text.find("\n", offset)
        if at < 0:
            break
        number, offset = number + 1, at + 1
    return offset


def document_problem(exc: SyntaxError, data: bytes | str) -> tuple[str, int | None, int | None]:
    """pyoxigraph's syntax error about ``data`` (a document parsed whole: a push, a graph) as the loader reports
    it: the reason without pyoxigraph's location prefix (an unterminated string said so, at its opening quote), the
    line and the column."""
    reason = syntax_message(exc)
    line, column = syntax_location(exc)
    if line is not None and column is not None:
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        start = line_start(text, line)
        reason, at = unterminated_string(reason, text, start + column - 1)
        column = at - start + 1
    return reason, line, column


def unterminated_string(message: str, text: str, offset: int | None, *, unit: str = "file") -> tuple[str, int]:
    """pyoxigraph's ``message`` about ``text`` at ``offset`` (its 0-based position there), said plainly when it is
    about a string literal that is not closed, and the offset of the string's opening quote (else the message and
    the offset as they are). pyoxigraph reports such a string as "Unexpected end of file" where the string starts
    (a line, or a statement cut at the end of the string's line: the end of the input comes first), or as "Line
    jumps are not allowed in string literals" at the end of its line (a document parsed whole). ``unit``: what
    ``text`` ends with, for a long string (a "file", or a "line" parsed on its own)."""
    if offset is None or offset < 0:
        return message, offset
    start = None
    if message.startswith("Unexpected end"):
        start = offset
    elif message.startswith("Line jumps are not allowed in string literals"):
        toks = _Tokens(text)
        toks.pos = text.rfind("\n", 0, offset) + 1
        while (tok := toks.next()) is not None and tok[1] <= offset:
            if tok[0] == "ustr":
                start = tok[1]
    if start is None:
        return message, offset
    m = _TTL_TOKEN.match(text, start)
    kind = m.lastgroup
    if m.start(kind) != start or kind not in ("ustr", "lopen"):
        return message, offset
    if kind == "ustr":
        return f"unterminated string: no closing {text[start]} on the line where it starts", start
    return f"unterminated string: no closing {text[start:start + 3]} before the end of the {unit}", start


# --------------------------------------------------------------------------------------------------- terms

_NN, _BN, _LIT, _TRIPLE, _DG = ox.NamedNode, ox.BlankNode, ox.Literal, ox.Triple, ox.DefaultGraph
_GENERATED = re.compile(r"[0-9a-f]{16,32}")


def reifier_map(quads: Iterable) -> dict[str, object]:
    """Blank-node label -> triple term, for every blank node that is the subject of exactly one ``rdf:reifies``
    triple whose object is a triple term (the reifiers :class:`TermEncoder` undoes)."""
    counts: dict[str, int] = {}
    found: dict[str, object] = {}
    for quad in quads:
        if (
            quad.predicate.value == RDF_REIFIES
            and quad.subject.__class__ is _BN
            and quad.object.__class__ is _TRIPLE
        ):
            label = quad.subject.value
            counts[label] = counts.get(label, 0) + 1
            found[label] = quad.object
    return {label: triple for label, triple in found.items() if counts[label] == 1}


class TermEncoder:
    """pyoxigraph terms -> encoded strings (see the module documentation).

    ``token`` is the per-load blank-node prefix: a label ``b1`` written in the file becomes ``_:<token>_b1``; a
    label pyoxigraph generated becomes ``_:<token>-<gen><n>`` (n counting first appearances). ``explicit`` (when
    given) is the source text the labels were read from: a label that occurs in it as ``_:label`` is kept even if
    it looks generated. ``reifiers`` (see :func:`reifier_map`) are undone.
    """

    __slots__ = ("token", "gen", "labels", "counter", "explicit", "reifiers", "_reified")

    def __init__(self, token: str, *, gen: str = "", explicit: str | bool | None = None,
                 reifiers: dict[str, object] | None = None) -> None:
        self.token = token
        self.gen = gen
        self.labels: dict[str, str] = {}
        self.counter = 0
        self.explicit = explicit
        self.reifiers = reifiers or {}
        self._reified: dict[str, str] = {}

    def bnode(self, label: str) -> str:
        enc = self.labels.get(label)
        if enc is None:
            if self.explicit is not True and _GENERATED.fullmatch(label) and (
                    self.explicit is None or "_:" + label not in self.explicit):
                enc = f"_:{self.token}-{self.gen}{self.counter}"
                self.counter += 1
            else:
                enc = f"_:{self.token}_{label}"
            self.labels[label] = enc
        return enc

    def term(self, t, active: frozenset = frozenset()) -> str:
        c = t.__class__
        if c is _NN:
            return "<" + t.value + ">"
        if c is _LIT:
            s = str(t)
            if "\\" in s:
                return encode_literal(t.value, t.datatype.value, t.language)
            last = s[-1]
            if last != '"' and last != ">":  # language tag: lower case, no RDF 1.2 direction
                cut = s.rfind('"')
                tag = s[cut + 2:]
                if "--" in tag or tag != tag.lower():
                    return encode_literal(t.value, t.datatype.value, t.language)
            return s
        if c is _BN:
            label = t.value
            if self.reifiers and label in self.reifiers and label not in active:
                if not active:
                    cached = self._reified.get(label)
                    if cached is not None:
                        return cached
                triple = self.reifiers[label]
                inner = active | {label}
                enc = ("<< " + self.term(triple.subject, inner) + " " + self.term(triple.predicate, inner) + " "
                       + self.term(triple.object, inner) + " >>")
                if not active:
                    self._reified[label] = enc
                return enc
            return self.bnode(label)
        if c is _TRIPLE:
            return ("<< " + self.term(t.subject, active) + " " + self.term(t.predicate, active) + " "
                    + self.term(t.object, active) + " >>")
        if c is _DG:
            return ""
        raise TypeError(f"not an RDF term: {t!r}")

    def skip(self, quad) -> bool:
        """Whether a quad is an undone ``rdf:reifies`` triple (dropped)."""
        return (
            bool(self.reifiers)
            and quad.predicate.value == RDF_REIFIES
            and quad.subject.__class__ is _BN
            and quad.subject.value in self.reifiers
        )


class Sink:
    """Parse output as column lists: quads (s, p, o, g and position) and problems."""

    __slots__ = ("s", "p", "o", "g", "blk", "idx", "ord", "problems")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.s: list[str] = []
        self.p: list[str] = []
        self.o: list[str] = []
        self.g: list[str] = []
        self.blk: list[int] = []
        self.idx: list[int] = []
        self.ord: list[int] = []
        self.problems: list[ParseProblem] = []

    def __len__(self) -> int:
        return len(self.s)

    def add_quads(self, quads: Iterable, enc: TermEncoder, default_graph: str, blk: int, idx: int, ord_: int = 0,
                  graph_override: str | None = None) -> int:
        """Encode and append quads (all at one position); returns how many were added."""
        n = self.add_terms(quads, enc, default_graph, graph_override)
        if n:
            self.blk.extend([blk] * n)
            self.idx.extend([idx] * n)
            self.ord.extend([ord_] * n)
        return n

    def add_terms(self, quads: Iterable, enc: TermEncoder, default_graph: str, graph_override: str | None) -> int:
        """Encode and append the terms of quads (``s, p, o, g``; undone ``rdf:reifies`` triples skipped), not their
        positions; returns how many were added. The executors' hot loop: one pass, no call per term but the
        encoder's."""
        s_, p_, o_, g_ = self.s, self.p, self.o, self.g
        term = enc.term
        skip = enc.skip if enc.reifiers else None
        n = 0
        for quad in quads:
            if skip is not None and skip(quad):
                continue
            s_.append(term(quad.subject))
            p_.append("<" + quad.predicate.value + ">")
            o_.append(term(quad.object))
            if graph_override is not None:
                g_.append(graph_override)
            else:
                gn = quad.graph_name
                g_.append(default_graph if gn.__class__ is _DG else term(gn))
            n += 1
        return n


# --------------------------------------------------------------------------------------------------- line formats

_NQ_TOKEN = re.compile(
    r"""\s+|\#.*
    |(?P<open><<\(|<<)
    |(?P<close>\)>>|>>)
    |(?P<term><[^<>"{}|^`\\\s]*>|"(?:[^"\\]|\\.)*"(?:@[A-Za-z][A-Za-z0-9-]*|\^\^<[^<>\s]*>)?|_:[^\s<>"{}]*[^\s<>"{}.])
    |(?P<dot>\.)
    |(?P<other>\S)""",
    re.X,
)


def nquads_terms(line: str) -> list[str] | None:
    """The top-level terms of an N-Quads(-star) line, each as written (a quoted triple as one string), or None
    when the line cannot be cut into terms."""
    terms: list[str] = []
    depth = 0
    start = 0
    pos = 0
    while pos < len(line):
        m = _NQ_TOKEN.match(line, pos)
        if m is None:
            return None
        kind = m.lastgroup
        if kind == "open":
            if depth == 0:
                start = m.start()
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                terms.append(line[start:m.end()])
        elif kind == "term":
            if depth == 0:
                terms.append(m.group())
        elif kind == "dot":
            if depth == 0:
                break
        elif kind == "other":
            return None
        pos = m.end()
    return terms if depth == 0 else None


def _nquads_star_as_trig(line: str) -> str | None:
    """An N-Quads line with RDF-star CG quoted triples (``<< s p o >>``) rewritten as TriG, which pyoxigraph
    parses (its N-Quads parser only knows RDF 1.2 ``<<( )>>`` triple terms)."""
    terms = nquads_terms(line)
    if terms is None or len(terms) not in (3, 4):
        return None
    body = " ".join(terms[:3]) + " ."
    if len(terms) == 4:
        return f"GRAPH {terms[3]} {{ {body} }}"
    return body


_LAST_TERM = re.compile(r"\s(<[^<>\s]*>|_:[^\s<>]*[^\s<>.])\s*\.\s*(?:#.*)?$")


def _graph_of_bad_line(line: str, fmt: str, enc: TermEncoder) -> str | None:
    """Best effort: the encoded graph name written on a malformed N-Quads line (its 4th term)."""
    if fmt != "nquads":
        return None
    terms = nquads_terms(line)
    if terms is None:  # e.g. an unterminated string: take the last IRI / blank node before the final '.'
        m = _LAST_TERM.search(line)
        if m is None:
            return None
        g = m.group(1)
    elif len(terms) == 4:
        g = terms[3]
    else:
        return None
    if g.startswith("<") and g.endswith(">") and not g.startswith("<<"):
        return g if "\\" not in g else None
    if g.startswith("_:"):
        return enc.bnode(g[2:])
    return None


# The fast path for line formats: a line whose every term is already in the canonical encoding (absolute IRIs
# of a plain shape, ASCII blank-node labels, literals with only the escapes the encoding keeps, lower-case simple
# language tags) is recognised by one RE2 match over the whole Arrow batch (FAST_LINE) and cut into its terms by a
# looser pattern (_FAST_CUT); the terms are then the encoding as written (only blank-node labels get the load's
# prefix). Every other line (relative
# or unusual IRIs, other escapes, quoted triples, comments alone, bad lines) goes through pyoxigraph. The accepted
# language is a subset of N-Triples/N-Quads on which pyoxigraph accepts and leaves the terms unchanged: tested
# against it on the W3C files and on generated lines (tests/test_loader.py).
_UCS = r"\x{A0}-\x{D7FF}\x{F900}-\x{FDCF}\x{FDF0}-\x{FFEF}"
_PCT = r"%[0-9A-Fa-f]{2}"
_SUB = r"!$&'()*+,;="
_PCHAR = rf"(?:[A-Za-z0-9\-._~{_UCS}{_SUB}:@]|{_PCT})"
_AUTHORITY = (rf"(?:(?:[A-Za-z0-9\-._~{_UCS}{_SUB}:]|{_PCT})*@)?(?:[A-Za-z0-9\-._~{_UCS}{_SUB}]|{_PCT})*"
              r"(?::[0-9]*)?")
_IRI_RE = (rf"<[A-Za-z][A-Za-z0-9+.\-]*:(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/?(?:{_PCHAR}+(?:/{_PCHAR}*)*)?)"
           rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?>")
_BNODE_RE = r"_:[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
_LITERAL_RE = rf'"(?:[^"\\\n\r]|\\["\\nr])*"(?:@[a-z]{{2,3}}(?:-[a-z]{{2}}|-[0-9]{{3}})?|\^\^{_IRI_RE})?'
_NODE_RE = rf"(?:{_IRI_RE}|{_BNODE_RE})"
_FAST_TRIPLE = rf"^[ \t]*{_NODE_RE}[ \t]+{_IRI_RE}[ \t]+(?:{_NODE_RE}|{_LITERAL_RE})"
_FAST_END = r"[ \t]*\.[ \t]*(?:#.*)?$"
FAST_LINE = {
    "ntriples": _FAST_TRIPLE + _FAST_END,
    "nquads": _FAST_TRIPLE + rf"(?:[ \t]+{_NODE_RE})?" + _FAST_END,
}
_LOOSE_NODE = r"(?:<[^>]*>|_:[^ \t]*[^ \t.])"
_LOOSE_LITERAL = r'"(?:[^"\\]|\\.)*"(?:@[a-z0-9-]*|\^\^<[^>]*>)?'
_CUT_TRIPLE = (rf"^[ \t]*(?P<s>{_LOOSE_NODE})[ \t]+(?P<p><[^>]*>)[ \t]+"
               rf"(?P<o>{_LOOSE_NODE}|{_LOOSE_LITERAL})")
_FAST_CUT = {"ntriples": _CUT_TRIPLE, "nquads": _CUT_TRIPLE + rf"(?:[ \t]+(?P<g>{_LOOSE_NODE}))?[ \t]*\."}
# datatypes the encoding rewrites (xsd:string is dropped) or pyoxigraph rejects without a tag (rdf:langString, ...)
_FAST_EXCLUDED_DATATYPE = r'"\^\^<http://www\.w3\.org/(?:1999/02/22-rdf-syntax-ns#|2001/XMLSchema#string>)'


def fast_lines(values, *, fmt: str, token: str, default_graph: str, triple_graph: str | None = None):
    """The fast path over an Arrow string array of N-Triples/N-Quads lines: ``(ok, s, p, o, g)`` where ``ok`` is
    a boolean mask of the lines it read (the others, nulls too, are for :func:`parse_lines`) and ``s p o g`` are
    the encoded terms of those lines (arrays as long as ``ok``'s true count). ``g`` follows ``parse_lines``:
    ``triple_graph`` (N-Triples; None: ``default_graph``), else the line's graph or ``default_graph``."""
    # delayed: pyarrow (~0.15 s): the command line imports this module to check files before Spark starts
    import pyarrow as pa
    import pyarrow.compute as pc

    # RE2 decides membership with a DFA, fast; extracting submatches with the full pattern is not: the lines it
    # accepts are cut with a loose pattern that splits them the same way
    ok = pc.fill_null(pc.match_substring_regex(values, FAST_LINE[fmt]), False)
    ok = pc.and_(ok, pc.invert(pc.fill_null(pc.match_substring_regex(values, _FAST_EXCLUDED_DATATYPE), False)))
    s, p, o, g = _cut_terms(values.filter(ok), fmt)
    prefix = f"_:{token}_"  # blank-node labels as TermEncoder(explicit=True) writes them

    def label(arr):
        return pc.replace_substring_regex(arr, "^_:", prefix)

    s, o = label(s), label(o)  # a literal never starts with _:
    if fmt == "ntriples":
        graph = triple_graph if triple_graph is not None else default_graph
        g = pa.repeat(pa.scalar(graph, pa.string()), len(s))
    else:  # no graph is ""
        g = pc.if_else(pc.equal(g, ""), pa.scalar(default_graph, pa.string()), label(g))
    return ok, s, p, o, g


# a line spaced as writers write it: no tab, single spaces, none first, " ." last
_WRITERS_SPACING = r"^[^ \t](?:[^ \t]| [^ \t])* \.$"


def _cut_terms(kept, fmt: str) -> tuple:
    """The terms ``s, p, o, g`` (g "" when the line has none; None for N-Triples) of lines the fast path accepted.

    Lines spaced as writers write them (one space between terms, none before the first, " ." at the end, no tab
    and no two spaces anywhere) are cut by splitting at spaces: the subject and the predicate have none, and the
    last space-separated part before the dot is the graph exactly when it starts as an IRI or a blank node and has
    no quote (the last part of a literal holds its closing quote). The others are cut by ``_FAST_CUT``'s groups,
    which RE2 extracts about ten times slower (measured: 1.1 us a line against 0.1 us for the split)."""
    # delayed, as in fast_lines
    import pyarrow as pa
    import pyarrow.compute as pc

    simple = pc.match_substring_regex(kept, _WRITERS_SPACING)
    lines = kept.filter(simple)
    parts = pc.split_pattern(lines, " ", max_splits=2)  # three parts: the line passed FAST_LINE with one space
    s, p = pc.list_element(parts, 0), pc.list_element(parts, 1)
    body = pc.utf8_slice_codeunits(pc.list_element(parts, 2), 0, -2)  # " ." cut
    if fmt == "ntriples":
        terms = [s, p, body, None]
    else:
        # two parts always: the last after the last space, and before it the rest behind a two-character guard
        tail = pc.split_pattern(pc.binary_join_element_wise("\x00", body, " "), " ", max_splits=1, reverse=True)
        head, last = pc.utf8_slice_codeunits(pc.list_element(tail, 0), 2), pc.list_element(tail, 1)
        graph = pc.and_(pc.not_equal(head, ""), pc.and_(
            pc.or_(pc.starts_with(last, "<"), pc.starts_with(last, "_:")), pc.invert(pc.match_substring(last, '"'))))
        terms = [s, p, pc.if_else(graph, head, body), pc.if_else(graph, last, "")]
    if len(lines) == len(kept):  # every line as writers write them
        return tuple(terms)
    rest = pc.invert(simple)
    cut = pc.extract_regex(kept.filter(rest), _FAST_CUT[fmt])
    empty = pa.nulls(len(kept), pa.string())
    return tuple(None if split is None else
                 pc.replace_with_mask(pc.replace_with_mask(empty, simple, split), rest, cut.field(name))
                 for split, name in zip(terms, "spog"))


def add_invalid_lines(bad: list, blks: list, idxs: list, sink: Sink, *, fmt: str, token: str) -> None:
    """The problems of the lines :func:`invalid_utf8_lines` found (``blks`` / ``idxs``: the batch's positions), each
    naming the element of its N-Quads line when the line's graph can be read."""
    enc = TermEncoder(token, explicit=True)
    for i, line, column, message in bad:
        graph = _graph_of_bad_line(line, fmt, enc)
        if graph is not None and _ESCAPED.search(graph):
            graph = None  # the invalid bytes are in the graph name: no element's name
        sink.problems.append(ParseProblem(message, blks[i], idxs[i], 0, column, graph))


def _content_line(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def parse_lines(lines: list[str], blks: list[int], idxs: list[int], sink: Sink, *, fmt: str, base_iri: str | None,
                token: str, default_graph: str, triple_graph: str | None = None) -> None:
    """Parse N-Triples/N-Quads lines (one Spark batch) into ``sink``.

    Lines are parsed together; if that fails (or a line holds an RDF-star ``<<``), line by line, so that each bad
    line becomes one :class:`ParseProblem` at its own position and the others load. Lines with CG quoted triples
    (``<< s p o >>``, which pyoxigraph's N-Triples/N-Quads parsers reject) are parsed with the Turtle parser
    (N-Triples) or rewritten as TriG (N-Quads); their reifiers are undone within the line.
    ``triple_graph``: the encoded graph of N-Triples triples (None: ``default_graph``).
    """
    ox_fmt = ox.RdfFormat.N_TRIPLES if fmt == "ntriples" else ox.RdfFormat.N_QUADS
    enc = TermEncoder(token, explicit=True)
    graph_override = triple_graph if fmt == "ntriples" else None
    plain: list[int] = []
    star: list[int] = []
    for i, line in enumerate(lines):
        if line is None or not _content_line(line):
            continue
        (star if "<<" in line else plain).append(i)
    if plain:
        ok = False
        try:
            quads = list(ox.parse("\n".join(lines[i] for i in plain), ox_fmt, base_iri=base_iri))
            ok = len(quads) == len(plain)
        except SyntaxError:
            pass
        if ok:  # one quad a line, in the lines' order (the encoder undoes no reifier: no line has one)
            sink.add_terms(quads, enc, default_graph, graph_override)
            sink.blk.extend([blks[i] for i in plain])
            sink.idx.extend([idxs[i] for i in plain])
            sink.ord.extend([0] * len(plain))
        else:
            star = sorted(star + plain)
    for i in star:
        _parse_one_line(lines[i], blks[i], idxs[i], sink, fmt=fmt, ox_fmt=ox_fmt, base_iri=base_iri, token=token,
                        default_graph=default_graph, graph_override=graph_override)


def _parse_one_line(line: str, blk: int, idx: int, sink: Sink, *, fmt: str, ox_fmt, base_iri: str | None,
                    token: str, default_graph: str, graph_override: str | None) -> None:
    """One N-Triples/N-Quads line. pyoxigraph's N-Triples/N-Quads parser first; if it fails, the line is read as
    Turtle (N-Triples) or rewritten as TriG (N-Quads), which takes CG quoted triples ``<< s p o >>`` and relative
    IRIs (resolved against the base, as :mod:`rspark.results` does), and is accepted when it gives exactly one
    triple. A line with ``<<`` tries the Turtle/TriG reading first and reports its error."""
    primary = (line, ox_fmt, True)
    if fmt == "ntriples":
        fallback = (line, ox.RdfFormat.TURTLE, True)
    else:
        trig = _nquads_star_as_trig(line)
        fallback = (trig, ox.RdfFormat.TRIG, False) if trig is not None else None
    star = "<<" in line
    attempts = [primary] if fallback is None else [fallback, primary] if star else [primary, fallback]
    first_error: tuple[str, int | None] | None = None
    for text, this_fmt, same_columns in attempts:
        try:
            quads = list(ox.parse(text, this_fmt, base_iri=base_iri))
        except SyntaxError as exc:
            if first_error is None:
                message, column = syntax_message(exc), syntax_location(exc)[1] if same_columns else None
                if column is not None:
                    message, at = unterminated_string(message, line, column - 1, unit="line")
                    column = at + 1
                first_error = (message, column)
            continue
        enc = TermEncoder(token, gen=f"{blk}x{idx}x", explicit=line, reifiers=reifier_map(quads) if star else None)
        kept = [q for q in quads if not enc.skip(q)]
        if len(kept) != 1 or (fmt == "ntriples" and kept[0].graph_name.__class__ is not _DG):
            if first_error is None:
                first_error = ("one triple per line expected" if fmt == "ntriples" else
                               "one quad per line expected", None)
            continue
        sink.add_quads(quads, enc, default_graph, blk, idx, 0, graph_override)
        return
    assert first_error is not None
    sink.problems.append(ParseProblem(first_error[0], blk, idx, 0, first_error[1],
                                      _graph_of_bad_line(line, fmt, TermEncoder(token, explicit=True))))


# --------------------------------------------------------------------------------------------------- Turtle / TriG

_TTL_TOKEN = re.compile(
    r"""(?:[ \t\r\n]+|\#[^\n]*)*   # white space and comments before the token
    (?:(?P<lstr>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*''')
    |(?P<lopen>\"\"\"|''')
    |(?P<str>"(?:[^"\\\n]|\\[^\n])*"|'(?:[^'\\\n]|\\[^\n])*')
    |(?P<ustr>"(?:[^"\\\n]|\\[^\n])*|'(?:[^'\\\n]|\\[^\n])*)
    |(?P<open><<\(|<<|\{\||\[|\()
    |(?P<close>\)>>|>>|\|\}|\]|\))
    |(?P<iri><[^<>"{}|^`\\\s]*(?:\\[uU][0-9A-Fa-f]{4,8}[^<>"{}|^`\\\s]*)*>)
    |(?P<lbrace>\{)
    |(?P<rbrace>\})
    |(?P<dot>\.(?![0-9]))
    |(?P<word>(?:[^\s"'<>{}\[\]()\#;,|.\\]|\\.|\.(?=[^\s"'<>{}\[\]()\#;,|.]))+)
    |(?P<other>.)
    |(?P<end>\Z))""",
    re.X | re.S,
)


@dataclass
class Statement:
    """One top-level piece of a Turtle/TriG document.

    ``kind``: ``"directive"`` (prefix/base/version), ``"triples"`` (default-graph triples ending with ``.``) or
    ``"graph"`` (``label { ... }``, ``GRAPH label { ... }`` or a bare ``{ ... }`` default-graph block: then
    ``label`` is None). ``start``/``end`` are character offsets, ``line`` (1-based) and ``column`` (0-based) where
    it starts. ``text`` for directives is the statement without comments on one line.
    """

    kind: str
    start: int
    end: int
    line: int = 0
    column: int = 0
    label: str | None = None
    text: str = ""


class _Tokens:
    __slots__ = ("text", "pos", "n")

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.n = text, 0, len(text)

    def next(self):
        """(kind, start, end) of the next token (white space and comments skipped), or None at the end."""
        m = _TTL_TOKEN.match(self.text, self.pos)
        kind = m.lastgroup
        if kind == "end":
            self.pos = self.n
            return None
        start = m.start(kind)
        end = m.end() if kind != "lopen" else self.n  # an unterminated long string runs to the end
        self.pos = end
        return kind, start, end


def split_statements(text: str) -> list[Statement]:
    """Cut a Turtle/TriG document into top-level statements (see :class:`Statement`).

    Valid documents are cut exactly at statement boundaries. On malformed input it resynchronises: a short string
    ends at the end of its line, an IRI at white space, and a ``{`` that cannot belong to the current statement
    (a graph block not closed, or a triple missing its ``.``) starts a new graph block at its label.
    """
    toks = _Tokens(text)
    out: list[Statement] = []
    pending = toks.next()
    while pending is not None:
        kind, start, end = pending
        pending = None
        word = text[start:end]
        if kind == "word" and word.lower() in ("@prefix", "@base", "@version"):
            parts = [word]
            stmt_end = end
            while True:
                tok = toks.next()
                if tok is None:
                    break
                k, s, e = tok
                parts.append(text[s:e])
                stmt_end = e
                if k == "dot":
                    break
            out.append(Statement("directive", start, stmt_end, text=" ".join(parts)))
            pending = toks.next()
            continue
        if kind == "word" and word.upper() in ("PREFIX", "BASE", "VERSION"):
            parts = [word]
            stmt_end = end
            want = "str" if word.upper() == "VERSION" else "iri"
            while True:
                tok = toks.next()
                if tok is None:
                    break
                k, s, e = tok
                parts.append(text[s:e])
                stmt_end = e
                if k == want or k in ("dot", "lbrace", "rbrace"):
                    break
            out.append(Statement("directive", start, stmt_end, text=" ".join(parts)))
            pending = toks.next()
            continue
        # triples or a graph block
        depth = 0
        recent: list[tuple[str, int, int]] = []  # significant tokens of this statement at depth 0
        tok: tuple[str, int, int] | None = (kind, start, end)
        stmt_start = start
        while tok is not None:
            k, s, e = tok
            if k == "open":
                depth += 1
            elif k == "close":
                depth = max(0, depth - 1)
            elif (k == "dot" and depth == 0) or k == "ustr":
                out.append(Statement("triples", stmt_start, e))
                break
            elif k == "rbrace" and depth == 0:
                out.append(Statement("triples", stmt_start, e))  # a stray '}': reported by the parser
                break
            elif k == "lbrace":
                label_start = _label_start(text, recent, s)
                if label_start > stmt_start:
                    out.append(Statement("triples", stmt_start, label_start))
                label = text[label_start:s].strip() or None
                if label is not None and label[:5].upper() == "GRAPH" and label[5:6].isspace():
                    label = label[5:].strip()
                block_end, pending = _graph_block(toks, text, e)
                out.append(Statement("graph", label_start, block_end, label=label))
                break
            if depth == 0 or (k == "open" and depth == 1):
                recent.append(tok)
                if len(recent) > 4:
                    del recent[0]
            tok = toks.next()
        else:
            out.append(Statement("triples", stmt_start, len(text)))
        if pending is None:
            pending = toks.next()
    _set_lines(text, out)
    return out


def _label_start(text: str, recent: list[tuple[str, int, int]], brace: int) -> int:
    """Where the graph label before a '{' starts (the keyword GRAPH included); the brace itself when none."""
    if not recent:
        return brace
    k, s, e = recent[-1]
    if k == "close" and text[s:e] == "]" and len(recent) >= 2 and text[recent[-2][1]:recent[-2][2]] == "[":
        k, s, e = recent[-2]
        idx = len(recent) - 2
    else:
        idx = len(recent) - 1
    if k == "word" and text[s:e].upper() == "GRAPH":
        return s
    if idx >= 1:
        pk, ps, pe = recent[idx - 1]
        if pk == "word" and text[ps:pe].upper() == "GRAPH":
            return ps
    return s


def _graph_block(toks: _Tokens, text: str, after_brace: int) -> tuple[int, tuple | None]:
    """Consume a graph block after its '{'; returns its end offset and a token to resume with (when the block
    was cut short by a '{' that starts the next block)."""
    depth = 0
    recent: list[tuple[str, int, int]] = []
    while True:
        tok = toks.next()
        if tok is None:
            return len(text), None
        k, s, e = tok
        if k == "open":
            depth += 1
        elif k == "close":
            depth = max(0, depth - 1)
        elif k == "rbrace" or k == "ustr":  # an unterminated string: resume on the next line
            return e, None
        elif k == "dot" and depth == 0:
            recent = []
            continue
        elif k == "lbrace":
            # graphs do not nest: the block was not closed, and this '{' opens the next one
            label_start = _label_start(text, recent, s)
            toks.pos = label_start
            return label_start, toks.next()
        if depth == 0:
            recent.append(tok)
            if len(recent) > 4:
                del recent[0]


def _set_lines(text: str, stmts: list[Statement]) -> None:
    line, pos = 1, 0
    last_nl = -1
    for st in stmts:
        chunk_nl = text.count("\n", pos, st.start)
        if chunk_nl:
            line += chunk_nl
            last_nl = text.rfind("\n", pos, st.start)
        pos = st.start
        st.line = line
        st.column = st.start - last_nl - 1


def _resolve_label(label: str, prefix: str, base_iri: str | None, enc: TermEncoder) -> str | None:
    """The encoded graph name a block label denotes (None when it does not parse)."""
    try:
        quads = list(ox.parse(prefix + "\n" + label + " <urn:x:p> <urn:x:o> .", ox.RdfFormat.TURTLE,
                              base_iri=base_iri))
    except SyntaxError:
        return None
    if len(quads) != 1 or quads[0].subject.__class__ is _TRIPLE:
        return None
    if label.strip() in ("[]", "[ ]"):
        return None
    return enc.term(quads[0].subject)


def _split_parse(text: str, prefix: str, first: Statement, last: Statement, ox_fmt,
                 base_iri: str | None):
    """Parse statements first..last (consecutive, no directive among them) as one document. Returns the raw
    quads, or raises SyntaxError with the line/column mapped to the file."""
    pad = " " * first.column
    doc = prefix + "\n" + pad + text[first.start:last.end]
    try:
        return list(ox.parse(doc, ox_fmt, base_iri=base_iri))
    except SyntaxError as exc:
        line, col = syntax_location(exc)
        exc.file_line = first.line + line - 2 if line is not None and line >= 2 else first.line
        exc.file_column = col if line is not None and line >= 2 else None
        raise


def parse_document(data: bytes, *, fmt: str, base_iri: str | None, token: str, default_graph: str,
                   triple_graph: str | None = None, strict: bool = True, stream: bool = False,
                   batch: int = 20000) -> Iterator[Sink]:
    """Parse a whole Turtle/TriG/RDF-XML document (bytes), yielding :class:`Sink` batches (the same object,
    cleared after each yield: consume it before asking for the next).

    ``strict`` (and not ``stream``): one pyoxigraph pass; the first syntax error becomes a problem and parsing
    stops. Otherwise (Turtle/TriG) the document is cut with :func:`split_statements` and parsed in chunks of
    statements; a chunk that fails is parsed statement by statement, so each malformed statement (or graph block)
    is one problem and is skipped, the rest loads. RDF/XML cannot be cut: the quads before its first error load.
    ``stream``: every statement is parsed on its own and its quads carry its line and ordinal (stream elements
    need them); a problem in a graph block names the element (its encoded graph name); with ``strict`` parsing
    stops at the first problem. ``triple_graph``: the encoded graph of the triples of a triple format (None:
    ``default_graph``). RDF-star documents (see :func:`might_be_star`) are held in memory until the end, where
    their reifiers are undone over the whole document.
    """
    ox_fmt = getattr(ox.RdfFormat, OX_FORMATS[fmt])
    star = might_be_star(data)
    graph_override = triple_graph if fmt not in QUAD_FORMATS else None
    sink = Sink()
    enc = TermEncoder(token)

    if fmt == "rdfxml" or (strict and not stream):
        raw: list = []
        try:
            for quad in ox.parse(data, ox_fmt, base_iri=base_iri):
                if star:
                    raw.append(quad)
                    continue
                sink.add_quads((quad,), enc, default_graph, 0, 0, 0, graph_override)
                if len(sink) >= batch:
                    yield sink
                    sink.clear()
        except SyntaxError as exc:
            line, col = syntax_location(exc)
            message = syntax_message(exc)
            bad = first_invalid_utf8(data) if fmt != "rdfxml" and message.startswith("Invalid UTF-8") else None
            if bad is not None:  # as the other paths report it
                line, col, message = bad
            elif fmt != "rdfxml":
                message, line, col = document_problem(exc, data)
            sink.problems.append(ParseProblem(message, 0, None if line is None else line - 1, 0, col))
        if raw:
            enc.reifiers = reifier_map(raw)
            sink.add_quads(raw, enc, default_graph, 0, 0, 0, graph_override)
        yield sink
        return

    text, invalid = decode_marking(data)
    del data
    stmts = split_statements(text)
    prefix = ""
    held: list[tuple[list, int, int]] = []  # RDF-star: (raw quads, line, ordinal), encoded at the end
    # invalid UTF-8: the first invalid sequence of each statement holding one (skipped as malformed, reported where
    # the sequence is); those outside every statement (in a comment between two) are reported, nothing skipped
    invalid_in: dict[int, tuple[int, int, str]] = {}  # statement index -> (0-based line, column, message)
    if invalid:
        starts = [st.start for st in stmts]
        for offset, line, column, message in invalid:
            k = bisect.bisect_right(starts, offset) - 1
            if k >= 0 and offset < stmts[k].end:
                invalid_in.setdefault(k, (line, column, message))
            else:
                sink.problems.append(ParseProblem(message, 0, line, max(k, 0), column))

    def invalid_problem(k: int) -> None:
        st = stmts[k]
        line, column, message = invalid_in[k]
        element = None
        if stream and st.kind == "graph" and st.label is not None and "\ufffd" not in st.label:
            element = _resolve_label(st.label, prefix, base_iri, enc)
        sink.problems.append(ParseProblem(message, 0, line, k, column, element))

    def problem(exc: SyntaxError, st: Statement, ordinal: int) -> None:
        element = None
        if stream and st.kind == "graph" and st.label is not None:
            element = _resolve_label(st.label, prefix, base_iri, enc)
        line = getattr(exc, "file_line", st.line)
        column = getattr(exc, "file_column", None)
        message = syntax_message(exc)
        end_line = st.line + text.count("\n", st.start, st.end)
        end_col = st.end - text.rfind("\n", 0, st.end)
        if column is not None:
            start = line_start(text, line, (st.line, st.start - st.column))
            said, at = unterminated_string(message, text, start + column - 1)
            if said != message:
                sink.problems.append(ParseProblem(said, 0, line - 1, ordinal, at - start + 1, element))
                return
        if message.startswith("Unexpected end") and (line, column or 0) >= (end_line, end_col):
            # the piece ran out: point at where it starts
            what, closer = ("graph block", "'}'") if st.kind == "graph" else ("statement", "'.'")
            message = f"this {what} is not terminated (a {closer} is missing?)"
            line, column = st.line, st.column + 1
        sink.problems.append(ParseProblem(message, 0, line - 1, ordinal, column, element))

    i = 0
    n = len(stmts)
    while i < n:
        st = stmts[i]
        if i in invalid_in:
            invalid_problem(i)
            i += 1
        elif st.kind == "directive":
            try:
                _split_parse(text, prefix, st, st, ox_fmt, base_iri)
                prefix = (prefix + " " + st.text) if prefix else st.text
            except SyntaxError as exc:
                problem(exc, st, i)
            i += 1
        else:
            j = i
            if not stream:
                size = 0
                while (j + 1 < n and stmts[j + 1].kind != "directive" and j + 1 not in invalid_in and j - i < 2000
                       and size < 1 << 20):
                    j += 1
                    size += stmts[j].end - stmts[j].start
            done = False
            if j > i:
                try:
                    quads = _split_parse(text, prefix, st, stmts[j], ox_fmt, base_iri)
                    if star:
                        held.append((quads, st.line, i))
                    else:
                        sink.add_quads(quads, enc, default_graph, 0, st.line - 1, i, graph_override)
                    done = True
                except SyntaxError:
                    pass
            if not done:
                for k in range(i, j + 1):
                    try:
                        quads = _split_parse(text, prefix, stmts[k], stmts[k], ox_fmt, base_iri)
                    except SyntaxError as exc:
                        problem(exc, stmts[k], k)
                        continue
                    if star:
                        held.append((quads, stmts[k].line, k))
                    else:
                        sink.add_quads(quads, enc, default_graph, 0, stmts[k].line - 1, k, graph_override)
            i = j + 1
        if strict and sink.problems:
            break
        if len(sink) >= batch or len(sink.problems) >= 1000:
            yield sink
            sink.clear()
    if held:
        enc.reifiers = reifier_map(q for quads, _, _ in held for q in quads)
        for quads, line, ordinal in held:
            sink.add_quads(quads, enc, default_graph, 0, line - 1, ordinal, graph_override)
            if len(sink) >= batch:
                yield sink
                sink.clear()
    yield sink


def iter_quoted(encoded: str) -> Iterator[tuple[str, str, str, str]]:
    """``(t, s, p, o)`` for an encoded quoted triple and every quoted triple nested in it."""
    stack = [decode(encoded)]
    while stack:
        term = stack.pop()
        if isinstance(term, QuotedTriple):
            yield encode(term), encode(term.subject), encode(term.predicate), encode(term.object)
            stack.append(term.subject)
            stack.append(term.object)
