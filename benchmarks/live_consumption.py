"""Live consumption: a query that consumes events, evaluated live micro-batch after micro-batch, with its consumption
state carried from one run to the next (rspark's way) against the same query evaluated from its stream's start at
every micro-batch (the baseline: the path a query takes when no state is carried, as one restored from an older
rspark's checkpoint does), in the same run. ``--feeding``: the consuming query registers a stream that a second
query reads (its state then taken before what the reader may still read, which each run evaluates again), the same
two modes compared on the reader's records (section ``live_consumption_feeding``).

The stream is the stock-event workload of ``workloads/stocks.py``, as cep_throughput.py's (element i at tick i, one
triple ``:cK :price "v"``; ``--companies`` keys, ``--prices`` prices, a fixed seed), pushed in batches of ``--batch``
elements (``engine.push``, one inbox file each), each batch waited for (``wait_idle``) before the next. The query
is the workload's consume-chronological 3-step SEQ on ``?company`` over a sliding window, so what one
evaluation consumes is still in the next window:

    MATCH CONSUME CHRONOLOGICAL { E1 SEQ[CHRONOLOGICAL] E2 SEQ[CHRONOLOGICAL] E3 }
    FROM NAMED WINDOW :w ON :stocks [RANGE 1000 SLIDE 500]

Per batch and per mode: the seconds from the push to the engine idle (the batch loaded, the due instants evaluated
and delivered), the elements its buffer holds, and (carried) the consumed occurrences its state holds. The two
modes' records are compared with each other and with a replay of the whole stream; a difference is an error,
printed loudly and written into the section, and the run exits with 1. Before the timed runs, one untimed short run
warms the JVM and the Python workers. Prints a table, writes it to benchmarks/RESULTS.md (its section, see
``_results.py``; ``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/live_consumption.py [--events 100000] [--batch 2000] [--companies 50] [--feeding]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from workloads.stocks import EX, PROV, STREAM, XSD, query, stream_events

SLIDE = 500


def live_query() -> str:
    return query("consume-chronological", STREAM).replace("SLIDE 1000", f"SLIDE {SLIDE}")


def feeding_queries() -> list[tuple[str, str]]:
    """``--feeding``: the consuming query registers the stream of its matches' last prices, which a second query
    reads (a count per company over the same sliding window)."""
    feeder = live_query().replace(
        "SELECT ?company ?p1 ?p2 ?p3 (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)",
        "REGISTER STREAM :found AS CONSTRUCT { ?company :found ?p3 }")
    reader = ("PREFIX : <http://example.org/>\nSELECT ?company (COUNT(*) AS ?n)\n"
              f"FROM NAMED WINDOW :v ON :found [RANGE 1000 SLIDE {SLIDE}]\n"
              "WHERE { WINDOW :v { ?company :found ?p } } GROUP BY ?company")
    return [("feeder", feeder), ("reader", reader)]


def batches(n: int, size: int, companies: int, prices: int, seed: int) -> list[str]:
    """The stream as N-Quads texts of ``size`` elements each."""
    integer = f"^^<{XSD}integer>"
    out, lines = [], []
    for t, k, p in stream_events(n, companies, prices, seed):
        lines.append(f'<{EX}c{k}> <{EX}price> "{p}"{integer} <{EX}e{t}> .\n'
                     f'<{EX}e{t}> <{PROV}generatedAtTime> "{t}"{integer} .\n')
        if len(lines) == size:
            out.append("".join(lines))
            lines = []
    if lines:
        out.append("".join(lines))
    return out


def records(recs) -> list:
    return [(r.time, sorted(json.dumps(b, sort_keys=True) for b in r.to_json()["results"]["bindings"]))
            for r in recs]


def run_live(spark, texts: list[str], carried: bool, work: Path, feeding: bool = False) -> dict:
    """One live run over ``texts``: per batch its seconds, buffer elements and state occurrences; the records (of
    the reader, with ``feeding``)."""
    from rspark import Engine
    from rspark.cep.carried import occurrence_count

    with Engine(spark=spark, checkpoint=str(work)) as eng:
        if feeding:
            (feeder, feeder_text), (reader, reader_text) = feeding_queries()
            eng.register(feeder_text, name=feeder)
            handle = eng.register(reader_text, name=reader)
            q = eng.live.queries[feeder]
        else:
            handle = eng.register(live_query(), name="q")
            q = eng.live.queries["q"]
        if not carried:
            q.consumption = None  # evaluated from the stream's start at every micro-batch
        st = eng.live.stream(STREAM)
        times, held, state = [], [], []
        for text in texts:
            t = time.perf_counter()
            eng.push(STREAM, text, format="nquads")
            if not eng.live.wait_idle(timeout=600):
                raise RuntimeError("live mode did not become idle within 600 s")
            times.append(time.perf_counter() - t)
            b = st.buffer
            held.append(0 if b.low is None else b.last - b.low + 1)  # ticks = elements (one per tick)
            state.append(occurrence_count(q.consumption or {}))
        eng.live.close(flush=True)
        return {"times": times, "held": held, "state": state, "records": records(handle.drain())}


def replayed(spark, texts: list[str], work: Path, feeding: bool = False) -> list:
    from rspark import Engine

    path = work / "stream.nq"
    path.write_text("".join(texts))
    with Engine(spark=spark) as eng:
        eng.add_stream(STREAM, str(path))
        if feeding:
            names, texts = zip(*feeding_queries())
            return records(r for r in eng.replay_iter(list(texts), names=list(names), until="end")
                           if r.query == "reader")
        return records(eng.replay_iter(live_query(), until="end"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000, help="stream length (elements, one event each)")
    ap.add_argument("--batch", type=int, default=2000, help="elements per pushed batch")
    ap.add_argument("--companies", type=int, default=50, help="companies (the consumption key)")
    ap.add_argument("--prices", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--every", type=int, default=5, help="a table row every n-th batch")
    ap.add_argument("--feeding", action="store_true",
                    help="the consuming query registers a stream another query reads (its records compared); "
                         "section live_consumption_feeding")
    harness.common_arguments(ap, None)
    args = ap.parse_args()
    section = "live_consumption_feeding" if args.feeding else "live_consumption"
    report = _results.Report(section, enabled=not args.no_results)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark.spark.session import get_session

    spark = get_session(conf=harness.spark_settings(args.conf, **{"spark.sql.shuffle.partitions": "4"}))
    texts = batches(args.events, args.batch, args.companies, args.prices, args.seed)
    with tempfile.TemporaryDirectory(prefix="rspark-live-consumption-") as tmp:
        work = Path(tmp)
        warm = batches(4 * args.batch, args.batch, args.companies, args.prices, args.seed + 1)
        run_live(spark, warm, True, work / "warm-carried", args.feeding)
        run_live(spark, warm, False, work / "warm-recomputed", args.feeding)
        carried = run_live(spark, texts, True, work / "carried", args.feeding)
        recomputed = run_live(spark, texts, False, work / "recomputed", args.feeding)
        expected = replayed(spark, texts, work, args.feeding)
    problems = []
    for name, res in (("carried", carried), ("recomputed", recomputed)):
        if res["records"] != expected:
            problems.append(f"{name}: {len(res['records'])} records differ from the replay's {len(expected)}")
    events = sum(len(rows) for _, rows in expected)
    if args.feeding:
        what = (f"the query: consume-chronological 3-step SEQ, [RANGE 1000 SLIDE {SLIDE}], registering the stream "
                f":found of its matches (?company :found ?p3), which a second query reads (COUNT per company over "
                f"[RANGE 1000 SLIDE {SLIDE}]); the reader's {len(expected)} records, {events:,} rows")
    else:
        what = (f"the query: consume-chronological 3-step SEQ, [RANGE 1000 SLIDE {SLIDE}]; {len(expected)} records, "
                f"{events:,} events found")
    report.print(f"Stream: {args.events:,} events in batches of {args.batch:,} ({len(texts)} micro-batches), "
                 f"{args.companies} companies; {what}.")
    report.print()
    report.print("| batch | stream elements | carried: s | recomputed: s | recomputed / carried | carried: buffer "
                 "elements | recomputed: buffer elements | carried: state occurrences |")
    report.print("|---|---|---|---|---|---|---|---|")
    for i in range(len(texts)):
        if (i + 1) % args.every and i + 1 != len(texts):
            continue
        c, r = carried["times"][i], recomputed["times"][i]
        report.print(f"| {i + 1} | {min((i + 1) * args.batch, args.events):,} | {c:.2f} | {r:.2f} | {r / c:.1f}x "
                     f"| {carried['held'][i]:,} | {recomputed['held'][i]:,} | {carried['state'][i]:,} |")
    tail = max(1, len(texts) // 4)
    total_c, total_r = sum(carried["times"]), sum(recomputed["times"])
    last_c = sum(carried["times"][-tail:]) / tail
    last_r = sum(recomputed["times"][-tail:]) / tail
    first_c = sum(carried["times"][:tail]) / tail
    report.print()
    report.print(f"Totals: carried {total_c:.1f} s, recomputed {total_r:.1f} s ({total_r / total_c:.1f}x). Mean "
                 f"seconds per batch over the last {tail} batches: carried {last_c:.2f} (first {tail}: "
                 f"{first_c:.2f}), recomputed {last_r:.2f} ({last_r / last_c:.1f}x). Largest carried state: "
                 f"{max(carried['state']):,} occurrences; largest carried buffer: {max(carried['held']):,} elements.")
    report.print(f"Records: carried and recomputed {'equal the replay' if not problems else 'DIFFER'}.")
    for p in problems:
        report.print(f"**ERROR**: {p}")
        print(f"ERROR: {p}", file=sys.stderr)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {k: {kk: vv for kk, vv in v.items() if kk != "records"} for k, v in
            (("carried", carried), ("recomputed", recomputed))}
    (out_dir / f"{section}.json").write_text(json.dumps({"args": vars(args), **data}, indent=1))
    png = plot(carried, recomputed, args, out_dir / f"{section}.png")
    if png:
        report.plot(png)
    report.write()
    if problems:
        sys.exit(1)


def plot(carried: dict, recomputed: dict, args, path: Path) -> Path | None:
    xs = [min((i + 1) * args.batch, args.events) for i in range(len(carried["times"]))]
    lines = [harness.Line(xs, recomputed["times"], "o--", "recomputed from the stream's start", markersize=3),
             harness.Line(xs, carried["times"], "o-", "state carried", markersize=3)]
    return harness.plot(path, [harness.Panel(lines, "stream elements pushed", "seconds per micro-batch", legend=8)],
                        (6, 3.5))


if __name__ == "__main__":
    main()
