"""Regressions of the query front end's fuzzing (issue 23): each input once raised an unexpected exception (or an
error without a position), or took quadratic time. Every error is now a ``QuerySyntaxError`` (``QueryError`` for a
rule a parsed query breaks) that names the problem and points at the line and column of the text as written.

Pure Python (parse, translate, print): no Spark."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rspark.algebra import ops
from rspark.algebra.expr import Aggregate, Exists
from rspark.algebra.sse import to_sse
from rspark.model.iri import resolve_iri
from rspark.syntax.parser import MAX_DEPTH, MAX_INTEGER, MAX_NESTING, QuerySyntaxError, parse_query
from rspark.syntax.translate import MAX_ALGEBRA_DEPTH, QueryError, compile_query, translate
from rspark.syntax.unparse import unparse

P = "PREFIX : <http://e/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"


def _window(spec: str) -> str:
    return P + f"SELECT * FROM NAMED WINDOW :w ON :s {spec} WHERE {{ WINDOW :w {{ ?s ?p ?o }} }}"


def _offset(text: str, line: int, column: int) -> int:
    """The offset in ``text`` of a 1-based line and column."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return starts[line - 1] + column - 1


def _error(text: str, cls=QuerySyntaxError, *, at: str | None = None, occurrence: int = 1) -> QuerySyntaxError:
    """The error ``text`` raises (parse, translate and print), of class ``cls``, with a position; with ``at``,
    the position is that of the ``occurrence``-th occurrence of ``at`` in the text."""
    with pytest.raises(cls) as info:
        to_sse(compile_query(text, source="q.rq"))
    err = info.value
    assert err.line is not None and err.column is not None, str(err)
    assert f"q.rq:{err.line}:{err.column}: " in str(err)
    if at is not None:
        expected = -1
        for _ in range(occurrence):
            expected = text.index(at, expected + 1)
        assert _offset(text, err.line, err.column) == expected, (str(err), text[expected:expected + 30])
    return err


# ------------------------------------------------------------------------------------ 1. invalid date-times


def test_invalid_datetime_token():
    err = _error(_window("[FROM 5 TO 2016-03-01T13:00:60Z]"), at="2016-03-01T13:00:60Z")
    assert "invalid xsd:dateTime '2016-03-01T13:00:60Z'" in err.message and "second" in err.message


@pytest.mark.parametrize("literal", ['"tomorrow"^^xsd:dateTime', '"2016-13-01T00:00:00Z"^^xsd:dateTime',
                                     '"2016-02-30T00:00:00"^^xsd:dateTime', '"0000-01-01T00:00:00Z"^^xsd:dateTime'])
def test_invalid_datetime_literal(literal):
    err = _error(_window(f"[RANGE PT1M STARTING AT {literal}]"), at=literal.split("^^")[0])
    assert "xsd:dateTime" in err.message


def test_datetime_with_long_fraction_and_offset():
    spec = parse_query(_window('[FROM "2016-03-01T13:00:00.1234567+01:00"^^xsd:dateTime TO 2016-03-01T13:00:00Z]'))
    start, end = spec.dataset[0].spec.start, spec.dataset[0].spec.end
    assert end.value - start.value == 3_600_000 - 123  # one hour earlier, 123.4567 ms later (rounded)


# ------------------------------------------------------------------------------------ 2. NaN and other non-numbers


@pytest.mark.parametrize("spec,bad", [('[FROM "NaN" TO 9]', '"NaN"'), ('[LANDMARK "NaN"]', '"NaN"'),
                                      ('[LANDMARK "Infinity"]', '"Infinity"'), ('[FROM 1 TO "-inf"]', '"-inf"'),
                                      ('[LANDMARK "1_000"]', '"1_000"'), ('[LANDMARK " 5"]', '" 5"')])
def test_instant_not_a_number(spec, bad):
    err = _error(_window(spec), at=bad)
    assert "not a time instant" in err.message


def test_instant_too_large():
    err = _error(_window('[LANDMARK "1e999999999"]'), at='"1e999999999"')
    assert "too large" in err.message


@pytest.mark.parametrize("spec,bad,problem", [("[RANGE 1000000000000000001]", "1000000000000000001", "too large"),
                                              ("[RANGE 0." + "0" * 70 + "1]", "0.000", "too fine"),
                                              ("[RANGE PT" + "9" * 5000 + "S]", "PT999", "too large"),
                                              ("[RANGE " + "9" * 4301 + "]", "9" * 10, "too large")])
