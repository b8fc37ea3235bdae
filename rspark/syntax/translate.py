"""Syntax tree -> algebra (SPARQL 1.1 section 18.2, extended with the RSP nodes), with the static checks that SPARQL
and RSP-QL require: variable scoping (BIND, SELECT expressions, sub-queries), grouping (no ungrouped variables in the
projection), blank node label scope, aggregates only where allowed, windows and events declared before use.

One module (about 650 lines): one translator class, a method per kind of syntax node, sharing the scope and the
positions its errors report.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from rspark.algebra import ops
from rspark.algebra.ops import QueryForm, SelectModifier
from rspark.model.terms import IRI, RDF_TYPE, BlankNode, Literal, QuotedTriple, Variable, variables_of
from rspark.rsp.policies import DefaultWindow, ReportPolicy
from rspark.rsp.profiles import get_profile
from rspark.syntax import ast
from rspark.syntax.parser import QuerySyntaxError, build_chain, node_children, parse_query
from rspark.syntax.refusals import refusals
from rspark.syntax.unparse import unparse_group

# the operators written between groups, loosest first (translate's _chain)
_PRECEDENCE = (("UNION",), ("SEQ", "OPTIONALSEQ"), ("EQUALS", "EQUALSOPTIONAL"))

# The deepest algebra a query may translate to, counting operators and the expressions inside them. The walks
# over the algebra (printing it, Spark compiling it) are recursive and take a few Python frames per level: 200
# levels keep them well inside Python's default recursion limit of 1000.
MAX_ALGEBRA_DEPTH = 200
# More than this many branches of plain UNION are joined as a balanced tree (UNION is associative, and the tree
# keeps the branches' order), so that a long UNION chain does not nest one level per branch.
_BALANCED_UNION_OVER = 8


class QueryError(QuerySyntaxError):
    """A query that parses but breaks a rule of SPARQL or RSP-QL (scoping, grouping, undeclared window or event).
    Like ``QuerySyntaxError`` it has ``line`` and ``column`` (of the element that breaks the rule; None when the
    tree was built by hand, without positions)."""


def _at(node) -> dict:
    """``line`` and ``column`` keyword arguments for an error about ``node`` (a syntax tree node or a
    ``(line, column)`` pair); None for what has no position."""
    if isinstance(node, tuple):
        line, column = node
    else:
        line, column = getattr(node, "line", 0), getattr(node, "column", 0)
    return {"line": line or None, "column": column or None}


def ensure_evaluable(plan: ops.QueryPlan, *, continuous: bool | None = None, source: str | None = None,
                     profile=None) -> None:
    """Raise a located QueryError (``not supported: CONSTRUCT: why``) for the first construct of ``plan`` that
    rspark parses but does not evaluate when the query runs continuously (``continuous``; by default when it reads
    a stream) or once (rspark.syntax.refusals). ``profile`` (a name or a Profile; None: the default one) decides
    how a stream read with no window is read: element by element (stream-to-stream), where an aggregate or an
    event pattern over it is refused, or through the profile's landmark window."""
    continuous = plan.is_continuous if continuous is None else continuous
    for r in refusals_under(plan, profile):
        if continuous or not r.continuous_only:
            raise QueryError(f"not supported: {r.construct}: {r.reason}", line=r.line, column=r.column,
                             source=source)


def refusals_under(plan: ops.QueryPlan, profile=None) -> tuple:
    """The refusals of ``plan`` that apply under ``profile`` (None: the default one): those about a stream read
    with no window only where the profile reads such a stream element by element."""
    element_by_element = get_profile(profile).default_window is DefaultWindow.ELEMENT
    return tuple(r for r in plan.refusals if element_by_element or not r.windowless)


def translate(query: ast.Query) -> ops.QueryPlan:
    """Translate a parsed query into its algebra (``QueryPlan``)."""
    return _Translator(query).plan()


