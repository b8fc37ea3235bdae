"""The printed form of the algebra (S-expressions in the style of Jena's SSE): what ``rspark explain`` shows and what
tests compare against. Stable: the same query always prints the same text.

IRIs print as prefixed names when a prefix declared in the query covers them; numbers and booleans whose lexical form
is a valid SPARQL token print bare.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rspark.algebra import ops
from rspark.algebra.expr import (
    Aggregate,
    Call,
    Exists,
    FunctionCall,
    PathAlt,
    PathInv,
    PathMod,
    PathNegated,
    PathSeq,
    QuadPattern,
)
from rspark.algebra.ops import QueryForm
from rspark.model.terms import (
    IRI,
    XSD_BOOLEAN,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    XSD_STRING,
    BlankNode,
    Literal,
    QuotedTriple,
    Variable,
    escape_string,
)
from rspark.rsp.policies import ReportPolicy
from rspark.rsp.windows import CountWindowSpec, IntervalWindowSpec, LandmarkWindowSpec, NowWindowSpec, TimeWindowSpec

_LOCAL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_\-.]*[A-Za-z0-9_\-])?$")
_BARE = {
    XSD_INTEGER: re.compile(r"^[+-]?[0-9]+$"),
    XSD_DECIMAL: re.compile(r"^[+-]?[0-9]*\.[0-9]+$"),
    XSD_DOUBLE: re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)[eE][+-]?[0-9]+$"),
    XSD_BOOLEAN: re.compile(r"^(true|false)$"),
}


_WELL_KNOWN = (
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
)


class Printer:
    def __init__(self, prefixes=()):
        declared = dict(prefixes)
        # rdf:, rdfs: and xsd: print compactly unless the query binds those names to something else
        merged = list(prefixes) + [(p, ns) for p, ns in _WELL_KNOWN if p not in declared]
        # longest namespace first, so the most specific prefix wins
        self.prefixes = sorted(((ns, p) for p, ns in merged), key=lambda item: -len(item[0]))

    # ------------------------------------------------------------------------------------------------- terms
    def term(self, t) -> str:
        if isinstance(t, Variable):
            return "?" + t.name
        if isinstance(t, IRI):
            for ns, prefix in self.prefixes:
                if t.value.startswith(ns) and _LOCAL.match(t.value[len(ns):] or "_"):
                    return f"{prefix}:{t.value[len(ns):]}"
            return t.n3()
        if isinstance(t, Literal):
            bare = _BARE.get(t.datatype)
            if bare is not None and bare.match(t.lexical):
                return t.lexical
            body = f'"{escape_string(t.lexical)}"'
            if t.language is not None:
                return f"{body}@{t.language}"
            if t.datatype == XSD_STRING:
                return body
            return f"{body}^^{self.term(IRI(t.datatype))}"
        if isinstance(t, BlankNode):
            return t.n3()
        if isinstance(t, QuotedTriple):
            return f"<< {self.term(t.subject)} {self.term(t.predicate)} {self.term(t.object)} >>"
        if t is None:
            return "UNDEF"
        raise TypeError(f"not a term: {t!r}")

    # ------------------------------------------------------------------------------------------------- paths
    def path(self, p) -> str:
        if isinstance(p, (IRI, Variable)):
            return self.term(p)
        if isinstance(p, PathInv):
            return f"(reverse {self.path(p.path)})"
        if isinstance(p, PathSeq):
            return "(seq " + " ".join(self.path(x) for x in p.parts) + ")"
        if isinstance(p, PathAlt):
            return "(alt " + " ".join(self.path(x) for x in p.parts) + ")"
        if isinstance(p, PathMod):
            return f"(path{p.mod} {self.path(p.path)})"
        if isinstance(p, PathNegated):
            items = [self.term(i) for i in p.forward] + [f"(reverse {self.term(i)})" for i in p.inverse]
            return "(notoneof " + " ".join(items) + ")"
        raise TypeError(f"not a path: {p!r}")

    # ------------------------------------------------------------------------------------------- expressions
    def expr(self, e, indent: int = 0) -> str:
        if isinstance(e, Call):
            name = e.name if not e.name[0].isalpha() else e.name.lower()
            if e.name == "NOT IN":
                name = "notin"
            return "(" + " ".join([name] + [self.expr(a, indent) for a in e.args]) + ")"
        if isinstance(e, FunctionCall):
            head = "call distinct" if e.distinct else "call"
            return "(" + " ".join([head, self.term(e.iri)] + [self.expr(a, indent) for a in e.args]) + ")"
        if isinstance(e, Aggregate):
            parts = [e.name.lower()]
            if e.distinct:
                parts.append("distinct")
            if e.separator is not None:
                parts.append(f'(separator "{escape_string(e.separator)}")')
            if e.arg is not None:
                parts.append(self.expr(e.arg, indent))
            return "(" + " ".join(parts) + ")"
        if isinstance(e, Exists):
            head = "notexists" if e.negated else "exists"
            return f"({head}\n{self.op(e.pattern, indent + 2)})"
        return self.term(e)

    # ---------------------------------------------------------------------------------------------- operators
    def op(self, op, indent: int = 0) -> str:
        """``op`` printed at ``indent``: an operator of :data:`_NESTED` as its head and its operands one level
        deeper, the others by their printer in :data:`_PRINTERS`."""
        pad = " " * indent
        inner = indent + 2
        nested = _NESTED.get(type(op))
        if nested is None:
            printer = _PRINTERS.get(type(op))
            if printer is None:
                raise TypeError(f"unknown operator {type(op).__name__}")
            return printer(self, op, pad, inner)
        head, children, tail = nested(self, op, inner)
        parts = [f"{pad}({head}"]
        for c in children:  # a loop, not a generator: one Python frame less per level of a deep tree
            parts.append(self.op(c, inner))
        text = "\n".join(parts) + ")"
        return text if tail is None else f"{text}\n{' ' * inner}{tail})"

    def _bgp(self, op: ops.BGP, pad: str, inner: int) -> str:
        if not op.triples:
            return f"{pad}(bgp)"
        lines = [f"{pad}(bgp"]
        for t in op.triples:
            lines.append(f"{pad}  (triple {self.term(t.subject)} {self.term(t.predicate)} {self.term(t.object)})")
        lines[-1] += ")"
        return "\n".join(lines)

    def _path_pattern(self, op: ops.PathPattern, pad: str, inner: int) -> str:
        return f"{pad}(path {self.term(op.subject)} {self.path(op.path)} {self.term(op.object)})"

    def _table(self, op: ops.Table, pad: str, inner: int) -> str:
        if op.is_unit:
            return f"{pad}(table unit)"
        head = "(vars " + " ".join(self.term(v) for v in op.vars) + ")"
        rows = []
        for row in op.rows:
            cells = " ".join(f"[{self.term(v)} {self.term(x)}]" for v, x in zip(op.vars, row) if x is not None)
            rows.append(f"{pad}  (row{' ' + cells if cells else ''})")
        return f"{pad}(table {head}\n" + "\n".join(rows) + ")" if rows else f"{pad}(table {head})"

    def _match(self, op: ops.Match, pad: str, inner: int) -> str:
        head = "match" + (f" (consume {op.consume.lower()})" if op.consume else "")
        return f"{pad}({head}\n{self.event(op.expr, inner)})"

    def _filter_head(self, op: ops.Filter, inner: int) -> str:
        if len(op.exprs) == 1:
            return "filter " + self.expr(op.exprs[0], inner)
        return "filter (exprlist " + " ".join(self.expr(e, inner) for e in op.exprs) + ")"

    def _group_head(self, op: ops.Group, inner: int) -> str:
        # a key without a variable is a variable or an expression (GROUP BY STR(?s)): printed as it is
        keys = " ".join(self.expr(e, inner) if v is None else f"({self.term(v)} {self.expr(e, inner)})"
                        for v, e in op.keys)
        aggs = " ".join(f"({self.term(v)} {self.expr(a, inner)})" for v, a in op.aggregates)
        return f"group ({keys}) ({aggs})"

    def _order_head(self, op: ops.OrderBy, inner: int) -> str:
        conds = " ".join(self.expr(c.expr, inner) if c.ascending else f"(desc {self.expr(c.expr, inner)})"
                         for c in op.conditions)
        return f"order ({conds})"

    def event(self, e, indent: int) -> str:
        pad = " " * indent
        if isinstance(e, ops.EventPattern):
            return f"{pad}(event {e.name} {self.term(e.window)}\n{self.op(e.op, indent + 2)})"
        if isinstance(e, ops.EventSeq):
            head = "seq" + (f" ({e.selection.lower()})" if e.selection else "")
            return f"{pad}({head}\n{self.event(e.left, indent + 2)}\n{self.event(e.right, indent + 2)})"
        head = "first" if isinstance(e, ops.EventFirst) else "last"
        return f"{pad}({head}\n{self.event(e.expr, indent + 2)})"

    # ------------------------------------------------------------------------------------------------ windows
    def window_spec(self, spec) -> str:
        if spec is None:
            return "(default)"
        text = self._window_body(spec)
        if spec.report is not None:  # the window's REPORT clause
            every = spec.report_every
            text += " (report " + " ".join(f"{p} every {every.sse()}" if p == ReportPolicy.PERIODIC and every
                                           else p for p in ReportPolicy if p in spec.report) + ")"
        return text

    def _window_body(self, spec) -> str:
        if isinstance(spec, TimeWindowSpec):
            text = f"(range {spec.range.sse()}"
            if spec.slide is not None:  # not written: the profile's implicit slide
                text += f" slide {spec.slide.sse()}"
            if spec.start is not None:
                text += f" start {spec.start.sse()}"
            if spec.offset is not None:
                text += f" offset {spec.offset.sse()}"
            if spec.partition is not None:
                text += f" partition {self.term(IRI(spec.partition))}"
            return text + ")"
        if isinstance(spec, LandmarkWindowSpec):
            return "(landmark" + (f" {spec.start.sse()}" if spec.start is not None else "") + ")"
        if isinstance(spec, IntervalWindowSpec):
            return f"(interval {spec.start.sse()} {spec.end.sse()})"
        if isinstance(spec, CountWindowSpec):
            partition = f" partition {self.term(IRI(spec.partition))}" if spec.partition is not None else ""
            return f"(count {spec.unit.lower()} {spec.size}{partition})"
        if isinstance(spec, NowWindowSpec):
            return "(now)"
        raise TypeError(f"unknown window {spec!r}")

    def plan(self, plan: ops.QueryPlan) -> str:
        header: list[str] = []
        if plan.register is not None:
            reg = plan.register
            name = self.term(reg.name) if isinstance(reg.name, IRI) else reg.name
            parts = [f"register {name}"]
            if reg.kind:
                parts.append(reg.kind.lower())
            if reg.every is not None:
                parts.append(f"(every {reg.every.sse()})")
            if reg.entailment is not None:
                parts.append(f"(entailment {self.term(reg.entailment)})")
            header.append("(" + " ".join(parts) + ")")
        if plan.r2s:
            header.append(f"(r2s {plan.r2s.lower()})")
        dataset = plan.dataset
        if not dataset.is_empty:
            lines = ["(dataset"]
            lines += [f"  (graph {self.term(g)})" for g in dataset.default_graphs]
            lines += [f"  (named {self.term(g)})" for g in dataset.named_graphs]
            for w in dataset.windows:
                if w.merged:
                    lines.append(f"  (stream {self.term(w.stream)} {self.window_spec(w.spec)})")
                else:
                    lines.append(f"  (window {self.term(w.name)} {self.term(w.stream)} {self.window_spec(w.spec)})")
            lines[-1] += ")"
            header.append("\n".join(lines))
        body = self.op(plan.op, 2 if header or plan.form != QueryForm.SELECT else 0)
        if plan.form == QueryForm.SELECT and not header:
            return body
        if plan.form == QueryForm.CONSTRUCT:
            template = " ".join(
                (f"(quad {self.term(t.graph)} " if isinstance(t, QuadPattern) else "(triple ")
                + f"{self.term(t.subject)} {self.term(t.predicate)} {self.term(t.object)})"
                for t in plan.template or ())
            header.append(f"(template {template})" if template else "(template)")
        if plan.form == QueryForm.DESCRIBE:
            targets = "*" if plan.describe is None else " ".join(self.term(t) for t in plan.describe)
            header.append(f"(describe {targets})")
        head = plan.form.lower()
        indented = "\n".join("  " + line for block in header for line in block.split("\n"))
        return f"({head}\n{indented}\n{body})" if indented else f"({head}\n{body})"


# The operators printed as ``(head operand...)`` with each operand one level deeper: the operator type -> (printer,
# operator, indent of the operands) -> (head, operands, a last line after the operands or None).
_NESTED: dict[type, Callable[[Printer, Any, int], tuple[str, tuple, str | None]]] = {
    ops.Join: lambda p, op, inner: ("join", (op.left, op.right), None),
    ops.LeftJoin: lambda p, op, inner: ("leftjoin", (op.left, op.right),
                                        None if op.expr is None else p.expr(op.expr, inner)),
    ops.Filter: lambda p, op, inner: (p._filter_head(op, inner), (op.op,), None),
    ops.Union: lambda p, op, inner: ("union", (op.left, op.right), None),
    ops.Minus: lambda p, op, inner: ("minus", (op.left, op.right), None),
    ops.Graph: lambda p, op, inner: (f"graph {p.term(op.name)}", (op.op,), None),
    ops.Service: lambda p, op, inner: (f"service{' silent' if op.silent else ''} {p.term(op.name)}", (op.op,), None),
    ops.Extend: lambda p, op, inner: (f"extend (({p.term(op.var)} {p.expr(op.expr, inner)}))", (op.op,), None),
    ops.Group: lambda p, op, inner: (p._group_head(op, inner), (op.op,), None),
    ops.OrderBy: lambda p, op, inner: (p._order_head(op, inner), (op.op,), None),
    ops.Project: lambda p, op, inner: ("project (" + " ".join(p.term(v) for v in op.vars) + ")", (op.op,), None),
    ops.Distinct: lambda p, op, inner: ("distinct", (op.op,), None),
    ops.Reduced: lambda p, op, inner: ("reduced", (op.op,), None),
    ops.Slice: lambda p, op, inner: (f"slice {op.start} {'_' if op.length is None else op.length}", (op.op,), None),
    ops.Window: lambda p, op, inner: (f"window {p.term(op.name)}", (op.op,), None),
    ops.IntervalJoin: lambda p, op, inner: (op.kind, (op.left, op.right), None),
}

# The other operators: the operator type -> its printer (printer, operator, its indent, the operands' indent).
_PRINTERS: dict[type, Callable[[Printer, Any, str, int], str]] = {
    ops.BGP: Printer._bgp,
    ops.PathPattern: Printer._path_pattern,
    ops.Table: Printer._table,
    ops.Match: Printer._match,
}


def to_sse(plan_or_op, prefixes=None) -> str:
    """Print a ``QueryPlan`` or an operator as SSE text."""
    if isinstance(plan_or_op, ops.QueryPlan):
        return Printer(plan_or_op.prefixes if prefixes is None else prefixes).plan(plan_or_op)
    return Printer(prefixes or ()).op(plan_or_op)
