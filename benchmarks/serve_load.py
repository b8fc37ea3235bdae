"""Serve load: ``rspark serve`` with many Server-Sent Events clients while a stream is pushed over HTTP at a rate.

What it measures (docs/service.md): the delay from a push to the record's delivery on every client, whether any
client lost or got twice an event, whether the records are those a replay of the same elements gives, whether the
service kept up, and the server's memory.

The issue's acceptance: 100 concurrent SSE clients and pushes at 1k and 10k triples/s for 5 minutes; p50 / p99 from
push to SSE delivery, no event lost or duplicated on any client, server memory flat.

Each rate (``--rates``, triples/s) is one case on a fresh server: ``python -m rspark serve --port P --checkpoint
DIR`` (a subprocess, its own checkpoint directory, ``--server-conf`` passed as ``--conf``, default
spark.driver.memory=4g as live_latency.py's session). First a warm-up (``--warmup`` seconds, default 30; 0: none):
the same pushing at the same rate into a stream of its own (``PUT /streams/warm``) read by the same queries
(``warm-{name}``), until its last instant is reported; both are then deleted (``DELETE``): the JVM's code, the
Python workers and the first plans are warm, as in a service that runs. Then ``PUT /streams/s`` (``{"iri":
"http://example.org/s", "lateness": 0}``); ``PUT /queries/{name}`` for each query (``--queries``); ``--clients``
SSE clients open ``GET /queries/{name}/results`` on each query, and the pushing starts once the server counts them
all (``sse_clients`` of ``GET /queries``).

The stream and the queries are live_latency.py's (``workloads/sensors.py``): numeric timestamps, one named graph per
element, 3 triples per element (its timestamp counted), K among ``--sensors`` sensors with a fixed seed. Every
``--chunk-ms`` of wall time the elements due at the rate since the previous chunk are generated and POSTed as one
``application/n-quads`` body to ``/streams/s`` (202 ``{"accepted": n, "triples": m, "late": 0}`` checked); their
timestamps spread over the wall-clock milliseconds since the case's start that the chunk covers (the last one = the
chunk's time), so event time follows arrival. After the last chunk (stamped ``--seconds`` * 1000), one more element
stamped 1 ms later is pushed: the stream's watermark then passes the last instant, which becomes due (lateness 0).
The queries, over ``FROM NAMED WINDOW :w ON :s [RANGE 1000 SLIDE 1000]`` (a tumbling 1-s window: a record at each
window's close, one per second of stream): ``aggregate`` (``AVG(?v)`` per sensor; the default), ``filter``
(``?v > 95``), ``seq`` (RSEP-QL SEQ).

After the last push the benchmark waits (``--drain-timeout``) until ``GET /queries`` gives every query's ``last``
(the last instant reported) at the last instant, then (``--settle-timeout``) until every client has that instant's
event, then closes the clients and stops the server (SIGTERM; its exit status is reported).

Latency of an event (instant T, the record's time in ms since the case's start): the wall time at which a client
read the event - the wall time at which the POST of the chunk holding the last element stamped <= T returned
(when the answer's input was complete and accepted). p50 / p99 / max over every client's events (``--skip S``
leaves out the instants of the first S seconds of stream; they are still checked for loss and duplicates). Beside
it, the server's own figure (``GET /queries``: latency_p50 / p99, from a micro-batch's arrival to its records, the
last 1000 records).

Correctness, per client and query: its event ids against the expected instants (those of the baseline replay
below; without it every multiple of 1000 from the first window's close to the last instant): *lost* = an expected
instant the server reported (at or before its final ``last``) that the client never got; *duplicated* = an id got
more than once; *unexpected* = an id not expected; out of order = an id not after the previous one. Instants the
server never reported before the drain timeout are counted apart (*unreported*). Every client's list of ids is
compared with the first client's, and every event's data (a hash of the ``data`` line) with the first client's
event of the same id; the first client's records are compared with the replay's (same instants; at each the same
head and the same bindings, in any order). A client whose stream ends or fails reconnects with ``Last-Event-ID``
(as a browser's EventSource does); reconnects and ``gap`` events are counted.

Baseline, in the same run (after the live cases, so that it does not compete with a server for the cores): the
pushed elements (the final one included) were also written to one N-Quads file; a local SparkSession in this
process (created once, ``--conf``, default spark.driver.memory=4g) loads it (``Engine.add_stream``) and replays the
queries (``Engine.replay_iter``): its time (load + replay) and its records, against the SSE ones.

The service keeping up: every second while pushing, ``GET /queries`` gives ``last``; the lag = wall s since the
case's start - ``last`` (ms) / 1000 (nothing reported yet: the wall time itself), one value per second and query.
"sustained" (live_latency.py's rule): the lag's mean over the last third of the pushing is not above the first
third's by more than max(1 s, 50 %); the slope of a line fitted to it (s of lag per s of pushing) is given too, and
the catch-up (from the final push to the last instant reported). "kept up" = sustained and caught up within the
drain timeout. The server's own ``lag`` (ms from its evaluated horizon to the newest element it has loaded) is in
the JSON.

Server memory, sampled every ``--sample-s`` seconds from /proc (psutil is not needed): the RSS of the server's
Python process, of its Spark JVM (its ``java`` child) and of the whole process tree (the PySpark workers
included). first / max / last over the samples taken from the first push to the last client's last event, and the
slope of a line fitted to the second half of them (MB per minute). "flat" = the last sample is not above the first
by more than max(``--flat-mb`` MB, ``--flat-pct`` %), for the server process's RSS and for the JVM's heap after a
full GC (``jcmd``, every ``--heap-s`` seconds while pushing: the least sample of the last third against the least of
the first third). The heap after a full GC is what the JVM retains plus the memory of the tasks running at that
moment (Tungsten pages, ``long[]``: hash aggregates and sorters, freed when the task ends; heap histograms taken at
the peaks and at the floors of a run differ by those alone), which depends on where in a micro-batch the GC falls:
the least sample of a stretch bounds what was retained during it, so growing retained memory raises the floors,
while the means and the peaks swing with the tasks in flight (both are shown). The JVM's RSS follows the heap it has
committed, which grows within -Xmx and is not given back, so it is shown but not judged.
The machine's 1-min load average is sampled with it (the machine may be shared: the table gives its mean).

Prints a table (one row per rate and query), writes it to benchmarks/RESULTS.md (section ``serve_load``, see
``_results.py``; ``--no-results`` skips it), saves JSON (per case: the chunks' push times, per-instant latency
across clients, per-client counts, the lag and memory samples) and a PNG (latency over the stream's time per rate;
the lag over time; the RSS over time) under ``benchmarks/out/``. ``--quick`` is a smoke run (10 clients, 1,000
triples/s, 20 s, a 10-s warm-up, named ``serve_load_quick``, nothing written to RESULTS.md).

    python benchmarks/serve_load.py                     # 100 clients, 1,000 and 10,000 triples/s, 300 s each
                                                        # (about 20 minutes on 2 cores)
    python benchmarks/serve_load.py --quick             # a smoke run of about 3 minutes
    python benchmarks/serve_load.py --clients 10 --rates 1000 --seconds 20 --no-results
"""

