"""RDF Message Logs and JSON-LD streams, converted to the stream format rspark loads (docs/streams.md).

The W3C RSP Community Group's draft "RDF Messages" (w3c-cg/rsp, ``spec/messages.bs``) defines message-delimited
RDF: an N-Triples, N-Quads, Turtle or TriG document announced with a version label ending in ``-messages``
(``VERSION "1.2-messages"``, ``@version "1.1-messages" .``) whose messages are separated by the delimiter
``MESSAGE`` (Turtle and TriG also ``@message .``), section "Message delimiters"; and NDJSON-LD, one JSON object a
line, with context messages (section "JSON-LD"). Blank nodes are scoped to their message (section "RDF Message
Logs"). A JSON-LD stream is the stream format written in JSON-LD: each named graph an element, its timestamp in the
default graph (the W3C RSP CG's example streams, TripleWave's ``.rs`` files).

Each is converted here, on the driver, into N-Quads the loader reads as any stream file:

* :func:`split_messages`: a message log cut into :class:`Message` pieces with their line, column and number, the
  directives (PREFIX, BASE) in effect where each starts; a tokenizer (strings, IRIs, comments, braces), not a
  parser, so a delimiter inside a string or an IRI is no delimiter.
* :func:`parse_messages`: the RDF dataset of each message, in log order (the draft's message-level interface).
* :func:`stream_format`, :func:`pushed_format`, :func:`media_type_format`: which format a file, a push or a media
  type is in (an extension, a version announcement, a ``version`` parameter).
* :func:`convert`: a stream text in one of :data:`STREAM_FORMATS` -> :class:`Converted` (N-Quads, where each
  message's quads came from, the problems found). One message is one element: a message of triples becomes a named
  graph minted from ``element_base`` and the message's number, with a default-graph timestamp triple for each
  distinct object of its timestamp-predicate triples; a message with one named graph is that element as it is (it
  names its element); an empty message is no element. A problem (a message that does not parse, a delimiter inside
  a graph block, several named graphs) is a :class:`~rspark.errors.DataError` naming the file, the line, the column
  when known and the message; that message is skipped and the others are converted.
"""

from __future__ import annotations

import bisect
import functools
import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from rspark.errors import DataError
from rspark.model.timestamps import is_datetime_shaped
from rspark.model.xsd import XSD_DATETIME
from rspark.spark.loading.rdf import detect_format, document_problem, is_compressed, local_path

__all__ = ["Converted", "Message", "STREAM_FORMATS", "convert", "convert_push", "file_head", "media_type_format",
           "message_log_format", "needs_conversion", "parse_messages", "pushed_format", "split_messages",
           "stream_format"]

# the converted stream formats: a message log of each RDF syntax, NDJSON-LD, and a JSON-LD document
MESSAGE_LOGS = {"ntriples": "ntriples-messages", "nquads": "nquads-messages", "turtle": "turtle-messages",
                "trig": "trig-messages"}
STREAM_FORMATS = (*MESSAGE_LOGS.values(), "ndjsonld", "jsonld")
_OX = {"ntriples-messages": ox.RdfFormat.N_TRIPLES, "nquads-messages": ox.RdfFormat.N_QUADS,
       "turtle-messages": ox.RdfFormat.TURTLE, "trig-messages": ox.RdfFormat.TRIG}
_ALIASES = {"ndjsonld": "ndjsonld", "ndjson-ld": "ndjsonld", "jsonld": "jsonld", "json-ld": "jsonld",
            **{name: name for name in MESSAGE_LOGS.values()},
            **{f"{short}-messages": MESSAGE_LOGS[long] for short, long in
               (("nt", "ntriples"), ("nq", "nquads"), ("ttl", "turtle"))}}
_EXTENSIONS = {".ndjsonld": "ndjsonld", ".jsonld": "jsonld", ".json": "jsonld"}
# media types (the draft: the RDF syntax's own, with the version parameter; NDJSON-LD: RDF4J's, which the draft names)
MEDIA_TYPES = {"application/x-ld+ndjson": "ndjsonld", "application/ld+json": "jsonld"}
_SYNTAX_MEDIA = {"application/n-triples": "ntriples", "application/n-quads": "nquads", "text/turtle": "turtle",
                 "application/trig": "trig"}

