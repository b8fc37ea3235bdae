"""What a query may say that rspark parses but does not evaluate: each such construct is refused before Spark starts,
with its line and column and the reason, never answered as if it were not there.

``refusals(query)`` walks the syntax tree (which has the positions) and lists every such construct in the plan;
the query commands call ``rspark.syntax.translate.ensure_evaluable`` with the plan, which raises the first that
applies to the way the query runs (some constructs are refused in continuous queries only: DESCRIBE, for one, is
answered by ``rspark sparql``). ``rspark explain`` prints the algebra of such a query and names them as warnings.

The Spark compilers keep their own checks of the same constructs (``NotSupportedError``), for a plan built by hand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from rspark.algebra.expr import Aggregate, Call, Exists, QuadPattern
from rspark.algebra.ops import QueryForm, RegisterKind
from rspark.model.terms import IRI, QuotedTriple, Variable
from rspark.rsp.policies import R2S, CountUnit
from rspark.syntax import ast

# the EP-SPARQL operators (written where UNION may stand); their queries are evaluated over occurrence intervals
EP_OPERATORS = ("SEQ", "EQUALS", "OPTIONALSEQ", "EQUALSOPTIONAL")
INTERVAL_FUNCTIONS = {"GETDURATION": "getDURATION", "GETSTARTTIME": "getSTARTTIME", "GETENDTIME": "getENDTIME"}


@dataclass(frozen=True, slots=True)
class Refusal:
    """A construct the query uses that rspark does not evaluate: ``construct`` as the user wrote it, ``reason``,
    its position, ``continuous_only`` when a one-shot SPARQL query may use it, ``windowless`` when it is
    refused only where a stream read with no window is read element by element (stream-to-stream: the profile's
    default window is none, ``rspark.rsp.policies.DefaultWindow.ELEMENT``)."""

    construct: str
    reason: str
    line: int | None = None
    column: int | None = None
    continuous_only: bool = False
    windowless: bool = False


def _walk(root):
    """(node, positioned) for every syntax-tree node and expression under ``root``, depth first in text order;
    ``positioned`` is the nearest node with a line, ``root`` included (expressions have no position)."""
    stack = [(root, root)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, (tuple, list)):
            stack.extend((child, at) for child in reversed(node))
            continue
        if not dataclasses.is_dataclass(node) or isinstance(node, (IRI, Variable)):
            continue
        if getattr(node, "line", 0):
            at = node
        yield node, at
        stack.extend((getattr(node, f.name), at) for f in reversed(dataclasses.fields(node))
                     if f.compare and f.name not in ("line", "column"))


def _has(root, kind) -> bool:
    return any(isinstance(n, kind) for n, _ in _walk(root))


def _where(node) -> dict:
    line, column = getattr(node, "line", 0), getattr(node, "column", 0)
    return {"line": line or None, "column": column or None}


def refusals(query: ast.Query) -> tuple[Refusal, ...]:
    """Every construct of ``query`` that rspark parses and does not evaluate, in text order."""
    out: list[Refusal] = []
    reg = query.register
    if reg is not None and reg.entailment is not None:
        out.append(Refusal(f"UNDER ENTAILMENT REGIME {reg.entailment.n3()}",
                           "rspark applies no entailment regime yet, and answering without it would miss the "
                           "entailed solutions; write the inferences the query needs as property paths "
                           "(e.g. ?x a/rdfs:subClassOf* :C) or as CONSTRUCT rules", line=reg.line or None,
                           column=reg.column or None))
    intervals = _interval_mode(query)
    matches = [n for n, _ in _walk(query) if isinstance(n, ast.MatchPattern)]
    windows = {src.name: src for src in query.dataset if isinstance(src, ast.WindowSource) and src.name is not None}
    for node, at in _walk(query):
        if isinstance(node, ast.ServicePattern) and isinstance(node.name, Variable):
            out.append(Refusal(f"SERVICE {node.name.n3()}", "an endpoint given by a variable (SPARQL 1.1 Federated "
                               "Query leaves its evaluation open); name the endpoint's IRI", **_where(node)))
        elif isinstance(node, Aggregate) and node.arg is not None and _has(node.arg, Exists):
            out.append(Refusal(f"EXISTS inside the aggregate {node.name}", "rspark evaluates EXISTS in FILTER "
                               "and BIND only; BIND its value to a variable first and aggregate that", **_where(at)))
        elif isinstance(node, ast.MinusPattern) and intervals:
            out.append(Refusal("MINUS inside an EP-SPARQL pattern", "its solutions are occurrences with "
                               "intervals, which MINUS would compare by their terms alone; express negation with "
                               "OPTIONALSEQ and !BOUND, as EP-SPARQL does", **_where(at)))
        elif isinstance(node, ast.TriplesBlock) and intervals and _quoted_with_variables(node):
            out.append(Refusal("a quoted triple pattern with variables inside an EP-SPARQL pattern",
                               "occurrences are matched by their asserted triples only", **_where(at)))
        elif isinstance(node, Call) and node.name in INTERVAL_FUNCTIONS and len(matches) > 1:
            out.append(Refusal(f"{INTERVAL_FUNCTIONS[node.name]}() in a query with several MATCH "
                               "patterns", "it would not say whose events' interval it reads",
                               continuous_only=True, **_where(at)))
        elif isinstance(node, ast.EventDecl):
            src = windows.get(node.window)
            spec = src.spec if src is not None else None
            if isinstance(spec, ast.CountWindowSpec) and spec.unit in (CountUnit.TRIPLES, CountUnit.BGP):
                out.append(Refusal(f"EVENT {node.name} ON {node.window.n3()}, a [RANGE {spec.unit} n] "
                                   "window", "such a window holds parts of elements, and a basic event pattern "
                                   "matches whole elements (RSEP-QL, eq. 4); use a time, landmark or "
                                   "[RANGE ELEMENTS n] window", continuous_only=True, **_where(node)))
    out.extend(_registration(query))
    out.extend(_stream_to_stream(query, intervals))
    if query.form == QueryForm.CONSTRUCT and reg is None and _uses_ep_operators(query):  # a rule (rspark.engine.rules)
        streams = {src.stream for src in query.dataset if isinstance(src, ast.WindowSource)}
        if len(streams) > 1:
            out.append(Refusal("a CONSTRUCT rule reading several streams", "a rule's output joins the stream it "
                               f"reads, and this one reads {len(streams)}", continuous_only=True, **_where(query)))
    return tuple(out)


def _registration(query: ast.Query) -> list[Refusal]:
    reg = query.register
    out = []
    r2s = query.r2s or (reg.r2s if reg is not None else None)
    if query.form == QueryForm.ASK and r2s is not None and r2s in (R2S.ISTREAM, R2S.DSTREAM):
        out.append(Refusal(f"{str(r2s).upper()} on an ASK query", "an ASK query answers each instant alone "
                           "(RSTREAM); ask for the solutions that are new or gone with a SELECT", continuous_only=True,
                           **_where(query)))
    if reg is None or reg.kind != RegisterKind.STREAM or not isinstance(reg.name, IRI):
        return out
    if query.template is not None and any(isinstance(t, QuadPattern) for t in query.template):
        out.append(Refusal("GRAPH blocks in the template of a REGISTER STREAM query", "its output stream has one "
                           "element per instant, whose graph the template cannot name", continuous_only=True,
                           **_where(query)))
    return out


_NEEDS_A_WINDOW = ("a stream read with no window is read element by element, each element alone at its timestamp "
                   "(stream-to-stream)")


def _stream_to_stream(query: ast.Query, intervals: bool) -> list[Refusal]:
    """What a query reading a stream with no window cannot do when such a stream is read element by element: gather
    solutions over elements (an aggregate), relate elements at different instants (event patterns, EP-SPARQL
    operators and intervals) or report periodically (COMPUTED EVERY with no window at all)."""
    sources = [src for src in query.dataset if isinstance(src, ast.WindowSource)]
    windowless = [src for src in sources if src.spec is None]
    if not windowless:
        return []
    first = windowless[0]
    stream = f"the stream {first.stream.n3()}"
    give = f"give {stream} a window (e.g. [RANGE PT1M], or [LANDMARK] for the whole stream)"
    out = []
    for node, at in _walk(query):
        if isinstance(node, Aggregate):
            out.append(Refusal(f"{node.name} over a stream read with no window", f"{_NEEDS_A_WINDOW}, and an "
                               f"aggregate gathers the solutions of many elements: {give}", continuous_only=True,
                               windowless=True, **_where(at)))
        elif isinstance(node, ast.EventDecl) and any(node.window == src.name for src in windowless):
            out.append(Refusal(f"EVENT {node.name} ON {node.window.n3()}, a window declared with no window "
                               "specification", f"{_NEEDS_A_WINDOW}, and an event pattern relates elements at "
                               f"different instants: give it a window (e.g. [RANGE PT1M] or [LANDMARK]), or use "
                               "an epsparql-* profile, which reads such a stream from its start",
                               continuous_only=True, windowless=True, **_where(node)))
    if intervals:
        out.append(Refusal(f"EP-SPARQL operators or interval functions over {stream}, read with no window",
                           f"{_NEEDS_A_WINDOW}, and these relate elements at different instants: {give}, or use an "
                           "epsparql-* profile, which reads such a stream from its start", continuous_only=True,
                           windowless=True, **_where(first)))
    reg = query.register
    if reg is not None and reg.every is not None and len(windowless) == len(sources):
        out.append(Refusal("COMPUTED EVERY on a query whose streams are read with no window", f"{_NEEDS_A_WINDOW}, "
                           "and reported when its element arrives, not periodically: give the stream a window to "
                           "report it every period", continuous_only=True, windowless=True,
                           **_where(reg if reg.line else query)))
    return out


def _interval_mode(query: ast.Query) -> bool:
    """The query is evaluated over occurrence intervals (EP-SPARQL): it uses an EP-SPARQL operator, or reads an
    interval without a MATCH (whose events would carry it)."""
    if _uses_ep_operators(query):
        return True
    nodes = [n for n, _ in _walk(query)]
    asks = any(isinstance(n, Call) and n.name in INTERVAL_FUNCTIONS for n in nodes)
    return asks and not any(isinstance(n, ast.MatchPattern) for n in nodes)


def _uses_ep_operators(query: ast.Query) -> bool:
    return any(isinstance(n, ast.UnionPattern) and any(k in EP_OPERATORS for k in n.ops) for n, _ in _walk(query))


def _quoted_with_variables(block: ast.TriplesBlock) -> bool:
    def quoted_vars(term) -> bool:
        return isinstance(term, QuotedTriple) and any(
            isinstance(t, Variable) or quoted_vars(t) for t in (term.subject, term.predicate, term.object))

    return any(quoted_vars(t.subject) or quoted_vars(t.object) for t in block.triples
               if hasattr(t, "subject"))