from __future__ import annotations

import argparse
import bisect
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from harness import backlog, fmt, percentile, thirds, trio
from serve import instant
from serve.clients import Clients
from serve.driver import run_case
from workloads.sensors import QUERIES, RANGE_MS, STREAM, TRIPLES_PER_ELEMENT


def canonical(record: dict) -> tuple:
    """A record, comparable with another: its instant, head and bindings (in any order), or its other fields."""
    rest = {k: v for k, v in record.items() if k not in ("query", "time", "results")}
    bindings = record.get("results", {}).get("bindings", [])
    return (instant(record.get("time")), json.dumps(rest, sort_keys=True),
            tuple(sorted(json.dumps(b, sort_keys=True) for b in bindings)))


def analyse(res: dict, name: str, expected: list[int] | None, baseline: dict | None, args) -> dict:
    """One query of a case: latencies, loss, duplicates, agreement between the clients and with the replay."""
    clients: Clients = res["clients_obj"]
    chunks = res["chunk_list"]
    firsts = [c[0] for c in chunks]
    end_ms = res["end_ms"]
    server_last = res["server_last"].get(name)
    if expected is None:
        first_ts = chunks[0][0] if chunks else 0
        expected = list(range(-(-first_ts // RANGE_MS) * RANGE_MS, end_ms + 1, RANGE_MS))
    expected_set = set(expected)
    reported = {t for t in expected if server_last is not None and t <= server_last}
    skip_ms = args.skip * 1000
    latencies: list = []
    by_instant: dict = {}
    per_client: list = []
    ref_ids = None
    ref_digest: dict = {}
    differ_lists = differ_data = 0
    for i in range(args.clients):
        evs = clients.events[(name, i)]
        ids = [instant(e[0]) for e in evs]
        counts = Counter(ids)
        dup = sum(c - 1 for c in counts.values() if c > 1)
        lost = len(reported - set(counts))
        unexpected = sum(c for t, c in counts.items() if t not in expected_set)
        disorder = sum(1 for a, b in zip(ids, ids[1:]) if b is None or a is None or b <= a)
        if i == 0:
            ref_ids = ids
            ref_digest = {e[0]: e[2] for e in evs}
        else:
            differ_lists += ids != ref_ids
            differ_data += sum(1 for e in evs if ref_digest.get(e[0]) != e[2])
        for (_, when, _), t in zip(evs, ids):
            if t is None:
                continue
            j = bisect.bisect_right(firsts, t) - 1
            if j < 0:
                continue
            lat = when - chunks[j][2]
            by_instant.setdefault(t, []).append(lat)
            if t > skip_ms:
                latencies.append(lat)
        per_client.append({"events": len(evs), "lost": lost, "duplicated": dup, "unexpected": unexpected,
                           "out_of_order": disorder, "connects": clients.connects[(name, i)],
                           "gaps": clients.gaps[(name, i)], "ended": clients.ended[(name, i)]})
    out = {"query": name, "rate": res["rate"], "expected": len(expected), "reported": len(reported),
           "unreported": len(expected_set - reported),
           "events_min": min(c["events"] for c in per_client), "events_max": max(c["events"] for c in per_client),
           "lost": sum(c["lost"] for c in per_client), "duplicated": sum(c["duplicated"] for c in per_client),
           "unexpected": sum(c["unexpected"] for c in per_client),
           "out_of_order": sum(c["out_of_order"] for c in per_client),
           "clients_lost": sum(1 for c in per_client if c["lost"]),
           "clients_duplicated": sum(1 for c in per_client if c["duplicated"]),
           "reconnects": sum(max(0, c["connects"] - 1) for c in per_client),
           "gaps": sum(c["gaps"] for c in per_client), "ended": sum(c["ended"] for c in per_client),
           "client_errors": [e for e in clients.errors if e[1] == name][:20],
           "lists_differ": differ_lists, "data_differ": differ_data,
           "latency_n": len(latencies), "latency_p50_s": percentile(latencies, 0.5),
           "latency_p99_s": percentile(latencies, 0.99), "latency_max_s": max(latencies) if latencies else None,
           "by_instant": {str(t): {"n": len(v), "min": min(v), "p50": percentile(v, 0.5), "max": max(v)}
                          for t, v in sorted(by_instant.items())},
           "per_client": per_client}
    st = res["server_queries"].get(name, {})
    out.update(server_p50_s=st.get("latency_p50"), server_p99_s=st.get("latency_p99"),
               server_records=st.get("records"), server_evaluations=st.get("evaluations"))
    # the lag: wall s since t0 - the last instant reported (s), while pushing
    lags = []
    for t, pushing, qs in res["statuses"]:
        q = qs.get(name) if isinstance(qs, dict) else None
        if pushing and isinstance(q, dict):
            last = instant(q.get("last"))
            lags.append((t, t - (last or 0) / 1000))
    out["lags"] = lags
    out["server_lags"] = [(t, qs[name].get("lag")) for t, _, qs in res["statuses"] if isinstance(qs.get(name), dict)]
    out.update(backlog(lags, args.seconds))
    out["kept_up"] = bool(out["sustained"]) and res["caught_up"]
    # the records against the replay's
    if baseline is not None:
        live = {}
        bad = 0
        for ident, data in clients.data[name].items():
            try:
                live[instant(ident)] = canonical(json.loads(data))
            except ValueError:
                bad += 1
        base = baseline.get(name, {})
        keys = set(live) | {t for t in base if t in reported}
        differ = sorted(t for t in keys if live.get(t) != base.get(t))
        if differ or bad:
            t = differ[0] if differ else None
            what = (f"{len(differ)} instants differ (first {t}: live "
                    f"{'-' if live.get(t) is None else len(live[t][2])} rows, replay "
                    f"{'-' if base.get(t) is None else len(base[t][2])} rows)") if differ else ""
            out["agrees"] = "NO: " + "; ".join(filter(None, [what, f"{bad} unreadable" if bad else ""]))
        else:
            out["agrees"] = f"yes ({len(live)})"
        out["rows"] = sum(len(v[2]) for v in live.values())
    return out


def memory_summary(res: dict, args) -> dict:
    """first / max / last and the second half's slope (MB / min) of the memory samples, and the verdicts."""
    out = {}
    samples = res.get("memory", [])
    for key in ("server", "jvm", "tree"):
        pts = [(t, m[key]) for t, m in samples if m.get(key) is not None]
        vals = [v for _, v in pts]
        d = {"first": vals[0] if vals else None, "max": max(vals) if vals else None, "last": vals[-1] if vals else None,
             "slope_mb_min": None, "samples": pts}
        half = pts[len(pts) // 2:]
        if len(half) >= 3:
            ts, ys = [t for t, _ in half], [v for _, v in half]
            mt, my = statistics.fmean(ts), statistics.fmean(ys)
            den = sum((t - mt) ** 2 for t in ts)
            if den:
                d["slope_mb_min"] = 60 * sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den
        if vals:
            d["flat"] = vals[-1] <= vals[0] + max(args.flat_mb, vals[0] * args.flat_pct / 100)
        out[key] = d
    heap = thirds(res.get("heap", []))
    # the verdict on the floors (the least sample of each third): the retained heap, without the running tasks' pages
    low, high = heap["floor_first"], heap["floor_last"]
    heap["flat"] = None if low is None else high <= low + max(args.flat_mb, low * args.flat_pct / 100)
    out["heap"] = heap
    loads = [m["load"] for _, m in samples if m.get("load") is not None]
    out["load"] = statistics.fmean(loads) if loads else None
    return out


# ------------------------------------------------------------------------------------------------------ the baseline


def run_replay(spark, names: list[str], path: Path, triples: int) -> dict:
    """The same elements from one N-Quads file, loaded and replayed in this process (timed); the records by query
    and instant."""
    from rspark import Engine

    records: dict = {n: {} for n in names}
    with Engine(spark=spark) as engine:
        start = time.perf_counter()
        engine.add_stream(STREAM, str(path))
        load = time.perf_counter() - start
        for rec in engine.replay_iter([QUERIES[n] for n in names], names=names):
            records[rec.query][instant(rec.time)] = canonical(json.loads(json.dumps(rec.to_json())))
        total = time.perf_counter() - start
    return {"replay_s": total, "replay_load_s": load, "replay_tps": triples / total if total else None,
            "replay_records": records}


# ------------------------------------------------------------------------------------------------------ the run


def yes(value) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def table_row(res: dict, q: dict) -> str:
    mem = res["mem"]
    replay = "| - | - |"
    if "replay_s" in res:
        load = res["replay_load_s"]
        replay = f"| {res['replay_s']:.1f} ({load:.1f} + {res['replay_s'] - load:.1f}) | {q.get('agrees', '-')} |"
    events = f"{q['events_min']}" if q["events_min"] == q["events_max"] else f"{q['events_min']}-{q['events_max']}"
    kept = "yes" if q["kept_up"] else "NO"
    unreported = f" ({q['unreported']} unreported)" if q["unreported"] else ""
    flat = f"{yes(mem['server'].get('flat'))}/{yes(mem['heap'].get('flat'))}"
    h = mem["heap"]
    heap = (f"{fmt(h['floor_first'], ',.0f')} / {fmt(h['floor_last'], ',.0f')}; {fmt(h['first'], ',.0f')} / "
            f"{fmt(h['last'], ',.0f')}; {fmt(h['max'], ',.0f')} ({h['n']})") if h["n"] else "-"
    return (f"| {res['rate']:,} | {res['pushed_rate']:,.0f} | {q['query']} | {res['clients']} "
            f"| {events} / {q['expected']}{unreported} "
            f"| {q['lost']} | {q['duplicated']} | {q['unexpected'] + q['out_of_order']} "
            f"| {q['lists_differ']} / {q['data_differ']} | {q['reconnects']} "
            f"| {fmt(q['latency_p50_s'])} | {fmt(q['latency_p99_s'])} | {fmt(q['latency_max_s'])} "
            f"| {fmt(q['server_p50_s'])} / {fmt(q['server_p99_s'])} "
            f"| {fmt(q['lag_first_s'])} / {fmt(q['lag_last_s'])} | {fmt(q['lag_slope'], '.3f')} "
            f"| {fmt(res['catch_up_s'], '.1f')}{'' if res['caught_up'] else ' (timed out)'} | {kept} "
            f"| {fmt(res['post_s_p50'], '.3f')} / {fmt(res['post_s_max'], '.2f')} "
            f"| {trio(mem['server'])} | {trio(mem['jvm'])} | {trio(mem['tree'])} "
            f"| {fmt(mem['server']['slope_mb_min'], '.1f')} / {fmt(mem['jvm']['slope_mb_min'], '.1f')} | {heap} "
            f"| {flat} "
            f"| {fmt(mem['load'], '.1f')} "
            + replay)


HEADER = ("| rate triples/s | pushed triples/s | query | clients | events per client / expected | lost | duplicated "
          "| unexpected or out of order | clients differing: lists / events | reconnects "
          "| latency p50 s | p99 s | max s | server p50 / p99 s | lag first / last third s | lag slope s/s "
          "| catch-up s | kept up | POST s p50 / max | server RSS MB first/max/last | JVM RSS MB first/max/last "
          "| tree RSS MB first/max/last | RSS slope 2nd half MB/min server / JVM "
          "| JVM heap after full GC MB: least first / last third; mean first / last third; max (samples) "
          "| memory flat server RSS / JVM heap "
          "| load "
          "| replay s (load + replay) | replay agrees |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=None, help="SSE clients per query (default 100; --quick 10)")
    ap.add_argument("--rates", default=None, help="target rates, triples/s, comma-separated (default 1000,10000; "
                                                  "--quick 1000)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds of pushing per rate (default 300; --quick 20)")
    ap.add_argument("--queries", default="aggregate", help=f"among {', '.join(QUERIES)} (comma-separated)")
    ap.add_argument("--chunk-ms", type=int, default=200, help="wall ms between two POSTs")
    ap.add_argument("--sensors", type=int, default=100, help="sensors (the aggregate's rows per record)")
    ap.add_argument("--alarm-every", type=int, default=50, help="every n-th element is an alarm (the seq query)")
    ap.add_argument("--warmup", type=float, default=30,
                    help="seconds of a warm-up push on a stream and queries of its own before each case (0: none)")
    ap.add_argument("--skip", type=float, default=0,
                    help="the instants of the first seconds of stream are left out of the latency figures")
    ap.add_argument("--drain-timeout", type=float, default=180,
                    help="seconds to wait after the last push for the last instant to be reported")
    ap.add_argument("--settle-timeout", type=float, default=30,
                    help="seconds to wait then for every client to have the last instant's event")
    ap.add_argument("--start-timeout", type=float, default=240, help="seconds for the server to answer")
    ap.add_argument("--connect-timeout", type=float, default=60, help="seconds for the SSE clients to connect")
    ap.add_argument("--sample-s", type=float, default=5, help="seconds between two memory samples")
    ap.add_argument("--flat-mb", type=float, default=100, help="memory flat: last <= first + max(this MB, ...)")
    ap.add_argument("--flat-pct", type=float, default=20, help="... this percent of the first)")
    ap.add_argument("--heap-s", type=float, default=30, help="seconds between two samples of the JVM's heap "
                    "after a full GC (jcmd)")
    ap.add_argument("--server-conf", action="append", default=None, metavar="KEY=VALUE",
                    help="a Spark setting of the server (repeatable; default spark.driver.memory=4g)")
    ap.add_argument("--no-replay", action="store_true", help="skip the replay baseline")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 10 clients, 1,000 triples/s, 20 s; named serve_load_quick; no RESULTS.md")
    ap.add_argument("--tmp", default=None, help="where the checkpoints and stream files go (default: the system's)")
    harness.common_arguments(ap, None)  # --conf: a Spark setting of the replay's session
    ap.add_argument("--name", default=None,
                    help="name of the JSON and PNG files written, and of the section of RESULTS.md (default "
                         "serve_load)")
    args = ap.parse_args()
    quick = args.quick
    args.clients = args.clients if args.clients is not None else (10 if quick else 100)
    args.rates = args.rates or ("1000" if quick else "1000,10000")
    args.seconds = args.seconds if args.seconds is not None else (20 if quick else 300)
    args.name = args.name or ("serve_load_quick" if quick else "serve_load")
    args.server_conf = args.server_conf if args.server_conf is not None else ["spark.driver.memory=4g"]
    if quick:
        args.warmup = min(args.warmup, 10)
    names = [q for q in args.queries.split(",") if q]
    unknown = [q for q in names if q not in QUERIES]
    if unknown:
        ap.error(f"unknown queries {unknown} ({', '.join(QUERIES)})")
    rates = [int(float(r)) for r in args.rates.split(",") if r]
    if args.clients < 1 or not rates or args.seconds < 2:
        ap.error("at least one client, one rate and 2 seconds")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    report = _results.Report(args.name, enabled=not (args.no_results or quick))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    cases: list = []
    failed: list = []
    works: dict = {}
    try:
        for rate in rates:
            work = Path(tempfile.mkdtemp(prefix="rspark-serve-load-", dir=args.tmp))
            works[rate] = work
            print(f"rate {rate:,} triples/s: {args.clients} SSE clients on {', '.join(names)}, {args.seconds:g} s",
                  flush=True)
            t = time.perf_counter()
            try:
                res = run_case(rate, names, args, work)
            except Exception as exc:  # noqa: BLE001 - a failed case is a result: recorded, the others go on
                msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:400]
                failed.append(f"{rate:,}: {msg}")
                cases.append({"rate": rate, "error": msg})
                print(f"  FAILED: {msg}", flush=True)
                continue
            res["case_s"] = time.perf_counter() - t
            res["mem"] = memory_summary(res, args)
            cases.append(res)
            print(f"  done in {res['case_s']:.0f} s (catch-up {res['catch_up_s']:.1f} s, server exit "
                  f"{res['server_exit']})", flush=True)

        # the baseline: one SparkSession in this process, once the servers are gone
        startup = None
        if not args.no_replay and any("error" not in c for c in cases):
            from rspark.spark.session import get_session

            start = time.perf_counter()
            spark = get_session(None, harness.spark_settings(args.conf, **{"spark.driver.memory": "4g"}))
            spark.range(1).count()
            startup = time.perf_counter() - start
            for res in cases:
                if "error" in res:
                    continue
                try:
                    res.update(run_replay(spark, names, works[res["rate"]] / "stream.nq", res["file_triples"]))
                    print(f"  replay of {res['rate']:,}: {res['replay_s']:.1f} s", flush=True)
                except Exception as exc:  # noqa: BLE001 - reported
                    res["replay_error"] = f"{type(exc).__name__}: {exc}"[:400]
                    failed.append(f"replay of {res['rate']:,}: {res['replay_error']}")
    finally:
        for work in works.values():
            shutil.rmtree(work, ignore_errors=True)

    rows = []
    report.print(HEADER)
    report.print("|" + "---|" * (HEADER.count("|") - 1))
    for res in cases:
        if "error" in res:
            report.print(f"| {res['rate']:,} | FAILED: {res['error']} |")
            continue
        for name in names:
            records = res.get("replay_records")
            base = records.get(name) if records else None
            q = analyse(res, name, sorted(base) if base is not None else None, records, args)
            res.setdefault("per_query", {})[name] = q
            rows.append((res, q))
            report.print(table_row(res, q))

    report.print()
    warm = (f"warmed up by {args.warmup:g} s of the same pushing on a stream and queries of their own (deleted "
            "before the case), " if args.warmup > 0 else "")
    report.print(f"Each rate: a fresh `rspark serve` ({' '.join('--conf ' + c for c in args.server_conf)}), "
                 f"{warm}{args.clients} SSE clients per query connected before the first push, {args.seconds:g} s of "
                 f"pushing (one POST of N-Quads every {args.chunk_ms} ms, {TRIPLES_PER_ELEMENT} triples per element, "
                 f"its timestamp included; {args.sensors} sensors), then one element 1 ms after the last. Queries "
                 f"over a tumbling 1-s window [RANGE {RANGE_MS} SLIDE {RANGE_MS}] (one record per second of stream). "
                 "Events per client: the SSE `result` events each client got (min-max over the clients) / the "
                 "instants expected (the replay's); lost: expected instants the server reported that a client "
                 "lacks, summed over the clients; duplicated: ids a client got more than once, summed; clients "
                 "differing: clients whose list of ids differs from the first client's / events whose data differs "
                 "from the first client's event of the same id. Latency: a client's read of the event - the return "
                 "of the POST holding the last element stamped at or before the instant, over every client's "
                 + (f"events after the first {args.skip:g} s of stream" if args.skip else "events")
                 + "; server p50 / p99: the service's own figure "
                 "(a micro-batch's arrival to its records). Lag: wall s - the last instant reported (GET /queries, "
                 "every second while pushing); kept up: the last third's mean lag not above the first's by more "
                 "than max(1 s, 50 %) and the last instant reported within the drain timeout "
                 f"({args.drain_timeout:g} s); catch-up: the final push to the last instant reported. POST s: a "
                 f"push's round trip. RSS (from /proc, every {args.sample_s:g} s from the first push to the end): "
                 "the server's Python process, its Spark JVM, the whole tree (PySpark workers included); load: the "
                 "machine's 1-min load average (every process, this one included), mean of the samples; JVM "
                 "heap after full GC: the heap the JVM still uses after `jcmd PID GC.run`, every "
                 f"{args.heap_s:g} s while pushing: the least sample and the mean of the first and of the last "
                 "third of the samples, and the greatest (what is live after a GC is the retained heap plus the "
                 "memory pages of the tasks running at that moment, hash aggregates and sorters, freed when they "
                 "end: the least sample of a stretch bounds what was retained during it; RSS follows the heap the "
                 "JVM has committed, which grows within -Xmx and is not given back); memory flat: the server "
                 "process's last RSS sample not above its first, and the JVM heap's least sample of the last third "
                 "not above the least of the first third, by more than "
                 f"max({args.flat_mb:g} MB, {args.flat_pct:g} %). Replay: "
                 "the same elements from one N-Quads file, loaded and replayed in "
                 "this process (after the live cases); agrees: the first client's records against the replay's "
                 "(same instants; the same head and bindings at each, in any order).")
    report.print()
    starts = [f"{r['rate']:,}: server answered in {r['server_start_s']:.1f} s, {r['clients'] * len(names)} "
              f"clients connected in {r['connect_s']:.1f} s, "
              + (f"warm-up {r['warmup_s']:.0f} s ({'caught up' if r['warmup_caught_up'] else 'NOT caught up'}), "
                 if "warmup_s" in r else "")
              + f"exit status {r['server_exit']} after SIGTERM "
              f"({r['server_stop_s']:.1f} s), {r['server_log_problem_lines']} error lines in its log, "
              f"{len(r['push_errors'])} refused pushes; HTTP requests {r['metrics'].get('rspark_http_requests_total')}"
              f", refused {r['metrics'].get('rspark_http_refused_total')}"
              for r in cases if "error" not in r]
    spark_start = f" Replay's Spark start: {startup:.1f} s." if startup else ""
    report.print("Servers: " + "; ".join(starts) + "." + spark_start)
    verdicts = []
    for res, q in rows:
        ok_events = q["lost"] == 0 and q["duplicated"] == 0 and q["lists_differ"] == 0 and q["data_differ"] == 0
        flat = bool(res["mem"]["server"].get("flat") and res["mem"]["heap"].get("flat"))
        events = "no event lost or duplicated" if ok_events else "EVENTS LOST OR DUPLICATED"
        if q["unreported"]:
            events += f" ({q['unreported']} instants not reported within the drain timeout)"
        verdicts.append(f"{q['query']} at {res['rate']:,}: p50 {fmt(q['latency_p50_s'])} s, p99 "
                        f"{fmt(q['latency_p99_s'])} s; {events}; memory {'flat' if flat else 'NOT flat'}; "
                        f"{'kept up' if q['kept_up'] else 'did NOT keep up'}")
    report.print()
    report.print("Acceptance (100 SSE clients, 1k and 10k triples/s for 5 minutes: p50 / p99 from push to SSE "
                 "delivery, no event lost or duplicated on any client, server memory flat): "
                 + ("; ".join(verdicts) + "." if verdicts else "no case ran."))
    if failed:
        report.print()
        report.print("FAILED: " + "; ".join(failed))

    dump = []
    for res in cases:
        d = {k: v for k, v in res.items() if k not in ("clients_obj", "replay_records")}
        if "replay_records" in res:
            d["replay_instants"] = {n: len(v) for n, v in res["replay_records"].items()}
        dump.append(d)
    (out_dir / f"{args.name}.json").write_text(json.dumps({"args": vars(args), "cases": dump}, indent=1,
                                                          default=str))
    print(f"json: {out_dir / (args.name + '.json')}", flush=True)
    png = plot(rows, cases, out_dir / f"{args.name}.png")
    if png:
        report.plot(png)
    report.write()
    if failed:
        raise SystemExit(1)


def plot(rows, cases, path: Path) -> Path | None:
    if not rows:
        return None
    latency, lag, memory = [], [], []
    for i, (res, q) in enumerate(rows):
        color, label = f"C{i}", f"{res['rate']:,}/s {q['query']}"
        pts = [(int(t) / 1000, v) for t, v in q["by_instant"].items()]
        if pts:
            latency.append(harness.Line([t for t, _ in pts], [v["p50"] for _, v in pts], "-",
                                        f"{label} (clients: median, min-max band)", color, width=1,
                                        band=([v["min"] for _, v in pts], [v["max"] for _, v in pts])))
        if q["lags"]:
            lag.append(harness.Line([t for t, _ in q["lags"]], [v for _, v in q["lags"]], "-", label, color, width=1))
    for i, res in enumerate(c for c in cases if "error" not in c):
        for key, style in (("server", "-"), ("jvm", "--"), ("tree", ":")):
            pts = res["mem"][key]["samples"]
            if pts:
                memory.append(harness.Line([t for t, _ in pts], [v for _, v in pts], style, f"{res['rate']:,}/s {key}",
                                           f"C{i}", width=1))
    return harness.plot(path, [harness.Panel(latency, "instant (s of stream)", "latency s (push -> SSE event)"),
                               harness.Panel(lag, "s since the first push", "lag s (wall - last instant reported)"),
                               harness.Panel(memory, "s since the first push", "RSS MB", legend=6)], (15, 4.2))


if __name__ == "__main__":
    main()
