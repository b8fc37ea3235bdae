"""Text -> syntax tree. ``parse_query(text)`` returns a ``rspark.syntax.ast.Query`` or raises ``QuerySyntaxError``.

The grammar (``rspql.lark``) is parsed with Lark's LALR(1) parser and contextual lexer; the tree is built by a
transformer that runs during parsing (no intermediate parse tree), which keeps parsing to about a millisecond for a
typical query.
"""

from __future__ import annotations

import re
import threading
from decimal import Decimal
from importlib.resources import files

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from rspark.model.iri import resolve_iri
from rspark.model.terms import (
    RDF_FIRST,
    RDF_NIL,
    RDF_REST,
    RDF_TYPE,
    XSD,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    IRI,
    BlankNode,
    Literal,
    QuotedTriple,
    Variable,
)
from rspark.model.time import Duration, DurationError, parse_duration
from rspark.syntax import ast


class QuerySyntaxError(ValueError):
    """A query that cannot be read: names the source, line, column, the offending token and what was expected."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 token: str | None = None, expected: list[str] | None = None, source: str | None = None):
        self.message = message
        self.line = line
        self.column = column
        self.token = token
        self.expected = expected or []
        self.source = source
        super().__init__(str(self))

    def with_source(self, source: str) -> "QuerySyntaxError":
        return type(self)(self.message, line=self.line, column=self.column, token=self.token,
                                expected=self.expected, source=source)

    def __str__(self) -> str:
        where = self.source or "<query>"
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        text = f"{where}: {self.message}"
        if self.expected:
            text += "; expected " + ", ".join(self.expected)
        return text


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
    "TIME_UNIT": "a time unit", "VBAR": "'|'", "COLON": "':'",
}


def _readable(names) -> list[str]:
    out = []
    for name in sorted(names):
        if name.startswith("__ANON") or name in ("INTEGER_POSITIVE", "INTEGER_NEGATIVE", "DECIMAL_POSITIVE",
                                                 "DECIMAL_NEGATIVE", "DOUBLE_POSITIVE", "DOUBLE_NEGATIVE"):
            continue
        label = _TERMINAL_NAMES.get(name, name.lstrip("_").replace("_KW", ""))
        if label not in out:
            out.append(label)
    return out[:24] + (["..."] if len(out) > 24 else [])


_STRING_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_STRING_ESCAPE_RE = re.compile(r"\\(.)")
_CODEPOINT_RE = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_PN_LOCAL_ESCAPE_RE = re.compile(r"\\([_~.\-!$&'()*+,;=/?#@%])")
_SURROGATES = range(0xD800, 0xE000)


def decode_codepoints(text: str) -> str:
    """SPARQL 1.1 section 19.2: ``\\uXXXX`` / ``\\UXXXXXXXX`` escapes are replaced before parsing."""
    if "\\u" not in text and "\\U" not in text:
        return text

    def replace(match: re.Match) -> str:
        code = int(match.group(1) or match.group(2), 16)
        if code in _SURROGATES or code > 0x10FFFF:
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - text.rfind("\n", 0, match.start())
            raise QuerySyntaxError(f"invalid code point escape {match.group(0)}", line=line, column=column,
                                   token=match.group(0))
        return chr(code)

    return _CODEPOINT_RE.sub(replace, text)


def _unescape_string(body: str) -> str:
    return _STRING_ESCAPE_RE.sub(lambda m: _STRING_ESCAPES.get(m.group(1), m.group(0)), body)


def _error_at(token: Token, message: str) -> QuerySyntaxError:
    return QuerySyntaxError(message, line=getattr(token, "line", None), column=getattr(token, "column", None),
                            token=str(token))


_NUMERIC_TYPES = {
    "INTEGER": XSD_INTEGER, "DECIMAL": XSD_DECIMAL, "DOUBLE": XSD_DOUBLE,
    "INTEGER_POSITIVE": XSD_INTEGER, "DECIMAL_POSITIVE": XSD_DECIMAL, "DOUBLE_POSITIVE": XSD_DOUBLE,
    "INTEGER_NEGATIVE": XSD_INTEGER, "DECIMAL_NEGATIVE": XSD_DECIMAL, "DOUBLE_NEGATIVE": XSD_DOUBLE,
}


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


def _term_and_triples(node):
    if isinstance(node, _Node):
        return node.term, node.triples
    return node, []


class _Builder(Transformer):
    """Builds the syntax tree while the LALR parser reduces. State (prefixes, base, blank node counter) is reset per
    query by ``reset``."""

    def __init__(self):
        super().__init__(visit_tokens=False)
        self.reset(None)

    def reset(self, base: str | None) -> None:
        self.base = base
        self.initial_base = base
        self.prefixes: dict[str, str] = {}
        self.prefix_order: list[tuple[str, str]] = []
        self.bnode_counter = 0

    def fresh_bnode(self) -> BlankNode:
        self.bnode_counter += 1
        return BlankNode(f"_b{self.bnode_counter}")

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
            raise _error_at(token, f"unknown prefix '{prefix}:' in {token} (declare it with PREFIX {prefix}: <...>)")
        return IRI(self.prefixes[prefix] + _PN_LOCAL_ESCAPE_RE.sub(r"\1", local))

    def var(self, children):
        return Variable(str(children[0])[1:])

    def string(self, children):
        token = children[0]
        if token.type.startswith("STRING_LITERAL_LONG"):
            return _unescape_string(token[3:-3])
        return _unescape_string(token[1:-1])

    def rdf_literal(self, children):
        lexical = children[0]
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
        return BlankNode(str(token)[2:])

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
        return children[0]

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
                        raise QuerySyntaxError("an annotation {| |} cannot follow a property path; "
                                               "annotations need a simple predicate")
                    quoted = QuotedTriple(subject, verb, term)
                    triples.extend(self._property_list(quoted, obj.annotation))
        return triples

    def triples_same_subject_path(self, children):
        subject, inner = _term_and_triples(self._fix_nil(children[0]))
        triples = list(inner)
        if len(children) > 1:
            triples.extend(self._property_list(subject, children[1]))
        return triples

    triples_same_subject = triples_same_subject_path

    def triples_block(self, children):
        triples = list(children[0])
        if len(children) > 1:
            triples.extend(children[1].triples)
        return ast.TriplesBlock(tuple(triples))

    def triples_template(self, children):
        triples = list(children[0])
        if len(children) > 1:
            triples.extend(children[1])
        return triples

    def construct_template(self, children):
        return tuple(children[0])

    def construct_quads(self, children):
        items = []
        for c in children:
            items.extend(c)
        return items

    def quads_not_triples(self, children):
        graph = children[0]
        triples = children[1] if len(children) > 1 else []
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
        inner = children[0]
        if isinstance(inner, ast.SubSelect):
            return ast.GroupPattern((inner,))
        return inner

    def group_graph_pattern_sub(self, children):
        return ast.GroupPattern(tuple(c for c in children if not isinstance(c, Token)))

    def optional_graph_pattern(self, children):
        return ast.OptionalPattern(children[0])

    def minus_graph_pattern(self, children):
        return ast.MinusPattern(children[0])

    def graph_graph_pattern(self, children):
        return ast.GraphPattern(children[0], children[1])

    def service_graph_pattern(self, children):
        silent = isinstance(children[0], Token) and children[0].type == "SILENT"
        rest = children[1:] if silent else children
        return ast.ServicePattern(rest[0], rest[1], silent)

    def filter(self, children):
        return ast.FilterPattern(children[0])

    def bind(self, children):
        return ast.BindPattern(children[0], children[1])

    def inline_data(self, children):
        return children[0]

    def inline_data_one_var(self, children):
        var = children[0]
        rows = tuple((self._data_value(v),) for v in children[1:])
        return ast.ValuesPattern((var,), rows)

    def inline_data_full(self, children):
        if children and isinstance(children[0], Token) and children[0].type == "NIL":
            variables, rows = (), children[1:]
        else:
            variables = tuple(c for c in children if isinstance(c, Variable))
            rows = [c for c in children if not isinstance(c, Variable)]
        out = []
        for row in rows:
            if len(row) != len(variables):
                raise QuerySyntaxError(f"VALUES row has {len(row)} values for {len(variables)} variables "
                                       f"({' '.join(v.n3() for v in variables) or '()'})")
            out.append(row)
        return ast.ValuesPattern(variables, tuple(out))

    def data_row(self, children):
        if children and isinstance(children[0], Token) and children[0].type == "NIL":
            return ()
        return tuple(self._data_value(v) for v in children)

    @staticmethod
    def _data_value(value):
        if isinstance(value, Token) and value.type == "UNDEF":
            return None
        return value

    def group_or_union_graph_pattern(self, children):
        groups = children[0::2]
        ops = tuple(children[1::2])
        return ast.UnionPattern(tuple(groups), ops)

    def union_op(self, children):
        return str(children[0]).upper()

    def sub_select(self, children):
        clause, where, modifiers, values = children
        return ast.SubSelect(self._select(clause, (), (), where, modifiers, values))

    # RSP patterns
    def window_graph_pattern(self, children):
        keyword, name, group = children
        return ast.WindowPattern(name, group, keyword.line, keyword.column)

    def stream_graph_pattern(self, children):
        return ast.StreamPattern(children[1], children[2], children[3])

    def match_graph_pattern(self, children):
        if len(children) == 2:
            return ast.MatchPattern(children[0], children[1])
        return ast.MatchPattern(None, children[0])

    def consume(self, children):
        return str(children[0]).upper()

    def event_ref(self, children):
        token = children[0]
        return ast.EventRef(str(token), token.line, token.column)

    def event_first(self, children):
        return ast.EventFirst(children[1])

    def event_last(self, children):
        return ast.EventLast(children[1])

    def event_seq(self, children):
        if len(children) == 4:
            left, _, selection, right = children
        else:
            left, _, right = children
            selection = None
        return ast.EventSeq(left, right, selection)

    def selection(self, children):
        return str(children[0]).upper()

    def event_decl(self, children):
        window, group, name = children
        return ast.EventDecl(window, group, str(name), name.line, name.column)

    # -------------------------------------------------------------------------------------------- windows
    def window_spec(self, children):
        return children[0]

    def duration(self, children):
        text = " ".join(str(c) for c in children)
        try:
            value = parse_duration(text)
        except DurationError as exc:
            raise _error_at(children[0], str(exc)) from None
        if value.amount < 0:
            raise _error_at(children[0], f"a duration cannot be negative, got {text} (window RANGE, SLIDE and "
                                         "COMPUTED EVERY take positive durations)")
        return value

    @staticmethod
    def _positive(duration: Duration, what: str) -> Duration:
        if duration.amount <= 0:
            raise QuerySyntaxError(f"{what} must be positive, got {duration.text or duration.amount}")
        return duration

    def instant(self, children):
        value = children[0]
        if isinstance(value, Literal):
            if value.datatype == XSD + "dateTime":
                return self._datetime_instant(value.lexical)
            try:
                return ast.Instant(Decimal(value.lexical), False, value.lexical)
            except ArithmeticError:
                raise QuerySyntaxError(f"not a time instant: {value.n3()}") from None
        if value.type == "DATETIME":
            return self._datetime_instant(str(value))
        return ast.Instant(Decimal(str(value)), False, str(value))

    @staticmethod
    def _datetime_instant(text: str) -> ast.Instant:
        from datetime import datetime, timezone

        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        millis = (stamp - datetime(1970, 1, 1, tzinfo=timezone.utc)).total_seconds() * 1000
        return ast.Instant(Decimal(round(millis)), True, text)

    def starting(self, children):
        return children[0]

    def time_window(self, children):
        rng = children[0]
        slide = None  # not written: the engine profile's implicit slide (tumbling, or every tick for CQELS)
        start = None
        for child in children[1:]:
            if isinstance(child, Duration):
                slide = self._positive(child, "window SLIDE")
            elif isinstance(child, Token) and child.type == "TUMBLING":
                slide = rng
            elif isinstance(child, ast.Instant):
                start = child
        return ast.TimeWindow(self._positive(rng, "window RANGE"), slide, start)

    def landmark_window(self, children):
        return ast.LandmarkWindow(children[0] if children else None)

    def interval_window(self, children):
        start, end = children
        if start.absolute == end.absolute and start.value > end.value:
            raise QuerySyntaxError(f"interval window [FROM {start.text} TO {end.text}] ends before it starts")
        return ast.IntervalWindow(start, end)

    def count_window(self, children):
        unit = next(c for c in children if isinstance(c, Token) and c.type == "COUNT_UNIT")
        size = next(c for c in children if isinstance(c, Token) and c.type == "INTEGER")
        if int(size) <= 0:
            raise _error_at(size, f"count window size must be positive, got {size}")
        return ast.CountWindow(str(unit).upper(), int(size))

    def now_window(self, children):
        return ast.NowWindow()

    def all_window(self, children):
        return ast.LandmarkWindow(None)

    def stream_range(self, children):
        """SPARQLstream ``[1 MINUTES (SLIDE 1 MINUTES)?]``."""
        rng = self._positive(children[0], "window range")
        slide = self._positive(children[1], "window SLIDE") if len(children) > 1 else None
        return ast.TimeWindow(rng, slide)

    def relative_window(self, children):
        """``[NOW-a TO NOW(-b)? (SLIDE c)?]`` / ``[FROM NOW-a TO NOW-b STEP c]``: range a-b, ending b before now."""
        minus = [i for i, c in enumerate(children) if isinstance(c, Token) and c.type == "MINUS_SIGN"]
        start = children[minus[0] + 1]
        end = children[minus[1] + 1] if len(minus) > 1 else None
        durations = [c for c in children if isinstance(c, Duration)]
        slide = durations[-1] if len(durations) > (2 if end is not None else 1) else None
        width = start.amount - (end.amount if end is not None else 0)
        if start.absolute != (end.absolute if end is not None else start.absolute) or width <= 0:
            raise _error_at(children[0], f"window [NOW-{start.text} TO NOW-{end.text if end else 0}] is empty or "
                                         "mixes time units")
        rng = Duration(width, start.absolute, f"{start.text}-{end.text}" if end is not None else start.text)
        return ast.TimeWindow(rng, self._positive(slide, "window SLIDE") if slide is not None else None, None, end)

    # --------------------------------------------------------------------------------------------- dataset
    def default_graph(self, children):
        return ast.DefaultGraphSource(children[0])

    def named_graph(self, children):
        return ast.NamedGraphSource(children[0])

    def named_window(self, children):
        keyword, name, stream = children[:3]
        return ast.WindowSource(name, stream, children[3] if len(children) > 3 else None,
                                line=keyword.line, column=keyword.column)

    def stream_window(self, children):
        return ast.WindowSource(None, children[1], children[2] if len(children) > 2 else None, merged=True)

    def named_stream(self, children):
        # SPARQLstream FROM NAMED STREAM :s [...]: the stream IRI names its window
        return ast.WindowSource(children[1], children[1], children[2] if len(children) > 2 else None)

    def seed_window(self, children):
        stream, spec, name = children
        return ast.WindowSource(name, stream, spec)

    def window_on_stream(self, children):
        keyword, _, stream, spec, name = children
        return ast.WindowSource(name, stream, spec, line=keyword.line, column=keyword.column)

    def entailment(self, children):
        return ("entailment", children[0])

    # ----------------------------------------------------------------------------------------- expressions
    def or_expr(self, children):
        return self._left_assoc("||", children)

    def and_expr(self, children):
        return self._left_assoc("&&", children)

    @staticmethod
    def _left_assoc(op, operands):
        result = operands[0]
        for operand in operands[1:]:
            result = ast.Call(op, (result, operand))
        return result

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
        return ast.Exists(children[2], True)

    def aggregate(self, children):
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
            separator = rest[-1]
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
        if len(children) == 2:
            return ast.Projection(children[1], children[0])
        return ast.Projection(None, children[0])

    def group_clause(self, children):
        return ("group", tuple(children))

    def having_clause(self, children):
        return ("having", tuple(children))

    def order_condition(self, children):
        if len(children) == 2:
            return ast.OrderCondition(children[1], children[0].type == "ASC")
        return ast.OrderCondition(children[0], True)

    def order_clause(self, children):
        return ("order", tuple(children))

    def limit_clause(self, children):
        return ("limit", int(children[0]))

    def offset_clause(self, children):
        return ("offset", int(children[0]))

    def limit_offset(self, children):
        return children

    def solution_modifier(self, children):
        mods = {}
        for child in children:
            if isinstance(child, list):
                for item in child:
                    mods[item[0]] = item[1]
            else:
                mods[child[0]] = child[1]
        return mods

    def values_clause(self, children):
        return children[0] if children else None

    # ---------------------------------------------------------------------------------------- query forms
    def select_item(self, children):
        if len(children) == 2:
            return ast.Projection(children[1], children[0])
        return ast.Projection(children[0])

    def select_modifier(self, children):
        return str(children[0]).upper()

    def r2s(self, children):
        return str(children[0]).upper()

    def select_clause(self, children):
        r2s = modifier = None
        items = []
        star = False
        for child in children:
            if isinstance(child, ast.Projection):
                items.append(child)
            elif isinstance(child, Token) and child.type == "STAR":
                star = True
            elif child in ("RSTREAM", "ISTREAM", "DSTREAM"):
                r2s = child
            elif child in ("DISTINCT", "REDUCED"):
                modifier = child
        return {"r2s": r2s, "modifier": modifier, "projection": None if star else tuple(items)}

    def _split_sources(self, children):
        dataset = tuple(c for c in children if isinstance(c, (ast.DefaultGraphSource, ast.NamedGraphSource,
                                                                  ast.WindowSource)))
        events = tuple(c for c in children if isinstance(c, ast.EventDecl))
        return dataset, events

    def _select(self, clause, dataset, events, where, mods, values=None, form="SELECT", **extra):
        return ast.Query(
            form=form, where=where, projection=clause.get("projection"), modifier=clause.get("modifier"),
            r2s=clause.get("r2s"), dataset=dataset, events=events, group_by=mods.get("group", ()),
            having=mods.get("having", ()), order_by=mods.get("order", ()), limit=mods.get("limit"),
            offset=mods.get("offset"), values=values, **extra)

    def select_query(self, children):
        clause = children[0]
        dataset, events = self._split_sources(children[1:-2])
        return self._select(clause, dataset, events, children[-2], children[-1])

    def construct_query(self, children):
        r2s = children[0] if children and children[0] in ("RSTREAM", "ISTREAM", "DSTREAM") else None
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
            template = tuple(tail[0]) if tail else ()
            where = ast.GroupPattern((ast.TriplesBlock(template),)) if template else ast.GroupPattern(())
            short = True
        return self._select({"r2s": r2s}, dataset, events, where, mods, form="CONSTRUCT", template=template,
                            where_form_construct=short)

    def describe_query(self, children):
        targets = []
        star = False
        rest = []
        for child in children:
            if isinstance(child, Token) and child.type == "STAR":
                star = True
            elif isinstance(child, (IRI, Variable)) and not rest:
                targets.append(child)
            else:
                rest.append(child)
        mods = rest[-1]
        where = next((c for c in rest[:-1] if isinstance(c, ast.GroupPattern)), None)
        dataset, events = self._split_sources(rest[:-1])
        return self._select({}, dataset, events, where, mods, form="DESCRIBE",
                            describe=None if star else tuple(targets))

    def ask_query(self, children):
        dataset, events = self._split_sources(children[:-2])
        return self._select({}, dataset, events, children[-2], children[-1], form="ASK")

    # -------------------------------------------------------------------------------------------- register
    def register_kind(self, children):
        return str(children[0]).upper()

    def computed_every(self, children):
        return self._positive(children[0], "COMPUTED EVERY period")

    def register(self, children):
        r2s = kind = every = None
        name = None
        entailment = None
        for child in children:
            if isinstance(child, tuple):
                entailment = child[1]
            elif isinstance(child, Duration):
                every = child
            elif isinstance(child, IRI):
                name = child
            elif isinstance(child, Token) and child.type == "NAME":
                name = str(child)
            elif child in ("RSTREAM", "ISTREAM", "DSTREAM"):
                r2s = child
            elif child in ("STREAM", "QUERY"):
                kind = child
        return ast.Register(name, kind, r2s, every, entailment)

    def start(self, children):
        register = None
        rest = [c for c in children if c is not None]
        if isinstance(rest[0], ast.Register):
            register = rest[0]
            rest = rest[1:]
        query = rest[0]
        values = rest[1] if len(rest) > 1 else None
        from dataclasses import replace

        return replace(query, values=values, register=register, base=self.base,
                       prefixes=tuple(self.prefix_order))


_GRAMMAR = files("rspark.syntax").joinpath("rspql.lark").read_text(encoding="utf-8")


def _grammar_cache() -> str | bool:
    """Where Lark keeps the analysed grammar between processes (importing this module: 0.27 s instead of 0.65 s):
    the user's cache directory, as for rspark's jar (not the shared temporary directory: the cache is a pickle).
    Lark checks the grammar's hash stored in it and rebuilds it when the grammar changed."""
    import sys

    import lark

    from rspark.cache import cache_dir

    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(folder / f"rspql-grammar-lark{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.pickle")


