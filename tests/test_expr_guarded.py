"""The guarded fast path for FILTERs comparing numeric literals with constants (rspark.spark.expr.guarded): the
same answers as the general compilation and as pyoxigraph, on the values at its edges (signs, leading zeros, 18
and 19 digits, other integer datatypes, decimal and double lexical forms, INF, NaN, floats, ill-typed literals,
strings, IRIs, unbound)."""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from rspark.model.terms import XSD_DECIMAL, XSD_INTEGER, Literal, Variable
from rspark.spark.expr import compile as expressions
from rspark.spark.expr import guarded as expr_guarded
from rspark.syntax.ast import Call
from rspark.testing import from_json, results_equal

X = "http://www.w3.org/2001/XMLSchema#"
VALUES = [
    f'"5"^^<{X}integer>', f'"+5"^^<{X}integer>', f'"-5"^^<{X}integer>', f'"007"^^<{X}integer>',
    f'"-0"^^<{X}integer>', f'"95"^^<{X}integer>', f'"96"^^<{X}integer>', f'"123456789012345678"^^<{X}integer>',
    f'"1234567890123456789"^^<{X}integer>', f'"99999999999999999999"^^<{X}integer>', f'"5.0"^^<{X}decimal>',
    f'"95.5"^^<{X}decimal>', f'"1e2"^^<{X}double>', f'"96"^^<{X}int>', f'"96"^^<{X}long>', f'"96"^^<{X}short>',
    f'"9a"^^<{X}integer>', f'"+"^^<{X}integer>', '"96"', '"96"@en', "<http://ex.org/96>", "_:b96",
    f'"95.50"^^<{X}decimal>', f'".5"^^<{X}decimal>', f'"96."^^<{X}decimal>', f'"-0.0"^^<{X}decimal>',
    f'"1234567890123456789.5"^^<{X}decimal>', f'"9.6E1"^^<{X}double>', f'"-INF"^^<{X}double>', f'"NaN"^^<{X}double>',
    f'"95.5e0"^^<{X}double>', f'"96"^^<{X}float>', f'"1.5.5"^^<{X}decimal>', f'"1e"^^<{X}double>',
    # quotes in the lexical form (the guards read the text between the first two quotes of the term)
    f'"9\\"6"^^<{X}integer>', f'"\\"96"^^<{X}integer>', f'"96\\""^^<{X}decimal>', f'"1\\"e2"^^<{X}double>',
]
FILTERS = [
    "?v > 95", "95 < ?v", "?v = 96", "?v != 96", "?v <= -5", "?v >= 95.5", "?v < 96.0", "?v = 5",
    "?v > 95 && ?v < 1000", "?v > 0 && ?w = 7", "?v = 123456789012345678", "?v > 123456789012345677.5",
    "?w >= 7 && 100 > ?v", "?v = 100", "?v < 0.5", "?v >= 0", "95.5 = ?v", "?v > 1 && ?v < 96.5",
]


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    lines = [f"<http://ex.org/s{i}> <http://ex.org/v> {v} ." for i, v in enumerate(VALUES)]
    lines += [f'<http://ex.org/s{i}> <http://ex.org/w> "{7 if i % 2 else 8}"^^<{X}integer> .'
              for i in range(0, len(VALUES), 3)]
    lines.append('<http://ex.org/none> <http://ex.org/w> "7"^^<http://www.w3.org/2001/XMLSchema#integer> .')
    path = tmp_path_factory.mktemp("guarded") / "values.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    store = ox.Store()
    store.load(path.read_bytes(), format=ox.RdfFormat.N_TRIPLES)
    with Engine(spark=spark) as engine:
        engine.load(path)
        yield engine, store


def _query(f: str, extra: str = "") -> str:
    return ("SELECT ?s WHERE { { ?s <http://ex.org/v> ?v } UNION { ?s <http://ex.org/w> ?x } "
            f"OPTIONAL {{ ?s <http://ex.org/w> ?w }} FILTER({f}) {extra}}}")


