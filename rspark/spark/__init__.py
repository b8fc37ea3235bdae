"""Physical execution on Apache Spark: term encoding, loading, expressions, the algebra compiler, windows."""
