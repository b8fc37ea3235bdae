"""Background graphs read again from their source every period (the W3C RSP CG requirements' RESCAN hint, SNEEql's
``[RESCAN 20 SECONDS]``), in live mode.

A refreshed graph is read from a file or a SPARQL endpoint (``CONSTRUCT WHERE { ?s ?p ?o }``) when it is declared
(the version from the beginning) and every period after; a read whose content differs from the last one becomes a
new version of the graph (``rspark.rsp.versions``), valid from the instant after the live streams' watermark: the
instants live mode may already have evaluated keep the version they were evaluated with, every later one reads the
new version. Versions no query can read again (those that end at or before every query's last reported instant) are
dropped, so a graph refreshed for days keeps a version or two. A read that fails is logged and counted; the graph
keeps its version.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

from rspark.engine.live.files import remove_file
from rspark.errors import RsparkError
from rspark.model.timestamps import format_time
from rspark.rsp.versions import instant_key, version_spans

log = logging.getLogger("rspark")

TIMEOUT_S = 30  # an endpoint's answer, at most
MAX_BYTES = 256 * 1024 * 1024  # a graph's size, at most
CONSTRUCT_ALL = "CONSTRUCT WHERE { ?s ?p ?o }"


def is_endpoint(source: str) -> bool:
    return source.startswith(("http://", "https://"))


def read_source(source: str) -> tuple[bytes, str]:
    """The source's content and the file extension it is kept under (a file's own; N-Triples from an endpoint)."""
    if is_endpoint(source):
        url = source + ("&" if "?" in source else "?") + urllib.parse.urlencode({"query": CONSTRUCT_ALL})
        request = urllib.request.Request(url, headers={"Accept": "application/n-triples"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:  # noqa: S310 - http(s) only
                body = answer.read(MAX_BYTES + 1)
        except OSError as exc:
            raise RsparkError(f"the SPARQL endpoint {source} did not answer: {exc}") from None
        if len(body) > MAX_BYTES:
            raise RsparkError(f"the SPARQL endpoint {source} answered more than {MAX_BYTES} bytes")
        return body, ".nt"
    try:
        with open(source, "rb") as f:
            body = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise RsparkError(f"{source}: cannot read it ({exc.strerror or exc})") from None
    suffixes = Path(source).suffixes
    return body, "".join(suffixes[-2:] if suffixes[-1:] == [".gz"] else suffixes[-1:])


class GraphRefresh:
    """One graph read again from ``source`` every ``every_s`` seconds. ``replace(iri, versions)`` loads the
    graph's versions ((path, the instant it is valid from or None)) in place of the graph's, between two
    evaluations; ``horizon()`` gives (the instant after the streams' watermark, the earliest instant a query may
    evaluate again) as time values, each None when there is none yet; ``between``: the lock live mode evaluates
    under (held from reading the horizon to the replacement)."""

    def __init__(self, iri: str, source: str, every_s: float, folder: str,
                 replace: Callable[[str, list], None], horizon: Callable[[], tuple], between) -> None:
        self.iri, self.source, self.every_s, self.folder = iri, source, every_s, folder
        self._replace, self._horizon, self._between = replace, horizon, between
        os.makedirs(folder, exist_ok=True)
        self.versions: list[tuple[str, object]] = []  # (path of the copy read, the instant it is valid from)
        self.reads = self.changes = self.errors = 0
        self.last_error: str | None = None
        self._digest: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def check(self) -> bool:
        """Reads the source once; a changed content becomes a new version. Returns whether it did."""
        with self._lock:
            body, ext = read_source(self.source)
            self.reads += 1
            digest = hashlib.sha256(body).hexdigest()
            if digest == self._digest:
                return False
            path = os.path.join(self.folder, f"version-{self.reads}-{digest[:12]}{ext}")
            with open(path + ".tmp", "wb") as out:
                out.write(body)
            os.replace(path + ".tmp", path)
            try:
                with self._between:  # no evaluation between reading the horizon and the versions' replacement
                    after, earliest = self._horizon()
                    if after is None or not self.versions:
                        versions = [(path, None)]
                    else:
                        versions = _still_read(self.versions, earliest) + [(path, after)]
                    self._replace(self.iri, versions)
            except BaseException:
                os.remove(path)
                raise
            for old, _ in self.versions:
                if all(old != p for p, _ in versions):
                    remove_file(old)
            self.versions, self._digest = versions, digest
            self.changes += 1
            log.info("graph <%s> read again from %s: a new version, valid from %s", self.iri, self.source,
                     "the beginning" if versions[-1][1] is None else versions[-1][1])
            return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"rspark-refresh-{self.iri}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.check()
            except Exception as exc:  # noqa: BLE001 - a failed read is reported and the next one tried
                self.errors += 1
                self.last_error = str(exc)
                log.warning("graph <%s> not read again from %s: %s (its version stays)", self.iri, self.source, exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=TIMEOUT_S + 5)

    def status(self) -> dict:
        return {"source": self.source, "every_s": self.every_s, "reads": self.reads, "changes": self.changes,
                "errors": self.errors, "last_error": self.last_error,
                "versions": [since for _, since in self.versions]}


def _still_read(versions: list, earliest) -> list:
    """The versions a query may still read: those valid at ``earliest`` (an instant, None: any) or later."""
    if earliest is None:
        return list(versions)
    key = instant_key(earliest)
    spans = version_spans([("g", instant_key(since)) for _, since in versions])
    return [v for v, (_, until) in zip(versions, spans) if until > key]


def stream_horizon(streams, queries) -> tuple:
    """(The instant after the greatest watermark of the live ``streams``, the earliest last reported instant of
    the ``queries``, None when one has reported nothing), as time values; None where there is none."""
    after = None
    for st in streams:
        wm = st.watermark()
        if wm is not None:
            value = format_time(wm + 1, st.timeline())
            if after is None or instant_key(value) > instant_key(after):
                after = value
    earliest = None
    for q in queries:
        if q.stopped:
            continue
        if q.last is None or q.timeline is None:
            return after, None
        value = format_time(q.last, q.timeline)
        if earliest is None or instant_key(value) < instant_key(earliest):
            earliest = value
    return after, earliest
