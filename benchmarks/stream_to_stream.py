"""Stream-to-stream filter: a query over a stream read with no window (each element alone, at its timestamp)
against the same filter through a [RANGE 1 SLIDE 1] window, over one CityBench-like traffic stream with one
element per millisecond.

The stream: N observations (one named graph each, 5 triples, numeric millisecond timestamps, one element per tick:
``--rate 1000``) from ``workloads/citybench.py``. The queries select the observations with a value above 95:

  s2s     FROM NAMED WINDOW :w ON :traffic              (no window: each element alone, reported once, RSTREAM;
                                                         an element with no result gives no record)
  window  FROM NAMED WINDOW :w ON :traffic [RANGE 1 SLIDE 1]  (the baseline, in the same process: the default
                                                         profile's window closing at every tick holds the element
                                                         stamped then; a record at every tick, empty ones too)

Both run through ``Engine.replay_iter`` end to end after one shared load of the stream (timed apart), records
consumed as they stream, each after an untimed replay of the stream's first second (so that neither pays the
process's first compilations for the other). The two give the same rows: the script checks that the multiset of
(instant, observation, value) rows is equal and fails otherwise. Prints a table, writes it to
benchmarks/RESULTS.md (``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/stream_to_stream.py [--elements 1e5,1e6] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from workloads.citybench import EX, PREFIXES, TRIPLES_PER_OBS, generate

WARM_UNTIL = 1000  # ms: the stream starts at 0
FILTER = "WHERE { WINDOW :w { ?obs sosa:hasSimpleResult ?v FILTER(?v > 95) } }"
QUERIES = {
    "s2s": PREFIXES + "SELECT ?obs ?v FROM NAMED WINDOW :w ON :traffic " + FILTER,
    "window": PREFIXES + "SELECT ?obs ?v FROM NAMED WINDOW :w ON :traffic [RANGE 1 SLIDE 1] " + FILTER,
}


def worker_rspark(path: str, conf: list[str]) -> dict:
    import os

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark import Engine

    out: dict = {"times": {}, "records": {}, "rows": {}, "digest": {}}
    start = time.perf_counter()
    settings = harness.spark_settings(conf, **{"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"})
    with Engine(conf=settings) as engine:
        harness.start_spark(engine.spark)
        out["startup_s"] = time.perf_counter() - start
        start = time.perf_counter()
        engine.add_stream(EX + "traffic", path)
        out["load_s"] = time.perf_counter() - start
        for q in QUERIES.values():  # the first second of stream time, untimed: Spark's code paths warm for both
            list(engine.replay_iter(q, until=WARM_UNTIL))
        for name, q in QUERIES.items():
            records = rows = 0
            digest = 0
            t = time.perf_counter()
            for r in engine.replay_iter(q):
                records += 1
                rows += len(r.rows)
                for row in r.rows:  # an order-free digest of the (instant, obs, value) rows
                    key = f"{r.ticks} {row['obs'].value} {row['v'].lexical}".encode()
                    digest ^= int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
            out["times"][name] = time.perf_counter() - t
            out["records"][name], out["rows"][name], out["digest"][name] = records, rows, f"{digest:016x}"
        out["jvm_used_mb"] = harness.jvm_heap_mb(engine.spark)
    out["rss_mb"] = harness.peak_rss_mb()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", default="1e5,1e6", help="stream elements (observations), comma-separated")
    ap.add_argument("--rate", type=int, default=1000, help="elements per second of stream time (1000: one a tick)")
    ap.add_argument("--sensors", type=int, default=200)
    harness.common_arguments(ap, "stream_to_stream", worker=["rspark"])
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        harness.worker_result(worker_rspark(args.path, args.conf))
        return
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    report.print("| elements | query | records | rows | replay s | elements/s | window / s2s | load s (shared) "
                 "| rows agree | driver RSS MB | JVM heap used MB |")
    report.print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows, notes, disagree = [], [], []
    for n in [int(float(s)) for s in args.elements.split(",")]:
        # generate() writes two streams of half the triples each, (TRIPLES_PER_OBS + 1) quads an observation
        paths = generate(out_dir, 2 * n * (TRIPLES_PER_OBS + 1), args.sensors, args.rate)
        res = harness.run_worker(__file__, ["--worker", "rspark", "--path", paths["traffic"],
                                            *(f"--conf={item}" for item in args.conf)])
        notes.append(f"{res['startup_s']:.1f} s ({n:,})")
        agree = res["digest"]["s2s"] == res["digest"]["window"] and res["rows"]["s2s"] == res["rows"]["window"]
        if not agree:
            disagree.append(f"{n:,}")
        for name in QUERIES:
            s = res["times"][name]
            ratio = res["times"]["window"] / res["times"]["s2s"]
            rows.append({"elements": n, "query": name, "replay_s": s, "load_s": res["load_s"],
                         "records": res["records"][name], "rows": res["rows"][name], "elements_per_s": n / s,
                         "window_over_s2s": ratio, "agree": agree, "rss_mb": res["rss_mb"],
                         "jvm_mb": res["jvm_used_mb"], "startup_s": res["startup_s"]})
            report.print(f"| {n:,} | {name} | {res['records'][name]:,} | {res['rows'][name]:,} | {s:.1f} | "
                         f"{n / s:,.0f} | {ratio:.2f}x | {res['load_s']:.1f} | {'yes' if agree else 'NO'} | "
                         f"{res['rss_mb']:.0f} | {harness.fmt(res['jvm_used_mb'], '.0f')} |")
    report.print()
    report.print("window / s2s: the windowed query's replay time over the stream-to-stream query's (above 1: the "
                 "query with no window is faster). Both replays follow one load of the stream (its time apart); "
                 "rspark's one-time start of the process, not in the times: " + ", ".join(notes) + ".")
    if disagree:
        report.print()
        report.print("ROWS DIFFER at " + ", ".join(disagree) + " elements")
    (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    lines = [harness.Line([r["elements"] for r in rows if r["query"] == q],
                          [r["elements_per_s"] for r in rows if r["query"] == q], label=q) for q in QUERIES]
    png = harness.plot(out_dir / f"{args.name}.png",
                       [harness.Panel(lines, "stream elements", "elements / s (replay, after the load)", xlog=True)],
                       (6, 4))
    if png:
        report.plot(png)
    report.write()
    if disagree:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
