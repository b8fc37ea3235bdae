"""The output formats of ``rspark replay`` and ``rspark sparql``: which query forms each can hold, and the writer that
turns replay records (:class:`rspark.spark.streaming.record.Record`) into jsonl / table / csv / tsv / trig text.

Nothing here starts Spark or imports PySpark: the command line checks the format against the queries
(:func:`replay_columns`, :func:`check_sparql_format`) before Spark starts.

Replay formats
    ``jsonl``: one JSON object per evaluation instant of each query (:meth:`Record.to_json`); every form.
    ``table``: a ``# QUERY @ TIME`` line and a text table per record; every form.
    ``csv`` / ``tsv``: SELECT results only, as one table for the whole replay: a single header ``query,time,``
    followed by the union of the queries' variables in order of first appearance (queries in command-line order);
    a variable a query does not select is an empty cell. CSV cells are SPARQL 1.1 CSV (plain text), TSV cells
    SPARQL 1.1 TSV (N-Triples terms: ``time`` is an ``xsd:dateTime`` or number literal, ``query`` a string
    literal); the TSV header writes ``?query``, ``?time`` and ``?var``.
    ``trig``: CONSTRUCT / DESCRIBE results as an RDF stream (docs/streams.md), one timestamped named graph per
    instant, readable again with ``--stream``.
    ``messages``: the same elements as an RDF Message Log in TriG (the W3C RSP CG draft "RDF Messages": a
    ``VERSION "1.2-messages"`` line, then one message per record, separated by ``MESSAGE``; an instant with no
    triple is an empty message), readable again with ``--stream``. Not for templates with GRAPH blocks, whose
    records may hold several elements.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

from rspark import results as R
from rspark.algebra import ops
from rspark.algebra.expr import QuadPattern
from rspark.algebra.ops import QueryForm
from rspark.errors import RsparkError
from rspark.model.terms import XSD, Literal

REPLAY_FORMATS = ("jsonl", "table", "csv", "tsv", "trig", "messages")
SPARQL_FORMATS = ("json", "xml", "csv", "tsv", "table", "ntriples", "nquads")
# the csv / tsv columns before the variables'
META_COLUMNS = ("query", "time")

_GENERATED_AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
MESSAGES_VERSION = 'VERSION "1.2-messages"\n'
MESSAGE_DELIMITER = "MESSAGE\n"


class FormatError(RsparkError, ValueError):
    """An output format that cannot hold a query's results (a usage error of the command line)."""


@dataclass(frozen=True)
class Head:
    """What the output format of a query depends on, known from the query text alone.

    ``name``: how messages name the query (its file); ``form``: SELECT, ASK, CONSTRUCT or DESCRIBE; ``vars``: the
    variables a SELECT projects, in order; ``graph_names``: a CONSTRUCT template with GRAPH blocks (its output is
    quads)."""

    name: str
    form: str
    vars: tuple[str, ...] = ()
    graph_names: bool = False

    @classmethod
    def of(cls, plan, name: str) -> Head:
        """The head of a translated query (:class:`rspark.algebra.ops.QueryPlan`)."""
        names: tuple[str, ...] = ()
        if plan.form == QueryForm.SELECT:
            op = plan.op
            while not isinstance(op, ops.Project) and isinstance(getattr(op, "op", None), ops.Op):
                op = op.op
            if isinstance(op, ops.Project):
                names = tuple(v.name for v in op.vars)
        graph_names = plan.form == QueryForm.CONSTRUCT and any(isinstance(t, QuadPattern) for t in plan.template or ())
        return cls(name, plan.form, names, graph_names)


def replay_formats(head: Head) -> tuple[str, ...]:
    """The replay formats that can hold the records of a query."""
    if head.form == QueryForm.SELECT:
        return ("jsonl", "table", "csv", "tsv")
    if head.form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
        return ("jsonl", "table", "trig") if head.graph_names else ("jsonl", "table", "trig", "messages")
    return ("jsonl", "table")


def sparql_formats(head: Head) -> tuple[str, ...]:
    """The ``rspark sparql`` formats that can hold the result of a query."""
    if head.form == QueryForm.SELECT:
        return ("json", "xml", "csv", "tsv", "table")
    if head.form == QueryForm.ASK:
        return ("json", "xml", "table")
    if head.graph_names:
        return ("json", "table", "nquads")
    return ("json", "table", "ntriples", "nquads")