def compile_query(text: str, *, base_iri: str | None = None, source: str | None = None,
                  sparql: bool = False) -> ops.QueryPlan:
    """Parse and translate: text -> ``QueryPlan``. Raises ``QuerySyntaxError`` (``QueryError`` for rule breaks).
    ``sparql``: a SPARQL 1.1 query (see :func:`~rspark.syntax.parser.parse_query`)."""
    try:
        return translate(parse_query(text, base_iri=base_iri, source=source, sparql=sparql))
    except QueryError as exc:
        if source and not exc.source:
            raise exc.with_source(source) from None
        raise


# ----------------------------------------------------------------------------------------------- variable scopes


def in_scope(op) -> set[Variable]:
    """In-scope variables of an operator (SPARQL 1.1 section 18.2.1). Iterative: a long chain of joins, OPTIONALs
    or BINDs is as deep as it is long."""
    out: set[Variable] = set()
    stack = [op]
    while stack:
        op = stack.pop()
        if isinstance(op, ops.BGP):
            for t in op.triples:
                for term in (t.subject, t.predicate, t.object):
                    out.update(variables_of(term))
        elif isinstance(op, ops.PathPattern):
            out.update(variables_of(op.subject))
            out.update(variables_of(op.object))
        elif isinstance(op, ops.Table):
            out.update(op.vars)
        elif isinstance(op, (ops.Join, ops.Union, ops.LeftJoin, ops.IntervalJoin)):
            stack.append(op.right)
            stack.append(op.left)
        elif isinstance(op, ops.Minus):
            stack.append(op.left)
        elif isinstance(op, (ops.Filter, ops.OrderBy, ops.Distinct, ops.Reduced, ops.Slice, ops.Service)):
            stack.append(op.op)
        elif isinstance(op, ops.Extend):
            out.add(op.var)
            stack.append(op.op)
        elif isinstance(op, (ops.Graph, ops.Window)):
            if isinstance(op.name, Variable):
                out.add(op.name)
            stack.append(op.op)
        elif isinstance(op, ops.Group):
            keys = {var if var is not None else expr for var, expr in op.keys}
            out.update(k for k in keys if isinstance(k, Variable))
            out.update(v for v, _ in op.aggregates)
        elif isinstance(op, ops.Project):
            out.update(op.vars)
        elif isinstance(op, ops.Match):
            out |= _event_scope(op.expr)
        else:
            raise TypeError(f"unknown operator {type(op).__name__}")
    return out


def _event_scope(expr) -> set[Variable]:
    out: set[Variable] = set()
    stack = [expr]
    while stack:
        expr = stack.pop()
        if isinstance(expr, ops.EventPattern):
            out |= in_scope(expr.op)
        elif isinstance(expr, ops.EventSeq):
            stack.append(expr.right)
            stack.append(expr.left)
        else:
            stack.append(expr.expr)
    return out


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


# Values inside the algebra that hold no operator or expression (the depth measure does not look into them).
_LEAVES = frozenset({str, int, float, Decimal, bool, type(None), IRI, Literal, Variable, BlankNode})


