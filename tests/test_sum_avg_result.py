"""SUM's and AVG's final value: the JVM UDF (rspark/jvm/rspark/jvm/SumAvgResult.java) against the SQL it replaces
(rspark.spark.expr.aggregate._sum_avg_split, the path of a session without rspark's JVM helpers). They must give the
same encoded literal, or both an error, for every group: generated groups of integers (short, long, beyond
DECIMAL(38,18)), decimals (with and without a point, up to and beyond 18 fraction digits), floats, doubles (INF,
NaN, -0), and non-numbers; and the edge cases of the decimal arithmetic (Spark's division rounding, sums at the
decimal limit). The exact expected values of the common cases are in test_expressions.py::test_aggregates, which
runs with both."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_expressions import ENV, Scope

from rspark.model.codec import encode
from rspark.model.terms import Literal, Variable
from rspark.spark import jvm
from rspark.spark.expr.compile import compile_aggregate
from rspark.syntax.ast import Aggregate

XSD = "http://www.w3.org/2001/XMLSchema#"


def lit(lexical: str, dt: str = "integer") -> str:
    return encode(Literal(lexical, XSD + dt))


def _both(spark, groups: list[list[str]]) -> list[tuple]:
    """Per group: (SUM by SQL, SUM by the UDF, AVG by SQL, AVG by the UDF)."""
    udf = jvm.sum_avg_result(spark)
    assert udf is not None, "the test session must have rspark's jar (a JDK is present in CI)"
    rows = [(g, v) for g, vals in enumerate(groups) for v in vals]
    df = spark.createDataFrame(rows, "g int, a string")
    cols = []
    for name in ("SUM", "AVG"):
        for env in (ENV, dataclasses.replace(ENV, sum_avg=udf)):
            cols.append(compile_aggregate(Aggregate(name, Variable("a")), Scope(), env).alias(f"c{len(cols)}"))
    got = {r["g"]: tuple(r[1:]) for r in df.groupBy("g").agg(*cols).collect()}
    return [got[g] for g in range(len(groups))]


def _assert_same(spark, groups: list[list[str]]) -> list[tuple]:
    out = _both(spark, groups)
    problems = [f"{vals}: SUM {s_sql!r} / {s_udf!r}, AVG {a_sql!r} / {a_udf!r}"
                for vals, (s_sql, s_udf, a_sql, a_udf) in zip(groups, out) if s_sql != s_udf or a_sql != a_udf]
    assert not problems, "\n".join(problems)
    return out


def test_a_query_that_averages_calls_the_udf(spark, tmp_path):
    from rspark import compile_query
    from rspark.engine.engine import Engine
    from rspark.spark.sparql.query import make_env, projected_names, select_frame, solutions_of

    data = tmp_path / "d.nt"
    data.write_text("".join(f'<http://ex.org/s{i}> <http://ex.org/p> {lit(str(i))} .\n' for i in range(4)))
    with Engine(spark=spark) as engine:
        engine.load(data)
        plan = compile_query("SELECT (AVG(?o) AS ?a) (SUM(?o) AS ?s) WHERE { ?x ?p ?o }")
        _, sols = solutions_of(spark, plan, engine.dataset_for(plan), make_env(plan.base))
        frame = select_frame(sols, projected_names(sols))
        text = frame._jdf.queryExecution().optimizedPlan().toString()
        assert text.count(jvm.SUM_AVG_RESULT + "(") == 2
        assert frame.collect()[0] == (lit("1.5", "decimal"), lit("6"))


EDGES = [
    # Spark divides decimals at scale 39, rounds half up to 20 digits, rspark truncates to 18: 199e-18 / 200
    ["0.000000000000000001"] * 199 + ["0.0"],
    ["0.000000000000000001"] * 3,
    # a sum of 19 integer digits: the quotient keeps 6 fraction digits (DECIMAL(38,18) / DECIMAL(38,18))
    ["999999999999999999", "999999999999999999", "12345678901234567890", "-5"],
    # sums at the limit of DECIMAL(38,18): 10^20 - 1 fits, 10^20 is an error
    ["99999999999999999999", "-1", "1"],
    ["99999999999999999999", "1"],
    ["999999999999999999"] * 101,
    ["99999999999999999999.5", "99999999999999999999.5"],
    ["-99999999999999999999.5", "99999999999999999999.5"],
    ["123456789012345678901"],  # an integer beyond DECIMAL(38,18)
    ["1.0000000000000000001", "2"],  # 19 fraction digits: rounded to 18 (half up)
    ["0.0000001", "0.0000002"],  # below 10^-6: no exponent in the lexical form
    ["-0.0000001"],
    ["5"],
]


def _terms(vals: list[str]) -> list[str]:
    out = []
    for v in vals:
        out.append(lit(v, "decimal" if "." in v else "integer"))
    return out


def test_edges(spark):
    groups = [_terms(g) for g in EDGES] + [
        [lit("5", "decimal"), lit("2")],  # a decimal without a point: SUM "7"^^xsd:decimal
        [lit("1.5", "float"), lit("2")], [lit("INF", "double"), lit("-INF", "double")],
        [lit("NaN", "double")], [lit("-0.0", "double")], [lit("-0", "float")], [lit("1E7", "double")],
        [lit("1.0E-4", "double"), lit("3")], [lit("3.4E38", "float"), lit("3.4E38", "float")],
        [lit("1", "double"), lit("99999999999999999999"), lit("1")],  # a decimal overflow in a double sum
        [lit("1"), '"x"'], [lit("1"), "<http://ex.org/a>"], [lit("abc")],
    ]
    out = _assert_same(spark, groups)
    sums = [s for s, _, _, _ in out]
    avgs = [a for _, _, a, _ in out]

    def dec(v):
        return f'"{v}"^^<{XSD}decimal>'

    def integer(v):
        return f'"{v}"^^<{XSD}integer>'

    assert avgs[0] == dec("0.000000000000000001") and sums[0] == dec("0.000000000000000199")
    assert avgs[2] == dec("3586419725308641970.75")
    assert sums[3] == integer("99999999999999999999") and sums[4] is None and avgs[4] is None
    assert sums[5] is None and sums[6] is None and avgs[6] is None
    assert sums[7] == dec("0.0") and sums[8] is None
    assert sums[9] == dec("3.0")
    assert sums[10] == dec("0.0000003") and sums[11] == dec("-0.0000001") and avgs[12] == dec("5.0")
    assert sums[13] == f'"7"^^<{XSD}decimal>'
    assert sums[14] == f'"3.5E0"^^<{XSD}float>' and avgs[14] == f'"1.75E0"^^<{XSD}float>'
    assert sums[15] == f'"NaN"^^<{XSD}double>' and sums[16] == f'"NaN"^^<{XSD}double>'
    # SPARQL's Sum(M) = op:numeric-add(M[1], Sum(M[2..n])) and Sum of nothing is 0: -0.0 + 0 is 0.0
    assert sums[17] == f'"0.0E0"^^<{XSD}double>' and sums[19] == f'"1.0E7"^^<{XSD}double>'
    assert sums[21] == f'"INF"^^<{XSD}float>' and sums[22] is None
    assert sums[23] is None and sums[24] is None and sums[25] is None


def test_integers_by_long_arithmetic(spark):
    """Groups of integers alone, whose SUM and AVG the UDF computes with longs when the sum allows (AVG: rounded half
    up at 20 digits, then truncated to 18, as the decimal path): the same literals as the SQL, at the edges of that
    path (a rounding that carries into the 18th digit, negative quotients, sums at and beyond the long range)."""
    big = "999999999999999999"  # 18 characters: summed as longs
    groups = [
        [lit("110")] + [lit("0")] * 200,  # 110/201: digits 19-20 are 99 and round up into the 18th
        [lit("-110")] + [lit("0")] * 200,
        [lit("2"), lit("0"), lit("0")], [lit("-1"), lit("0"), lit("0")], [lit("3"), lit("7")], [lit("0"), lit("0")],
        [lit("-4"), lit("2")], [lit("100"), lit("100")],
        [lit(big)] * 3,  # the sum a long, the average beyond 10^18: the decimal path
        [lit(big)] * 10,  # the sum beyond a long: the decimal path
        [lit("-" + big)] * 10,
    ]
    out = _assert_same(spark, groups)

    def dec(v):
        return f'"{v}"^^<{XSD}decimal>'

    avgs = [a for _, _, a, _ in out]
    sums = [s for s, _, _, _ in out]
    assert avgs[0] == dec("0.547263681592039801") and avgs[1] == dec("-0.547263681592039801")
    assert avgs[2] == dec("0.666666666666666666") and avgs[3] == dec("-0.333333333333333333")
    assert avgs[4] == dec("5.0") and avgs[5] == dec("0.0") and avgs[6] == dec("-1.0") and avgs[7] == dec("100.0")
    assert sums[8] == f'"2999999999999999997"^^<{XSD}integer>'
    assert sums[9] == f'"9999999999999999990"^^<{XSD}integer>'


_INT = st.one_of(st.integers(-10**6, 10**6), st.integers(-10**19, 10**19), st.integers(-10**22, 10**22))


def _decimal_lexical(d: Decimal, point: bool) -> str:
    s = format(d, "f")
    if not point and "." in s:
        s = s.split(".")[0] or "0"
    return s


@st.composite
def _term(draw) -> str:
    kind = draw(st.sampled_from(["int", "int", "dec", "dec0", "double", "float", "other"]))
    if kind == "int":
        return lit(str(draw(_INT)))
    if kind in ("dec", "dec0"):
        scale = draw(st.integers(0, 20))
        unscaled = draw(st.integers(-10**22, 10**22))
        return lit(_decimal_lexical(Decimal(unscaled).scaleb(-scale), kind == "dec"), "decimal")
    if kind in ("double", "float"):
        x = draw(st.floats(allow_nan=True, allow_infinity=True, width=32 if kind == "float" else 64))
        text = "NaN" if x != x else ("INF" if x == float("inf") else "-INF" if x == float("-inf") else repr(x))
        return lit(text, kind)
    return draw(st.sampled_from(['"x"', "<http://ex.org/a>", lit("1.5.5", "decimal"), '"2"@en']))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.lists(_term(), min_size=1, max_size=6), min_size=20, max_size=40),
       st.lists(st.lists(st.sampled_from(["int", "dec", "double"]), min_size=1, max_size=4), min_size=5, max_size=10),
       st.integers(0, 2**32))
def test_udf_equals_sql_on_generated_groups(spark, groups, kinds, seed):
    import random

    rng = random.Random(seed)
    same_kind = []  # groups of one kind (the mixed ones are mostly errors or doubles)
    for ks in kinds:
        vals = []
        for k in ks:
            if k == "int":
                vals.append(lit(str(rng.randint(-10**rng.randint(1, 19), 10**rng.randint(1, 19)))))
            elif k == "dec":
                scaled = Decimal(rng.randint(-10**20, 10**20)).scaleb(-rng.randint(0, 19))
                vals.append(lit(_decimal_lexical(scaled, point=True), "decimal"))
            else:
                vals.append(lit(repr(rng.uniform(-1e6, 1e6)), "double"))
        same_kind.append(vals)
    _assert_same(spark, groups + same_kind)


@pytest.mark.parametrize("n", [1, 3, 7, 200])
def test_averages_of_decimals_with_many_digits(spark, n):
    import random

    rng = random.Random(n)
    groups = []
    for _ in range(30):
        scale = rng.randint(0, 18)
        groups.append([lit(_decimal_lexical(Decimal(rng.randint(-10**19, 10**19)).scaleb(-scale), point=True),
                           "decimal")
                       for _ in range(n)])
    _assert_same(spark, groups)


def test_inputs_that_are_expressions_rather_than_columns(spark):
    # the aggregate calls are then Columns of their own and the final value is built over them through a lambda
    from pyspark.sql import functions as F

    udf = jvm.sum_avg_result(spark)
    other = Scope(columns={"a": F.concat(F.col("a"), F.lit(""))})
    df = spark.createDataFrame([(0, lit("1")), (0, lit("2.5", "decimal")), (1, lit("2", "double"))], "g int, a string")
    cols = [compile_aggregate(Aggregate(n, Variable("a")), other, dataclasses.replace(ENV, sum_avg=u)).alias(f"c{k}")
            for k, (n, u) in enumerate([("SUM", None), ("SUM", udf), ("AVG", None), ("AVG", udf)])]
    got = sorted(tuple(r) for r in df.groupBy("g").agg(*cols).collect())
    assert got == [(0, lit("3.5", "decimal"), lit("3.5", "decimal"), lit("1.75", "decimal"), lit("1.75", "decimal")),
                   (1, lit("2.0E0", "double"), lit("2.0E0", "double"), lit("2.0E0", "double"), lit("2.0E0", "double"))]
