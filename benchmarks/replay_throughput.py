"""Replay throughput: continuous queries over a generated CityBench-like sensor stream, rspark vs two pyoxigraph
baselines (one store updated incrementally, and a store rebuilt per window), at growing stream lengths and two
window overlaps.

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
a first job, the first Python workers) is measured and reported apart.

The baselines evaluate the same query at the same instants as rspark's default profile: a window closes at every
multiple of the slide from the first one holding the stream's first element to the last element's timestamp, and
the window that closes at c holds the elements stamped c - range < t <= c, each element (a named graph) as a whole.
Both keep each window's content (the union of its elements' triples, a set) in a named graph of its own, the
static graph in the default graph, and run the query as plain SPARQL with ``WINDOW :w { P }`` read as
``GRAPH <window of :w's stream> { P }``; ISTREAM is applied in Python (the multiset difference between consecutive
instants' answers, as rspark's R2S computes it).
  incremental  ONE store updated over the stream: at each instant the triples of the elements entering the window
               are added and those of the elements leaving it removed (a count per triple keeps a triple that
               another element in the window also holds), then the query runs. Its time includes reading and
               parsing the stream files and the static graph with pyoxigraph (as rspark's load time does): the
               parse is timed once and every query pays it, as every query pays rspark's load. Every instant runs.
  per-window   a fresh store per instant, loaded with that window's snapshot and the static graph (its stream parse
               is not timed); run on the first ``--baseline-instants`` instants and extrapolated to all of them.
Agreement with rspark: the row counts at every instant a baseline ran, and the answers themselves (the rows as sorted
SPARQL JSON terms, numbers compared to 12 significant digits) at the first ``--check-instants`` instants.

The load is compared with Spark's floor: in another fresh process started as rspark's is, the two stream files'
lines read and cut into terms by rspark's data source (the first step of its load) and counted, nothing else, the
files at once as rspark loads them; then again in that process, warm (``--no-floor`` skips it).

Each system runs in its own subprocess so its peak memory (ru_maxrss) is its own; rspark's figure is the Python
driver (the data lives in the Spark JVM), and the JVM's heap use at the end is reported beside it. Prints a table,
writes it to benchmarks/RESULTS.md (its section, see ``_results.py``; ``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/replay_throughput.py [--sizes 1e5,1e6,1e7] [--sensors 200] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from workloads.citybench import EX, PREFIXES, XSD, generate

RANGE_MS = 10_000
SLIDES = {"1x": 10_000, "10x": 1_000}

WINDOW_GRAPH = "urn:rspark-benchmark:window:"  # + the stream's name: a baseline store's graph of that window


def queries(slide: int) -> dict[str, str]:
    w = f"[RANGE {RANGE_MS} SLIDE {slide}]"
    return {
        "filter": PREFIXES + f"SELECT ?obs ?v FROM NAMED WINDOW :w ON :traffic {w} "
                             "WHERE { WINDOW :w { ?obs sosa:hasSimpleResult ?v FILTER(?v > 95) } }",
        "aggregate": PREFIXES + f"SELECT ?s (AVG(?v) AS ?avg) FROM NAMED WINDOW :w ON :traffic {w} "
                                "WHERE { WINDOW :w { ?o sosa:madeBySensor ?s ; sosa:hasSimpleResult ?v } } "
                                "GROUP BY ?s",
        "join": PREFIXES + f"SELECT ?t ?m ?loc FROM NAMED WINDOW :w1 ON :traffic {w} "
                           f"FROM NAMED WINDOW :w2 ON :weather {w} "
                           "WHERE { WINDOW :w1 { ?o1 sosa:madeBySensor ?t ; sosa:hasSimpleResult ?v1 "
                           "FILTER(?v1 > 90) } "
                           "WINDOW :w2 { ?o2 sosa:madeBySensor ?m ; sosa:hasSimpleResult ?v2 FILTER(?v2 > 90) } "
                           "?t :locatedAt ?loc . ?m :locatedAt ?loc }",
        "istream": PREFIXES + f"SELECT ISTREAM ?s FROM NAMED WINDOW :w ON :traffic {w} "
                              "WHERE { WINDOW :w { ?o sosa:madeBySensor ?s ; sosa:hasSimpleResult ?v "
                              "FILTER(?v > 95) } }",
    }


_WINDOW_DECL = re.compile(r"FROM NAMED WINDOW :(\w+) ON :(\w+) \[RANGE (\d+) SLIDE (\d+)\] ")


def query_windows(q: str) -> dict[str, str]:
    """The query's windows: name -> the stream it reads. The baselines keep one window per stream, of RANGE_MS."""
    found = {}
    for name, stream, range_, _slide in _WINDOW_DECL.findall(q):
        if int(range_) != RANGE_MS or stream in found.values():
            raise ValueError("the baselines expect one window per stream, each of RANGE_MS")
        found[name] = stream
    return found