def _fits(fmt: str, head: Head, formats: tuple[str, ...]) -> None:
    if fmt in formats:
        return
    what = ("a CONSTRUCT query with GRAPH blocks in its template" if head.graph_names
            else f"a{'n' if head.form == QueryForm.ASK else ''} {head.form} query")
    holds = {"csv": "SELECT results", "tsv": "SELECT results", "xml": "SELECT and ASK results",
             "trig": "CONSTRUCT and DESCRIBE results",
             "messages": "CONSTRUCT (without GRAPH blocks) and DESCRIBE results",
             "ntriples": "CONSTRUCT and DESCRIBE results (triples)",
             "nquads": "CONSTRUCT and DESCRIBE results"}.get(fmt, "")
    use = ", ".join(formats[:-1]) + " or " + formats[-1]
    raise FormatError(f"--format {fmt} " + (f"writes {holds} only" if holds else "does not fit") +
                      f", but {head.name} is {what}: use --format {use} for it")


def check_sparql_format(fmt: str, head: Head) -> None:
    """Raise :class:`FormatError` when ``rspark sparql --format fmt`` cannot write the query's result."""
    if fmt not in SPARQL_FORMATS:
        raise FormatError(f"unknown --format {fmt!r} (choose from {', '.join(SPARQL_FORMATS)})")
    _fits(fmt, head, sparql_formats(head))


def default_sparql_format(head: Head, terminal: bool) -> str:
    """``table`` on a terminal; otherwise json, or RDF for a graph: ntriples (nquads for GRAPH blocks)."""
    if terminal:
        return "table"
    if head.form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
        return "nquads" if head.graph_names else "ntriples"
    return "json"


def replay_columns(fmt: str, heads: Sequence[Head]) -> list[str] | None:
    """Check that every query fits ``rspark replay --format fmt`` (else :class:`FormatError`, naming the query and
    the formats that fit it); for csv / tsv, return the variable columns: the union of the queries' variables in
    order of first appearance (None for the other formats)."""
    if fmt not in REPLAY_FORMATS:
        raise FormatError(f"unknown --format {fmt!r} (choose from {', '.join(REPLAY_FORMATS)})")
    for head in heads:
        _fits(fmt, head, replay_formats(head))
    if fmt not in ("csv", "tsv"):
        return None
    columns: list[str] = []
    for head in heads:
        for var in head.vars:
            if var in META_COLUMNS:
                raise FormatError(f"--format {fmt} starts every row with the columns {', '.join(META_COLUMNS)}, but "
                                  f"{head.name} selects ?{var}: rename the variable (SELECT (?{var} AS ?{var}_) ...) "
                                  f"or use --format jsonl or table")
            if var not in columns:
                columns.append(var)
    return columns


# ----------------------------------------------------------------------------------------------------- the writer