def test_duration_out_of_range(spec, bad, problem):
    # printing such a duration (explain) once converted it to a 4,301-digit int, or a billion-digit text
    err = _error(_window(spec), at=bad)
    assert problem in err.message


# ------------------------------------------------------------------------------------ 3. 4,301-digit integers


def test_huge_limit_and_offset_saturate():
    """SPARQL takes any integer: beyond 2^63-1 (no solution sequence is that long) LIMIT and OFFSET mean the same
    as 2^63-1, which the parser reads them as."""
    huge = "9" * 4301
    q = parse_query(f"SELECT * {{ ?s ?p ?o }} LIMIT {huge} OFFSET 0{huge}")
    assert q.limit == q.offset == MAX_INTEGER
    plan = translate(q)
    assert isinstance(plan.op, ops.Slice) and (plan.op.start, plan.op.length) == (MAX_INTEGER, MAX_INTEGER)
    assert f"(slice {MAX_INTEGER} {MAX_INTEGER}" in to_sse(plan)
    assert parse_query(unparse(q)) == q
    assert parse_query("SELECT * { ?s ?p ?o } LIMIT 007").limit == 7


def test_huge_count_window():
    size = "9" * 4301
    err = _error(_window(f"[RANGE TRIPLES {size}]"), at=size)
    assert "count window size" in err.message and str(MAX_INTEGER) in err.message
    assert len(err.message) < 200  # the number is cut in the message
    assert parse_query(_window(f"[RANGE TRIPLES {MAX_INTEGER}]")).dataset[0].spec.size == MAX_INTEGER
    _error(_window(f"[RANGE TRIPLES {MAX_INTEGER + 1}]"), at=str(MAX_INTEGER + 1))


# ------------------------------------------------------------------------------------ 4. EXISTS inside aggregates


def test_exists_inside_aggregate_is_translated():
    plan = compile_query("SELECT (COUNT(EXISTS {?s ?p ?o}) AS ?c) {?s ?p ?o}")
    group = plan.op.op.op
    assert isinstance(group, ops.Group)
    (_, aggregate), = group.aggregates
    assert isinstance(aggregate, Aggregate) and isinstance(aggregate.arg, Exists)
    assert isinstance(aggregate.arg.pattern, ops.BGP)  # an operator, not the syntax tree's group
    assert "(count (exists\n" in to_sse(plan)


def test_exists_inside_aggregates_of_having_order_and_group_by():
    plan = compile_query("SELECT (SUM(IF(NOT EXISTS { ?s ?p 1 }, 1, 0)) AS ?n) { ?s ?p ?o } GROUP BY ?s "
                         "HAVING (MAX(EXISTS { ?s ?p 2 })) ORDER BY (MIN(EXISTS { ?s ?p 3 }))")
    group = next(n for n in ops.descendants(plan.op) if isinstance(n, ops.Group))
    patterns = [n.pattern for n in ops.descendants(group.aggregates) if isinstance(n, Exists)]
    assert len(patterns) == 3 and all(isinstance(p, ops.BGP) for p in patterns)
    to_sse(plan)


def test_same_aggregate_twice_is_one_aggregate():
    plan = compile_query("SELECT (COUNT(EXISTS { ?s ?p 1 }) AS ?a) (COUNT(EXISTS { ?s ?p 1 }) AS ?b) { ?s ?p ?o }")
    group = next(n for n in ops.descendants(plan.op) if isinstance(n, ops.Group))
    assert len(group.aggregates) == 1


# ------------------------------------------------------------------------------------ 5. GROUP BY an expression


def test_group_by_expression_prints():
    text = to_sse(compile_query("SELECT (COUNT(*) AS ?c) {?s ?p ?o} GROUP BY STR(?s) ?p (LCASE(?o) AS ?l)"))
    assert "(group ((str ?s) ?p (?l (lcase ?o))) ((?.0 (count)))" in text


# ------------------------------------------------------------------------------------ 6. nesting


