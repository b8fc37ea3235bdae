"""``/streams``: declare, list, read, push to and delete live streams (docs/service.md)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from rspark.service.routes import call, json_body, service_of
from rspark.service.state import ServiceError


async def list_streams(request: Request):
    return JSONResponse({"streams": await run_in_threadpool(service_of(request).streams_view)})


async def put_stream(request: Request):
    service = service_of(request)
    name = request.path_params["name"]
    decl = await json_body(request, f"PUT /streams/{name}")
    new = await call(service.declare_stream, name, decl)
    entry = service.stream(name)
    return JSONResponse({"name": name, **entry.declaration()}, status_code=201 if new else 200)


async def get_stream(request: Request):
    service = service_of(request)
    entry = service.stream(request.path_params["name"])
    return JSONResponse(await run_in_threadpool(service.stream_view, entry, entry.iri))


async def push(request: Request):
    service = service_of(request)
    name = request.path_params["name"]
    service.stream(name)
    body = await request.body()
    answer = await call(service.push, name, body, request.headers.get("content-type"))
    return JSONResponse(answer, status_code=202)


async def delete_stream(request: Request):
    await call(service_of(request).delete_stream, request.path_params["name"])
    return Response(status_code=204)


async def stream_elements(request: Request):
    try:
        limit = int(request.query_params.get("limit", "500"))
    except ValueError:
        raise ServiceError(400, "limit: a number of elements") from None
    return JSONResponse(service_of(request).elements_view(request.path_params["name"], min(limit, 2000)))
