"""Event processing, the pure part: the event algebra's analysis (which basic event patterns, which key, which
intervals a query asks for) and the sequential evaluator that consumption policies need (RSEP-QL, Sec. 4.4),
which runs inside Spark's Python workers, one key at a time. The Spark plans are in ``rspark.spark.cep``."""
