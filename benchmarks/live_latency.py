"""Live latency: continuous queries over a stream pushed live at a target rate (``engine.push``), the delay from an
instant's input being complete to its record being delivered, whether the engine keeps up, and its memory; the same
elements replayed from a file as the baseline.

Targets (the live-mode issue): at 10,000 triples/s a latency p50 < 500 ms and p99 < 2 s; the filter query
sustained at 100,000 triples/s (no growing backlog); memory bounded over a 10-minute run
(``--seconds 600``: driver RSS, JVM RSS and JVM heap sampled, first / max / last).

The stream (numeric timestamps, one named graph per element, N-Quads lines pushed as text):

    <e{n}> { :sensor{K} :value "v"^^xsd:integer . :sensor{K} a :Obs . }     (an observation, v in 0..99)
    <e{n}> { :sensor{K} :alarm "v"^^xsd:integer . :sensor{K} a :Alarm . }   (every --alarm-every-th element)
    <e{n}> prov:generatedAtTime "t"^^xsd:integer .

3 triples per element (the timestamp counted, as in replay_throughput.py); K drawn among ``--sensors`` with a fixed
seed. Every ``--chunk-ms`` of wall time (default 200 ms; the first push ``--phase-ms`` after the start, default 100)
the elements due at the target rate (triples/s, ``--rates``) since the previous chunk are generated and pushed as one
``engine.push`` (one inbox file); their timestamps are spread over the wall-clock milliseconds since the run's start
that the chunk covers, the last one = the chunk's push time, so event time follows arrival (an element is never
stamped after it is pushed). The stream is declared with lateness 0: an instant T is due once an element stamped
after T has arrived (rspark's horizon is one tick before the watermark), which is the chunk holding T's last element
unless that chunk ends exactly at T (then the next one). The phase keeps the pushes between window closes (at 100,
300, ... ms): with ``--phase-ms 0`` they fall on multiples of the chunk, so every window close ends a chunk and each
instant waits one more chunk for a later element: the generator's schedule, not a real stream's (whose next element
follows within a fraction of a millisecond at these rates), adds ``--chunk-ms`` to every latency.

Queries (``--queries``), each over ``FROM NAMED WINDOW :w ON :s [RANGE 1000 SLIDE 1000]`` (a tumbling 1-s window;
the default profile: a record at each window's close, i.e. one per second of stream):

  filter     ``?s :value ?v FILTER(?v > 95)`` in the window
  aggregate  ``AVG(?v)`` per sensor in the window
  seq        RSEP-QL ``EVENT ON :w { ?s :value ?v1 } AS E1``, ``EVENT ON :w { ?s :alarm ?v2 } AS E2``,
             ``MATCH { E1 SEQ E2 }`` (unrestricted SEQ: an alarm after a value of the same sensor, in one window),
             with getSTARTTIME() / getENDTIME()

Latency of a record (``handle.subscribe``; its ``time`` T = the evaluation instant in ms since the start):
    wall time of delivery - wall time at which the last element stamped <= T was pushed
(when the answer's input was complete). p50 / p99 / max per (query, rate) over the records of the run (one per
second of stream: a 60-s case has about 60, so p99 is close to the max); records delivered after the pushing
stopped, while the engine catches up, count too; those ``close(flush=True)`` gives (the last instant, when no
element after it came) do not, and are counted apart. Beside it, the engine's own figure (``handle.status()``:
latency_p50 / p99, from the writing of a micro-batch's earliest inbox file to its records).

Backlog: the lag = wall ms since the start - the query's evaluated horizon (every instant up to it is reported),
sampled every 0.5 s while pushing. "sustained" = the lag's mean over the last third of the pushing is not above the
first third's by more than max(1 s, 50 %); the slope of a line fitted to it (s of lag per s) is given too, and
"catch-up" = the time from the last push until every pushed element was evaluated (the horizon at the last
timestamp - 1; ``--drain-timeout`` bounds it, then the sources are stopped and the records still missing counted).
The phases of rspark's micro-batches are timed by wrapping the runner's methods on the instance (rspark's code is
unchanged): a batch with input, one load (a micro-batch's files together: load + append + buffer rewrite), a
batch's evaluation (all of them, and those that delivered records apart: a 1-s window closes in one push of five),
the wait of a batch's files for the batch before; with files per batch.

Memory, sampled every ``--sample-s`` seconds: the driver's RSS (psutil, else /proc/self/status VmRSS), the Spark
JVM's RSS (/proc/<pid>/status) and its heap used (``Runtime.totalMemory() - freeMemory()``), as first / max / last.
Every ``--heap-gc-s`` seconds while pushing (default 30; 0: never) the JVM's heap after a full collection
(``System.gc()`` through the session's gateway, then the heap used): what is live, without the garbage that the raw
figure also counts. "memory flat" = the driver's last RSS sample not above its first, and the least of the last
third of the heap-after-GC samples not above the least of the first third, by more than max(100 MB, 20 %)
(serve_load.py's rule: what is live after a GC is the retained heap plus the memory pages of the tasks running at
that moment, so the floors follow the retained heap and the means and peaks swing with the batch in flight); the
JVM's RSS follows the heap it has committed, which grows within -Xmx and is not given back, so it is
shown but not judged.
The handle's internal queue (``handle.results()``) is drained at every sample (``--no-drain`` keeps it: every
record is then held by the driver). After the run: the elements the stream's buffer still holds (pruned to what the
windows can read again) and the size of the inbox (the pushed files, which the checkpoint keeps).

Baseline, in the same run: the pushed elements were also written to one N-Quads file; a fresh Engine loads it
(``add_stream``) and replays the query (``replay_iter``, records consumed as they come): its total time (load +
replay) and throughput (triples/s). Its records are compared with the live ones (row count at every instant).

Sources (``--sources push,kafka``; default push): ``push`` is the above; ``kafka`` produces the same chunks, at the
same times, into a fresh topic of a single-node Kafka broker the script starts (:mod:`rspark.testing.kafka_broker`,
Kafka 4.1 in KRaft mode, one partition), with kafka-python's producer (the ``crc32c`` package computes its
checksums: ``.[bench]``; a warning without it), each chunk as records of whole elements of at most 512 KB, sent and
acknowledged before the chunk's push time is taken; the engine reads the topic as a
``kafka://HOST:PORT/TOPIC?format=nquads`` source (Spark's Kafka connector; the session gets
``spark.rspark.kafka=true``). Both cases share the table, a row each. For the Kafka case the transport's part of
the latency is given apart: from a chunk's push to the inbox write of the Kafka micro-batch that held its last
element (Spark's trigger interval, its offset look-up and fetch, the inbox file), p50 / p99, and the number of
Kafka micro-batches; the rest (inbox -> record) is rspark's micro-batch, as in the push case. After the table, the
Kafka source's triggers per phase (Spark's progress reports). ``--kafka-trigger SECONDS`` sets the kafka://
source's trigger interval (rspark's default ``rspark.engine.live.sources.KAFKA_TRIGGER``) for trying another.

Each case (query, source, rate) runs a fresh ``Engine(checkpoint=<tmpdir>)`` over one SparkSession (created once, with
``--conf``; default spark.driver.memory=4g); ``engine.live.close(flush=True)`` stops the sources, then
``engine.close()``; the checkpoint directory (inbox included) and the file are removed after the case. Before the
cases, each query runs a ``--warmup``-second unreported case at the lowest rate (the first plans, the Python workers).

Prints a table, writes it to benchmarks/RESULTS.md (its section, see ``_results.py``; ``--no-results`` skips it),
saves JSON (with every record's latency and the lag and memory samples) and a PNG (latency p50 / p99 per rate per
query; the lag over time per case).

    python benchmarks/live_latency.py [--rates 1000,10000,100000] [--seconds 60] [--queries filter,aggregate,seq]
    python benchmarks/live_latency.py --queries filter --seconds 600            # the 10-minute memory run
    python benchmarks/live_latency.py --rates 200 --seconds 5 --queries filter --no-results   # a quick check
    python benchmarks/live_latency.py --sources push,kafka --rates 10000,100000 --queries filter   # push vs Kafka
"""

