"""Text -> syntax tree. ``parse_query(text)`` returns a ``rspark.syntax.ast.Query`` or raises ``QuerySyntaxError``.

One module (about 1,300 lines): one transformer class whose methods follow the grammar's rules one by one, and the
checks (depth, positions) that run with it.

The grammar (``rspql.lark``) is parsed with Lark's LALR(1) parser and contextual lexer; the tree is built by a
transformer that runs during parsing (no intermediate parse tree), which keeps parsing to about a millisecond for a
typical query.

Every error names the line and column in the text as written (``\\u`` escapes are decoded before lexing, but the
positions count the escapes as written). Limits that keep the later stages (translation, printing, Spark
compilation, which walk the tree recursively) safe:

* the syntax tree is at most ``MAX_DEPTH`` (128) nodes deep: nested groups, sub-queries, EXISTS, expressions,
  quoted triples, and the nesting that needs no brackets (long chains of ``+ - * /``, of ``SEQ`` or of ``FIRST``
  / ``LAST``). Checked after parsing, before any recursive walk; the error points at the node that goes past the
  limit (or the closest node above it with a position: a quoted triple or an expression has none of its own). A
  chain of more than 8 operands of ``||`` or ``&&`` is built as a balanced tree (both are associative, also with
  errors: SPARQL's logical-or and logical-and are those of a three-valued logic), so that thousands of them in a
  row nest only a few levels deep;
* brackets (``{ } ( ) [ ] << >> {| |}``) nest at most ``MAX_NESTING`` (256) levels, checked while lexing (the
  error points at the bracket that opens one level more). Twice the depth limit, as ``unparse`` may write two
  brackets per node (``(?x IN (...))``): what it prints of a tree within the limits parses again;
* the algebra is at most ``rspark.syntax.translate.MAX_ALGEBRA_DEPTH`` (200) levels deep (a group's elements
  nest one inside the other there), checked by the translation;
* ``LIMIT`` and ``OFFSET`` take any integer; one above 2^63-1 is read as 2^63-1, which no solution sequence
  reaches (so the query means the same);
* a count window holds at most 2^63-1 items; durations and time instants are finite numbers of at most 10^18
  (milliseconds, or stream time units) with at most 60 decimal places (``rspark.model.time``).
"""

from __future__ import annotations

import dataclasses
import re
import sys
import threading
from bisect import bisect_left
from copy import copy
from dataclasses import replace
from decimal import Decimal
from importlib.resources import files

import lark
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from rspark.algebra.ops import QueryForm, RegisterKind, SelectModifier
from rspark.cache import cache_dir
from rspark.errors import RsparkError, printable
from rspark.model.iri import resolve_iri
from rspark.model.terms import (
    IRI,
    RDF_FIRST,
    RDF_NIL,
    RDF_REST,
    RDF_TYPE,
    XSD_BOOLEAN,
    XSD_DATETIME,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    BlankNode,
    Literal,
    QuotedTriple,
    Variable,
)
from rspark.model.time import Duration, DurationError, parse_duration, time_number
from rspark.model.timestamps import DateTimeError, datetime_millis, is_datetime_shaped
from rspark.rsp.policies import R2S, CountUnit, MatchConsumption, ReportPolicy, SeqSelection
from rspark.syntax import ast, lexing
from rspark.syntax.unparse import REPORT_WORDS

MAX_NESTING = 256  # brackets inside brackets
MAX_DEPTH = 128  # nodes of the syntax tree inside one another
MAX_INTEGER = 2**63 - 1  # LIMIT / OFFSET saturate here; the largest count window
_BALANCED_OVER = 8  # a chain of || or && with more operands is built as a balanced tree


# the policy names SEQ[...] and MATCH CONSUME take, as written (upper case); CONSUME NONE: no consumption
SELECTION_POLICIES = frozenset(p.value for p in SeqSelection)
CONSUMPTION_POLICIES = frozenset(p.value for p in MatchConsumption)


