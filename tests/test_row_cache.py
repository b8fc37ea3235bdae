"""rspark's cache serializer (rspark.jvm.RowBatchSerializer): a cached DataFrame is kept as batches of Spark's binary
rows, read back whole or as a projection, and a scan skips the batches whose integer columns' bounds rule its
filters out."""

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark import StorageLevel
from pyspark.sql import functions as F

from rspark.spark.jvm import CACHE_SERIALIZER_CONF, ROW_CACHE

SCHEMA = ("s string, n long, i int, d double, m decimal(38,18), b boolean, raw binary, tags array<string>, "
          "pair struct<x: string, y: long>, props map<string, int>")


def _rows():
    big = "x" * 300_000  # one row larger than a batch's bytes
    rows = [
        ("", -(2 ** 63), -(2 ** 31), float("nan"), Decimal("-12345678901234567890.123456789012345678"), True, b"",
         [], ("", 0), {}),
        ("é \"q\" \\ <>", 2 ** 63 - 1, 2 ** 31 - 1, -0.0, Decimal("0.000000000000000001"), False, b"\x00\xff",
         ["a", None, "ü"], (None, None), {"k": None, "": 1}),
        (None, None, None, None, None, None, None, None, None, None),
        (big, 7, 7, 1e300, Decimal(1), True, bytes(range(256)), [big], (big, -1), {big: 2}),
    ]
    rows += [(f"<http://e/{j}>", j, j % 7, j / 3, Decimal(j), j % 2 == 0, bytes([j % 256]), [str(j)], (str(j), j),
              {str(j): j}) for j in range(50)]
    return rows


@pytest.fixture
def small_batches(spark):
    """Batches of three rows (spark.sql.inMemoryColumnarStorage.batchSize), so that a few rows span many."""
    key = "spark.sql.inMemoryColumnarStorage.batchSize"
    before = spark.conf.get(key)
    spark.conf.set(key, "3")
    yield
    spark.conf.set(key, before)


def _values(df):
    # NaN != NaN: compare the rows' text, which also tells -0.0 from 0.0
    return [repr(tuple(r)) for r in df.collect()]


def test_the_session_caches_with_rsparks_row_serializer(spark):
    assert spark.conf.get(CACHE_SERIALIZER_CONF) == ROW_CACHE


@pytest.mark.parametrize("level", [StorageLevel.MEMORY_AND_DISK, StorageLevel.DISK_ONLY], ids=["memory", "disk"])
def test_every_kind_of_value_comes_back_from_the_cache_exactly(spark, small_batches, level):
    """Strings (empty, non-ASCII, 300 KB), the extreme longs and ints, NaN and -0.0, decimals of 38 digits,
    booleans, binaries, arrays, structs and maps with NULLs inside, and a row of NULLs, over many batches, in
    memory and written to disk (the batches serialized)."""
    plain = spark.createDataFrame(_rows(), SCHEMA).repartition(3)  # never cached: another RDD than cached's
    cached = spark.createDataFrame(_rows(), SCHEMA).repartition(3).persist(level)
    try:
        assert cached.count() == len(_rows())
        assert "InMemoryTableScan" in cached.select("*")._jdf.queryExecution().executedPlan().toString()
        assert sorted(_values(cached.select("*"))) == sorted(_values(plain))
        # a projection of some columns, in another order, and an expression over them
        assert sorted(_values(cached.select("props", "n", "s"))) == sorted(_values(plain.select("props", "n", "s")))
        assert sorted(_values(cached.select(F.length("s").alias("l"), "tags"))) == \
            sorted(_values(plain.select(F.length("s").alias("l"), "tags")))
    finally:
        cached.unpersist()


def _scan_rows(df) -> list[int]:
    """The rows each in-memory scan of ``df``'s last execution read (the rows of the batches it did not skip)."""
    plan = df._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    out = []
    for j in range(leaves.size()):
        leaf = leaves.apply(j)
        if leaf.nodeName() == "InMemoryTableScan":
            out.append(leaf.metrics().apply("numOutputRows").value())
    return out


# rows of k in runs: 0 x 30, then 1 x 30, then 2 x 30 (k's batches hold one value each); v counts up, with NULLs
KINDS = [(k, None if j % 10 == 0 else k * 100 + j, j % 4, f"<http://e/{k}/{j}>") for k in range(3) for j in range(30)]

PREDICATES = {  # built when a test runs: a Column needs the SparkContext
    "k = 1": lambda: F.col("k") == 1,
    "1 = k": lambda: F.lit(1) == F.col("k"),
    "k <=> 2": lambda: F.col("k").eqNullSafe(2),
    "k < 1": lambda: F.col("k") < 1,
    "k <= 1": lambda: F.col("k") <= 1,
    "k > 1": lambda: F.col("k") > 1,
    "k >= 2": lambda: F.col("k") >= 2,
    "1 < k": lambda: F.lit(1) < F.col("k"),
    "2 >= k": lambda: F.lit(2) >= F.col("k"),
    "k in (0, 2)": lambda: F.col("k").isin(0, 2),
    "k = 1 or k = 2": lambda: (F.col("k") == 1) | (F.col("k") == 2),
    "k = 1 and v > 110": lambda: (F.col("k") == 1) & (F.col("v") > 110),
    "k = 7": lambda: F.col("k") == 7,
    "v is null": lambda: F.col("v").isNull(),
    "v is not null": lambda: F.col("v").isNotNull(),
    "v > 215": lambda: F.col("v") > 215,
    "v < 5": lambda: F.col("v") < 5,
    "small = 3 and k = 0": lambda: (F.col("small") == 3) & (F.col("k") == 0),
    "k = 1 or s = ...": lambda: (F.col("k") == 1) | (F.col("s") == "<http://e/0/3>"),
    "s = ...": lambda: F.col("s") == "<http://e/2/29>",
    "not k = 1": lambda: ~(F.col("k") == 1),
    "k + 1 = 2": lambda: F.col("k") + 1 == 2,
}