def _nested(kind: str, n: int) -> str:
    body = {
        "subselect": ("{ SELECT * ", "{ ?s ?p ?o }", " }"),
        "filter_exists": ("{ ?s ?p ?o FILTER EXISTS ", "{ ?s ?p ?o }", " }"),
        "window": ("{ WINDOW :w ", "{ ?s ?p ?o }", " }"),
        "optional": ("{ ?s ?p ?o OPTIONAL ", "{ ?s ?p ?o }", " }"),
        "group": ("{ ", "{ ?s ?p ?o }", " }"),
        "parens": ("{ ?s ?p ?o FILTER(", "?o", ") }"),
    }[kind]
    opening, inner, closing = body
    if kind == "parens":
        return P + "SELECT * " + opening + "1 + (" * n + inner + ")" * n + closing
    return P + "SELECT * FROM NAMED WINDOW :w ON :s [RANGE 5] WHERE " + opening * n + inner + closing * n


@pytest.mark.parametrize("kind", ["subselect", "filter_exists", "window", "optional", "group", "parens"])
def test_deep_nesting_is_refused_with_a_position(kind):
    for n in (200, 1000):  # past the limit of nested nodes, and past the limit of nested brackets
        text = _nested(kind, n)
        err = _error(text)
        assert "nesting too deep" in err.message
        assert f"at most {MAX_DEPTH} levels" in err.message or f"at most {MAX_NESTING} levels" in err.message
        assert text[_offset(text, err.line, err.column)] in "{(OWFS"  # a bracket, or the keyword of the deep node


@pytest.mark.parametrize("kind", ["subselect", "filter_exists", "window", "optional", "group", "parens"])
def test_nesting_below_the_limit_works_everywhere(kind):
    """The deepest nesting of each kind that the limits let through: parse, translate, print, unparse and
    compare trees (all recursive walks) work, also with 300 Python frames already on the stack."""
    n = 1
    while True:  # the largest n accepted
        try:
            parse_query(_nested(kind, n + 1))
        except QuerySyntaxError:
            break
        n += 1
    assert n >= 20
    text = _nested(kind, n)

    def run(depth):
        if depth:
            return run(depth - 1)
        q = parse_query(text)
        assert parse_query(unparse(q)) == q
        try:
            plan = translate(q)
        except QueryError as exc:  # deeper in the algebra than in the syntax tree
            assert "nesting too deep" in exc.message and exc.line is not None
            return
        to_sse(plan)
        assert hash(plan) == hash(translate(parse_query(text)))

    run(300)


def test_bracket_limit_points_at_the_bracket():
    text = "SELECT * { ?s ?p ?o FILTER(" + "(" * 1000 + "?o" + ")" * 1000 + ") }"  # parentheses make no nodes
    err = _error(text, at="(", occurrence=MAX_NESTING)  # the group's { is the first bracket
    assert f"opens level {MAX_NESTING + 1} of nested brackets" in err.message
    assert f"at most {MAX_NESTING} levels" in err.message
    _error("SELECT * { ?s ?p " + "<< " * 1000 + "<a> <b> <c> >>" + " <b> <c> >>" * 999 + " }",
           at="<<", occurrence=MAX_NESTING)


def test_quoted_triples_nested_too_deep():
    err = _error("SELECT * { ?s ?p " + "<< " * 200 + "<a> <b> <c> >>" + " <b> <c> >>" * 199 + " }", at="{")
    assert "nesting too deep" in err.message  # a quoted triple has no position: the group's is given


@pytest.mark.slow
@pytest.mark.parametrize("op", ["||", "&&"])
def test_long_flat_logical_chains_are_shallow(op):
    text = "SELECT * { ?s ?p ?o FILTER(" + f" {op} ".join(f"?o = {i}" for i in range(3000)) + ") }"
    q = parse_query(text)
    plan = translate(q)
    assert _height(plan.op) < 30  # a balanced tree: log2(3000) levels
    to_sse(plan)
    assert parse_query(unparse(q)) == q
    short = compile_query("SELECT * { ?s ?p ?o FILTER(?a || ?b || ?c) }").op.op.exprs[0]
    assert short.args[0].args[1].name == "b"  # short chains keep their left-deep shape


def test_long_union_is_shallow():
    text = "SELECT * { " + " UNION ".join(f"{{ ?s ?p {i} }}" for i in range(3000)) + " }"
    plan = compile_query(text)
    assert _height(plan.op) < 30
    leaves = [n for n in ops.descendants(plan.op) if isinstance(n, ops.BGP)]
    assert [bgp.triples[0].object.lexical for bgp in leaves] == [str(i) for i in range(3000)]  # in order
    to_sse(plan)


