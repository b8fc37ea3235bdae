"""What a user waits for before a first answer: the installed ``rspark`` command, each run in a fresh process, wall
time from the command's start to its exit, the median of ``--repeat`` runs (5 by default), after an untimed run
that writes Python's compiled modules (as pip does at install: ``PYTHONDONTWRITEBYTECODE`` is unset for them).

  replay-sample   the README's first command after the install: the sample query replayed over the sample stream
                  and graph (15 records), Spark and its JVM started by the command
  sparql-sample   ``rspark sparql`` of a small SELECT over the sample graph (9 triples, 4 rows)
  explain         ``rspark explain`` of the sample query: parse, translate and print its plan (no Spark)
  version         ``rspark --version``: the Python interpreter and rspark's imports alone (the floor of every
                  command)

Beside them, in the same run: ``python3 -c "import pyspark; SparkSession.builder...getOrCreate()"``, a bare local
Spark session started and stopped (the floor of the commands that run Spark), and ``python3 -c pass`` (the
interpreter alone). The commands that start Spark run twice: with rspark's class-data-sharing archive of Spark's
classes (rspark.spark.cds; made first, in a cache folder of this run's own, and waited for) and without it
(``RSPARK_CDS=0``), and the bare session with the same archive's Java option and without. The targets (issue:
start-up): replay-sample <= 8 s, sparql-sample <= 5 s, explain <= 0.5 s.

The records and rows are checked (the replay's 15 records, the SELECT's 4 rows, explain's plan text) so that a
fast failure is never reported as a fast start. Prints a table, writes it to benchmarks/RESULTS.md
(``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/startup.py [--repeat 5] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "rspark" / "samples"
SPARQL = ("PREFIX : <http://example.org/> SELECT ?s ?label WHERE { ?s a :Sensor OPTIONAL { ?s :room/:label ?label } } "
          "ORDER BY ?s")
SESSION = ("import sys; from pyspark.sql import SparkSession; b = SparkSession.builder.master('local[*]'); "
           "b = b.config('spark.driver.extraJavaOptions', sys.argv[1]) if sys.argv[1:] else b; "
           "s = b.getOrCreate(); s.range(1).count(); s.stop()")
TARGETS = {"replay-sample": 8.0, "sparql-sample": 5.0, "explain": 0.5}
SPARK = ("replay-sample", "sparql-sample")  # the rspark commands that start Spark: with and without the archive
BARE_ARCHIVE = Path("/tmp/rspark-startup-bare.jsa")  # the bare session's own archive (made by this script)


def commands(rspark: str, query_file: Path) -> dict:
    """name -> (argv, check of its standard output)."""
    replay = [rspark, "replay", str(SAMPLES / "sensor_average.rq"),
              "--stream", f"http://example.org/obs={SAMPLES / 'observations.trig'}",
              "--graph", f"http://example.org/sensors={SAMPLES / 'sensors.ttl'}", "--format", "jsonl"]
    return {
        "replay-sample": (replay, lambda out: len(out.splitlines()) == 15),
        "sparql-sample": ([rspark, "sparql", str(query_file), "--data", str(SAMPLES / "sensors.ttl"),
                           "--format", "csv"], lambda out: len(out.splitlines()) == 1 + 4),
        "explain": ([rspark, "explain", str(SAMPLES / "sensor_average.rq")], lambda out: "(project" in out),
        "version": ([rspark, "--version"], lambda out: out.startswith("rspark")),
        "bare Spark session": ([sys.executable, "-c", SESSION], lambda out: True),
        "bare Spark session, archive": ([sys.executable, "-c", SESSION, f"-XX:SharedArchiveFile={BARE_ARCHIVE}"],
                                        lambda out: True),
        "python -c pass": ([sys.executable, "-c", "pass"], lambda out: True),
    }


def make_archives(table: dict, env: dict) -> None:
    """rspark's archive in this run's cache folder (one replay of the sample writes it as its JVM exits; the next
    session adopts it once finished), and the bare session's at BARE_ARCHIVE."""
    argv, check = table["replay-sample"]
    run(argv, check, env)
    deadline = time.time() + 300
    while not list((Path(env["XDG_CACHE_HOME"]) / "rspark").glob("spark-cds-*.jsa")):
        if time.time() > deadline:
            raise SystemExit("rspark's class-data-sharing archive was not made within 300 s")
        time.sleep(10)
        run(table["version"][0], table["version"][1], env)
        run(argv, check, env)  # adopts a finished dump
    BARE_ARCHIVE.unlink(missing_ok=True)
    run([sys.executable, "-c", SESSION, f"-XX:ArchiveClassesAtExit={BARE_ARCHIVE}"], lambda out: True, env)
    size = -1
    while time.time() < deadline:  # written by the JVM after the process ended: until its size stays the same
        time.sleep(3)
        now = BARE_ARCHIVE.stat().st_size if BARE_ARCHIVE.is_file() else -1
        if now == size and now > 0:
            break
        size = now


