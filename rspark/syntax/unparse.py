"""Syntax tree -> query text. ``unparse(query)`` prints a ``rspark.syntax.ast.Query`` back as text that parses to an
equal tree (and so translates to an equal algebra).

The output favours exactness over looks: IRIs are printed in full (``<...>``; the query's PREFIX and BASE
declarations are repeated so that the tree keeps them), literals in their quoted form with their exact lexical form and
datatype (``"1"^^<http://www.w3.org/2001/XMLSchema#integer>``), expressions and property paths fully parenthesized,
and the triples that the parser expanded from collections, ``[ ... ]`` and annotations are printed expanded.
"""

from __future__ import annotations

import re

from rspark.algebra.ops import QueryForm
from rspark.model.terms import IRI, XSD_DATETIME, XSD_STRING, BlankNode, Literal, QuotedTriple, Variable
from rspark.model.time import Duration
from rspark.rsp.policies import ReportPolicy
from rspark.syntax import ast

__all__ = ["unparse", "unparse_expr", "unparse_term"]

_INDENT = "  "

# Escapes the grammar's strings accept (\t \b \n \r \f \" \' \\); \u escapes are decoded before lexing, so a
# backslash that would be followed by "u"/"U" is written as two \u005C escapes (which decode to an escaped backslash).
_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_DATETIME_RE = re.compile(r"-?[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
                          r"(?:Z|[+-][0-9]{2}:[0-9]{2})?")
_NUMBER_RE = re.compile(r"[0-9]+|[0-9]*\.[0-9]+")

