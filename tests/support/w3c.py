"""Running one W3C SPARQL evaluation test on an Engine (shared by tests/test_w3c_eval.py and the docs table)."""

from __future__ import annotations

import json

from rspark.model.terms import Variable
from rspark.results import SolutionSequence
from rspark.syntax.parser import parse_query
from rspark.testing import read_expected, results_equal
from tests.conftest import TESTDATA

# real path: graph IRIs are file: URIs
W3C = (TESTDATA / "w3c").resolve()
# The 13 folders of manifest-sparql11-query.ttl (entailment, service and the result-format folders are not in it).
SPARQL11_CORE = {"aggregates", "bind", "bindings", "cast", "construct", "exists", "functions", "grouping", "negation",
                 "project-expression", "property-path", "subquery", "syntax-query"}
SUITES = {"sparql11": "sparql11", "sparql10": "sparql10", "rdf-star-cg": "sparql-star/rdf-star-cg"}


def evaluation_tests(suite: str) -> list[dict]:
    root = W3C / SUITES[suite]
    out = []
    if not root.is_dir():
        return out  # no shared test data: no case (conftest says why the files that need it are skipped)
    for test in json.loads((root / "tests-index.json").read_text(encoding="utf-8")):
        if test["type"] != "QueryEvaluationTest":
            continue
        if suite == "sparql11" and test.get("suite") not in SPARQL11_CORE:
            continue
        out.append(test)
    return out


def case_key(suite: str, test: dict) -> str:
    return f"{suite}:{test['query']}"


def _order_key(q):
    """The ORDER BY key of an expected row when every condition is a plain variable; None otherwise."""
    if not q.order_by:
        return False, None
    names = []
    for cond in q.order_by:
        if not isinstance(cond.expr, Variable):
            return False, None  # ordered by an expression: compared as a multiset
        names.append(cond.expr.name)
    return True, (lambda row: tuple(row.get(n) for n in names))


def run_test(engine, suite: str, test: dict) -> tuple[bool, str]:
    """Load the test's dataset into ``engine`` (cleared first), answer the query, compare; (passed, message)."""
    root = W3C / SUITES[suite]
    data = [root / d for d in test.get("data") or []]
    graphs = [root / d for d in test.get("graphData") or []]
    key = (tuple(data), tuple(graphs))
    # the previous test's dataset is kept when this one reads the same files (half the tests follow one that
    # does) and no query of it loaded a FROM graph on demand (the engine would hold a graph this test does not)
    if getattr(engine, "_w3c_dataset", None) != key or engine.graphs() != sorted(p.as_uri() for p in graphs):
        engine.clear()
        engine._w3c_dataset = None
        for path in data:
            engine.load(path)
        for path in graphs:
            engine.load(path, graph=path.as_uri())
        engine._w3c_dataset = key
    qpath = root / test["query"]
    text = qpath.read_text(encoding="utf-8")
    actual = engine.sparql(text, base_iri=qpath.as_uri(), source=test["query"]).value
    expected = read_expected(root / test["result"])
    query = parse_query(text, base_iri=qpath.as_uri())
    ordered, key = _order_key(query)
    if not isinstance(actual, SolutionSequence):
        ordered = False
    elif query.modifier == "REDUCED":
        # mf:LaxCardinality: REDUCED may drop some duplicates or none; compare the sets of solutions
        actual, expected = _distinct(actual), _distinct(expected)
    return results_equal(actual, expected, ordered=ordered, order_key=key)


def _distinct(seq: SolutionSequence) -> SolutionSequence:
    seen, rows = set(), []
    for row in seq.rows:
        key = frozenset(row.items())
        if key not in seen:
            seen.add(key)
            rows.append(row)
    return SolutionSequence(seq.vars, rows, seq.ordered, seq.lossy)