def baseline_sparql(q: str) -> str:
    """The query over a baseline's store: the window declarations dropped, each ``WINDOW :w {`` read as ``GRAPH
    <its stream's window graph> {`` (the static graph stays the default graph), ISTREAM dropped (the baselines
    apply it in Python)."""
    windows = query_windows(q)
    q = _WINDOW_DECL.sub("", q).replace("SELECT ISTREAM", "SELECT")
    return re.sub(r"WINDOW :(\w+) \{", lambda m: f"GRAPH <{WINDOW_GRAPH}{windows[m.group(1)]}> {{", q)


# ------------------------------------------------------------------------------------------- comparing the answers

_NUMERIC = {XSD + t for t in ("integer", "decimal", "double", "float", "int", "long", "short", "byte",
                              "nonNegativeInteger", "positiveInteger", "nonPositiveInteger", "negativeInteger",
                              "unsignedInt", "unsignedLong", "unsignedShort", "unsignedByte")}


def _literal(value: str, datatype: str | None, lang: str | None) -> tuple:
    if lang:
        return ("literal", value, "", lang.lower())
    datatype = datatype or XSD + "string"
    if datatype in _NUMERIC:
        try:
            value = format(float(value), ".12g")
        except ValueError:
            pass
    return ("literal", value, datatype, "")


def _json_term(b: dict | None) -> tuple | None:
    """A SPARQL JSON results term (rspark's records) as a comparable tuple."""
    if b is None:
        return None
    kind = b.get("type")
    if kind in ("literal", "typed-literal"):
        return _literal(b["value"], b.get("datatype"), b.get("xml:lang"))
    if kind == "bnode":
        return ("bnode",)  # labels are not comparable across systems
    return (kind, json.dumps(b.get("value"), sort_keys=True))


def _ox_term(t) -> tuple | None:
    """A pyoxigraph term as the same tuple."""
    import pyoxigraph as ox

    if t is None:
        return None
    if isinstance(t, ox.NamedNode):
        return ("uri", json.dumps(t.value))
    if isinstance(t, ox.Literal):
        return _literal(t.value, t.datatype.value, t.language)
    if isinstance(t, ox.BlankNode):
        return ("bnode",)
    return ("other", str(t))


def _digest(rows: list[tuple]) -> str:
    """The answer of one instant (a multiset of rows) as a short fingerprint."""
    return hashlib.sha1(repr(sorted(rows, key=repr)).encode()).hexdigest()[:16]


def rspark_digest(record) -> str:
    js = record.to_json()
    names = sorted(js["head"]["vars"])
    return _digest([tuple(_json_term(b.get(v)) for v in names) for b in js["results"]["bindings"]])


def ox_digest(names: list[str], rows: list[tuple]) -> str:
    """``rows``: tuples of pyoxigraph terms in the order of ``names``."""
    order = sorted(range(len(names)), key=lambda i: names[i])
    return _digest([tuple(_ox_term(row[i]) for i in order) for row in rows])


# ---------------------------------------------------------------------------------------------------- the workers