_BINARY_OPS = {"||", "&&", "=", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/"}
_UNARY_OPS = {"!": "!", "UMINUS": "-", "UPLUS": "+"}
_NULLARY = {"GETDURATION": "getDURATION", "GETSTARTTIME": "getSTARTTIME", "GETENDTIME": "getENDTIME"}


# ------------------------------------------------------------------------------------------------------------ terms


def _string(text: str) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\" and text[i + 1:i + 2] in ("u", "U"):
            out.append("\\u005C\\u005C")
        else:
            out.append(_STRING_ESCAPES.get(ch, ch))
    return '"' + "".join(out) + '"'


def _literal(lit: Literal) -> str:
    quoted = _string(lit.lexical)
    if lit.language is not None:
        return f"{quoted}@{lit.language}"
    if lit.datatype == XSD_STRING:
        return quoted
    return f"{quoted}^^<{lit.datatype}>"


def unparse_term(term) -> str:
    """A term or variable as query text (quoted triples as ``<< s p o >>``)."""
    if isinstance(term, Variable):
        return f"?{term.name}"
    if isinstance(term, IRI):
        return f"<{term.value}>"
    if isinstance(term, Literal):
        return _literal(term)
    if isinstance(term, BlankNode):
        return f"_:{term.id}"
    if isinstance(term, QuotedTriple):
        return f"<< {unparse_term(term.subject)} {unparse_term(term.predicate)} {unparse_term(term.object)} >>"
    raise TypeError(f"not a term: {term!r}")


# ------------------------------------------------------------------------------------------------------ expressions


def unparse_expr(expr, indent: int = 0) -> str:
    """An expression, fully parenthesized (every operator application is wrapped in parentheses)."""
    if isinstance(expr, ast.Call):
        return _call(expr, indent)
    if isinstance(expr, ast.FunctionCall):
        args = ", ".join(unparse_expr(a, indent) for a in expr.args)
        if not expr.args:
            return f"<{expr.iri.value}>()"
        return f"<{expr.iri.value}>({'DISTINCT ' if expr.distinct else ''}{args})"
    if isinstance(expr, ast.Aggregate):
        inner = "*" if expr.arg is None else unparse_expr(expr.arg, indent)
        distinct = "DISTINCT " if expr.distinct else ""
        if expr.separator is not None:
            return f"{expr.name}({distinct}{inner} ; SEPARATOR={_string(expr.separator)})"
        return f"{expr.name}({distinct}{inner})"
    if isinstance(expr, ast.Exists):
        keyword = "NOT EXISTS" if expr.negated else "EXISTS"
        return f"{keyword} {_group(expr.pattern, indent)}"
    if isinstance(expr, QuotedTriple):  # only in trees built by hand: the parser gives Call("TRIPLE") in expressions
        return f"TRIPLE({unparse_expr(expr.subject)}, {unparse_expr(expr.predicate)}, {unparse_expr(expr.object)})"
    return unparse_term(expr)


def _call(expr: ast.Call, indent: int) -> str:
    name, args = expr.name, expr.args
    if name in _BINARY_OPS and len(args) == 2:
        return f"({unparse_expr(args[0], indent)} {name} {unparse_expr(args[1], indent)})"
    if name in _UNARY_OPS and len(args) == 1:
        return f"({_UNARY_OPS[name]}{unparse_expr(args[0], indent)})"
    if name in ("IN", "NOT IN"):
        items = ", ".join(unparse_expr(a, indent) for a in args[1:])
        return f"({unparse_expr(args[0], indent)} {name} ({items}))"
    if name == "TIMESTAMP":
        return f"timestamp({' '.join(unparse_term(a) for a in args)})"
    if name in _NULLARY:
        return f"{_NULLARY[name]}()"
    return f"{name}({', '.join(unparse_expr(a, indent) for a in args)})"


# ------------------------------------------------------------------------------------------------------------ paths


def _path(path) -> str:
    if isinstance(path, (IRI, Variable)):
        return unparse_term(path)
    if isinstance(path, ast.PathInv):
        return f"^{_path_primary(path.path)}"
    if isinstance(path, ast.PathSeq):
        return "(" + " / ".join(_path_primary(p) for p in path.parts) + ")"
    if isinstance(path, ast.PathAlt):
        return "(" + " | ".join(_path_primary(p) for p in path.parts) + ")"
    if isinstance(path, ast.PathMod):
        return f"{_path_primary(path.path)}{path.mod}"
    if isinstance(path, ast.PathNegated):
        items = [unparse_term(i) for i in path.forward] + ["^" + unparse_term(i) for i in path.inverse]
        return "!(" + " | ".join(items) + ")"
    raise TypeError(f"not a property path: {path!r}")


def _path_primary(path) -> str:
    """A path in a position that takes a primary: IRIs, negated sets and parenthesized paths are primaries."""
    text = _path(path)
    if isinstance(path, (IRI, ast.PathSeq, ast.PathAlt, ast.PathNegated)):
        return text
    return f"({text})"


# ---------------------------------------------------------------------------------------------------------- patterns


def _triple(t) -> str:
    return f"{unparse_term(t.subject)} {_path(t.predicate)} {unparse_term(t.object)} ."


def unparse_group(group) -> str:
    """A group graph pattern as query text, ``{ ... }`` (what SERVICE sends to its endpoint)."""
    return _group(group, 0)


def _group(group, indent: int) -> str:
    """``{ ... }`` for a GroupPattern (or a SubSelect, printed as its own group)."""
    pad = _INDENT * (indent + 1)
    if isinstance(group, ast.SubSelect):
        elements = (group,)
    else:
        elements = group.elements
    if len(elements) == 1 and isinstance(elements[0], ast.SubSelect):
        body = _query_body(elements[0].query, indent + 1)
        return "{\n" + body + "\n" + _INDENT * indent + "}"
    lines = []
    for element in elements:
        lines.append(pad + _element(element, indent + 1))
    if not lines:
        return "{ }"
    return "{\n" + "\n".join(lines) + "\n" + _INDENT * indent + "}"


def _element(element, indent: int) -> str:
    pad = _INDENT * indent
    if isinstance(element, ast.TriplesBlock):
        return ("\n" + pad).join(_triple(t) for t in element.triples)
    if isinstance(element, ast.FilterPattern):
        return f"FILTER ({unparse_expr(element.expr, indent)})"
    if isinstance(element, ast.OptionalPattern):
        return f"OPTIONAL {_group(element.group, indent)}"
    if isinstance(element, ast.MinusPattern):
        return f"MINUS {_group(element.group, indent)}"
    if isinstance(element, ast.UnionPattern):
        parts = [_group(element.groups[0], indent)]
        for op, group in zip(element.ops, element.groups[1:]):
            parts.append(f"{op} {_group(group, indent)}")
        return " ".join(parts)
    if isinstance(element, ast.GroupPattern):
        return _group(element, indent)
    if isinstance(element, ast.SubSelect):
        return _group(ast.GroupPattern((element,)), indent)
    if isinstance(element, ast.GraphPattern):
        return f"GRAPH {unparse_term(element.name)} {_group(element.group, indent)}"
    if isinstance(element, ast.ServicePattern):
        silent = "SILENT " if element.silent else ""
        return f"SERVICE {silent}{unparse_term(element.name)} {_group(element.group, indent)}"
    if isinstance(element, ast.BindPattern):
        return f"BIND ({unparse_expr(element.expr, indent)} AS {unparse_term(element.var)})"
    if isinstance(element, ast.ValuesPattern):
        return "VALUES " + _data_block(element, indent)
    if isinstance(element, ast.WindowPattern):
        return f"WINDOW {unparse_term(element.name)} {_group(element.group, indent)}"
    if isinstance(element, ast.StreamPattern):
        return (f"STREAM {unparse_term(element.stream)} {_window_spec(element.spec)} "
                f"{_group(element.group, indent)}")
    if isinstance(element, ast.MatchPattern):
        consume = f"CONSUME {element.consume} " if element.consume else ""
        return f"MATCH {consume}{{ {_event_expr(element.expr)} }}"
    raise TypeError(f"unknown graph pattern {type(element).__name__}")


def _data_block(values: ast.ValuesPattern, indent: int) -> str:
    head = "(" + " ".join(unparse_term(v) for v in values.vars) + ")"
    pad = _INDENT * (indent + 1)
    rows = []
    for row in values.rows:
        rows.append(pad + "(" + " ".join("UNDEF" if v is None else unparse_term(v) for v in row) + ")")
    if not rows:
        return head + " { }"
    return head + " {\n" + "\n".join(rows) + "\n" + _INDENT * indent + "}"


def _event_expr(expr) -> str:
    if isinstance(expr, ast.EventRef):
        return expr.name
    if isinstance(expr, ast.EventFirst):
        return f"FIRST {_event_unary(expr.expr)}"
    if isinstance(expr, ast.EventLast):
        return f"LAST {_event_unary(expr.expr)}"
    if isinstance(expr, ast.EventSeq):
        selection = f"[{expr.selection}]" if expr.selection else ""
        return f"{_event_unary(expr.left)} SEQ{selection} {_event_unary(expr.right)}"
    raise TypeError(f"unknown event expression {type(expr).__name__}")


def _event_unary(expr) -> str:
    text = _event_expr(expr)
    return f"({text})" if isinstance(expr, ast.EventSeq) else text


# ----------------------------------------------------------------------------------------------- windows, dataset


def _duration(d: Duration) -> str:
    return d.text or d.sse()


def _instant(instant: ast.Instant) -> str:
    text = instant.text
    if instant.absolute:
        if _DATETIME_RE.fullmatch(text):
            return text
        return f"{_string(text)}^^<{XSD_DATETIME}>"
    if _NUMBER_RE.fullmatch(text):
        return text
    return _string(text)


def _relative_start(spec) -> str:
    """The ``a`` of ``[NOW-a TO NOW-b]`` (the window's range is a-b, its offset b): the parser writes the range's
    text as "a-b"."""
    suffix = "-" + spec.offset.text
    if spec.offset.text and spec.range.text.endswith(suffix) and spec.range.text != suffix:
        return spec.range.text[:-len(suffix)]
    amount = spec.range.amount + spec.offset.amount  # a tree built by hand
    return Duration(amount, spec.range.absolute).sse()


def _window_spec(spec) -> str:
    if isinstance(spec, ast.TimeWindowSpec) and spec.offset is not None:  # [NOW-a TO NOW-b (SLIDE c)?]
        text = f"NOW-{_relative_start(spec)} TO NOW-{_duration(spec.offset)}"
        if spec.slide is not None:
            text += f" SLIDE {_duration(spec.slide)}"
    elif isinstance(spec, ast.TimeWindowSpec):
        text = f"RANGE {_duration(spec.range)}"
        if spec.slide is not None:
            text += f" SLIDE {_duration(spec.slide)}"
        if spec.start is not None:
            text += f" STARTING AT {_instant(spec.start)}"
        if spec.partition is not None:
            text += f" PARTITION BY <{spec.partition}>"
    elif isinstance(spec, ast.LandmarkWindowSpec):
        text = "LANDMARK" + (f" {_instant(spec.start)}" if spec.start is not None else "")
    elif isinstance(spec, ast.IntervalWindowSpec):
        text = f"FROM {_instant(spec.start)} TO {_instant(spec.end)}"
    elif isinstance(spec, ast.CountWindowSpec):
        text = f"RANGE {spec.unit} {spec.size}"
        if spec.partition is not None:
            text += f" PARTITION BY <{spec.partition}>"
    elif isinstance(spec, ast.NowWindowSpec):
        text = "NOW"
    else:
        raise TypeError(f"unknown window specification {type(spec).__name__}")
    if spec.report is not None:
        words = [REPORT_WORDS[p] for p in ReportPolicy if p in spec.report]
        if spec.report_every is not None:  # REPORT EVERY d: PERIODIC with its period
            words = [f"EVERY {_duration(spec.report_every)}" if w == REPORT_WORDS[ReportPolicy.PERIODIC] else w
                     for w in words]
        text += " REPORT " + ", ".join(words)
    return f"[{text}]"


# a report policy as the REPORT clause writes it (the parser reads these words)
REPORT_WORDS = {ReportPolicy.WINDOW_CLOSE: "ON WINDOW CLOSE", ReportPolicy.CONTENT_CHANGE: "ON CONTENT CHANGE",
                 ReportPolicy.NON_EMPTY: "NON EMPTY", ReportPolicy.PERIODIC: "PERIODIC"}


def _source(source) -> str:
    if isinstance(source, ast.DefaultGraphSource):
        return f"FROM {unparse_term(source.iri)}"
    if isinstance(source, ast.NamedGraphSource):
        return f"FROM NAMED {unparse_term(source.iri)}"
    if isinstance(source, ast.WindowSource):
        spec = f" {_window_spec(source.spec)}" if source.spec is not None else ""
        if source.merged and source.name is not None:
            return f"FROM NAMED STREAM {unparse_term(source.stream)}{spec}"
        if source.merged:
            return f"FROM STREAM {unparse_term(source.stream)}{spec}"
        if source.name is None:
            raise ValueError("an anonymous window has no FROM clause (it comes from a STREAM pattern)")
        return f"FROM NAMED WINDOW {unparse_term(source.name)} ON {unparse_term(source.stream)}{spec}"
    raise TypeError(f"unknown dataset clause {type(source).__name__}")


# ------------------------------------------------------------------------------------------------------------ query


def _projection_item(item: ast.Projection, indent: int) -> str:
    if item.expr is None:
        return unparse_term(item.var)
    return f"({unparse_expr(item.expr, indent)} AS {unparse_term(item.var)})"


def _modifiers(q: ast.Query, indent: int) -> list[str]:
    out = []
    if q.group_by:
        items = []
        for cond in q.group_by:
            if cond.var is None:
                items.append(unparse_term(cond.expr) if isinstance(cond.expr, Variable)
                             else f"({unparse_expr(cond.expr, indent)})")
            else:
                items.append(f"({unparse_expr(cond.expr, indent)} AS {unparse_term(cond.var)})")
        out.append("GROUP BY " + " ".join(items))
    if q.having:
        out.append("HAVING " + " ".join(f"({unparse_expr(h, indent)})" for h in q.having))
    if q.order_by:
        out.append("ORDER BY " + " ".join(f"{'ASC' if o.ascending else 'DESC'}({unparse_expr(o.expr, indent)})"
                                         for o in q.order_by))
    if q.limit is not None:
        out.append(f"LIMIT {q.limit}")
    if q.offset is not None:
        out.append(f"OFFSET {q.offset}")
    return out


def _template(triples, indent: int) -> str:
    """A CONSTRUCT template; consecutive quads of one graph form one ``GRAPH g { ... }`` block."""
    if not triples:
        return "{ }"
    pad = _INDENT * (indent + 1)
    lines: list[str] = []
    graph = None
    for t in triples:
        g = t.graph if isinstance(t, ast.QuadPattern) else None
        if g != graph and graph is not None:
            lines.append(pad + "}")
        if g is not None and g != graph:
            lines.append(pad + f"GRAPH {unparse_term(g)} {{")
        graph = g
        lines.append(pad + (_INDENT if g is not None else "") + _triple(t))
    if graph is not None:
        lines.append(pad + "}")
    return "{\n" + "\n".join(lines) + "\n" + _INDENT * indent + "}"


def _query_body(q: ast.Query, indent: int = 0) -> str:
    """The query form, dataset, events, WHERE, solution modifiers and trailing VALUES (no prologue, no REGISTER)."""
    pad = _INDENT * indent
    lines = []
    r2s = f" {q.r2s}" if q.r2s else ""
    where_needed = True
    if q.form == QueryForm.SELECT:
        head = "SELECT" + r2s + (f" {q.modifier}" if q.modifier else "")
        if q.projection is None:
            head += " *"
        else:
            head += " " + " ".join(_projection_item(p, indent) for p in q.projection)
        lines.append(head)
    elif q.form == QueryForm.CONSTRUCT:
        if q.where_form_construct:
            lines.append("CONSTRUCT" + r2s)
        else:
            lines.append("CONSTRUCT" + r2s + " " + _template(q.template or (), indent))
    elif q.form == QueryForm.DESCRIBE:
        targets = "*" if q.describe is None else " ".join(unparse_term(t) for t in q.describe)
        lines.append(f"DESCRIBE {targets}")
        where_needed = q.where is not None
    elif q.form == QueryForm.ASK:
        lines.append("ASK")
    else:
        raise ValueError(f"unknown query form {q.form!r}")
    for source in q.dataset:
        lines.append(_source(source))
    for event in q.events:
        lines.append(f"EVENT ON {unparse_term(event.window)} {_group(event.group, indent)} AS {event.name}")
    if q.form == QueryForm.CONSTRUCT and q.where_form_construct:
        lines.append("WHERE " + _template(q.template or (), indent))
    elif where_needed:
        lines.append("WHERE " + _group(q.where if q.where is not None else ast.GroupPattern(()), indent))
    lines.extend(_modifiers(q, indent))
    if q.values is not None:
        lines.append("VALUES " + _data_block(q.values, indent))
    return "\n".join(pad + line for line in lines)


def unparse(query: ast.Query) -> str:
    """Print a syntax tree as query text; ``parse_query(unparse(q))`` gives back ``q`` (up to source positions)."""
    lines = []
    if query.base is not None:
        lines.append(f"BASE <{query.base}>")
    for prefix, namespace in query.prefixes:
        lines.append(f"PREFIX {prefix}: <{namespace}>")
    if query.register is not None:
        reg = query.register
        parts = ["REGISTER"]
        if reg.r2s:
            parts.append(reg.r2s)
        if reg.kind:
            parts.append(reg.kind)
        parts.append(unparse_term(reg.name) if isinstance(reg.name, IRI) else str(reg.name))
        if reg.every is not None:
            parts.append(f"COMPUTED EVERY {_duration(reg.every)}")
        parts.append("AS")
        lines.append(" ".join(parts))
    lines.append(_query_body(query))
    return "\n".join(lines) + "\n"
