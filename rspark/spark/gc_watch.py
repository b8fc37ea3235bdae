"""The garbage-collection watchdog of the Spark JVM rspark starts: a job that keeps that JVM collecting garbage
most of the time is cancelled, and the failure it ends with is reported as the memory limit.

Why: in local mode the driver's JVM runs the tasks. A task whose data nearly fits the heap can keep the JVM in
back-to-back full collections for many minutes without an OutOfMemoryError ever being thrown: HotSpot's overhead
limit (:data:`rspark.spark.session.GC_OPTIONS`) fires only when a collection frees under a set share of the heap,
and a heap that is freed just above it is collected again and again. The run then neither ends nor progresses, and
takes the machine's cores with it.

The watchdog is a daemon thread of the driver's Python: every :data:`PERIOD` seconds it reads the collectors'
accumulated collection time (``java.lang.management``, the elapsed time of the collections) and, when over the last
:data:`WINDOW` seconds at least :data:`LIMIT` of the time went to collecting while a job ran, it cancels the
running jobs (``SparkContext.cancelAllJobs``) and records why. :func:`rspark.spark.failures.memory_limit_error`
then reports the cancelled job's failure as a :class:`~rspark.errors.MemoryLimitError` with that reason. The
cancelled tasks' memory is freed: the session goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger("rspark.spark")

WINDOW = 30.0  # seconds of wall time judged together
LIMIT = 0.9  # the share of WINDOW spent collecting that stops the jobs
PERIOD = 1.0  # seconds between two readings

_lock = threading.Lock()
_overrun: tuple[float, str] | None = None  # (monotonic time, reason) of the watchdog's last cancellation


def overrun(samples, window: float = WINDOW, limit: float = LIMIT) -> float | None:
    """The share of the last ``window`` seconds spent collecting, when at least ``limit``, else None.

    ``samples``: (wall seconds, accumulated collection seconds) readings, oldest first. Judged only when the
    readings span ``window`` (less than that says nothing of a lasting state)."""
    if len(samples) < 2:
        return None
    end_wall, end_gc = samples[-1]
    start = None
    for wall, gc in reversed(samples):
        if end_wall - wall >= window:
            start = (wall, gc)
            break
    if start is None:
        return None
    span = end_wall - start[0]
    share = (end_gc - start[1]) / span
    return share if share >= limit else None


def take_overrun(within: float = 120.0) -> str | None:
    """The reason of the watchdog's cancellation in the last ``within`` seconds, forgotten once taken; else None."""
    global _overrun
    with _lock:
        found, _overrun = _overrun, None
    if found is None or time.monotonic() - found[0] > within:
        return None
    return found[1]


def _record(reason: str) -> None:
    global _overrun
    with _lock:
        _overrun = (time.monotonic(), reason)


def collection_seconds(sc) -> float:
    """The accumulated collection time of the JVM behind ``sc``, in seconds (every collector's)."""
    beans = sc._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(max(bean.getCollectionTime(), 0) for bean in beans) / 1000.0


class GcWatch:
    """The watchdog of one SparkContext (module docstring). ``read`` gives the accumulated collection seconds
    (default: :func:`collection_seconds`), ``busy`` whether a job runs (default: Spark's status tracker)."""

    def __init__(self, sc, *, read: Callable[[], float] | None = None, busy: Callable[[], bool] | None = None,
                 window: float = WINDOW, limit: float = LIMIT, period: float = PERIOD,
                 clock: Callable[[], float] = time.monotonic):
        self.sc = sc
        self.clock = clock
        self.read = read or (lambda: collection_seconds(sc))
        self.busy = busy or (lambda: bool(sc.statusTracker().getActiveJobsIds()))
        self.window, self.limit, self.period = window, limit, period
        self.samples: deque[tuple[float, float]] = deque()
        self.cancelled = 0  # how many times the jobs were cancelled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rspark-gc-watch", daemon=True)

    def start(self) -> GcWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            if getattr(self.sc, "_jsc", None) is None:  # the SparkContext stopped
                return
            try:
                self.check()
            except Exception:  # the JVM is going or gone: nothing left to watch
                log.debug("the garbage-collection watchdog stops", exc_info=True)
                return

    def check(self) -> float | None:
        """One reading; the share of time spent collecting when the jobs were cancelled for it, else None."""
        now = self.clock()
        self.samples.append((now, self.read()))
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()  # the oldest reading still spanning the window is kept
        share = overrun(self.samples, self.window, self.limit)
        if share is None or not self.busy():
            return None
        reason = (f"the Spark JVM spent {share:.0%} of the last {self.window:.0f} s collecting garbage, so the "
                  "running jobs were cancelled")
        _record(reason)
        self.cancelled += 1
        self.samples.clear()
        log.info("%s: the data held by a task nearly fills the heap", reason)
        self.sc.cancelAllJobs()
        return share


_watches: dict[int, GcWatch] = {}


def watch(sc) -> GcWatch:
    """Start (once) the watchdog of ``sc``'s JVM."""
    key = id(sc)
    found = _watches.get(key)
    if found is None or found._stop.is_set() or not found._thread.is_alive():
        found = _watches[key] = GcWatch(sc).start()
    return found