@pytest.mark.parametrize("element", ["OPTIONAL {{ ?s :p{i} ?o{i} }}", "BIND({i} AS ?b{i})", "MINUS {{ ?s :p{i} ?o }}",
                                     "{{ ?s :p{i}* ?o }}"])
def test_long_sequence_of_elements(element):
    """Each element of a group holds the ones before it in the algebra: a long sequence is refused (at the
    element that goes past the limit) before any recursive walk meets it."""
    ok = P + "SELECT * { ?s ?p ?o " + " ".join(element.format(i=i) for i in range(MAX_ALGEBRA_DEPTH - 20)) + " }"
    to_sse(compile_query(ok))
    text = P + "SELECT * { ?s ?p ?o " + " ".join(element.format(i=i) for i in range(1000)) + " }"
    err = _error(text, QueryError)
    assert f"at most {MAX_ALGEBRA_DEPTH} levels" in err.message
    keyword = element.split()[0].split("(")[0].replace("{{", "{")
    assert text[_offset(text, err.line, err.column):].startswith(keyword)


def test_many_projections():
    items = " ".join(f"(1 AS ?v{i})" for i in range(1000))
    err = _error(f"SELECT {items} {{ }}", QueryError)
    assert "nesting too deep" in err.message


def _height(node) -> int:
    from rspark.syntax.translate import _Heights

    return _Heights()(node)


# ------------------------------------------------------------------------------------ 7. \u escapes


def test_positions_count_escapes_as_written():
    text = 'SELECT * { ?s ?p "\\u00e9\\u00e9\\u00e9" . FILTER(?x = ) }'
    err = _error(text, at=")")
    assert err.token == ")"


def test_positions_after_an_escaped_line_break():
    text = 'SELECT * {\n ?s ?p """a\\u000Ab""" .\n ?s ?p ?o BIND(1 AS ?o) }'  # \u000A: no line break of the text
    err = _error(text, QueryError, at="BIND")
    assert (err.line, err.column) == (3, 11)


def test_position_of_an_escaped_unknown_prefix():
    text = "SELECT * {\n  ?s \\u0065x:p ?o }"  # \u0065x:p is ex:p
    err = _error(text, at="\\u0065x:p")
    assert "unknown prefix 'ex:'" in err.message


# ------------------------------------------------------------------------------------ 8. positions of all errors


@pytest.mark.parametrize("spec,at,message", [
    ("[RANGE 0]", "0]", "window RANGE must be positive, got 0"),
    ("[RANGE PT0S]", "PT0S", "window RANGE must be positive, got PT0S"),
    ("[RANGE 5 SLIDE 0]", "0]", "window SLIDE must be positive, got 0"),
    ("[RANGE 5 STEP PT0S]", "PT0S", "window SLIDE must be positive"),
    ("[0 SECONDS]", "0 SECONDS", "window range must be positive"),
    ("[FROM 10 TO 2]", "2]", "interval window [FROM 10 TO 2] ends before it starts"),
    ("[FROM 2016-03-01T13:00:00Z TO 5]", "5]", "ends before it starts"),  # ticks compare on every timeline
    ('[FROM "2016-03-01T13:00:00Z"^^xsd:dateTime TO "2016-03-01T12:00:00Z"^^xsd:dateTime]',
     '"2016-03-01T12', "ends before it starts"),
    ("[RANGE TRIPLES 0]", "0]", "count window size must be positive"),
])
def test_window_errors_have_positions(spec, at, message):
    err = _error(_window(spec), at=at)
    assert message in err.message


def test_computed_every_zero():
    text = P + "REGISTER STREAM :q COMPUTED EVERY PT0S AS SELECT * WHERE { ?s ?p ?o }"
    assert "COMPUTED EVERY period must be positive" in _error(text, at="PT0S").message


@pytest.mark.parametrize("text,at,message", [
    ("SELECT * { VALUES (?x ?y) { (1 2) (1) } }", "(1)", "VALUES row has 1 values for 2 variables (?x ?y)"),
    ("SELECT * { ?s ?p ?o } VALUES (?x) { () }", "()", "VALUES row has 0 values for 1 variables"),
])
def test_values_rows(text, at, message):
    assert message in _error(P + text, at=at).message


