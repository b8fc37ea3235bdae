"""JSON and CSV records mapped to stream elements: a small YARRRML-like mapping language (docs/streams.md,
"JSON and CSV records: mappings").

A mapping file (YAML, or JSON, which YAML reads) says how one record of a CSV file, a JSON document or a JSON Lines
file becomes one stream element: the triples of the element's named graph (YARRRML's ``prefixes`` and
``mappings``, each with a subject template ``s`` and ``po`` pairs), the element's name (``element``, a template)
and its timestamp (``timestamp``: a field and its format). References are written ``$(field)`` as in YARRRML; for
JSON a field is a dotted path (``$(location.room)``), for CSV a column name.

* :func:`load_mapping` / :func:`parse_mapping`: the file's text -> :class:`Mapping`, every key checked; a problem
  raises :class:`MappingError` naming the file, the line and the key.
* :func:`map_record`: one record (a dict) -> the element's N-Quads lines (the values put in an IRI template
  percent-encoded as RML's "IRI-safe" form; a reference to a missing or null field skips its triple, as RML does).
  A record without a (valid) timestamp raises :class:`RecordError`: the callers reject that record, naming file,
  line and record number, and go on with the others.
* :func:`records`: the records of a text (``csv``, ``json``, ``jsonl``) with their line and number;
  :func:`convert_records`: a whole text -> :class:`~rspark.spark.loading.messages.Converted` (on the driver: a
  push, a small live file); :func:`map_lines`: the per-partition function the replay runs on Spark's executors.

Pure Python (PyYAML, pyoxigraph for the terms' syntax); no Spark here.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import pyoxigraph as ox
import yaml

from rspark.errors import DataError, InputError
from rspark.model.timestamps import datetime_millis, format_millis
from rspark.spark.loading.messages import Converted
from rspark.spark.loading.payload import RECORD_FORMATS

__all__ = ["Mapping", "MappingError", "RecordError", "RECORD_FORMATS", "TIMESTAMP_FORMATS", "convert_records",
           "load_mapping", "map_lines", "map_record", "parse_mapping", "record_format", "records"]

_FORMAT_ALIASES = {"csv": "csv", "json": "json", "jsonl": "jsonl", "ndjson": "jsonl", "json-lines": "jsonl"}
_EXTENSIONS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}
TIMESTAMP_FORMATS = ("datetime", "epoch-s", "epoch-ms", "number")
_TS_ALIASES = {"datetime": "datetime", "xsd:datetime": "datetime", "iso8601": "datetime", "epoch-s": "epoch-s",
               "epoch-seconds": "epoch-s", "epoch-ms": "epoch-ms", "epoch-millis": "epoch-ms", "number": "number"}
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
DEFAULT_PREFIXES = {"rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
                    "rdfs": "http://www.w3.org/2000/01/rdf-schema#", "xsd": XSD}
_TOP_KEYS = ("prefixes", "mappings", "element", "timestamp", "iterator", "csv")
_MAPPING_KEYS = {"s": "s", "subject": "s", "subjects": "s", "po": "po", "predicateobjects": "po"}
_REFUSED = {  # YARRRML keys rspark's mappings do not read: refused with their name, never ignored
    "sources": "the records come from the file or the push the mapping is given with; `iterator` is their path",
    "graphs": "every triple of a record is in its element's named graph (`element`)",
    "g": "every triple of a record is in its element's named graph (`element`)",
    "condition": "conditions are not supported", "conditions": "conditions are not supported",
    "functions": "functions are not supported", "fn": "functions are not supported",
    "targets": "the triples go to the stream", "authors": "not read", "base": "not supported: IRIs are absolute",
    "external": "external references are not supported",
}
_REF = re.compile(r"\$\(([^()]*)\)")
_DATATYPE_OK = {"iri", "literal"}


class MappingError(InputError):
    """A mapping file that cannot be used: the message names the file, the line and the key."""

    def __init__(self, reason: str, *, file: str, line: int | None = None, key: str | None = None) -> None:
        where = file + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + (f"{key}: " if key else "") + reason)
        self.file, self.line, self.key, self.reason = file, line, key, reason


class RecordError(ValueError):
    """A record that gives no element (no timestamp, a bad one, a field that is no value): the reason."""


# ----------------------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Template:
    """A term template: ``parts`` alternate constant text and references (a reference: a tuple of path keys)."""

    parts: tuple
    text: str  # as written, for messages

    @property
    def refs(self) -> list[tuple[str, ...]]:
        return [p for p in self.parts if isinstance(p, tuple)]

    @property
    def single_ref(self) -> bool:
        return len(self.parts) == 1 and isinstance(self.parts[0], tuple)


@dataclass(frozen=True)
class ObjectMap:
    template: Template
    kind: str  # "iri" or "literal"
    datatype: str | None = None
    language: str | None = None


@dataclass(frozen=True)
class TriplesMap:
    name: str
    subject: Template
    po: tuple  # of (predicate IRI, ObjectMap)


@dataclass(frozen=True)
class Mapping:
    """A parsed mapping file (see the module's docstring and docs/streams.md)."""

    file: str
    maps: tuple
    timestamp: tuple  # the timestamp field's path
    timestamp_text: str
    timestamp_format: str
    element: Template | None = None
    iterator: tuple | None = None  # (path before [*], path after [*] or None when no [*])
    delimiter: str = ","
    columns: tuple | None = None  # CSV without a header line: its columns
    lines: dict = field(default_factory=dict, compare=False, repr=False)  # reference -> line (for messages)

    def references(self) -> list[tuple[tuple[str, ...], str]]:
        """Every field the mapping reads, with where it is read (a key of the file)."""
        out = [(self.timestamp, "timestamp.field")]
        if self.element is not None:
            out += [(r, "element") for r in self.element.refs]
        for m in self.maps:
            out += [(r, f"mappings.{m.name}.s") for r in m.subject.refs]
            out += [(r, f"mappings.{m.name}.po") for _, o in m.po for r in o.template.refs]
        return out


def record_format(format: str | None, path: str = "") -> str:
    """The record format of a mapped stream: ``format`` (``csv``, ``json``, ``jsonl``; ``ndjson``) or else the
    path's extension (.csv, .json, .jsonl, .ndjson). Raises :class:`InputError` when neither tells."""
    if format is not None:
        key = format.strip().lower()
        if key in _FORMAT_ALIASES:
            return _FORMAT_ALIASES[key]
        raise InputError(f"a mapped stream's format is csv, json or jsonl, not {format!r}")
    name = str(path).lower()
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    raise InputError(f"{path}: cannot tell a mapped stream's record format from its extension (.csv, .json, .jsonl, "
                     ".ndjson): give the format (csv, json or jsonl)")


# ----------------------------------------------------------------------------------------------- the parser


class _Node:
    """A YAML value with its line (1-based) and key path, for messages."""

    __slots__ = ("value", "line", "key")

    def __init__(self, value, line: int, key: str) -> None:
        self.value, self.line, self.key = value, line, key


def _nodes(node, loader, key: str) -> _Node:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        for k, v in node.value:
            name = loader.construct_object(k, deep=True)
            if not isinstance(name, str):
                raise _Problem(f"a key must be a name, not {name!r}", k.start_mark.line + 1, key)
            if name in out:
                raise _Problem(f"the key {name!r} is given twice", k.start_mark.line + 1, key)
            out[name] = _nodes(v, loader, f"{key}.{name}" if key else name)
        return _Node(out, line, key)
    if isinstance(node, yaml.SequenceNode):
        return _Node([_nodes(v, loader, f"{key}[{i}]") for i, v in enumerate(node.value)], line, key)
    return _Node(loader.construct_object(node, deep=True), line, key)


class _Problem(Exception):
    def __init__(self, reason: str, line: int | None, key: str | None) -> None:
        super().__init__(reason)
        self.reason, self.line, self.key = reason, line, key


def load_mapping(path: str) -> Mapping:
    """The mapping file at ``path`` (YAML or JSON), checked (:func:`parse_mapping`)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise MappingError(f"cannot read the mapping file: {exc.strerror or exc}", file=str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MappingError(f"invalid UTF-8 (byte 0x{data[exc.start]:02X})", file=str(path),
                           line=data.count(b"\n", 0, exc.start) + 1) from None
    return parse_mapping(text, file=str(path))


def parse_mapping(text: str, *, file: str = "mapping") -> Mapping:
    """A mapping file's text -> :class:`Mapping`; raises :class:`MappingError` (file, line, key) for the first
    problem: YAML that does not parse, an unknown or refused key, a value of the wrong kind, an undeclared prefix,
    a template that gives no valid IRI, a datatype or language tag that is not one."""
    try:
        loader = yaml.SafeLoader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
        if root is None:
            raise _Problem("the mapping file is empty", None, None)
        top = _nodes(root, loader, "")
        return _build(top, file)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = f"not YAML: {exc.problem or exc.context}"
        raise MappingError(reason, file=file, line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise MappingError(f"not YAML: {exc}", file=file) from None
    except RecursionError:
        raise MappingError("not YAML: nested too deeply", file=file) from None
    except _Problem as p:
        raise MappingError(p.reason, file=file, line=p.line, key=p.key or None) from None


def _expect(node: _Node, kind, what: str):
    if not isinstance(node.value, kind) or isinstance(node.value, bool) and kind is not bool:
        raise _Problem(f"expected {what}, not {_kind(node.value)}", node.line, node.key)
    return node.value


def _kind(value) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {value!r}"
    return f"{type(value).__name__} {value!r}"


def _build(top: _Node, file: str) -> Mapping:
    keys = _expect(top, dict, "a mapping of the keys prefixes, mappings, element, timestamp, iterator, csv")
    for name, node in keys.items():
        if name in _REFUSED:
            raise _Problem(f"not supported: {name} ({_REFUSED[name]})", node.line, name)
        if name not in _TOP_KEYS:
            raise _Problem(f"unknown key (expected one of {', '.join(_TOP_KEYS)})", node.line, name)
    for required in ("mappings", "timestamp"):
        if required not in keys:
            raise _Problem(f"the key {required!r} is missing", top.line, None)
    prefixes = dict(DEFAULT_PREFIXES)
    if "prefixes" in keys:
        for name, node in _expect(keys["prefixes"], dict, "a mapping of prefix names to IRIs").items():
            iri = _expect(node, str, "an IRI")
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*|", name) or name.endswith("."):
                raise _Problem("not a prefix name (a letter, then letters, digits, '_', '-', '.')", node.line,
                               node.key)
            _check_iri(iri, node)
            prefixes[name] = iri
    ts_node = keys["timestamp"]
    if isinstance(ts_node.value, str):
        ts_field, ts_format = _Node(ts_node.value, ts_node.line, "timestamp"), "datetime"
    else:
        ts = _expect(ts_node, dict, "a field name or a mapping with `field` and `format`")
        for name, node in ts.items():
            if name not in ("field", "format"):
                raise _Problem("unknown key (expected field, format)", node.line, node.key)
        if "field" not in ts:
            raise _Problem("the key 'field' is missing", ts_node.line, "timestamp")
        ts_field = ts["field"]
        ts_format = "datetime"
        if "format" in ts:
            fmt = _expect(ts["format"], str, "a timestamp format")
            ts_format = _TS_ALIASES.get(fmt.strip().lower())
            if ts_format is None:
                raise _Problem(f"unknown timestamp format {fmt!r} (expected datetime (xsd:dateTime), epoch-s, "
                               "epoch-ms, number)", ts["format"].line, ts["format"].key)
    ts_path = _path(_expect(ts_field, str, "a field name"), ts_field)
    element = None
    if "element" in keys:
        element = _template(keys["element"], prefixes, iri=True)
    iterator = None
    if "iterator" in keys:
        iterator = _iterator(keys["iterator"])
    delimiter, columns = ",", None
    if "csv" in keys:
        for name, node in _expect(keys["csv"], dict, "a mapping with delimiter and columns").items():
            if name == "delimiter":
                delimiter = _expect(node, str, "one character")
                if len(delimiter) != 1 or delimiter in '"\r\n':
                    raise _Problem(f"a delimiter is one character other than a quote or a line break, not "
                                   f"{delimiter!r}", node.line, node.key)
            elif name == "columns":
                cols = _expect(node, list, "a list of column names")
                columns = tuple(_expect(c, str, "a column name") for c in cols)
                if not columns or len(set(columns)) != len(columns):
                    raise _Problem("the columns are a non-empty list of distinct names", node.line, node.key)
            else:
                raise _Problem("unknown key (expected delimiter, columns)", node.line, node.key)
    maps = []
    for name, node in _expect(keys["mappings"], dict, "a mapping of triples maps by name").items():
        maps.append(_triples_map(name, node, prefixes))
    if not maps:
        raise _Problem("no triples map", keys["mappings"].line, "mappings")
    return Mapping(file=file, maps=tuple(maps), timestamp=ts_path, timestamp_text=ts_field.value,
                   timestamp_format=ts_format, element=element, iterator=iterator, delimiter=delimiter,
                   columns=columns)


def _path(text: str, node: _Node) -> tuple[str, ...]:
    """A field reference: a dotted path of keys (a CSV column name is one key: the whole text)."""
    if not text or not text.strip():
        raise _Problem("an empty field name", node.line, node.key)
    if any(ch in text for ch in "[]*$"):
        raise _Problem(f"a field is a name or a dotted path of names, not {text!r} (no [*], no $)", node.line,
                       node.key)
    return tuple(text.split(".")) if all(text.split(".")) else (text,)


def _iterator(node: _Node) -> tuple:
    text = _expect(node, str, "a record path such as $.readings[*]").strip()
    m = re.fullmatch(r"\$((?:\.[^.\[\]*$]+)*)(\[\*\])?((?:\.[^.\[\]*$]+)*)", text)
    if m is None or (m.group(3) and not m.group(2)):
        raise _Problem(f"a record path is $ then dotted keys with at most one [*] (such as $.readings[*]), not "
                       f"{text!r}", node.line, node.key)
    before = tuple(k for k in m.group(1).split(".") if k)
    after = tuple(k for k in m.group(3).split(".") if k) if m.group(2) else None
    return (before, after)


def _expand(text: str, prefixes: dict, node: _Node) -> str:
    """A prefixed name's expansion (``ex:sensor/`` -> ``http://example.org/sensor/``); an IRI as it is (also
    written ``<IRI>``); an undeclared prefix is a problem."""
    if text.startswith("<") and text.endswith(">"):
        return text[1:-1]
    m = re.match(r"([A-Za-z][A-Za-z0-9_.+-]*)?:", text)
    if m is None:
        return text
    name, rest = m.group(1) or "", text[m.end():]
    if name in prefixes and not rest.startswith("//"):
        return prefixes[name] + rest
    if rest.startswith("//") or name.lower() in _SCHEMES:
        return text
    raise _Problem(f"the prefix {name!r} is not declared (prefixes)", node.line, node.key)


_SCHEMES = {"http", "https", "urn", "file", "mailto", "tag", "data", "ftp", "did", "ni"}


def _check_iri(iri: str, node: _Node) -> None:
    if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", iri):
        raise _Problem(f"not an absolute IRI: {iri!r}", node.line, node.key)
    try:
        ox.NamedNode(iri)
    except ValueError as exc:
        raise _Problem(f"not a valid IRI: {iri!r} ({exc})", node.line, node.key) from None


def _split(text: str, node: _Node) -> tuple:
    parts: list = []
    pos = 0
    for m in _REF.finditer(text):
        if m.start() > pos:
            parts.append(text[pos:m.start()])
        parts.append(_path(m.group(1), node))
        pos = m.end()
    rest = text[pos:]
    if "$(" in rest:
        raise _Problem(f"a reference $( without its closing ) in {text!r}", node.line, node.key)
    if rest:
        parts.append(rest)
    return tuple(parts)


def _template(node: _Node, prefixes: dict, *, iri: bool) -> Template:
    raw = node.value
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise _Problem(f"expected a template (text with $(field) references), not {_kind(raw)}", node.line, node.key)
    text = str(raw)
    if iri:
        if text.startswith("$("):
            parts = _split(text, node)
        else:
            parts = _split(_expand(text, prefixes, node), node)
            # the constant parts with a sample value must give a valid IRI
            sample = "".join(p if isinstance(p, str) else "x" for p in parts)
            _check_iri(sample, node)
        return Template(parts, text)
    return Template(_split(text, node), text)


def _triples_map(name: str, node: _Node, prefixes: dict) -> TriplesMap:
    keys = _expect(node, dict, "a triples map (s, po)")
    seen: dict = {}
    for key, value in keys.items():
        if key in _REFUSED:
            raise _Problem(f"not supported: {key} ({_REFUSED[key]})", value.line, value.key)
        if key not in _MAPPING_KEYS:
            raise _Problem("unknown key (expected s (subject), po (predicateobjects))", value.line, value.key)
        if _MAPPING_KEYS[key] in seen:
            raise _Problem(f"{key} and {seen[_MAPPING_KEYS[key]]} say the same thing", value.line, value.key)
        seen[_MAPPING_KEYS[key]] = key
    if "s" not in seen:
        raise _Problem("the subject (s) is missing", node.line, node.key)
    s_node = keys[seen["s"]]
    if isinstance(s_node.value, str) and s_node.value.endswith("~blanknode") or s_node.value is None:
        raise _Problem("not supported: a blank node subject (an element's triples have IRI subjects)", s_node.line,
                       s_node.key)
    subject = _template(s_node, prefixes, iri=True)
    po = []
    if "po" in seen:
        for item in _expect(keys[seen["po"]], list, "a list of [predicate, object] pairs"):
            po.extend(_pair(item, prefixes))
    if not po:
        raise _Problem("no predicate-object pair (po)", node.line, node.key)
    return TriplesMap(name, subject, tuple(po))


def _predicate(node: _Node, prefixes: dict) -> str:
    text = _expect(node, str, "a predicate (an IRI or a prefixed name)")
    if text == "a":
        return RDF_TYPE
    if "$(" in text:
        raise _Problem("not supported: a predicate template (a predicate is a constant IRI)", node.line, node.key)
    iri = _expand(text, prefixes, node)
    _check_iri(iri, node)
    return iri


def _pair(item: _Node, prefixes: dict) -> list[tuple[str, ObjectMap]]:
    if isinstance(item.value, list):
        values = item.value
        if len(values) not in (2, 3):
            raise _Problem(f"a pair is [predicate, object] or [predicate, object, datatype or LANG~lang], not "
                           f"{len(values)} items", item.line, item.key)
        pred = _predicate(values[0], prefixes)
        extra = values[2] if len(values) == 3 else None
        return [(pred, _object(values[1], extra, None, prefixes, pred))]
    keys = _expect(item, dict, "a pair: [predicate, object] or {p: ..., o: ...}")
    for k, v in keys.items():
        if k not in ("p", "predicates", "o", "objects"):
            raise _Problem("unknown key (expected p (predicates), o (objects))", v.line, v.key)
    p_node = keys.get("p") or keys.get("predicates")
    o_node = keys.get("o") or keys.get("objects")
    if p_node is None or o_node is None:
        raise _Problem("a pair needs p and o", item.line, item.key)
    preds = [_predicate(n, prefixes) for n in (p_node.value if isinstance(p_node.value, list) else [p_node])]
    objs = o_node.value if isinstance(o_node.value, list) else [o_node]
    return [(p, _object(o, None, o, prefixes, p)) for p in preds for o in objs]


def _object(node: _Node, extra: _Node | None, full: _Node | None, prefixes: dict, pred: str) -> ObjectMap:
    datatype = language = None
    kind = None
    if isinstance(node.value, dict):  # {value: ..., datatype: ..., language: ..., type: iri|literal}
        keys = node.value
        for k, v in keys.items():
            if k not in ("value", "datatype", "language", "type"):
                raise _Problem("unknown key (expected value, datatype, language, type)", v.line, v.key)
        if "value" not in keys:
            raise _Problem("the key 'value' is missing", node.line, node.key)
        value = keys["value"]
        if "type" in keys:
            kind = _expect(keys["type"], str, "iri or literal")
            if kind not in _DATATYPE_OK:
                raise _Problem(f"a term type is iri or literal, not {kind!r}", keys["type"].line, keys["type"].key)
        if "datatype" in keys:
            datatype = _datatype(keys["datatype"], prefixes)
        if "language" in keys:
            language = _language(_expect(keys["language"], str, "a language tag"), keys["language"])
        node = value
    text = node.value
    if isinstance(text, str) and text.endswith("~iri"):
        kind, node = "iri", _Node(text[:-4], node.line, node.key)
    elif isinstance(text, str) and text.endswith("~literal"):
        kind, node = "literal", _Node(text[:-8], node.line, node.key)
    if extra is not None:
        e = _expect(extra, str, "a datatype or LANG~lang")
        if e.endswith("~lang"):
            language = _language(e[:-5], extra)
        else:
            datatype = _datatype(extra, prefixes)
    if kind is None:
        kind = "iri" if pred == RDF_TYPE else "literal"
    if kind == "iri" and (datatype or language):
        raise _Problem("an IRI object has no datatype or language", node.line, node.key)
    if datatype and language:
        raise _Problem("a literal has a datatype or a language, not both", node.line, node.key)
    return ObjectMap(_template(node, prefixes, iri=kind == "iri"), kind, datatype, language)


def _datatype(node: _Node, prefixes: dict) -> str:
    text = _expect(node, str, "a datatype IRI")
    iri = _expand(text, prefixes, node)
    _check_iri(iri, node)
    return iri


def _language(tag: str, node: _Node) -> str:
    try:
        ox.Literal("x", language=tag)
    except ValueError:
        raise _Problem(f"not a language tag: {tag!r}", node.line, node.key) from None
    return tag


# ------------------------------------------------------------------------------------------- records -> RDF


_IRI_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_UCS = ((0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF), (0x10000, 0x1FFFD), (0x20000, 0x2FFFD),
        (0x30000, 0x3FFFD), (0x40000, 0x4FFFD), (0x50000, 0x5FFFD), (0x60000, 0x6FFFD), (0x70000, 0x7FFFD),
        (0x80000, 0x8FFFD), (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
        (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD))


def iri_safe(value: str) -> str:
    """R2RML's IRI-safe form (RML's for IRI templates): every character but RFC 3987's iunreserved ones (ASCII
    letters and digits, ``-._~``, and the ucschar ranges) percent-encoded as its UTF-8 bytes."""
    out = []
    for ch in value:
        if ch in _IRI_SAFE:
            out.append(ch)
            continue
        code = ord(ch)
        if code >= 0xA0 and any(lo <= code <= hi for lo, hi in _UCS):
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    return "".join(out)


_MISSING = object()


def _lookup(record, path: tuple[str, ...]):
    if isinstance(record, dict) and len(path) > 1 and ".".join(path) in record:
        return record[".".join(path)]  # a CSV column or a JSON key whose name holds dots
    value = record
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _text(value, path: tuple[str, ...]) -> str | None:
    """A field's value as text; None: missing (null, absent, an empty CSV cell)."""
    if value is _MISSING or value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "INF" if value > 0 else "-INF"
        return repr(value)
    kind = "an object" if isinstance(value, dict) else "an array" if isinstance(value, list) else type(value).__name__
    raise RecordError(f"the field {'.'.join(path)!r} is {kind}, not a value (the record path, `iterator`, reaches "
                      "array items)")


