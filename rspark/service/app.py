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

import hmac
import logging
from importlib import resources

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rspark.service.metrics import metrics_text
from rspark.service.routes import graphs, queries, streams
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


async def metrics(request: Request):
    service = request.app.state.service
    return PlainTextResponse(await run_in_threadpool(metrics_text, service), media_type="text/plain; version=0.0.4")


async def healthz(request: Request):
    failure = request.app.state.service.live.failure_text()
    return JSONResponse({"ok": failure is None, "failure": failure}, status_code=200 if failure is None else 503)


STATIC = resources.files("rspark.service").joinpath("static")


async def index(request: Request):
    return Response(STATIC.joinpath("index.html").read_bytes(), media_type="text/html; charset=utf-8")


ROUTES = [
    Route("/", index),
    Route("/healthz", healthz),
    Route("/metrics", metrics),
    Route("/streams", streams.list_streams),
    Route("/streams/{name}", streams.get_stream, methods=["GET"]),
    Route("/streams/{name}", streams.put_stream, methods=["PUT"]),
    Route("/streams/{name}", streams.push, methods=["POST"]),
    Route("/streams/{name}", streams.delete_stream, methods=["DELETE"]),
    Route("/streams/{name}/elements", streams.stream_elements),
    Route("/graphs", graphs.list_graphs),
    Route("/graphs/{name}", graphs.get_graph, methods=["GET"]),
    Route("/graphs/{name}", graphs.put_graph, methods=["PUT"]),
    Route("/graphs/{name}", graphs.delete_graph, methods=["DELETE"]),
    Route("/queries", queries.list_queries),
    Route("/queries/{name}", queries.get_query, methods=["GET"]),
    Route("/queries/{name}", queries.put_query, methods=["PUT"]),
    Route("/queries/{name}", queries.delete_query, methods=["DELETE"]),
    Route("/queries/{name}/results", queries.results),
    Route("/queries/{name}/observers", queries.add_observer, methods=["POST"]),
    Route("/queries/{name}/observers/{ident}", queries.delete_observer, methods=["DELETE"]),
    Route("/queries/{name}/{action}", queries.pause, methods=["POST"]),
    Route("/sparql", graphs.sparql, methods=["GET", "POST"]),
    Mount("/static", app=StaticFiles(directory=str(STATIC), check_dir=False), name="static"),
]


async def refused(request: Request, exc: ServiceError) -> JSONResponse:
    """A request the service refuses: its status and ``{"error": message, ...}``."""
    request.app.state.service.refused += 1
    return JSONResponse({"error": str(exc), **exc.fields}, status_code=exc.status)


async def too_large(request: Request, exc: BodyTooLarge) -> JSONResponse:
    service = request.app.state.service
    service.refused += 1
    return _too_large(service.limits.max_body)


def create_app(service: Service, *, token: str | None = None, cors: list[str] | None = None, lifespan=None):
    """The ASGI app of ``rspark serve`` around ``service``."""
    app = Starlette(routes=ROUTES, exception_handlers={BodyTooLarge: too_large, ServiceError: refused},
                    lifespan=lifespan)
    app.state.service = service
    if cors:
        app.add_middleware(CORSMiddleware, allow_origins=cors, allow_methods=["GET", "POST", "PUT", "DELETE"],
                           allow_headers=["Authorization", "Content-Type", "Last-Event-ID"])
    return Guard(app, token=token, max_body=service.limits.max_body, service=service)