class _Heights:
    """The height of algebra nodes (operators and the expressions and quoted triples inside them: 1 for a node
    with nothing below it), remembered per node so that measuring a tree again as it grows costs only its new
    nodes. Iterative: it measures trees that no recursive walk should see."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[object, int]] = {}  # id -> (node, height): the node is kept, its id stays its own

    @staticmethod
    def _children(node) -> list:
        out: list = []
        node_children(node, out, _LEAVES)
        return out

    def __call__(self, root) -> int:
        memo = self.memo
        known = memo.get(id(root))
        if known is not None:
            return known[1]
        stack = [(root, None)]
        while stack:
            node, children = stack.pop()
            if children is None:
                if id(node) in memo:
                    continue
                children = self._children(node)
                stack.append((node, children))
                stack.extend((c, None) for c in children if id(c) not in memo)
            else:
                memo[id(node)] = (node, 1 + max((memo[id(c)][1] for c in children), default=0))
        return memo[id(root)][1]


class _Translator:
    def __init__(self, query: ast.Query):
        self.query = query
        self.windows: list[ops.WindowDecl] = []
        self.window_names: set = set()
        self.stream_windows: dict = {}  # SPARQLstream FROM NAMED STREAM :s [...]: its name -> the source
        self.anonymous = 0
        self.events: dict[str, ops.EventPattern] = {}
        self.fresh = 0
        self.bnode_scopes: dict[str, int] = {}
        self.bnode_seen: dict[str, int] = {}  # label -> occurrences translated so far
        self.bnode_positions: dict[str, list] = {}  # label -> its (line, column) in text order
        for label, line, column in query.bnode_positions:
            self.bnode_positions.setdefault(label, []).append((line, column))
        self.bgp_id = 0
        self.heights = _Heights()

    def _bounded(self, op, where):
        """``op``, unless the algebra it heads is deeper than ``MAX_ALGEBRA_DEPTH`` (then a QueryError at
        ``where``, the element being translated)."""
        if self.heights(op) > MAX_ALGEBRA_DEPTH:
            raise QueryError(
                f"nesting too deep: the query's algebra would nest more than {MAX_ALGEBRA_DEPTH} operators and "
                "expressions deep here (nested groups, sub-queries and EXISTS, and the OPTIONAL, MINUS, BIND, "
                "sub-group and (expression AS ?var) elements of a group or SELECT, each of which holds the ones "
                f"before it); at most {MAX_ALGEBRA_DEPTH} levels are allowed", **_at(where))
        return op

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
            self._read_by_name(decl.window)
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
        op = self._bounded(self.select_like(q, top=True), q)
        r2s = q.r2s or (q.register.r2s if q.register else None)
        template = None
        if q.form == QueryForm.CONSTRUCT:
            template = tuple(self._template(q.template or (), q))
        return ops.QueryPlan(
            form=q.form, op=op,
            dataset=ops.Dataset(tuple(default_graphs), tuple(named_graphs), tuple(self.windows)),
            template=template, describe=q.describe, r2s=r2s, register=q.register,
            events=tuple(self.events.values()), prefixes=q.prefixes, base=q.base, refusals=refusals(q))

    @staticmethod
    def _check_report(source, q) -> None:
        """A window's REPORT clause says when it reports; ``COMPUTED EVERY`` gives the period of its PERIODIC,
        and without PERIODIC there the two would say different things."""
        spec = source.spec
        if spec is None or spec.report is None or q.register is None or q.register.every is None:
            return
        if spec.report_every is not None:
            raise QueryError("the REPORT clause of the window on this line gives its period (EVERY) and the query "
                             "another (COMPUTED EVERY): leave one out",
                             line=source.line, column=source.column)
        if ReportPolicy.PERIODIC not in spec.report:
            raise QueryError("COMPUTED EVERY sets the period of a PERIODIC report policy, and the REPORT clause of "
                             "the window on this line names none: add PERIODIC to it, or leave COMPUTED EVERY out",
                             line=source.line, column=source.column)

    def _template(self, triples, q):
        for t in triples:
            if not ast.is_simple_predicate(t.predicate):
                raise QueryError("a CONSTRUCT template cannot hold a property path", **_at(q))
            yield t

    def _declare_window(self, source: ast.WindowSource) -> ops.WindowDecl:
        name = source.name
        if not source.merged and name is None:
            self.anonymous += 1
            name = IRI(f"urn:rspark:window:{self.anonymous}")
        if name is not None:
            if name in self.window_names:
                raise QueryError(f"window {name.n3()} is declared twice", **_at(source))
            self.window_names.add(name)
        if source.merged and name is not None:
            # SPARQLstream: the window's content is in the default graph; its name is declared as a named window
            # too once a block reads it by that name (WINDOW :s { ... }, EVENT ON :s)
            self.stream_windows[name] = source
            name = None
        self._check_report(source, self.query)
        decl = ops.WindowDecl(name, source.stream, source.spec, source.merged)
        self.windows.append(decl)
        return decl

    def _read_by_name(self, name) -> None:
        """A block reads the window ``name`` (``WINDOW ?w`` reads them all): a SPARQLstream window of that name
        becomes a named window too."""
        names = [name] if isinstance(name, IRI) else list(self.stream_windows) if isinstance(name, Variable) else []
        for n in names:
            source = self.stream_windows.pop(n, None)
            if source is not None:
                self.windows.append(ops.WindowDecl(n, source.stream, source.spec, False))

    def select_like(self, q: ast.Query, top: bool = False) -> ops.Op:
        """SPARQL 1.1 section 18.2.4: grouping, aggregates, HAVING, VALUES, select expressions, modifiers."""
        pattern = self.group(q.where) if q.where is not None else ops.UNIT
        scope = in_scope(pattern)
        clauses = {keyword: (line, column) for keyword, line, column in q.clause_positions}
        having_at = clauses.get("HAVING", q)
        order_at = clauses.get("ORDER BY", q)

        aggregates: list[tuple[Variable, ast.Aggregate]] = []
        aggregate_vars: dict = {}  # the aggregate as written -> its variable (a dict: linear in their number)

        def lift(expr, where):  # replace aggregates with fresh variables (18.2.4.1)
            if isinstance(expr, ast.Aggregate):
                try:
                    known = aggregate_vars.get(expr)
                except TypeError:  # pragma: no cover - an unhashable tree built by hand
                    known = next((v for v, seen in aggregates if seen == expr), None)
                if known is not None:
                    return known
                if expr.arg is not None and _has_aggregate(expr.arg):
                    raise QueryError("aggregates cannot be nested", **_at(where))
                var = Variable(f".{len(aggregates)}")
                translated = expr
                if expr.arg is not None:  # EXISTS in the argument: its pattern is translated as anywhere else
                    translated = dataclasses.replace(
                        expr, arg=self.expression(expr.arg, allow_aggregates=False, where=where))
                aggregates.append((var, translated))
                try:
                    aggregate_vars[expr] = var
                except TypeError:  # pragma: no cover
                    pass
                return var
            if isinstance(expr, ast.Call):
                return ast.Call(expr.name, tuple(lift(a, where) for a in expr.args))
            if isinstance(expr, ast.FunctionCall):
                return ast.FunctionCall(expr.iri, tuple(lift(a, where) for a in expr.args), expr.distinct)
            if isinstance(expr, ast.Exists):
                return ast.Exists(self.group(expr.pattern), expr.negated)
            return expr

        projection = q.projection
        uses_aggregates = bool(q.group_by) or bool(q.having) or any(
            p.expr is not None and _has_aggregate(p.expr) for p in (projection or ())) or any(
            _has_aggregate(h) for h in q.having) or any(_has_aggregate(o.expr) for o in q.order_by)
        if uses_aggregates and projection is None and q.form == QueryForm.SELECT:
            raise QueryError("SELECT * cannot be used with GROUP BY or aggregates; list the projected variables",
                             **_at(q))

        op = pattern
        if uses_aggregates:
            keys = []
            group_vars: set[Variable] = set()
            for cond in q.group_by:
                if _has_aggregate(cond.expr):
                    raise QueryError("GROUP BY cannot hold an aggregate", **_at(cond))
                expr = lift(cond.expr, cond)
                keys.append((cond.var, expr))
                if cond.var is not None:
                    group_vars.add(cond.var)
                elif isinstance(expr, Variable):
                    group_vars.add(expr)
            having = [lift(h, having_at) for h in q.having]
            defined: set[Variable] = set(group_vars)
            lifted_projection = []
            for item in projection or ():
                if item.expr is None:
                    if item.var not in defined:
                        raise QueryError(f"variable {item.var.n3()} is projected but not grouped "
                                         f"(add it to GROUP BY or use it inside an aggregate)", **_at(item))
                else:
                    free = _vars_outside_aggregates(item.expr) - defined
                    if free:
                        names = ", ".join(sorted(v.n3() for v in free))
                        raise QueryError(f"{names} used in the projection of {item.var.n3()} outside an aggregate "
                                         f"is not grouped", **_at(item))
                    lifted_projection.append((item, lift(item.expr, item)))
                    defined.add(item.var)
            order = [ast.OrderCondition(lift(o.expr, order_at), o.ascending) for o in q.order_by]
            op = ops.Group(op, tuple(keys), tuple(aggregates))
            if having:
                op = ops.Filter(tuple(having), op)
            scope = in_scope(op)
        else:
            lifted_projection = [(p, lift(p.expr, p)) for p in (projection or ()) if p.expr is not None]
            order = [ast.OrderCondition(lift(o.expr, order_at), o.ascending) for o in q.order_by]

        if q.values is not None:
            op = self._join(op, ops.Table(q.values.vars, q.values.rows))
            scope |= set(q.values.vars)

        projected_so_far: set[Variable] = set()
        for item in projection or ():
            if item.expr is not None:
                if item.var in scope or item.var in projected_so_far:
                    raise QueryError(f"variable {item.var.n3()} in (... AS {item.var.n3()}) is already in scope; "
                                     "choose a new name", **_at(item))
            projected_so_far.add(item.var)
        long = len(lifted_projection) > 16  # measured at each: the error names the item past the limit
        for item, expr in lifted_projection:
            op = ops.Extend(op, item.var, expr)
            if long:
                self._bounded(op, item)

        if order:
            op = ops.OrderBy(op, tuple(order))
        if q.form == QueryForm.SELECT:
            if projection is None:
                # SELECT *: the in-scope variables, less those made by the translation (??P path steps, ?.N aggregates)
                variables = tuple(sorted((v for v in in_scope(op) if not v.name.startswith(("?", "."))),
                                         key=lambda v: v.name))
            else:
                variables = tuple(p.var for p in projection)
            op = ops.Project(op, variables)
        if q.modifier == SelectModifier.DISTINCT:
            op = ops.Distinct(op)
        elif q.modifier == SelectModifier.REDUCED:
            op = ops.Reduced(op)
        if q.limit is not None or q.offset is not None:
            op = ops.Slice(op, q.offset or 0, q.limit)
        return self._bounded(op, q)

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
        merged: list | None = None  # triples of the BGP that op stands for, while BGPs keep coming (op is then None)
        scope: set[Variable] | None = None  # in_scope(op) from the first BIND on, kept as op grows (not walked again)
        long = len(group.elements) > 16  # measured at each element: the error names the one past the limit
        pending_triples: list = []
        self.bgp_id += 1
        scope_id = self.bgp_id

        def join(right: ops.Op) -> None:
            """op = self._join(op, right), with consecutive BGPs merged once at the end (merging them pairwise
            copied the triples so far at each step: quadratic in the number of BGPs)."""
            nonlocal op, merged
            if scope is not None:
                scope.update(in_scope(right))
            if isinstance(right, ops.BGP):
                if merged is not None:
                    merged.extend(right.triples)
                    return
                if isinstance(op, ops.BGP):
                    merged = list(op.triples) + list(right.triples)
                    op = None
                    return
            settle()
            op = self._join(op, right)

        def settle() -> ops.Op:
            nonlocal op, merged
            if merged is not None:
                op, merged = ops.BGP(tuple(merged)), None
            return op

        def flush():
            nonlocal pending_triples
            if pending_triples:
                join(self._triples(pending_triples, scope_id))
                pending_triples = []

        for element in group.elements:
            if isinstance(element, ast.TriplesBlock):
                pending_triples.extend(element.triples)
                continue
            if isinstance(element, ast.FilterPattern):
                filters.append(element)
                continue
            flush()
            self.bgp_id += 1
            scope_id = self.bgp_id
            if isinstance(element, ast.OptionalPattern):
                right = self.group(element.group)
                if scope is not None:
                    scope.update(in_scope(right))
                # only the OPTIONAL group's own filters become the LeftJoin condition (18.2.2.6); a filter of a
                # nested group { { P FILTER F } } stays inside (the W3C dawg-optional-filter-005-not-simplified)
                own_filters = any(isinstance(e, ast.FilterPattern) for e in element.group.elements)
                if isinstance(right, ops.Filter) and own_filters:
                    expr = right.exprs[0] if len(right.exprs) == 1 else build_chain("&&", right.exprs)
                    op = ops.LeftJoin(settle(), right.op, expr)
                else:
                    op = ops.LeftJoin(settle(), right, None)
            elif isinstance(element, ast.MinusPattern):
                op = ops.Minus(settle(), self.group(element.group))
            elif isinstance(element, ast.BindPattern):
                if scope is None:
                    scope = in_scope(settle())
                if element.var in scope:
                    raise QueryError(f"BIND assigns {element.var.n3()}, which is already in scope in this group",
                                     **_at(element))
                op = ops.Extend(settle(), element.var,
                                self.expression(element.expr, allow_aggregates=False, where=element))
                scope.add(element.var)
            else:
                join(self.pattern(element))
            if long and merged is None:  # (a BGP is as deep as its deepest quoted triple: measured at the end)
                self._bounded(op, element)
        flush()
        settle()
        if filters:
            op = ops.Filter(tuple(self.expression(f.expr, allow_aggregates=False, where=f) for f in filters), op)
        return self._bounded(op, group)

    def pattern(self, element) -> ops.Op:
        if isinstance(element, ast.GroupPattern):
            return self.group(element)
        if isinstance(element, ast.SubSelect):
            return self.select_like(element.query)
        if isinstance(element, ast.UnionPattern):
            branches = [self.group(g) for g in element.groups]
            if len(branches) > _BALANCED_UNION_OVER and all(kind == "UNION" for kind in element.ops):
                while len(branches) > 1:  # pairs, then pairs of pairs: log2(n) levels, the branches in order
                    paired = [ops.Union(branches[i], branches[i + 1]) for i in range(0, len(branches) - 1, 2)]
                    if len(branches) % 2:
                        paired.append(branches[-1])
                    branches = paired
                return self._bounded(branches[0], element)
            return self._chain(branches, element)
        if isinstance(element, ast.GraphPattern):
            return ops.Graph(element.name, self.group(element.group))
        if isinstance(element, ast.ServicePattern):
            return ops.Service(element.name, self.group(element.group), element.silent,
                               query=f"SELECT * WHERE {unparse_group(element.group)}")
        if isinstance(element, ast.ValuesPattern):
            return ops.Table(element.vars, element.rows)
        if isinstance(element, ast.WindowPattern):
            self._read_by_name(element.name)
            if isinstance(element.name, IRI) and element.name not in self.window_names:
                declared = ", ".join(sorted(n.n3() for n in self.window_names)) or "none"
                raise QueryError(f"WINDOW {element.name.n3()} names an undeclared window (declared: {declared})",
                                 **_at(element))
            if isinstance(element.name, Variable) and not self.window_names:
                raise QueryError(f"WINDOW {element.name.n3()} ranges over the named windows, but the query "
                                 "declares none (FROM NAMED WINDOW :w ON :stream [...])", **_at(element))
            return ops.Window(element.name, self.group(element.group))
        if isinstance(element, ast.StreamPattern):
            decl = self._declare_window(ast.WindowSource(None, element.stream, element.spec,
                                                         line=element.line, column=element.column))
            return ops.Window(decl.name, self.group(element.group))
        if isinstance(element, ast.MatchPattern):
            return ops.Match(self._event(element.expr), element.consume)
        raise TypeError(f"unknown pattern {type(element).__name__}")

    def _chain(self, branches: list, element: ast.UnionPattern):
        """``{P0} op1 {P1} op2 {P2} ...`` by precedence, each level left-associative: EQUALS and EQUALSOPTIONAL
        (simultaneous patterns) bind tighter than SEQ and OPTIONALSEQ (one pattern after another), which bind
        tighter than UNION (alternatives), so ``{A} EQUALS {B} SEQ {C} EQUALS {D}`` is ``(A EQUALS B) SEQ (C EQUALS
        D)``, as the W3C RSP CG requirements read it (docs/events.md)."""
        def combine(kinds, parts, level):
            if level == len(_PRECEDENCE):
                return parts[0]
            tighter, group_kinds, group_parts = [], [], [parts[0]]
            outer = []
            for kind, part in zip(kinds, parts[1:]):
                if kind in _PRECEDENCE[level]:
                    tighter.append((group_kinds, group_parts))
                    outer.append(kind)
                    group_kinds, group_parts = [], [part]
                else:
                    group_kinds.append(kind)
                    group_parts.append(part)
            tighter.append((group_kinds, group_parts))
            operands = [combine(k, p, level + 1) for k, p in tighter]
            op = operands[0]
            for kind, right in zip(outer, operands[1:]):
                op = ops.Union(op, right) if kind == "UNION" else ops.IntervalJoin(ops.IntervalKind[kind], op, right)
                self._bounded(op, element)
            return op

        return combine(list(element.ops), branches, 0)

    def _event(self, expr):
        if isinstance(expr, ast.EventRef):
            if expr.name not in self.events:
                declared = ", ".join(sorted(self.events)) or "none"
                raise QueryError(f"event {expr.name} is used in MATCH but not declared "
                                 f"(EVENT ON :w {{ ... }} AS {expr.name}); declared: {declared}", **_at(expr))
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
                count = self.bnode_seen[label] = self.bnode_seen.get(label, 0) + 1
                seen = self.bnode_scopes.setdefault(label, scope_id)
                if seen != scope_id:
                    # the label's n-th occurrence in the text, n its occurrences translated so far (the translation
                    # reads the patterns in text order but for EXISTS, translated with the filters at the group's end)
                    places = self.bnode_positions.get(label) or [(0, 0)]
                    raise QueryError(f"blank node _:{label} is used in two different basic graph patterns",
                                     **_at(places[min(count, len(places)) - 1]))

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
    def expression(self, expr, *, allow_aggregates: bool, where=None):
        """An expression with its EXISTS patterns translated; ``where`` (the FILTER, BIND or SELECT item holding
        it) positions the errors."""
        if isinstance(expr, ast.Aggregate):
            if not allow_aggregates:
                raise QueryError(f"aggregate {expr.name} is only allowed in SELECT, HAVING and ORDER BY",
                                 **_at(where))
            return expr
        if isinstance(expr, ast.Call):
            return ast.Call(expr.name, tuple([self.expression(a, allow_aggregates=allow_aggregates, where=where)
                                              for a in expr.args]))
        if isinstance(expr, ast.FunctionCall):
            return ast.FunctionCall(expr.iri, tuple([self.expression(a, allow_aggregates=allow_aggregates,
                                                                     where=where) for a in expr.args]),
                                    expr.distinct)
        if isinstance(expr, ast.Exists):
            return ast.Exists(self.group(expr.pattern), expr.negated)
        return expr


def _bnode_labels(term) -> list[str]:
    if isinstance(term, BlankNode):
        return [term.id]
    if isinstance(term, QuotedTriple):
        return _bnode_labels(term.subject) + _bnode_labels(term.object)
    return []


__all__ = ["QueryError", "compile_query", "ensure_evaluable", "in_scope", "refusals_under", "translate", "RDF_TYPE"]
