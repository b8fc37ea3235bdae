"""DataFrames of a few rows the driver holds (evaluation instants, window names, VALUES tables)."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import _parse_datatype_string

__all__ = ["local_frame"]


def local_frame(spark: SparkSession, rows: list[tuple], schema: str) -> DataFrame:
    """``rows`` (tuples in ``schema``'s column order, None for NULL) as a DataFrame.

    It is given to Spark as an Arrow table, which becomes a local relation of the plan, read inside the JVM.
    (``createDataFrame`` of a Python list makes a Python RDD instead, which every job reading it deserialises in
    Python workers.)"""
    struct = _parse_datatype_string(schema)
    arrow = to_arrow_schema(struct)
    columns = list(zip(*rows)) if rows else [()] * len(arrow)
    table = pa.Table.from_arrays([pa.array(list(col), field.type) for col, field in zip(columns, arrow)],
                                 schema=arrow)
    return spark.createDataFrame(table, struct)
