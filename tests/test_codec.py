"""The term encoding's decoder (rspark.model.codec): every term survives encode -> decode, and the fast path of a
literal without escapes gives what the general reader gives, on any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rspark.model.codec import _parse, _Reader, decode, encode
from rspark.model.terms import IRI, RDF_LANGSTRING, XSD, BlankNode, Literal, QuotedTriple

_TEXT = st.text(alphabet=st.sampled_from('ab "\\\n\r@^<>:é'), max_size=12)
_IRIS = st.builds(IRI, st.text(alphabet=st.sampled_from("abc:/#.é"), min_size=1, max_size=12))
_LITERALS = st.one_of(
    st.builds(Literal, _TEXT),
    st.builds(Literal, _TEXT, st.sampled_from([XSD + "integer", XSD + "dateTime", "http://ex.org/dt"])),
    st.builds(lambda lex, tag: Literal(lex, RDF_LANGSTRING, tag), _TEXT, st.sampled_from(["en", "en-gb", "de"])),
)
_SIMPLE = st.one_of(_IRIS, _LITERALS, st.builds(BlankNode, st.sampled_from(["b0", "x1", "node"])))
_TERMS = st.recursive(_SIMPLE, lambda inner: st.builds(QuotedTriple, inner, _IRIS, inner), max_leaves=4)


@given(_TERMS)
def test_every_term_survives_encode_then_decode(term):
    assert decode(encode(term)) == term


def _read(text: str):
    """The general reader's outcome: the term, or the kind of error."""
    try:
        reader = _Reader(text)
        term = reader.term()
    except (ValueError, IndexError) as e:
        return type(e)
    return term if reader.pos == len(text) else ValueError


# texts made of the encoding's own pieces, so that near misses (two closing quotes, a datatype IRI followed by more,
# a tag with a space) come up often
_PIECES = st.sampled_from(['a', 'b', ' ', '"', '\\', '\\"', '@', 'en', '^^<', 'http://x', '>', '<'])
_SUFFIXES = st.lists(st.sampled_from(['@', 'en', ' ', '^^<', 'http://x', '>', '"', 'a']), max_size=5).map("".join)


@settings(max_examples=500)
@given(st.one_of(st.lists(_PIECES, max_size=8).map(lambda pieces: '"' + "".join(pieces)),
                 st.tuples(st.lists(_PIECES, max_size=3), _SUFFIXES).map(lambda p: '"' + "".join(p[0]) + '"' + p[1])))
def test_a_literal_decodes_as_the_general_reader_reads_it(text):
    try:
        fast = _parse(text)
    except (ValueError, IndexError) as e:
        fast = type(e)
    assert fast == _read(text)


def test_literals_without_escapes_decode_to_their_parts():
    dt = XSD + "dateTime"
    assert decode(f'"2026-11-30T00:00:01Z"^^<{dt}>') == Literal("2026-11-30T00:00:01Z", dt)
    assert decode('"chat"@fr') == Literal("chat", RDF_LANGSTRING, "fr")
    assert decode('""') == Literal("")
    assert decode('"a\\"b"') == Literal('a"b')
