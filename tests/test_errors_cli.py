"""Errors name the file, line, column, offending token and what was expected; `rspark explain` exits with 0 on
success and 2 on a usage or query error (tests/test_cli.py has the other commands and codes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rspark import QueryError, QuerySyntaxError, compile_query, parse_query
from rspark.cli import main
from rspark.model.time import DurationError, parse_duration


def _error(text: str) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as info:
        compile_query(text, source="q.rq")
    return info.value


def test_syntax_error_position_token_expected():
    err = _error("SELECT * WHERE {\n  ?s ?p \n}")
    assert (err.line, err.column, err.token) == (3, 1, "}")
    assert str(err).startswith("q.rq:3:1: unexpected '}'; expected ")
    assert "a variable" in err.expected and "an IRI" in err.expected


def test_unknown_prefix():
    err = _error("SELECT * WHERE { ?s ex:p ?o }")
    assert str(err) == "q.rq:1:21: unknown prefix 'ex:' in ex:p (declare it with PREFIX ex: <...>)"


def test_undeclared_window():
    err = _error("PREFIX : <http://e/>\nSELECT * FROM NAMED WINDOW :w ON :s [RANGE 5]\n"
                 "WHERE { WINDOW :v { ?a ?b ?c } }")
    assert isinstance(err, QueryError)
    assert str(err) == "q.rq:3:9: WINDOW <http://e/v> names an undeclared window (declared: <http://e/w>)"


def test_window_variable_needs_windows():
    err = _error("SELECT * WHERE { WINDOW ?w { ?a ?b ?c } }")
    assert "ranges over the named windows, but the query declares none" in str(err)


def test_undeclared_event():
    err = _error("PREFIX : <http://e/>\nSELECT * FROM NAMED WINDOW :w ON :s [RANGE 5]\n"
                 "EVENT ON :w { ?a ?b ?c } AS E1\nWHERE { MATCH { E1 SEQ E2 } }")
    assert str(err) == ("q.rq:4:24: event E2 is used in MATCH but not declared (EVENT ON :w { ... } AS E2); "
                        "declared: E1")


def test_event_on_undeclared_window():
    err = _error("PREFIX : <http://e/>\nSELECT * EVENT ON :w { ?a ?b ?c } AS E1 WHERE { MATCH { E1 } }")
    assert str(err).startswith("q.rq:2:38: EVENT E1 is declared ON <http://e/w>, which is not a declared window")


@pytest.mark.parametrize("spec,message", [
    ("[RANGE -5 SLIDE 1]", "1:46: a duration cannot be negative, got -5"),
    ("[RANGE PT0S]", "window RANGE must be positive, got PT0S"),
    ("[RANGE PT10S SLIDE PT0S]", "window SLIDE must be positive, got PT0S"),
    ("[RANGE P1M]", "1:46: duration 'P1M' uses years or months, which have no fixed length"),
    ("[FROM 10 TO 2]", "interval window [FROM 10 TO 2] ends before it starts"),
    ("[RANGE TRIPLES 0]", "1:54: count window size must be positive, got 0"),
])
def test_bad_windows(spec, message):
    err = _error(f"SELECT * FROM NAMED WINDOW <w> ON <s> {spec} WHERE {{ WINDOW <w> {{ ?s ?p ?o }} }}")
    assert message in str(err)


def test_scoping_errors():
    assert "BIND assigns ?x, which is already in scope" in str(_error("SELECT * { ?x ?p ?o BIND(1 AS ?x) }"))
    assert "?o is projected but not grouped" in str(_error("SELECT ?o (COUNT(*) AS ?c) { ?s ?p ?o } GROUP BY ?s"))
    assert "aggregate COUNT is only allowed in SELECT, HAVING and ORDER BY" in str(
        _error("SELECT * { ?s ?p ?o FILTER(COUNT(?o) > 1) }"))


def test_durations():
    assert parse_duration("PT1M30S").amount == 90_000 and parse_duration("PT1M30S").absolute
    assert parse_duration("P1D").amount == 86_400_000
    assert parse_duration("PT0.5S").amount == 500
    assert parse_duration("10s").amount == 10_000 and parse_duration("5m").amount == 300_000
    assert parse_duration("100ms").amount == 100
    assert parse_duration("1 MINUTES").amount == 60_000
    assert (parse_duration("5").amount, parse_duration("5").absolute) == (5, False)
    with pytest.raises(DurationError):
        parse_duration("P1Y")


def test_window_forms():
    q = parse_query("""PREFIX : <http://e/>
        SELECT * FROM NAMED WINDOW :a ON :s [RANGE PT10M SLIDE PT1M STARTING AT 2016-03-01T13:00:00Z]
        FROM NAMED WINDOW :b ON :s [RANGE PT10M TUMBLING] FROM NAMED WINDOW :c ON :s [LANDMARK 3]
        FROM NAMED WINDOW :d ON :s [FROM 1 TO 9] FROM NAMED WINDOW :e ON :s [RANGE ELEMENTS 4]
        FROM NAMED WINDOW :f ON :s [RANGE BGP 2] FROM NAMED WINDOW :g ON :s [RANGE 10s STEP 5s]
        FROM STREAM :s [RANGE 5 SLIDE 1] WHERE { ?a ?b ?c }""")
    specs = [w.spec for w in q.dataset]
    assert specs[0].range.amount == 600_000 and specs[0].slide.amount == 60_000
    assert specs[0].start.value == 1456837200000 and specs[0].start.absolute
    assert specs[1].slide == specs[1].range  # TUMBLING
    assert specs[2].start.value == 3
    assert (specs[3].start.value, specs[3].end.value) == (1, 9)
    assert (specs[4].unit, specs[4].size) == ("ELEMENTS", 4)
    assert (specs[5].unit, specs[5].size) == ("BGP", 2)
    assert (specs[6].range.amount, specs[6].slide.amount) == (10_000, 5_000)
    assert q.dataset[7].merged and (specs[7].range.amount, specs[7].range.absolute) == (5, False)
    omitted = parse_query("PREFIX : <http://e/> SELECT * FROM NAMED WINDOW :a ON :s [RANGE 5] WHERE { ?a ?b ?c }")
    assert omitted.dataset[0].spec.slide is None  # no SLIDE written: the profile's implicit slide applies


def test_cli_explain_ok(tmp_path, capsys):
    path = tmp_path / "q.rq"
    path.write_text("SELECT ?s WHERE { ?s ?p ?o }")
    assert main(["explain", str(path)]) == 0
    assert capsys.readouterr().out == "(project (?s)\n  (bgp\n    (triple ?s ?p ?o)))\n"


def test_cli_exit_codes(tmp_path, capsys):
    bad = tmp_path / "bad.rq"
    bad.write_text("SELECT * WHERE { ?s ?p }")
    assert main(["explain", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"rspark: error: {bad}:1:24: unexpected '}}'")
    assert main(["explain", str(tmp_path / "missing.rq")]) == 2  # a missing file named on the command line
    assert capsys.readouterr().err == f"rspark: error: query: no such file: {tmp_path / 'missing.rq'}\n"
    assert main(["explain"]) == 2  # usage error
    assert capsys.readouterr().err == ("rspark: error: the following arguments are required: QUERY.rq "
                                       "(see 'rspark explain --help')\n")
    assert main(["frobnicate"]) == 2


# ------------------------------------------------------------------------------- issue 42: never silent, never noisy


def test_cli_messages_escape_control_characters(tmp_path, capsys):
    """A message that quotes input (here a file name) shows its control characters as escapes, on one line."""
    missing = tmp_path / "q\x1b[2J\n\u202e.rq"
    assert main(["explain", str(missing)]) == 2
    assert capsys.readouterr().err == f"rspark: error: query: no such file: {tmp_path}/q\\x1b[2J\\n\\u202e.rq\n"


def _stream_query(tmp_path) -> str:
    query = tmp_path / "q.rq"
    query.write_text("PREFIX : <http://e/>\nSELECT ?v FROM NAMED WINDOW :w ON :s [RANGE 5 SLIDE 5] "
                     "WHERE { WINDOW :w { ?x :p ?v } }")
    return str(query)


def test_cli_a_binary_stream_is_one_error_line(spark, tmp_path, capsys):
    """A binary file given as a stream: exit 1 and one line, not a warning per line and an empty success."""
    from tests.support.binary import binary_bytes

    garbage = tmp_path / "garbage.nq"
    garbage.write_bytes(binary_bytes(120))
    assert main(["replay", _stream_query(tmp_path), "--stream", f"http://e/s={garbage}"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"rspark: error: {garbage}: no valid stream element (120 rejected; first: line 1, column 1: "
                   "'\\x00' is not allowed at the beginning of a prefix name)\n")


def _partly_bad(tmp_path, bad: int):
    """A stream of one valid element (at 5) and ``bad`` malformed lines after it, each naming its number."""
    path = tmp_path / "partly.nq"
    prov = "http://www.w3.org/ns/prov#generatedAtTime"
    lines = ['<http://e/x> <http://e/p> "1" <http://e/g> .',
             f'<http://e/g> <{prov}> "5"^^<http://www.w3.org/2001/XMLSchema#integer> .']
    lines += [f"bad line {i}" for i in range(1, bad + 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_caps_the_warnings_of_a_file(spark, tmp_path, capsys):
    """The first ten problems of a file are printed, then one line counts the others; -v prints them all."""
    path = _partly_bad(tmp_path, 25)
    args = ["replay", _stream_query(tmp_path), "--stream", f"http://e/s={path}", "--format", "jsonl"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    bad = [f"rspark: warning: {path}:{i + 2}:1: The subject of a triple must be an IRI or a blank node"
           for i in range(1, 26)]
    assert err.splitlines() == [*bad[:10], f"rspark: warning: ... and 15 more bad elements in {path} (-v lists them)"]
    assert main([*args, "-v"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("rspark: warning:")]
    assert warnings == bad


HAVING = "SELECT ?s (COUNT(?o) AS ?c) WHERE {?s ?p ?o} GROUP BY ?s "
AFTER_HAVING = ("end of query, an aggregate, a function, EXISTS, an IRI, '(', NOT, NOW, a prefixed name, LIMIT, "
                "OFFSET, ORDER, VALUES")
CONSTRAINT = "an aggregate, a function, EXISTS, an IRI, '(', NOT, NOW, a prefixed name"
AFTER_AGGREGATE = "'=', '>=', '>', IN, '<=', '<', '-', '!=', NOT, '+', ')', '/', '*', '||', '&&'"


@pytest.mark.parametrize("tail,message", [
    ("HAVING COUNT(?o) > 1 garbage", f"1:75: unexpected '>'; expected {AFTER_HAVING}"),  # not bracketted
    ("HAVING (COUNT(?o) > 1) garbage", f"1:81: unexpected 'garbage'; expected {AFTER_HAVING}"),
    ("HAVING (COUNT(?o) > 1))", f"1:80: unexpected ')'; expected {AFTER_HAVING}"),
    ("HAVING", f"1:58: unexpected end of query; expected {CONSTRAINT}"),
    ("HAVING ?c > 1", f"1:65: unexpected '?c'; expected {CONSTRAINT}"),
    ("HAVING (COUNT(?o) > 1", "1:78: unexpected end of query; expected '-', '+', ')', '/', '*', '||', '&&'"),
    ("HAVING (COUNT(?o) AS ?x)", f"1:76: unexpected 'AS'; expected {AFTER_AGGREGATE}"),
    ("HAVING COUNT(?o AS ?x)", f"1:74: unexpected 'AS'; expected {AFTER_AGGREGATE}"),
])
def test_having_errors_list_only_what_may_follow(tail, message):
    """The expected tokens are those the parser takes at that point of this query: never the AS of a SELECT
    expression after a HAVING aggregate (LALR(1) merges the two contexts), and not only ')' inside a bracket."""
    err = _error(HAVING + tail)
    assert str(err) == f"q.rq:{message}"
    assert "AS" not in err.expected


def test_as_is_expected_where_it_may_follow():
    assert str(_error("SELECT (COUNT(?o) ?c) WHERE {?s ?p ?o}")) == (
        "q.rq:1:19: unexpected '?c'; expected '=', '>=', '>', IN, '<=', '<', '-', '!=', NOT, '+', '/', '*', AS, '||', "
        "'&&'")


@pytest.mark.parametrize("text,at,rspql,sparql", [
    ("FOO SELECT", "1:1: unexpected 'FOO'", "ASK, CONSTRUCT, DESCRIBE, SELECT, BASE, PREFIX, REGISTER",
     "ASK, CONSTRUCT, DESCRIBE, SELECT, BASE, PREFIX"),
    ("SELECT garbage", "1:8: unexpected 'garbage'",
     "DISTINCT, DSTREAM, ISTREAM, '(', REDUCED, RSTREAM, '*', a variable", "DISTINCT, '(', REDUCED, '*', a variable"),
    ("SELECT * FROM garbage", "1:15: unexpected 'garbage'", "an IRI, a prefixed name, STREAM, GRAPH, NAMED",
     "an IRI, a prefixed name, GRAPH, NAMED"),
    ("SELECT * FROM NAMED garbage", "1:21: unexpected 'garbage'", "an IRI, a prefixed name, STREAM, WINDOW, GRAPH",
     "an IRI, a prefixed name, GRAPH"),
    ("SELECT * WHERE { ?s ?p ?o . garbage }", "1:29: unexpected 'garbage'",
     "'[]', a blank node, a number, false, an IRI, '{', '(', '[', '()', a prefixed name, '<<', '}', STREAM, a string, "
     "true, a variable, WINDOW, BIND, FILTER, GRAPH, MATCH, MINUS, OPTIONAL, SERVICE, ...",
     "'[]', a blank node, a number, false, an IRI, '{', '(', '[', '()', a prefixed name, '<<', '}', a string, true, "
     "a variable, BIND, FILTER, GRAPH, MINUS, OPTIONAL, SERVICE, VALUES"),
])
def test_sparql_syntax_errors_name_no_keyword_of_continuous_queries(tmp_path, capsys, text, at, rspql, sparql):
    """`rspark sparql` (and Engine.sparql) refuses continuous queries, so its syntax errors do not suggest REGISTER,
    an R2S operator, STREAM, WINDOW, EVENT or MATCH; `rspark explain` (and replay) do."""
    path = tmp_path / "q.rq"
    path.write_text(text)
    data = Path(__file__).resolve().parents[1] / "rspark" / "samples" / "sensors.ttl"
    assert main(["sparql", str(path), "--data", str(data)]) == 2  # before Spark starts
    assert capsys.readouterr().err == f"rspark: error: {path}:{at}; expected {sparql}\n"
    assert main(["explain", str(path)]) == 2
    assert capsys.readouterr().err == f"rspark: error: {path}:{at}; expected {rspql}\n"
    with pytest.raises(QuerySyntaxError) as info:  # Engine.sparql's compilation
        compile_query(text, source="q.rq", sparql=True)
    assert str(info.value) == f"q.rq:{at}; expected {sparql}"


def test_cli_an_empty_stream_file_is_a_warning_before_spark_starts(tmp_path, capsys, monkeypatch):
    """A 0-byte stream file is known to be empty from its size: the warning comes before Spark starts (here
    starting Spark fails, and the warning is already printed)."""
    import rspark.engine.engine as engine_module
    from rspark.errors import RsparkError

    def no_spark(*args, **kwargs):
        raise RsparkError("Spark would start here")

    monkeypatch.setattr(engine_module, "get_session", no_spark)
    empty = tmp_path / "empty.nq"
    empty.write_bytes(b"")
    assert main(["replay", _stream_query(tmp_path), "--stream", f"http://e/s={empty}"]) == 1
    assert capsys.readouterr().err == (f"rspark: warning: stream <http://e/s> has no elements ({empty} is empty)\n"
                                       "rspark: error: Spark would start here\n")


def test_cli_an_empty_stream_file_is_one_warning(spark, tmp_path, capsys):
    empty = tmp_path / "empty.trig"
    empty.write_bytes(b"")
    assert main(["replay", _stream_query(tmp_path), "--stream", f"http://e/s={empty}", "--format", "jsonl"]) == 0
    assert capsys.readouterr() == ("", f"rspark: warning: stream <http://e/s> has no elements ({empty} is empty)\n")


FINE = "is too fine (at most 60 decimal places)"
LARGE = "is too large (at most 10^18)"


@pytest.mark.parametrize("spec,message", [
    ('[RANGE 5 STARTING AT "1e-9999999999999999999"]', f'2:58: time instant 1e-9999999999999999999 {FINE}'),
    ('[RANGE 5 STARTING AT "-1e-9999999999999999999"]', f'2:58: time instant -1e-9999999999999999999 {FINE}'),
    ('[RANGE 5 STARTING AT "1e9999999999999999999"]', f'2:58: time instant 1e9999999999999999999 {LARGE}'),
    ('[RANGE 5 STARTING AT "1E+99999999999999999999999"^^xsd:decimal]',
     f'2:58: time instant 1E+99999999999999999999999 {LARGE}'),
    ('[RANGE 5 SLIDE 1 STARTING AT "2.5e-10000000000000000000"^^xsd:double]',
     f'2:66: time instant 2.5e-10000000000000000000 {FINE}'),
    ('[LANDMARK "1e-9999999999999999999"]', f'2:47: time instant 1e-9999999999999999999 {FINE}'),
    ('[FROM 0 TO "1e9999999999999999999"]', f'2:48: time instant 1e9999999999999999999 {LARGE}'),
])
def test_numeric_extremes_in_a_window_are_located_query_errors(tmp_path, capsys, spec, message):
    """A number whose exponent is beyond what a decimal holds (|e| > 10^18) is an instant too fine or too large,
    a query error with its line and column (exit 2), as a smaller one is."""
    path = tmp_path / "q.rq"
    path.write_text("PREFIX : <http://e/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
                    f"SELECT * FROM NAMED WINDOW :w ON :s {spec} WHERE {{ WINDOW :w {{ ?a ?b ?c }} }}")
    assert main(["explain", str(path)]) == 2
    assert capsys.readouterr().err == f"rspark: error: {path}:{message}\n"


def test_zero_with_any_exponent_is_the_instant_0(tmp_path, capsys):
    path = tmp_path / "q.rq"
    path.write_text('SELECT * FROM NAMED WINDOW <w> ON <s> [RANGE 5 STARTING AT "0.0e-9999999999999999999"] '
                    "WHERE { WINDOW <w> { ?a ?b ?c } }")
    assert main(["explain", str(path)]) == 0
    [query] = compile_query(path.read_text()).dataset.windows
    assert query.spec.start.value == 0


@pytest.mark.parametrize("value,problem", [
    ("1e9999999999999999999", LARGE), ("-1e-9999999999999999999", FINE), ("1e30", LARGE), ("1e-61", FINE)])
def test_numeric_extremes_in_until_and_times_are_usage_errors(tmp_path, capsys, monkeypatch, value, problem):
    """--until and --times numbers have the bounds of the query's instants, checked before Spark starts (here
    starting Spark would fail)."""
    import rspark.engine.engine as engine_module
    from rspark.model.time import Timeline, WindowError
    from rspark.model.timestamps import parse_time

    monkeypatch.setattr(engine_module, "get_session", lambda *a, **k: pytest.fail("Spark started"))
    stream = tmp_path / "s.nq"
    stream.write_text('<http://e/a> <http://e/p> "1" <http://e/g> .\n')
    args = ["replay", _stream_query(tmp_path), "--stream", f"http://e/s={stream}"]
    assert main([*args, f"--until={value}"]) == 2
    assert capsys.readouterr().err == f"rspark: error: --until: time {value} {problem}\n"
    assert main([*args, f"--times=5,{value}"]) == 2
    assert capsys.readouterr().err == f"rspark: error: --times: time {value} {problem}\n"
    with pytest.raises(WindowError) as info:  # Engine.replay(until=..., times=...)
        parse_time(value, Timeline("numeric", 1))
    assert str(info.value) == f"time {value} {problem}"
