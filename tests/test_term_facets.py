"""A term's facets: the JVM UDF (rspark/jvm/rspark/jvm/TermFacets.java) against the SQL it replaces
(rspark.spark.expr.values.facet_pack, the path of a session without rspark's JVM helpers). They must give the same
suffix, lexical form, numeric type, decimal and double values and comparison category for every string a column of
encoded terms may hold: generated literals of the numeric, boolean and time datatypes with valid and invalid lexical
forms (signs, points, exponents, INF, NaN, spaces, escapes, characters beyond the BMP, line separators), simple and
language-tagged literals, IRIs, blank nodes, quoted triples, NULL, and strings that are no encoding at all. The exact
expected results of the operators that read the facets are in test_expressions.py (the SQL path) and the W3C suites
(queries compiled with the session's UDF)."""

from __future__ import annotations

import math
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.spark import jvm
from rspark.spark.expr.sql import parsed
from rspark.spark.expr.values import facet_pack, facets_udf

XSD = "http://www.w3.org/2001/XMLSchema#"
FIELDS = ("enc", "sfx", "lexr", "t", "d", "f", "k")
DATATYPES = ["integer", "int", "long", "short", "byte", "nonPositiveInteger", "negativeInteger", "nonNegativeInteger",
             "unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte", "positiveInteger", "decimal", "float",
             "double", "boolean", "dateTime", "date", "string", "gYear", "", "integerx"]


def _compare(spark, terms: list[str | None]) -> list:
    """Per term: the fields where the SQL's struct and the UDF's differ (empty lists: none)."""
    udf = jvm.term_facets(spark)
    assert udf is not None, "the test session must have rspark's jar (a JDK is present in CI)"
    df = spark.createDataFrame([(i, t) for i, t in enumerate(terms)], "i int, e string")
    sql = facet_pack("e", "leaf")
    with facets_udf(udf):
        by_udf = facet_pack("e", "leaf")
    assert udf in by_udf and udf not in sql
    rows = df.select("i", parsed(sql).alias("a"), parsed(by_udf).alias("b")).collect()
    out = [None] * len(terms)
    for r in rows:
        out[r["i"]] = [(f, r["a"][f], r["b"][f]) for f in FIELDS if not _same(r["a"][f], r["b"][f])]
    return out