def worker_rspark(paths: dict, overlap: str, names: list[str], conf: list[str] = (), check: int = 200) -> dict:
    import os

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark import Engine

    out: dict = {"times": {}, "counts": {}, "digests": {}}
    start = time.perf_counter()
    # rspark's own settings (shuffle partitions twice the cores, as `rspark replay` has them) but the driver's
    # memory; --conf KEY=VALUE on top, e.g. to compare JVM options
    settings = harness.spark_settings(conf, **{"spark.driver.memory": "8g"})
    with Engine(conf=settings) as engine:
        harness.start_spark(engine.spark)  # a one-time cost of the process, reported apart
        out["startup_s"] = time.perf_counter() - start
        start = time.perf_counter()
        engine.load(paths["static"])
        streams = time.perf_counter()
        engine.add_streams({EX + "traffic": paths["traffic"], EX + "weather": paths["weather"]})  # as `rspark replay`
        out["load_s"] = time.perf_counter() - start
        out["streams_load_s"] = time.perf_counter() - streams  # what the floor is compared with
        for name in names:
            q = queries(SLIDES[overlap])[name]
            counts, kept = [], []
            t = time.perf_counter()
            # consumed as they stream, as `rspark replay` writes them: the driver does not hold the whole replay
            # (only the first `check` records, compared with the baselines after the clock stops)
            for r in engine.replay_iter(q):
                counts.append((r.time, len(r.rows)))
                if len(kept) < check:
                    kept.append(r)
            out["times"][name] = time.perf_counter() - t
            out["counts"][name] = counts
            out["digests"][name] = {str(r.time): rspark_digest(r) for r in kept}
        out["jvm_used_mb"] = harness.jvm_heap_mb(engine.spark)
    out["rss_mb"] = harness.peak_rss_mb()
    return out


def worker_floor(paths: dict, conf: list[str] = ()) -> dict:
    """The floor of rspark's load (:func:`harness.scan_floor`) of the two stream files, in a fresh process started
    as rspark's worker is."""
    import os

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark import Engine

    with Engine(conf=harness.spark_settings(conf, **{"spark.driver.memory": "8g"})) as engine:
        harness.start_spark(engine.spark)
        return harness.scan_floor(engine.spark, [paths["traffic"], paths["weather"]])


def parse_streams(paths: dict) -> tuple[dict, list]:
    """Both streams and the static graph, read and parsed with pyoxigraph. A stream: (timestamps, elements), sorted
    by timestamp; an element: its distinct triples as quads of the stream's window graph (ready to add)."""
    import pyoxigraph as ox

    streams = {}
    for stream in ("traffic", "weather"):
        window = ox.NamedNode(WINDOW_GRAPH + stream)
        elems: dict = {}
        stamps = {}
        fmt = ox.RdfFormat.TRIG if paths[stream].endswith(".trig") else ox.RdfFormat.N_QUADS
        for q in ox.parse(path=paths[stream], format=fmt):
            g = q.graph_name
            if isinstance(g, ox.DefaultGraph):  # the element's timestamp (metadata: not window content)
                stamps[q.subject] = int(q.object.value)
            else:
                elems.setdefault(g, []).append(ox.Quad(q.subject, q.predicate, q.object, window))
        ordered = sorted(((stamps[g], tuple(dict.fromkeys(quads))) for g, quads in elems.items()), key=lambda e: e[0])
        streams[stream] = ([ts for ts, _ in ordered], [quads for _, quads in ordered])
    static = list(ox.parse(path=paths["static"], format=ox.RdfFormat.TURTLE))
    return streams, static


