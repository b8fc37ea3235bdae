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
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from serve.analysis import memory_summary
from serve.driver import run_case
from serve.replay import replay_cases
from serve.report import acceptance, method, plot, servers, table
from workloads.sensors import QUERIES


def parser() -> argparse.ArgumentParser:
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
    return ap


def settle(ap: argparse.ArgumentParser, args) -> tuple[list[str], list[int]]:
    """The defaults that depend on ``--quick``, filled into ``args``; the queries and the rates, checked."""
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
    return names, rates


def run_cases(rates: list[int], names: list[str], args, works: dict, cases: list, failed: list) -> None:
    """Each rate on a fresh server (:func:`serve.driver.run_case`), in a folder of its own (``works``); a failed
    case is recorded in ``cases`` and ``failed`` and the others go on."""
    if args.tmp:  # a folder named on the command line is made when missing
        Path(args.tmp).mkdir(parents=True, exist_ok=True)
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


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    names, rates = settle(ap, args)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    report = _results.Report(args.name, enabled=not (args.no_results or args.quick))
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    cases: list = []
    failed: list = []
    works: dict = {}
    try:
        run_cases(rates, names, args, works, cases, failed)
        # the baseline: one SparkSession in this process, once the servers are gone
        startup = replay_cases(cases, names, works, args, failed)
    finally:
        for work in works.values():
            shutil.rmtree(work, ignore_errors=True)

    rows = table(report, cases, names, args)
    method(report, args)
    servers(report, cases, names, startup)
    acceptance(report, rows, failed)

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


if __name__ == "__main__":
    main()
