"""Replay throughput: continuous queries over a generated CityBench-like sensor stream, rspark vs a per-window
pyoxigraph baseline, at growing stream lengths and two window overlaps.

The stream: N sensors of four kinds (traffic, pollution, weather, parking), each element one SSN/SOSA observation
(5 triples: type, sensor, property, value, time) stamped with prov:generatedAtTime (numeric, milliseconds); a static
graph describes the sensors (kind, location). Sizes are total stream triples (default 1e5, 1e6, 1e7).

Queries (RANGE 10 s; SLIDE 10 s = overlap 1x, SLIDE 1 s = overlap 10x):
  filter     observations with a value above 95 in the window
  aggregate  average value per sensor in the window
  join       traffic and weather observations of sensors at the same location (two windows + static graph)
  istream    ISTREAM of the sensors whose value crosses 95 (new since the previous instant)

The streams are N-Quads by default (``--format trig`` writes TriG: a TriG file parses in one task, N-Quads in
parallel tasks). rspark runs ``Engine.replay_iter`` end to end: loading the static graph and the streams included,
the records consumed as they stream (as `rspark replay` writes them); the process's one-time start (the Spark JVM,
a first job, the first Python workers) is measured and reported apart. The baseline, in the same run, loads each
evaluation instant's window snapshot (plus the static graph) into a fresh pyoxigraph store and runs the same query
as plain SPARQL (its stream parse is not timed). Each system runs in its own subprocess so its peak memory
(ru_maxrss) is its own; rspark's figure is the Python driver (the data lives in the Spark JVM), and the JVM's heap
use at the end is reported beside it. Prints a table and saves a PNG.

    python benchmarks/replay_throughput.py [--sizes 1e5,1e6,1e7] [--sensors 200] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

EX = "http://citybench.example.org/"
SSN = "http://www.w3.org/ns/sosa/"
KINDS = ["traffic", "pollution", "weather", "parking"]
RANGE_MS = 10_000
SLIDES = {"1x": 10_000, "10x": 1_000}
TRIPLES_PER_OBS = 5

PREFIXES = f"PREFIX : <{EX}> PREFIX sosa: <{SSN}> "
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
PROV = "http://www.w3.org/ns/prov#"


def queries(slide: int) -> dict[str, str]:
    w = f"[RANGE {RANGE_MS} SLIDE {slide}]"
    return {
        "filter": PREFIXES + f"SELECT ?obs ?v FROM NAMED WINDOW :w ON :traffic {w} "
                             "WHERE { WINDOW :w { ?obs sosa:hasSimpleResult ?v FILTER(?v > 95) } }",
        "aggregate": PREFIXES + f"SELECT ?s (AVG(?v) AS ?avg) FROM NAMED WINDOW :w ON :traffic {w} "
                                "WHERE { WINDOW :w { ?o sosa:madeBySensor ?s ; sosa:hasSimpleResult ?v } } GROUP BY ?s",
        "join": PREFIXES + f"SELECT ?t ?m ?loc FROM NAMED WINDOW :w1 ON :traffic {w} FROM NAMED WINDOW :w2 ON :weather {w} "
                           "WHERE { WINDOW :w1 { ?o1 sosa:madeBySensor ?t ; sosa:hasSimpleResult ?v1 FILTER(?v1 > 90) } "
                           "WINDOW :w2 { ?o2 sosa:madeBySensor ?m ; sosa:hasSimpleResult ?v2 FILTER(?v2 > 90) } "
                           "?t :locatedAt ?loc . ?m :locatedAt ?loc }",
        "istream": PREFIXES + f"SELECT ISTREAM ?s FROM NAMED WINDOW :w ON :traffic {w} "
                              "WHERE { WINDOW :w { ?o sosa:madeBySensor ?s ; sosa:hasSimpleResult ?v FILTER(?v > 95) } }",
    }


def plain_sparql(q: str) -> str:
    """The query over one snapshot: window declarations and WINDOW blocks dropped (the baseline's SPARQL)."""
    import re

    q = re.sub(r"FROM NAMED WINDOW :\w+ ON :\w+ \[[^\]]*\] ", "", q)
    q = q.replace("SELECT ISTREAM", "SELECT")
    return re.sub(r"WINDOW :\w+ \{", "{", q)


def generate(out_dir: Path, triples: int, sensors: int, rate: int, fmt: str = "nq", seed: int = 11) -> dict:
    """Write the traffic and weather streams (half the triples each; N-Quads, or TriG with ``fmt="trig"``) and
    sensors.ttl; return their paths. ``rate``: observations per second in each stream (200: 1e6 triples last
    about 7 minutes of stream time)."""
    rnd = random.Random(seed)
    paths = {"traffic": out_dir / f"traffic-{triples}-{rate}.{fmt}", "weather": out_dir / f"weather-{triples}-{rate}.{fmt}",
             "static": out_dir / f"sensors-{sensors}.ttl"}
    obs_per_stream = triples // (2 * (TRIPLES_PER_OBS + 1))
    if not paths["static"].exists():
        with paths["static"].open("w") as f:
            for kind in KINDS:
                for i in range(sensors):
                    f.write(f"<{EX}{kind}{i}> a <{EX}{kind.capitalize()}Sensor> ; <{EX}locatedAt> <{EX}loc{i % 50}> .\n")
    integer = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    for stream in ("traffic", "weather"):
        if paths[stream].exists():
            continue
        with paths[stream].open("w") as f:
            if fmt == "trig":
                f.write(f"@prefix sosa: <{SSN}> . @prefix prov: <http://www.w3.org/ns/prov#> .\n")
            for n in range(obs_per_stream):
                g = f"<{EX}{stream}/obs{n}>"
                sensor, value, t = f"<{EX}{stream}{rnd.randrange(sensors)}>", rnd.randrange(100), n * 1000 // rate
                if fmt == "trig":
                    f.write(f"{g} {{ {g} a sosa:Observation ; sosa:madeBySensor {sensor} ; "
                            f"sosa:observedProperty <{EX}{stream}Level> ; sosa:hasSimpleResult {value} ; "
                            f"sosa:resultTime {t} . }}\n{g} prov:generatedAtTime {t} .\n")
                else:
                    f.write(f"{g} <{RDF_TYPE}> <{SSN}Observation> {g} .\n"
                            f"{g} <{SSN}madeBySensor> {sensor} {g} .\n"
                            f"{g} <{SSN}observedProperty> <{EX}{stream}Level> {g} .\n"
                            f'{g} <{SSN}hasSimpleResult> "{value}"{integer} {g} .\n'
                            f'{g} <{SSN}resultTime> "{t}"{integer} {g} .\n'
                            f'{g} <{PROV}generatedAtTime> "{t}"{integer} .\n')
    return {k: str(v) for k, v in paths.items()}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker_rspark(paths: dict, overlap: str, names: list[str], conf: list[str] = ()) -> dict:
    import os

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark.engine.engine import Engine

    out: dict = {"times": {}, "outputs": {}}
    start = time.perf_counter()
    settings = {"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"}
    settings.update(item.split("=", 1) for item in conf)  # --conf KEY=VALUE, e.g. to compare JVM options
    with Engine(conf=settings) as engine:
        # a one-time cost of the process, reported apart: the JVM, a first job, and the Python workers that
        # parse RDF (started, with rspark's parsing module and pyoxigraph imported)
        engine.spark.range(1).count()

        def warm(batches):
            import rspark.io.rdf  # noqa: F401

            yield from batches

        engine.spark.range(0, 4, 1, 2).mapInArrow(warm, "id long").count()
        out["startup_s"] = time.perf_counter() - start
        start = time.perf_counter()
        engine.load(paths["static"])
        engine.add_streams({EX + "traffic": paths["traffic"], EX + "weather": paths["weather"]})  # as `rspark replay`
        out["load_s"] = time.perf_counter() - start
        for name in names:
            q = queries(SLIDES[overlap])[name]
            t = time.perf_counter()
            # consumed as they stream, as `rspark replay` writes them: the driver does not hold the whole replay
            counts = [len(r.rows) for r in engine.replay_iter(q)]
            out["times"][name] = time.perf_counter() - t
            out["outputs"][name] = counts
        jvm = engine.spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
        out["jvm_used_mb"] = (jvm.totalMemory() - jvm.freeMemory()) / 2**20
    out["rss_mb"] = _rss_mb()
    return out


def worker_oxigraph(paths: dict, overlap: str, names: list[str], max_instants: int) -> dict:
    """Per instant: the window snapshot into a fresh store, then the query. Times are extrapolated from the first
    ``max_instants`` instants when there are more (stated in the output)."""
    import pyoxigraph as ox

    slide = SLIDES[overlap]
    streams = {}
    for stream in ("traffic", "weather"):
        elems: dict = {}
        stamps = {}
        fmt = ox.RdfFormat.TRIG if paths[stream].endswith(".trig") else ox.RdfFormat.N_QUADS
        for q in ox.parse(path=paths[stream], format=fmt):
            if isinstance(q.graph_name, ox.DefaultGraph):
                stamps[q.subject] = int(q.object.value)
            else:
                elems.setdefault(q.graph_name, []).append(ox.Triple(q.subject, q.predicate, q.object))
        streams[stream] = sorted(((stamps[g], triples) for g, triples in elems.items()), key=lambda e: e[0])
    static = list(ox.parse(path=paths["static"], format=ox.RdfFormat.TURTLE))
    last = max(streams["traffic"][-1][0], streams["weather"][-1][0])
    first = min(streams["traffic"][0][0], streams["weather"][0][0])
    instants = list(range((first // slide) * slide, last + 1, slide))
    out: dict = {"times": {}, "instants": len(instants), "measured_instants": min(len(instants), max_instants)}
    import bisect

    for name in names:
        q = plain_sparql(queries(slide)[name])
        used = ["traffic", "weather"] if name == "join" else ["traffic"]
        t = time.perf_counter()
        for inst in instants[:max_instants]:
            store = ox.Store()
            store.extend(static)
            for stream in used:
                elems = streams[stream]
                keys = [ts for ts, _ in elems]
                lo = bisect.bisect_right(keys, inst - RANGE_MS)
                hi = bisect.bisect_right(keys, inst)
                for _, triples in elems[lo:hi]:
                    store.extend(ox.Quad(tr.subject, tr.predicate, tr.object) for tr in triples)
            list(store.query(q))
        spent = time.perf_counter() - t
        out["times"][name] = spent * len(instants) / max(1, min(len(instants), max_instants))
    out["rss_mb"] = _rss_mb()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--sensors", type=int, default=200)
    ap.add_argument("--rate", type=int, default=200, help="observations per second in each stream")
    ap.add_argument("--queries", default="filter,aggregate,join,istream")
    ap.add_argument("--overlaps", default="1x,10x")
    ap.add_argument("--format", choices=["nq", "trig"], default="nq",
                    help="stream file format (N-Quads parse in parallel tasks; a TriG file in one task)")
    ap.add_argument("--baseline-instants", type=int, default=200,
                    help="pyoxigraph: instants actually run per query (the rest extrapolated)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out"))
    ap.add_argument("--name", default="replay_throughput", help="name of the JSON and PNG files written")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for rspark's session (repeatable)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--paths", help=argparse.SUPPRESS)
    ap.add_argument("--overlap", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.queries.split(",")
    if args.worker:
        paths = json.loads(args.paths)
        if args.worker == "rspark":
            print(json.dumps(worker_rspark(paths, args.overlap, names, args.conf)))
        else:
            print(json.dumps(worker_oxigraph(paths, args.overlap, names, args.baseline_instants)))
        return
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    print("| triples | overlap | instants | query | rspark s (load + replay) | rspark triples/s | pyoxigraph-per-window s |"
          " speed-up | rspark driver RSS MB | JVM heap used MB | pyoxigraph RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for size in [int(float(s)) for s in args.sizes.split(",")]:
        paths = generate(out_dir, size, args.sensors, args.rate, args.format)
        for overlap in args.overlaps.split(","):
            res = {}
            for worker in ("rspark", "oxigraph"):
                cmd = [sys.executable, __file__, "--worker", worker, "--paths", json.dumps(paths), "--overlap",
                       overlap, "--queries", args.queries, "--baseline-instants", str(args.baseline_instants)]
                cmd += [f"--conf={item}" for item in args.conf]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise SystemExit(f"{worker} failed at {size}/{overlap}:\n{proc.stderr[-3000:]}")
                res[worker] = json.loads(proc.stdout.strip().splitlines()[-1])
            rs, ox_ = res["rspark"], res["oxigraph"]
            for name in names:
                total = rs["load_s"] + rs["times"][name]  # end to end: each query pays the load
                tps = size / total
                speed = ox_["times"][name] / total
                print(f"| {size:,} | {overlap} | {ox_['instants']} | {name} | {total:.1f} ({rs['load_s']:.1f} + "
                      f"{rs['times'][name]:.1f}) | {tps:,.0f} | {ox_['times'][name]:.1f} | "
                      f"{speed:.1f}x | {rs['rss_mb']:.0f} | {rs['jvm_used_mb']:.0f} | {ox_['rss_mb']:.0f} |",
                      flush=True)
                rows.append({"size": size, "overlap": overlap, "query": name, "rspark_s": total,
                             "load_s": rs["load_s"], "startup_s": rs["startup_s"],
                             "triples_per_s": tps, "baseline_s": ox_["times"][name], "speedup": speed,
                             "rss_mb": rs["rss_mb"], "jvm_mb": rs["jvm_used_mb"], "baseline_rss_mb": ox_["rss_mb"],
                             "baseline_instants": ox_["instants"], "baseline_measured": ox_["measured_instants"]})
    (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    plot(rows, out_dir / f"{args.name}.png")


def plot(rows, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in sorted({(r["query"], r["overlap"]) for r in rows}):
        pts = [r for r in rows if (r["query"], r["overlap"]) == key]
        ax.plot([r["size"] for r in pts], [r["triples_per_s"] for r in pts], "o-", label=f"{key[0]} {key[1]}")
    ax.set_xscale("log")
    ax.set_xlabel("stream triples")
    ax.set_ylabel("rspark stream triples / s (end to end)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
