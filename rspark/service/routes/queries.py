"""``/queries``: register, read, pause, resume and delete continuous queries, their observers, and their records
as Server-Sent Events (docs/service.md)."""

from __future__ import annotations

import asyncio
import json

from sse_starlette.sse import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from rspark.service.routes import call, json_body, service_of
from rspark.service.state import ServiceError


async def list_queries(request: Request):
    return JSONResponse({"queries": await run_in_threadpool(service_of(request).queries_view)})


async def put_query(request: Request):
    service = service_of(request)
    name = request.path_params["name"]
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    profile = request.query_params.get("profile")
    if ctype == "application/json":
        spec = await json_body(request, f"PUT /queries/{name}")
        if not isinstance(spec, dict) or not isinstance(spec.get("query"), str):
            raise ServiceError(400, 'a query registration in JSON is {"query": "...", "profile": "..."}')
        text, profile = spec["query"], spec.get("profile", profile)
    else:
        try:
            text = (await request.body()).decode("utf-8")
        except UnicodeDecodeError:
            raise ServiceError(400, "the query is not UTF-8 text") from None
    entry = await call(service.register, name, text, profile)
    return JSONResponse(service.query_view(entry), status_code=201)


async def get_query(request: Request):
    service = service_of(request)
    entry = service.query(request.path_params["name"])
    return JSONResponse(await run_in_threadpool(service.query_view, entry, True))


async def delete_query(request: Request):
    await call(service_of(request).delete_query, request.path_params["name"])
    return Response(status_code=204)


async def pause(request: Request):
    service = service_of(request)
    name, action = request.path_params["name"], request.path_params["action"]
    if action not in ("pause", "resume"):
        raise ServiceError(404, f"POST /queries/{name}/{action}: pause or resume")
    service.pause(name, action == "pause")
    return JSONResponse(service.query_view(service.query(name)))


async def add_observer(request: Request):
    name = request.path_params["name"]
    spec = await json_body(request, f"POST /queries/{name}/observers")
    url = spec.get("url") if isinstance(spec, dict) else None
    obs = await call(service_of(request).add_observer, name, url)
    return JSONResponse(obs.describe(), status_code=201)


async def delete_observer(request: Request):
    await call(service_of(request).delete_observer, request.path_params["name"], request.path_params["ident"])
    return Response(status_code=204)


async def results(request: Request):
    """The query's records as Server-Sent Events, from ``Last-Event-ID`` (or ``?from=start``) on."""
    service = service_of(request)
    entry = service.query(request.path_params["name"])
    after = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
    if after is None and request.query_params.get("from") == "start":
        after = "start"
    loop = asyncio.get_running_loop()
    try:
        sub, backlog, gap = entry.results.subscribe(loop, after)
    except (ValueError, ArithmeticError):
        raise ServiceError(400, f"Last-Event-ID {after!r} is not an event id of this stream (a record's "
                                "time)") from None
    # the subscriber is released when the response ends, also when its stream never started (a HEAD request,
    # a client gone before the first event): its count comes back
    return EventSourceResponse(_events(service, entry, sub, backlog, gap, after), ping=15, send_timeout=30,
                               background=BackgroundTask(entry.results.unsubscribe, sub))


async def _events(service, entry, sub, backlog, gap, after):
    """The events of one SSE client: a gap notice, the backlog, then each new record once."""
    service.sse_clients += 1
    try:
        if gap is not None:
            yield {"event": "gap", "data": json.dumps({"after": after, "dropped_upto": gap})}
        last = None
        for ev in backlog:
            last = ev.key
            yield {"event": "result", "id": ev.id, "data": ev.data}
        while True:
            ev = await sub.queue.get()
            if ev is None:
                return
            if last is not None and ev.key <= last:
                continue  # was in the backlog already
            yield {"event": "result", "id": ev.id, "data": ev.data}
    finally:
        service.sse_clients -= 1
        entry.results.unsubscribe(sub)
