"""Helpers for testing code that uses rspark (as ``pyspark.testing``): reading SPARQL result documents
(:mod:`rspark.testing.readers`) and comparing results up to blank-node renaming (:mod:`rspark.testing.compare`); a
single-node Kafka broker for tests and benchmarks of ``kafka://`` sources and sinks
(:mod:`rspark.testing.kafka_broker`, imported by name: it is not loaded with this package)."""

from rspark.testing.compare import results_equal
from rspark.testing.readers import from_csv, from_json, from_rdf, from_tsv, from_xml, read_expected

__all__ = ["from_csv", "from_json", "from_rdf", "from_tsv", "from_xml", "read_expected", "results_equal"]