_VERSION = re.compile(r"""(?:\s|\#[^\n]*)*(?:VERSION|@version)\s*(?:"([^"\n]*)"|'([^'\n]*)')""", re.I)


def message_log_format(head: str, fmt: str) -> str | None:
    """The message-log format of a document in the RDF syntax ``fmt`` whose text starts with ``head``, when its
    first statement announces a version label ending in ``-messages`` (the draft's "Version announcement"); else
    None."""
    if fmt not in MESSAGE_LOGS:
        return None
    m = _VERSION.match(head)
    label = m and (m.group(1) if m.group(1) is not None else m.group(2))
    return MESSAGE_LOGS[fmt] if label and label.endswith("-messages") else None


def file_head(path: str) -> str:
    """The first 4 KiB of a local file as text (where a message log announces itself); "" for a URI Spark reads
    or a path that is no file."""
    local = local_path(str(path))
    if local is None or not os.path.isfile(local):
        return ""
    opener = gzip.open if is_compressed(local) else open
    with opener(local, "rb") as f:
        return f.read(4096).decode("utf-8", errors="replace")


def stream_format(path: str, format: str | None = None, head: str = "") -> str | None:
    """The converted format of a stream file (one of :data:`STREAM_FORMATS`): ``format`` given (also
    ``nt-messages``, ``json-ld``, ...), else the extension (``.ndjsonld``; ``.jsonld`` and ``.json``), else a
    message log announced in ``head`` (the file's first bytes as text). None: a TriG or N-Quads stream the loader
    reads itself. Raises :class:`~rspark.errors.InputError` for an unknown format or extension."""
    if format is not None:
        key = format.strip().lower().replace("_", "-")
        if key in _ALIASES:
            return _ALIASES[key]
        return message_log_format(head, detect_format(path, format))
    name = str(path).lower()
    name = name[:-3] if name.endswith(".gz") else name
    suffix = Path(name).suffix
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    return message_log_format(head, detect_format(path))


def needs_conversion(path: str) -> bool:
    """Whether a stream file is read through :func:`convert` (a message log, NDJSON-LD, JSON-LD), not parsed as the
    TriG or N-Quads it may also be (a log of one message parses as TriG, but its triples are an element)."""
    try:
        return stream_format(path, None, file_head(path)) is not None
    except ValueError:  # an unknown extension: the loader's to report
        return False


def media_type_format(media_type: str | None, text: str = "") -> str | None:
    """The converted format of a pushed body from its media type: NDJSON-LD's, JSON-LD's, or an RDF syntax's with
    a ``version`` parameter ending in ``-messages`` (``application/trig; version=1.2-messages``, the draft's
    "Version labels") or whose ``text`` announces such a version in-line; None for any other."""
    if not media_type:
        return None
    main, *params = [part.strip() for part in media_type.split(";")]
    main = main.lower()
    if main in MEDIA_TYPES:
        return MEDIA_TYPES[main]
    if main not in _SYNTAX_MEDIA:
        return None
    version = next((p.split("=", 1)[1].strip().strip('"') for p in params if p.lower().startswith("version=")), "")
    if version.endswith("-messages"):
        return MESSAGE_LOGS[_SYNTAX_MEDIA[main]]
    return message_log_format(text, _SYNTAX_MEDIA[main])


def pushed_format(text: str, format: str | None) -> str | None:
    """The converted format of a push (``Engine.push``): ``format`` when it names one (``"ndjsonld"``,
    ``"trig-messages"``, ...), else a message log announced at the start of ``text``: in ``format``'s syntax when
    it names one (``"trig"``), else N-Quads when its first statement is a line of four terms, else TriG."""
    syntax = None
    if format is not None:
        key = format.strip().lower().replace("_", "-")
        if key in _ALIASES:
            return _ALIASES[key]
        try:
            syntax = detect_format("", format)
        except ValueError:  # not a format name: the push reports it
            return None
    m = _VERSION.match(text)
    if m is None:
        return None
    if syntax is None:
        first = text[m.end():].lstrip().split("\n", 1)[0].strip()
        line_format = first.startswith(("<", "_:")) and first.endswith(".") and "{" not in first
        syntax = "nquads" if line_format else "trig"
    return message_log_format(text, syntax)