# pyoxigraph's xsd:integer is 64-bit: it takes the 20-digit integer (s9) as ill-typed, where SPARQL's integers
# (and rspark's) are unbounded; that row is left out of the comparison with it
NOT_S9 = "MINUS { VALUES ?s { <http://ex.org/s9> } } "  # not a FILTER: the FILTER stays alone, guarded


@pytest.mark.parametrize("f", FILTERS)
def test_same_answers_as_general_path_and_pyoxigraph(loaded, monkeypatch, f):
    engine, store = loaded
    q, q_ox = _query(f), _query(f, NOT_S9)
    fast = engine.sparql(q).value
    expected = from_json(store.query(q_ox).serialize(format=ox.QueryResultsFormat.JSON).decode())
    ok, message = results_equal(engine.sparql(q_ox).value, expected, ordered=False)
    assert ok, f"{q_ox}\n{message}"
    monkeypatch.setattr(expressions, "numeric_comparisons", lambda expr, column, general: None)
    engine._plans.clear()  # compiled anew (Engine.sparql keeps the compiled plans of repeated queries)
    general = engine.sparql(q).value
    ok, message = results_equal(fast, general, ordered=False)
    assert ok, f"{q}\n{message}"


def test_shapes_taken_and_left():
    v, w = Variable("v"), Variable("w")
    i95, d955 = Literal("95", XSD_INTEGER), Literal("95.5", XSD_DECIMAL)
    col = {"v": "cv", "w": "cw"}.get
    lex = "substring_index(substring_index(cv, '\"', 2), '\"', -1)"
    sql = expr_guarded.numeric_comparisons(Call(">", (v, i95)), col, "GENERAL")
    assert sql.startswith("(CASE WHEN ") and sql.endswith(" ELSE GENERAL END)")
    assert f"THEN (CAST({lex} AS BIGINT) > 95L)" in sql
    assert f"THEN (CAST({lex} AS DECIMAL(38,18)) > CAST('95' AS DECIMAL(38,18)))" in sql
    assert f"THEN (CAST({lex} AS DOUBLE) > CAST('95' AS DOUBLE))" in sql
    assert "RLIKE '^[+-]?[0-9]{1,18}$'" in sql
    sql = expr_guarded.numeric_comparisons(Call("<", (d955, v)), col, "G")  # flipped: ?v > 95.5
    assert f"(CAST({lex} AS DECIMAL(38,18)) > CAST('95.5' AS DECIMAL(38,18)))" in sql
    sql = expr_guarded.numeric_comparisons(Call("&&", (Call(">", (v, i95)), Call("=", (w, i95)))), col, "G")
    assert sql.count("CASE WHEN") == 3 and "cw" in sql and sql.endswith(" ELSE G END)")
    for other in [Call(">", (v, w)), Call("||", (Call(">", (v, i95)), Call(">", (w, i95)))),
                  Call(">", (v, Literal("1e2", X + "double"))), Call(">", (v, Literal("95"))),
                  Call(">", (v, Literal("1234567890123456789", XSD_INTEGER))), Call("STR", (v,))]:
        assert expr_guarded.numeric_comparisons(other, col, "G") is None, other
    assert expr_guarded.numeric_comparisons(Call(">", (Variable("z"), i95)), col, "G") is None  # out of scope