def _same(a, b) -> bool:
    """Equal values, doubles bit for bit (NaN equals NaN, -0.0 differs from 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)


def _assert_same(spark, terms: list[str | None]) -> None:
    problems = [f"{t!r}: {diff}" for t, diff in zip(terms, _compare(spark, terms)) if diff]
    assert not problems, "\n".join(problems)


EDGES = [
    None, "", "<http://ex.org/a>", "_:b1", "<< <http://ex.org/a> <http://ex.org/p> \"1\" >>", '"plain"', '""',
    '"chat"@en', '"x"@', '"5"^^<http://www.w3.org/2001/XMLSchema#>', f'"5"^^<{XSD}integer', f'"5"^^{XSD}integer>',
    f'"12"^^<{XSD}integer>', f'"-0"^^<{XSD}int>', f'"+7"^^<{XSD}long>', f'" 7"^^<{XSD}integer>',
    f'"7 "^^<{XSD}integer>', f'"-0.0"^^<{XSD}double>', f'"-0"^^<{XSD}float>',
    f'"1.5"^^<{XSD}integer>', f'"123456789012345678901"^^<{XSD}integer>', f'"99999999999999999999"^^<{XSD}integer>',
    f'"100000000000000000000"^^<{XSD}integer>', f'"1.0000000000000000005"^^<{XSD}decimal>', f'"3"^^<{XSD}decimal>',
    f'".5"^^<{XSD}decimal>', f'"5."^^<{XSD}decimal>', f'"."^^<{XSD}decimal>', f'"1e3"^^<{XSD}decimal>',
    f'"1.5E3"^^<{XSD}double>', f'"INF"^^<{XSD}double>', f'"-INF"^^<{XSD}float>', f'"NaN"^^<{XSD}float>',
    f'"nan"^^<{XSD}double>', f'"Infinity"^^<{XSD}double>', f'"1e400"^^<{XSD}double>', f'"1e39"^^<{XSD}float>',
    f'"0.1"^^<{XSD}float>', f'"1d"^^<{XSD}double>', f'"0x10"^^<{XSD}double>', f'"12\u2028"^^<{XSD}integer>',
    f'"true"^^<{XSD}boolean>', f'"1"^^<{XSD}boolean>', f'"yes"^^<{XSD}boolean>',
    f'"2026-11-30T10:00:00Z"^^<{XSD}dateTime>', f'"2026-11-30T10:00:00.5+01:00"^^<{XSD}dateTime>',
    f'"2026-11-30"^^<{XSD}date>', f'"20261130"^^<{XSD}date>', f'"a\\"b"^^<{XSD}integer>', '"a\\"b"', '"\U0001d11e1"',
    f'"\U0001d11e"^^<{XSD}decimal>', f'"5"^^<{XSD}decimal\U0001d11e>', '"unterminated', 'plain text', '"',
]


def test_edges(spark):
    _assert_same(spark, EDGES)


def test_queries_compiled_in_a_session_call_the_udf(spark, tmp_path):
    """A FILTER's general branch and an aggregate's values read the facets through the UDF, and answer as SPARQL
    says (promotion to double, an ill-typed integer dropped by the FILTER and making AVG an error)."""
    from rspark import compile_query
    from rspark.engine.engine import Engine
    from rspark.spark.sparql.query import make_env, projected_names, select_frame, solutions_of

    values = [("1", "integer"), ("2.5", "decimal"), ("1e1", "double"), ("x", "integer"), ("4", "float")]
    data = tmp_path / "d.nt"
    data.write_text("".join(f'<http://ex.org/s{i}> <http://ex.org/p> "{v}"^^<{XSD}{dt}> .\n'
                            for i, (v, dt) in enumerate(values)))

    def answer(engine, query: str) -> tuple[list, str]:
        plan = compile_query(query)
        _, sols = solutions_of(spark, plan, engine.dataset_for(plan), make_env(plan.base))
        frame = select_frame(sols, projected_names(sols))
        return sorted(tuple(r) for r in frame.collect()), frame._jdf.queryExecution().optimizedPlan().toString()

    with Engine(spark=spark) as engine:
        engine.load(data)
        rows, text = answer(engine, "SELECT ?s WHERE { ?s ?p ?v FILTER(?v + 1 > 3) }")
        assert jvm.TERM_FACETS + "(" in text
        assert rows == [("<http://ex.org/s1>",), ("<http://ex.org/s2>",), ("<http://ex.org/s4>",)]
        rows, text = answer(engine, "SELECT (MAX(?v) AS ?m) (AVG(?v) AS ?a) "
                                    "WHERE { ?s ?p ?v FILTER(?s != <http://ex.org/s3>) }")
        assert jvm.TERM_FACETS + "(" in text
        assert rows == [(f'"1e1"^^<{XSD}double>', f'"4.375E0"^^<{XSD}double>')]


_LEX = st.lists(st.sampled_from(list("0123456789+-.eE xT:Zé") + ["INF", "NaN", "\\\"", "\\\\", "\u2028", "\U0001d11e"]),
               max_size=16).map("".join)


@st.composite
def _term(draw) -> str | None:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return None
    if kind == 1:
        return draw(st.sampled_from(EDGES))
    if kind == 2:
        return draw(st.text(max_size=12))
    lexical = draw(_LEX)
    if kind == 3:
        return f'"{lexical}"'
    if kind == 4:
        return f'"{lexical}"@{draw(st.sampled_from(["en", "de-CH", ""]))}'
    return f'"{lexical}"^^<{XSD}{draw(st.sampled_from(DATATYPES))}>'


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_term(), min_size=1, max_size=60))
def test_generated_terms(spark, terms):
    _assert_same(spark, terms)


def _order_keys_differ(spark, terms: list[str | None]) -> list[str]:
    """The terms whose ORDER BY key differs between the UDF's facets and the SQL's."""
    from rspark.spark.expr.compile import order_key

    udf = jvm.term_facets(spark)
    df = spark.createDataFrame([(i, t) for i, t in enumerate(terms)], "i int, e string")
    by_sql, by_udf = order_key(df["e"]), order_key(df["e"], udf)
    assert udf in str(by_udf) and udf not in str(by_sql)
    # (Spark's equality: NaN equals NaN, -0.0 equals 0.0, as they sort)
    rows = df.select("i", by_sql.alias("a"), by_udf.alias("b"), by_sql.eqNullSafe(by_udf).alias("same")).collect()
    return [f"{terms[r['i']]!r}: {r['a']} != {r['b']}" for r in rows if not r["same"]]


QUOTED = [f'<< <http://ex.org/a> <http://ex.org/p> "{lex}"^^<{XSD}{dt}> >>'
          for lex, dt in (("1.5", "decimal"), ("7", "integer"), ("1e2", "double"), ("x", "integer"), ("NaN", "float"),
                          ("1.", "decimal"), ("-0", "double"))] + [
    '<< _:b1 <http://ex.org/p> "x"@en >>', '<< <http://ex.org/a> <http://ex.org/p> "12" >>',
    f'<< << <http://ex.org/a> <http://ex.org/p> "2"^^<{XSD}int> >> <http://ex.org/q> "3"^^<{XSD}short> >>']


def test_order_keys_are_the_same_through_the_udf(spark):
    problems = _order_keys_differ(spark, EDGES + QUOTED)
    assert not problems, "\n".join(problems)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_term(), min_size=1, max_size=60))
def test_generated_order_keys(spark, terms):
    problems = _order_keys_differ(spark, terms)
    assert not problems, "\n".join(problems)


def test_order_by_in_a_session_calls_the_udf_and_orders_as_sparql_says(spark, tmp_path):
    from rspark import compile_query
    from rspark.engine.engine import Engine
    from rspark.spark.sparql.query import make_env, projected_names, select_frame, solutions_of

    values = ['"10"^^<%sinteger>' % XSD, '"9.5"^^<%sdecimal>' % XSD, '"1e2"^^<%sdouble>' % XSD, '"b"', '"a"',
              "<http://ex.org/o>", "_:x", '"2026-01-01T00:00:00Z"^^<%sdateTime>' % XSD]
    data = tmp_path / "d.nt"
    data.write_text("".join(f"<http://ex.org/s{i}> <http://ex.org/p> {v} .\n" for i, v in enumerate(values)))
    with Engine(spark=spark) as engine:
        engine.load(data)
        plan = compile_query("SELECT ?s WHERE { ?s ?p ?v } ORDER BY DESC(?v)")
        comp, sols = solutions_of(spark, plan, engine.dataset_for(plan), make_env(plan.base))
        frame = select_frame(sols, projected_names(sols), comp.env.facets)
        plan = frame._jdf.queryExecution().optimizedPlan().toString()
        assert jvm.TERM_FACETS + "(" in plan
        # the sort compares a column computed once a row, not the key's expression at every comparison
        [sort] = [line for line in plan.splitlines() if line.lstrip(" :+-").startswith("Sort ")]
        assert "__sk0" in sort and jvm.TERM_FACETS not in sort
        got = [r[0] for r in frame.collect()]
    # descending: literals (the dateTime, strings by code point, numbers by value: compared among themselves in
    # the lexical forms' order across kinds), then IRIs, then blank nodes (SPARQL 1.1, 15.1)
    order = [int(s.rsplit("s", 1)[1].rstrip(">")) for s in got]
    assert order[-2:] == [5, 6]
    assert order.index(2) < order.index(0) < order.index(1)
