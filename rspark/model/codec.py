"""The term encoding: how an RDF term is one string in a Spark column.

Every term is a canonical N-Triples-star string, so that string equality is RDF term equality (joins are plain
equi-joins) and a column can be printed as it is:

========================  =========================================================================================
IRI                       ``<http://ex.org/a>`` (never escaped: an IRI holds no ``>``)
blank node                ``_:label``
literal                   ``"lexical"`` (xsd:string), ``"lexical"@lang`` (tag lower-cased), ``"lexical"^^<dt>``;
                          the lexical form is exactly as written, with only ``\\`` ``"`` LF CR escaped
                          (``\\\\`` ``\\"`` ``\\n`` ``\\r``)
quoted triple (RDF-star)  ``<< s p o >>`` with the three components encoded the same way, one space apart
unbound / error           SQL NULL
========================  =========================================================================================

Because the lexical form is escaped, the last ``"`` of a literal closes it: the text after it (``@en``,
``^^<...>`` or nothing) is the suffix, found with ``substring_index(col, '"', -1)`` and no regular expression.
The Python side (``encode``/``decode``) converts to and from ``rspark.model.terms``; inside Spark plans the
expression module decomposes encoded columns in SQL (``rspark.spark.expr.sql``).
"""

from __future__ import annotations

import functools

from rspark.model.terms import (
    IRI,
    RDF_LANGSTRING,
    XSD_STRING,
    BlankNode,
    Literal,
    QuotedTriple,
    Term,
)

_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}
_UNESC = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def escape_lexical(text: str) -> str:
    """Escape a lexical form for the encoding (backslash, double quote, LF, CR)."""
    if not any(ch in text for ch in '\\"\n\r'):
        return text
    return "".join(_ESC.get(ch, ch) for ch in text)


def unescape_lexical(text: str) -> str:
    """Undo :func:`escape_lexical`."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(_UNESC.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def encode_literal(lexical: str, datatype: str = XSD_STRING, language: str | None = None) -> str:
    body = '"' + escape_lexical(lexical) + '"'
    if language:
        return body + "@" + language.lower()
    if datatype == XSD_STRING:
        return body
    return body + "^^<" + datatype + ">"


def encode(term: Term | None) -> str | None:
    """The encoded string of an rspark term (None stays None)."""
    if term is None:
        return None
    if isinstance(term, IRI):
        return "<" + term.value + ">"
    if isinstance(term, Literal):
        return encode_literal(term.lexical, term.datatype, term.language)
    if isinstance(term, BlankNode):
        return "_:" + term.id
    if isinstance(term, QuotedTriple):
        return f"<< {encode(term.subject)} {encode(term.predicate)} {encode(term.object)} >>"
    raise TypeError(f"not an RDF term: {term!r}")


def encode_oxigraph(term) -> str:
    """The encoded string of a pyoxigraph term (NamedNode, BlankNode, Literal, Triple)."""
    # delayed: pyoxigraph, for its terms only; rspark.model imports nothing outside the standard library
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        return "<" + term.value + ">"
    if isinstance(term, ox.Literal):
        lang = term.language
        return encode_literal(term.value, term.datatype.value, lang)
    if isinstance(term, ox.BlankNode):
        return "_:" + term.value
    if isinstance(term, ox.Triple):
        return f"<< {encode_oxigraph(term.subject)} {encode_oxigraph(term.predicate)} {encode_oxigraph(term.object)} >>"
    if isinstance(term, ox.DefaultGraph):
        return ""
    raise TypeError(f"not an RDF term: {term!r}")


class _Reader:
    __slots__ = ("text", "pos")

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def term(self) -> Term:
        t, i = self.text, self.pos
        ch = t[i]
        if ch == "<":
            if t.startswith("<< ", i):
                self.pos = i + 3
                s = self.term()
                self.pos += 1
                p = self.term()
                self.pos += 1
                o = self.term()
                if not t.startswith(" >>", self.pos):
                    raise ValueError(f"bad encoded quoted triple at {self.pos}: {t!r}")
                self.pos += 3
                return QuotedTriple(s, p, o)
            end = t.index(">", i)
            self.pos = end + 1
            return IRI(t[i + 1:end])
        if ch == "_":
            end = i + 2
            while end < len(t) and t[end] != " ":
                end += 1
            self.pos = end
            return BlankNode(t[i + 2:end])
        if ch == '"':
            j = i + 1
            while t[j] != '"':
                j += 2 if t[j] == "\\" else 1
            lexical = unescape_lexical(t[i + 1:j])
            j += 1
            if t.startswith("@", j):
                end = j + 1
                while end < len(t) and t[end] != " ":
                    end += 1
                self.pos = end
                return Literal(lexical, RDF_LANGSTRING, t[j + 1:end])
            if t.startswith("^^<", j):
                end = t.index(">", j)
                self.pos = end + 1
                return Literal(lexical, t[j + 3:end])
            self.pos = j
            return Literal(lexical)
        raise ValueError(f"not an encoded term: {t!r}")


def decode(text: str | None) -> Term | None:
    """The rspark term of an encoded string (None stays None). Terms are immutable, so the terms of recent
    strings are shared (answers repeat the same sensors, places and types many times)."""
    if text is None:
        return None
    return _decode(text)


def decode_distinct(texts: list[str]) -> list[Term]:
    """The terms of distinct encoded strings (an answer column's dictionary), not through :func:`decode`'s cache
    of recent strings: each is decoded once here anyway, and an answer column of distinct values (observation
    IRIs) would only fill the cache and evict what it holds (332,000 distinct IRIs: 0.53 s through it, 0.31 s
    without)."""
    return [_parse(text) for text in texts]


@functools.lru_cache(maxsize=1 << 16)
def _decode(text: str) -> Term:
    return _parse(text)


def _parse(text: str) -> Term:
    if text[0] == "<" and text[1] != "<" and text.find(">") == len(text) - 1:
        return IRI(text[1:-1])
    if text[0] == '"' and "\\" not in text:
        # a literal without escapes (most are): its lexical form ends at the next quote
        j = text.find('"', 1)
        if j > 0:
            rest = text[j + 1:]
            if not rest:
                return Literal(text[1:j])
            if rest.startswith("^^<") and rest.find(">") == len(rest) - 1:
                return Literal(text[1:j], rest[3:-1])
            if rest[0] == "@" and " " not in rest:
                return Literal(text[1:j], RDF_LANGSTRING, rest[1:])
    reader = _Reader(text)
    term = reader.term()
    if reader.pos != len(text):
        raise ValueError(f"trailing text in encoded term: {text!r}")
    return term
