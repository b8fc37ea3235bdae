"""The server of a serve_load case: ``python -m rspark serve`` in a subprocess of its own (:class:`Server`), and
the RSS of its process tree from /proc (:func:`tree_memory`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import _results
from harness import comm, descendants, proc_rss_mb

from serve import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python -m rspark serve`` on a free port, its output in ``log_path``; ``stop()`` sends SIGTERM (SIGKILL
    after 60 s) and returns the exit status."""

    def __init__(self, checkpoint: Path, log_path: Path, conf: list[str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path, "ab")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        env["PYTHONPATH"] = os.pathsep.join([str(_results.REPO), *filter(None, [env.get("PYTHONPATH")])])
        cmd = [sys.executable, "-m", "rspark", "serve", "--port", str(self.port), "--checkpoint", str(checkpoint)]
        for item in conf:
            cmd += ["--conf", item]
        self.command = cmd
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=_results.REPO)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rspark serve exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                if httpx().get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx().HTTPError:  # not answering yet: asked again
                pass
            time.sleep(0.3)
        raise RuntimeError(f"rspark serve did not answer within {timeout:g} s: {self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def tree_memory(pid: int) -> dict:
    """RSS MB of the server's process, of its Spark JVM and of the whole tree (None when gone)."""
    server = proc_rss_mb(pid)
    jvm = total = None
    if server is not None:
        total = server
        for child in descendants(pid):
            rss = proc_rss_mb(child)
            if rss is None:
                continue
            total += rss
            if jvm is None and comm(child) == "java":
                jvm = rss
    return {"server": server, "jvm": jvm, "tree": total}
