"""W3C SPARQL evaluation suites on Spark: SPARQL 1.1 core (manifest-sparql11-query.ttl), SPARQL 1.0 (DAWG) and the
RDF-star CG SPARQL-star tests. Results compare as the suites require: multisets, blank nodes up to isomorphism,
order only under ORDER BY, exact lexical forms.

Tests listed in tests/w3c_known_failures.json are expected to fail (strict xfail: one that starts passing fails the
run until it is taken off the list); docs/conformance.md lists them with their reasons.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.w3c import case_key, evaluation_tests, run_test

KNOWN = json.loads((Path(__file__).parent / "w3c_known_failures.json").read_text(encoding="utf-8"))


def _cases():
    for suite in ("sparql11", "sparql10", "rdf-star-cg"):
        for test in evaluation_tests(suite):
            key = case_key(suite, test)
            marks = [pytest.mark.xfail(reason=KNOWN[key], strict=True)] if key in KNOWN else []
            yield pytest.param(suite, test, id=key, marks=marks)


@pytest.fixture(scope="module")
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        yield eng


@pytest.mark.parametrize("suite,test", list(_cases()))
def test_w3c_evaluation(engine, suite, test):
    ok, message = run_test(engine, suite, test)
    assert ok, message
