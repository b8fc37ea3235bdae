"""The SPARQL 1.1 Protocol over the service's static graphs: ``GET /sparql?query=...``, ``POST /sparql`` with
``application/sparql-query`` or a form (``query=...``). Results by the Accept header: SPARQL JSON (the default),
XML, CSV, TSV; CONSTRUCT and DESCRIBE as N-Triples (or N-Quads when the template has GRAPH blocks)."""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from rspark import results as R
from rspark.errors import RsparkError
from rspark.service.state import ServiceError, refuse_service_calls
from rspark.syntax.translate import QuerySyntaxError, compile_query

SELECT_TYPES = {  # media type -> result format
    "application/sparql-results+json": "json",
    "application/json": "json",
    "application/sparql-results+xml": "xml",
    "application/xml": "xml",
    "text/csv": "csv",
    "text/tab-separated-values": "tsv",
}
GRAPH_TYPES = {"application/n-triples": "ntriples", "application/n-quads": "nquads", "text/plain": "ntriples"}
MEDIA = {"json": "application/sparql-results+json", "xml": "application/sparql-results+xml",
         "csv": "text/csv; charset=utf-8", "tsv": "text/tab-separated-values; charset=utf-8",
         "ntriples": "application/n-triples", "nquads": "application/n-quads"}


async def sparql_request(request: Request, service) -> Response:
    if request.method == "GET":
        query = request.query_params.get("query")
    else:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype == "application/sparql-query":
            query = (await request.body()).decode("utf-8", "replace")
        elif ctype == "application/x-www-form-urlencoded":
            fields = parse_qs((await request.body()).decode("utf-8", "replace"))
            query = (fields.get("query") or [None])[0]
        else:
            raise ServiceError(415, "POST /sparql takes application/sparql-query or a form with query=...")
    if not query:
        raise ServiceError(400, "no query: give query=... (the SPARQL 1.1 Protocol)")
    try:
        refuse_service_calls(compile_query(query, sparql=True))
        result = await run_in_threadpool(service.engine.sparql, query)
    except QuerySyntaxError as exc:
        raise ServiceError(400, str(exc), line=getattr(exc, "line", None), column=getattr(exc, "column", None)) \
            from None
    except RsparkError as exc:
        raise ServiceError(400, str(exc)) from None
    graph = isinstance(result.value, (R.GraphResult, R.DatasetResult))
    fmt = _negotiate(request.headers.get("accept", ""), graph, result)
    try:
        text = result.serialize(fmt)
    except RsparkError as exc:
        raise ServiceError(406, str(exc)) from None
    return Response(text, media_type=MEDIA[fmt])


def _negotiate(accept: str, graph: bool, result) -> str:
    """The first acceptable format of the Accept header (by q value), else the default (JSON; N-Triples or N-Quads
    for graphs)."""
    quads = isinstance(result.value, R.DatasetResult)
    default = ("nquads" if quads else "ntriples") if graph else "json"
    types = GRAPH_TYPES if graph else SELECT_TYPES
    ranked = []
    for i, part in enumerate(accept.split(",")):
        fields = [f.strip() for f in part.split(";")]
        mt, q = fields[0].lower(), 1.0
        for f in fields[1:]:
            if f.startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if mt and q > 0:
            ranked.append((-q, i, mt))
    for _, _, mt in sorted(ranked):
        if mt in types:
            fmt = types[mt]
            return "nquads" if quads and fmt == "ntriples" else fmt
        if mt in ("*/*", "application/*", "text/*"):
            return default
    if ranked:
        raise ServiceError(406, f"no result format for Accept: {accept} (JSON, XML, CSV, TSV; N-Triples or "
                                "N-Quads for graphs)")
    return default
