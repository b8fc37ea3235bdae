"""SPARQL on Spark at growing data sizes: rspark vs pyoxigraph vs a hand-written PySpark plan (the floor).

A generated "company" dataset (people with name, age, employer, optional email, a knows graph; organisations in a
sub-organisation tree) is written as N-Triples at each size (default 1e5, 1e6 and 1e7 triples). Five queries:

  Q1 selective BGP      the people of one organisation and their names
  Q2 3-way star join    COUNT of (person, name, age, employer)
  Q3 OPTIONAL           COUNT of people with their email when they have one
  Q4 GROUP BY           per organisation: COUNT of people and AVG age
  Q5 property path      COUNT of people working anywhere under one organisation (subOrganizationOf*)

Each system runs in its own subprocess per size, so its peak memory (ru_maxrss of that process: for rspark the Python
driver, the data being in the Spark JVM) is measured apart. rspark and the hand-written plan share one Spark JVM
per size and read the same loaded DataFrame; timings are the median of --repeat runs after one warm-up, rspark and
the hand-written plan measured in turns, and exclude loading (load times are reported separately). rspark is timed
twice: as a session that asks the same query again (``Engine.sparql`` reuses the query's compiled plan, optimised
and run afresh each time), and compiled anew at every run, as the first run of a query is (the query text given a
distinct trailing comment at each run, so that the engine holds no plan for it).
Prints a table with ratios, writes it to benchmarks/RESULTS.md (its section, see ``_results.py``; ``--no-results``
skips it) and saves a PNG.

    python benchmarks/sparql_scaling.py [--sizes 1e5,1e6,1e7] [--repeat 5] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness

EX = "http://bench.example.org/"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
P = f"PREFIX : <{EX}> "

QUERIES = {
    "Q1 selective BGP": P + "SELECT ?p ?n WHERE { ?p :worksFor :org7 . ?p :name ?n }",
    "Q2 star join": P + "SELECT (COUNT(*) AS ?c) WHERE { ?p :name ?n . ?p :age ?a . ?p :worksFor ?o }",
    "Q3 OPTIONAL": P + "SELECT (COUNT(*) AS ?c) WHERE { ?p :name ?n OPTIONAL { ?p :email ?e } }",
    "Q4 GROUP BY": P + "SELECT ?o (COUNT(?p) AS ?n) (AVG(?a) AS ?avg) WHERE { ?p :worksFor ?o . ?p :age ?a } "
                       "GROUP BY ?o",
    "Q5 path": P + "SELECT (COUNT(*) AS ?c) WHERE { ?p :worksFor ?o . ?o :subOrganizationOf* :org1 }",
}


def generate(path: Path, triples: int, seed: int = 7) -> int:
    """Write about ``triples`` N-Triples lines; returns the exact count."""
    rnd = random.Random(seed)
    people = max(10, triples // 6)  # ~6 triples per person
    orgs = max(20, people // 500)
    n = 0
    with path.open("w", encoding="utf-8") as out:
        for o in range(1, orgs):
            out.write(f"<{EX}org{o}> <{EX}subOrganizationOf> <{EX}org{(o - 1) // 4}> .\n")
            n += 1
        for i in range(people):
            p = f"<{EX}person{i}>"
            out.write(f'{p} <{EX}name> "Person {i}" .\n')
            out.write(f'{p} <{EX}age> "{18 + rnd.randrange(60)}"^^<{XSD_INT}> .\n')
            out.write(f"{p} <{EX}worksFor> <{EX}org{rnd.randrange(orgs)}> .\n")
            out.write(f"{p} <{EX}knows> <{EX}person{rnd.randrange(people)}> .\n")
            out.write(f"{p} <{EX}knows> <{EX}person{rnd.randrange(people)}> .\n")
            n += 5
            if i % 2 == 0:
                out.write(f'{p} <{EX}email> "p{i}@example.org" .\n')
                n += 1
    return n


def _median_time(fn, repeat: int) -> tuple[float, object]:
    result = fn()  # warm-up (also the answer compared across systems)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def _interleaved_medians(fns: dict, repeat: int) -> tuple[dict, dict]:
    """Median times of several functions measured in turns (one warm-up each, then ``repeat`` rounds of one run of
    each), so that the machine's slow and fast moments fall on all of them alike; and each one's first result."""
    results = {name: fn() for name, fn in fns.items()}
    times: dict = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}, results


def worker_spark(data: str, repeat: int) -> dict:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import functions as F

    from rspark import Engine

    out: dict = {"times": {}, "cold": {}, "answers": {}, "hand": {}}
    with Engine(conf={"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"}) as engine:
        start = time.perf_counter()
        engine.load(data)
        count = engine.quads().count()
        out["load_s"] = time.perf_counter() - start
        out["triples"] = count
        quads = engine.quads().filter(F.col("g") == "").select("s", "p", "o")

        def hand_q2():
            name = quads.filter(F.col("p") == f"<{EX}name>").select("s")
            age = quads.filter(F.col("p") == f"<{EX}age>").select("s")
            works = quads.filter(F.col("p") == f"<{EX}worksFor>").select("s")
            return name.join(age, "s").join(works, "s").count()

        def hand_q4():
            works = quads.filter(F.col("p") == f"<{EX}worksFor>").select("s", F.col("o").alias("org"))
            age = quads.filter(F.col("p") == f"<{EX}age>").select(
                "s", F.expr("cast(substring(o, 2, instr(substring(o, 2), '\"') - 1) as double)").alias("a"))
            return works.join(age, "s").groupBy("org").agg(F.count("s"), F.avg("a")).collect()

        hands = {"Q2 star join": hand_q2, "Q4 GROUP BY": hand_q4}
        runs = itertools.count()
        for name, q in QUERIES.items():
            # compiled anew at every run, as the first run of a query in a session: the engine keeps compiled
            # plans by query text, and each run's text is new (a trailing comment)
            def cold(q=q):
                return engine.sparql(f"{q}\n# run {next(runs)}\n")

            fns = {"rspark": lambda q=q: engine.sparql(q), "cold": cold}
            if name in hands:
                fns["hand"] = hands[name]
            medians, results = _interleaved_medians(fns, repeat)
            out["times"][name] = medians["rspark"]
            out["cold"][name] = medians["cold"]
            out["answers"][name] = _answer(results["rspark"].to_json())
            if name in hands:
                out["hand"][name] = medians["hand"]
        out["answers"]["hand Q2"] = hand_q2()
        out["answers"]["hand Q4 groups"] = len(hand_q4())
    out["rss_mb"] = harness.peak_rss_mb()
    return out


def worker_oxigraph(data: str, repeat: int) -> dict:
    import pyoxigraph as ox

    out: dict = {"times": {}, "answers": {}}
    store = ox.Store()
    start = time.perf_counter()
    store.bulk_load(path=data, format=ox.RdfFormat.N_TRIPLES)
    out["load_s"] = time.perf_counter() - start
    for name, q in QUERIES.items():
        def run(q=q):
            res = store.query(q)
            return json.loads(res.serialize(format=ox.QueryResultsFormat.JSON))

        t, res = _median_time(run, repeat)
        out["times"][name] = t
        out["answers"][name] = _answer(res)
    out["rss_mb"] = harness.peak_rss_mb()
    return out


def _answer(js: dict):
    """A small fingerprint of an answer: the row count, and the value when it is a single COUNT."""
    rows = js.get("results", {}).get("bindings", [])
    if len(rows) == 1 and "c" in rows[0]:
        return int(rows[0]["c"]["value"])
    return len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--repeat", type=int, default=5)
    harness.common_arguments(ap, "sparql_scaling", conf=False, worker=["spark", "oxigraph"])
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        fn = worker_spark if args.worker == "spark" else worker_oxigraph
        harness.worker_result(fn(args.data, args.repeat))
        return
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for size in [int(float(s)) for s in args.sizes.split(",")]:
        data = out_dir / f"company-{size}.nt"
        if not data.exists():
            generate(data, size)
        res = {}
        for worker in ("spark", "oxigraph"):
            res[worker] = harness.run_worker(__file__, ["--worker", worker, "--data", str(data),
                                                        "--repeat", str(args.repeat)])
        rows.append((size, res))
        print_table(report, size, res)
    (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    png = plot(rows, out_dir / f"{args.name}.png")
    if png:
        report.plot(png)
    report.write()


def print_table(report: _results.Report, size: int, res: dict) -> None:
    sp, ox_ = res["spark"], res["oxigraph"]
    report.print()
    report.print(f"### {size:,} triples (loaded {sp['triples']:,}); load: rspark {sp['load_s']:.1f} s, "
          f"pyoxigraph {ox_['load_s']:.1f} s; peak RSS: rspark driver {sp['rss_mb']:.0f} MB, "
          f"pyoxigraph {ox_['rss_mb']:.0f} MB")
    report.print()
    report.print("| query | rspark s | rspark, compiled each run s | hand-written Spark s | rspark / hand "
                 "| compiled each run / hand | pyoxigraph s | rspark / pyoxigraph | answers agree |")
    report.print("|---|---|---|---|---|---|---|---|---|")
    for name in QUERIES:
        t = sp["times"][name]
        cold = sp["cold"][name]
        hand = sp["hand"].get(name)
        o = ox_["times"][name]
        agree = sp["answers"][name] == ox_["answers"][name]
        hand_s = f"{hand:.2f}" if hand else "-"
        ratio = f"{t / hand:.2f}x" if hand else "-"
        cold_ratio = f"{cold / hand:.2f}x" if hand else "-"
        report.print(f"| {name} | {t:.2f} | {cold:.2f} | {hand_s} | {ratio} | {cold_ratio} | {o:.3f} | {t / o:.1f}x "
                     f"| {agree} |")


def plot(rows, path: Path) -> Path | None:
    sizes, panels = [s for s, _ in rows], []
    for i, name in enumerate(QUERIES):
        hand = [r["spark"]["hand"].get(name) for _, r in rows]
        lines = [harness.Line(sizes, [r["spark"]["times"][name] for _, r in rows], "o-", "rspark"),
                 harness.Line(sizes, [r["spark"]["cold"][name] for _, r in rows], "o:", "rspark, compiled each run"),
                 harness.Line(sizes, [r["oxigraph"]["times"][name] for _, r in rows], "s-", "pyoxigraph")]
        if all(hand):
            lines.append(harness.Line(sizes, hand, "^--", "hand-written Spark"))
        # the legend on the first two panels (the second with the hand-written plan's line)
        panels.append(harness.Panel(lines, "triples", "seconds (median)" if i == 0 else "", title=name, xlog=True,
                                    ylog=True, legend=8 if i < 2 else None))
    return harness.plot(path, panels, (4 * len(QUERIES), 3.6))


if __name__ == "__main__":
    main()
