"""Driver-side rows as DataFrames (rspark.spark.frames)."""

from rspark.spark.frames import local_frame


def test_local_rows_are_a_local_relation_read_in_the_jvm(spark):
    df = local_frame(spark, [("x", 1), (None, None), ("é \"q\"", -(2 ** 63))], "`a b` string, n long")
    assert [tuple(r) for r in df.collect()] == [("x", 1), (None, None), ("é \"q\"", -(2 ** 63))]
    assert df.columns == ["a b", "n"] and [f.dataType.simpleString() for f in df.schema] == ["string", "bigint"]
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert plan.startswith("LocalTableScan") and "ExistingRDD" not in plan  # no Python RDD: no Python workers


def test_no_rows_keep_their_schema(spark):
    df = local_frame(spark, [], "instant long")
    assert df.collect() == [] and df.columns == ["instant"]
    assert df._jdf.queryExecution().executedPlan().toString().startswith("LocalTableScan")
