"""rspark: RDF Stream Processing on Apache Spark.

``Engine`` answers SPARQL 1.1 queries over static data (``engine.sparql``) and replays continuous RSP-QL queries over
recorded streams (``engine.replay``) on Apache Spark. ``parse_query`` (text -> syntax tree), ``compile_query``
(text -> algebra, a ``QueryPlan``) and ``explain`` (the algebra as readable S-expressions) expose the front end.

The package's layers, from the bottom: ``model`` (terms, time, the term codec), ``rsp`` (the stream model: windows,
profiles, report policies), ``algebra`` types, ``syntax`` (text -> syntax tree), the translation to the algebra,
``spark`` (the algebra and the windows as Spark plans), ``engine`` (the ``Engine`` API, replays) and ``cli``. The
layers below ``spark`` are pure Python: ``Engine`` (and with it PySpark) is imported on first use.
"""

from rspark.algebra.sse import to_sse
from rspark.errors import DataError, NotSupportedError, RsparkError
from rspark.syntax.parser import QuerySyntaxError, parse_query
from rspark.syntax.translate import QueryError, compile_query

__version__ = "0.1.0"


def explain(query: str, *, base_iri: str | None = None) -> str:
    """The algebra of ``query`` as S-expression text (what ``rspark explain`` prints)."""
    return to_sse(compile_query(query, base_iri=base_iri))


def __getattr__(name: str):
    # Engine and SparqlResult need PySpark: imported when first asked for, so that the front end and the stream
    # model can be used (and tested) without it
    if name in ("Engine", "SparqlResult"):
        # delayed: rspark.engine.engine imports PySpark (~0.3 s); `import rspark` stays pure Python
        from rspark.engine import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'rspark' has no attribute {name!r}")


__all__ = ["DataError", "Engine", "NotSupportedError", "QueryError", "QuerySyntaxError", "RsparkError", "SparqlResult",
           "compile_query", "explain", "parse_query", "__version__"]