class QuerySyntaxError(RsparkError, ValueError):
    """A query that cannot be read: names the source, line, column, the offending token and what was expected (the
    text :func:`~rspark.errors.printable`, as it quotes the query)."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 token: str | None = None, expected: list[str] | None = None, source: str | None = None):
        self.message = message
        self.line = line
        self.column = column
        self.token = token
        self.expected = expected or []
        self.source = source
        super().__init__(str(self))

    def with_source(self, source: str) -> QuerySyntaxError:
        return type(self)(self.message, line=self.line, column=self.column, token=self.token,
                                expected=self.expected, source=source)

    def __str__(self) -> str:
        where = self.source or "<query>"
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        text = f"{where}: {self.message}"
        if self.expected:
            text += "; expected " + ", ".join(self.expected)
        return printable(text)


# Readable names for the grammar's terminals, used in "expected ..." lists.
_TERMINAL_NAMES = {
    "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "DOT": "'.'",
    "COMMA": "','", "SEMICOLON": "';'", "VAR1": "a variable", "VAR2": "a variable", "IRIREF": "an IRI",
    "PNAME_LN": "a prefixed name", "PNAME_NS": "a prefixed name", "STRING_LITERAL1": "a string",
    "STRING_LITERAL2": "a string", "STRING_LITERAL_LONG1": "a string", "STRING_LITERAL_LONG2": "a string",
    "INTEGER": "a number", "DECIMAL": "a number", "DOUBLE": "a number", "ISO_DURATION": "a duration (PT10M)",
    "SHORT_DURATION": "a duration (10s)", "NAME": "a name", "POLICY_NAME": "a policy name",
    "QT_OPEN": "'<<'", "QT_CLOSE": "'>>'", "$END": "end of query", "DATETIME": "a date-time",
    "BLANK_NODE_LABEL": "a blank node", "ANON": "'[]'", "NIL": "'()'", "A": "'a'", "BANG": "'!'",
    "CIRCUMFLEX": "'^'", "PLUS": "'+'", "MINUS_SIGN": "'-'", "EQ": "'='", "NE": "'!='", "LT": "'<'", "GT": "'>'",
    "LE": "'<='", "GE": "'>='", "STAR": "'*'", "SLASH": "'/'", "QMARK": "'?'", "AGG1": "an aggregate",
    "BUILTIN0": "a function", "BUILTIN1": "a function", "BUILTIN2": "a function", "BUILTIN23": "a function",
    "BUILTIN3": "a function", "BUILTIN34": "a function", "VARARG": "a function", "TIMESTAMP_FN": "a function",
    "BOUND": "a function", "BNODE_KW": "a function", "COUNT": "an aggregate", "GROUP_CONCAT": "an aggregate",
    "TRUE": "true", "FALSE": "false", "LANGTAG": "a language tag", "COUNT_UNIT": "TRIPLES/ELEMENTS/BGP",
    "TIME_UNIT": "a time unit", "VBAR": "'|'", "COLON": "':'", "ANNOT_OPEN": "'{|'", "ANNOT_CLOSE": "'|}'",
}


# The keywords that only continuous queries use (registration, R2S, streams, windows, events): a SPARQL 1.1 query
# (``rspark sparql``, ``Engine.sparql``), which may not be continuous, is never told to write one of them.
CONTINUOUS_KEYWORDS = frozenset({"_REGISTER", "RSTREAM", "ISTREAM", "DSTREAM", "STREAM", "WINDOW", "_WIN", "_EVENT",
                                 "_MATCH"})


def _readable(names) -> list[str]:
    out = []
    for name in sorted(names):
        if name in ("INTEGER_POSITIVE", "INTEGER_NEGATIVE", "DECIMAL_POSITIVE", "DECIMAL_NEGATIVE",
                    "DOUBLE_POSITIVE", "DOUBLE_NEGATIVE"):
            continue
        if name.startswith("__ANON"):  # a string the grammar writes in a rule: '&&', '||', '^^'
            literal = _LITERALS.get(name)
            if literal is None:
                continue
            label = f"'{literal}'"
        else:
            label = _TERMINAL_NAMES.get(name, name.lstrip("_").replace("_KW", ""))
        if label not in out:
            out.append(label)
    return out[:24] + (["..."] if len(out) > 24 else [])




def _shown(text: str, limit: int = 40) -> str:
    """A token as an error message quotes it: a very long one (a 5,000-digit number) is cut."""
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


_STRING_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_STRING_ESCAPE_RE = re.compile(r"\\(.)")
_CODEPOINT_RE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_PN_LOCAL_ESCAPE_RE = re.compile(r"\\([_~.\-!$&'()*+,;=/?#@%])")
_SURROGATES = range(0xD800, 0xE000)


class _Positions:
    """Where an offset of the decoded text (what the lexer reads) is in the text as written: each ``\\uXXXX``
    (``\\UXXXXXXXX``) escape became one character, so the offsets after it moved by 5 (9), and an escaped line
    break (``\\u000A``) is no line break of the text as written."""

    def __init__(self, original: str, starts: list[int], shifts: list[int]) -> None:
        self.starts = starts  # decoded offset of each decoded escape
        self.shifts = shifts  # shifts[k]: how far the escapes before the k-th moved the text (shifts[0] == 0)
        self.newlines = [m.start() for m in re.finditer("\n", original)]

    def line_column(self, decoded_offset: int) -> tuple[int, int]:
        offset = decoded_offset + self.shifts[bisect_left(self.starts, decoded_offset)]
        line = bisect_left(self.newlines, offset)  # line breaks before the offset
        return line + 1, offset - (self.newlines[line - 1] if line else -1)


def _decode(text: str) -> tuple[str, _Positions | None]:
    """The text with its code point escapes decoded, and how to find positions of the decoded text in ``text``
    (None: no escape, the positions are the same)."""
    if "\\u" not in text and "\\U" not in text:
        return text, None
    pieces: list[str] = []
    starts: list[int] = []
    shifts = [0]
    last = decoded_length = 0
    for match in _CODEPOINT_RE.finditer(text):
        code = int(match.group(1) or match.group(2), 16)
        if code in _SURROGATES or code > 0x10FFFF:
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - text.rfind("\n", 0, match.start())
            raise QuerySyntaxError(f"invalid code point escape {match.group(0)}", line=line, column=column,
                                   token=match.group(0))
        pieces.append(text[last:match.start()])
        decoded_length += match.start() - last
        starts.append(decoded_length)
        shifts.append(shifts[-1] + len(match.group(0)) - 1)
        pieces.append(chr(code))
        decoded_length += 1
        last = match.end()
    if not starts:
        return text, None
    pieces.append(text[last:])
    return "".join(pieces), _Positions(text, starts, shifts)


def decode_codepoints(text: str) -> str:
    """SPARQL 1.1 section 19.2: ``\\uXXXX`` / ``\\UXXXXXXXX`` escapes are replaced before parsing."""
    return _decode(text)[0]


def _unescape_string(body: str) -> str:
    return _STRING_ESCAPE_RE.sub(lambda m: _STRING_ESCAPES.get(m.group(1), m.group(0)), body)


_NUMERIC_TYPES = {
    "INTEGER": XSD_INTEGER, "DECIMAL": XSD_DECIMAL, "DOUBLE": XSD_DOUBLE,
    "INTEGER_POSITIVE": XSD_INTEGER, "DECIMAL_POSITIVE": XSD_DECIMAL, "DOUBLE_POSITIVE": XSD_DOUBLE,
    "INTEGER_NEGATIVE": XSD_INTEGER, "DECIMAL_NEGATIVE": XSD_DECIMAL, "DOUBLE_NEGATIVE": XSD_DOUBLE,
}
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class _Node:
    """A collection or ``[ ... ]`` node while triples are being built: its term and the triples that describe it."""

    __slots__ = ("term", "triples")

    def __init__(self, term, triples):
        self.term = term
        self.triples = triples


class _Object:
    __slots__ = ("node", "annotation")

    def __init__(self, node, annotation):
        self.node = node
        self.annotation = annotation


class _At:
    """A value built from the text with the line and column where it starts (a duration, an instant, the property
    list of an annotation, a VALUES row), until the rule that uses it takes it apart."""

    __slots__ = ("value", "line", "column")

    def __init__(self, value, line: int, column: int) -> None:
        self.value, self.line, self.column = value, line, column


class _Reversed(list):
    """The triples of a ``triples_block`` / ``triples_template`` in reverse order. The grammar makes both rules
    right-recursive (the block's last triples are reduced first): each level appends its triples to the list of
    the level inside it, in reverse, and the rule that uses the block turns it around once (prepending at each
    level copied the rest of the block: quadratic time in the number of triples)."""


def _forward(triples) -> list:
    return triples[::-1] if isinstance(triples, _Reversed) else list(triples)


def _term_and_triples(node):
    if isinstance(node, _Node):
        return node.term, node.triples
    return node, []


def build_chain(op: str, operands) -> object:
    """``a op b op c ...`` as calls of the binary ``op``: left-deep (as written) up to 8 operands, a balanced tree
    (pairs, then pairs of pairs, keeping the order) above, for the associative ``||`` and ``&&``."""
    operands = list(operands)
    if len(operands) <= _BALANCED_OVER:
        result = operands[0]
        for operand in operands[1:]:
            result = ast.Call(op, (result, operand))
        return result
    while len(operands) > 1:
        paired = [ast.Call(op, (operands[i], operands[i + 1])) for i in range(0, len(operands) - 1, 2)]
        if len(operands) % 2:
            paired.append(operands[-1])
        operands = paired
    return operands[0]


def _integer(token) -> int | None:
    """The value of an INTEGER token, None above ``MAX_INTEGER`` (without converting a huge digit string: Python
    refuses ints of more than 4,300 digits from text)."""
    digits = str(token).lstrip("0") or "0"
    if len(digits) > len(str(MAX_INTEGER)):
        return None
    value = int(digits)
    return value if value <= MAX_INTEGER else None


class _Builder(Transformer):
    """Builds the syntax tree while the LALR parser reduces. State (prefixes, base, blank node counter, positions)
    is reset per query by ``reset``.

    Positions: rules written with ``!`` in the grammar keep their keyword and bracket tokens, whose line and column
    the nodes take. A rule that starts with a variable takes the variable's: the parser reduces ``var`` right
    before the rule (the LALR parser reduces bottom-up, without reading a token between the two), so the last
    variable token read is the rule's first token."""

    def __init__(self):
        super().__init__(visit_tokens=False)
        self.reset(None)

    def reset(self, base: str | None, positions: _Positions | None = None) -> None:
        self.base = base
        self.initial_base = base
        self.prefixes: dict[str, str] = {}
        self.prefix_order: list[tuple[str, str]] = []
        self.bnode_counter = 0
        self.positions = positions
        self.depth = 0  # brackets open (the lexer's callbacks count them)
        self.last_var: Token | None = None
        self.last_call: Token | None = None
        self.bnode_positions: list[tuple[str, int, int]] = []

    def fresh_bnode(self) -> BlankNode:
        self.bnode_counter += 1
        return BlankNode(f"_b{self.bnode_counter}")

    # ---------------------------------------------------------------------------------------------- positions
    def at(self, token) -> tuple[int, int]:
        """The (line, column) of a token in the text as written."""
        if self.positions is None or getattr(token, "start_pos", None) is None:
            return getattr(token, "line", None) or 0, getattr(token, "column", None) or 0
        return self.positions.line_column(token.start_pos)

    def place(self, token) -> dict[str, int]:
        """The position of a token as the ``line`` and ``column`` keywords of a syntax tree node."""
        line, column = self.at(token)
        return {"line": line, "column": column}

    def error_at(self, token, message: str) -> QuerySyntaxError:
        line, column = self.at(token)
        return QuerySyntaxError(message, line=line or None, column=column or None, token=_shown(token, 200))

    @staticmethod
    def error_in(at: _At, message: str) -> QuerySyntaxError:
        return QuerySyntaxError(message, line=at.line or None, column=at.column or None)

    def open_bracket(self, token: Token) -> Token:
        """Lexer callback of every opening bracket: refuses the one that nests more than ``MAX_NESTING`` deep."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error_at(token, f"nesting too deep: this '{token}' opens level {self.depth} of nested "
                                       f"brackets (groups, sub-queries, parentheses, [ ], << >>); at most "
                                       f"{MAX_NESTING} levels of brackets are allowed (and at most {MAX_DEPTH} "
                                       "levels of nested patterns and expressions)")
        return token

    def close_bracket(self, token: Token) -> Token:
        if self.depth:
            self.depth -= 1
        return token

    # ------------------------------------------------------------------------------------------------ prologue
    def prologue(self, children):
        return None

    def base_decl(self, children):
        self.base = resolve_iri(children[0][1:-1], self.base)

    def prefix_decl(self, children):
        prefix = str(children[0])[:-1]
        namespace = resolve_iri(children[1][1:-1], self.base)
        self.prefixes[prefix] = namespace
        self.prefix_order.append((prefix, namespace))

    # -------------------------------------------------------------------------------------------------- terms
    def iri(self, children):
        token = children[0]
        if token.type == "IRIREF":
            return IRI(resolve_iri(token[1:-1], self.base))
        prefix, _, local = str(token).partition(":")
        if prefix not in self.prefixes:
            raise self.error_at(token, f"unknown prefix '{prefix}:' in {_shown(token)} (declare it with PREFIX "
                                       f"{prefix}: <...>)")
        return IRI(self.prefixes[prefix] + _PN_LOCAL_ESCAPE_RE.sub(r"\1", local))

    def var(self, children):
        self.last_var = children[0]
        return Variable(str(children[0])[1:])

    def string(self, children):
        """The string's value, as a token (a str) that keeps the string's position."""
        token = children[0]
        body = token[3:-3] if token.type.startswith("STRING_LITERAL_LONG") else token[1:-1]
        return Token.new_borrow_pos(token.type, _unescape_string(body), token)

    def rdf_literal(self, children):
        lexical = str(children[0])
        if len(children) == 1:
            return Literal(lexical)
        extra = children[1]
        if isinstance(extra, IRI):
            return Literal(lexical, extra.value)
        return Literal(lexical, language=str(extra)[1:])

    def numeric_literal(self, children):
        token = children[0]
        return Literal(str(token), _NUMERIC_TYPES[token.type])

    def boolean_literal(self, children):
        return Literal(str(children[0]).lower(), XSD_BOOLEAN)

    def blank_node(self, children):
        token = children[0]
        if token.type == "ANON":
            return self.fresh_bnode()
        label = str(token)[2:]
        line, column = self.at(token)
        self.bnode_positions.append((label, line, column))
        return BlankNode(label)

    def graph_term(self, children):  # only reached for NIL (other alternatives are inlined)
        return IRI(RDF_NIL)

    def __default_token__(self, token):
        return token

    # -------------------------------------------------------------------------------------------- RDF-star
    def quoted_tp(self, children):
        s, p, o = children[1], children[2], children[3]
        return QuotedTriple(s, self._verb(p), o)

    def quoted_triple_data(self, children):
        s, p, o = children[1], children[2], children[3]
        return QuotedTriple(s, self._verb(p), o)

    def expr_quoted_tp(self, children):
        s, p, o = children[1], children[2], children[3]
        return ast.Call("TRIPLE", (s, self._verb(p), o))

    @staticmethod
    def _verb(verb):
        if isinstance(verb, Token):
            if verb.type == "A":
                return IRI(RDF_TYPE)
            if verb.type == "NIL":
                return IRI(RDF_NIL)
        return verb

    # --------------------------------------------------------------------------------------------- triples
    def collection(self, children):
        return self._collection(children)

    collection_path = collection

    def _collection(self, items):
        head = None
        triples = []
        nodes = [self.fresh_bnode() for _ in items]
        for i, item in enumerate(items):
            term, inner = _term_and_triples(self._fix_nil(item))
            triples.append(ast.TriplePattern(nodes[i], IRI(RDF_FIRST), term))
            triples.extend(inner)
            rest = nodes[i + 1] if i + 1 < len(items) else IRI(RDF_NIL)
            triples.append(ast.TriplePattern(nodes[i], IRI(RDF_REST), rest))
            head = head or nodes[0]
        return _Node(head, triples)

    @staticmethod
    def _fix_nil(item):
        if isinstance(item, Token) and item.type == "NIL":
            return IRI(RDF_NIL)
        return item

    def blank_node_property_list(self, children):
        node = self.fresh_bnode()
        return _Node(node, self._property_list(node, children[0]))

    blank_node_property_list_path = blank_node_property_list

    def property_list_not_empty(self, children):
        pairs = []
        for i in range(0, len(children), 2):
            pairs.append((self._verb(children[i]), children[i + 1]))
        return pairs

    property_list_path_not_empty = property_list_not_empty

    def verb_path(self, children):
        return self._verb(children[0])

    def verb_simple(self, children):
        return children[0]

    def object_list(self, children):
        return list(children)

    object_list_path = object_list

    def object(self, children):
        return _Object(self._fix_nil(children[0]), children[1] if len(children) > 1 else None)

    object_path = object

    def annotation(self, children):
        line, column = self.at(children[0])
        return _At(children[1], line, column)

    annotation_path = annotation

    def _property_list(self, subject, pairs) -> list:
        triples = []
        for verb, objects in pairs:
            for obj in objects:
                term, inner = _term_and_triples(obj.node)
                triples.append(ast.TriplePattern(subject, verb, term))
                triples.extend(inner)
                if obj.annotation is not None:
                    if not ast.is_simple_predicate(verb):
                        raise self.error_in(obj.annotation, "an annotation {| |} cannot follow a property path; "
                                                            "annotations need a simple predicate")
                    quoted = QuotedTriple(subject, verb, term)
                    triples.extend(self._property_list(quoted, obj.annotation.value))
        return triples

    def triples_same_subject_path(self, children):
        subject, inner = _term_and_triples(self._fix_nil(children[0]))
        triples = list(inner)
        if len(children) > 1:
            triples.extend(self._property_list(subject, children[1]))
        return triples

    triples_same_subject = triples_same_subject_path

    def triples_block(self, children):
        triples = children[1] if len(children) > 1 else _Reversed()
        triples.extend(reversed(children[0]))
        return triples

    triples_template = triples_block

    def construct_template(self, children):
        return tuple(children[0])

    def construct_quads(self, children):
        items = []
        for c in children:
            items.extend(_forward(c))
        return items

    def quads_not_triples(self, children):
        graph = children[0]
        triples = _forward(children[1]) if len(children) > 1 else []
        return [ast.QuadPattern(graph, t.subject, t.predicate, t.object) for t in triples]

    # ------------------------------------------------------------------------------------------------ paths
    def path_alternative(self, children):
        return ast.PathAlt(tuple(self._verb(c) for c in children))

    def path_sequence(self, children):
        return ast.PathSeq(tuple(self._verb(c) for c in children if not (isinstance(c, Token) and c.type == "SLASH")))

    def path_elt(self, children):
        return ast.PathMod(self._verb(children[0]), children[1])

    def path_mod(self, children):
        return str(children[0])

    def path_inverse(self, children):
        return ast.PathInv(self._verb(children[0]))

    def path_primary(self, children):  # "!" path_negated_property_set (others are inlined)
        return children[1]

    def path_negated_property_set(self, children):
        forward, inverse = [], []
        for item in children:
            (inverse if item[0] else forward).append(item[1])
        return ast.PathNegated(tuple(forward), tuple(inverse))

    def path_one_in_property_set(self, children):
        return (False, self._verb(children[0]))

    def path_one_inverse(self, children):
        return (True, self._verb(children[0]))

    # ---------------------------------------------------------------------------------------------- patterns
    def group_graph_pattern(self, children):
        line, column = self.at(children[0])
        inner = children[1]
        if isinstance(inner, ast.SubSelect):
            return ast.GroupPattern((inner,), line=line, column=column)
        return ast.GroupPattern(inner, line=line, column=column)

    def group_graph_pattern_sub(self, children):
        return tuple(ast.TriplesBlock(tuple(c[::-1])) if isinstance(c, _Reversed) else c
                     for c in children if not isinstance(c, Token))

    def optional_graph_pattern(self, children):
        return ast.OptionalPattern(children[1], **self.place(children[0]))

    def minus_graph_pattern(self, children):
        return ast.MinusPattern(children[1], **self.place(children[0]))

    def graph_graph_pattern(self, children):
        return ast.GraphPattern(children[1], children[2], **self.place(children[0]))

    def service_graph_pattern(self, children):
        silent = isinstance(children[1], Token) and children[1].type == "SILENT"
        rest = children[2:] if silent else children[1:]
        return ast.ServicePattern(rest[0], rest[1], silent, **self.place(children[0]))

    def filter(self, children):
        return ast.FilterPattern(children[1], **self.place(children[0]))

    def bind(self, children):
        expr, var = [c for c in children if not isinstance(c, Token)]
        return ast.BindPattern(expr, var, **self.place(children[0]))

    def inline_data(self, children):
        line, column = self.at(children[0])
        return replace(children[1], line=line, column=column)

    def inline_data_one_var(self, children):
        var = children[0]
        rows = tuple((self._data_value(v),) for v in children[1:])
        return ast.ValuesPattern((var,), rows)

    def inline_data_full(self, children):
        if children and isinstance(children[0], Token) and children[0].type == "NIL":
            variables, rows = (), children[1:]
        else:
            variables = tuple(c for c in children if isinstance(c, Variable))
            rows = [c for c in children if isinstance(c, _At)]
        out = []
        for row in rows:
            if len(row.value) != len(variables):
                raise self.error_in(row, f"VALUES row has {len(row.value)} values for {len(variables)} variables "
                                         f"({' '.join(v.n3() for v in variables) or '()'})")
            out.append(row.value)
        return ast.ValuesPattern(variables, tuple(out))

    def data_row(self, children):
        line, column = self.at(children[0])
        values = tuple(self._data_value(v) for v in children
                       if not (isinstance(v, Token) and v.type in ("LPAR", "RPAR", "NIL")))
        return _At(values, line, column)

    @staticmethod
    def _data_value(value):
        if isinstance(value, Token) and value.type == "UNDEF":
            return None
        return value

    def group_or_union_graph_pattern(self, children):
        groups = children[0::2]
        ops = tuple(children[1::2])
        return ast.UnionPattern(tuple(groups), ops, line=groups[0].line, column=groups[0].column)

    def union_op(self, children):
        return str(children[0]).upper()

    def sub_select(self, children):
        clause, where, modifiers, values = children
        line, column = clause["pos"]
        return ast.SubSelect(self._select(clause, (), (), where, modifiers, values), line=line, column=column)

    # RSP patterns
    def window_graph_pattern(self, children):
        keyword, name, group = children
        return ast.WindowPattern(name, group, **self.place(keyword))

    def stream_graph_pattern(self, children):
        return ast.StreamPattern(children[1], children[2], children[3], **self.place(children[0]))

    def match_graph_pattern(self, children):
        values = [c for c in children if not isinstance(c, Token)]
        if len(values) == 2:
            return ast.MatchPattern(values[0], values[1], **self.place(children[0]))
        return ast.MatchPattern(None, values[0], **self.place(children[0]))

    def consume(self, children):
        policy = str(children[0]).upper()
        if policy not in CONSUMPTION_POLICIES:
            raise self.error_at(children[0], f"unknown consumption policy {str(children[0])!r} in MATCH CONSUME: "
                                             "CHRONOLOGICAL, RECENT or NONE")
        return MatchConsumption(policy)

    def event_ref(self, children):
        token = children[0]
        return ast.EventRef(str(token), **self.place(token))

    def event_first(self, children):
        return ast.EventFirst(children[1], **self.place(children[0]))

    def event_last(self, children):
        return ast.EventLast(children[1], **self.place(children[0]))

    def event_seq(self, children):
        if len(children) == 4:
            left, keyword, selection, right = children
        else:
            left, keyword, right = children
            selection = None
        return ast.EventSeq(left, right, selection, **self.place(keyword))

    def selection(self, children):
        policy = str(children[0]).upper()
        if policy not in SELECTION_POLICIES:
            raise self.error_at(children[0], f"unknown selection policy {str(children[0])!r} in SEQ[...]: NAIVE, "
                                             "CHRONOLOGICAL, RECENT or UNRESTRICTED (SEQ alone)")
        return SeqSelection(policy)

    def event_decl(self, children):
        window, group, name = children
        return ast.EventDecl(window, group, str(name), **self.place(name))

    # -------------------------------------------------------------------------------------------- windows
    def window_spec(self, children):
        if len(children) == 2:  # a REPORT clause: its policies, and the period of REPORT EVERY
            policies, every = children[1]
            return replace(children[0], report=policies, report_every=every)
        return children[0]

    def report_clause(self, children):
        """``REPORT`` and the window's report policies (RSP-QL, Sec. 3): they replace the profile's for it."""
        keyword, policies = children[0], children[1:]
        seen = set()
        every = None
        for policy in policies:
            if isinstance(policy, Duration):  # REPORT EVERY d: periodic, every d
                if every is not None or ReportPolicy.PERIODIC in seen:
                    raise self.error_at(keyword, "REPORT names PERIODIC twice (EVERY d is PERIODIC with a period)")
                every, policy = policy, ReportPolicy.PERIODIC
            elif policy is ReportPolicy.PERIODIC and every is not None:
                raise self.error_at(keyword, "REPORT names PERIODIC twice (EVERY d is PERIODIC with a period)")
            if policy in seen:
                raise self.error_at(keyword, f"REPORT names {REPORT_WORDS[policy]} twice")
            seen.add(policy)
        if seen == {ReportPolicy.NON_EMPTY}:
            raise self.error_at(keyword, "REPORT NON EMPTY only filters the instants another policy reports: add "
                                         "ON WINDOW CLOSE, ON CONTENT CHANGE, PERIODIC or EVERY d")
        return frozenset(seen), every

    def report_window_close(self, children):
        return ReportPolicy.WINDOW_CLOSE

    def report_content_change(self, children):
        return ReportPolicy.CONTENT_CHANGE

    def report_non_empty(self, children):
        return ReportPolicy.NON_EMPTY

    def report_periodic(self, children):
        return ReportPolicy.PERIODIC

    def report_every(self, children):
        return self._positive(children[0], "REPORT EVERY period")

    def duration(self, children):
        """A duration, with its position (``_At``): whether it may be zero depends on the rule using it."""
        text = " ".join(str(c) for c in children)
        try:
            value = parse_duration(text)
        except DurationError as exc:
            raise self.error_at(children[0], str(exc)) from None
        if value.amount < 0:
            raise self.error_at(children[0], f"a duration cannot be negative, got {_shown(text)} (window RANGE, "
                                             "SLIDE and COMPUTED EVERY take positive durations)")
        return _At(value, **self.place(children[0]))

    def _positive(self, duration: _At, what: str) -> Duration:
        if duration.value.amount <= 0:
            raise self.error_in(duration, f"{what} must be positive, got "
                                          f"{_shown(duration.value.text) or duration.value.amount}")
        return duration.value

    def instant(self, children):
        """A time instant with its position (``_At``): a number, an xsd:dateTime, or a literal holding one."""
        first = children[0]
        line, column = self.at(first)
        if first.type == "DATETIME":
            value = self._datetime_instant(str(first), first)
        elif first.type in ("INTEGER", "DECIMAL"):
            value = self._number_instant(str(first), first)
        else:  # a literal: string (LANGTAG | ^^ iri)?
            extra = children[1] if len(children) > 1 else None
            if isinstance(extra, IRI) and extra.value == XSD_DATETIME:
                value = self._datetime_instant(str(first), first)
            else:
                value = self._number_instant(str(first), first)
        return _At(value, line, column)

    def _number_instant(self, text: str, token) -> ast.Instant:
        if not _NUMBER_RE.fullmatch(text):
            raise self.error_at(token, f"not a time instant: {_shown(text)!r} (expected a number or an "
                                       "xsd:dateTime)")
        value, problem = time_number(text)
        if problem is not None:
            raise self.error_at(token, f"time instant {_shown(text)} {problem}")
        return ast.Instant(value, False, text)

    def _datetime_instant(self, text: str, token) -> ast.Instant:
        """An xsd:dateTime instant in epoch milliseconds (no time zone: UTC), read as an element's timestamp is
        (:func:`~rspark.model.timestamps.datetime_millis`), so the same text is the same instant in a query and in
        a stream."""
        if not is_datetime_shaped(text):
            raise self.error_at(token, f"not an xsd:dateTime: {_shown(text)!r} (expected e.g. 2016-03-01T13:00:00Z)")
        try:
            millis = datetime_millis(text)
        except DateTimeError as exc:
            raise self.error_at(token, f"invalid xsd:dateTime {_shown(text)!r}: {exc.reason}") from None
        if text.strip().lstrip("-").startswith("0000-"):  # XSD 1.0, which SPARQL 1.1 follows, has no year zero
            raise self.error_at(token, f"invalid xsd:dateTime {_shown(text)!r}: year 0000 is out of range")
        return ast.Instant(Decimal(millis), True, text)

    def starting(self, children):
        return children[0]

    def time_window(self, children):
        rng = self._positive(children[0], "window RANGE")
        slide = None  # not written: the engine profile's implicit slide (tumbling, or every tick for CQELS)
        start = partition = None
        for child in children[1:]:
            if isinstance(child, Token):  # TUMBLING
                slide = rng
            elif isinstance(child, IRI):  # PARTITION BY
                partition = child.value
            elif isinstance(child.value, Duration):
                slide = self._positive(child, "window SLIDE")
            else:
                start = child.value
        return ast.TimeWindowSpec(rng, slide, start, partition=partition)

    def landmark_window(self, children):
        return ast.LandmarkWindowSpec(children[0].value if children else None)

    def interval_window(self, children):
        """``[FROM t1 TO t2]``. A number and a date-time are comparable: on every timeline both are a number of
        ticks at the same scale (a date-time in epoch milliseconds; see ``rspark.model.time.Timeline``)."""
        start, end = children[0].value, children[1].value
        if start.value > end.value:
            raise self.error_in(children[1], f"interval window [FROM {_shown(start.text)} TO {_shown(end.text)}] "
                                             "ends before it starts")
        return ast.IntervalWindowSpec(start, end)

    def count_window(self, children):
        unit = next(c for c in children if isinstance(c, Token) and c.type == "COUNT_UNIT")
        size = next(c for c in children if isinstance(c, Token) and c.type == "INTEGER")
        value = _integer(size)
        if value is None:
            raise self.error_at(size, f"count window size {_shown(size)} is too large (at most {MAX_INTEGER})")
        if value <= 0:
            raise self.error_at(size, f"count window size must be positive, got {size}")
        partition = next((c for c in children if isinstance(c, IRI)), None)
        if partition is not None and str(unit).upper() != CountUnit.ELEMENTS:
            raise self.error_at(unit, f"PARTITION BY partitions elements: write [RANGE ELEMENTS {value} PARTITION BY "
                                      f"{partition.n3()}]")
        return ast.CountWindowSpec(CountUnit(str(unit).upper()), value,
                                   partition=partition.value if partition is not None else None)

    def partition_clause(self, children):
        return children[0]

    def now_window(self, children):
        return ast.NowWindowSpec()

    def all_window(self, children):
        return ast.LandmarkWindowSpec(None)

    def stream_range(self, children):
        """SPARQLstream ``[1 MINUTES (SLIDE 1 MINUTES)?]``."""
        rng = self._positive(children[0], "window range")
        slide = self._positive(children[1], "window SLIDE") if len(children) > 1 else None
        return ast.TimeWindowSpec(rng, slide)

    def relative_window(self, children):
        """``[NOW-a TO NOW(-b)? (SLIDE c)?]`` / ``[FROM NOW-a TO NOW-b STEP c]``: range a-b, ending b before now."""
        minus = [i for i, c in enumerate(children) if isinstance(c, Token) and c.type == "MINUS_SIGN"]
        start = children[minus[0] + 1].value
        end = children[minus[1] + 1].value if len(minus) > 1 else None
        durations = [c for c in children if isinstance(c, _At)]
        slide = durations[-1] if len(durations) > (2 if end is not None else 1) else None
        width = start.amount - (end.amount if end is not None else 0)
        if start.absolute != (end.absolute if end is not None else start.absolute) or width <= 0:
            raise self.error_at(children[0], f"window [NOW-{_shown(start.text)} TO "
                                             f"NOW-{_shown(end.text) if end else 0}] is empty or mixes time units")
        rng = Duration(width, start.absolute, f"{start.text}-{end.text}" if end is not None else start.text)
        return ast.TimeWindowSpec(rng, self._positive(slide, "window SLIDE") if slide is not None else None, None, end)

    # --------------------------------------------------------------------------------------------- dataset
    def default_graph(self, children):
        return ast.DefaultGraphSource(children[0])

    def named_graph(self, children):
        return ast.NamedGraphSource(children[0])

    def named_window(self, children):
        keyword, name, stream = children[:3]
        return ast.WindowSource(name, stream, children[3] if len(children) > 3 else None,
                                **self.place(keyword))

    def stream_window(self, children):
        return ast.WindowSource(None, children[1], children[2] if len(children) > 2 else None, merged=True,
                                **self.place(children[0]))

    def named_stream(self, children):
        # SPARQLstream FROM NAMED STREAM :s [...]: the window's content is read by the query's default graph (as
        # SPARQLstream reads it), and the stream IRI also names the window (WINDOW :s { ... } reads it alone)
        return ast.WindowSource(children[1], children[1], children[2] if len(children) > 2 else None, merged=True,
                                **self.place(children[0]))

    def seed_window(self, children):
        stream, spec, name = [c for c in children if not isinstance(c, Token)]
        return ast.WindowSource(name, stream, spec, **self.place(children[0]))

    def window_on_stream(self, children):
        keyword, _, stream, spec, name = children
        return ast.WindowSource(name, stream, spec, **self.place(keyword))

    def entailment(self, children):
        return ("entailment", children[-1], *self.at(children[0]))

    # ----------------------------------------------------------------------------------------- expressions
    def or_expr(self, children):
        return build_chain("||", children)

    def and_expr(self, children):
        return build_chain("&&", children)

    def compare_op(self, children):
        return str(children[0])

    add_op = compare_op
    mul_op = compare_op

    def compare(self, children):
        return ast.Call(children[1], (children[0], children[2]))

    def in_expr(self, children):
        return ast.Call("IN", (children[0],) + tuple(children[2]))

    def not_in_expr(self, children):
        return ast.Call("NOT IN", (children[0],) + tuple(children[3]))

    def expression_list(self, children):
        if len(children) == 1 and isinstance(children[0], Token) and children[0].type == "NIL":
            return ()
        return tuple(children)

    def additive_expression(self, children):
        result = children[0]
        for op, operand in children[1:]:
            result = ast.Call(op, (result, operand))
        return result

    def additive_rest(self, children):
        if isinstance(children[0], str) and not isinstance(children[0], Literal) and len(children) == 2 \
                and children[0] in ("+", "-"):
            return children[0], children[1]
        sign, literal = children[0]
        operand = literal
        for i in range(1, len(children), 2):
            operand = ast.Call(children[i], (operand, children[i + 1]))
        return sign, operand

    def signed_numeric(self, children):
        token = children[0]
        return str(token)[0], Literal(str(token)[1:], _NUMERIC_TYPES[token.type])

    def multiplicative_expression(self, children):
        result = children[0]
        for i in range(1, len(children), 2):
            result = ast.Call(children[i], (result, children[i + 1]))
        return result

    def not_expr(self, children):
        return ast.Call("!", (children[1],))

    def uplus(self, children):
        return ast.Call("UPLUS", (children[1],))

    def uminus(self, children):
        return ast.Call("UMINUS", (children[1],))

    def bracketted_expression(self, children):
        return children[0]

    def builtin_call(self, children):
        head = children[0]
        if not isinstance(head, Token):
            return head  # aggregate
        self.last_call = head
        kind = head.type
        name = str(head).upper()
        if kind == "TIMESTAMP_FN":  # () is rdf:nil here, a term of the triple pattern
            return ast.Call("TIMESTAMP", tuple(self._verb(a) for a in children[1:]))
        args = [c for c in children[1:] if not (isinstance(c, Token) and c.type == "NIL")]
        if kind == "EXISTS":
            return ast.Exists(args[0], False)
        if kind == "VARARG":
            return ast.Call(name, tuple(args[0]) if args else ())
        if name == "URI":
            name = "IRI"
        elif name == "ISURI":
            name = "ISIRI"
        return ast.Call(name, tuple(args))

    def not_exists(self, children):
        self.last_call = children[0]
        return ast.Exists(children[2], True)

    def aggregate(self, children):
        self.last_call = children[0]
        name = str(children[0]).upper()
        rest = list(children[1:])
        distinct = bool(rest) and isinstance(rest[0], Token) and rest[0].type == "DISTINCT"
        if distinct:
            rest = rest[1:]
        arg = rest[0] if rest else None
        if isinstance(arg, Token) and arg.type == "STAR":
            arg = None
        separator = None
        if name == "GROUP_CONCAT" and len(rest) > 1:
            separator = str(rest[-1])
        return ast.Aggregate(name, arg, distinct, separator)

    def iri_or_function(self, children):
        if len(children) == 1:
            return children[0]
        distinct, args = children[1]
        return ast.FunctionCall(children[0], args, distinct)

    def function_call(self, children):
        distinct, args = children[1]
        return ast.FunctionCall(children[0], args, distinct)

    def arg_list(self, children):
        if len(children) == 1 and isinstance(children[0], Token) and children[0].type == "NIL":
            return False, ()
        distinct = isinstance(children[0], Token) and children[0].type == "DISTINCT"
        return distinct, tuple(children[1:] if distinct else children)

    # ------------------------------------------------------------------------------------ solution modifiers
    def where_clause(self, children):
        return children[0]

    def group_condition(self, children):
        """``GROUP BY`` item: ``builtin(...)``, ``iri(...)``, ``(expr [AS ?v])`` or ``?v``; its position is that of
        its "(", variable or built-in name (a function call's: the GROUP keyword's, filled in by group_clause)."""
        first = children[0]
        if isinstance(first, Token):
            line, column = self.at(first)
        elif isinstance(first, Variable) and len(children) == 1:
            line, column = self.at(self.last_var)
        elif isinstance(first, ast.Call) and self.last_call is not None:
            line, column = self.at(self.last_call)
        else:
            line = column = 0
        values = [c for c in children if not isinstance(c, Token)]
        if len(values) == 2:
            return ast.Projection(values[1], values[0], line=line, column=column)
        return ast.Projection(None, values[0], line=line, column=column)

    def group_clause(self, children):
        line, column = self.at(children[0])
        conditions = tuple(c if c.line else replace(c, line=line, column=column)
                           for c in children if isinstance(c, ast.Projection))
        return ("group", conditions, ("GROUP BY", line, column))

    def having_clause(self, children):
        return ("having", tuple(c for c in children if not isinstance(c, Token)), ("HAVING", *self.at(children[0])))

    def order_condition(self, children):
        if len(children) == 2:
            return ast.OrderCondition(children[1], children[0].type == "ASC")
        return ast.OrderCondition(children[0], True)

    def order_clause(self, children):
        return ("order", tuple(c for c in children if not isinstance(c, Token)), ("ORDER BY", *self.at(children[0])))

    def limit_clause(self, children):
        value = _integer(children[0])
        return ("limit", MAX_INTEGER if value is None else value)

    def offset_clause(self, children):
        value = _integer(children[0])
        return ("offset", MAX_INTEGER if value is None else value)

    def limit_offset(self, children):
        return children

    def solution_modifier(self, children):
        mods = {"positions": []}
        for child in children:
            for item in (child if isinstance(child, list) else [child]):
                mods[item[0]] = item[1]
                if len(item) > 2:
                    mods["positions"].append(item[2])
        return mods

    def values_clause(self, children):
        if not children:
            return None
        line, column = self.at(children[0])
        return replace(children[1], line=line, column=column)

    # ---------------------------------------------------------------------------------------- query forms
    def select_item(self, children):
        if len(children) == 1:  # a variable: the last variable token read
            return ast.Projection(children[0], None, **self.place(self.last_var))
        expr, var = [c for c in children if not isinstance(c, Token)]
        return ast.Projection(var, expr, **self.place(children[0]))

    def select_modifier(self, children):
        return SelectModifier(str(children[0]).upper())

    def r2s(self, children):
        return R2S(str(children[0]).upper())

    def select_clause(self, children):
        r2s = modifier = None
        items = []
        star = False
        for child in children[1:]:
            if isinstance(child, ast.Projection):
                items.append(child)
            elif isinstance(child, Token) and child.type == "STAR":
                star = True
            elif isinstance(child, R2S):
                r2s = child
            elif isinstance(child, SelectModifier):
                modifier = child
        return {"r2s": r2s, "modifier": modifier, "projection": None if star else tuple(items),
                "pos": self.at(children[0])}

    def _split_sources(self, children):
        dataset = tuple(c for c in children if isinstance(c, (ast.DefaultGraphSource, ast.NamedGraphSource,
                                                                  ast.WindowSource)))
        events = tuple(c for c in children if isinstance(c, ast.EventDecl))
        return dataset, events

    def _select(self, clause, dataset, events, where, mods, values=None, form=QueryForm.SELECT, **extra):
        line, column = clause.get("pos", (0, 0))
        return ast.Query(
            form=form, where=where, projection=clause.get("projection"), modifier=clause.get("modifier"),
            r2s=clause.get("r2s"), dataset=dataset, events=events, group_by=mods.get("group", ()),
            having=mods.get("having", ()), order_by=mods.get("order", ()), limit=mods.get("limit"),
            offset=mods.get("offset"), values=values, line=line, column=column,
            clause_positions=tuple(mods.get("positions", ())), **extra)

    def select_query(self, children):
        clause = children[0]
        dataset, events = self._split_sources(children[1:-2])
        return self._select(clause, dataset, events, children[-2], children[-1])

    def construct_query(self, children):
        pos = self.at(children[0])
        children = children[1:]
        r2s = children[0] if children and isinstance(children[0], R2S) else None
        rest = children[1:] if r2s else children
        mods = rest[-1]
        if isinstance(rest[0], tuple) and not isinstance(rest[0], ast.Query):
            template = rest[0]
            dataset, events = self._split_sources(rest[1:-2])
            where = rest[-2]
            short = False
        else:
            dataset, events = self._split_sources(rest[:-1])
            tail = [c for c in rest[:-1] if isinstance(c, list)]
            template = tuple(_forward(tail[0])) if tail else ()
            where = ast.GroupPattern((ast.TriplesBlock(template),)) if template else ast.GroupPattern(())
            short = True
        return self._select({"r2s": r2s, "pos": pos}, dataset, events, where, mods, form=QueryForm.CONSTRUCT,
                            template=template, where_form_construct=short)

    def describe_query(self, children):
        pos = self.at(children[0])
        targets = []
        star = False
        rest = []
        for child in children[1:]:
            if isinstance(child, Token) and child.type == "STAR":
                star = True
            elif isinstance(child, (IRI, Variable)) and not rest:
                targets.append(child)
            else:
                rest.append(child)
        mods = rest[-1]
        where = next((c for c in rest[:-1] if isinstance(c, ast.GroupPattern)), None)
        dataset, events = self._split_sources(rest[:-1])
        return self._select({"pos": pos}, dataset, events, where, mods, form=QueryForm.DESCRIBE,
                            describe=None if star else tuple(targets))

    def ask_query(self, children):
        dataset, events = self._split_sources(children[1:-2])
        return self._select({"pos": self.at(children[0])}, dataset, events, children[-2], children[-1],
                            form=QueryForm.ASK)

    # -------------------------------------------------------------------------------------------- register
    def register_kind(self, children):
        return RegisterKind(str(children[0]).upper())

    def computed_every(self, children):
        return self._positive(children[0], "COMPUTED EVERY period")

    def register(self, children):
        r2s = kind = every = None
        name = None
        entailment = None
        entailment_at = (0, 0)
        for child in children:
            if isinstance(child, tuple):
                _, entailment, *entailment_at = child
            elif isinstance(child, Duration):
                every = child
            elif isinstance(child, IRI):
                name = child
            elif isinstance(child, Token) and child.type == "NAME":
                name = str(child)
            elif isinstance(child, R2S):
                r2s = child
            elif isinstance(child, RegisterKind):
                kind = child
        return ast.Register(name, kind, r2s, every, entailment, line=entailment_at[0], column=entailment_at[1])

    def start(self, children):
        register = None
        rest = [c for c in children if c is not None]
        if isinstance(rest[0], ast.Register):
            register = rest[0]
            rest = rest[1:]
        query = rest[0]
        values = rest[1] if len(rest) > 1 else None
        return replace(query, values=values, register=register, base=self.base,
                       prefixes=tuple(self.prefix_order), bnode_positions=tuple(self.bnode_positions))


# Types whose values hold no other node of the tree, or none deeper than a few levels (the depth check does not
# look into them).
_LEAVES = frozenset({str, Token, int, float, Decimal, bool, type(None), IRI, Literal, Variable, BlankNode, Duration,
                     ast.Instant, ast.TimeWindowSpec, ast.LandmarkWindowSpec, ast.IntervalWindowSpec,
                     ast.CountWindowSpec, ast.NowWindowSpec, ast.Register, ast.DefaultGraphSource, ast.NamedGraphSource,
                     ast.WindowSource})
_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(cls: type) -> tuple[str, ...]:
    """The fields of a dataclass node that take part in its equality (its children and values), in order."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.compare) \
            if dataclasses.is_dataclass(cls) else ()
    return names


def node_children(node, out: list, leaves: frozenset = _LEAVES) -> None:
    """Appends to ``out`` the nodes in ``node``'s fields (looking through tuples and lists), except values of a
    type in ``leaves``; iterative. The translation measures the algebra with it too."""
    for name in _FIELDS.get(type(node)) or node_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind in leaves:
            continue
        if kind is tuple or kind is list:
            pending = [value]
            while pending:
                for item in pending.pop():
                    kind = type(item)
                    if kind in leaves:
                        continue
                    if kind is tuple or kind is list:
                        pending.append(item)
                    else:
                        out.append(item)
        else:
            out.append(value)


def check_depth(query: ast.Query, limit: int = MAX_DEPTH) -> None:
    """Raise a ``QuerySyntaxError`` when a node of the tree sits more than ``limit`` nodes deep (tuples do not
    count; the tree's root is 1 deep). Iterative, level by level: the point is to refuse a tree before any
    recursive walk of it. The error takes the position of the first node too deep, or of the closest node above
    it that has one."""
    level = [query]
    for _ in range(limit):
        below: list = []
        for node in level:
            node_children(node, below)
        if not below:
            return
        level = below
    line, column = _position_of_too_deep(query, limit)
    raise QuerySyntaxError(
        f"nesting too deep: patterns and expressions nest more than {limit} levels here (nested groups, "
        f"sub-queries, EXISTS and expressions; a chain of + - * / or of SEQ nests one level per operator); "
        f"at most {limit} levels are allowed", line=line or None, column=column or None)


def _position_of_too_deep(query: ast.Query, limit: int) -> tuple[int, int]:
    """The position of the first node (in text order) more than ``limit`` deep, or of the closest node above it
    that has one (depth first, iterative)."""
    stack = [(query, 1, query.line, query.column)]
    while stack:
        node, depth, line, column = stack.pop()
        if getattr(node, "line", 0):
            line, column = node.line, node.column
        if depth > limit:
            return line, column
        children: list = []
        node_children(node, children)
        stack.extend((child, depth + 1, line, column) for child in reversed(children))
    return 0, 0  # pragma: no cover - only called for a tree deeper than the limit


_GRAMMAR = files("rspark.syntax").joinpath("rspql.lark").read_text(encoding="utf-8")


def _grammar_cache() -> str | bool:
    """Where Lark keeps the analysed grammar between processes (so that importing this module does not analyse it):
    the user's cache directory, as for rspark's jar (not the shared temporary directory: the cache is a pickle).
    Lark checks the grammar's hash stored in it and rebuilds it when the grammar changed."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(folder / f"rspql-grammar-lark{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.pickle")


_builder = _Builder()
_OPENING = ("LBRACE", "LPAR", "LSQB", "QT_OPEN", "ANNOT_OPEN")
_CLOSING = ("RBRACE", "RPAR", "RSQB", "QT_CLOSE", "ANNOT_CLOSE")
_BRACKETS = {**{name: _builder.open_bracket for name in _OPENING},
             **{name: _builder.close_bracket for name in _CLOSING}}
# regex=True: the contextual lexer compiles the terminals of each parser state the first time it is in that state,
# and Python's re is slow to compile the patterns holding PN_CHARS_BASE's Unicode ranges (the first query of a
# process would pay for it); the regex module compiles them several times faster


def _make_parser(quick_lexer: bool = True) -> Lark:
    """The query parser; ``quick_lexer``: each terminal's pattern compiled once, not once per parser state
    (:mod:`rspark.syntax.lexing`; False: Lark's own lexers, which tests compare it with)."""
    made = Lark(_GRAMMAR, parser="lalr", lexer="contextual", transformer=_builder, maybe_placeholders=False,
                cache=_grammar_cache(), regex=True, lexer_callbacks=_BRACKETS)
    if quick_lexer:
        lexing.install(made.parser.lexer)
    return made


_parser = _make_parser()
_lock = threading.Lock()
_LITERALS = {t.name: t.pattern.value for t in _parser.terminals
             if t.name.startswith("__ANON") and t.pattern.type == "str"}


def _expected(text: str, stop: int | None, sparql: bool) -> list[str]:
    """The terminals the parser takes at offset ``stop`` of the (decoded) ``text`` where it stopped (None: at its
    end), readable. Lark's own list (the parse table's entries for the state it stopped in) is wrong both ways:
    LALR(1) merges the lookaheads of every context a rule is used in (after an aggregate, the 'AS' of a SELECT
    expression, also in HAVING), and on such a lookahead the parser reduces before it finds the token does not fit
    (in ``HAVING (COUNT(?o) AS ?x)`` it reduces to a whole expression, after which only ')' is left). So the text
    is parsed again, without building anything, up to the token before ``stop``, and each terminal of the table is
    fed to a copy of that parser, which takes it only if it fits the real context (the whole stack).
    ``sparql``: a SPARQL 1.1 query, which is never told to write a keyword of continuous queries. Called with the
    builder's state reset (the lexer's bracket callbacks count on it)."""
    interactive = _parser.parse_interactive(text)
    state = interactive.parser_state
    state.parse_conf = copy(state.parse_conf)
    state.parse_conf.callbacks = {}  # no tree: the builder's callbacks would change its state
    try:
        for token in interactive.lexer_thread.lex(state):
            if stop is not None and token.start_pos >= stop:
                break
            state.feed_token(token)
    except UnexpectedInput:  # the lexer reached the offending text
        pass
    names = interactive.accepts()
    if sparql:
        names = {name for name in names if name not in CONTINUOUS_KEYWORDS}
    return _readable(names)


def _end_of(text: str) -> tuple[int, int]:
    """The line and column just after the last character of ``text``."""
    return text.count("\n") + 1, len(text) - text.rfind("\n")


def parse_query(text: str, *, base_iri: str | None = None, source: str | None = None,
                sparql: bool = False) -> ast.Query:
    """Parse a query (SPARQL 1.1 + RSP-QL extensions) into its syntax tree.

    ``base_iri`` resolves relative IRIs (a BASE in the query overrides it); ``source`` names the file in errors.
    Raises ``QuerySyntaxError`` with line, column (in ``text`` as written), the offending token and the expected
    tokens (exactly those the parser takes there); also for a query that nests deeper than the limits in this
    module's docstring. ``sparql``: the query is for a command that answers SPARQL 1.1 queries only (``rspark
    sparql``): the same grammar, but no expected list names a keyword of continuous queries
    (:data:`CONTINUOUS_KEYWORDS`).
    """
    try:
        query = _parse(text, base_iri, sparql)
        check_depth(query)
        return query
    except QuerySyntaxError as exc:
        raise (exc.with_source(source) if source else exc) from None


def _parse(text: str, base_iri: str | None, sparql: bool = False) -> ast.Query:
    decoded, positions = _decode(text)

    def where(offset, line, column) -> tuple[int | None, int | None]:
        if positions is not None and offset is not None and offset >= 0:
            return positions.line_column(offset)
        return (line if line != -1 else None), (column if column != -1 else None)

    def expected(stop: int | None) -> list[str]:
        _builder.reset(base_iri, positions)
        return _expected(decoded, stop, sparql)

    with _lock:
        _builder.reset(base_iri, positions)
        try:
            return _parser.parse(decoded)
        except VisitError as exc:  # an error raised inside a builder callback
            inner = exc.orig_exc
            if isinstance(inner, QuerySyntaxError):
                raise inner from None
            raise
        except UnexpectedToken as exc:
            token = exc.token
            shown = "end of query" if token.type == "$END" else repr(_shown(token))
            line, column = where(getattr(token, "start_pos", None), exc.line, exc.column)
            if line is None:
                line, column = _end_of(text)
            stop = None if token.type == "$END" else token.start_pos  # $END borrows the last token's position
            raise QuerySyntaxError(f"unexpected {shown}", line=line, column=column, token=_shown(token, 200),
                                   expected=expected(stop)) from None
        except UnexpectedCharacters as exc:
            line, column = where(exc.pos_in_stream, exc.line, exc.column)
            raise QuerySyntaxError(f"unexpected character {exc.char!r}", line=line, column=column, token=exc.char,
                                   expected=expected(exc.pos_in_stream)) from None
        except UnexpectedEOF:
            line, column = _end_of(text)
            raise QuerySyntaxError("unexpected end of query", line=line, column=column,
                                   expected=expected(None)) from None
        except UnexpectedInput as exc:  # pragma: no cover - other lark input errors
            line, column = where(getattr(exc, "pos_in_stream", None), getattr(exc, "line", -1),
                                 getattr(exc, "column", -1))
            raise QuerySyntaxError(str(exc).splitlines()[0], line=line, column=column) from None
