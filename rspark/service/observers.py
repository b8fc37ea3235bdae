"""Callback observers (as C-SPARQL's RSP Services offer them): each record of a query POSTed as JSON to a URL.

Deliveries run on one thread per observer, in the order of the records, so a slow or unreachable observer never
holds up live mode or the other clients. A delivery that fails is retried twice (after 0.5 s, then 2 s), then
counted in ``failed`` with its error kept in ``last_error``; an observer more than ``limit`` records behind drops
the oldest ones (counted in ``dropped``)."""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request

from rspark.engine.live.sinks import Sink

log = logging.getLogger("rspark.service")

RETRY_DELAYS = (0.5, 2.0)


class ObserverSink(Sink):
    def __init__(self, ident: str, url: str, *, timeout: float = 5.0, limit: int = 10000) -> None:
        self.id, self.url, self.timeout, self.limit = ident, url, timeout, limit
        self.delivered = self.failed = self.dropped = 0
        self.last_error: str | None = None
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"rspark-observer-{ident}", daemon=True)
        self._thread.start()

    def write(self, rec) -> None:
        while self._queue.qsize() >= self.limit:
            try:
                self._queue.get_nowait()
                self.dropped += 1
            except queue.Empty:
                break
        self._queue.put(json.dumps(rec.to_json(), ensure_ascii=False).encode("utf-8"))

    def close(self) -> None:
        self._queue.put(None)

    def describe(self) -> dict:
        return {"id": self.id, "url": self.url, "delivered": self.delivered, "failed": self.failed,
                "dropped": self.dropped, "last_error": self.last_error}

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            for attempt in range(len(RETRY_DELAYS) + 1):
                try:
                    req = urllib.request.Request(self.url, data=body, method="POST",
                                                 headers={"Content-Type": "application/json"})
                    with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the user's URL
                        resp.read()
                    self.delivered += 1
                    break
                except (urllib.error.URLError, OSError, ValueError) as exc:
                    if attempt < len(RETRY_DELAYS):
                        time.sleep(RETRY_DELAYS[attempt])
                        continue
                    self.failed += 1
                    self.last_error = str(exc)
                    log.warning("observer %s (%s): delivery failed: %s", self.id, self.url, exc)
