"""``rspark serve``: one :class:`~rspark.engine.engine.Engine` behind the HTTP app, on uvicorn.

Bound to 127.0.0.1 by default. With ``token_file`` every request that changes state needs the token; binding to
an address other than a loopback one is refused without a token (anyone who reaches the port could otherwise
register queries and push data)."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import signal
import socket
import sys

from rspark.errors import InputError
from rspark.service.state import Service

log = logging.getLogger("rspark.service")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as exc:
        raise InputError(f"--token-file {path}: {exc.strerror or exc}") from None
    if len(token) < 16:
        raise InputError(f"--token-file {path}: the token has {len(token)} characters; use at least 16 (e.g. "
                         "python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > token)")
    return token


def check_binding(host: str, token: str | None) -> None:
    if token is None and not is_loopback(host):
        raise InputError(f"--host {host} is not a loopback address: rspark serve listens there only with a "
                         "--token-file (every request that changes state must then carry the token)")


def check_port(host: str, port: int) -> None:
    """Refuses a port another process listens on, before Spark starts (uvicorn would find it only after)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise InputError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc})") from None


def serve(*, host: str, port: int, token: str | None, checkpoint: str | None, master: str | None = None,
          conf: dict | None = None, profile: str | None = None, limits=None, cors: list[str] | None = None,
          data: list[str] = (), graphs: list[tuple[str, str]] = (), kafka: bool = False) -> None:
    # delayed: uvicorn and starlette (~0.15 s) and PySpark, once cli has checked the options (check_*)
    import uvicorn

    from rspark.engine.engine import Engine
    from rspark.service.app import create_app
    from rspark.spark.kafka import KAFKA_CONF

    check_binding(host, token)
    if kafka:  # Spark's Kafka connector on the session (rspark.spark.kafka): streams may have kafka:// sources
        conf = {**(conf or {})}
        conf.setdefault(KAFKA_CONF, "true")
    engine = Engine(master, profile=profile, conf=conf, checkpoint=checkpoint)
    for path in data:
        engine.load(path)
    for iri, path in graphs:
        engine.load(path, graph=iri)
    shown = f"[{host}]" if ":" in host else host
    service = Service(engine, limits=limits, base_url=f"http://{shown}:{port}", kafka=kafka)
    service.restore()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        print(f"rspark serve: listening on http://{shown}:{port}/ (dashboard at /, API in docs/service.md); "
              f"checkpoint {service.live.checkpoint}" + ("; state-changing requests need the token" if token else ""),
              file=sys.stderr, flush=True)
        yield
        service.close()
        engine.close()

    app = create_app(service, token=token, cors=cors, lifespan=lifespan)
    config = uvicorn.Config(app, host=host, port=port, log_level=os.environ.get("RSPARK_SERVE_LOG", "warning"),
                            lifespan="on", timeout_graceful_shutdown=5)
    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            service.close()  # Server-Sent Events streams end now: uvicorn then closes their connections at once
            super().handle_exit(sig, frame)

    # uvicorn raises a SIGTERM it caught again once it has shut down: by then the engine is closed, and the
    # command ends with its exit status 0 instead of being killed by the signal
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        Server(config).run()
    finally:
        signal.signal(signal.SIGTERM, previous)