def _fill(t: Template, record, iri: bool) -> str | None:
    out = []
    for part in t.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        value = _text(_lookup(record, part), part)
        if value is None or value == "" and record_is_csv(record):
            return None
        out.append(iri_safe(value) if iri and not t.single_ref else value)
    return "".join(out)


def record_is_csv(record) -> bool:
    return isinstance(record, _CsvRecord)


class _CsvRecord(dict):
    """A CSV record: an empty cell is a missing value (no triple), as JSON's null."""


def _iri(t: Template, record) -> str | None:
    value = _fill(t, record, True)
    if value is None:
        return None
    if t.single_ref and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", value):
        raise RecordError(f"the field {'.'.join(t.parts[0])!r} is no absolute IRI: {value!r}")
    try:
        ox.NamedNode(value)
    except ValueError:
        raise RecordError(f"{t.text!r} gives no valid IRI: {value!r}") from None
    return "<" + value + ">"


_NATURAL = {bool: XSD + "boolean", int: XSD + "integer", float: XSD + "double"}


def _literal(o: ObjectMap, record) -> str | None:
    text = _fill(o.template, record, False)
    if text is None:
        return None
    datatype = o.datatype
    if datatype is None and o.language is None and o.template.single_ref:
        datatype = _NATURAL.get(type(_lookup(record, o.template.parts[0])))
    try:
        if o.language is not None:
            lit = ox.Literal(text, language=o.language)
        elif datatype is not None:
            lit = ox.Literal(text, datatype=ox.NamedNode(datatype))
        else:
            lit = ox.Literal(text)
    except (ValueError, TypeError) as exc:
        raise RecordError(f"{o.template.text!r} gives no literal: {exc}") from None
    return str(lit)