from __future__ import annotations

import argparse
import bisect
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from harness import (
    backlog,
    driver_rss_mb,
    flat,
    fmt,
    jvm_heap_after_gc_mb,
    jvm_heap_mb,
    jvm_pid,
    number,
    percentile,
    proc_rss_mb,
    span,
    thirds,
    trio,
)
from workloads.sensors import QUERIES, RANGE_MS, STREAM, TRIPLES_PER_ELEMENT, Generator, stamps_for

TARGET_RATE = 10_000
TARGET_P50, TARGET_P99 = 0.5, 2.0
SUSTAINED_RATE = 100_000
LAG_EVERY = 0.5  # s between two lag samples


# ------------------------------------------------------------------------------------------------------ the stream


# ------------------------------------------------------------------------------------------------------ measuring


def instrument(runner) -> dict:
    """Times the phases of the runner's micro-batches (wrapping its methods on this instance; rspark's code is
    unchanged): ``batch`` (on_batch, input or not), ``ingest`` (a micro-batch's files: read on the driver or
    loaded, and appended to the buffer), ``evaluate`` (the due instants' plans and their delivery, whether or not
    an instant was due), ``evaluate_records`` (the evaluations that delivered records: those the latency of a
    record is made of; in most micro-batches no window closes and nothing is evaluated), ``wait`` (from the
    writing of a micro-batch's earliest inbox file to the start of the micro-batch: the time it waited for the
    micro-batch before), ``save`` (state.json). Lists of seconds by phase."""
    phases: dict = {"batch": [], "ingest": [], "evaluate": [], "evaluate_records": [], "wait": [], "save": []}

    def timed(key, fn):
        def wrapper(*a, **kw):
            start = time.perf_counter()
            if key == "batch" and kw.get("arrived") is not None:
                phases["wait"].append(max(0.0, time.time() - kw["arrived"]))
            delivered = None
            try:
                delivered = fn(*a, **kw)
                return delivered
            finally:
                phases[key].append(time.perf_counter() - start)
                if key == "evaluate" and delivered:
                    phases["evaluate_records"].append(phases[key][-1])
        return wrapper

    for key, attr in (("batch", "on_batch"), ("ingest", "_ingest_batch"), ("evaluate", "evaluate"),
                      ("save", "_save_state")):
        setattr(runner, attr, timed(key, getattr(runner, attr)))
    return phases


