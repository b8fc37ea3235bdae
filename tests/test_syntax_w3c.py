"""W3C syntax suites: every positive syntax test (and every evaluation-test query) parses and translates; every
negative syntax test is rejected with a QuerySyntaxError. SPARQL Update tests are out of scope (rspark is a query
engine; docs/language.md is a superset of SPARQL 1.1 Query) and are counted separately."""

from __future__ import annotations

import json

import pytest

from rspark.syntax.parser import QuerySyntaxError
from rspark.syntax.translate import compile_query
from tests.conftest import TESTDATA

SUITES = ["sparql11", "sparql10", "sparql-star/rdf-star-cg"]


def _cases():
    for suite in SUITES:
        if not (TESTDATA / "w3c" / suite).is_dir():
            continue
        for test in json.loads((TESTDATA / "w3c" / suite / "tests-index.json").read_text(encoding="utf-8")):
            kind = test["type"]
            if "Update" in kind or not test.get("query"):
                continue
            if "Syntax" not in kind and kind != "QueryEvaluationTest":
                continue
            yield pytest.param(suite, test, id=f"{suite}:{test['query']}")


CASES = list(_cases())


@pytest.mark.parametrize("suite,test", CASES)
def test_w3c_syntax(suite, test):
    path = TESTDATA / "w3c" / suite / test["query"]
    text = path.read_text(encoding="utf-8")
    if "Negative" in test["type"]:
        with pytest.raises(QuerySyntaxError):
            compile_query(text, base_iri=path.as_uri(), source=test["query"])
    else:
        plan = compile_query(text, base_iri=path.as_uri(), source=test["query"])
        assert plan.op is not None


@pytest.mark.testdata
def test_case_counts():
    """The counts reported in docs/syntax.md: positive (syntax + evaluation queries) and negative per suite."""
    counts = {}
    for param in CASES:
        suite, test = param.values
        key = (suite, "negative" if "Negative" in test["type"] else "positive")
        counts[key] = counts.get(key, 0) + 1
    assert counts == {
        ("sparql11", "positive"): 375, ("sparql11", "negative"): 40,
        ("sparql10", "positive"): 432, ("sparql10", "negative"): 50,
        ("sparql-star/rdf-star-cg", "positive"): 61, ("sparql-star/rdf-star-cg", "negative"): 21,
    }
