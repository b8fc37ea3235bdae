"""The algebra and the windows on Apache Spark: the SPARQL compiler, expressions as Spark SQL, stream-to-relation
windows, the instant-keyed compilation, R2S, loading, the session and the JVM helpers."""