def test_sum_avg_guarded_rows_agree(loaded, monkeypatch):
    """SUM and AVG read guarded integers (xsd:integer, at most 18 characters) in generated code and every other
    number through the general path: the same sums and averages as the general path alone and as pyoxigraph."""
    from rspark.spark.expr import aggregate as expr_aggregate

    engine, store = loaded
    q = ("SELECT ?k (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (COUNT(?v) AS ?n) WHERE { ?s <http://ex.org/v> ?v "
         "FILTER(isNumeric(?v)) BIND(STRLEN(STR(?s)) AS ?k) " + NOT_S9 + "} GROUP BY ?k")
    fast = engine.sparql(q).value
    assert len(fast.rows) == 2  # subjects s0-s9 and s10-s21
    # pyoxigraph writes doubles and long decimal quotients differently: compared on the smaller non-doubles
    small = q.replace("FILTER(isNumeric(?v))",
                      f"FILTER(isNumeric(?v) && DATATYPE(?v) != <{X}double> && ABS(?v) < 1000)")
    import json
    from decimal import Decimal

    def values(js) -> set:  # by value: pyoxigraph writes the decimal 29.0 as "29"
        return {tuple(Decimal(b[v]["value"]) for v in ("k", "sum", "avg", "n")) for b in js["results"]["bindings"]}

    expected = json.loads(store.query(small).serialize(format=ox.QueryResultsFormat.JSON).decode())
    assert values(engine.sparql(small).to_json()) == values(expected)
    monkeypatch.setattr(expr_aggregate, "_integer_guarded", lambda x, general: general)
    engine._plans.clear()  # compiled anew (Engine.sparql keeps the compiled plans of repeated queries)
    ok, message = results_equal(fast, engine.sparql(q).value, ordered=False)
    assert ok, message


def test_min_max_guarded_sort_key_is_the_general_one(spark):
    """MIN and MAX key guarded integers (xsd:integer, at most 18 characters) in generated code: for every such
    term the fast (sort key, term) struct equals the general one, field by field; no other term is guarded."""
    from rspark.spark.expr.aggregate import _integer_sort_guarded
    from rspark.spark.expr.compare import sort_struct
    from rspark.spark.expr.values import TermV

    x = TermV("enc", True)
    general = f"(CASE WHEN enc IS NOT NULL THEN named_struct('k', {sort_struct(x)}, 'e', enc) END)"
    fast = _integer_sort_guarded(x, "NULL")
    extra = [f'"{n}"^^<{X}integer>'
             for n in ("0", "000000000000000000", "-99999999999999999", "+1", "12345678901234567")]
    df = spark.createDataFrame([(v,) for v in VALUES + extra], "enc string")
    rows = df.selectExpr("enc", f"{fast} IS NOT NULL AS guarded", f"{fast} <=> {general} AS same").collect()
    guarded = {r.enc for r in rows if r.guarded}
    assert guarded == {v for v in VALUES + extra if v.endswith(f'^^<{X}integer>') and len(v.split('"')[1]) <= 18
                       and v.split('"')[1].lstrip("+-").isdigit()}
    assert len(guarded) == 13
    assert all(r.same for r in rows if r.guarded)


def test_min_max_guarded_rows_agree(loaded, monkeypatch):
    """MIN and MAX over every kind of term (guarded integers, ties like 5 / +5 / 007, other numbers, strings,
    IRIs, blank nodes): the same answers with the guarded path as with the general path alone."""
    from rspark.spark.expr import aggregate as expr_aggregate

    engine, _ = loaded
    q = ("SELECT ?k (MIN(?v) AS ?lo) (MAX(?v) AS ?hi) (MAX(?n) AS ?nh) (MIN(?n) AS ?nl) WHERE { "
         "?s <http://ex.org/v> ?v BIND(STRLEN(STR(?s)) AS ?k) OPTIONAL { FILTER(isNumeric(?v)) BIND(?v AS ?n) } } "
         "GROUP BY ?k")
    fast = engine.sparql(q).value
    assert len(fast.rows) == 2
    monkeypatch.setattr(expr_aggregate, "_integer_sort_guarded", lambda x, general: general)
    engine._plans.clear()  # compiled anew (Engine.sparql keeps the compiled plans of repeated queries)
    ok, message = results_equal(fast, engine.sparql(q).value, ordered=False)
    assert ok, message