@pytest.mark.parametrize("name", list(PREDICATES))
def test_a_filtered_scan_of_the_cache_gives_the_rows_of_the_uncached_frame(spark, small_batches, name):
    """Whatever the filter (on the integer columns' bounds, NULLs, flipped comparisons, IN, AND and OR, on a
    string, negated), the rows are those of the same filter over the uncached rows: skipping batches never loses
    a row."""
    plain = spark.createDataFrame(KINDS, "k long, v long, small int, s string").coalesce(1)
    cached = spark.createDataFrame(KINDS, "k long, v long, small int, s string").coalesce(1).persist()
    try:
        cached.count()
        assert "InMemoryTableScan" in cached.where(PREDICATES[name]())._jdf.queryExecution().executedPlan().toString()
        got = sorted(_values(cached.where(PREDICATES[name]())))
        assert got == sorted(_values(plain.where(PREDICATES[name]())))
    finally:
        cached.unpersist()


def test_a_scan_for_one_kind_of_row_reads_only_that_kinds_batches(spark, small_batches):
    """Rows of three kinds (k = 0, 1, 2) in runs of 30, batches of 3 rows: k = 1 reads its 10 batches (30 rows),
    k = 7 none, v > 215 the batches where v reaches past 215, a filter on a string every batch."""
    cached = spark.createDataFrame(KINDS, "k long, v long, small int, s string").coalesce(1).persist()
    try:
        cached.count()
        cases = [(F.col("k") == 1, 30, 30), (F.col("k") == 7, 0, 0), (F.col("v") > 215, 15, 13),
                 (F.col("s") == "<http://e/2/29>", 90, 1), (F.col("k").isin(0, 2), 60, 60)]
        for predicate, read, kept in cases:
            df = cached.where(predicate)
            assert len(df.collect()) == kept
            assert _scan_rows(df) == [read], predicate
    finally:
        cached.unpersist()


def _leaf():
    column = st.sampled_from(["k", "v", "small"])
    value = st.integers(-1, 9)  # near the columns' values: batches' bounds are often the constant itself
    return st.one_of(
        st.tuples(st.sampled_from(["=", "<=>", "<", "<=", ">", ">="]), column, value, st.booleans()),
        st.tuples(st.just("in"), column, st.lists(value, min_size=1, max_size=4), st.just(False)),
        st.tuples(st.sampled_from(["null", "not null"]), column, st.none(), st.just(False)),
    )


PREDICATE_TREES = st.recursive(_leaf(), lambda inner: st.one_of(
    st.tuples(st.sampled_from(["and", "or"]), inner, inner), st.tuples(st.just("not"), inner)), max_leaves=5)


def _column(tree):
    """The Column of a predicate tree: (op, column, value, flipped) leaves under and / or / not."""
    op = tree[0]
    if op in ("and", "or"):
        left, right = _column(tree[1]), _column(tree[2])
        return (left & right) if op == "and" else (left | right)
    if op == "not":
        return ~_column(tree[1])
    _, name, value, flipped = tree
    col = F.col(name)
    if op == "in":
        return col.isin(*value)
    if op in ("null", "not null"):
        return col.isNull() if op == "null" else col.isNotNull()
    lit = F.lit(value)
    a, b = (lit, col) if flipped else (col, lit)
    return {"=": a == b, "<=>": a.eqNullSafe(b), "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


ROWS = st.lists(st.tuples(st.integers(0, 6), st.one_of(st.none(), st.integers(0, 8)),
                          st.one_of(st.none(), st.integers(0, 5))), min_size=0, max_size=40)


def test_random_filters_over_random_batches_lose_no_row(spark, small_batches):
    """Random rows (sorted or not, with NULLs) in batches of three, random filters (comparisons either way round,
    IN, IS [NOT] NULL under AND, OR and NOT; constants near the values, so that a batch's bound is often the
    constant itself): the cached scan gives the uncached rows."""

    @settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(ROWS, st.sampled_from([None, 0, 1, 2]), st.lists(PREDICATE_TREES, min_size=6, max_size=6))
    def check(rows, order, trees):
        rows = rows if order is None else sorted(rows, key=lambda r: (r[order] is None, r[order] or 0))
        schema = "k long, v long, small int"
        plain = spark.createDataFrame(rows, schema).coalesce(1)
        cached = spark.createDataFrame(rows, schema).coalesce(1).persist()
        try:
            cached.count()
            for tree in trees:
                predicate = _column(tree)
                assert sorted(_values(cached.where(predicate))) == sorted(_values(plain.where(predicate))), tree
        finally:
            cached.unpersist()

    check()
