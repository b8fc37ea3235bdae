"""The HTTP handlers of ``rspark serve``, one module per resource (``streams``, ``graphs``, ``queries``), each a
module-level ``async`` function of the request that finds the :class:`~rspark.service.state.Service` in the app's
state (``request.app.state.service``). A :class:`~rspark.service.state.ServiceError` they raise becomes its JSON
answer in :mod:`rspark.service.app`'s exception handler."""

from __future__ import annotations

import json

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from rspark.errors import RsparkError
from rspark.service.state import Service, ServiceError


def service_of(request: Request) -> Service:
    """The service the app serves."""
    return request.app.state.service


async def call(fn, *args, **kwargs):
    """Runs a slow part of the service (a Spark job, a file) in a worker thread; an rspark error it raises that
    is not already an HTTP answer is a 400."""
    try:
        return await run_in_threadpool(fn, *args, **kwargs)
    except ServiceError:
        raise
    except RsparkError as exc:
        raise ServiceError(400, str(exc)) from None


async def json_body(request: Request, what: str):
    """The request's body as JSON (``{}`` when empty); a 400 naming ``what`` when it is not JSON."""
    body = await request.body()
    if not body:
        return {}
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ServiceError(400, f"{what}: the body is not JSON ({exc})") from None