@pytest.mark.parametrize("text,at,message", [
    ("SELECT ?p\n  ?x (COUNT(*) AS ?c) { ?x ?p ?o } GROUP BY ?p", "?x (", "?x is projected but not grouped"),
    ("SELECT (?x AS ?x) { ?x ?p ?o }", "(?x", "?x in (... AS ?x) is already in scope"),
    ("SELECT (1 AS ?y) (2 AS ?y) { ?x ?p ?o }", "(2", "?y in (... AS ?y) is already in scope"),
    ("SELECT * { ?x ?p ?o\n  BIND(1 AS ?x) }", "BIND", "BIND assigns ?x, which is already in scope"),
    ("SELECT * { ?x ?p ?o OPTIONAL { ?x ?q ?y } BIND(1 AS ?y) }", "BIND", "BIND assigns ?y"),
    ("SELECT (?o + 1 AS ?v) (COUNT(*) AS ?c) { ?s ?p ?o } GROUP BY ?s", "(?o", "?o used in the projection of ?v"),
    ("SELECT * { ?s ?p ?o } GROUP BY ?s", "SELECT", "SELECT * cannot be used with GROUP BY"),
    ("SELECT (COUNT(*) AS ?c) { ?s ?p ?o } GROUP BY (COUNT(?o))", "(COUNT(?o", "GROUP BY cannot hold an aggregate"),
    ("SELECT (SUM(COUNT(?o)) AS ?c) { ?s ?p ?o }", "(SUM", "aggregates cannot be nested"),
    ("SELECT (COUNT(*) AS ?c) { ?s ?p ?o } HAVING (SUM(MAX(?o)) > 1)", "HAVING", "aggregates cannot be nested"),
    ("SELECT * { ?s ?p ?o FILTER(COUNT(?o) > 1) }", "FILTER", "aggregate COUNT is only allowed in SELECT"),
    ("SELECT * { ?s ?p ?o BIND(SUM(?o) AS ?t) }", "BIND", "aggregate SUM is only allowed in SELECT"),
    ("SELECT * { _:b ?p ?o . { ?s ?p ?o } _:b ?q ?r }", "_:b", "_:b is used in two different basic graph"),
    ("SELECT * FROM NAMED WINDOW :w ON :s [RANGE 5] FROM NAMED WINDOW :w ON :t [RANGE 5] { ?s ?p ?o }",
     "WINDOW :w ON :t", "window <http://e/w> is declared twice"),
    ("SELECT * FROM NAMED STREAM :s [RANGE 5] FROM NAMED STREAM :s [RANGE 6] { ?s ?p ?o }",
     "STREAM :s [RANGE 6", "window <http://e/s> is declared twice"),
    ("SELECT * FROM NAMED :s WIN [RANGE 5] AS :w FROM NAMED :t WIN [RANGE 5] AS :w { ?s ?p ?o }",
     "NAMED :t", "window <http://e/w> is declared twice"),
    ("SELECT * { WINDOW :v { ?s ?p ?o } }", "WINDOW", "names an undeclared window"),
    ("SELECT * { ?s :p ?o {| :q 1 |} . ?s :p/:q ?o {| :r 2 |} }", "{| :r", "annotation {| |} cannot follow"),
])
def test_rule_errors_have_positions(text, at, message):
    occurrence = 2 if at == "_:b" else 1
    err = _error(P + text, QueryError if "annotation" not in message else QuerySyntaxError, at=at,
                 occurrence=occurrence)
    assert message in err.message


def test_sub_select_errors_have_positions():
    text = P + "SELECT * { { SELECT ?x (COUNT(*) AS ?c) { ?x ?p ?o } GROUP BY ?p } }"
    _error(text, QueryError, at="?x (")


def test_end_of_query_has_a_position():
    err = _error("SELECT * {")
    assert err.line == 1
    err = _error("")
    assert (err.line, err.column) == (1, 1)


# ------------------------------------------------------------------------------------ 9. quadratic corners


@pytest.mark.slow
def test_many_distinct_aggregates_are_linear(monkeypatch):
    """16,000 distinct aggregates are looked up by hash, not compared with every earlier one: the aggregate
    comparisons are counted (they happen only on hash collisions)."""
    calls = [0]
    original = Aggregate.__eq__

    def counting(self, other):
        calls[0] += 1
        return original(self, other)

    monkeypatch.setattr(Aggregate, "__eq__", counting)
    n = 16_000
    text = "SELECT (COALESCE(" + ", ".join(f"COUNT(?o{i})" for i in range(n)) + ") AS ?c) { ?s ?p ?o }"
    plan = compile_query(text)
    group = plan.op.op.op
    assert len(group.aggregates) == n
    assert calls[0] < n  # a pairwise comparison of the aggregates would make about n^2 / 2 calls


