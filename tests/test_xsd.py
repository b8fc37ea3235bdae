"""The XSD datatypes: one list per meaning (rspark.model.xsd), read alike by the evaluator's Python values, the
expression compiler, the loader and the service. Pure Python: no Spark."""

from __future__ import annotations

from decimal import Decimal

import pytest

from rspark import results as R
from rspark.engine.engine import SparqlResult
from rspark.model.terms import Literal
from rspark.model.xsd import XSD, XSD_DECIMAL, XSD_INTEGER
from rspark.service.elements import parse_push

INTEGER_NAMES = ["integer", "nonPositiveInteger", "negativeInteger", "long", "int", "short", "byte",
                 "nonNegativeInteger", "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte",
                 "positiveInteger"]


@pytest.mark.parametrize("name", INTEGER_NAMES)
def test_a_literal_of_an_integer_type_is_a_python_int(name):
    """xsd:unsignedShort and xsd:unsignedByte are integers too (to_pandas gives 7, not the text "7")."""
    lexical = "-7" if name in ("nonPositiveInteger", "negativeInteger") else "7"
    result = SparqlResult(R.SolutionSequence(["x"], [{"x": Literal(lexical, XSD + name)}]), "SELECT")
    assert result.to_pandas()["x"].tolist() == [int(lexical)]


def test_the_other_python_values():
    rows = [{"x": Literal("2.50", XSD_DECIMAL)}, {"x": Literal("1e3", XSD_INTEGER)}, {"x": Literal("x", XSD + "foo")}]
    result = SparqlResult(R.SolutionSequence(["x"], rows), "SELECT")
    assert result.to_pandas()["x"].tolist() == [Decimal("2.50"), "1e3", "x"]


@pytest.mark.parametrize("name", INTEGER_NAMES)
def test_a_timestamp_of_an_integer_type_is_pushed(name):
    lexical = "-7" if name in ("nonPositiveInteger", "negativeInteger") else "7"
    body = (f'<http://e/g> {{ <http://e/s> <http://e/p> <http://e/o> }}\n'
            f'<http://e/g> <http://e/t> "{lexical}"^^<{XSD}{name}> .\n')
    (element,) = parse_push(body.encode(), "application/trig", predicate="http://e/t", arrival_time=False,
                            now=0).elements
    assert (element.kind, element.time, element.t) == ("numeric", Decimal(lexical), float(lexical))
