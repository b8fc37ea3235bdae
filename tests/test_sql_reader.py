"""rspark's SQL reader (rspark.jvm.SqlColumns): the expression texts rspark's compiler writes become the expression
Spark's parser would build (Catalyst's equals), without the parser; a text it does not read is left to Spark's
parser. The whole suite runs with RSPARK_CHECK_SQL=1, which compares the two on every text a test compiles; here,
the forms one by one and generated expressions."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.spark.expr import sql as S

READ = [
    "a + 1", "-1", "a - -1", "2L", "12345678901", "99999999999999999999999", "2.50", ".5", "TRUE AND FALSE", "NULL",
    "x IS NOT NULL AND y = 2 OR NOT z", "NOT a = b AND c", "a = 1 IS NULL", "a AND b AND c AND d AND e",
    "a OR b OR c AND d OR e", "(a AND b) AND c", "CAST(`a` AS DECIMAL(38,18))", "CAST(NULL AS STRING)",
    "CAST(a AS DOUBLE) / 2.0", "CAST(x AS BIGINT)", "CAST(x AS INT) % 3", "'a\\\\.b'", "'\\u0000'", "'a\\u00e9b'",
    "'\\n\\t\\r\\'\\\"'", "count(DISTINCT `x`)", "f(1L, 2.50, 12345678901)", "a || b || 'c'", "x NOT IN (1, 2)",
    "x IN ('a')", "x RLIKE '^a$'", "x NOT RLIKE 'b'", "a.b.c", "`we``ird`.f", "transform(`xs`, x -> x + 1)",
    "transform_values(map(0, `o`), (k, v) -> v.enc)", "CASE WHEN a THEN 1 ELSE 2 END",
    "CASE WHEN a THEN 1 WHEN b THEN 2 END", "a <> b", "a != b", "a <=> b", "a == b", "a <= b", "a >= b",
    "a % 2 = 0", "a & 3 | 4 ^ 5", "1 DIV 2", "shiftleft(1L, __ev_pat)", "substring(a, 2, 3)", "substr(a, 2)",
    "named_struct('f0', 1, 'f1', `b`)", "element_at(transform_values(map(0, `a`), (k, v) -> (CASE WHEN v IS NULL "
    "THEN NULL ELSE v END)), 0)",
]

NOT_READ = ["X'AB'", "x LIKE 'a%'", "map('a', 1)['a']", "CASE x WHEN 1 THEN 2 END", "a BETWEEN 1 AND 2",
            "count(*)", "sum(x) OVER (PARTITION BY y)", "-x", "(a, b)", "DATE '2020-01-01'", "'\\u00'", "'a' 'b'",
            "1e3", "current_timestamp", "try_cast(a AS INT)", "any_value(`a`)", "first(`a`)", "struct(a)",
            "CAST(a AS DECIMAL(40,0))", "`a` + \u00e9", "\u0661 + 1", "a -- comment", "'\\0'", "a << 2",
            "first(x) IGNORE NULLS"]


@pytest.mark.parametrize("text", READ)
def test_a_form_rspark_writes_is_read_as_spark_s_parser_reads_it(spark, text):
    assert S.check_reader(text) is True


@pytest.mark.parametrize("text", NOT_READ)
def test_a_form_it_does_not_read_is_left_to_spark_s_parser(spark, text):
    assert S.check_reader(text) is False
    assert spark.range(1).select(S.parsed("1 + 1")).collect()[0][0] == 2  # the session still reads texts


_names = st.sampled_from(["a", "b", "`c d`", "v_1", "__v1"])
_literals = st.one_of(st.integers(-2**70, 2**70).map(str), st.integers(0, 2**62).map(lambda i: f"{i}L"),
                      st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
                      st.text(st.characters(codec="utf-8", exclude_characters="\\'"), max_size=5)
                      .map(lambda s: "'" + s + "'"),
                      st.sampled_from(["TRUE", "FALSE", "NULL", "'\\\\'", "'\\''", "'\\u0041'"]))


def _expressions():
    leaves = st.one_of(_names, _literals)

    def extend(inner):
        binary = st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%", "||", "=", "<>", "<", ">=", "<=>",
                                                     "AND", "OR", "&", "|", "^", "DIV"]), inner)
        return st.one_of(
            binary.map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            inner.map(lambda e: f"({e})"),
            inner.map(lambda e: f"NOT {e}"),
            inner.map(lambda e: f"{e} IS NULL"),
            st.tuples(inner, st.lists(inner, min_size=1, max_size=3), st.booleans())
            .map(lambda t: f"{t[0]} {'NOT ' if t[2] else ''}IN ({', '.join(t[1])})"),
            st.tuples(inner, inner).map(lambda t: f"{t[0]} RLIKE {t[1]}"),
            st.tuples(st.lists(st.tuples(inner, inner), min_size=1, max_size=2), st.one_of(st.none(), inner))
            .map(lambda t: "CASE " + " ".join(f"WHEN {c} THEN {v}" for c, v in t[0])
                 + (f" ELSE {t[1]}" if t[1] else "") + " END"),
            st.tuples(inner, st.sampled_from(["STRING", "BIGINT", "INT", "DOUBLE", "BOOLEAN", "DECIMAL(38,18)"]))
            .map(lambda t: f"CAST({t[0]} AS {t[1]})"),
            st.tuples(st.sampled_from(["coalesce", "concat", "f", "substring", "map"]),
                      st.lists(inner, max_size=3), st.booleans())
            .map(lambda t: f"{t[0]}({'DISTINCT ' if t[2] and t[1] else ''}{', '.join(t[1])})"),
            inner.map(lambda e: f"transform(xs, (k, v) -> {e})"),
            inner.map(lambda e: f"transform(xs, x1 -> x1.f + {e})"),
        )

    return st.recursive(leaves, extend, max_leaves=12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_expressions())
def test_generated_expressions_read_as_spark_s_parser_reads_them(spark, text):
    S.check_reader(text)  # AssertionError when the two expressions differ; False when the reader leaves it