def test_long_dot_segment_paths_are_linear():

    path = "a/../" * 300_000 + "b"  # 1.5 MB (about 0.5 s; a quadratic removal of the segments took 7 s)
    assert resolve_iri(path, "http://e/x/") == "http://e/x/b"
    plan = compile_query(f"BASE <http://e/x/y> SELECT * {{ <{path}> ?p ?o }}")
    assert plan.op.op.triples[0].subject.value == "http://e/x/b"


@pytest.mark.parametrize("reference,expected", [
    ("../../g", "http://a/g"), ("./", "http://a/b/c/"), (".", "http://a/b/c/"), ("..", "http://a/b/"),
    ("g/..", "http://a/b/c/"), ("g/../..", "http://a/b/"), ("/./g", "http://a/g"), ("/../g", "http://a/g"),
    ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"), ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"), ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"), ("g;x=1/./y", "http://a/b/c/g;x=1/y"), ("g;x=1/../y", "http://a/b/c/y"),
    ("../../../g", "http://a/g"), ("//x/a/../b", "http://x/b"),
])
def test_rfc3986_dot_segments(reference, expected):
    assert resolve_iri(reference, "http://a/b/c/d;p?q") == expected


@pytest.mark.slow
def test_many_sub_groups_are_linear():

    # about 0.7 s (merging the BGPs pairwise was quadratic); the suite's --durations shows a regression
    text = "SELECT * { " + " ".join(f"{{ ?s <p{i}> ?o }}" for i in range(5_000)) + " }"
    plan = compile_query(text)
    assert len(plan.op.op.triples) == 5_000  # one BGP


# ------------------------------------------------------------------------------------ the command line


@pytest.mark.parametrize("text,at", [
    (_window("[FROM 5 TO 2016-03-01T13:00:60Z]"), "2016-03-01T13:00:60Z"),
    ("SELECT * {\n  ?s ?p ?o BIND(1 AS ?o) }", "BIND"),
    ("SELECT * " + "{ " * 1000 + "?s ?p ?o" + " }" * 1000, None),
])
def test_cli_explain_reports_line_and_column(tmp_path, text, at):
    path = tmp_path / "bad.rq"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "rspark", "explain", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    err = None
    try:
        compile_query(text, source=str(path))
    except QuerySyntaxError as exc:
        err = exc
    assert err is not None and err.line is not None
    assert f"{err.line}:{err.column}" in lines[0] or f"line {err.line}, column {err.column}" in lines[0]
    if at is not None:
        assert _offset(text, err.line, err.column) == text.index(at)


# ------------------------------------------------------------------------------------ 10. event policies

EVENTS = (P + "SELECT * FROM NAMED WINDOW :w ON :s [RANGE 10 SLIDE 2]\n"
          "EVENT ON :w { ?x :p ?y } AS E1\nEVENT ON :w { ?y :q ?z } AS E2\n")


@pytest.mark.parametrize("where, at, message", [
    ("MATCH { E1 SEQ[OLDEST] E2 }", "OLDEST", "unknown selection policy 'OLDEST' in SEQ[...]: NAIVE, CHRONOLOGICAL, "
                                              "RECENT or UNRESTRICTED (SEQ alone)"),
    ("MATCH CONSUME oldest { E1 SEQ E2 }", "oldest", "unknown consumption policy 'oldest' in MATCH CONSUME: "
                                                     "CHRONOLOGICAL, RECENT or NONE"),
])
def test_unknown_event_policies_are_named_where_they_are(where, at, message):
    err = _error(EVENTS + f"WHERE {{ {where} }}", at=at)
    assert err.message == message


@pytest.mark.parametrize("where, sse", [
    ("MATCH { E1 SEQ[recent] E2 SEQ[Unrestricted] E1 }", "(match (seq (unrestricted) (seq (recent) (event E1"),
    ("MATCH CONSUME none { E1 SEQ[NAIVE] E2 }", "(match (consume none) (seq (naive)"),
])
def test_event_policies_are_read_in_any_case(where, sse):
    assert sse in " ".join(to_sse(compile_query(EVENTS + f"WHERE {{ {where} }}", source="q.rq")).split())
