"""Helpers of the service tests: a free loopback port, ``rspark serve`` as a subprocess, the service's app served
by uvicorn on a thread of the test process, a Server-Sent Events reader on a thread."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx2 as httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m rspark serve`` on a free port; ``stop()`` ends it (SIGTERM, SIGKILL after 30 s)."""

    def __init__(self, *args: str, checkpoint: str, port: int | None = None, log_path: str | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path or os.path.join(checkpoint + "-serve.log")
        self._log = open(self.log_path, "ab")
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "rspark", "serve", "--port", str(self.port),
                                      "--checkpoint", checkpoint, "--conf", "spark.sql.shuffle.partitions=2",
                                      *args], stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"rspark serve exited with {self.proc.returncode}: {self.log()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        raise AssertionError(f"rspark serve did not answer within {timeout} s: {self.log()}")

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-4000:]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


class AppServer:
    """The app of ``rspark serve`` (``create_app`` over a ``Service``) served by uvicorn on a free loopback port, on a
    thread of the test process: real HTTP for clients, the service's engine in the test's own SparkSession.
    ``stop()`` ends the service's Server-Sent Events streams, then the server."""

    def __init__(self, app, service) -> None:
        import uvicorn

        self.service = service
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off",
                                timeout_graceful_shutdown=5)
        self.server = uvicorn.Server(config)  # on a thread: uvicorn installs no signal handler
        self._thread = threading.Thread(target=self.server.run, daemon=True)
        self._thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if not self._thread.is_alive() or time.time() > deadline:
                raise AssertionError(f"uvicorn did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        self.service.close()  # the SSE streams end: their connections close
        self.server.should_exit = True
        self._thread.join(30)


class SSEReader:
    """Reads a Server-Sent Events stream on a thread into ``events`` (dicts with id, event, data)."""

    def __init__(self, url: str, headers: dict | None = None) -> None:
        self.url, self.headers = url, headers or {}
        self.events: list[dict] = []
        self.connected = threading.Event()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self.connected.wait(30):
            raise AssertionError(f"no SSE connection to {url}: {self.error}")

    def _run(self) -> None:
        try:
            with httpx.stream("GET", self.url, headers=self.headers, timeout=httpx.Timeout(5, read=None)) as resp:
                assert resp.status_code == 200, resp.status_code
                self.connected.set()
                event: dict = {}
                for line in resp.iter_lines():
                    if self._stop.is_set():
                        return
                    if line == "":
                        if "data" in event:
                            self.events.append(event)
                        event = {}
                    elif line.startswith(":"):
                        continue
                    else:
                        key, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        event[key] = event[key] + "\n" + value if key in event else value
        except BaseException as exc:  # noqa: BLE001 - kept for the test to report
            self.error = exc
            self.connected.set()

    def wait_for(self, n: int, timeout: float = 240.0) -> list[dict]:
        deadline = time.time() + timeout
        while len(self.events) < n and time.time() < deadline:
            if self.error is not None:
                raise AssertionError(f"SSE reader failed: {self.error!r}")
            time.sleep(0.1)
        return list(self.events)

    def wait_for_id(self, event_id: str, timeout: float = 240.0) -> list[dict]:
        """The events read up to the one with id ``event_id`` (all read so far when it did not come in time)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.error is not None:
                raise AssertionError(f"SSE reader failed: {self.error!r}")
            events = list(self.events)
            ids = [e.get("id") for e in events]
            if event_id in ids:
                return events[:ids.index(event_id) + 1]
            time.sleep(0.1)
        return list(self.events)

    def close(self) -> None:
        self._stop.set()