def timestamp_literal(mapping: Mapping, record) -> str:
    """The element's timestamp literal (N-Quads) from the record's timestamp field; raises :class:`RecordError`
    for a record without one or with a bad one."""
    name = mapping.timestamp_text
    raw = _lookup(record, mapping.timestamp)
    if raw is _MISSING or raw is None or raw == "":
        raise RecordError(f"no timestamp (the field {name!r} is missing)")
    if isinstance(raw, bool) or isinstance(raw, dict | list):
        raise RecordError(f"the timestamp {name!r} is {_kind(raw)}, not a {mapping.timestamp_format} timestamp")
    fmt = mapping.timestamp_format
    text = raw if isinstance(raw, str) else _text(raw, mapping.timestamp)
    text = text.strip()
    try:
        if fmt == "datetime":
            if not isinstance(raw, str):
                raise ValueError("a number")
            datetime_millis(text)
            return f'"{text}"^^<{XSD}dateTime>'
        if fmt == "number":
            if not re.fullmatch(r"[+-]?\d+", text):
                raise ValueError("not an integer")
            return f'"{int(text)}"^^<{XSD}integer>'
        if fmt == "epoch-ms":
            if not re.fullmatch(r"[+-]?\d+", text):
                raise ValueError("not an integer")
            millis = int(text)
        else:  # epoch-s: seconds, at most millisecond precision
            seconds = Decimal(text)
            if not seconds.is_finite():
                raise ValueError("not a number")
            millis = seconds * 1000
            if millis != millis.to_integral_value():
                raise ValueError("finer than a millisecond")
            millis = int(millis)
        if abs(millis) > 253_402_300_799_999:  # beyond year 9999
            raise ValueError("out of range")
        return f'"{format_millis(millis)}"^^<{XSD}dateTime>'
    except (ValueError, InvalidOperation) as exc:
        reason = str(exc) if isinstance(exc, ValueError) and str(exc) in (
            "a number", "not an integer", "not a number", "finer than a millisecond", "out of range") else "invalid"
        raise RecordError(f"bad timestamp {name!r}: {raw!r} is no {fmt} timestamp ({reason})") from None