# ------------------------------------------------------------------------------------------------------ one case


def run_live(spark, name: str, rate: int, seconds: float, args, work: Path, source: str = "push",
             broker=None) -> dict:
    """Pushes the stream live for ``seconds`` at ``rate`` triples/s into a fresh Engine running query ``name``
    (``source``: through ``engine.push``, or produced into a fresh topic of ``broker`` that the engine reads as a
    ``kafka://`` source); returns the figures and writes the pushed elements to ``work/stream.nq`` (for the
    replay)."""
    from rspark import Engine

    engine = Engine(spark=spark, checkpoint=str(work / "checkpoint"))
    producer = None
    gen = Generator(args.sensors, args.alarm_every)
    records: list = []  # (instant ms, delivery wall time, rows, given by close(flush=True))
    chunks_first: list = []  # first timestamp of each chunk (ascending)
    chunks: list = []  # (first ts, last ts, push wall time, elements)
    lags: list = []  # (s since start, lag s) while pushing
    memory: dict = {"driver_rss": [], "jvm_rss": [], "jvm_heap": [], "jvm_heap_gc": []}
    stop = threading.Event()
    pushing = threading.Event()
    pushing.set()
    closing = threading.Event()  # set while close(flush=True) reports the last instants
    jpid = jvm_pid(spark)
    out: dict = {"query": name, "rate": rate, "seconds": seconds, "source": source}
    arrivals: list = []  # kafka: (wall time a micro-batch's records reached the inbox, elements so far)

    def on_record(rec) -> None:
        records.append((number(rec.time), time.time(), len(rec.rows), closing.is_set()))

    try:
        engine.live_stream(STREAM, lateness=0)
        handle = engine.register(QUERIES[name], name=name)
        handle.subscribe(on_record)
        runner = engine.live
        if source == "kafka":
            producer, feed = kafka_feed(engine, broker, f"elements-{name}-{rate}-{os.getpid()}-{time.time_ns()}",
                                        arrivals)
        query = runner.queries[name]
        phases = instrument(runner)
        t0 = time.time()

        def sample_memory() -> None:
            now = time.time() - t0
            memory["driver_rss"].append((now, driver_rss_mb()))
            memory["jvm_rss"].append((now, proc_rss_mb(jpid) if jpid else None))
            memory["jvm_heap"].append((now, jvm_heap_mb(spark)))

        def sampler() -> None:
            next_memory = 0.0
            next_gc = args.heap_gc_s if args.heap_gc_s > 0 else float("inf")
            while not stop.is_set():
                now = time.time() - t0
                horizon = number(query.horizon)  # read without the runner's lock, which a micro-batch holds
                if pushing.is_set() and chunks:  # nothing evaluated yet: the lag runs from the start
                    lags.append((now, now - (horizon or 0) / 1000))
                if now >= next_memory:
                    if not args.no_drain:
                        handle.drain()
                    sample_memory()
                    next_memory = now + args.sample_s
                if pushing.is_set() and now >= next_gc:
                    memory["jvm_heap_gc"].append((now, jvm_heap_after_gc_mb(spark)))
                    next_gc = now + args.heap_gc_s
                stop.wait(LAG_EVERY)

        thread = threading.Thread(target=sampler, name="live-latency-sampler", daemon=True)
        thread.start()

        # pushing: a chunk every chunk_ms of wall time (the first after phase_ms), the elements due at the rate
        # since the previous one
        sent = prev_ms = k = 0
        end_ms = int(seconds * 1000)
        first_ms = args.phase_ms if args.phase_ms > 0 else args.chunk_ms
        with open(work / "stream.nq", "w", encoding="utf-8") as log_file:
            while True:
                k += 1
                delay = t0 + (first_ms + (k - 1) * args.chunk_ms) / 1000 - time.time()
                if delay > 0:
                    time.sleep(delay)
                if runner.failure is not None:
                    raise RuntimeError(f"live mode failed: {runner.failure}")
                now_ms = min(end_ms, int((time.time() - t0) * 1000))
                due = int(rate * now_ms / 1000 / TRIPLES_PER_ELEMENT) - sent
                if due > 0 and now_ms > prev_ms:
                    stamps = stamps_for(prev_ms, now_ms, due)
                    text = gen.chunk(stamps)
                    if producer is None:
                        engine.push(STREAM, text, format="nquads")
                    else:
                        produce(producer, feed, text)
                    chunks.append((stamps[0], now_ms, time.time(), due))
                    chunks_first.append(stamps[0])
                    log_file.write(text)
                    sent += due
                    prev_ms = now_ms
                if now_ms >= end_ms:
                    break
        pushed_at = time.time()
        pushing.clear()
        out["push_s"] = pushed_at - t0
        out["elements"] = sent
        out["triples"] = sent * TRIPLES_PER_ELEMENT
        out["chunks"] = len(chunks)

        # catching up: until the last element's instant is evaluated, or the timeout
        last_ts = chunks[-1][1] if chunks else 0
        deadline = pushed_at + args.drain_timeout
        while time.time() < deadline:
            if runner.failure is not None:
                raise RuntimeError(f"live mode failed: {runner.failure}")
            horizon = number(query.horizon)
            if horizon is not None and horizon >= last_ts - 1:  # every element pushed is in (horizon: tick before)
                break
            time.sleep(0.05)
        horizon = number(query.horizon)
        out["caught_up"] = horizon is not None and horizon >= last_ts - 1
        out["catch_up_s"] = time.time() - pushed_at
        out["horizon_at_stop"] = horizon

        if producer is not None:  # where the Kafka source's triggers spent their time (Spark's progress reports)
            out["kafka_progress"] = kafka_progress(feed["source"].query.recentProgress)
        # (close() below waits for a batch still running: pruning, saving its state)
        if out["caught_up"]:
            try:  # the last batch saved
                runner.wait_idle(timeout=10)
            except Exception:  # noqa: BLE001 - a failure is reported by the status below
                pass
        closing.set()
        runner.close(flush=True)
        stop.set()
        thread.join()
        sample_memory()
        try:  # what the buffer still holds (bounded when pruning works): one count job
            held = runner.streams[STREAM].buffer.table("elements")
            out["buffer_elements"] = 0 if held is None else held.count()
        except Exception:  # noqa: BLE001 - only a figure of the report
            out["buffer_elements"] = None
        inbox = runner.streams[STREAM].inbox
        out["inbox_mb"] = sum(e.stat().st_size for e in os.scandir(inbox) if e.is_file()) / 2**20
        status = engine.live_status()
        st = status["streams"][STREAM]
        qs = status["queries"].get(name, {})
        out["phases"] = {key: {"n": len(v), "p50_s": percentile(v, 0.5), "max_s": max(v) if v else None,
                               "total_s": sum(v)} for key, v in phases.items()}
        batches = phases["batch"]
        out["batch_s_p50"] = percentile(batches, 0.5)
        out["batch_s_max"] = max(batches) if batches else None
        out.update(accepted=st["elements"], late=st["late"], rejected=st["rejected"], batches=st["batches"],
                   files=st["files"], engine_p50_s=qs.get("latency_p50"), engine_p99_s=qs.get("latency_p99"),
                   failure=status.get("failure"))
        out["files_per_batch"] = st["files"] / len(phases["ingest"]) if phases["ingest"] else None
    finally:
        stop.set()
        engine.close()
        if producer is not None:
            producer.close()

    if source == "kafka":  # the transport's part: push (produce) -> the records' micro-batch in the inbox
        out.update(kafka_transport(chunks, arrivals))
    # latency: delivery - push time of the chunk holding the last element stamped <= the instant
    latencies = []
    for instant, delivered, _rows, at_close in records:
        i = bisect.bisect_right(chunks_first, instant) - 1
        if i >= 0 and not at_close:
            latencies.append(delivered - chunks[i][2])
    first_ts = chunks[0][0] if chunks else 0
    last_ts = chunks[-1][1] if chunks else 0
    expected = max(0, last_ts // RANGE_MS - (-(-first_ts // RANGE_MS)) + 1)
    out.update(records=len(records), expected_records=expected, rows=sum(r[2] for r in records),
               records_at_close=sum(1 for r in records if r[3]),
               latencies=latencies, latency_p50_s=percentile(latencies, 0.5),
               latency_p99_s=percentile(latencies, 0.99), latency_max_s=max(latencies) if latencies else None,
               pushed_rate=out["triples"] / max(1e-9, out["push_s"]), lags=lags,
               counts={str(int(r[0])): r[2] for r in records},
               memory={k: v for k, v in memory.items()}, **backlog(lags, seconds))
    for key, samples in memory.items():
        out[key] = span(samples)
    out["heap_gc"] = thirds(memory["jvm_heap_gc"])
    out["memory_flat"] = (flat(out["driver_rss"]["first"], out["driver_rss"]["last"]),
                          flat(out["heap_gc"]["floor_first"], out["heap_gc"]["floor_last"]))
    return out


KAFKA_RECORD_BYTES = 512 * 1024  # a chunk is produced as records of at most this size (Kafka's limit is 1 MB)


def kafka_feed(engine, broker, topic: str, arrivals: list):
    """The Kafka case's producer, and the engine's kafka:// source on ``topic`` (format nquads) with its inbox
    writes noted in ``arrivals`` (wall time, elements written so far)."""
    from kafka import KafkaProducer
    from kafka.record import util

    if util.crc32c_c is None:
        print("warning: the crc32c package is not installed: kafka-python computes its record checksums in pure "
              "Python (about 0.2 s a MB) and the producer falls behind at high rates (pip install crc32c, or "
              ".[bench])", file=sys.stderr, flush=True)
    producer = KafkaProducer(bootstrap_servers=broker.servers, linger_ms=0, max_request_size=2 * KAFKA_RECORD_BYTES)
    feed = {"topic": topic}
    engine.source(STREAM, f"kafka://{broker.servers}/{topic}?format=nquads", lateness=0)
    [source] = [f for f in engine.live.streams[STREAM].feeds if f.status()["kind"] == "kafka"]
    write, total = source.written.write, [0]

    def noted(batch_id, text, ext):
        write(batch_id, text, ext)
        total[0] += text.count(" .\n") // TRIPLES_PER_ELEMENT
        arrivals.append((time.time(), total[0]))

    source.written.write = noted
    feed["source"] = source
    return producer, feed


def kafka_progress(progress: list) -> dict:
    """The p50 and the total of each phase of the Kafka source's triggers with data (Spark's ``durationMs``: the
    offset look-up ``latestOffset``, ``addBatch`` = rspark's foreachBatch: the records fetched and the inbox file
    written, the offset and commit logs ``walCommit`` / ``commitOffsets``, the whole ``triggerExecution``), in s."""
    with_data = [p for p in progress if p.get("numInputRows")]
    phases: dict = {}
    for p in with_data:
        for key, ms in (p.get("durationMs") or {}).items():
            phases.setdefault(key, []).append(ms / 1000)
    return {"triggers": len(with_data),
            **{key: {"p50_s": percentile(v, 0.5), "total_s": sum(v)} for key, v in sorted(phases.items())}}


def produce(producer, feed: dict, text: str) -> None:
    """A chunk into the topic as records of whole elements (3 lines each) of at most KAFKA_RECORD_BYTES, sent and
    acknowledged (the push time is taken after)."""
    lines = text.splitlines(keepends=True)
    piece: list = []
    size = 0
    for i in range(0, len(lines), TRIPLES_PER_ELEMENT):
        element = "".join(lines[i:i + TRIPLES_PER_ELEMENT])
        if piece and size + len(element) > KAFKA_RECORD_BYTES:
            producer.send(feed["topic"], "".join(piece).encode())
            piece, size = [], 0
        piece.append(element)
        size += len(element)
    if piece:
        producer.send(feed["topic"], "".join(piece).encode())
    producer.flush()


def kafka_transport(chunks: list, arrivals: list) -> dict:
    """Per chunk, its push (produce, acknowledged) to the inbox write of the micro-batch that held its last element
    (Spark's trigger, its offset look-up, the records' fetch and the inbox file): p50 / p99 / max s."""
    delays, j, sent = [], 0, 0
    for _first, _last, pushed, elements in chunks:
        sent += elements
        while j < len(arrivals) and arrivals[j][1] < sent:
            j += 1
        if j < len(arrivals):
            delays.append(arrivals[j][0] - pushed)
    return {"kafka_batches": len(arrivals), "transport_p50_s": percentile(delays, 0.5),
            "transport_p99_s": percentile(delays, 0.99), "transport_max_s": max(delays) if delays else None}


def run_replay(spark, name: str, path: Path, triples: int) -> dict:
    """The baseline: the same elements loaded from a file and replayed (load + replay timed)."""
    from rspark import Engine

    counts = {}
    with Engine(spark=spark) as engine:
        start = time.perf_counter()
        engine.add_stream(STREAM, str(path))
        load = time.perf_counter() - start
        for rec in engine.replay_iter(QUERIES[name], names=[name]):
            counts[str(int(number(rec.time)))] = len(rec.rows)
        total = time.perf_counter() - start
    return {"replay_s": total, "replay_load_s": load, "replay_tps": triples / total if total else None,
            "replay_counts": counts}


def agreement(live: dict, replay: dict) -> str:
    """The row counts of the live records against the replay's, at the instants the live run reported (all of the
    replay's when it caught up)."""
    lc, rc = live["counts"], replay["replay_counts"]
    keys = set(lc) | set(rc) if live.get("caught_up") else set(lc)
    differ = sorted((k for k in keys if lc.get(k) != rc.get(k)), key=int)
    if differ:
        k = differ[0]
        return f"NO: {len(differ)} instants differ (first {k}: live {lc.get(k)}, replay {rc.get(k)})"
    return f"yes ({len(lc)})"


# ------------------------------------------------------------------------------------------------------ the run


def table_row(res: dict) -> str:
    replay = "| - | - | - |"
    if "replay_s" in res:
        replay = (f"| {res['replay_s']:.1f} ({res['replay_load_s']:.1f} + "
                  f"{res['replay_s'] - res['replay_load_s']:.1f}) | {fmt(res['replay_tps'], ',.0f')} "
                  f"| {res['agrees']} |")
    ph = {key: res.get("phases", {}).get(key, {}) for key in ("ingest", "evaluate", "evaluate_records", "wait")}
    sustained = "-" if res["sustained"] is None else ("yes" if res["sustained"] else "NO")
    transport = "-"
    if res["source"] == "kafka":
        transport = (f"{fmt(res['transport_p50_s'])} / {fmt(res['transport_p99_s'])} "
                     f"({res['kafka_batches']})")
    return (f"| {res['query']} | {res['source']} | {res['rate']:,} | {res['pushed_rate']:,.0f} "
            f"| {res['elements']:,} "
            f"| {res['records']} / {res['expected_records']} ({res['records_at_close']} at close) | {res['late']} "
            f"| {fmt(res['latency_p50_s'])} | {fmt(res['latency_p99_s'])} | {fmt(res['latency_max_s'])} "
            f"| {fmt(res['engine_p50_s'])} / {fmt(res['engine_p99_s'])} | {transport} "
            f"| {fmt(res['lag_first_s'])} / {fmt(res['lag_last_s'])} | {fmt(res['lag_slope'], '.3f')} "
            f"| {sustained} | {fmt(res['catch_up_s'], '.1f')}{'' if res['caught_up'] else ' (timed out)'} "
            f"| {fmt(res['batch_s_p50'])} / {fmt(res['batch_s_max'])} | {fmt(res['files_per_batch'], '.1f')} "
            f"| {fmt(ph['ingest'].get('p50_s'))} / {fmt(ph['evaluate'].get('p50_s'))} "
            f"| {fmt(ph['evaluate_records'].get('p50_s'))} / {fmt(ph['evaluate_records'].get('max_s'))} "
            f"| {fmt(ph['wait'].get('p50_s'))} / {fmt(ph['wait'].get('max_s'))} "
            f"| {trio(res['driver_rss'])} | {trio(res['jvm_rss'])} | {trio(res['jvm_heap'])} "
            f"| {fmt(res['heap_gc'].get('floor_first'), '.0f')} / {fmt(res['heap_gc'].get('floor_last'), '.0f')}; "
            f"{fmt(res['heap_gc'].get('first'), '.0f')} / {fmt(res['heap_gc'].get('last'), '.0f')}; "
            f"{fmt(res['heap_gc'].get('max'), '.0f')} ({res['heap_gc']['n']}) "
            f"| {'/'.join('-' if v is None else ('yes' if v else 'NO') for v in res['memory_flat'])} "
            f"| {fmt(res.get('buffer_elements'), ',')} | {fmt(res.get('inbox_mb'), '.1f')} " + replay)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="1000,10000,100000", help="target rates, triples/s (comma-separated)")
    ap.add_argument("--seconds", type=float, default=60, help="seconds of pushing per case")
    ap.add_argument("--queries", default="filter,aggregate,seq", help=f"among {', '.join(QUERIES)}")
    ap.add_argument("--chunk-ms", type=int, default=200, help="wall ms between two pushes")
    ap.add_argument("--phase-ms", type=int, default=100,
                    help="wall ms from the start to the first push (0: one chunk, so pushes fall on window closes)")
    ap.add_argument("--sensors", type=int, default=1000)
    ap.add_argument("--alarm-every", type=int, default=50, help="every n-th element is an alarm (the seq query)")
    ap.add_argument("--warmup", type=float, default=5, help="seconds of an unreported case per query first (0: none)")
    ap.add_argument("--drain-timeout", type=float, default=120,
                    help="seconds to wait after the last push for the last instant to be evaluated")
    ap.add_argument("--sample-s", type=float, default=5, help="seconds between two memory samples")
    ap.add_argument("--heap-gc-s", type=float, default=30,
                    help="seconds between two samples of the JVM's heap after a full GC while pushing (0: never)")
    ap.add_argument("--no-drain", action="store_true",
                    help="leave the handle's results() queue undrained (it then holds every record)")
    ap.add_argument("--no-replay", action="store_true", help="skip the replay baseline")
    ap.add_argument("--tmp", default=None, help="where the checkpoints and stream files go (default: the system's)")
    ap.add_argument("--sources", default="push",
                    help="how the elements come, comma-separated: push (engine.push), kafka (produced into a topic "
                         "of a single-node Kafka broker this script starts, read as a kafka:// source)")
    ap.add_argument("--kafka-trigger", type=float, default=None,
                    help="seconds between two looks of the kafka:// source at its topic (rspark's default: "
                         "rspark.engine.live.sources.KAFKA_TRIGGER)")
    harness.common_arguments(ap, "live_latency")
    args = ap.parse_args()
    names = [q for q in args.queries.split(",") if q]
    unknown = [q for q in names if q not in QUERIES]
    if unknown:
        ap.error(f"unknown queries {unknown} ({', '.join(QUERIES)})")
    rates = [int(float(r)) for r in args.rates.split(",") if r]
    sources = [x for x in args.sources.split(",") if x]
    if not sources or set(sources) - {"push", "kafka"}:
        ap.error(f"--sources: push and/or kafka, not {args.sources!r}")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka.cluster").setLevel(logging.CRITICAL)  # (a new topic "not found" before it is made)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    broker = None
    defaults = {"spark.driver.memory": "4g"}
    if "kafka" in sources:
        from rspark.engine.live import sources as live_sources
        from rspark.testing import kafka_broker

        if args.kafka_trigger is not None:
            live_sources.KAFKA_TRIGGER = args.kafka_trigger
        kafka_broker.fetch()
        t = time.perf_counter()
        broker = kafka_broker.start(Path(tempfile.mkdtemp(prefix="rspark-live-latency-kafka-", dir=args.tmp)))
        print(f"Kafka broker {broker.servers} started in {time.perf_counter() - t:.1f} s", flush=True)
        defaults["spark.rspark.kafka"] = "true"
    try:
        _main(args, names, rates, sources, broker, report, out_dir, defaults)
    finally:
        if broker is not None:
            broker.stop(kill=False)
            shutil.rmtree(broker.folder, ignore_errors=True)