def convert_push(text: str, fmt: str, *, stream: str, pred: str, file: str = "pushed data") -> Converted:
    """A pushed text in a converted format as N-Quads (:func:`convert`); the elements it mints are named after the
    stream and the text (``urn:rspark:message:HASH:N``: the same push gives the same names)."""
    digest = hashlib.sha1((stream + "\n" + text).encode("utf-8")).hexdigest()[:16]
    return convert(text, fmt, file=file, pred=pred, element_base=f"urn:rspark:message:{digest}:")


# ----------------------------------------------------------------------------------------------- the splitter


@dataclass
class Message:
    """One message of a log: ``number`` (1-based, in log order), ``start``/``end`` (character offsets of its text),
    ``line`` (1-based) and ``column`` (0-based) where its text starts, ``header`` (the PREFIX / BASE directives
    of earlier messages in effect, one line), ``blank`` (spans inside it read as white space: version
    announcements), ``empty`` (no statement), ``problem`` (why it cannot be read, and the offset it is about),
    ``first`` / ``first_line`` (the offset and line of its first statement: where messages name it),
    ``directives`` (it declares a prefix or a base: read even when empty, for their problems)."""

    number: int
    start: int
    end: int
    line: int = 0
    column: int = 0
    header: str = ""
    blank: list[tuple[int, int]] = field(default_factory=list)
    empty: bool = True
    problem: tuple[str, int] | None = None
    first: int | None = None
    first_line: int = 0
    directives: bool = False