def map_record(mapping: Mapping, record, element: str, pred: str) -> list[str]:
    """One record -> its element's N-Quads lines: the triples of every triples map in the named graph
    ``element`` (the mapping's ``element`` template's IRI when it has one; else ``element``), then
    ``<element> <pred> timestamp`` in the default graph. A triple one of whose references is missing is skipped.
    Raises :class:`RecordError` for a record without a valid timestamp, a field that is an object or an array, a
    template that gives no valid IRI, or a record that gives no triple."""
    stamp = timestamp_literal(mapping, record)
    if mapping.element is not None:
        g = _iri(mapping.element, record)
        if g is None:
            raise RecordError(f"no element name (the element template {mapping.element.text!r} reads a missing "
                              "field)")
    else:
        g = "<" + element + ">"
    lines: dict[str, None] = {}
    for m in mapping.maps:
        s = _iri(m.subject, record)
        if s is None:
            continue
        for p, o in m.po:
            term = _iri(o.template, record) if o.kind == "iri" else _literal(o, record)
            if term is not None:
                lines[f"{s} <{p}> {term} {g} .\n"] = None
    if not lines:
        raise RecordError("no triple (every triple reads a missing field)")
    lines[f"{g} <{pred}> {stamp} .\n"] = None
    return list(lines)


