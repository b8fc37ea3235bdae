"""The garbage-collection watchdog of the Spark JVM rspark starts: a job that keeps that JVM collecting garbage
most of the time is cancelled, and the failure it ends with is reported as the memory limit.

Why: in local mode the driver's JVM runs the tasks. A task whose data nearly fits the heap can keep the JVM in
back-to-back full collections for many minutes without an OutOfMemoryError ever being thrown: HotSpot's overhead
limit (:data:`rspark.spark.session.GC_OPTIONS`) fires only when a collection frees under a set share of the heap,
and a heap that is freed just above it is collected again and again. The run then neither ends nor progresses, and
takes the machine's cores with it.

The watchdog is a daemon thread of the driver's Python: every :data:`PERIOD` seconds it reads how long the JVM has
been collecting: the CPU time of its garbage collector's threads (``GC Thread#N``, from /proc, without asking the
JVM, which may be too busy collecting to answer py4j) for the JVM this process launched, else the collectors'
accumulated time through py4j (``java.lang.management``). When over the last :data:`WINDOW` seconds at least
:data:`LIMIT` of the time went to collecting, it cancels the running jobs (``SparkContext.cancelAllJobs``, from a
thread of its own) and records why; :func:`rspark.spark.failures.memory_limit_error` then reports the cancelled
job's failure as a :class:`~rspark.errors.MemoryLimitError` with that reason, and the session goes on with the
cancelled tasks' memory freed. When the JVM still collects that much a window later (the cancellation did not
reach it, or did not free enough), the watchdog stops the JVM it launched (SIGKILL), and the error says so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
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
    """The accumulated collection time of the JVM behind ``sc``, in seconds (every collector's), asked through
    py4j: a JVM that collects without pause may be slow to answer."""
    beans = sc._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(max(bean.getCollectionTime(), 0) for bean in beans) / 1000.0


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc's clock ticks a second


def gc_thread_seconds(pid: int) -> float | None:
    """The CPU seconds the garbage collector's threads of JVM process ``pid`` used, per thread (their mean), read
    from /proc without asking the JVM: a JVM that collects all the time uses its GC threads all the time. None
    when /proc does not show them."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total, threads = 0, 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if not f.read().startswith("GC Thread#"):
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
        threads += 1
    return total / _TICKS / threads if threads else None


class GcWatch:
    """The watchdog of one SparkContext (module docstring). ``read`` gives the accumulated collection seconds
    (default: :func:`collection_seconds`), ``busy`` whether a job runs (default: Spark's status tracker)."""

    def __init__(self, sc, *, read: Callable[[], float] | None = None, busy: Callable[[], bool] | None = None,
                 window: float = WINDOW, limit: float = LIMIT, period: float = PERIOD,
                 clock: Callable[[], float] = time.monotonic, pid: int | None = None,
                 cancel: Callable[[], None] | None = None, kill: Callable[[], None] | None = None):
        self.sc = sc
        self.clock = clock
        self.pid = pid
        from_proc = read is None and pid is not None and gc_thread_seconds(pid) is not None
        if from_proc:
            read = lambda: gc_thread_seconds(pid) or 0.0  # noqa: E731 - the JVM's own threads, without py4j
        self.read = read or (lambda: collection_seconds(sc))
        # with the GC threads read from /proc, a JVM too busy to answer py4j still counts as busy
        self.busy = busy or ((lambda: True) if from_proc else (lambda: bool(sc.statusTracker().getActiveJobsIds())))
        self.cancel = cancel or self._cancel_jobs
        self.kill = kill or self._kill_jvm
        self.fired_at: float | None = None  # when the jobs were last cancelled
        self.window, self.limit, self.period = window, limit, period
        self.samples: deque[tuple[float, float]] = deque()
        self.cancelled = 0  # how many times the watchdog acted (cancelled the jobs or stopped the JVM)
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
        again = self.fired_at is not None and now - self.fired_at <= 2 * self.window
        self.fired_at = now
        self.cancelled += 1
        self.samples.clear()
        outcome = ("after its jobs were cancelled, so it was stopped" if again  # cancelling did not end it
                   else "so the running jobs were cancelled")
        reason = (f"the Spark JVM spent {share:.0%} of the last {self.window:.0f} s collecting garbage"
                  f"{' ' if again else ', '}{outcome}")
        _record(reason)
        log.info("%s", reason)
        (self.kill if again else self.cancel)()
        return share

    def _cancel_jobs(self) -> None:
        """``cancelAllJobs`` from a thread of its own: a JVM that collects all the time may take long to answer."""
        threading.Thread(target=self.sc.cancelAllJobs, name="rspark-gc-cancel", daemon=True).start()

    def _kill_jvm(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(OSError):  # it ended already
                os.kill(self.pid, signal.SIGKILL)


_watches: dict[int, GcWatch] = {}


def watch(sc) -> GcWatch:
    """Start (once) the watchdog of ``sc``'s JVM."""
    key = id(sc)
    found = _watches.get(key)
    if found is None or found._stop.is_set() or not found._thread.is_alive():
        proc = getattr(getattr(sc, "_gateway", None), "proc", None)  # the JVM this process launched
        found = _watches[key] = GcWatch(sc, pid=getattr(proc, "pid", None)).start()
    return found
