"""The HTTP side of ``rspark serve`` (docs/service.md): a Starlette app over a :class:`~rspark.service.state.Service`.

Resources: ``/streams`` (declare, push, delete, list), ``/graphs`` (static graphs loaded or replaced at run
time), ``/queries`` (register, pause, resume, delete, status; results as Server-Sent Events; callback observers),
``/sparql`` (the SPARQL 1.1 Protocol over the static graphs), ``/metrics`` (Prometheus text), ``/healthz`` and the
dashboard at ``/``. Errors are JSON, ``{"error": message, ...}`` with ``line`` / ``column`` / ``element`` when the
problem has a place.

Security (:class:`Guard`): with a token, every request that changes state (PUT, POST, DELETE; not ``POST
/sparql``, a SPARQL query, which changes nothing) must carry ``Authorization: Bearer TOKEN`` (401 otherwise); a
request body over the limit gets 413 before it is read whole;
no CORS headers unless origins are configured."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rspark.errors import RsparkError
from rspark.service.metrics import metrics_text
from rspark.service.state import Service, ServiceError

log = logging.getLogger("rspark.service")

STATE_CHANGING = {"PUT", "POST", "DELETE", "PATCH"}
READ_ONLY_POSTS = {"/sparql"}  # the SPARQL 1.1 Protocol's query by POST: it reads the static graphs only


class BodyTooLarge(Exception):
    """A request body read past ``--max-body`` (turned into a 413 by the app's exception handler)."""


class Guard:
    """ASGI middleware: the bearer token for state-changing requests (``POST /sparql`` is a query: it needs none)
    and the body size limit."""

    def __init__(self, app, *, token: str | None, max_body: int, service: Service) -> None:
        self.app, self.token, self.max_body, self.service = app, token, max_body, service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.service.requests += 1
        method = scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.token is not None and method in STATE_CHANGING \
                and not (method == "POST" and scope["path"] in READ_ONLY_POSTS):
            given = headers.get("authorization", "")
            if not (given.startswith("Bearer ") and hmac.compare_digest(given[7:].strip(), self.token)):
                self.service.refused += 1
                resp = JSONResponse({"error": "this request changes the service's state: it needs the header "
                                              "'Authorization: Bearer TOKEN' with the token of --token-file"},
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
                return await resp(scope, receive, send)
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            self.service.refused += 1
            return await _too_large(self.max_body)(scope, receive, send)
        seen = 0

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge()
            return message

        await self.app(scope, limited_receive, send)  # BodyTooLarge: 413 (create_app's exception handler)


def _too_large(limit: int) -> JSONResponse:
    return JSONResponse({"error": f"the request body is larger than {limit} bytes (--max-body); push the elements "
                                  "in several requests"}, status_code=413)


def create_app(service: Service, *, token: str | None = None, cors: list[str] | None = None, lifespan=None):
    """The ASGI app of ``rspark serve`` around ``service``."""

    def error(exc: Exception) -> JSONResponse:
        if isinstance(exc, ServiceError):
            service.refused += 1
            return JSONResponse({"error": str(exc), **exc.fields}, status_code=exc.status)
        raise exc

    async def call(fn, *args, **kwargs):
        try:
            return await run_in_threadpool(fn, *args, **kwargs)
        except ServiceError:
            raise
        except RsparkError as exc:
            raise ServiceError(400, str(exc)) from None

    async def json_body(request: Request, what: str):
        body = await request.body()
        if not body:
            return {}
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ServiceError(400, f"{what}: the body is not JSON ({exc})") from None

    def handler(fn):
        async def wrapped(request: Request):
            try:
                return await fn(request)
            except ServiceError as exc:
                return error(exc)

        return wrapped

    # ------------------------------------------------------------------------------------------------ streams

    @handler
    async def list_streams(request: Request):
        return JSONResponse({"streams": await run_in_threadpool(service.streams_view)})

    @handler
    async def put_stream(request: Request):
        name = request.path_params["name"]
        decl = await json_body(request, f"PUT /streams/{name}")
        new = await call(service.declare_stream, name, decl)
        entry = service.stream(name)
        return JSONResponse({"name": name, **entry.declaration()}, status_code=201 if new else 200)

    @handler
    async def get_stream(request: Request):
        name = request.path_params["name"]
        entry = service.stream(name)
        return JSONResponse(await run_in_threadpool(service.stream_view, entry, entry.iri))

    @handler
    async def push(request: Request):
        name = request.path_params["name"]
        service.stream(name)
        body = await request.body()
        answer = await call(service.push, name, body, request.headers.get("content-type"))
        return JSONResponse(answer, status_code=202)

    @handler
    async def delete_stream(request: Request):
        await call(service.delete_stream, request.path_params["name"])
        return Response(status_code=204)

    @handler
    async def stream_elements(request: Request):
        try:
            limit = int(request.query_params.get("limit", "500"))
        except ValueError:
            raise ServiceError(400, "limit: a number of elements") from None
        return JSONResponse(service.elements_view(request.path_params["name"], min(limit, 2000)))

    # ------------------------------------------------------------------------------------------------ graphs

    @handler
    async def list_graphs(request: Request):
        return JSONResponse({"graphs": [{"name": n, "iri": g["iri"], "triples": g["triples"],
                                         "media_type": g["media_type"]} for n, g in service.graphs.items()]})

    @handler
    async def put_graph(request: Request):
        name = request.path_params["name"]
        body = await request.body()
        new, triples = await call(service.put_graph, name, body, request.headers.get("content-type"),
                                  request.query_params.get("iri"))
        g = service.graph(name)
        return JSONResponse({"name": name, "iri": g["iri"], "triples": triples}, status_code=201 if new else 200)

    @handler
    async def get_graph(request: Request):
        g = service.graph(request.path_params["name"])
        with open(g["path"], "rb") as f:
            return Response(f.read(), media_type=g["media_type"])

    @handler
    async def delete_graph(request: Request):
        await call(service.delete_graph, request.path_params["name"])
        return Response(status_code=204)

    # ------------------------------------------------------------------------------------------------ queries

    @handler
    async def list_queries(request: Request):
        return JSONResponse({"queries": await run_in_threadpool(service.queries_view)})

    @handler
    async def put_query(request: Request):
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

    @handler
    async def get_query(request: Request):
        entry = service.query(request.path_params["name"])
        return JSONResponse(await run_in_threadpool(service.query_view, entry, True))

    @handler
    async def delete_query(request: Request):
        await call(service.delete_query, request.path_params["name"])
        return Response(status_code=204)

    @handler
    async def pause(request: Request):
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in ("pause", "resume"):
            raise ServiceError(404, f"POST /queries/{name}/{action}: pause or resume")
        service.pause(name, action == "pause")
        return JSONResponse(service.query_view(service.query(name)))

    @handler
    async def add_observer(request: Request):
        name = request.path_params["name"]
        spec = await json_body(request, f"POST /queries/{name}/observers")
        url = spec.get("url") if isinstance(spec, dict) else None
        obs = await call(service.add_observer, name, url)
        return JSONResponse(obs.describe(), status_code=201)

    @handler
    async def delete_observer(request: Request):
        await call(service.delete_observer, request.path_params["name"], request.path_params["ident"])
        return Response(status_code=204)

    @handler
    async def results(request: Request):
        from sse_starlette.sse import EventSourceResponse

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

        async def events():
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

        # the subscriber is released when the response ends, also when its stream never started (a HEAD request,
        # a client gone before the first event): its count comes back
        return EventSourceResponse(events(), ping=15, send_timeout=30,
                                   background=BackgroundTask(entry.results.unsubscribe, sub))

    # ------------------------------------------------------------------------------------------------ SPARQL

    @handler
    async def sparql(request: Request):
        from rspark.service.protocol import sparql_request

        return await sparql_request(request, service)

    # ------------------------------------------------------------------------------------------------ the rest

    async def metrics(request: Request):
        return PlainTextResponse(await run_in_threadpool(metrics_text, service),
                                 media_type="text/plain; version=0.0.4")

    async def healthz(request: Request):
        failure = service.live.failure
        return JSONResponse({"ok": failure is None, "failure": None if failure is None else str(failure)},
                            status_code=200 if failure is None else 503)

    static = resources.files("rspark.service").joinpath("static")

    async def index(request: Request):
        return Response(static.joinpath("index.html").read_bytes(), media_type="text/html; charset=utf-8")

    routes = [
        Route("/", index),
        Route("/healthz", healthz),
        Route("/metrics", metrics),
        Route("/streams", list_streams),
        Route("/streams/{name}", get_stream, methods=["GET"]),
        Route("/streams/{name}", put_stream, methods=["PUT"]),
        Route("/streams/{name}", push, methods=["POST"]),
        Route("/streams/{name}", delete_stream, methods=["DELETE"]),
        Route("/streams/{name}/elements", stream_elements),
        Route("/graphs", list_graphs),
        Route("/graphs/{name}", get_graph, methods=["GET"]),
        Route("/graphs/{name}", put_graph, methods=["PUT"]),
        Route("/graphs/{name}", delete_graph, methods=["DELETE"]),
        Route("/queries", list_queries),
        Route("/queries/{name}", get_query, methods=["GET"]),
        Route("/queries/{name}", put_query, methods=["PUT"]),
        Route("/queries/{name}", delete_query, methods=["DELETE"]),
        Route("/queries/{name}/results", results),
        Route("/queries/{name}/observers", add_observer, methods=["POST"]),
        Route("/queries/{name}/observers/{ident}", delete_observer, methods=["DELETE"]),
        Route("/queries/{name}/{action}", pause, methods=["POST"]),
        Route("/sparql", sparql, methods=["GET", "POST"]),
        Mount("/static", app=StaticFiles(directory=str(static), check_dir=False), name="static"),
    ]
    async def too_large(request: Request, exc: BodyTooLarge):
        service.refused += 1
        return _too_large(service.limits.max_body)

    app = Starlette(routes=routes, exception_handlers={BodyTooLarge: too_large}, lifespan=lifespan)
    if cors:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=cors, allow_methods=["GET", "POST", "PUT", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "Last-Event-ID"])
    return Guard(app, token=token, max_body=service.limits.max_body, service=service)
