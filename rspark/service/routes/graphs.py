"""``/graphs``: static graphs loaded, read, replaced and deleted at run time (docs/service.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from rspark.service.routes import call, service_of


async def list_graphs(request: Request):
    graphs = service_of(request).graphs
    return JSONResponse({"graphs": [{"name": n, "iri": g["iri"], "triples": g["triples"],
                                     "media_type": g["media_type"]} for n, g in graphs.items()]})


async def put_graph(request: Request):
    service = service_of(request)
    name = request.path_params["name"]
    body = await request.body()
    new, triples = await call(service.put_graph, name, body, request.headers.get("content-type"),
                              request.query_params.get("iri"))
    g = service.graph(name)
    return JSONResponse({"name": name, "iri": g["iri"], "triples": triples}, status_code=201 if new else 200)


async def get_graph(request: Request):
    g = service_of(request).graph(request.path_params["name"])
    with open(g["path"], "rb") as f:
        return Response(f.read(), media_type=g["media_type"])


async def delete_graph(request: Request):
    await call(service_of(request).delete_graph, request.path_params["name"])
    return Response(status_code=204)


async def sparql(request: Request):
    """The SPARQL 1.1 Protocol over the static graphs."""
    from rspark.service.protocol import sparql_request

    return await sparql_request(request, service_of(request))