# ------------------------------------------------------------------------------------------------ record sources


@dataclass
class Record:
    number: int  # 1-based, in the source's order
    line: int | None
    value: object = None
    problem: str | None = None
    name: str = ""  # the default element name's suffix


def _iterate(mapping: Mapping, doc, line: int | None, start: int, label: str) -> Iterator[Record]:
    """The records the mapping's record path reaches in one JSON value."""
    if mapping.iterator is None:
        yield _json_record(doc, start, line, label)
        return
    before, after = mapping.iterator
    value = doc
    for key in before:
        if not isinstance(value, dict) or key not in value:
            yield Record(start, line, problem=f"the record path {_path_text(mapping)} finds nothing here "
                         f"(no key {key!r})", name=label)
            return
        value = value[key]
    if after is None:
        yield _json_record(value, start, line, label)
        return
    if not isinstance(value, list):
        yield Record(start, line, problem=f"the record path {_path_text(mapping)} finds {_kind(value)}, not an "
                     "array", name=label)
        return
    for i, item in enumerate(value):
        for key in after:
            if not isinstance(item, dict) or key not in item:
                item = _MISSING
                break
            item = item[key]
        sub = f"{label}.{i + 1}" if label else str(i + 1)
        if item is _MISSING:
            yield Record(start + i, line, problem=f"item {i + 1} of the record path {_path_text(mapping)} has no "
                         f"{'.'.join(after)!r}", name=sub)
        else:
            yield _json_record(item, start + i, line, sub)


