"""Syntax tree -> algebra (SPARQL 1.1 section 18.2, extended with the RSP nodes), with the static checks that SPARQL
and RSP-QL require: variable scoping (BIND, SELECT expressions, sub-queries), grouping (no ungrouped variables in the
projection), blank node label scope, aggregates only where allowed, windows and events declared before use.
"""

from __future__ import annotations

from rspark.algebra import ops
from rspark.model.terms import IRI, RDF_TYPE, BlankNode, QuotedTriple, Variable, variables_of
from rspark.syntax import ast
from rspark.syntax.parser import QuerySyntaxError, parse_query

_EP_OPS = {"SEQ": "seq-join", "EQUALS": "eq-join", "OPTIONALSEQ": "seq-right-join", "EQUALSOPTIONAL": "eq-left-join"}


class QueryError(QuerySyntaxError):
    """A query that parses but breaks a rule of SPARQL or RSP-QL (scoping, grouping, undeclared window or event)."""


def translate(query: ast.Query) -> ops.QueryPlan:
    """Translate a parsed query into its algebra (``QueryPlan``)."""
    return _Translator(query).plan()


def compile_query(text: str, *, base_iri: str | None = None, source: str | None = None) -> ops.QueryPlan:
    """Parse and translate: text -> ``QueryPlan``. Raises ``QuerySyntaxError`` (``QueryError`` for rule breaks)."""
    try:
        return translate(parse_query(text, base_iri=base_iri, source=source))
    except QueryError as exc:
        raise exc.with_source(source) if source and not exc.source else exc


# ----------------------------------------------------------------------------------------------- variable scopes


def in_scope(op) -> set[Variable]:
    """In-scope variables of an operator (SPARQL 1.1 section 18.2.1)."""
    if isinstance(op, ops.BGP):
        out: set[Variable] = set()
        for t in op.triples:
            for term in (t.subject, t.predicate, t.object):
                out.update(variables_of(term))
        return out
    if isinstance(op, ops.PathPattern):
        return set(variables_of(op.subject)) | set(variables_of(op.object))
    if isinstance(op, ops.Table):
        return set(op.vars)
    if isinstance(op, (ops.Join, ops.Union, ops.LeftJoin, ops.IntervalJoin)):
        return in_scope(op.left) | in_scope(op.right)
    if isinstance(op, ops.Minus):
        return in_scope(op.left)
    if isinstance(op, (ops.Filter, ops.OrderBy, ops.Distinct, ops.Reduced, ops.Slice, ops.Service)):
        return in_scope(op.op)
    if isinstance(op, ops.Extend):
        return in_scope(op.op) | {op.var}
    if isinstance(op, (ops.Graph, ops.Window)):
        extra = {op.name} if isinstance(op.name, Variable) else set()
        return in_scope(op.op) | extra
    if isinstance(op, ops.Group):
        keys = {var if var is not None else expr for var, expr in op.keys}
        return {k for k in keys if isinstance(k, Variable)} | {v for v, _ in op.aggregates}
    if isinstance(op, ops.Project):
        return set(op.vars)
    if isinstance(op, ops.Match):
        return _event_scope(op.expr)
    raise TypeError(f"unknown operator {type(op).__name__}")


def _event_scope(expr) -> set[Variable]:
    if isinstance(expr, ops.EventPattern):
        return in_scope(expr.op)
    if isinstance(expr, ops.EventSeq):
        return _event_scope(expr.left) | _event_scope(expr.right)
    return _event_scope(expr.expr)


def expr_vars(expr) -> set[Variable]:
    """Variables mentioned by an expression (outside EXISTS patterns)."""
    if isinstance(expr, Variable):
        return {expr}
    if isinstance(expr, QuotedTriple):
        return set(variables_of(expr))
    if isinstance(expr, (ast.Call, ast.FunctionCall)):
        out: set[Variable] = set()
        for arg in expr.args:
            out |= expr_vars(arg)
        return out
    if isinstance(expr, ast.Aggregate):
        return expr_vars(expr.arg) if expr.arg is not None else set()
    return set()