class ReplayWriter:
    """Writes replay records to ``out`` in one of :data:`REPLAY_FORMATS`, flushing after each record.

    ``columns``: for csv / tsv, the variable columns (:func:`replay_columns`); the header is written with the first
    record, or by :meth:`close` when there was none. A record the format cannot hold raises :class:`FormatError`
    (the command line checks the queries before the replay, so this is a safeguard)."""

    def __init__(self, fmt: str, out: TextIO, columns: Iterable[str] | None = None) -> None:
        if fmt not in REPLAY_FORMATS:
            raise FormatError(f"unknown --format {fmt!r} (choose from {', '.join(REPLAY_FORMATS)})")
        self.fmt = fmt
        self.out = out
        self.columns = list(columns or [])
        self._header = fmt not in ("csv", "tsv", "messages")  # True once written (or when the format has none)

    def write(self, rec) -> None:
        self.out.write(self.text(rec))
        self.out.flush()

    def continue_file(self) -> None:
        """The output already has its header (a file written before, appended to again): none is written."""
        self._header = True

    def close(self) -> None:
        """End the output: a csv / tsv header even when the replay gave no record."""
        if not self._header and self.fmt != "messages":
            self.out.write(self._header_text())
            self._header = True
        self.out.flush()

    def text(self, rec) -> str:
        """The text of one record (with the csv / tsv header before the first)."""
        if self.fmt == "jsonl":
            return json.dumps(rec.to_json(), ensure_ascii=False) + "\n"
        if self.fmt == "table":
            return f"# {rec.query} @ {rec.time}\n" + R.to_table(rec.value) + "\n"
        if self.fmt == "trig":
            if rec.form not in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
                raise FormatError(f"--format trig writes CONSTRUCT results only, but {rec.query} is a {rec.form} query")
            return trig_element(rec)
        if self.fmt == "messages":
            if rec.form not in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE) or rec.graph_names:
                raise FormatError(f"--format messages writes CONSTRUCT (without GRAPH blocks) and DESCRIBE results "
                                  f"only, but {rec.query} is not one")
            head = MESSAGE_DELIMITER if self._header else MESSAGES_VERSION
            self._header = True
            return head + (trig_element(rec) if rec.triples else "")
        if rec.form != QueryForm.SELECT:
            raise FormatError(f"--format {self.fmt} writes SELECT results only, but {rec.query} is a {rec.form} query")
        head = ""
        if not self._header:
            head = self._header_text()
            self._header = True
        return head + self._rows(rec)

    def _header_text(self) -> str:
        names = list(META_COLUMNS) + self.columns
        if self.fmt == "csv":
            return _csv_line(names)
        return "\t".join("?" + name for name in names) + "\n"

    def _rows(self, rec) -> str:
        extra = [v for v in rec.vars if v not in self.columns]
        if extra:  # the query's variables differ from those its text projects: a bug, not a user error
            raise AssertionError(f"{rec.query}: record variables {rec.vars} outside the columns {self.columns}")
        query, time = Literal(str(rec.query)), time_literal(rec.time)
        lines = []
        for row in rec.rows:
            if self.fmt == "csv":
                lines.append(_csv_line([R.csv_text(query), R.csv_text(time)] +
                                       [R.csv_text(row[v]) if v in row else "" for v in self.columns]))
            else:
                lines.append("\t".join([query.n3(), time.n3()] + [row[v].n3() if v in row else ""
                                                                  for v in self.columns]) + "\n")
        return "".join(lines)


def _csv_line(cells: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow(cells)
    return buf.getvalue()


def time_literal(value) -> Literal:
    """An instant as an RDF literal: ``xsd:dateTime`` for an ISO 8601 string, else ``xsd:integer`` / ``xsd:decimal``."""
    if isinstance(value, str):
        return Literal(value, XSD + "dateTime")
    return Literal(str(value), XSD + ("integer" if isinstance(value, int) else "decimal"))


def trig_element(rec) -> str:
    """One CONSTRUCT output instant as a stream element in the format of docs/streams.md.

    A template with GRAPH blocks builds the elements itself: its named graphs are written as they are, with its
    default-graph triples (their metadata) after them, and a graph that the template did not give a
    prov:generatedAtTime is stamped with the instant."""
    stamp = time_literal(rec.time).n3()
    if rec.graph_names:
        graphs: dict = {}
        default = []
        for s, p, o, g in rec.triples:
            if g is None:
                default.append((s, p, o))
            else:
                graphs.setdefault(g, []).append((s, p, o))
        stamped = {s for s, p, _ in default if p.n3() == _GENERATED_AT}
        out = []
        for g, triples in graphs.items():
            body = R.to_ntriples(R.GraphResult(triples))
            out.append(f"{g.n3()} {{\n" + "".join("  " + line + "\n" for line in body.splitlines()) + "}\n")
            if g not in stamped:
                out.append(f"{g.n3()} {_GENERATED_AT} {stamp} .\n")
        out.append(R.to_ntriples(R.GraphResult(default)))
        return "".join(out)
    name = f"<urn:rspark:{rec.query}#t{rec.ticks}>"
    body = R.to_ntriples(R.GraphResult(rec.triples))
    lines = "".join("  " + line + "\n" for line in body.splitlines())
    return f"{name} {{\n{lines}}}\n{name} {_GENERATED_AT} {stamp} .\n"