def _path_text(mapping: Mapping) -> str:
    before, after = mapping.iterator
    text = "$" + "".join("." + k for k in before)
    if after is not None:
        text += "[*]" + "".join("." + k for k in after)
    return text


def _json_record(value, number: int, line: int | None, label: str) -> Record:
    if not isinstance(value, dict):
        return Record(number, line, problem=f"a record is a JSON object, not {_kind(value)}", name=label)
    return Record(number, line, value, name=label)


def csv_header(line: str, mapping: Mapping, file: str) -> tuple[str, ...]:
    """The columns of a CSV file from its header line (a BOM dropped); raises :class:`InputError` when a column
    the mapping reads is not there."""
    try:
        columns = tuple(next(csv.reader([line.lstrip("\ufeff").rstrip("\r\n")], delimiter=mapping.delimiter), []))
    except csv.Error as exc:  # e.g. a carriage return inside the line
        raise InputError(f"{file}: the CSV header is not CSV: {exc}") from None
    check_columns(columns, mapping, file)
    return columns


def check_columns(columns: tuple, mapping: Mapping, file: str) -> None:
    have = set(columns)
    for path, key in mapping.references():
        name = ".".join(path)
        if name not in have:
            raise InputError(f"{file}: the mapping {mapping.file} reads the column {name!r} ({key}), which the "
                             f"CSV header does not have (its columns: {', '.join(columns) or 'none'})")