def _has_aggregate(expr) -> bool:
    if isinstance(expr, ast.Aggregate):
        return True
    if isinstance(expr, (ast.Call, ast.FunctionCall)):
        return any(_has_aggregate(a) for a in expr.args)
    return False


def _vars_outside_aggregates(expr) -> set[Variable]:
    if isinstance(expr, ast.Aggregate):
        return set()
    if isinstance(expr, Variable):
        return {expr}
    if isinstance(expr, (ast.Call, ast.FunctionCall)):
        out: set[Variable] = set()
        for arg in expr.args:
            out |= _vars_outside_aggregates(arg)
        return out
    return set()


class _Translator:
    def __init__(self, query: ast.Query):
        self.query = query
        self.windows: list[ops.WindowDecl] = []
        self.window_names: set = set()
        self.anonymous = 0
        self.events: dict[str, ops.EventPattern] = {}
        self.fresh = 0
        self.bnode_scopes: dict[str, int] = {}
        self.bgp_id = 0

    # ------------------------------------------------------------------------------------------------ query
    def plan(self) -> ops.QueryPlan:
        q = self.query
        default_graphs, named_graphs = [], []
        for source in q.dataset:
            if isinstance(source, ast.DefaultGraphSource):
                default_graphs.append(source.iri)
            elif isinstance(source, ast.NamedGraphSource):
                named_graphs.append(source.iri)
            else:
                self._declare_window(source)
        for decl in q.events:
            if decl.window not in self.window_names:
                raise QueryError(f"EVENT {decl.name} is declared ON {decl.window.n3()}, which is not a declared "
                                 f"window (declare it with FROM NAMED WINDOW {decl.window.n3()} ON <stream> [...])",
                                 line=decl.line, column=decl.column)
            if decl.name in self.events:
                raise QueryError(f"event {decl.name} is declared twice", line=decl.line, column=decl.column)
            body = self.group(decl.group)
            if not isinstance(body, ops.BGP):
                raise QueryError(f"EVENT {decl.name} must hold a basic graph pattern (triple patterns only)",
                                 line=decl.line, column=decl.column)
            self.events[decl.name] = ops.EventPattern(decl.name, decl.window, body)
        op = self.select_like(q, top=True)
        r2s = q.r2s or (q.register.r2s if q.register else None)
        template = None
        if q.form == "CONSTRUCT":
            template = tuple(self._template(q.template or ()))
        return ops.QueryPlan(
            form=q.form, op=op,
            dataset=ops.Dataset(tuple(default_graphs), tuple(named_graphs), tuple(self.windows)),
            template=template, describe=q.describe, r2s=r2s, register=q.register,
            events=tuple(self.events.values()), prefixes=q.prefixes, base=q.base)

    def _template(self, triples):
        for t in triples:
            if not ast.is_simple_predicate(t.predicate):
                raise QueryError("a CONSTRUCT template cannot hold a property path")
            yield t

    def _declare_window(self, source: ast.WindowSource) -> ops.WindowDecl:
        name = source.name
        if not source.merged and name is None:
            self.anonymous += 1
            name = IRI(f"urn:rspark:window:{self.anonymous}")
        if name is not None:
            if name in self.window_names:
                raise QueryError(f"window {name.n3()} is declared twice", line=source.line or None,
                                 column=source.column or None)
            self.window_names.add(name)
        decl = ops.WindowDecl(name, source.stream, source.spec, source.merged)
        self.windows.append(decl)
        return decl

    def select_like(self, q: ast.Query, top: bool = False) -> ops.Op:
        """SPARQL 1.1 section 18.2.4: grouping, aggregates, HAVING, VALUES, select expressions, modifiers."""
        pattern = self.group(q.where) if q.where is not None else ops.UNIT
        scope = in_scope(pattern)

        aggregates: list[tuple[Variable, ast.Aggregate]] = []

        def lift(expr):  # replace aggregates with fresh variables (18.2.4.1)
            if isinstance(expr, ast.Aggregate):
                for var, seen in aggregates:
                    if seen == expr:
                        return var
                var = Variable(f".{len(aggregates)}")
                if expr.arg is not None and _has_aggregate(expr.arg):
                    raise QueryError("aggregates cannot be nested")
                aggregates.append((var, expr))
                return var
            if isinstance(expr, ast.Call):
                return ast.Call(expr.name, tuple(lift(a) for a in expr.args))
            if isinstance(expr, ast.FunctionCall):
                return ast.FunctionCall(expr.iri, tuple(lift(a) for a in expr.args), expr.distinct)
            if isinstance(expr, ast.Exists):
                return ast.Exists(self.group(expr.pattern), expr.negated)
            return expr

        projection = q.projection
        uses_aggregates = bool(q.group_by) or bool(q.having) or any(
            p.expr is not None and _has_aggregate(p.expr) for p in (projection or ())) or any(
            _has_aggregate(h) for h in q.having) or any(_has_aggregate(o.expr) for o in q.order_by)
        if uses_aggregates and projection is None and q.form == "SELECT":
            raise QueryError("SELECT * cannot be used with GROUP BY or aggregates; list the projected variables")

        op = pattern
        if uses_aggregates:
            keys = []
            group_vars: set[Variable] = set()
            for cond in q.group_by:
                if _has_aggregate(cond.expr):
                    raise QueryError("GROUP BY cannot hold an aggregate")
                expr = lift(cond.expr)
                keys.append((cond.var, expr))
                if cond.var is not None:
                    group_vars.add(cond.var)
                elif isinstance(expr, Variable):
                    group_vars.add(expr)
            having = [lift(h) for h in q.having]
            defined: set[Variable] = set(group_vars)
            lifted_projection = []
            for item in projection or ():
                if item.expr is None:
                    if item.var not in defined:
                        raise QueryError(f"variable {item.var.n3()} is projected but not grouped "
                                         f"(add it to GROUP BY or use it inside an aggregate)")
                else:
                    free = _vars_outside_aggregates(item.expr) - defined
                    if free:
                        names = ", ".join(sorted(v.n3() for v in free))
                        raise QueryError(f"{names} used in the projection of {item.var.n3()} outside an aggregate "
                                         f"is not grouped")
                    lifted_projection.append((item.var, lift(item.expr)))
                    defined.add(item.var)
            order = [ast.OrderCondition(lift(o.expr), o.ascending) for o in q.order_by]
            op = ops.Group(op, tuple(keys), tuple(aggregates))
            if having:
                op = ops.Filter(tuple(having), op)
            scope = in_scope(op)
        else:
            lifted_projection = [(p.var, lift(p.expr)) for p in (projection or ()) if p.expr is not None]
            order = [ast.OrderCondition(lift(o.expr), o.ascending) for o in q.order_by]

        if q.values is not None:
            op = self._join(op, ops.Table(q.values.vars, q.values.rows))
            scope |= set(q.values.vars)

        projected_so_far: set[Variable] = set()
        for item in projection or ():
            if item.expr is not None:
                if item.var in scope or item.var in projected_so_far:
                    raise QueryError(f"variable {item.var.n3()} in (... AS {item.var.n3()}) is already in scope; "
                                     "choose a new name")
            projected_so_far.add(item.var)
        for var, expr in lifted_projection:
            op = ops.Extend(op, var, expr)

        if order:
            op = ops.OrderBy(op, tuple(order))
        if q.form == "SELECT":
            if projection is None:
                # SELECT *: the in-scope variables, less those made by the translation (??P path steps, ?.N aggregates)
                variables = tuple(sorted((v for v in in_scope(op) if not v.name.startswith(("?", "."))),
                                         key=lambda v: v.name))
            else:
                variables = tuple(p.var for p in projection)
            op = ops.Project(op, variables)
        if q.modifier == "DISTINCT":
            op = ops.Distinct(op)
        elif q.modifier == "REDUCED":
            op = ops.Reduced(op)
        if q.limit is not None or q.offset is not None:
            op = ops.Slice(op, q.offset or 0, q.limit)
        return op

    # ---------------------------------------------------------------------------------------------- patterns
    def _join(self, left: ops.Op, right: ops.Op) -> ops.Op:
        if isinstance(left, ops.Table) and left.is_unit:
            return right
        if isinstance(right, ops.Table) and right.is_unit:
            return left
        if isinstance(left, ops.BGP) and isinstance(right, ops.BGP):
            return ops.BGP(left.triples + right.triples)
        return ops.Join(left, right)

    def group(self, group) -> ops.Op:
        """Translate a group graph pattern (18.2.2.6): filters apply to the whole group."""
        if isinstance(group, ast.SubSelect):
            return self.select_like(group.query)
        filters = []
        op: ops.Op = ops.UNIT
        pending_triples: list = []
        self.bgp_id += 1
        scope_id = self.bgp_id

        def flush():
            nonlocal op, pending_triples
            if pending_triples:
                op = self._join(op, self._triples(pending_triples, scope_id))
                pending_triples = []

        for element in group.elements:
            if isinstance(element, ast.TriplesBlock):
                pending_triples.extend(element.triples)
                continue
            if isinstance(element, ast.FilterPattern):
                filters.append(element.expr)
                continue
            flush()
            self.bgp_id += 1
            scope_id = self.bgp_id
            if isinstance(element, ast.OptionalPattern):
                right = self.group(element.group)
                # only the OPTIONAL group's own filters become the LeftJoin condition (18.2.2.6); a filter of a
                # nested group { { P FILTER F } } stays inside (the W3C dawg-optional-filter-005-not-simplified)
                own_filters = any(isinstance(e, ast.FilterPattern) for e in element.group.elements)
                if isinstance(right, ops.Filter) and own_filters:
                    expr = right.exprs[0] if len(right.exprs) == 1 else self._conjunction(right.exprs)
                    op = ops.LeftJoin(op, right.op, expr)
                else:
                    op = ops.LeftJoin(op, right, None)
            elif isinstance(element, ast.MinusPattern):
                op = ops.Minus(op, self.group(element.group))
            elif isinstance(element, ast.BindPattern):
                if element.var in in_scope(op):
                    raise QueryError(f"BIND assigns {element.var.n3()}, which is already in scope in this group")
                op = ops.Extend(op, element.var, self.expression(element.expr, allow_aggregates=False))
            else:
                op = self._join(op, self.pattern(element))
        flush()
        if filters:
            op = ops.Filter(tuple(self.expression(f, allow_aggregates=False) for f in filters), op)
        return op

    @staticmethod
    def _conjunction(exprs):
        result = exprs[0]
        for expr in exprs[1:]:
            result = ast.Call("&&", (result, expr))
        return result

    def pattern(self, element) -> ops.Op:
        if isinstance(element, ast.GroupPattern):
            return self.group(element)
        if isinstance(element, ast.SubSelect):
            return self.select_like(element.query)
        if isinstance(element, ast.UnionPattern):
            op = self.group(element.groups[0])
            for kind, group in zip(element.ops, element.groups[1:]):
                right = self.group(group)
                op = ops.Union(op, right) if kind == "UNION" else ops.IntervalJoin(_EP_OPS[kind], op, right)
            return op
        if isinstance(element, ast.GraphPattern):
            return ops.Graph(element.name, self.group(element.group))
        if isinstance(element, ast.ServicePattern):
            return ops.Service(element.name, self.group(element.group), element.silent)
        if isinstance(element, ast.ValuesPattern):
            return ops.Table(element.vars, element.rows)
        if isinstance(element, ast.WindowPattern):
            if isinstance(element.name, IRI) and element.name not in self.window_names:
                declared = ", ".join(sorted(n.n3() for n in self.window_names)) or "none"
                raise QueryError(f"WINDOW {element.name.n3()} names an undeclared window (declared: {declared})",
                                 line=element.line or None, column=element.column or None)
            if isinstance(element.name, Variable) and not self.window_names:
                raise QueryError(f"WINDOW {element.name.n3()} ranges over the named windows, but the query "
                                 "declares none (FROM NAMED WINDOW :w ON :stream [...])",
                                 line=element.line or None, column=element.column or None)
            return ops.Window(element.name, self.group(element.group))
        if isinstance(element, ast.StreamPattern):
            decl = self._declare_window(ast.WindowSource(None, element.stream, element.spec))
            return ops.Window(decl.name, self.group(element.group))
        if isinstance(element, ast.MatchPattern):
            return ops.Match(self._event(element.expr), element.consume)
        raise TypeError(f"unknown pattern {type(element).__name__}")

    def _event(self, expr):
        if isinstance(expr, ast.EventRef):
            if expr.name not in self.events:
                declared = ", ".join(sorted(self.events)) or "none"
                raise QueryError(f"event {expr.name} is used in MATCH but not declared "
                                 f"(EVENT ON :w {{ ... }} AS {expr.name}); declared: {declared}",
                                 line=expr.line or None, column=expr.column or None)
            return self.events[expr.name]
        if isinstance(expr, ast.EventFirst):
            return ops.EventFirst(self._event(expr.expr))
        if isinstance(expr, ast.EventLast):
            return ops.EventLast(self._event(expr.expr))
        return ops.EventSeq(self._event(expr.left), self._event(expr.right), expr.selection)

    # ----------------------------------------------------------------------------------------------- triples
    def _triples(self, triples, scope_id: int) -> ops.Op:
        """Triples and paths of one basic graph pattern (18.2.2.3-4): simple paths become triple patterns."""
        flat: list = []
        for t in triples:
            self._note_bnodes(t, scope_id)
            flat.extend(self._expand_path(t.subject, t.predicate, t.object))
        op: ops.Op = ops.UNIT
        run: list = []
        for item in flat:
            if isinstance(item, ast.TriplePattern):
                run.append(item)
            else:
                if run:
                    op = self._join(op, ops.BGP(tuple(run)))
                    run = []
                op = self._join(op, item)
        if run:
            op = self._join(op, ops.BGP(tuple(run)))
        if isinstance(op, ops.Table) and op.is_unit:
            return ops.BGP(())
        return op

    def _note_bnodes(self, triple, scope_id: int) -> None:
        for term in (triple.subject, triple.object):
            for label in _bnode_labels(term):
                if label.startswith("_b"):
                    continue  # generated for [] and collections: unique by construction
                seen = self.bnode_scopes.setdefault(label, scope_id)
                if seen != scope_id:
                    raise QueryError(f"blank node _:{label} is used in two different basic graph patterns")

    def _expand_path(self, s, path, o):
        if isinstance(path, (IRI, Variable)):
            return [ast.TriplePattern(s, path, o)]
        if isinstance(path, ast.PathInv) and isinstance(path.path, IRI):
            return [ast.TriplePattern(o, path.path, s)]
        if isinstance(path, ast.PathSeq):
            out = []
            current = s
            for i, part in enumerate(path.parts):
                nxt = o if i == len(path.parts) - 1 else self._fresh_var()
                out.extend(self._expand_path(current, part, nxt))
                current = nxt
            return out
        return [ops.PathPattern(s, path, o)]

    def _fresh_var(self) -> Variable:
        self.fresh += 1
        return Variable(f"?P{self.fresh}")

    # ---------------------------------------------------------------------------------------------- expressions
    def expression(self, expr, *, allow_aggregates: bool):
        if isinstance(expr, ast.Aggregate):
            if not allow_aggregates:
                raise QueryError(f"aggregate {expr.name} is only allowed in SELECT, HAVING and ORDER BY")
            return expr
        if isinstance(expr, ast.Call):
            return ast.Call(expr.name, tuple(self.expression(a, allow_aggregates=allow_aggregates)
                                             for a in expr.args))
        if isinstance(expr, ast.FunctionCall):
            return ast.FunctionCall(expr.iri, tuple(self.expression(a, allow_aggregates=allow_aggregates)
                                                    for a in expr.args), expr.distinct)
        if isinstance(expr, ast.Exists):
            return ast.Exists(self.group(expr.pattern), expr.negated)
        return expr


def _bnode_labels(term) -> list[str]:
    if isinstance(term, BlankNode):
        return [term.id]
    if isinstance(term, QuotedTriple):
        return _bnode_labels(term.subject) + _bnode_labels(term.object)
    return []


__all__ = ["QueryError", "compile_query", "in_scope", "translate", "RDF_TYPE"]