def _main(args, names, rates, sources, broker, report, out_dir, defaults) -> None:
    from rspark.spark.session import get_session

    start = time.perf_counter()
    spark = get_session(None, harness.spark_settings(args.conf, **defaults))
    spark.range(1).count()

    def warm(batches):
        import pyoxigraph  # noqa: F401

        import rspark  # noqa: F401

        yield from batches

    spark.range(0, 4, 1, 2).mapInArrow(warm, "id long").count()
    startup = time.perf_counter() - start
    print(f"Spark started in {startup:.1f} s", flush=True)

    def case(name: str, rate: int, seconds: float, replay: bool, source: str = "push") -> dict:
        work = Path(tempfile.mkdtemp(prefix="rspark-live-latency-", dir=args.tmp))
        try:
            res = run_live(spark, name, rate, seconds, args, work, source, broker)
            if replay:
                base = run_replay(spark, name, work / "stream.nq", res["triples"])
                res.update(base, agrees=agreement(res, base))
            return res
        finally:
            shutil.rmtree(work, ignore_errors=True)

    warmup = 0.0
    if args.warmup > 0:
        t = time.perf_counter()
        for name in names:
            for source in sources:
                case(name, min(rates), args.warmup, replay=False, source=source)
        warmup = time.perf_counter() - t
        print(f"warm-up: {warmup:.1f} s ({args.warmup:g} s of pushing per query at {min(rates):,} triples/s)",
              flush=True)

    rows = []
    header = ("| query | source | rate triples/s | pushed triples/s | elements | records / expected | late "
              "| latency p50 s | p99 s | max s | engine p50 / p99 s | kafka: push -> inbox s p50 / p99 (batches) "
              "| lag first / last third s | lag slope s/s "
              "| sustained | catch-up s | batch s p50 / max | files / batch | ingest s / batch, evaluate s (p50) "
              "| evaluate s of a batch with records p50 / max | wait for a batch s p50 / max "
              "| driver RSS MB first/max/last | JVM RSS MB first/max/last | JVM heap MB first/max/last "
              "| JVM heap after full GC MB: least first / last third; mean first / last third; max (samples) "
              "| memory flat driver / JVM heap "
              "| buffer elements at end | inbox MB "
              "| replay s (load + replay) | replay triples/s | replay agrees |")
    report.print(header)
    report.print("|" + "---|" * (header.count("|") - 1))
    failed = []
    kafka_lines: list = []
    for name in names:
        for rate in rates:
            for source in sources:
                try:
                    res = case(name, rate, args.seconds, replay=not args.no_replay, source=source)
                except Exception as exc:  # noqa: BLE001 - a failed case is a result: recorded, the others go on
                    msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
                    failed.append(f"{name} ({source}) at {rate:,}: {msg}")
                    rows.append({"query": name, "rate": rate, "source": source, "error": msg})
                    report.print(f"| {name} | {source} | {rate:,} | FAILED: {msg} |")
                    continue
                rows.append(res)
                report.print(table_row(res))
                if res.get("kafka_progress"):
                    kafka_lines.append(f"{name} at {rate:,}: " + ", ".join(
                        f"{k} {v['p50_s']:.3f}" for k, v in res["kafka_progress"].items() if k != "triggers")
                        + f" ({res['kafka_progress']['triggers']} triggers with data)")

    report.print()
    report.print(f"Each case: {args.seconds:g} s of pushing, a push every {args.chunk_ms} ms, {TRIPLES_PER_ELEMENT} "
                 f"triples per element (its timestamp included), {args.sensors} sensors, an alarm every "
                 f"{args.alarm_every} elements; windows [RANGE {RANGE_MS} SLIDE {RANGE_MS}] (one record per second). "
                 "Latency: delivery - push of the last element stamped at or before the record's instant (records "
                 "given by close(flush=True) not counted); engine p50 / p99: rspark's own figure (from the writing "
                 "of a micro-batch's earliest inbox file to its records, its wait for the micro-batch before "
                 "included). Lag: wall time - the evaluated horizon while pushing; sustained: the last "
                 "third's mean lag not above the first's by more than max(1 s, 50 %). Catch-up: last push to every "
                 "pushed element evaluated. Batch s: rspark's handling of a micro-batch with input (its files "
                 "ingested, the instants evaluated, the state saved); ingest: a micro-batch's files read (on the "
                 "driver when small and clean, else by the loader) and appended to the buffer; evaluate: the due "
                 "instants' evaluation and delivery, per batch (most batches close no window and evaluate nothing); "
                 "evaluate s of a batch with records: the evaluations that delivered records, what a record's "
                 "latency is mostly made of; wait for a batch: from the writing of a batch's earliest inbox file to "
                 "the start of its handling (the batch before still running). Buffer elements: what "
                 "the stream's buffer holds after the run (pruned to the windows still readable); inbox MB: the "
                 "pushed files, kept in the checkpoint. JVM heap after full GC: System.gc() then the heap used, "
                 f"every {args.heap_gc_s:g} s while pushing; memory flat: the driver's last RSS sample not above its "
                 "first, and the least heap after GC of the last third not above the least of the first third, by "
                 "more than max(100 MB, 20 %) (what is live after a GC is the retained heap plus the memory pages "
                 "of the tasks running at that moment: the least sample of a stretch bounds what was retained "
                 "during it; the JVM's RSS follows its committed heap, which is not given back: not judged). Replay: "
                 "the same elements loaded from one N-Quads file and replayed (load + replay), its records' row "
                 "counts compared with the live ones.")
    if kafka_lines:
        report.print()
        report.print("The Kafka source's triggers with data, p50 s per phase (Spark's progress reports, durationMs: "
                     "latestOffset = the offset look-up, addBatch = the records fetched and written into the inbox, "
                     "walCommit / commitOffsets = Spark's offset and commit logs): " + "; ".join(kafka_lines) + ".")
    report.print()
    report.print(f"Spark's start: {startup:.1f} s; warm-up before the cases: {warmup:.1f} s.")
    targets = []
    for res in rows:
        if "error" in res:
            continue
        if res["rate"] == TARGET_RATE and res["latency_p50_s"] is not None:
            ok = res["latency_p50_s"] < TARGET_P50 and res["latency_p99_s"] < TARGET_P99
            targets.append(f"{res['query']} ({res['source']}) at {TARGET_RATE:,}: p50 {res['latency_p50_s']:.2f} s, "
                           f"p99 {res['latency_p99_s']:.2f} s -> {'met' if ok else 'NOT met'}")
        if res["query"] == "filter" and res["rate"] == SUSTAINED_RATE:
            ok = bool(res["sustained"]) and res["caught_up"]
            targets.append(f"filter ({res['source']}) at {SUSTAINED_RATE:,} sustained -> {'met' if ok else 'NOT met'}")
        if res["seconds"] >= 600 and None not in res["memory_flat"]:
            ok = all(res["memory_flat"])
            targets.append(f"{res['query']} at {res['rate']:,} for {res['seconds']:g} s: memory "
                           f"{'flat' if ok else 'NOT flat'}")
    report.print()
    report.print(f"Targets: p50 < {TARGET_P50 * 1000:.0f} ms and p99 < {TARGET_P99:g} s at {TARGET_RATE:,} "
                 f"triples/s; the filter sustained at {SUSTAINED_RATE:,} triples/s; memory bounded over a 10-minute "
                 "run (--seconds 600). " + ("; ".join(targets) + "." if targets else "(no case at those rates)"))
    if failed:
        report.print()
        report.print("FAILED: " + "; ".join(failed))

    (out_dir / f"{args.name}.json").write_text(json.dumps({"startup_s": startup, "warmup_s": warmup,
                                                           "args": vars(args), "cases": rows}, indent=1))
    print(f"json: {out_dir / (args.name + '.json')}", flush=True)
    png = plot(rows, out_dir / f"{args.name}.png")
    if png:
        report.plot(png)
    report.write()
    if failed:
        raise SystemExit(1)


