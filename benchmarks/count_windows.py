"""Count windows: what counting BGP matches costs, against the element-count window it refines.

On the CityBench-like traffic stream of ``workloads/citybench.py`` (one SOSA observation of 5 triples per element),
``[RANGE ELEMENTS n]`` and ``[RANGE BGP n]`` over ``?o sosa:madeBySensor ?s ; sosa:hasSimpleResult ?v`` hold the same
observations (each element completes exactly one match), so both replays give the same answers and the ratio is
the price of the BGP window's extra work (matching over the whole stream, ranking the matches, instantiating
them). Queries: the average per sensor over the last n, and the observations above 95 among the last n,
evaluated at every 100th element (``--times``; the count windows' own policy evaluates at every element). Each
size runs in one process, after one untimed replay of each kind; the stream's load is timed apart. Prints a table,
writes it to benchmarks/RESULTS.md (its section, see ``_results.py``; ``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/count_windows.py [--sizes 1e5,1e6] [--n 100] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from workloads.citybench import EX, PREFIXES, PROV, generate

BLOCK = "?o sosa:madeBySensor ?s ; sosa:hasSimpleResult ?v"
QUERIES = {
    "aggregate": "SELECT ?s (AVG(?v) AS ?avg) FROM NAMED WINDOW :w ON :traffic {w} WHERE {{ WINDOW :w {{ " + BLOCK +
                 " }} }} GROUP BY ?s",
    "filter": "SELECT ?o ?v FROM NAMED WINDOW :w ON :traffic {w} WHERE {{ WINDOW :w {{ " + BLOCK +
              " FILTER(?v > 95) }} }}",
}


def timestamps(path: str) -> list[int]:
    """The distinct element timestamps of a generated N-Quads stream (its prov:generatedAtTime lines), sorted."""
    marker = f"<{PROV}generatedAtTime> \""
    stamps = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            at = line.find(marker)
            if at >= 0:
                stamps.add(int(line[at + len(marker):line.index('"', at + len(marker))]))
    return sorted(stamps)


def run(size: int, n: int, out_dir: Path, conf: list[str]) -> list[dict]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark import Engine

    paths = generate(out_dir, size, 200, 200)
    rows = []
    settings = harness.spark_settings(conf, **{"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"})
    with Engine(conf=settings) as engine:
        engine.spark.range(1).count()
        t = time.perf_counter()
        engine.add_stream(EX + "traffic", paths["traffic"])
        load = time.perf_counter() - t
        ticks = timestamps(paths["traffic"])[::100]
        # one untimed replay of each kind first: the first replay of a process pays for JIT and Python workers
        for unit in ("ELEMENTS", "BGP"):
            list(engine.replay_iter(PREFIXES + QUERIES["filter"].format(w=f"[RANGE {unit} {n}]"), times=ticks[:2]))
        for name, template in QUERIES.items():
            result = {}
            for unit in ("ELEMENTS", "BGP"):
                q = PREFIXES + template.format(w=f"[RANGE {unit} {n}]")
                t = time.perf_counter()
                records = [sorted(map(repr, r.rows)) for r in engine.replay_iter(q, times=ticks)]
                result[unit] = (time.perf_counter() - t, records)
            same = result["ELEMENTS"][1] == result["BGP"][1]
            rows.append({"size": size, "query": name, "instants": len(ticks), "load_s": round(load, 2),
                         "elements_s": round(result["ELEMENTS"][0], 2), "bgp_s": round(result["BGP"][0], 2),
                         "ratio": round(result["BGP"][0] / result["ELEMENTS"][0], 2), "same_answers": same})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6")
    ap.add_argument("--n", type=int, default=100)
    harness.common_arguments(ap, "count_windows")
    args = ap.parse_args()
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in [int(float(s)) for s in args.sizes.split(",")]:
        rows += run(size, args.n, out_dir, args.conf)
    report.print(f"| stream triples | query | instants | load s | [RANGE ELEMENTS {args.n}] s | [RANGE BGP {args.n}] s "
                 "| BGP / ELEMENTS | same answers |")
    report.print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        report.print(f"| {r['size']:,} | {r['query']} | {r['instants']} | {r['load_s']} | {r['elements_s']} "
                     f"| {r['bgp_s']} | {r['ratio']}x | {'yes' if r['same_answers'] else 'NO'} |")
    (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    png = plot(rows, out_dir / f"{args.name}.png")
    if png:
        report.plot(png)
    report.write()


def plot(rows: list[dict], path: Path) -> Path | None:
    lines = []
    for name in QUERIES:
        pts = [r for r in rows if r["query"] == name]
        sizes = [r["size"] for r in pts]
        lines += [harness.Line(sizes, [r["elements_s"] for r in pts], "o--", label=f"{name} ELEMENTS"),
                  harness.Line(sizes, [r["bgp_s"] for r in pts], "o-", label=f"{name} BGP")]
    return harness.plot(path, [harness.Panel(lines, "stream triples", "replay seconds", xlog=True)], (6, 3.5))


if __name__ == "__main__":
    main()
