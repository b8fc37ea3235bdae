"""cep_throughput.py's workers: each system runs in a subprocess of its own (the script with the hidden ``--worker
ROLE``, see :func:`harness.run_worker`) so that its peak memory (ru_maxrss) is its own.

* ``python`` (:func:`worker_python`): the matcher of :mod:`baselines.cep_matcher`, the stream parsed once (timed),
  then each policy (timed), the second stream the same way, then each policy again under tracemalloc (untimed);
* ``rspark`` (:func:`worker_rspark`): the JVM and Python workers started (timed apart), the stream loaded once
  (timed), then each policy's ``Engine.replay_iter`` (timed, its records consumed as they stream), the keyless
  consumption query (the peak RSS of Spark's Python workers), and the second stream in the same session;
* ``floor`` (:func:`worker_floor`): Spark's floor, the stream file's lines read and cut into terms by rspark's data
  source and counted, nothing else.
"""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path

import harness
from baselines.cep_matcher import digest_add, match, read_events
from workloads.stocks import EX, RANGE, STREAM, query

# rspark's session in this benchmark's processes (``--conf`` on top): rspark's own settings (shuffle partitions
# twice the cores, as `rspark replay` has them) but the driver's memory
SETTINGS = {"spark.driver.memory": "8g"}
WARM_STREAM = EX + "stocks-2"  # the second stream of a run, read in the same session

# the consumption state's memory: a pattern without a key (one group: the whole stream through one task of one Python
# worker) over a sliding window, where what an evaluation consumes is still in the next window
KEYLESS_SLIDE = 500


def keyless_query(stream: str = STREAM) -> str:
    return (f"PREFIX : <{EX}>\n"
            "SELECT ?c ?p ?d\n"
            f"FROM NAMED WINDOW :w ON <{stream}> [RANGE {RANGE} SLIDE {KEYLESS_SLIDE}]\n"
            "EVENT ON :w { ?c :price ?p } AS E1\n"
            "EVENT ON :w { ?d :price 100 } AS E2\n"
            "WHERE { MATCH CONSUME CHRONOLOGICAL { E1 SEQ[CHRONOLOGICAL] E2 } }\n")


# ------------------------------------------------------------------------------------------ Spark's Python workers