_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\n]+|\#[^\n]*)
    |(?P<lstr>\"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|\Z)|'''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z))
    |(?P<str>"(?:[^"\\\n]|\\.)*(?:"|$)|'(?:[^'\\\n]|\\.)*(?:'|$))
    |(?P<iri><[^<>"{}|^`\\\s]*>)
    |(?P<lbrace>\{)
    |(?P<rbrace>\})
    |(?P<dot>\.(?![^\s"'<>{}\#.;,\[\]()]))
    |(?P<word>[^\s"'<>{}\#.;,\[\]()]+(?:\.[^\s"'<>{}\#.;,\[\]()]+)*)
    |(?P<other>.)""",
    re.X | re.S | re.M,
)
_DIRECTIVES = {"PREFIX": 2, "BASE": 1, "VERSION": 1}
_LINE_DELIMITER = re.compile(r"[ \t]*MESSAGE[ \t]*(?:#.*)?\r?", re.I)
_LINE_VERSION = re.compile(r"""[ \t]*VERSION[ \t]+(?:"[^"]*"|'[^']*')[ \t]*(?:#.*)?\r?""", re.I)
_LINE_CONTENT = re.compile(r"[ \t]*(?:#.*)?\r?")


def split_messages(text: str, fmt: str) -> list[Message]:
    """The messages of a message log in ``fmt`` (one of :data:`MESSAGE_LOGS`' values), per the draft's "Message
    delimiters": a delimiter ends the current message, also an empty one; the end of the text ends the last one
    only when it holds a statement, so that a final delimiter makes no empty message. A delimiter inside a graph
    block splits nothing: the message around it gets that problem."""
    if fmt in ("ntriples-messages", "nquads-messages"):
        return _split_lines(text)
    messages: list[Message] = []
    directives: dict[str, str] = {}
    current = Message(1, 0, 0)
    depth = 0
    tokens = _TOKEN.finditer(text)
    for m in tokens:
        kind = m.lastgroup
        if kind == "ws":
            continue
        word = m.group() if kind == "word" else ""
        upper = word.upper()
        if upper == "MESSAGE" or word.lower() == "@message":
            if depth > 0:
                current.problem = current.problem or ("a message delimiter inside a graph block", m.start())
                continue
            after = m.end()
            missing_dot = False
            if word.startswith("@"):
                nxt = _next_significant(tokens)
                if nxt is not None and nxt.lastgroup == "dot":
                    after = nxt.end()
                else:
                    missing_dot = True
                    after = nxt.start() if nxt is not None else len(text)
            current.end = m.start()
            messages.append(current)
            current = Message(current.number + 1, after, after, header=_header(directives))
            if missing_dot:
                current.problem = ("@message without its '.' (the delimiter is '@message .')", m.start())
                current.empty = False
                if nxt is not None and nxt.lastgroup == "lbrace":
                    depth += 1
            continue
        if depth == 0 and (upper in _DIRECTIVES or word.lower() in ("@prefix", "@base", "@version")):
            start, end, directive_text = _directive(tokens, m, text)
            if upper == "VERSION" or word.lower() == "@version":
                current.blank.append((start, end))
                continue
            current.directives = True
            if current.first is None:
                current.first = start
            if _well_formed(directive_text):  # (a malformed one is its own message's problem only)
                key = "base" if upper == "BASE" or word.lower() == "@base" else "prefix " + directive_text.split()[1]
                directives[key] = directive_text
            continue
        if current.empty:
            current.empty, current.first = False, m.start()
        if kind == "lbrace":
            depth += 1
        elif kind == "rbrace":
            depth = max(0, depth - 1)
    current.end = len(text)
    if not current.empty:
        messages.append(current)
    _set_lines(text, messages)
    return messages


def _next_significant(tokens: Iterator[re.Match]) -> re.Match | None:
    for m in tokens:
        if m.lastgroup != "ws":
            return m
    return None


def _directive(tokens: Iterator[re.Match], first: re.Match, text: str) -> tuple[int, int, str]:
    """A PREFIX / BASE / VERSION directive from its keyword: its span and its text on one line (the SPARQL forms
    take their fixed number of tokens, the ``@`` forms run to their '.')."""
    word = first.group()
    parts, end = [word], first.end()
    if word.startswith("@"):
        while (m := _next_significant(tokens)) is not None:
            parts.append(m.group())
            end = m.end()
            if m.lastgroup in ("dot", "lbrace", "rbrace"):
                break
    else:
        for _ in range(_DIRECTIVES[word.upper()]):
            m = _next_significant(tokens)
            if m is None:
                break
            parts.append(m.group())
            end = m.end()
    return first.start(), end, " ".join(parts)


@functools.lru_cache(maxsize=256)
def _well_formed(directive: str) -> bool:
    """Whether a PREFIX / BASE directive parses alone (one a later message's header may carry)."""
    try:
        list(ox.parse(directive.encode("utf-8"), format=ox.RdfFormat.TURTLE, base_iri="http://example.org/"))
    except (SyntaxError, ValueError):
        return False
    return True


def _header(directives: dict[str, str]) -> str:
    return " ".join(directives.values())


def _split_lines(text: str) -> list[Message]:
    """:func:`split_messages` for N-Triples / N-Quads, a line format: a delimiter is a line of its own."""
    messages: list[Message] = []
    current = Message(1, 0, 0)
    offset = 0
    for line in text.split("\n"):
        end = offset + len(line)
        if _LINE_DELIMITER.fullmatch(line):
            current.end = offset
            messages.append(current)
            current = Message(current.number + 1, end + 1, end + 1)
        elif _LINE_VERSION.fullmatch(line):
            current.blank.append((offset, end))
        elif not _LINE_CONTENT.fullmatch(line) and current.empty:
            current.empty, current.first = False, offset
        offset = end + 1
    current.end = len(text)
    if not current.empty:
        messages.append(current)
    _set_lines(text, messages)
    return messages


def _set_lines(text: str, messages: list[Message]) -> None:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    for msg in messages:
        at = min(msg.start, len(text))
        i = bisect.bisect_right(starts, at) - 1
        msg.line, msg.column = i + 1, at - starts[i]
        first = msg.first if msg.first is not None else at
        msg.first_line = bisect.bisect_right(starts, first) - 1 + 1


def message_text(text: str, msg: Message) -> str:
    """A message's text as one document: its header on the first line, then its own text from the second line on,
    at its columns (everything of its first line before it, and the spans it blanks, as spaces)."""
    body = " " * msg.column + text[msg.start:msg.end]
    for start, end in msg.blank:
        lo, hi = start - msg.start + msg.column, end - msg.start + msg.column
        body = body[:lo] + re.sub(r"[^\n]", " ", body[lo:hi]) + body[hi:]
    return msg.header + "\n" + body


# ------------------------------------------------------------------------------------------------ conversion


@dataclass
class Converted:
    """A converted stream: ``nquads`` (the elements as N-Quads, one quad a line), ``origins`` (for each message
    that gave quads: the converted line its quads start at, its line in the source and its number), ``errors``
    (the problems, in source order), ``messages`` (how many messages the source holds)."""

    nquads: bytes
    origins: list[tuple[int, int, int]]
    errors: list[DataError]
    messages: int

    def origin(self, line: int) -> tuple[int, int] | None:
        """The source line and the message number of a line of ``nquads`` (None: before the first)."""
        i = bisect.bisect_right([o[0] for o in self.origins], line) - 1
        return (self.origins[i][1], self.origins[i][2]) if i >= 0 else None


class _Builder:
    """Quads gathered message by message, with their origins and the problems."""

    def __init__(self, file: str, pred: str, element_base: str, datetimes: bool, end_pred: str | None = None) -> None:
        self.file, self.element_base, self.datetimes = file, element_base, datetimes
        self.pred = ox.NamedNode(pred)
        self.end_pred = ox.NamedNode(end_pred) if end_pred is not None else None
        self.quads: list[ox.Quad] = []
        self.origins: list[tuple[int, int, int]] = []
        self.errors: list[DataError] = []

    def problem(self, reason: str, line: int | None, column: int | None, number: int | None) -> None:
        prefix = f"message {number}: " if number is not None else ""
        self.errors.append(DataError(prefix + reason, file=self.file, line=line, column=column))

    def message(self, quads: list[ox.Quad], line: int, number: int, *, scoped: bool = True) -> None:
        """One message's quads as one element (see the module's docstring); ``scoped`` False: a JSON-LD document's
        item, whose quads are taken as they are (its named graphs are the elements)."""
        if not quads:
            return
        if not scoped:
            self.origins.append((len(self.quads) + 1, line, number))
            self.quads.extend(self._datetime(q) for q in quads)
            return
        if scoped:
            quads = _fresh_blank_nodes(quads)
        if self.datetimes:
            quads = [self._datetime(q) for q in quads]
        named = {q.graph_name for q in quads if not isinstance(q.graph_name, ox.DefaultGraph)}
        if len(named) > 1:
            self.problem(f"{len(named)} named graphs: a message is one stream element, one named graph (with its "
                         "timestamp in the default graph) or triples", line, None, number)
            return
        if not named:
            element = ox.NamedNode(f"{self.element_base}{number}")
            stamps = list(dict.fromkeys(q.object for q in quads if q.predicate == self.pred))
            quads = [ox.Quad(q.subject, q.predicate, q.object, element) for q in quads]
            quads += [ox.Quad(element, self.pred, stamp, ox.DefaultGraph()) for stamp in stamps]
            if self.end_pred is not None:
                ends = dict.fromkeys(q.object for q in quads if q.predicate == self.end_pred)
                quads += [ox.Quad(element, self.end_pred, end, ox.DefaultGraph()) for end in ends]
        self.origins.append((len(self.quads) + 1, line, number))
        self.quads.extend(quads)

    def _datetime(self, q: ox.Quad) -> ox.Quad:
        """A timestamp that JSON gives as a plain string in the form of an xsd:dateTime, typed as one."""
        o = q.object
        if (q.predicate == self.pred and isinstance(o, ox.Literal) and o.language is None
                and o.datatype.value.endswith("#string") and is_datetime_shaped(o.value)):
            return ox.Quad(q.subject, q.predicate, ox.Literal(o.value, datatype=ox.NamedNode(XSD_DATETIME)),
                           q.graph_name)
        return q

    def result(self, messages: int) -> Converted:
        data = ox.serialize(self.quads, format=ox.RdfFormat.N_QUADS) if self.quads else b""
        self.errors.sort(key=lambda e: (e.line or 0, e.column or 0))
        return Converted(data, self.origins, self.errors, messages)


def _fresh_blank_nodes(quads: list[ox.Quad]) -> list[ox.Quad]:
    """The quads with each blank node replaced by a new one (the same label in one message: the same new node), so
    that a label used in two messages names two nodes (pyoxigraph keeps a document's labels)."""
    fresh: dict = {}

    def term(t):
        if isinstance(t, ox.BlankNode):
            if t not in fresh:
                fresh[t] = ox.BlankNode()
            return fresh[t]
        if isinstance(t, ox.Triple):
            return ox.Triple(term(t.subject), t.predicate, term(t.object))
        return t

    return [ox.Quad(term(q.subject), q.predicate, term(q.object),
                    term(q.graph_name) if isinstance(q.graph_name, ox.BlankNode) else q.graph_name) for q in quads]


def convert(text: str, fmt: str, *, file: str, pred: str, element_base: str, base_iri: str | None = None,
            end_pred: str | None = None) -> Converted:
    """A stream ``text`` in the converted format ``fmt`` (:data:`STREAM_FORMATS`) as N-Quads. ``pred``: the
    timestamp predicate (an IRI); ``end_pred``: the predicate of the triple that ends an element's validity (its
    objects in a message of triples are the minted element's end triples, as its timestamps are);
    ``element_base``: the prefix of minted element IRIs (the message's number follows); ``file``: how problems
    name the source. Raises nothing for bad input: its problems are in ``errors`` (DataError)."""
    if fmt == "ndjsonld":
        return _convert_ndjsonld(text, _Builder(file, pred, element_base, True, end_pred), base_iri)
    if fmt == "jsonld":
        return _convert_jsonld(text, _Builder(file, pred, element_base, True, end_pred), base_iri)
    out = _Builder(file, pred, element_base, False, end_pred)
    count = 0
    for msg, quads, problem in parse_messages(text, fmt, base_iri):
        count = msg.number
        if problem is not None:
            out.problem(*problem, msg.number)
        elif quads:
            out.message(quads, msg.first_line, msg.number)
    return out.result(count)


def parse_messages(text: str, fmt: str, base_iri: str | None = None
                   ) -> Iterator[tuple[Message, list[ox.Quad], tuple[str, int | None, int | None] | None]]:
    """The RDF datasets of a message log in ``fmt`` (a value of :data:`MESSAGE_LOGS`), one per message in log
    order: ``(message, quads, None)``, or ``(message, [], (reason, line, column))`` for a message that cannot be
    read. Blank node labels are pyoxigraph's (the same label in two messages gives equal terms here:
    :func:`convert` makes them apart)."""
    for msg in split_messages(text, fmt):
        if msg.problem is not None:
            yield msg, [], (msg.problem[0], *_line_column(text, msg.problem[1]))
            continue
        if msg.empty and not msg.directives:
            yield msg, [], None
            continue
        source = message_text(text, msg)
        try:
            quads = list(ox.parse(source.encode("utf-8"), format=_OX[fmt], base_iri=base_iri))
        except SyntaxError as exc:
            reason, line, column = document_problem(exc, source)
            line = msg.line + line - 2 if line is not None and line >= 2 else msg.first_line
            yield msg, [], (reason, line, column)
            continue
        except ValueError as exc:  # a bad base IRI, text pyoxigraph cannot take
            yield msg, [], (str(exc), msg.first_line, None)
            continue
        yield msg, quads, None


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _parse_json_ld(doc, base_iri: str | None) -> list[ox.Quad]:
    return list(ox.parse(json.dumps(doc).encode("utf-8"), format=ox.RdfFormat.JSON_LD, base_iri=base_iri))


def _convert_ndjsonld(text: str, out: _Builder, base_iri: str | None) -> Converted:
    """NDJSON-LD (the draft's section "JSON-LD"): a context message ``{"@context": C}`` sets the active context, an
    empty object is an empty message, any other object is a data message read as ``{"@context": C, "@graph": L}``
    (``L`` alone while no context is set). A line that is no JSON object is a problem; it changes no context."""
    lines = text.split("\n")
    if lines and lines[-1].strip() == "":
        lines.pop()  # the newline that ends the last line
    context = None
    number = 0
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            out.problem("a blank line (NDJSON-LD: one JSON object a line)", i, None, None)
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            out.problem(f"not JSON: {exc.msg}", i, exc.colno, None)
            continue
        except RecursionError:
            out.problem("not JSON: nested too deeply", i, None, None)
            continue
        if not isinstance(value, dict):
            out.problem(f"a JSON {type(value).__name__.replace('dict', 'object')}, not an object "
                        "(NDJSON-LD: one JSON object a line)", i, None, None)
            continue
        if list(value) == ["@context"]:
            context = value["@context"]
            continue
        number += 1
        if not value:
            continue
        doc = value if context is None else {"@context": context, "@graph": value}
        try:
            quads = _parse_json_ld(doc, base_iri)
        except (SyntaxError, ValueError, RecursionError) as exc:
            out.problem(f"not JSON-LD: {_json_ld_reason(exc)}", i, None, number)
            continue
        out.message(quads, i, number)
    return out.result(number)


def _json_ld_reason(exc: Exception) -> str:
    text = str(exc) if not isinstance(exc, RecursionError) else "nested too deeply"
    return re.sub(r"^Parser error at line \d+ column \d+: ", "", text)


def _convert_jsonld(text: str, out: _Builder, base_iri: str | None) -> Converted:
    """A JSON-LD document whose named graphs are the elements: a top-level array, or an object with ``@context``
    and an ``@graph`` array, is read item by item (each with the document's context), so that a bad item is
    reported at its line and the others load; blank node labels keep their meaning across items (pyoxigraph keeps
    them), as in one JSON-LD document. Any other document is read whole."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as exc:
        out.problem(f"not JSON: {exc.msg}", exc.lineno, exc.colno, None)
        return out.result(0)
    except RecursionError:
        out.problem("not JSON: nested too deeply", None, None, None)
        return out.result(0)
    items = _items(text, whole)
    context = whole.get("@context") if isinstance(whole, dict) else None
    for number, (offset, item) in enumerate(items, start=1):
        line, _ = _line_column(text, offset)
        doc = item if context is None else {"@context": context, "@graph": item}
        try:
            quads = _parse_json_ld(doc, base_iri)
        except (SyntaxError, ValueError, RecursionError) as exc:
            out.problem(f"not JSON-LD: {_json_ld_reason(exc)}", line, None, None)
            continue
        out.message(quads, line, number, scoped=False)
    return out.result(len(items))


def _items(text: str, whole) -> list[tuple[int, object]]:
    """The items of a JSON-LD stream document with their offsets: the top-level array's, the top-level object's
    ``@graph`` array's (when its only other key is ``@context``), or the document itself."""
    decoder = json.JSONDecoder()
    pos = _skip(text, 0)
    if isinstance(whole, list):
        return _array(decoder, text, pos)
    if isinstance(whole, dict) and isinstance(whole.get("@graph"), list) and set(whole) <= {"@context", "@graph"}:
        pos = _skip(text, pos + 1)
        while text[pos] != "}":
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, _skip(text, pos) + 1)  # the ':'
            if key == "@graph":
                return _array(decoder, text, pos)
            _, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos)
            pos = _skip(text, pos + 1) if text[pos] == "," else pos
    return [(pos, whole)]


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _array(decoder: json.JSONDecoder, text: str, pos: int) -> list[tuple[int, object]]:
    out = []
    pos = _skip(text, pos + 1)
    while text[pos] != "]":
        value, end = decoder.raw_decode(text, pos)
        out.append((pos, value))
        pos = _skip(text, end)
        pos = _skip(text, pos + 1) if text[pos] == "," else pos
    return out