def plot(rows, path: Path) -> Path | None:
    ok = [r for r in rows if "error" not in r and r.get("latency_p50_s") is not None]
    if not ok:
        return None
    latency, lag = [], []
    for i, (query, source) in enumerate(dict.fromkeys((r["query"], r["source"]) for r in ok)):
        pts = sorted((r for r in ok if (r["query"], r["source"]) == (query, source)), key=lambda r: r["rate"])
        color, rates = f"C{i}", [r["rate"] for r in pts]
        name = query if source == "push" else f"{query} ({source})"
        latency += [harness.Line(rates, [r["latency_p50_s"] for r in pts], "o-", f"{name} p50", color),
                    harness.Line(rates, [r["latency_p99_s"] for r in pts], "s--", f"{name} p99", color)]
        lag += [harness.Line([t for t, _ in r["lags"]], [v for _, v in r["lags"]], "-", f"{name} {r['rate']:,}/s",
                             color, width=1, alpha=0.4 + 0.6 * (r["rate"] == pts[-1]["rate"]))
                for r in pts if r["lags"]]
    return harness.plot(path, [
        harness.Panel(latency, "pushed triples / s (target)", "latency s (input complete -> record)", xlog=True,
                      ylog=True, hlines=[(TARGET_P50, f"target p50 ({TARGET_RATE:,}/s)", ":"),
                                         (TARGET_P99, f"target p99 ({TARGET_RATE:,}/s)", "-.")]),
        harness.Panel(lag, "s since the start (pushing)", "lag s (wall - evaluated horizon)", legend=6)], (11, 4))


if __name__ == "__main__":
    main()
