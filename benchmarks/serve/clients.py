"""serve_load.py's SSE clients: ``n`` clients on each query's ``GET /queries/{name}/results``, on one asyncio event
loop in a thread of its own, reconnecting with ``Last-Event-ID`` as a browser's EventSource does."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
import time
from collections import Counter

from serve import httpx

SSE_SEP = re.compile(rb"\r\n\r\n|\n\n|\r\r")  # the end of an event (sse-starlette writes \r\n)
SSE_LINE = re.compile(rb"\r\n|\r|\n")


class Clients:
    """``n`` SSE clients on each query, as asyncio tasks on one event loop (its own thread). Each keeps per event
    (id, wall time read, hash of its data); the first client of each query also keeps the data (for the replay's
    comparison). A stream that ends or fails is opened again with ``Last-Event-ID``."""

    def __init__(self, base: str, queries: list[str], n: int) -> None:
        self.base, self.queries, self.n = base, queries, n
        self.events: dict = {(q, i): [] for q in queries for i in range(n)}  # -> [(id, wall time, digest)]
        self.data: dict = {q: {} for q in queries}  # query -> {id: data text} (client 0)
        self.connects: Counter = Counter()  # (query, i) -> successful connections
        self.gaps: Counter = Counter()
        self.errors: list = []  # (wall time, query, client, message)
        self.ended: Counter = Counter()  # streams the server ended while the client was running
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="serve-load-sse", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(30)

    def connected(self) -> int:
        return sum(1 for v in self.connects.values() if v > 0)

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:  # the loop has just closed
                pass
        if self._thread.is_alive():
            self._thread.join(60)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        hx = httpx()
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        limits = hx.Limits(max_connections=None, max_keepalive_connections=None)
        async with hx.AsyncClient(limits=limits, timeout=hx.Timeout(30, read=None)) as client:
            tasks = [asyncio.create_task(self._client(client, q, i)) for q in self.queries for i in range(self.n)]
            self._ready.set()
            await self._stop.wait()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _client(self, client, query: str, i: int) -> None:
        hx = httpx()
        key = (query, i)
        events = self.events[key]
        keep = self.data[query] if i == 0 else None
        url = f"{self.base}/queries/{query}/results"
        last = None
        while not self._stop.is_set():
            headers = {"Last-Event-ID": last} if last is not None else {}
            try:
                async with client.stream("GET", url, headers=headers) as resp:
                    if resp.status_code != 200:
                        self.errors.append((time.time(), query, i, f"HTTP {resp.status_code}"))
                        await asyncio.sleep(1)
                        continue
                    self.connects[key] += 1
                    buf, scan = b"", 0
                    async for chunk in resp.aiter_raw():
                        now = time.time()
                        buf += chunk
                        while True:
                            m = SSE_SEP.search(buf, scan)
                            if m is None:
                                scan = max(0, len(buf) - 3)
                                break
                            block, buf, scan = buf[:m.start()], buf[m.end():], 0
                            fields: dict = {}
                            for line in SSE_LINE.split(block):
                                if not line or line.startswith(b":"):
                                    continue
                                name, _, value = line.partition(b":")
                                value = value[1:] if value.startswith(b" ") else value
                                fields[name] = fields[name] + b"\n" + value if name in fields else value
                            if b"data" not in fields:
                                continue  # a comment (": ping")
                            kind = fields.get(b"event", b"message")
                            if kind == b"gap":
                                self.gaps[key] += 1
                                continue
                            ident = fields.get(b"id", b"").decode()
                            events.append((ident, now, hashlib.blake2b(fields[b"data"], digest_size=8).digest()))
                            if keep is not None:
                                keep[ident] = fields[b"data"].decode("utf-8")
                            last = ident
                if not self._stop.is_set():
                    self.ended[key] += 1
            except asyncio.CancelledError:
                raise
            except hx.HTTPError as exc:
                if self._stop.is_set():
                    return
                self.errors.append((time.time(), query, i, f"{type(exc).__name__}: {exc}"[:200]))
                await asyncio.sleep(0.5)