def run(argv: list[str], check, env: dict) -> float:
    t = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd="/tmp")
    wall = time.perf_counter() - t
    if done.returncode != 0 or not check(done.stdout):
        raise SystemExit(f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n"
                         f"{done.stderr[-2000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each command (the median is reported)")
    harness.common_arguments(ap, "startup", conf=False)
    args = ap.parse_args()
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rspark = shutil.which("rspark")
    if rspark is None:
        raise SystemExit("the rspark command is not on the PATH: install rspark first (pip install -e .)")
    query_file = out_dir / "startup-sparql.rq"
    query_file.write_text(SPARQL, encoding="utf-8")
    cache = out_dir / "startup-cache"  # rspark's cache folder for this run: its archive made here
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
           "XDG_CACHE_HOME": str(cache), "RSPARK_CDS": "1"}
    # Python's compiled modules as a user has them (pip writes them at install; an editable install writes them
    # at the first import): a PYTHONDONTWRITEBYTECODE set for this shell would make every command compile all of
    # rspark's modules again
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    table = commands(rspark, query_file)
    make_archives(table, env)
    runs = [(name, argv, check, env) for name, (argv, check) in table.items()]
    runs += [(f"{name}, no archive", table[name][0], table[name][1], {**env, "RSPARK_CDS": "0"}) for name in SPARK]
    results = {}
    for name, argv, check, environment in runs:
        run(argv, check, environment)  # untimed: the operating system's file cache warm, rspark's jar built
        walls = [run(argv, check, environment) for _ in range(args.repeat)]
        results[name] = {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls),
                         "runs": walls}
        print(f"{name}: {results[name]['median_s']:.2f} s", file=sys.stderr)

    report.print(f"Wall time of each command in a fresh process (median of {args.repeat}, after one untimed run), "
                 "the installed `rspark` script, Python's compiled modules written (as pip does at install).")
    report.print()
    report.print("rspark's commands run with the class-data-sharing archive of Spark's classes (made first) and, "
                 "as `..., no archive`, with `RSPARK_CDS=0`.")
    report.print()
    report.print("| command | median s | min s | max s | target s | met |")
    report.print("|---|---|---|---|---|---|")
    for name, r in results.items():
        target = TARGETS.get(name)
        met = "" if target is None else ("yes" if r["median_s"] <= target else "no")
        report.print(f"| {name} | {r['median_s']:.2f} | {r['min_s']:.2f} | {r['max_s']:.2f} | "
                     f"{'' if target is None else target} | {met} |")
    report.print()
    report.print("`bare Spark session`: a local SparkSession created, one job, stopped, in `python3 -c` (the floor "
                 "of the commands that start Spark), `..., archive` with its own archive mapped; `python -c pass`: "
                 "the interpreter alone.")
    (out_dir / f"{args.name}.json").write_text(json.dumps(results, indent=1))
    lines = [harness.Line([i] * len(r["runs"]), r["runs"], "o", label=name) for i, (name, r) in
             enumerate(results.items())]
    panel = harness.Panel(lines, "command", "wall seconds (each run)", title="start-up, fresh process", ylog=True,
                          hlines=[(t, f"target {n}", ":") for n, t in TARGETS.items()], outside=True)
    png = harness.plot(out_dir / f"{args.name}.png", [panel], (10, 4))
    if png:
        report.plot(png)
    report.write()


if __name__ == "__main__":
    main()