_builder = _Builder()
# regex=True: the contextual lexer compiles the terminals of each parser state the first time it is in that state,
# and Python's re takes about 2 ms for every pattern holding PN_CHARS_BASE's Unicode ranges (the first query of
# a process: 0.5-0.8 s of compiling); the regex module compiles them about 7 times faster (0.17 s)
_parser = Lark(_GRAMMAR, parser="lalr", lexer="contextual", transformer=_builder, maybe_placeholders=False,
               cache=_grammar_cache(), regex=True)
_lock = threading.Lock()


def parse_query(text: str, *, base_iri: str | None = None, source: str | None = None) -> ast.Query:
    """Parse a query (SPARQL 1.1 + RSP-QL extensions) into its syntax tree.

    ``base_iri`` resolves relative IRIs (a BASE in the query overrides it); ``source`` names the file in errors.
    Raises ``QuerySyntaxError`` with line, column, the offending token and the expected tokens.
    """
    try:
        decoded = decode_codepoints(text)
        with _lock:
            _builder.reset(base_iri)
            return _parser.parse(decoded)
    except QuerySyntaxError as exc:
        raise exc.with_source(source) if source else exc
    except VisitError as exc:  # an error raised inside a builder callback
        inner = exc.orig_exc
        if isinstance(inner, QuerySyntaxError):
            raise (inner.with_source(source) if source else inner) from None
        raise
    except UnexpectedToken as exc:
        token = exc.token
        shown = "end of query" if token.type == "$END" else repr(str(token))
        raise QuerySyntaxError(f"unexpected {shown}", line=exc.line if exc.line != -1 else None,
                               column=exc.column if exc.column != -1 else None, token=str(token),
                               expected=_readable(exc.expected), source=source) from None
    except UnexpectedCharacters as exc:
        char = exc.char
        raise QuerySyntaxError(f"unexpected character {char!r}", line=exc.line, column=exc.column, token=char,
                               expected=_readable(exc.allowed or []), source=source) from None
    except UnexpectedEOF as exc:
        raise QuerySyntaxError("unexpected end of query", expected=_readable(exc.expected), source=source) from None
    except UnexpectedInput as exc:  # pragma: no cover - other lark input errors
        raise QuerySyntaxError(str(exc).splitlines()[0], line=getattr(exc, "line", None),
                               column=getattr(exc, "column", None), source=source) from None