def evaluation_instants(streams: dict, slide: int) -> list[int]:
    """rspark's default profile (window-close, windows before t0, t0 = 0): every multiple of the slide from the
    close of the first window holding the first element (the first multiple at or after it) up to the last
    element."""
    last = max(keys[-1] for keys, _ in streams.values())
    first = min(keys[0] for keys, _ in streams.values())
    return list(range(-(-first // slide) * slide, last + 1, slide))


class Answers:
    """A baseline's answers, instant by instant: the RSTREAM or ISTREAM rows of each, their counts, and the rows of
    the first ``check`` instants kept for the comparison (made after the clock stops)."""

    def __init__(self, istream: bool, check: int) -> None:
        self.istream = istream
        self.check = check
        self.previous: Counter = Counter()
        self.counts: list = []
        self.kept: list = []
        self.names: list[str] = []

    def add(self, instant: int, solutions) -> None:
        self.names = [v.value for v in solutions.variables]
        if self.istream:  # what is new since the previous instant, as a multiset difference
            current = Counter(tuple(s) for s in solutions)
            rows = list((current - self.previous).elements())
            self.previous = current
        else:
            rows = list(solutions)
        self.counts.append((instant, len(rows)))
        if len(self.kept) < self.check:
            self.kept.append((instant, rows))

    def digests(self) -> dict:
        return {str(t): ox_digest(self.names, [tuple(s) for s in rows]) for t, rows in self.kept}


def worker_incremental(paths: dict, overlap: str, names: list[str], check: int) -> dict:
    """One store per query, updated at each instant by the elements entering and leaving its windows."""
    import pyoxigraph as ox

    slide = SLIDES[overlap]
    t = time.perf_counter()
    streams, static = parse_streams(paths)
    out: dict = {"parse_s": time.perf_counter() - t, "times": {}, "counts": {}, "digests": {}}
    instants = evaluation_instants(streams, slide)
    out["instants"] = len(instants)
    for name in names:
        text = queries(slide)[name]
        used = list(query_windows(text).values())
        q = baseline_sparql(text)
        answers = Answers("SELECT ISTREAM" in text, check)
        t = time.perf_counter()
        store = ox.Store()
        store.extend(static)
        held: dict = {}  # quad -> how many elements in the window hold it
        bounds = {stream: (0, 0) for stream in used}  # the window's elements: indices [lo, hi)
        for c in instants:
            for stream in used:
                keys, elems = streams[stream]
                lo, hi = bounds[stream]
                new_lo, new_hi = bisect.bisect_right(keys, c - RANGE_MS), bisect.bisect_right(keys, c)
                for quads in elems[lo:min(new_lo, hi)]:  # leaving: stamped <= c - range
                    for quad in quads:
                        n = held[quad]
                        if n == 1:
                            del held[quad]
                            store.remove(quad)
                        else:
                            held[quad] = n - 1
                added = []
                for quads in elems[max(hi, new_lo):new_hi]:  # entering: stamped in (previous c, c]
                    for quad in quads:
                        n = held.get(quad, 0)
                        held[quad] = n + 1
                        if n == 0:
                            added.append(quad)
                if added:
                    store.extend(added)
                bounds[stream] = (new_lo, new_hi)
            answers.add(c, store.query(q))
        out["times"][name] = time.perf_counter() - t
        out["counts"][name] = answers.counts
        out["digests"][name] = answers.digests()
        del store, held
    out["rss_mb"] = harness.peak_rss_mb()
    return out


def worker_per_window(paths: dict, overlap: str, names: list[str], max_instants: int, check: int) -> dict:
    """Per instant: the window snapshot into a fresh store, then the query. Times are extrapolated from the first
    ``max_instants`` instants when there are more (stated in the output)."""
    import pyoxigraph as ox

    slide = SLIDES[overlap]
    streams, static = parse_streams(paths)
    instants = evaluation_instants(streams, slide)
    out: dict = {"times": {}, "counts": {}, "digests": {}, "instants": len(instants),
                 "measured_instants": min(len(instants), max_instants)}
    for name in names:
        text = queries(slide)[name]
        used = list(query_windows(text).values())
        q = baseline_sparql(text)
        answers = Answers("SELECT ISTREAM" in text, check)
        t = time.perf_counter()
        for c in instants[:max_instants]:
            store = ox.Store()
            store.extend(static)
            for stream in used:
                keys, elems = streams[stream]
                lo = bisect.bisect_right(keys, c - RANGE_MS)
                hi = bisect.bisect_right(keys, c)
                for quads in elems[lo:hi]:
                    store.extend(quads)
            answers.add(c, store.query(q))
        spent = time.perf_counter() - t
        out["times"][name] = spent * len(instants) / max(1, min(len(instants), max_instants))
        out["counts"][name] = answers.counts
        out["digests"][name] = answers.digests()
    out["rss_mb"] = harness.peak_rss_mb()
    return out


def agreement(rs: dict, other: dict, name: str, complete: bool) -> tuple[bool, str]:
    """Whether a baseline's answers agree with rspark's: the counts at every instant the baseline ran (and, when it
    ran them all, the same instants), the answers at the instants both kept. ``(agrees, table cell)``."""
    mine = {int(t): n for t, n in rs["counts"][name]}
    theirs = {int(t): n for t, n in other["counts"][name]}
    problems = []
    if complete and set(mine) != set(theirs):
        problems.append(f"instants differ (rspark {len(mine)}, baseline {len(theirs)})")
    missing = [t for t in theirs if t not in mine]
    if missing and not complete:
        problems.append(f"{len(missing)} instants missing in rspark")
    counts = [t for t in theirs if t in mine and mine[t] != theirs[t]]
    if counts:
        problems.append(f"row counts differ at {len(counts)} instants (first {counts[0]}: rspark {mine[counts[0]]}, "
                        f"baseline {theirs[counts[0]]})")
    shared = [t for t in other["digests"][name] if t in rs["digests"][name]]
    answers = [t for t in shared if rs["digests"][name][t] != other["digests"][name][t]]
    if answers:
        problems.append(f"answers differ at {len(answers)} of {len(shared)} instants (first {answers[0]})")
    if problems:
        return False, "NO: " + "; ".join(problems)
    return True, f"yes ({len(shared)}/{len(theirs)})"


# ------------------------------------------------------------------------------------------------------- the run


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
                    help="per-window baseline: instants actually run per query (the rest extrapolated)")
    ap.add_argument("--check-instants", type=int, default=200,
                    help="instants (the first ones) whose answers are compared in full with rspark's; the row "
                         "counts are compared at every instant a baseline runs")
    ap.add_argument("--baselines", default="incremental,per-window",
                    help="the pyoxigraph baselines to run (comma-separated; 'none' for rspark alone)")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip Spark's floor (the stream files' lines read and cut into terms by rspark's data "
                         "source, nothing else, in a fresh process), which the load is compared with")
    harness.common_arguments(ap, "replay_throughput", worker=["rspark", "incremental", "per-window", "floor"])
    ap.add_argument("--paths", help=argparse.SUPPRESS)
    ap.add_argument("--overlap", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.queries.split(",")
    if args.worker:
        paths = json.loads(args.paths)
        if args.worker == "rspark":
            res = worker_rspark(paths, args.overlap, names, args.conf, args.check_instants)
        elif args.worker == "floor":
            res = worker_floor(paths, args.conf)
        elif args.worker == "incremental":
            res = worker_incremental(paths, args.overlap, names, args.check_instants)
        else:
            res = worker_per_window(paths, args.overlap, names, args.baseline_instants, args.check_instants)
        harness.worker_result(res)
        return
    baselines = [b for b in args.baselines.split(",") if b and b != "none"]
    unknown = set(baselines) - {"incremental", "per-window"}
    if unknown:
        ap.error(f"unknown baselines {sorted(unknown)} (incremental, per-window)")
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    report.print("| triples | overlap | instants | query | rspark s (load + replay) | rspark triples/s "
                 "| incremental pyoxigraph s (parse + replay) | incremental / rspark | incremental agrees "
                 "| per-window pyoxigraph s | per-window / rspark | per-window agrees "
                 "| rspark driver RSS MB | JVM heap used MB | incremental RSS MB | per-window RSS MB |")
    report.print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    notes, floors, extrapolated, disagree = [], [], False, []
    for size in [int(float(s)) for s in args.sizes.split(",")]:
        paths = generate(out_dir, size, args.sensors, args.rate, args.format)
        for overlap in args.overlaps.split(","):
            res = {}
            for worker in ["rspark"] + baselines:
                res[worker] = harness.run_worker(__file__, [
                    "--worker", worker, "--paths", json.dumps(paths), "--overlap", overlap, "--queries", args.queries,
                    "--baseline-instants", str(args.baseline_instants), "--check-instants", str(args.check_instants),
                    *(f"--conf={item}" for item in args.conf)])
            rs, inc, pw = res["rspark"], res.get("incremental"), res.get("per-window")
            notes.append(f"{rs['startup_s']:.1f} s ({size:,}, {overlap})")
            if not args.no_floor and overlap == args.overlaps.split(",")[0]:  # the load is the same at each overlap
                floor = harness.run_worker(__file__, ["--worker", "floor", "--paths", json.dumps(paths),
                                                      *(f"--conf={item}" for item in args.conf)])
                floors.append(_floor_text(size, rs["streams_load_s"], floor))
            instants = (inc or pw or {}).get("instants", len(rs["counts"][names[0]]))
            for name in names:
                total = rs["load_s"] + rs["times"][name]  # end to end: each query pays the load
                tps = size / total
                row = {"size": size, "overlap": overlap, "query": name, "rspark_s": total, "load_s": rs["load_s"],
                       "replay_s": rs["times"][name], "startup_s": rs["startup_s"], "triples_per_s": tps,
                       "rss_mb": rs["rss_mb"], "jvm_mb": rs["jvm_used_mb"], "instants": instants,
                       "rspark_instants": len(rs["counts"][name])}
                cells = {"inc": ["-", "-", "-", "-"], "pw": ["-", "-", "-", "-"]}
                if inc:
                    inc_s = inc["parse_s"] + inc["times"][name]
                    ok, cell = agreement(rs, inc, name, complete=True)
                    row.update(incremental_s=inc_s, incremental_parse_s=inc["parse_s"],
                               incremental_replay_s=inc["times"][name], incremental_speedup=inc_s / total,
                               incremental_agrees=ok, incremental_check=cell, incremental_rss_mb=inc["rss_mb"])
                    cells["inc"] = [f"{inc_s:.1f} ({inc['parse_s']:.1f} + {inc['times'][name]:.1f})",
                                    f"{inc_s / total:.2f}x", cell, f"{inc['rss_mb']:.0f}"]
                    if not ok:
                        disagree.append(f"incremental {size}/{overlap}/{name}")
                if pw:
                    partial = pw["measured_instants"] < pw["instants"]
                    extrapolated |= partial
                    ok, cell = agreement(rs, pw, name, complete=not partial)
                    row.update(baseline_s=pw["times"][name], speedup=pw["times"][name] / total, baseline_agrees=ok,
                               baseline_check=cell, baseline_rss_mb=pw["rss_mb"], baseline_instants=pw["instants"],
                               baseline_measured=pw["measured_instants"])
                    cells["pw"] = [f"{pw['times'][name]:.1f}" + ("*" if partial else ""),
                                   f"{pw['times'][name] / total:.2f}x", cell, f"{pw['rss_mb']:.0f}"]
                    if not ok:
                        disagree.append(f"per-window {size}/{overlap}/{name}")
                report.print(f"| {size:,} | {overlap} | {instants} | {name} | {total:.1f} ({rs['load_s']:.1f} + "
                             f"{rs['times'][name]:.1f}) | {tps:,.0f} | {' | '.join(cells['inc'][:3])} | "
                             f"{' | '.join(cells['pw'][:3])} | {rs['rss_mb']:.0f} | {rs['jvm_used_mb']:.0f} | "
                             f"{cells['inc'][3]} | {cells['pw'][3]} |")
                rows.append(row)
    report.print()
    report.print("Speed-ups are the baseline's time over rspark's (above 1: rspark is faster). \"agrees\": yes (a/b) "
                 "= the answers equal rspark's at the first a instants and the row counts at all b instants the "
                 "baseline ran.")
    if extrapolated:
        report.print()
        report.print(f"*: the per-window baseline measured on its first {args.baseline_instants} instants and "
                     "extrapolated to all of them.")
    report.print()
    report.print("rspark's one-time start of the process (the JVM, a first job, the Python workers), not in its "
                 "times: " + ", ".join(notes) + ". The incremental baseline's times include pyoxigraph's reading and "
                 "parsing of both streams and the static graph (the first figure in parentheses).")
    if floors:
        report.print()
        report.print("Load against Spark's floor (the two stream files' lines read and cut into terms by rspark's "
                     "data source and counted, at once, nothing else, in a fresh process started as rspark's is; "
                     "then again in that process, warm; compared with rspark's load of the two streams, its load "
                     "time above without the static graph's; the target: within 2x the floor): "
                     + " ".join(floors))
    if disagree:
        report.print()
        report.print("ANSWERS DIFFER: " + ", ".join(disagree))
    (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    png = plot(rows, out_dir / f"{args.name}.png")
    if png:
        report.plot(png)
    report.write()
    if disagree:
        raise SystemExit(1)


def _floor_text(size: int, load_s: float, floor: dict) -> str:
    """One size's floor sentence: the floor's times and the streams' load's ratio to the fresh one."""
    if "error" in floor:
        return f"{size:,}: no floor ({floor['error']})."
    ratio = load_s / floor["scan_s"]
    return (f"{size:,} ({floor['lines']:,} lines): floor {floor['scan_s']:.2f} s, warm {floor['scan_warm_s']:.2f} s; "
            f"the streams' load {load_s:.2f} s = {ratio:.2f}x the floor ({'met' if ratio <= 2 else 'MISSED'}).")


def plot(rows, path: Path) -> Path | None:
    lines = []
    for key in sorted({(r["query"], r["overlap"]) for r in rows}):
        pts = [r for r in rows if (r["query"], r["overlap"]) == key]
        lines.append(harness.Line([r["size"] for r in pts], [r["triples_per_s"] for r in pts],
                                  label=f"{key[0]} {key[1]}"))
    return harness.plot(path, [harness.Panel(lines, "stream triples", "rspark stream triples / s (end to end)",
                                             xlog=True)], (7, 4))


if __name__ == "__main__":
    main()