def csv_record(line: str, number: int, line_no: int, columns: tuple, delimiter: str) -> Record:
    """One CSV line as a record (a CSV record is one line: a quoted field holding a line break is refused)."""
    text = line.rstrip("\r\n")
    if text.count('"') % 2:
        return Record(number, line_no, problem="an unclosed quote (a CSV record is one line: a quoted field "
                      "cannot hold a line break)", name=str(number))
    try:
        fields = next(csv.reader([text], delimiter=delimiter, strict=True), [])
    except csv.Error as exc:
        return Record(number, line_no, problem=f"not CSV: {exc}", name=str(number))
    if len(fields) != len(columns):
        return Record(number, line_no, problem=f"{len(fields)} fields where the header has {len(columns)}",
                      name=str(number))
    return Record(number, line_no, _CsvRecord(zip(columns, fields)), name=str(number))


def json_line_records(mapping: Mapping, line: str, line_no: int, number: int) -> list[Record]:
    """The records of one JSON Lines line."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return [Record(number, line_no, problem=f"not JSON: {exc.msg} (column {exc.colno})", name=str(number))]
    except RecursionError:
        return [Record(number, line_no, problem="not JSON: nested too deeply", name=str(number))]
    return list(_iterate(mapping, value, line_no, number, str(line_no)))


def records(text: str, fmt: str, mapping: Mapping, *, file: str) -> Iterator[Record]:
    """The records of a whole text in ``fmt`` (csv, json, jsonl), numbered in order, each with its line (for a
    JSON document: None) or its problem. Raises :class:`InputError` for a CSV header without the columns the
    mapping reads, a JSON document that does not parse."""
    if fmt == "json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"not JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno) from None
        except RecursionError:
            raise DataError("not JSON: nested too deeply", file=file) from None
        n = 0
        for rec in _iterate(mapping, doc, None, 1, ""):
            n += 1
            rec.number, rec.name = n, rec.name or str(n)
            yield rec
        return
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = 0
    if fmt == "csv":
        if mapping.columns is not None:
            columns = mapping.columns
            check_columns(columns, mapping, file)
        else:
            if not lines:
                return
            columns = csv_header(lines[0], mapping, file)
            first = 1
        for i in range(first, len(lines)):
            if lines[i].strip():
                yield csv_record(lines[i], i + 1 - first, i + 1, columns, mapping.delimiter)
        return
    for i, line in enumerate(lines):
        if line.strip():
            yield from json_line_records(mapping, line, i + 1, i + 1)


def _where(rec: Record) -> str:
    return f"record {rec.name or rec.number}"


def convert_records(text: str, fmt: str, mapping: Mapping, *, file: str, pred: str, element_base: str):
    """A text of records -> :class:`~rspark.spark.loading.messages.Converted` (N-Quads of the elements, where each
    came from, the records rejected as :class:`DataError` naming file, line and record)."""
    out: list[str] = []
    origins: list[tuple[int, int, int]] = []
    errors: list[DataError] = []
    count = 0
    for rec in records(text, fmt, mapping, file=file):
        count = rec.number
        if rec.problem is None:
            try:
                lines = map_record(mapping, rec.value, element_base + rec.name, pred)
            except RecordError as exc:
                rec.problem = str(exc)
            else:
                origins.append((len(out) + 1, rec.line or 0, rec.number))
                out.extend(lines)
                continue
        errors.append(DataError(f"{_where(rec)}: {rec.problem}", file=file, line=rec.line))
    return Converted("".join(out).encode("utf-8"), origins, errors, count)


def push_element_base(stream: str, text: str) -> str:
    """The default element names of a pushed text (the same push gives the same names)."""
    digest = hashlib.sha1((stream + "\n" + text).encode("utf-8")).hexdigest()[:16]
    return f"urn:rspark:record:{digest}:"


def map_lines(mapping: Mapping, fmt: str, rows: Iterable[tuple[str, int]], *, columns: tuple | None, file: str,
              pred: str, element_base: str) -> Iterator[tuple[int, str]]:
    """The executors' side of a mapped replay: ``rows`` (a line of a CSV or JSON Lines file, its 0-based index in
    the file) -> ``(0, N-Quads lines)`` per element and ``(1, "LINE\\tRECORD\\treason")`` per rejected record. A
    record's number is its line's (data lines: a CSV file's header is not one)."""
    skip = 1 if fmt == "csv" and mapping.columns is None else 0
    for line, index in rows:
        line_no = index + 1
        if index < skip or not line.strip():
            continue
        number = line_no - skip
        recs = ([csv_record(line, number, line_no, columns, mapping.delimiter)] if fmt == "csv"
                else json_line_records(mapping, line, line_no, number))
        for rec in recs:
            if rec.problem is None:
                try:
                    yield 0, "".join(map_record(mapping, rec.value, element_base + rec.name, pred))
                    continue
                except RecordError as exc:
                    rec.problem = str(exc)
            yield 1, f"{line_no}\t{rec.number}\t{rec.problem}"
