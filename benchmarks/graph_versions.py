"""Background graphs that change over time: the cost of reading a static graph in versions (each valid from an
instant) against the same graph loaded once, over one CityBench-like traffic stream.

The stream: N observations (one named graph each, 5 triples, numeric millisecond timestamps, ``--rate`` a second)
from ``workloads/citybench.py``; the graph: its sensors and their locations (800 triples). The query counts the
observations of each location in a 10 s window sliding by 5 s:

  static       the sensors graph loaded once (the baseline, in the same process)
  versions-2   the same graph in 2 versions: from the beginning, and from the middle of the stream
  versions-10  the same graph in 10 versions, from the beginning and every tenth of the stream on

The versions hold the same triples, so the three give the same rows: the script checks that the multiset of
(instant, location, count) rows is equal and fails otherwise. Each replay runs through ``Engine.replay_iter`` end to
end after one shared load of the stream (timed apart), after an untimed replay of the stream's first 10 s. Prints a
table, writes it to benchmarks/RESULTS.md (``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/graph_versions.py [--elements 1e5,1e6] [--out benchmarks/out]
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

WARM_UNTIL = 10_000  # ms: the stream starts at 0
QUERY = PREFIXES + (
    "SELECT ?loc (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :traffic [RANGE 10000 STEP 5000] "
    "WHERE { WINDOW :w { ?obs sosa:madeBySensor ?sensor } GRAPH :sensors { ?sensor :locatedAt ?loc } } "
    "GROUP BY ?loc")
VARIANTS = {"static": 1, "versions-2": 2, "versions-10": 10}


def worker_rspark(path: str, static: str, span_ms: int, conf: list[str]) -> dict:
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
        for name, versions in VARIANTS.items():
            engine.drop_graph(EX + "sensors")
            engine.load(static, graph=EX + "sensors")
            for k in range(1, versions):
                engine.load(static, graph=EX + "sensors", valid_from=k * span_ms // versions)
            list(engine.replay_iter(QUERY, until=WARM_UNTIL))  # untimed: Spark's code paths warm for each
            records = rows = 0
            digest = 0
            t = time.perf_counter()
            for r in engine.replay_iter(QUERY):
                records += 1
                rows += len(r.rows)
                for row in r.rows:  # an order-free digest of the (instant, location, count) rows
                    key = f"{r.ticks} {row['loc'].value} {row['n'].lexical}".encode()
                    digest ^= int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
            out["times"][name] = time.perf_counter() - t
            out["records"][name], out["rows"][name], out["digest"][name] = records, rows, f"{digest:016x}"
        out["jvm_used_mb"] = harness.jvm_heap_mb(engine.spark)
    out["rss_mb"] = harness.peak_rss_mb()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", default="1e5,1e6", help="stream elements (observations), comma-separated")
    ap.add_argument("--rate", type=int, default=200, help="elements per second of stream time")
    ap.add_argument("--sensors", type=int, default=200)
    harness.common_arguments(ap, "graph_versions", worker=["rspark"])
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--static", help=argparse.SUPPRESS)
    ap.add_argument("--span", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        harness.worker_result(worker_rspark(args.path, args.static, args.span, args.conf))
        return
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    report.print("| elements | graph | instants | rows | replay s | elements/s | / static | load s (shared) "
                 "| rows agree | driver RSS MB | JVM heap used MB |")
    report.print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows, notes, disagree = [], [], []
    for n in [int(float(s)) for s in args.elements.split(",")]:
        # generate() writes two streams of half the triples each, (TRIPLES_PER_OBS + 1) quads an observation
        paths = generate(out_dir, 2 * n * (TRIPLES_PER_OBS + 1), args.sensors, args.rate)
        span_ms = n * 1000 // args.rate
        res = harness.run_worker(__file__, ["--worker", "rspark", "--path", paths["traffic"], "--static",
                                            paths["static"], "--span", str(span_ms),
                                            *(f"--conf={item}" for item in args.conf)])
        notes.append(f"{res['startup_s']:.1f} s ({n:,})")
        agree = len(set(res["digest"].values())) == 1 and len(set(res["rows"].values())) == 1
        if not agree:
            disagree.append(f"{n:,}")
        for name in VARIANTS:
            s = res["times"][name]
            ratio = s / res["times"]["static"]
            rows.append({"elements": n, "graph": name, "replay_s": s, "load_s": res["load_s"],
                         "records": res["records"][name], "rows": res["rows"][name], "elements_per_s": n / s,
                         "over_static": ratio, "agree": agree, "rss_mb": res["rss_mb"],
                         "jvm_mb": res["jvm_used_mb"], "startup_s": res["startup_s"]})
            report.print(f"| {n:,} | {name} | {res['records'][name]:,} | {res['rows'][name]:,} | {s:.1f} | "
                         f"{n / s:,.0f} | {ratio:.2f}x | {res['load_s']:.1f} | {'yes' if agree else 'NO'} | "
                         f"{res['rss_mb']:.0f} | {harness.fmt(res['jvm_used_mb'], '.0f')} |")
    report.print()
    report.print("/ static: the replay time with the sensors graph in versions over the time with it loaded once "
                 "(above 1: versions cost more). The versions hold the same triples, so the rows must agree. All "
                 "replays follow one load of the stream (its time apart); rspark's one-time start of the process, "
                 "not in the times: " + ", ".join(notes) + ".")
    if disagree:
        report.print()
        report.print("ROWS DIFFER at " + ", ".join(disagree) + " elements")
    (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    lines = [harness.Line([r["elements"] for r in rows if r["graph"] == g],
                          [r["elements_per_s"] for r in rows if r["graph"] == g], label=g) for g in VARIANTS]
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
