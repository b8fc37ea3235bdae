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


def test_arrow_tables_become_a_scan_of_their_batches_not_a_local_relation(spark):
    """rspark.spark.jvm.arrow_frame: the rows (NULLs, quotes, non-ASCII, the least long) in their schema, one
    partition per batch of at most ``batch_rows`` rows, scanned from an RDD (no local relation, whose rows Catalyst
    hashes whenever it analyses a union or a self-join) with its row count and size as statistics; a union of
    filters of it and a self-join answer as over the same rows made a local relation; no rows: None (the caller's
    local relation of none)."""
    import pyarrow as pa
    from pyspark.sql.types import _parse_datatype_string

    from rspark.spark.jvm import arrow_frame

    struct = _parse_datatype_string("element string, ts long, seq long")
    table = pa.table({"element": [f"<http://e/e{i}>" for i in range(10)] + [None, 'é"q'],
                      "ts": list(range(10)) + [None, -(2 ** 63)], "seq": list(range(12))})
    df = arrow_frame(spark, table, struct, 5)
    assert df is not None, "the test session must have rspark's jar (a JDK is present in CI)"
    local = spark.createDataFrame(table, struct)
    assert [tuple(r) for r in df.collect()] == [tuple(r) for r in local.collect()]
    assert df.rdd.getNumPartitions() == 3 and df.schema == struct
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Scan ExistingRDD" in plan and "LocalTableScan" not in plan
    stats = df._jdf.queryExecution().optimizedPlan().stats()
    assert int(str(stats.rowCount().get())) == 12 and 0 < int(str(stats.sizeInBytes())) < 10_000

    def union_and_self_join(frame):
        parts = [frame.where(frame.ts <= k) for k in (2, 5, 8)]
        union = parts[0].unionByName(parts[1]).unionByName(parts[2])
        pairs = frame.alias("a").join(frame.alias("b"), "seq").where("a.ts < 3")
        return sorted(tuple(r) for r in union.collect()), sorted(tuple(r) for r in pairs.collect())

    assert union_and_self_join(df) == union_and_self_join(local)
    assert arrow_frame(spark, table.slice(0, 0), struct, 5) is None


def test_a_table_of_many_chunks_is_scanned_in_batches_of_rows_and_one_batch_needs_no_shuffle(spark):
    """A table concatenated from many (a live buffer's segments, one per push) has one chunk per part: its
    partitions are still cut by rows (``batch_rows``), not one per chunk, so a window over a few thousand rows is
    one task however many pushes made it. One partition is said to be one: a DISTINCT or a grouping over it is
    planned without a shuffle, and answers as over the local relation; several are not (their rows are shuffled
    to be grouped)."""
    import pyarrow as pa
    from pyspark.sql.types import _parse_datatype_string

    from rspark.spark.jvm import arrow_frame

    struct = _parse_datatype_string("element string, ts long, seq long")
    parts = [pa.table({"element": [f"<http://e/e{i % 7}>" for i in range(k, k + 4)],
                       "ts": [i % 5 for i in range(k, k + 4)], "seq": list(range(k, k + 4))})
             for k in range(0, 60, 4)]
    table = pa.concat_tables(parts)
    assert table["seq"].num_chunks == 15
    one = arrow_frame(spark, table, struct, 1000)
    assert one.rdd.getNumPartitions() == 1
    several = arrow_frame(spark, table, struct, 25)
    assert several.rdd.getNumPartitions() == 3
    local = spark.createDataFrame(table, struct)
    expected = sorted(tuple(r) for r in local.select("element", "ts").distinct().collect())
    grouped = sorted(tuple(r) for r in local.groupBy("element").count().collect())
    for df, shuffles in ((one, False), (several, True)):
        distinct = df.select("element", "ts").distinct()
        counts = df.groupBy("element").count()
        assert sorted(tuple(r) for r in distinct.collect()) == expected
        assert sorted(tuple(r) for r in counts.collect()) == grouped
        for frame in (distinct, counts):
            plan = frame._jdf.queryExecution().executedPlan().toString()
            assert ("Exchange" in plan) is shuffles, plan
