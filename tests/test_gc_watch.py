"""The garbage-collection watchdog (rspark.spark.gc_watch): a job that keeps the Spark JVM collecting garbage most
of the time is cancelled and reported as the memory limit, instead of running on for minutes without progress."""

from __future__ import annotations

import time

import pytest

from rspark.errors import MemoryLimitError
from rspark.spark import gc_watch
from rspark.spark.failures import memory_limit_error


def test_overrun_judges_the_last_window_only():
    # too short a span says nothing
    assert gc_watch.overrun([(0.0, 0.0), (10.0, 10.0)], window=30, limit=0.9) is None
    # 28.5 s of 30 collecting: 95 %
    assert gc_watch.overrun([(0.0, 0.0), (15.0, 14.0), (30.0, 28.5)], window=30, limit=0.9) == pytest.approx(0.95)
    # 80 %: below the limit
    assert gc_watch.overrun([(0.0, 0.0), (30.0, 24.0)], window=30, limit=0.9) is None
    # the latest reading at least a window old is the start: an early calm stretch does not dilute a late overrun
    samples = [(0.0, 0.0), (10.0, 0.0), (40.0, 30.0)]
    assert gc_watch.overrun(samples, window=30, limit=0.9) == pytest.approx(1.0)
    assert gc_watch.overrun([(0.0, 0.0)], window=30, limit=0.9) is None


class _FakeContext:
    def __init__(self):
        self.cancelled = 0
        self._jsc = object()

    def cancelAllJobs(self):
        self.cancelled += 1


def _watch(readings, busy=True, window=30.0):
    clock = iter(t for t, _ in readings)
    gc = iter(g for _, g in readings)
    sc = _FakeContext()
    sc.killed = 0

    def kill():
        sc.killed += 1

    watch = gc_watch.GcWatch(sc, read=lambda: next(gc), busy=lambda: busy, window=window, clock=lambda: next(clock),
                             cancel=sc.cancelAllJobs, kill=kill)
    return sc, watch


def test_the_jobs_are_cancelled_once_a_window_is_mostly_collecting_and_the_reason_is_taken_once():
    gc_watch.take_overrun()
    readings = [(float(t), 0.5 * t if t < 20 else 10 + 0.97 * (t - 20)) for t in range(0, 80)]
    sc, watch = _watch(readings)
    fired = [t for t, _ in readings if watch.check() is not None]
    # from t=20 on the JVM collects 97 % of the time: the window [t-30, t] collects 10 + 0.97 (t - 20) - 0.5 (t - 30)
    # = 5.6 + 0.47 t seconds, 90 % of it (27 s) from t = 45.5 on (first reading 46, 91 %); after a cancellation the
    # readings start again (t = 47), so the next one fires a window later (t = 77, the JVM still collecting): the
    # cancellation did not end it, and the JVM is stopped
    assert fired == [46, 77]
    assert (sc.cancelled, sc.killed, watch.cancelled) == (1, 1, 2)
    reason = gc_watch.take_overrun()  # the latest's
    assert reason == ("the Spark JVM spent 97% of the last 30 s collecting garbage after its jobs were cancelled, "
                      "so it was stopped")
    assert gc_watch.take_overrun() is None


def test_no_cancellation_without_a_running_job():
    gc_watch.take_overrun()
    sc, watch = _watch([(float(t), float(t)) for t in range(40)], busy=False)
    assert all(watch.check() is None for _ in range(40))
    assert sc.cancelled == 0 and gc_watch.take_overrun() is None


def test_a_cancelled_job_is_the_memory_limit_only_after_the_watchdog_cancelled():
    gc_watch.take_overrun()
    failure = RuntimeError("org.apache.spark.SparkException: Job 7 cancelled as part of cancellation of all jobs")
    assert memory_limit_error(failure, "the replay") is None  # cancelled by someone else (Ctrl-C): not memory
    gc_watch._record("the Spark JVM spent 96% of the last 30 s collecting garbage, so the running jobs were "
                     "cancelled")
    err = memory_limit_error(failure, "the replay")
    assert isinstance(err, MemoryLimitError)
    assert str(err).startswith(
        "the replay ran out of memory (the Spark JVM spent 96% of the last 30 s collecting garbage, so the running "
        "jobs were cancelled): the windows' content or the answers held at once did not fit. Use a smaller window "
        "RANGE")
    assert "a new process" not in str(err)  # the session goes on


def test_a_stopped_jvm_is_the_memory_limit_when_the_watchdog_stopped_it(monkeypatch):
    from rspark.spark import failures

    gc_watch.take_overrun()
    gc_watch._record("the Spark JVM spent 99% of the last 30 s collecting garbage after its jobs were cancelled, "
                     "so it was stopped")
    monkeypatch.setattr(failures, "jvm_exit_code", lambda wait=0.0: -9)
    err = memory_limit_error(RuntimeError("Py4JNetworkError: Answer from Java side is empty"), "the replay",
                             jvm=True)
    assert isinstance(err, MemoryLimitError)
    assert str(err).startswith("the replay ran out of memory (the Spark JVM spent 99% of the last 30 s collecting "
                               "garbage after its jobs were cancelled, so it was stopped): ")
    assert str(err).endswith("The Spark JVM has stopped: a new process (or Engine) is needed to go on.")


def test_the_gc_threads_are_read_from_proc(spark):
    """The JVM rspark launched shows its garbage collector's threads in /proc; a Python process has none."""
    import os

    from pyspark import SparkContext

    assert gc_watch.gc_thread_seconds(os.getpid()) is None
    seconds = gc_watch.gc_thread_seconds(SparkContext._gateway.proc.pid)
    assert seconds is not None and seconds >= 0


def test_the_watchdog_cancels_a_real_job_and_the_session_goes_on(spark):
    """A watchdog whose reading says the JVM does nothing but collect cancels a running Spark job; the job's failure
    is the memory limit, and the next job runs."""
    gc_watch.take_overrun()
    start = time.monotonic()
    sc = spark.sparkContext
    watch = gc_watch.GcWatch(sc, read=lambda: time.monotonic() - start, window=1.0, period=0.2).start()
    try:
        with pytest.raises(Exception) as failed:
            sc.parallelize(range(2), 2).map(lambda x: time.sleep(60) or x).count()
    finally:
        watch.stop()
    assert time.monotonic() - start < 30
    err = memory_limit_error(failed.value, "the replay", jvm=True)
    assert isinstance(err, MemoryLimitError), failed.value
    assert "collecting garbage" in str(err)  # (cancelled, or a window later stopped: the fake reading goes on)
    assert watch.cancelled >= 1
    assert spark.range(5).count() == 5
