"""Fuzzing the query front end (issue 23): parse, translate, print (``explain``) and unparse must end in success or in
a documented user error, and a syntax or query error must say where (line and column), for

* queries made by hypothesis from a small grammar of SPARQL / RSP-QL constructs, with values that break rules
  mixed in (zero or backwards windows, huge numbers, bad date-times, undeclared windows, scoping errors, deep
  nesting, long chains);
* mutations of the corpus queries (this repository's test queries and samples, and the W3C syntax and evaluation
  test queries read in place from the shared test data): characters inserted, deleted, swapped, spans
  duplicated, tokens inserted, deep nesting and long chains inserted. A fixed seed keeps runs reproducible.

Pure Python: no Spark.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.algebra.sse import to_sse
from rspark.errors import NotSupportedError, RsparkError
from rspark.model.time import WindowError
from rspark.syntax.parser import QuerySyntaxError, parse_query
from rspark.syntax.translate import QueryError, translate
from rspark.syntax.unparse import unparse
from tests.conftest import REPO, TESTDATA

_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")

# What a user can cause: QueryError is a QuerySyntaxError; the others have no position to give.
USER_ERRORS = (QuerySyntaxError, WindowError, NotSupportedError, RsparkError)


def _positioned(exc: QuerySyntaxError, text: str) -> None:
    """A syntax or query error points into the text: a line of it, and a column of that line (or just after it)."""
    assert exc.line is not None and exc.column is not None, f"no position: {exc!r}\n{text[:2000]}"
    lines = text.split("\n")
    assert 1 <= exc.line <= len(lines), f"line {exc.line} of {len(lines)}: {exc}"
    assert 1 <= exc.column <= len(lines[exc.line - 1]) + 1, f"column {exc.column}: {exc}"
    assert f":{exc.line}:{exc.column}: " in str(exc)


def check(text: str, base_iri: str | None = None) -> str:
    """Run the front end on ``text``; the outcome: ``syntax``, ``query`` (an error with a position), ``other`` (a
    documented error) or ``ok``. Anything else fails the test (a traceback with the input)."""
    try:
        query = parse_query(text, base_iri=base_iri)
    except QuerySyntaxError as exc:
        _positioned(exc, text)
        return "syntax"
    printed = unparse(query)
    again = parse_query(printed)  # what unparse prints parses, to the same tree
    if query.base is None or _ABSOLUTE.match(query.base):  # (IRIs resolved against a relative BASE, still
        assert again == query, printed  # relative, would be resolved again: unparse cannot print them)
    try:
        plan = translate(query)
    except QueryError as exc:
        _positioned(exc, text)
        return "query"
    except USER_ERRORS:
        return "other"
    to_sse(plan)
    return "ok"


# --------------------------------------------------------------------------------------------- generated queries

VARS = ("?a", "?b", "?c", "$d")
IRIS = (":p", ":q", ":x", "<http://ex.org/r>", "<rel>", "a", ":")
LITERALS = ("1", "-2.5", "3e2", '"s"', '"s"@en', '"1"^^xsd:integer', "true", '"\\u00e9"', "'''x\ny'''")
DURATIONS = ("PT10M", "PT1M", "10s", "5m", "100ms", "5", "2.5", "1 MINUTES", "P1D")
BAD_DURATIONS = ("0", "PT0S", "P1M", "99999999999999999999", "0." + "0" * 70 + "1")
INSTANTS = ("5", "10.5", "2016-03-01T13:00:00Z", '"7"', '"2016-03-01T14:00:00"^^xsd:dateTime')
BAD_INSTANTS = ("2016-03-01T13:00:60Z", '"NaN"', '"Infinity"', '"tomorrow"^^xsd:dateTime', "9" * 30)
BIG = "9" * 4301
# numbers whose exponent a decimal cannot hold (|e| > 10^18): each ended in decimal.InvalidOperation (issue 42)
HUGE_EXPONENT_INSTANTS = ('"1e-9999999999999999999"', '"1e9999999999999999999"', '"-1e-9999999999999999999"',
                          '"0.0e-9999999999999999999"', '"1E+99999999999999999999999"^^xsd:decimal',
                          '"2.5e-10000000000000000000"^^xsd:double')


class _Gen:
    def __init__(self, draw):
        self.draw = draw
        self.windows: list[str] = []
        self.events: list[str] = []
        self.fresh = 0

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def coin(self, p: float = 0.5) -> bool:
        return self.draw(st.integers(0, 99)) < p * 100

    def count(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def var(self) -> str:
        return self.pick(VARS)

    def value(self, good, bad) -> str:
        """A value of ``good``, or now and then one of ``bad`` (that the front end must refuse)."""
        return self.pick(bad) if self.coin(0.06) else self.pick(good)

    def duration(self) -> str:
        return self.extreme_duration() if self.coin(0.1) else self.value(DURATIONS, BAD_DURATIONS)

    def instant(self) -> str:
        return self.extreme_instant() if self.coin(0.1) else self.value(INSTANTS, BAD_INSTANTS)

    # numeric extremes: values at and beyond the bounds of durations and instants (10^18, 60 decimal places) and of
    # counts (2^63 - 1), many digits, exponents beyond what a decimal holds, zeros with exponents

    def digits(self) -> str:
        kind = self.pick(("small", "bound", "long", "zeros"))
        if kind == "small":
            return str(self.count(0, 99))
        if kind == "bound":
            return self.pick(("999999999999999999", "1000000000000000000", "1000000000000000001",
                              "9223372036854775807", "9223372036854775808", "18446744073709551616"))
        if kind == "long":
            return self.pick("123456789") + "0" * self.count(18, 90)
        return "0" * self.count(1, 30) + str(self.count(0, 9))

    def exponent(self) -> str:
        size = self.pick((0, 1, 2, 18, 59, 60, 61, 400, 999999, 999999999999999999, 10**18, 10**19, 10**25))
        return f"{self.pick(('e', 'E'))}{self.pick(('', '+', '-'))}{size + self.count(0, 1)}"

    def number(self, exponent: bool = True) -> str:
        text = self.pick(("", "", "-", "+")) + self.digits()
        if self.coin(0.5):
            text += "." + self.pick(("", "5", "0" * self.count(55, 65) + "1", "9" * self.count(1, 80)))
        if exponent and self.coin(0.6):
            text += self.exponent()
        return text

    def extreme_instant(self) -> str:
        if self.coin(0.15):
            return self.pick(HUGE_EXPONENT_INSTANTS)
        number = self.number()
        form = self.pick(("bare", "string", "decimal", "double", "integer"))
        if form == "bare":  # INTEGER / DECIMAL tokens have no exponent (one is a syntax error)
            return self.number(exponent=self.coin(0.1)).lstrip("+")
        if form == "string":
            return f'"{number}"'
        return f'"{number}"^^xsd:{form}'

    def extreme_duration(self) -> str:
        number = self.number(exponent=self.coin(0.1)).lstrip("+")
        form = self.pick(("bare", "short", "iso", "days", "words"))
        if form == "bare":
            return number
        if form == "short":
            return number.lstrip("-") + self.pick(("ms", "s", "m", "h", "d"))
        if form == "iso":
            return f"PT{number.lstrip('-')}{self.pick(('S', 'M', 'H'))}"
        if form == "days":
            return f"P{self.digits()}D"
        return f"{number} {self.pick(('MINUTES', 'SECONDS', 'HOURS'))}"

    def extreme_count(self) -> str:
        return self.digits() if self.coin(0.9) else self.number()

    def new_var(self) -> str:
        self.fresh += 1
        return f"?v{self.fresh}" if self.coin(0.9) else self.var()  # sometimes one in scope: a scoping error

    def term(self) -> str:
        kind = self.pick(("var", "var", "iri", "lit", "quoted", "bnode"))
        if kind == "var":
            return self.var()
        if kind == "iri":
            return self.pick(IRIS[:-2])
        if kind == "lit":
            return self.pick(LITERALS)
        if kind == "bnode":
            return self.pick(("[]", "_:b1", "_:b2"))
        return f"<< {self.var()} :p {self.pick((self.var(), '<< :x :p :y >>', '1'))} >>"

    def path(self, depth: int) -> str:
        if depth <= 0 or self.coin(0.5):
            return self.pick(IRIS[:-1])
        kind = self.pick(("seq", "alt", "mod", "inv", "neg"))
        if kind == "seq":
            return f"({self.path(depth - 1)} / {self.path(depth - 1)})"
        if kind == "alt":
            return f"({self.path(depth - 1)} | {self.path(depth - 1)})"
        if kind == "mod":
            return f"({self.path(depth - 1)}){self.pick('*+?')}"
        if kind == "inv":
            return f"^{self.pick(IRIS[:-2])}"
        return "!(:p|^:q)"

    def triples(self, paths: bool = True) -> str:
        out = []
        for _ in range(self.count(1, 3)):
            simple = not paths or self.coin(0.7)
            verb = self.pick(("?b", ":p", "a")) if simple else self.path(2)
            obj = self.term()
            if self.coin(0.1 if simple else 0.01):  # after a path: a syntax error
                obj += " {| :source :s |}"
            out.append(f"{self.term()} {verb} {obj}")
        return " . ".join(out)

    def expr(self, depth: int, aggregates: bool = False) -> str:
        if depth <= 0 or self.coin(0.3):
            return self.pick((self.var(), "1", '"x"', ":x", "true"))
        kind = self.pick(("binary", "binary", "unary", "call", "in", "exists", "chain", "aggregate"))
        sub = lambda: self.expr(depth - 1, aggregates)  # noqa: E731
        if kind == "binary":
            return f"({sub()} {self.pick(('||', '&&', '=', '!=', '<', '>=', '+', '-', '*', '/'))} {sub()})"
        if kind == "unary":
            return f"{self.pick(('!', '-', '+'))}({sub()})"
        if kind == "call":
            name = self.pick(("STR", "LCASE", "BOUND", "REGEX", "IF", "COALESCE", "CONCAT", "xsd:integer", "TRIPLE"))
            arity = {"BOUND": 1, "REGEX": 2, "IF": 3, "TRIPLE": 3}.get(name, 1)
            args = [self.var()] if name == "BOUND" else [sub() for _ in range(arity)]
            return f"{name}({', '.join(args)})"
        if kind == "in":
            return f"({sub()} {self.pick(('IN', 'NOT IN'))} ({', '.join(sub() for _ in range(self.count(0, 3)))}))"
        if kind == "exists":
            return f"{self.pick(('EXISTS', 'NOT EXISTS'))} {{ {self.triples()} }}"
        if kind == "chain":
            op = self.pick(("||", "&&", "+", "*"))
            return "(" + f" {op} ".join(sub() for _ in range(self.count(2, 40))) + ")"
        if aggregates or self.coin(0.1):  # an aggregate where none is allowed: a query error
            return self.aggregate(depth - 1)
        return sub()

    def aggregate(self, depth: int) -> str:
        name = self.pick(("COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"))
        if name == "COUNT" and self.coin(0.3):
            return "COUNT(*)"
        return f"{name}({'DISTINCT ' if self.coin(0.2) else ''}{self.expr(depth)})"

    def window_spec(self) -> str:
        kind = self.pick(("range", "slide", "start", "interval", "count", "landmark", "now", "relative"))
        if kind == "range":
            return f"[RANGE {self.duration()}]"
        if kind == "slide":
            return f"[RANGE {self.duration()} {self.pick(('SLIDE', 'STEP'))} {self.duration()}]"
        if kind == "start":
            return f"[RANGE {self.duration()} STARTING AT {self.instant()}]"
        if kind == "interval":
            return f"[FROM {self.instant()} TO {self.instant()}]"
        if kind == "count":
            size = self.extreme_count() if self.coin(0.1) else self.value(("1", "50"), ("0", BIG))
            return f"[RANGE {self.pick(('TRIPLES', 'ELEMENTS', 'BGP'))} {size}]"
        if kind == "landmark":
            return self.pick(("[LANDMARK]", "[ALL]", f"[LANDMARK {self.instant()}]", f"[LND {self.instant()}]"))
        if kind == "now":
            return "[NOW]"
        return self.value(("[NOW-10 MINUTES TO NOW]", "[FROM NOW-PT1H TO NOW-PT1M STEP PT1M]", "[1 MINUTES]",
                           "[10 SECONDS SLIDE 5 SECONDS]"), ("[NOW-5 MINUTES TO NOW-5 MINUTES]", "[NOW-5 TO NOW-PT1S]"))

    def element(self, depth: int) -> str:
        kinds = ["triples", "filter", "bind", "values"]
        if depth > 0:
            kinds += ["optional", "minus", "union", "graph", "group", "subselect", "window", "stream"]
        if self.events:
            kinds.append("match")
        kind = self.pick(kinds)
        if kind == "triples":
            return self.triples() + " ."
        if kind == "filter":
            return f"FILTER({self.expr(3)})"
        if kind == "bind":
            return f"BIND({self.expr(2)} AS {self.new_var()})"
        if kind == "values":
            width = self.count(1, 2)
            names = " ".join(VARS[:width])
            rows = " ".join("(" + " ".join(self.pick(("1", ":x", "UNDEF", '"s"')) for _ in range(
                width if self.coin(0.97) else width + 1)) + ")" for _ in range(self.count(0, 3)))
            return f"VALUES ({names}) {{ {rows} }}"
        if kind == "optional":
            return f"OPTIONAL {self.group(depth - 1)}"
        if kind == "minus":
            return f"MINUS {self.group(depth - 1)}"
        if kind == "union":
            ops = [self.pick(("UNION", "UNION", "SEQ", "EQUALS", "OPTIONALSEQ")) for _ in range(self.count(1, 12))]
            return self.group(depth - 1) + "".join(f" {op} {self.group(depth - 1)}" for op in ops)
        if kind == "graph":
            return f"GRAPH {self.pick(('?g', ':g'))} {self.group(depth - 1)}"
        if kind == "group":
            return self.group(depth - 1)
        if kind == "subselect":
            return "{ " + self.select(depth - 1, top=False) + " }"
        if kind == "window":
            return f"WINDOW {self.pick(self.windows + ['?w', ':undeclared'])} {self.group(depth - 1)}"
        if kind == "stream":
            return f"STREAM :s {self.window_spec()} {self.group(depth - 1)}"
        seq = " SEQ ".join(self.pick(self.events + ["E9"]) for _ in range(self.count(1, 3)))
        return f"MATCH {{ {seq} }}"

    def group(self, depth: int) -> str:
        return "{ " + " ".join(self.element(depth) for _ in range(self.count(0, 3))) + " }"

    def select(self, depth: int, top: bool) -> str:
        head = "SELECT" + (" DISTINCT" if self.coin(0.2) else "")
        tail = ""
        if self.coin(0.3):
            items = [f"({self.aggregate(1)} AS {self.new_var()})" for _ in range(self.count(1, 3))]
            if self.coin(0.5):
                items.append(self.var())  # not always grouped: a query error
            head += " " + " ".join(items)
            tail += " GROUP BY " + " ".join(self.pick((self.var(), "(STR(?a))", "(LCASE(?b) AS ?k)", "STR(?c)"))
                                            for _ in range(self.count(1, 2)))
            if self.coin(0.3):
                tail += f" HAVING ({self.aggregate(1)} > 1)"
        elif self.coin(0.3):
            head += " *"
        else:
            head += " " + " ".join([self.var()] + [f"({self.expr(2)} AS {self.new_var()})"
                                                   for _ in range(self.count(0, 2))])
        if self.coin(0.3):
            conditions = [self.pick((self.var(), f"DESC({self.var()})", "ASC(STR(?a))")) for _ in range(2)]
            tail += " ORDER BY " + " ".join(conditions)
        if self.coin(0.3):
            tail += f" LIMIT {self.extreme_count() if self.coin(0.1) else self.value(('0', '10'), (BIG,))}"
        if self.coin(0.2):
            tail += f" OFFSET {self.extreme_count() if self.coin(0.1) else self.value(('3',), (BIG,))}"
        dataset = self.dataset() if top else ""
        return f"{head}{dataset} WHERE {self.group(depth)}{tail}"

    def dataset(self) -> str:
        out = []
        for i in range(self.count(0, 3)):
            name = self.pick((f":w{i}", ":w0"))  # sometimes twice: a query error
            kind = self.pick(("window", "window", "stream", "seed"))
            spec = self.window_spec()
            if kind == "window":
                out.append(f"FROM NAMED WINDOW {name} ON :s{i} {spec}")
            elif kind == "stream":
                name = f":s{i}"
                out.append(f"FROM NAMED STREAM {name} {spec}")
            else:
                out.append(f"FROM NAMED :s{i} WIN {spec} AS {name}")
            self.windows.append(name)
        if self.coin(0.2):
            out.append(f"FROM STREAM :cs {self.window_spec()}")
        if self.coin(0.2):
            out.append(self.pick(("FROM :g", "FROM NAMED :g2")))
        if self.windows and self.coin(0.4):
            for i in range(self.count(1, 2)):
                self.events.append(f"E{i + 1}")
                out.append(f"EVENT ON {self.pick(self.windows + [':nowhere'])} {{ {self.triples()} }} AS E{i + 1}")
        return "".join("\n" + line for line in out)

    def query(self) -> str:
        prologue = ["PREFIX : <http://ex.org/>", "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>"]
        if self.coin(0.2):
            prologue.insert(0, "BASE <http://ex.org/base/a/b/>")
        if self.coin(0.2):
            every = f" COMPUTED EVERY {self.duration()}" if self.coin() else ""
            prologue.append(f"REGISTER {self.pick(('RSTREAM ', 'ISTREAM ', ''))}{self.pick(('STREAM', 'QUERY'))} "
                            f":out{every} AS")
        form = self.pick(("SELECT", "SELECT", "SELECT", "ASK", "CONSTRUCT", "DESCRIBE"))
        if form == "SELECT":
            body = self.select(3, top=True)
        elif form == "ASK":
            body = f"ASK{self.dataset()} {self.group(3)}"
        elif form == "CONSTRUCT":
            body = f"CONSTRUCT {{ {self.triples(paths=False)} }}{self.dataset()} WHERE {self.group(3)}"
        else:
            body = f"DESCRIBE {self.pick(('*', '?a :x'))}{self.dataset()} WHERE {self.group(2)}"
        return "\n".join(prologue) + "\n" + body


@st.composite
def generated_queries(draw) -> str:
    return _Gen(draw).query()


_SETTINGS = dict(deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=50, **_SETTINGS)
@given(generated_queries())
def test_generated_queries(text):
    check(text)


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(generated_queries())
def test_generated_queries_long(text):
    check(text)


@pytest.mark.parametrize("instant", HUGE_EXPONENT_INSTANTS)
@pytest.mark.parametrize("spec", ["[RANGE 5 STARTING AT {}]", "[RANGE PT1M SLIDE 10s STARTING AT {}]", "[LANDMARK {}]",
                                  "[LND {}]", "[FROM {} TO 10]", "[FROM 0 TO {}]"])
def test_huge_exponents_in_instants(spec, instant):
    """The inputs that ended in decimal.InvalidOperation: an error with its position, or (zero) a query."""
    text = ("PREFIX : <http://ex.org/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
            f"SELECT * FROM NAMED WINDOW :w ON :s {spec.format(instant)} WHERE {{ WINDOW :w {{ ?a ?b ?c }} }}")
    assert check(text) == ("ok" if instant.startswith('"0.0e') else "syntax")


@st.composite
def window_queries(draw) -> str:
    """A query whose windows take numbers at and beyond their bounds, in every place a window takes one."""
    gen = _Gen(draw)
    clauses = []
    for i in range(gen.count(1, 3)):
        spec = gen.pick((
            lambda: f"[RANGE {gen.extreme_duration()}]",
            lambda: f"[RANGE {gen.extreme_duration()} SLIDE {gen.extreme_duration()}]",
            lambda: f"[RANGE {gen.duration()} STARTING AT {gen.extreme_instant()}]",
            lambda: f"[LANDMARK {gen.extreme_instant()}]",
            lambda: f"[FROM {gen.extreme_instant()} TO {gen.extreme_instant()}]",
            lambda: f"[RANGE {gen.pick(('TRIPLES', 'ELEMENTS', 'BGP'))} {gen.extreme_count()}]",
            lambda: f"[NOW-{gen.extreme_duration()} TO NOW]",
            lambda: f"[{gen.extreme_duration()} SLIDE {gen.extreme_duration()}]",
        ))()
        clauses.append(f"FROM NAMED WINDOW :w{i} ON :s {spec}")
    every = f"REGISTER STREAM :out COMPUTED EVERY {gen.extreme_duration()} AS\n" if gen.coin(0.3) else ""
    limit = f" LIMIT {gen.extreme_count()}" if gen.coin(0.3) else ""
    return ("PREFIX : <http://ex.org/>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n" + every + "SELECT *\n"
            + "\n".join(clauses) + "\nWHERE { WINDOW :w0 { ?a ?b ?c } }" + limit)


@settings(max_examples=300, **_SETTINGS)
@given(window_queries())
def test_numeric_extremes_in_windows(text):
    check(text)


# ---------------------------------------------------------------------------------------------- mutated corpus


def corpus() -> list[tuple[str, str | None]]:
    """(text, base IRI) of the corpus queries, read in place: this repository's test queries and samples, the W3C
    syntax and evaluation queries (positive and negative), and the RSP query files of the shared test data."""
    files = sorted((REPO / "tests" / "queries").rglob("*.rq")) + sorted((REPO / "rspark" / "samples").glob("*.rq"))
    files += sorted((TESTDATA / "w3c").rglob("*.rq"))
    files += sorted(TESTDATA.glob("rsp4j/**/*.rspql")) + sorted((TESTDATA / "csrbench").rglob("*.rspql"))
    out = []
    for path in files:
        try:
            out.append((path.read_text(encoding="utf-8"), path.as_uri()))
        except (OSError, UnicodeDecodeError):
            continue
    return out


TOKENS = ("{", "}", "(", ")", "[", "]", "<<", ">>", "{|", "|}", ".", ";", ",", "?x", "$y", ":p", "<http://e/>", "a",
          "_:b", "[]", "()", "SELECT", "*", "WHERE", "FILTER", "OPTIONAL", "UNION", "MINUS", "GRAPH", "BIND", "AS",
          "VALUES", "UNDEF", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "OFFSET", "EXISTS", "NOT", "COUNT(*)",
          "SUM(", "||", "&&", "=", "+", "-", "/", "^", "|", "!", "^^", "@en", '"x"', "'''y'''", "1", "-0.5", "1e3",
          BIG, "NaN", "2016-03-01T13:00:00Z", "2016-13-45T25:61:61Z", "PT0S", "P1Y", "10s", "\\u0041", "\\u000A",
          "\\uD800", "\\U0001F600", "FROM NAMED WINDOW :w ON :s", "[RANGE 0]", "[RANGE 5 SLIDE 0]",
          "[FROM 9 TO 2]", '[FROM "NaN" TO 9]', '[LANDMARK "NaN"]', f"[RANGE TRIPLES {BIG}]", "WINDOW :w",
          "WINDOW ?w", "REGISTER STREAM :q AS", "EVENT ON :w { ?a ?b ?c } AS E1", "MATCH { E1 SEQ E2 }", "SEQ",
          "STREAM :s [NOW]", "timestamp(?s ?p ?o)", "BASE <a/../b/./c>", "PREFIX p: <x>", "#", "\n", "\t", "é",
          "\x00", "\U0001F600")
CHARS = "{}()[]<>\"'\\?$:.,;|^*+!-/=#@_ \n\tazAZ09éP"


def _deep(rng: random.Random) -> str:
    """A deep nesting or a long chain of one kind, often past the limits."""
    n = rng.choice((10, 60, 100, 130, 200, 260, 500, 1000, 3000))
    kind = rng.randrange(12)
    if kind == 0:
        return "{ " * n + "?s ?p ?o" + " }" * n
    if kind == 1:
        return "(" * n + "1" + ")" * n
    if kind == 2:
        return "{ SELECT * " * n + "{ }" + " }" * n
    if kind == 3:
        return "FILTER(" + " || ".join(["?x"] * n) + ")"
    if kind == 4:
        return "FILTER(" + " + ".join(["1"] * n) + ")"
    if kind == 5:
        return " UNION ".join(["{ ?s ?p ?o }"] * n)
    if kind == 6:
        return "?s ?p " + "<< " * n + ":a :b :c >>" + " :b :c >>" * (n - 1)
    if kind == 7:
        return "OPTIONAL { " * n + "?s ?p ?o" + " }" * n
    if kind == 8:
        return " ".join(f"BIND({i} AS ?n{i})" for i in range(n))
    if kind == 9:
        return "FILTER EXISTS { " * n + "?s ?p ?o" + " }" * n
    if kind == 10:
        return "WINDOW :w { " * n + "?s ?p ?o" + " }" * n
    return "{ " * n  # unbalanced


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randint(0, len(text))
        j = min(len(text), i + rng.randint(0, 20))
        op = rng.randrange(8)
        if op == 0:
            text = text[:i] + rng.choice(CHARS) + text[i:]
        elif op == 1:
            text = text[:i] + text[j:]
        elif op == 2 and len(text) > 1:
            k = rng.randrange(len(text) - 1)
            text = text[:k] + text[k + 1] + text[k] + text[k + 2:]
        elif op == 3:
            text = text[:j] + text[i:j] * rng.randint(1, 3) + text[j:]
        elif op in (4, 5):
            text = text[:i] + " " + rng.choice(TOKENS) + " " + text[i:]
        elif op == 6:
            text = text[:i] + " " + _deep(rng) + " " + text[i:]
        else:  # a number made huge, or a keyword repeated
            text = text[:i] + rng.choice((BIG, "0", "-1", "1.5", "LIMIT " + BIG)) + text[j:]
    return text


def _run_mutations(count: int, seed: int) -> dict:
    sources = corpus()
    assert len(sources) > 500, "the corpus is missing"
    rng = random.Random(seed)
    outcomes: dict[str, int] = {}
    for _ in range(count):
        text, base = rng.choice(sources)
        mutated = mutate(text, rng)
        try:
            outcome = check(mutated, base)
        except Exception as exc:  # the input that failed, for the report
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- input ---\n{mutated[:3000]}") from exc
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


@pytest.mark.testdata
def test_corpus_parses():
    """The unmutated corpus: every query ends in success or a positioned error (the negative syntax tests)."""
    outcomes: dict[str, int] = {}
    for text, base in corpus():
        outcome = check(text, base)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("ok", 0) > 400  # 452 with this seed and outcomes.get("syntax", 0) > 100


@pytest.mark.testdata
def test_mutated_corpus():
    outcomes = _run_mutations(600, seed=23)
    assert outcomes.get("ok", 0) > 25 and outcomes.get("syntax", 0) > 240


@pytest.mark.slow
@pytest.mark.testdata
def test_mutated_corpus_long():
    outcomes = _run_mutations(6_000, seed=2023)
    assert outcomes.get("ok", 0) > 400  # 452 with this seed
