"""CEP throughput: RSEP-QL event patterns (a 3-step SEQ under each selection and consumption policy) over a generated
stock stream, rspark against a straightforward Python matcher measured in the same run.

The stream: N elements (events), element i (1-based) at tick i (numeric time), each one triple
``:cK :price "v"^^xsd:integer`` for a company K among ``--companies`` and a price among ``--prices``, drawn with a
fixed seed. N-Quads by default (``--format trig`` writes TriG: a TriG file parses in one task, N-Quads in parallel
tasks). Sizes are events (default 1e5, 1e6).

The query, over a tumbling window (every element in exactly one window; the default profile: one evaluation at each
window's close, RSTREAM), with the SEQ of each policy (left-associative: (E1 SEQ E2) SEQ E3):

    PREFIX : <http://example.org/>
    SELECT ?company ?p1 ?p2 ?p3 (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)
    FROM NAMED WINDOW :w ON :stocks [RANGE 1000 SLIDE 1000]
    EVENT ON :w { ?company :price ?p1 } AS E1
    EVENT ON :w { ?company :price ?p2 } AS E2
    EVENT ON :w { ?company :price ?p3 } AS E3
    WHERE { MATCH { E1 SEQ E2 SEQ E3 } }

  unrestricted           SEQ
  chronological          SEQ[CHRONOLOGICAL]
  recent                 SEQ[RECENT]
  naive                  SEQ[NAIVE]
  consume-chronological  MATCH CONSUME CHRONOLOGICAL with SEQ[CHRONOLOGICAL]
  consume-recent         MATCH CONSUME RECENT with SEQ[RECENT]

rspark runs ``Engine.replay_iter`` end to end (the stream's load included, ``until="end"`` so the last window is
reported too), consuming the records as they stream; the process's one-time start (the Spark JVM, a first job, the
Python workers) is measured and reported apart. The stream is loaded once and every policy pays the load.

Then a second stream of the same size (the next seed) goes through both systems in the same processes, loaded and
queried the same way: a warm session, as in a notebook or ``rspark serve``, where rspark's JVM has already compiled
its hot code (the first stream's times include that compilation: on two cores the JIT compilers take CPU from the
tasks) and Spark has its generated classes; Python has no JIT, so the matcher's second pass is its first again. Its
own table (``--no-warm`` skips it).

The baseline is a Python matcher written here, SASE-style: per company, stacks of the events that can start a match
(E1) and of the partial matches E1 SEQ E2, fed the events in time order; the state is reset at each tumbling
window's boundary and the window's matches are emitted at its close, with the selection and consumption semantics of
RSEP-QL (the spec rspark implements: each SEQ is evaluated against an upper bound, the start of the right operand's
event; CHRONOLOGICAL / RECENT select per solution mapping of the right operand, i.e. per (company, price); NAIVE pairs
the LAST events of the whole window; event sets are sets, so matches equal in their bindings and interval collapse).
Its time includes reading and parsing the stream file with pyoxigraph and ordering the events by time (as rspark's
load does); the parse is timed once and every policy pays it. ``--self-check`` compares the matcher with a
spec-literal evaluator (the RSEP-QL equations, window by window) on small streams and exits.

Agreement: the number of matches per window and in total, and the matches themselves (an order-independent digest
of (company, p1, p2, p3, start, end)), rspark against the matcher, for every (size, policy). A difference is an
error: printed loudly, written into the section, and the run exits with 1.

Each system runs in its own subprocess so its peak memory (ru_maxrss) is its own; rspark's figure is the Python
driver (the data lives in the Spark JVM), and the JVM's heap use at the end is reported beside it, with the largest
peak RSS among Spark's Python workers during each policy's replay (Linux: their peaks are reset before it); the
matcher's is its process (the parsed events included), with the tracemalloc peak of its matching (its state and
its output), measured in an untimed second pass per policy.

Consumption's memory: after the policies, rspark runs a pattern without a key over the first stream
(``keyless_query``: every basic match goes through one task of one Python worker, over a sliding window where
what an evaluation consumes is still in the next window) and reports its worker's peak RSS per size, which must not
grow with the stream (``--no-keyless`` skips it).

Spark's floor: in a third fresh process, started as rspark's is, the stream file's lines are read and cut into terms
by rspark's data source (the first step of its load) and counted, nothing else; then once more (warm). No Spark
plan that reads the file can be faster, so it says what the targets leave room for (``--no-floor`` skips it).
Prints a table, writes it to benchmarks/RESULTS.md (its section, see
``_results.py``; ``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/cep_throughput.py [--sizes 1e5,1e6] [--companies 2000] [--engine both|python|rspark]
    python benchmarks/cep_throughput.py --engine python --sizes 1e4 --no-results     # the matcher alone
    python benchmarks/cep_throughput.py --self-check                                 # matcher vs the spec
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness
from baselines.rsepql_spec import self_check
from cep.report import Tables, plot
from cep.workers import worker_floor, worker_python, worker_rspark
from workloads.stocks import POLICIES, generate


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e5,1e6", help="stream lengths in events (comma-separated)")
    ap.add_argument("--companies", type=int, default=2000,
                    help="companies (the key): with 1000 events per window, 2000 gives about 0.5 events per company "
                         "and window, so the unrestricted SEQ's matches stay near 42 per window")
    ap.add_argument("--prices", type=int, default=100, help="distinct prices (1..PRICES)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--policies", default=",".join(POLICIES), help="comma-separated, of: " + ", ".join(POLICIES))
    ap.add_argument("--engine", choices=["both", "python", "rspark"], default="both",
                    help="the systems to run: both (compared), the Python matcher alone, or rspark alone")
    ap.add_argument("--format", choices=["nq", "trig"], default="nq",
                    help="stream file format (N-Quads parse in parallel tasks; a TriG file in one task)")
    ap.add_argument("--no-tracemalloc", action="store_true",
                    help="skip the matcher's second, untimed pass under tracemalloc (its memory peak)")
    ap.add_argument("--no-keyless", action="store_true",
                    help="skip the keyless consumption query (the Python workers' memory under consumption)")
    ap.add_argument("--no-warm", action="store_true",
                    help="skip the second stream of each size (seed + 1), loaded and queried in the same processes "
                         "after the first: rspark's figures once its JVM has compiled its hot code")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip Spark's floor (the file's lines read and cut into terms by rspark's data source and "
                         "counted, nothing else, in a fresh process of its own)")
    ap.add_argument("--self-check", action="store_true",
                    help="compare the matcher with the spec-literal evaluator on small streams, and exit")
    harness.common_arguments(ap, "cep_throughput", worker=["python", "floor", "rspark"])
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--warm-path", help=argparse.SUPPRESS)
    return ap


def run_role(args, policies: list[str]) -> dict:
    """This process as the worker ``args.worker`` (see :mod:`cep.workers`): its result."""
    if args.worker == "python":
        return worker_python(args.path, policies, not args.no_tracemalloc, args.warm_path)
    if args.worker == "floor":
        return worker_floor(args.path, args.conf)
    return worker_rspark(args.path, policies, args.conf, args.warm_path, not args.no_keyless)


def run_size(size: int, args, policies: list[str], engines: list[str], out_dir: Path, tables: Tables) -> None:
    """One size: its streams generated (kept), each system's worker run on them, Spark's floor, the rows."""
    path = generate(out_dir, size, args.companies, args.prices, args.seed, args.format)
    warm_path = None if args.no_warm else generate(out_dir, size, args.companies, args.prices, args.seed + 1,
                                                   args.format)
    res = {}
    for engine in engines:
        cmd = ["--worker", engine, "--path", path, "--policies", ",".join(policies)]
        if warm_path:
            cmd += ["--warm-path", warm_path]
        if args.no_tracemalloc:
            cmd.append("--no-tracemalloc")
        if args.no_keyless:
            cmd.append("--no-keyless")
        res[engine] = harness.run_worker(__file__, cmd + [f"--conf={item}" for item in args.conf])
    rs, py = res.get("rspark"), res.get("python")
    if "rspark" in engines and not args.no_floor:
        floor = harness.run_worker(__file__, ["--worker", "floor", "--path", path,
                                              *(f"--conf={item}" for item in args.conf)])
        tables.add_floor(size, floor, py)
    tables.add_size(size, rs, py, bool(warm_path))


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    unknown = set(policies) - set(POLICIES)
    if unknown:
        ap.error(f"unknown policies {sorted(unknown)} ({', '.join(POLICIES)})")
    if args.worker:
        harness.worker_result(run_role(args, policies))
        return
    if args.self_check:
        ok = self_check()
        print("self-check: the matcher agrees with the spec evaluator" if ok else
              "SELF-CHECK FAILED: the matcher differs from the spec evaluator")
        raise SystemExit(0 if ok else 1)

    engines = ["python", "rspark"] if args.engine == "both" else [args.engine]
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = Tables(report, policies)
    tables.header(args)
    for size in [int(float(s)) for s in args.sizes.split(",")]:
        run_size(size, args, policies, engines, out_dir, tables)
    tables.footer(args, engines)
    (out_dir / f"{args.name}.json").write_text(json.dumps(tables.rows, indent=1))
    if tables.failed:
        print("\n" + "!" * 100 + "\nrspark FAILED (nothing written to RESULTS.md):\n  " + "\n  ".join(tables.failed)
              + "\n" + "!" * 100, file=sys.stderr, flush=True)
        raise SystemExit(1)
    png = plot(tables.rows, out_dir / f"{args.name}.png")
    if png:
        report.plot(png)
    report.write()
    if tables.disagree:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