def _spark_python_workers() -> list[int]:
    """The Python processes Spark started for this process (its JVM's pyspark daemon and the workers it forked):
    the descendants of this process that run a ``pyspark.*`` module (not the JVM). Linux only (empty elsewhere)."""
    import os

    parents, commands = {}, {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            commands[int(entry)] = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    me, found = os.getpid(), []
    for pid in parents:
        up, seen = parents.get(pid), 0
        while up and up != me and seen < 64:
            up, seen = parents.get(up), seen + 1
        args = commands[pid].split(b"\0")
        if up == me and not args[0].endswith(b"java") and any(a.startswith(b"pyspark.") for a in args):
            found.append(pid)
    return found


def reset_worker_peaks() -> None:
    """Sets the peak RSS of Spark's Python workers back to their current RSS, so that the next reading is the peak
    of what runs in between."""
    for pid in _spark_python_workers():
        harness.reset_peak(pid)


def worker_peak_mb() -> float | None:
    """The largest peak RSS (VmHWM) among Spark's Python workers since :func:`reset_worker_peaks` (None: no worker
    found, or not Linux)."""
    peaks = [peak for pid in _spark_python_workers() if (peak := harness.proc_peak_mb(pid)) is not None]
    return max(peaks) if peaks else None


# -------------------------------------------------------------------------------------------- the matcher's worker


def _python_pass(path: str, policies: list[str], keep: bool = False):
    """One stream through the matcher: parsed (timed), then each policy (timed). Its figures, and with ``keep`` the
    parsed events too: ``(events, figures)``."""
    t = time.perf_counter()
    events = read_events(path)
    out: dict = {"parse_s": time.perf_counter() - t, "events": len(events), "times": {}, "counts": {},
                 "digests": {}}
    for policy in policies:
        counts, digest, check = {}, 0, 0.0
        t = time.perf_counter()
        for close, found in match(events, policy):
            if found:
                counts[close] = len(found)
                c = time.perf_counter()  # the fingerprint is the benchmark's, not the matcher's: not timed
                for m in found:
                    digest = digest_add(digest, m[:6])
                check += time.perf_counter() - c
        out["times"][policy] = time.perf_counter() - t - check
        out["counts"][policy] = counts
        out["digests"][policy] = digest
    return (events, out) if keep else out


def worker_python(path: str, policies: list[str], trace: bool, warm_path: str | None = None) -> dict:
    """The matcher: the stream parsed once (timed), then each policy (timed); the second stream (``warm_path``) the
    same way; then each policy again under tracemalloc (untimed) for its peak."""
    events, out = _python_pass(path, policies, keep=True)
    out["trace_mb"] = {}
    out["rss_mb"] = harness.peak_rss_mb()  # the first stream's peak (the second's events are not in it)
    if warm_path:  # the second stream, in the same process
        out["warm"] = _python_pass(warm_path, policies)
    if trace:
        import tracemalloc

        for policy in policies:
            tracemalloc.start()
            for _close, found in match(events, policy):
                del found
            out["trace_mb"][policy] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return out


# ------------------------------------------------------------------------------------------------ rspark's workers


def _number(term) -> int:
    return int(Decimal(term.lexical if hasattr(term, "lexical") else str(term)))


def rspark_match(row: dict) -> tuple:
    """A result row as the matcher's match: (company index, p1, p2, p3, start, end)."""
    return (int(str(row["company"])[len(EX) + 1:]), _number(row["p1"]), _number(row["p2"]), _number(row["p3"]),
            _number(row["t1"]), _number(row["t2"]))


def worker_rspark(path: str, policies: list[str], conf: list[str], warm_path: str | None = None,
                  keyless: bool = True) -> dict:
    """rspark: the JVM and Python workers started (timed apart), the stream loaded once (timed), then each policy's
    replay (timed, its records consumed as they stream); then the second stream (``warm_path``) the same way in
    the same session, whose JVM has compiled its hot code by then. A policy that fails is recorded with its error
    and the others still run."""
    import os

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark import Engine

    start = time.perf_counter()
    settings = harness.spark_settings(conf, **SETTINGS)
    with Engine(conf=settings) as engine:
        harness.start_spark(engine.spark)
        startup = time.perf_counter() - start
        out = _rspark_pass(engine, STREAM, path, policies)
        out["startup_s"] = startup
        out["jvm_used_mb"] = harness.jvm_heap_mb(engine.spark)
        out["rss_mb"] = harness.peak_rss_mb()
        if keyless:
            out["keyless"] = _keyless_pass(engine)
        if warm_path:
            out["warm"] = _rspark_pass(engine, WARM_STREAM, warm_path, policies)
    return out


def worker_floor(path: str, conf: list[str]) -> dict:
    """The floor of loading the stream file (:func:`harness.scan_floor`), in a fresh process started as rspark's
    worker is."""
    import os

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark import Engine

    with Engine(conf=harness.spark_settings(conf, **SETTINGS)) as engine:
        engine.spark.range(1).count()
        return harness.scan_floor(engine.spark, [path])


def _keyless_pass(engine) -> dict:
    """The keyless consumption query over the loaded stream: its replay time, evaluations, events and the peak RSS
    of Spark's Python workers meanwhile."""
    reset_worker_peaks()
    t = time.perf_counter()
    evaluations = found = 0
    try:
        for r in engine.replay_iter(keyless_query(), until="end"):
            evaluations += 1
            found += len(r.rows)
    except Exception as exc:  # noqa: BLE001 - recorded, reported loudly by the parent
        return {"error": _error(exc)}
    return {"s": time.perf_counter() - t, "evaluations": evaluations, "events": found,
            "workers_mb": worker_peak_mb()}


def _rspark_pass(engine, iri: str, path: str, policies: list[str]) -> dict:
    """One stream through rspark: loaded as ``iri`` (timed), then each policy's query over it (timed)."""
    out: dict = {"times": {}, "counts": {}, "digests": {}, "errors": {}, "check_s": {}, "workers_mb": {}}
    start = time.perf_counter()
    engine.add_stream(iri, path)
    # the stream's quads and bounds are cached lazily, by the first query that reads them: counted here, in the
    # load, so that every policy's replay time is its own query's (else the first policy pays the load's end)
    loaded = engine.streams[iri]
    loaded.quads.count()
    loaded.bounds()
    out["load_s"] = time.perf_counter() - start
    if engine.errors:
        out["load_errors"] = [str(e) for e in engine.errors[:5]]
    for policy in policies:
        counts, digest, check = {}, 0, 0.0
        reset_worker_peaks()
        t = time.perf_counter()
        try:
            for r in engine.replay_iter(query(policy, iri), until="end"):
                if r.rows:
                    counts[int(_number_time(r.time))] = len(r.rows)
                    c = time.perf_counter()  # the fingerprint is the benchmark's, not rspark's: not timed
                    for row in r.rows:
                        digest = digest_add(digest, rspark_match(row))
                    check += time.perf_counter() - c
        except Exception as exc:  # noqa: BLE001 - recorded, reported loudly by the parent
            out["errors"][policy] = _error(exc)
            continue
        out["times"][policy] = time.perf_counter() - t - check
        out["workers_mb"][policy] = worker_peak_mb()
        out["check_s"][policy] = check
        out["counts"][policy] = counts
        out["digests"][policy] = digest
    return out


def _error(exc: Exception) -> str:
    """An exception in one line: its type, its first line and, for an error that wraps a Python worker's traceback
    (Spark's PythonException), the traceback's last line (the worker's own error)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    cause = [line for line in lines[1:] if not line.startswith(("File ", "at ", "^", "~"))
             and ("Error" in line or "Exception" in line)]
    return text + (f" ... {cause[-1]}" if cause else "")


def _number_time(value) -> int:
    return int(Decimal(str(value)))
