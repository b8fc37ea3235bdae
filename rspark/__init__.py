"""rspark: RDF Stream Processing on Apache Spark.

``Engine`` answers SPARQL 1.1 queries over static data (``engine.sparql``) and replays continuous RSP-QL queries over
recorded streams (``engine.replay``) on Apache Spark. ``parse_query`` (text -> syntax tree), ``compile_query``
(text -> algebra, a ``QueryPlan``) and ``explain`` (the algebra as readable S-expressions) expose the front end.
"""

from rspark.algebra.sse import to_sse
from rspark.engine.engine import Engine, SparqlResult
from rspark.errors import DataError, NotSupportedError, RsparkError
from rspark.algebra.translate import QueryError, compile_query
from rspark.syntax.parser import QuerySyntaxError, parse_query

__version__ = "0.1.0"


def explain(query: str, *, base_iri: str | None = None) -> str:
    """The algebra of ``query`` as S-expression text (what ``rspark explain`` prints)."""
    return to_sse(compile_query(query, base_iri=base_iri))


__all__ = ["DataError", "Engine", "NotSupportedError", "QueryError", "QuerySyntaxError", "RsparkError", "SparqlResult",
           "compile_query", "explain", "parse_query", "__version__"]
