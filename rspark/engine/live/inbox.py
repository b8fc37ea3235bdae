"""A stream's inbox read as a replayable log: the files ``engine.push``, a TCP socket, a paced replay and
``rspark serve`` write into ``CHECKPOINT/streams/<key>/inbox/`` become micro-batches as soon as they are written.

The inbox is rspark's own directory, written only through :func:`~rspark.engine.live.registry.write_inbox` (a hidden
name renamed in: a file is never seen half written). So it needs none of the bookkeeping a file source keeps for a
directory it does not own (a listing per trigger, an offset log and a commit log per batch: about 0.15 s a
micro-batch, measured in ``benchmarks/live_latency.py``): a writer wakes the reader, which takes every file there is
as one micro-batch, numbered after the last one the state names.

Replay after a crash: a file stays in the inbox until the micro-batch that read it is committed (the state file
names the batch and its files, then they are deleted). On a restart the files still there are read again, except
those the state names as the last batch applied (the process stopped between saving the state and deleting them).
The reader also looks at the inbox every trigger interval, for files written by another process.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from rspark.engine.live.registry import Closing

log = logging.getLogger("rspark.live")

SUFFIXES = (".trig", ".nq", ".nquads", ".trig.gz", ".nq.gz", ".nquads.gz")
SOURCE = "inbox"  # the source key of a stream's inbox in the state (its micro-batch ids)


def pending(inbox: str, applied: set) -> list[str]:
    """The inbox's element files not yet applied, in the order they were written (their names sort so)."""
    try:
        names = os.listdir(inbox)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith((".", "_")) and n.endswith(SUFFIXES) and n not in applied)


def written_at(names, since: float) -> float | None:
    """When the earliest of the inbox files ``names`` was written (seconds since the epoch, read from its name,
    which :func:`~rspark.engine.live.registry.write_inbox` starts with the time of writing in nanoseconds), and not
    before ``since`` (a file left from before a restart waited for the process, not for a micro-batch); None when no
    name says. A micro-batch's records are late by the time from there: a file that waited while the micro-batch
    before was applied counts its wait."""
    times = [int(stamp) for stamp in (name.split("-", 1)[0] for name in names) if len(stamp) == 20 and stamp.isdigit()]
    if not times:
        return None
    return max(min(times) / 1e9, since)


def remove(inbox: str, names) -> None:
    """Deletes applied files (those already gone are fine)."""
    for name in names:
        try:
            os.remove(os.path.join(inbox, name))
        except FileNotFoundError:
            pass


class InboxReader:
    """The thread that turns a stream's inbox files into micro-batches (``runner.on_batch``)."""

    def __init__(self, runner, st) -> None:
        self.runner, self.stream = runner, st
        self.wake = threading.Event()
        self.stopped = threading.Event()
        self.busy = False  # a micro-batch is being applied
        self.started = time.time()  # (set again by start)
        self.thread = threading.Thread(target=self._run, name=f"rspark-inbox-{os.path.basename(st.inbox)}",
                                       daemon=True)

    def start(self) -> InboxReader:
        remove(self.stream.inbox, self.stream.inbox_applied)  # committed before a restart, not yet deleted
        self.started = time.time()
        self.thread.start()
        return self

    def notify(self) -> None:
        self.wake.set()

    def idle(self) -> bool:
        """Nothing being applied and no file waiting."""
        return not self.busy and not self.wake.is_set() and not pending(self.stream.inbox, set())

    def stop(self, wait: bool = True) -> None:
        self.stopped.set()
        self.wake.set()
        if wait and self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join()

    def _run(self) -> None:
        st = self.stream
        while not self.stopped.is_set():
            self.wake.wait(self.runner.trigger)
            if self.stopped.is_set():
                break
            self.busy = True
            try:
                self.wake.clear()
                names = pending(st.inbox, set(st.inbox_applied))
                if not names:
                    continue
                batch_id = st.batches.get(SOURCE, -1) + 1
                self.runner.on_batch(st.iri, SOURCE, batch_id, [os.path.join(st.inbox, n) for n in names],
                                     inbox=names, arrived=written_at(names, self.started))
                with st.inbox_lock:  # (a source that notes what it wrote does so before its file can go)
                    remove(st.inbox, names)
            except Closing:
                break
            except Exception as exc:  # noqa: BLE001 - kept in runner.failure (status(), wait_idle); the reader stops
                if self.runner.failure is None:
                    log.error("the inbox of <%s> failed: %s", st.iri, exc)
                    self.runner.failure = exc
                break
            finally:
                self.busy = False
