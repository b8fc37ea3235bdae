"""``/graphs``: static graphs loaded, read, replaced and deleted at run time (docs/service.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from rspark.service.protocol import sparql_request
from rspark.service.routes import call, service_of


async def list_graphs(request: Request):
    graphs = service_of(request).graphs
    return JSONResponse({"graphs": [{"name": n, "iri": g["iri"], "triples": g["triples"],
                                     "media_type": g["media_type"], "versions": _versions(g)}
                                    for n, g in graphs.items()]})


def _versions(g: dict) -> list[dict]:
    """A graph's versions as listed: the instant each is valid from (null: from the beginning) and its triples."""
    return [{"valid_from": v["since"], "triples": v["triples"]} for v in g["versions"]]


async def put_graph(request: Request):
    service = service_of(request)
    name = request.path_params["name"]
    body = await request.body()
    new, triples = await call(service.put_graph, name, body, request.headers.get("content-type"),
                              request.query_params.get("iri"), valid_from=request.query_params.get("valid_from"))
    g = service.graph(name)
    return JSONResponse({"name": name, "iri": g["iri"], "triples": triples, "versions": _versions(g)},
                        status_code=201 if new else 200)


async def get_graph(request: Request):
    """The graph's latest version, or with ``?valid_from=`` the version valid from that instant."""
    v = service_of(request).graph_version(request.path_params["name"], request.query_params.get("valid_from"))
    with open(v["path"], "rb") as f:
        return Response(f.read(), media_type=v["media_type"])


async def delete_graph(request: Request):
    await call(service_of(request).delete_graph, request.path_params["name"])
    return Response(status_code=204)


async def sparql(request: Request):
    """The SPARQL 1.1 Protocol over the static graphs."""
    return await sparql_request(request, service_of(request))
