"""rspark: RDF Stream Processing on Apache Spark.

The language front end is available now: ``parse_query`` (text -> syntax tree), ``compile_query`` (text -> algebra,
a ``QueryPlan``) and ``explain`` (the algebra as readable S-expressions).
"""

from rspark.algebra.sse import to_sse
from rspark.algebra.translate import QueryError, compile_query
from rspark.syntax.parser import QuerySyntaxError, parse_query

__version__ = "0.1.0"


def explain(query: str, *, base_iri: str | None = None) -> str:
    """The algebra of ``query`` as S-expression text (what ``rspark explain`` prints)."""
    return to_sse(compile_query(query, base_iri=base_iri))


__all__ = ["QueryError", "QuerySyntaxError", "compile_query", "explain", "parse_query", "__version__"]
