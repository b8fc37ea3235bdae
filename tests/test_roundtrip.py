"""Round trip text -> syntax tree -> text (``rspark.syntax.unparse``).

Two properties, checked over the query corpus in the shared test data and over random queries made by hypothesis:

* the printed query translates to the same algebra: ``translate(parse_query(unparse(q))) == translate(q)``
  (and, stronger, parses to the same syntax tree);
* printing is a fixed point after one round: ``unparse(parse_query(unparse(q))) == unparse(q)``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.syntax.parser import QuerySyntaxError, parse_query
from rspark.syntax.translate import QueryError, translate
from rspark.syntax.unparse import unparse
from tests.conftest import TESTDATA

W3C_SUITES = ("sparql11", "sparql10", "sparql-star/rdf-star-cg")

# Query files of the corpus that parse today (W3C positive syntax + evaluation queries, RSP4J, CSRBench), counted once
# per file. All of them parse; the count guards against files silently dropping out of the round trip.
EXPECTED_CORPUS_FILES = 876


def _corpus_files() -> list[Path]:
    files: list[Path] = []
    for suite in W3C_SUITES:
        index = TESTDATA / "w3c" / suite / "tests-index.json"
        if not index.exists():
            continue
        for test in json.loads(index.read_text(encoding="utf-8")):
            kind = test.get("type") or ""
            if "Negative" in kind or "Update" in kind or not test.get("query"):
                continue
            files.append(TESTDATA / "w3c" / suite / test["query"])
    files += sorted(TESTDATA.glob("rsp4j/**/*.rspql"))
    files += sorted((TESTDATA / "csrbench" / "rspql-queries").glob("*.rspql"))
    return list(dict.fromkeys(files))  # a query file can serve several tests


CORPUS = _corpus_files()


@functools.cache
def _parse_file(path: Path):
    """The file's syntax tree, or None when it does not parse."""
    try:
        return parse_query(path.read_text(encoding="utf-8"), base_iri=path.as_uri())
    except QuerySyntaxError:
        return None


def _plan_or_error(query):
    try:
        return translate(query), None
    except QueryError as exc:  # a query that parses but breaks a rule must break it again after the round trip
        return None, exc.message


def check_roundtrip(q1) -> str:
    text = unparse(q1)
    try:
        q2 = parse_query(text)
    except QuerySyntaxError as exc:  # pragma: no cover - shown on failure
        raise AssertionError(f"unparsed query does not parse: {exc}\n{text}") from None
    assert _plan_or_error(q2) == _plan_or_error(q1), text
    assert q2 == q1, text
    again = unparse(q2)
    assert again == text, f"not a fixed point:\n{text}\n---\n{again}"
    return text


# ------------------------------------------------------------------------------------------------------- corpus

@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(TESTDATA)))
def test_corpus_roundtrip(path: Path):
    q1 = _parse_file(path)
    assert q1 is not None, f"{path} does not parse"
    check_roundtrip(q1)


@pytest.mark.testdata
def test_corpus_coverage():
    parsed = [p for p in CORPUS if _parse_file(p) is not None]
    assert len(parsed) >= EXPECTED_CORPUS_FILES, f"{len(parsed)} of {len(CORPUS)} corpus files parse"


# --------------------------------------------------------------------------------------------- random queries

POOL_VARS = ("?a", "?b", "?c", "?d", "$e")
IRIS = ("ex:p", "ex:q", "ex:x", "<http://ex.org/r>", "<http://other.org/y#z>", "ex:x\\~y", "<rel/iri>", "ex:")
NUMBERS = ("0", "42", "007", "-5", "+3", "1.50", ".5", "-0.0", "+2.25", "1e10", "-2.5E-3", "3.E2", "true", "FALSE")
LANGS = ("en", "en-US", "de-CH-1901")
DATATYPES = ("xsd:integer", "xsd:string", "<http://ex.org/dt>", "ex:dt", "xsd:dateTime")
DURATIONS = ("PT10M", "PT1M", "PT0.5S", "pt2h", "P1D", "10s", "5m", "100ms", "5", "2.5", "1 MINUTES", "30 SECONDS")
INSTANTS = ("5", "10.5", "2016-03-01T13:00:00Z", "2016-03-01T13:00:00.250+01:00", '"7"',
            '"2016-03-01T14:00:00"^^xsd:dateTime')
STRING_CHARS = list("ab xyz\"'\\\n\t\r\bu0041éð😀#?<>{}")

_SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}


class _Gen:
    """State of one generated query: a drawing function, fresh variable names, declared windows and events."""

    def __init__(self, draw):
        self.draw = draw
        self.fresh_count = 0
        self.windows: list[str] = []
        self.events: list[str] = []
        self.computed_every = False  # COMPUTED EVERY written: a REPORT clause must name PERIODIC, and no EVERY

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def coin(self, p: float = 0.5) -> bool:
        return self.draw(st.integers(0, 99)) < p * 100

    def fresh(self) -> str:
        self.fresh_count += 1
        return f"?f{self.fresh_count}"

    # ------------------------------------------------------------------------------------------------- terms
    def string(self) -> str:
        body = self.draw(st.lists(st.sampled_from(STRING_CHARS), max_size=8))
        quote = self.pick(('"', "'", '"""', "'''"))
        out = []
        for i, ch in enumerate(body):
            nxt = body[i + 1] if i + 1 < len(body) else ""
            if ch == "\\" and nxt in ("u", "U"):
                out.append("\\u005C\\u005C")  # \u escapes are decoded before lexing
            elif ch in _SHORT_ESCAPES:
                out.append(_SHORT_ESCAPES[ch])
            elif ch == quote[0]:
                out.append("\\" + ch)
            elif ch == "é" and self.coin(0.5):
                out.append("\\u00E9")
            elif ch == "\b" and self.coin(0.5):
                out.append("\\b")
            elif ch == "\t" and self.coin(0.5):
                out.append("\\t")
            else:
                out.append(ch)
        return quote + "".join(out) + quote

    def literal(self) -> str:
        kind = self.pick(("plain", "lang", "typed", "number"))
        if kind == "number":
            return self.pick(NUMBERS)
        text = self.string()
        if kind == "lang":
            return f"{text}@{self.pick(LANGS)}"
        if kind == "typed":
            return f"{text}^^{self.pick(DATATYPES)}"
        return text

    def iri(self) -> str:
        return self.pick(IRIS)

    def var(self) -> str:
        return self.pick(POOL_VARS)

    def quoted(self, depth: int, data: bool = False) -> str:
        """``<< s p o >>``: a pattern (variables, blank nodes) or, with ``data``, a ground term for VALUES."""

        def node(obj: bool) -> str:
            kinds = ["iri", "lit"] if data else ["var", "iri", "bnode"] + (["lit"] if obj else [])
            if depth > 0:
                kinds.append("quoted")
            kind = self.pick(kinds)
            if kind == "quoted":
                return self.quoted(depth - 1, data)
            if kind == "var":
                return self.var()
            if kind == "bnode":
                return "[]"
            if kind == "lit":
                return self.literal()
            return self.iri()

        verb = self.pick(("ex:p", "a", "<http://ex.org/r>")) if data else self.pick(("ex:p", "a", "?b"))
        return f"<< {node(False)} {verb} {node(True)} >>"

    def subject(self, depth: int, paths: bool) -> tuple[str, bool]:
        """A subject and whether it may stand without a property list ([ ... ] and collections may)."""
        kind = self.pick(("var", "var", "iri", "quoted", "anon", "bnode_list", "collection", "literal"))
        if kind == "var":
            return self.var(), False
        if kind == "iri":
            return self.iri(), False
        if kind == "quoted":
            return self.quoted(1), False
        if kind == "anon":
            return "[]", False
        if kind == "literal":
            return self.literal(), False
        if kind == "bnode_list":
            return f"[ {self.property_list(depth - 1, paths)} ]", True
        return self.collection(depth - 1, paths), True

    def collection(self, depth: int, paths: bool) -> str:
        n = self.draw(st.integers(1, 3))
        return "( " + " ".join(self.object(depth, paths) for _ in range(n)) + " )"

    def object(self, depth: int, paths: bool) -> str:
        kinds = ["var", "var", "iri", "literal", "quoted", "anon", "nil"]
        if depth > 0:
            kinds += ["bnode_list", "collection"]
        kind = self.pick(kinds)
        if kind == "var":
            return self.var()
        if kind == "iri":
            return self.iri()
        if kind == "literal":
            return self.literal()
        if kind == "quoted":
            return self.quoted(1)
        if kind == "anon":
            return "[]"
        if kind == "nil":
            return "()"
        if kind == "bnode_list":
            return f"[ {self.property_list(depth - 1, paths)} ]"
        return self.collection(depth - 1, paths)

    # ------------------------------------------------------------------------------------------------- paths
    # Path precedence levels: a primary (IRI, a, !set, (path)), a modified or inverse element, a sequence, an
    # alternative. A path is used bare where the grammar takes its level, and parenthesized elsewhere.
    PRIMARY, MODIFIED, INVERSE, SEQUENCE, ALTERNATIVE = range(5)

    def path(self, depth: int) -> tuple[str, int]:
        """A property path and its precedence level."""
        if depth <= 0 or self.coin(0.4):
            return self.pick(("ex:p", "ex:q", "a", "<http://ex.org/r>")), self.PRIMARY
        kind = self.pick(("inv", "seq", "alt", "mod", "neg", "group"))

        def part(max_level: int) -> str:
            text, level = self.path(depth - 1)
            return text if level <= max_level else f"({text})"

        if kind == "neg":
            items = self.draw(st.lists(st.sampled_from(("ex:p", "^ex:q", "a", "^a", "<http://ex.org/r>")),
                                       min_size=1, max_size=3))
            if len(items) == 1 and self.coin():
                return f"!{items[0]}", self.PRIMARY
            return "!(" + " | ".join(items) + ")", self.PRIMARY
        if kind == "group":
            return f"({self.path(depth - 1)[0]})", self.PRIMARY
        if kind == "mod":
            return f"{part(self.PRIMARY)}{self.pick('*+?')}", self.MODIFIED
        if kind == "inv":
            return f"^{part(self.MODIFIED)}", self.INVERSE
        count = self.draw(st.integers(2, 3))
        if kind == "seq":
            return " / ".join(part(self.INVERSE) for _ in range(count)), self.SEQUENCE
        return " | ".join(part(self.SEQUENCE) for _ in range(count)), self.ALTERNATIVE

    def verb(self, paths: bool) -> tuple[str, bool]:
        """A verb and whether it is simple (an IRI, ``a`` or a variable: annotations need a simple verb)."""
        if paths and self.coin(0.3):
            text, level = self.path(2)
            return text, level == self.PRIMARY and not text.startswith(("(", "!"))
        if self.coin(0.2):
            return self.var(), True
        return self.pick(("ex:p", "ex:q", "a", "<http://ex.org/r>")), True

    def property_list(self, depth: int, paths: bool) -> str:
        items = []
        for _ in range(self.draw(st.integers(1, 2))):
            verb, simple = self.verb(paths)
            objects = []
            for _ in range(self.draw(st.integers(1, 2))):
                obj = self.object(depth, paths)
                if simple and depth > 0 and self.coin(0.15):
                    obj += " {| " + self.property_list(depth - 1, paths) + " |}"
                objects.append(obj)
            items.append(f"{verb} {', '.join(objects)}")
        return " ; ".join(items) + (" ;" if self.coin(0.1) else "")

    def triples(self, depth: int = 2, paths: bool = True, count: int | None = None) -> str:
        n = count if count is not None else self.draw(st.integers(1, 3))
        out = []
        for _ in range(n):
            subject, standalone = self.subject(depth, paths)
            if standalone and self.coin(0.3):
                out.append(subject)
            else:
                out.append(f"{subject} {self.property_list(depth, paths)}")
        return " .\n".join(out)

    # ------------------------------------------------------------------------------------------- expressions
    def expr(self, depth: int, exists: bool = True, aggregates: bool = False, grouped=()) -> str:
        """An expression. With ``aggregates``, variables outside aggregates come from ``grouped`` only."""

        def leaf() -> str:
            kinds = ["lit", "iri"] + (["var", "var"] if not aggregates or grouped else [])
            kind = self.pick(kinds)
            if kind == "var":
                return self.pick(grouped) if aggregates else self.var()
            return self.literal() if kind == "lit" else self.iri()

        if depth <= 0 or self.coin(0.25):
            return leaf()

        def sub() -> str:
            return self.expr(depth - 1, exists, aggregates, grouped)

        kinds = ["binary", "binary", "unary", "signed", "in", "builtin", "function", "quoted", "special"]
        if exists and depth >= 1:
            kinds.append("exists")
        if aggregates:
            kinds += ["aggregate", "aggregate", "aggregate"]
        kind = self.pick(kinds)
        if kind == "binary":
            op = self.pick(("||", "&&", "=", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/"))
            return f"({sub()} {op} {sub()})"
        if kind == "unary":
            return f"{self.pick(('!', '-', '+'))}({sub()})"
        if kind == "signed":  # 'x -5': the grammar's signed-number continuation of an additive expression
            number = self.pick(("-5", "+3", "-2.5", "+1e3"))
            tail = f" * {sub()}" if self.coin(0.3) else ""
            return f"({sub()} {number}{tail})"
        if kind == "in":
            items = ", ".join(sub() for _ in range(self.draw(st.integers(0, 2))))
            return f"({sub()} {self.pick(('IN', 'NOT IN', 'not in'))} ({items}))"
        if kind == "builtin":
            name = self.pick(("STR", "lang", "DATATYPE", "isIRI", "isUri", "isLiteral", "STRLEN", "UCASE", "ABS",
                              "SUBJECT", "isTRIPLE", "uri", "MINUTES"))
            choice = self.draw(st.integers(0, 9))
            if choice == 0:
                return f"REGEX({sub()}, {sub()}" + (f", {sub()})" if self.coin() else ")")
            if choice == 1:
                return f"IF({sub()}, {sub()}, {sub()})"
            if choice == 2:
                args = ", ".join(sub() for _ in range(self.draw(st.integers(0, 3))))
                return f"{self.pick(('COALESCE', 'CONCAT'))}({args})"
            if choice == 3:
                if aggregates and not grouped:
                    return "BNODE()"
                return f"BOUND({self.pick(grouped) if aggregates else self.var()})"
            if choice == 4:
                return self.pick(("BNODE()", "RAND()", "NOW()", "STRUUID()", "BNODE(\"x\")"))
            if choice == 5:
                return f"TRIPLE({sub()}, {sub()}, {sub()})"
            if choice == 6:
                return f"sameTerm({sub()}, {sub()})"
            if choice == 7:
                return f"SUBSTR({sub()}, {sub()}" + (f", {sub()})" if self.coin() else ")")
            return f"{name}({sub()})"
        if kind == "function":
            args = [sub() for _ in range(self.draw(st.integers(0, 2)))]
            distinct = "DISTINCT " if args and self.coin(0.2) else ""
            fn = self.pick(("ex:f", "<http://ex.org/g>", "xsd:integer"))
            return f"{fn}({distinct}{', '.join(args)})" if args else f"{fn}()"
        if kind == "quoted":
            if aggregates and not grouped:
                return f"<< ex:x ex:p {self.literal()} >>"
            v = (lambda: self.pick(grouped)) if aggregates else self.var
            return f"<< {v()} {self.pick(('ex:p', 'a', '?b' if not aggregates else 'ex:q'))} {v()} >>"
        if kind == "special":
            if aggregates and not grouped:
                return "getDURATION()"
            v = (lambda: self.pick(grouped)) if aggregates else self.var
            return self.pick((f"timestamp({v()} ex:p {v()})", f"TIMESTAMP({v()}, a, ex:x)", "getDURATION()",
                              "getSTARTTIME()", "getendtime()"))
        if kind == "exists":
            return f"{self.pick(('EXISTS', 'NOT EXISTS'))} {self.group(max(depth - 2, 0))}"
        return self.aggregate(depth - 1)

    def aggregate(self, depth: int) -> str:
        name = self.pick(("COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT", "count"))
        distinct = "DISTINCT " if self.coin(0.3) else ""
        if name.upper() == "COUNT" and self.coin(0.4):
            return f"{name}({distinct}*)"
        arg = self.expr(depth, exists=False)
        if name == "GROUP_CONCAT" and self.coin():
            return f"GROUP_CONCAT({distinct}{arg} ; SEPARATOR={self.string()})"
        return f"{name}({distinct}{arg})"

    # ---------------------------------------------------------------------------------------------- patterns
    def values_block(self, variables=None) -> str:
        names = variables if variables is not None else self.draw(
            st.lists(st.sampled_from(POOL_VARS), unique=True, max_size=3))

        def value() -> str:
            kind = self.pick(("iri", "lit", "undef", "quoted"))
            if kind == "undef":
                return "UNDEF"
            if kind == "quoted":
                return self.quoted(1, data=True)
            return self.iri() if kind == "iri" else self.literal()

        rows = []
        for _ in range(self.draw(st.integers(0, 3))):
            rows.append("(" + " ".join(value() for _ in names) + ")")
        if len(names) == 1 and self.coin():
            return f"{names[0]} {{ {' '.join(r[1:-1] for r in rows)} }}"
        return "(" + " ".join(names) + ") { " + " ".join(rows) + " }"

    def event_expr(self, depth: int) -> str:
        if depth <= 0 or self.coin(0.3):
            return self.event_unary(depth)
        selection = f"[{self.pick(('RECENT', 'chronological', 'NAIVE', 'unrestricted'))}]" if self.coin() else ""
        return f"{self.event_expr(depth - 1)} SEQ{selection} {self.event_unary(depth - 1)}"

    def event_unary(self, depth: int) -> str:
        if depth <= 0 or self.coin(0.4):
            return self.pick(self.events)
        kind = self.pick(("FIRST", "LAST", "paren"))
        if kind == "paren":
            return f"({self.event_expr(depth - 1)})"
        return f"{kind} {self.event_unary(depth - 1)}"

    def window_spec(self) -> str:
        kind = self.pick(("range", "range", "slide", "tumbling", "start", "landmark", "interval", "count", "now",
                          "stream_range"))
        d = self.pick(DURATIONS)
        if kind == "range":
            return f"[RANGE {d}]"
        if kind == "slide":
            report = self.pick(("", " REPORT NON EMPTY, PERIODIC") if self.computed_every else
                               ("", " REPORT ON WINDOW CLOSE", " REPORT NON EMPTY, PERIODIC",
                                f" REPORT EVERY {self.pick(DURATIONS)}", f" REPORT ON CONTENT CHANGE EVERY {d}"))
            return f"[RANGE {d} {self.pick(('SLIDE', 'STEP'))} {self.pick(DURATIONS)}{report}]"
        if kind == "tumbling":
            return f"[RANGE {d} TUMBLING]"
        if kind == "start":
            return f"[RANGE {d} SLIDE {self.pick(DURATIONS)} STARTING AT {self.pick(INSTANTS)}]"
        if kind == "landmark":
            return self.pick(("[LANDMARK]", "[ALL]", f"[LANDMARK {self.pick(INSTANTS)}]",
                              f"[LND {self.pick(INSTANTS)}]"))
        if kind == "interval":
            return self.pick(("[FROM 5 TO 10]", "[FROM 2016-03-01T13:00:00Z TO 2016-03-01T14:00:00Z]",
                              '[FROM "1" TO 1.5]'))
        if kind == "count":
            n = self.draw(st.integers(1, 50))
            return self.pick((f"[RANGE TRIPLES {n}]", f"[RANGE {n} ELEMENTS]", f"[BGP {n}]",
                              f"[RANGE ELEMENTS {n} PARTITION BY ex:p]"))
        if kind == "now":
            return "[NOW]"
        return self.pick(("[1 MINUTES]", "[10 SECONDS SLIDE 5 SECONDS]", "[NOW-10 MINUTES TO NOW]",
                          "[NOW - 5 MINUTES TO NOW SLIDE 1 MINUTES]"))

    def element(self, depth: int) -> str:
        kinds = ["filter", "filter", "bind", "bind", "values"]
        if depth > 0:
            kinds += ["optional", "minus", "union", "union", "graph", "stream", "service", "subselect", "group"]
            if self.windows:
                kinds += ["window", "window"]
        if self.events:
            kinds.append("match")
        kind = self.pick(kinds)
        if kind == "filter":
            text = self.expr(3)
            return f"FILTER {text}" if text.startswith("(") else f"FILTER ({text})"
        if kind == "bind":
            return f"BIND ({self.expr(2)} AS {self.fresh()})"
        if kind == "values":
            return f"VALUES {self.values_block()}"
        if kind == "optional":
            return f"OPTIONAL {self.group(depth - 1)}"
        if kind == "minus":
            return f"MINUS {self.group(depth - 1)}"
        if kind == "union":
            parts = [self.group(depth - 1)]
            for _ in range(self.draw(st.integers(1, 2))):
                parts.append(self.pick(("UNION", "union", "SEQ", "EQUALS", "OPTIONALSEQ", "EQUALSOPTIONAL")))
                parts.append(self.group(depth - 1))
            return " ".join(parts)
        if kind == "group":
            return self.group(depth - 1)
        if kind == "graph":
            return f"GRAPH {self.pick(('?g', 'ex:g', '<http://ex.org/g2>'))} {self.group(depth - 1)}"
        if kind == "stream":
            return f"STREAM ex:s{self.draw(st.integers(0, 2))} {self.window_spec()} {self.group(depth - 1)}"
        if kind == "service":
            return f"SERVICE {'SILENT ' if self.coin() else ''}{self.pick(('ex:svc', '?svc'))} {self.group(depth - 1)}"
        if kind == "window":
            name = self.pick(self.windows + ["?w"])
            return f"WINDOW {name} {self.group(depth - 1)}"
        if kind == "subselect":
            return "{ " + self.select(depth - 1, top=False) + " }"
        consume = f"CONSUME {self.pick(('RECENT', 'chronological', 'none'))} " if self.coin() else ""
        return f"MATCH {consume}{{ {self.event_expr(2)} }}"

    def group(self, depth: int) -> str:
        items: list[tuple[str, bool]] = []  # (text, is a triples block)
        for _ in range(self.draw(st.integers(0, 3))):
            if self.coin(0.45):
                items.append((self.triples(), True))
            else:
                items.append((self.element(depth), False))
        out = []
        for i, (text, is_triples) in enumerate(items):
            out.append(text)
            following = items[i + 1][1] if i + 1 < len(items) else None
            if is_triples and following:
                out.append(".")
            elif following is not None and self.coin(0.2) or is_triples and self.coin(0.3):
                out.append(".")
        return "{ " + "\n".join(out) + " }"

    # ------------------------------------------------------------------------------------------------- queries
    def modifiers(self, depth: int, aggregates: bool = False, grouped=()) -> str:
        out = []
        if self.coin(0.3):
            conditions = []
            for _ in range(self.draw(st.integers(1, 3))):
                kind = self.pick(("var", "asc", "desc", "call"))
                expr = self.expr(depth, exists=False, aggregates=aggregates, grouped=grouped)
                if kind == "var" and (grouped or not aggregates):
                    conditions.append(self.pick(grouped) if aggregates else self.var())
                elif kind == "call":
                    conditions.append(f"STR({expr})")
                else:
                    conditions.append(f"{'ASC' if kind == 'asc' else 'DESC'}({expr})")
            out.append("ORDER BY " + " ".join(conditions))
        limit = f"LIMIT {self.draw(st.integers(0, 100))}" if self.coin(0.3) else ""
        offset = f"OFFSET {self.draw(st.integers(0, 100))}" if self.coin(0.2) else ""
        out += [limit, offset] if self.coin() else [offset, limit]
        return " ".join(x for x in out if x)

    def select(self, depth: int, top: bool) -> str:
        head = "SELECT"
        if top and self.coin(0.2):
            head += " " + self.pick(("RSTREAM", "ISTREAM", "DSTREAM"))
        if self.coin(0.2):
            head += " " + self.pick(("DISTINCT", "REDUCED"))
        tail = ""
        if self.coin(0.3):  # aggregation
            grouped = list(self.draw(st.lists(st.sampled_from(POOL_VARS[:4]), unique=True, max_size=2)))
            conditions = list(grouped)
            if self.coin(0.3):
                key = self.fresh()
                conditions.append(f"(STR({self.var()}) AS {key})")
                grouped.append(key)
            if self.coin(0.2):
                conditions.append(f"(LCASE({self.var()}))")
            items = [v for v in grouped if self.coin(0.7)]
            for _ in range(self.draw(st.integers(0 if items else 1, 2))):
                if self.coin(0.6):
                    items.append(f"({self.aggregate(1)} AS {self.fresh()})")
                else:
                    expr = self.expr(2, exists=False, aggregates=True, grouped=grouped)
                    items.append(f"({expr} AS {self.fresh()})")
            head += " " + " ".join(items)
            if conditions and (grouped or self.coin()):
                tail += " GROUP BY " + " ".join(conditions)
            if self.coin(0.3):
                tail += f" HAVING ({self.aggregate(1)} > {self.pick(NUMBERS)})"
            tail += " " + self.modifiers(1, aggregates=True, grouped=grouped)
        else:
            if self.coin(0.3):
                head += " *"
            else:
                items = list(self.draw(st.lists(st.sampled_from(POOL_VARS), unique=True, max_size=3)))
                for _ in range(self.draw(st.integers(0 if items else 1, 2))):
                    items.append(f"({self.expr(2)} AS {self.fresh()})")
                head += " " + " ".join(items)
            tail += " " + self.modifiers(2)
        body = self.dataset_and_events() if top else ""
        where = ("WHERE " if self.coin() else "") + self.group(depth)
        values = f" VALUES {self.values_block()}" if not top and self.coin(0.15) else ""
        return f"{head}{body}\n{where}{tail}{values}"

    def dataset_and_events(self) -> str:
        out = []
        for i in range(self.draw(st.integers(0, 3))):
            name = f"ex:w{i}"
            kind = self.pick(("window", "window", "window", "stream", "seed"))
            spec = self.window_spec()
            if kind == "window":
                out.append(f"FROM NAMED WINDOW {name} ON ex:s{i} " + (spec if self.coin(0.9) else ""))
            elif kind == "stream":
                name = f"ex:s{i}"
                out.append(f"FROM NAMED STREAM {name} {spec}")
            else:
                out.append(f"FROM NAMED ex:s{i} WIN {spec} AS {name}")
            self.windows.append(name)
        if self.coin(0.2):
            out.append(f"FROM STREAM ex:cs {self.window_spec()}")
        if self.coin(0.2):
            out.append(self.pick(("FROM ex:g", "FROM NAMED ex:g2", "FROM <http://ex.org/g3>")))
        if self.windows and self.coin(0.3):
            for i in range(self.draw(st.integers(1, 3))):
                body = self.triples(depth=1, paths=False, count=self.draw(st.integers(1, 2)))
                self.events.append(f"E{i + 1}")
                out.append(f"EVENT ON {self.pick(self.windows)} {{ {body} }} AS E{i + 1}")
        return "".join("\n" + line for line in out)

    def query(self) -> str:
        prologue = []
        if self.coin(0.2):
            prologue.append("BASE <http://ex.org/base/>")
        prologue.append("PREFIX ex: <http://ex.org/>")
        prologue.append("PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>")
        if self.coin(0.2):
            parts = ["REGISTER"]
            if self.coin():
                parts.append(self.pick(("RSTREAM", "ISTREAM", "DSTREAM")))
            if self.coin():
                parts.append(self.pick(("STREAM", "QUERY")))
            parts.append(self.pick(("ex:q", "<http://ex.org/q2>", "myQuery")))
            if self.coin():
                parts.append(f"COMPUTED EVERY {self.pick(DURATIONS)}")
                self.computed_every = True
            prologue.append(" ".join(parts) + " AS")
        form = self.pick(("SELECT", "SELECT", "SELECT", "ASK", "CONSTRUCT", "CONSTRUCT_WHERE", "DESCRIBE"))
        if form == "SELECT":
            body = self.select(3, top=True)
        elif form == "ASK":
            body = f"ASK{self.dataset_and_events()}\n{self.group(3)} {self.modifiers(1)}"
        elif form == "CONSTRUCT":
            r2s = f" {self.pick(('RSTREAM', 'ISTREAM'))}" if self.coin(0.2) else ""
            template = self.triples(depth=2, paths=False) if self.coin(0.9) else ""
            body = (f"CONSTRUCT{r2s} {{ {template} }}{self.dataset_and_events()}\nWHERE {self.group(3)} "
                    f"{self.modifiers(1)}")
        elif form == "CONSTRUCT_WHERE":
            simple = self.triples(depth=0, paths=False)
            body = f"CONSTRUCT{self.dataset_and_events()} WHERE {{ {simple} }} {self.modifiers(1)}"
        else:
            targets = " ".join(self.draw(st.lists(st.sampled_from(("?a", "?b", "ex:x", "<http://ex.org/r>")),
                                                  min_size=1, max_size=3))) if self.coin(0.8) else "*"
            where = f"\nWHERE {self.group(2)}" if self.coin(0.7) else ""
            body = f"DESCRIBE {targets}{self.dataset_and_events()}{where} {self.modifiers(1)}"
        values = f"\nVALUES {self.values_block()}" if self.coin(0.1) else ""
        return "\n".join(prologue) + "\n" + body + values


@st.composite
def random_queries(draw) -> str:
    return _Gen(draw).query()


_RANDOM = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=40, **_RANDOM)
@given(random_queries())
def test_random_query_roundtrip(text: str):
    q1 = parse_query(text)
    translate(q1)  # the generator makes valid queries: scoping and grouping rules hold
    check_roundtrip(q1)


@pytest.mark.slow
@settings(max_examples=200, **_RANDOM)
@given(random_queries())
def test_random_query_roundtrip_long(text: str):
    test_random_query_roundtrip.hypothesis.inner_test(text)
