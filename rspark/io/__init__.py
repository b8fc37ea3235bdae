"""Input/output: reading and writing RDF data and SPARQL query results (see :mod:`rspark.io.results`)."""
