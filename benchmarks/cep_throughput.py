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
from cep.workers import keyless_query, worker_floor, worker_python, worker_rspark
from workloads.stocks import POLICIES, RANGE, STREAM, generate

# the table's columns after (events, policy): key -> header
COLUMNS = {
    "windows": "windows", "matches": "matches",
    "rs_s": "rspark s (load + replay)", "rs_eps": "rspark events/s",
    "py_s": "matcher s (parse + match)", "py_eps": "matcher events/s", "py_match_eps": "matcher events/s, match only",
    "ratio": "rspark / matcher (events/s)", "agree": "counts agree", "target": "target",
    "rs_rss": "rspark driver RSS MB", "jvm": "JVM heap used MB", "rs_workers": "rspark Python worker peak RSS MB",
    "py_rss": "matcher RSS MB",
    "trace": "matcher tracemalloc peak MB",
}
# the warm session's table (the second stream): key -> header
WARM_COLUMNS = {
    "matches": "matches", "rs_s": "rspark s (load + replay)", "rs_eps": "rspark events/s",
    "py_s": "matcher s (parse + match)", "py_eps": "matcher events/s", "ratio": "rspark / matcher (events/s)",
    "agree": "counts agree", "target": "target",
}
# the targets printed beside the results: these policies at this size
TARGET_POLICIES = ("unrestricted", "chronological")
TARGET_SIZE = 1_000_000
TARGET_EPS = 100_000
TARGET_RATIO = 5.0


def agreement(rs: dict, py: dict, policy: str) -> tuple[bool, str]:
    """rspark's matches against the matcher's: per window counts, the total, the digest. ``(agrees, table cell)``."""
    mine = {int(k): v for k, v in rs["counts"][policy].items()}
    theirs = {int(k): v for k, v in py["counts"][policy].items()}
    a, b = sum(mine.values()), sum(theirs.values())
    problems = []
    if a != b:
        problems.append(f"total rspark {a:,}, matcher {b:,}")
    windows = sorted(c for c in set(mine) | set(theirs) if mine.get(c, 0) != theirs.get(c, 0))
    if windows:
        c = windows[0]
        problems.append(f"windows differing: {len(windows)} (the first closes at {c}: rspark {mine.get(c, 0)}, "
                        f"matcher {theirs.get(c, 0)})")
    if not problems and rs["digests"][policy] != py["digests"][policy]:
        problems.append("same counts, different matches (digest)")
    if problems:
        return False, "NO: " + "; ".join(problems)
    return True, "yes"


# ------------------------------------------------------------------------------------------------------- the run


def main() -> None:
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
    args = ap.parse_args()
    policies = [p for p in args.policies.split(",") if p]
    unknown = set(policies) - set(POLICIES)
    if unknown:
        ap.error(f"unknown policies {sorted(unknown)} ({', '.join(POLICIES)})")
    if args.worker:
        if args.worker == "python":
            res = worker_python(args.path, policies, not args.no_tracemalloc, args.warm_path)
        elif args.worker == "floor":
            res = worker_floor(args.path, args.conf)
        else:
            res = worker_rspark(args.path, policies, args.conf, args.warm_path, not args.no_keyless)
        harness.worker_result(res)
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
    report.print(f"Stream: one event per element, element i at tick i, {args.companies:,} companies, prices 1.."
                 f"{args.prices}, seed {args.seed}; the query's window [RANGE {RANGE} SLIDE {RANGE}] (tumbling: "
                 f"{RANGE} events per window). Targets: >= {TARGET_EPS:,} events/s and >= {TARGET_RATIO:g}x the "
                 f"Python matcher for {' and '.join(TARGET_POLICIES)} at {TARGET_SIZE:,} events.")
    report.print()
    report.print("| events | policy | " + " | ".join(COLUMNS.values()) + " |")
    report.print("|---" * (len(COLUMNS) + 2) + "|")
    rows, notes, disagree, failed, rejected, warm_lines, keyless, floors = [], [], [], [], [], [], [], []
    for size in [int(float(s)) for s in args.sizes.split(",")]:
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
            if "error" in floor:
                failed.append(f"{size:,}/floor: {floor['error']}")
            else:
                floors.append(_floor_text(size, floor, py, policies))
        if rs:
            notes.append(f"{rs['startup_s']:.1f} s ({size:,})")
            if "keyless" in rs:
                k = rs["keyless"]
                if "error" in k:
                    failed.append(f"{size:,}/keyless consumption: {k['error']}")
                else:
                    keyless.append(f"| {size:,} | {k['s']:.2f} | {k['evaluations']:,} | {k['events']:,} | "
                                   + (f"{k['workers_mb']:.0f} |" if k["workers_mb"] is not None else "- |"))
                    rows.append({"size": size, "policy": "keyless-consumption", "replay_s": k["s"],
                                 "evaluations": k["evaluations"], "events": k["events"],
                                 "workers_mb": k["workers_mb"]})
            rejected += [f"{size:,}: {err}" for err in rs.get("load_errors", [])]
        for policy in policies:
            row: dict = {"size": size, "policy": policy}
            cells = dict.fromkeys(COLUMNS, "-")
            if py:
                py_s = py["parse_s"] + py["times"][policy]
                counts = py["counts"][policy]
                row.update(python_s=py_s, python_parse_s=py["parse_s"], python_match_s=py["times"][policy],
                           python_eps=size / py_s, matches=sum(counts.values()), python_rss_mb=py["rss_mb"],
                           python_trace_mb=py["trace_mb"].get(policy))
                cells.update(matches=f"{sum(counts.values()):,}",
                             py_s=f"{py_s:.2f} ({py['parse_s']:.2f} + {py['times'][policy]:.2f})",
                             py_eps=f"{size / py_s:,.0f}", py_rss=f"{py['rss_mb']:.0f}",
                             py_match_eps=f"{size / max(py['times'][policy], 1e-9):,.0f}",
                             trace=f"{py['trace_mb'][policy]:.2f}" if policy in py["trace_mb"] else "-")
            if rs:
                workers = rs["workers_mb"].get(policy)
                cells.update(rs_rss=f"{rs['rss_mb']:.0f}", jvm=f"{rs['jvm_used_mb']:.0f}",
                             rs_workers=f"{workers:.0f}" if workers is not None else "-")
                row["workers_mb"] = workers
                row.update(rspark_rss_mb=rs["rss_mb"], jvm_mb=rs["jvm_used_mb"], startup_s=rs["startup_s"])
                if policy in rs["errors"]:
                    failed.append(f"{size:,}/{policy}: {rs['errors'][policy]}")
                    row["rspark_error"] = rs["errors"][policy]
                    cells.update(rs_s="FAILED", agree="-")
                else:
                    rs_s = rs["load_s"] + rs["times"][policy]
                    counts = rs["counts"][policy]
                    row.update(rspark_s=rs_s, load_s=rs["load_s"], replay_s=rs["times"][policy],
                               rspark_eps=size / rs_s, rspark_matches=sum(counts.values()),
                               rspark_windows=len(counts))
                    cells.update(rs_s=f"{rs_s:.2f} ({rs['load_s']:.2f} + {rs['times'][policy]:.2f})",
                                 rs_eps=f"{size / rs_s:,.0f}")
                    if not py:
                        cells["matches"] = f"{sum(counts.values()):,}"
                    row.update(_verdicts(size, policy, rs, py, rs_s, py_s if py else None, cells, disagree))
            cells["windows"] = f"{-(-size // RANGE):,}"
            report.print(f"| {size:,} | {policy} | " + " | ".join(cells.values()) + " |")
            rows.append(row)
            if warm_path:
                line = _warm_row(size, policy, (rs or {}).get("warm"), (py or {}).get("warm"), row, disagree, failed)
                warm_lines.append(line)
    if warm_lines:
        report.print()
        report.print(f"The second stream of each size (seed {args.seed + 1}), loaded and queried after the first in "
                     "the same processes (a warm session: rspark's JVM has compiled its hot code, which the first "
                     "stream's times include):")
        report.print()
        report.print("| events | policy | " + " | ".join(WARM_COLUMNS.values()) + " |")
        report.print("|---" * (len(WARM_COLUMNS) + 2) + "|")
        for line in warm_lines:
            report.print(line)
    if keyless:
        report.print()
        report.print("Consumption without a key (one group: every basic match of the stream through one task of one "
                     "Python worker), the loaded first stream, a sliding window (each element in two windows):")
        report.print()
        report.print("```\n" + keyless_query().replace(f"<{STREAM}>", ":stocks").strip() + "\n```")
        report.print()
        report.print("| events | replay s | evaluations | events found | rspark Python worker peak RSS MB |")
        report.print("|---|---|---|---|---|")
        for line in keyless:
            report.print(line)
        report.print()
        report.print("The worker holds about two Arrow batches and one instant's rows, and the consumed triple "
                     "occurrences still in the window: its peak does not grow with the stream (docs/events.md, "
                     "Consumption).")
    if floors:
        report.print()
        report.print("Spark's floor: the stream file's lines read and cut into terms by rspark's data source (the "
                     "first step of its load) and counted, nothing else, in a fresh process of its own started as "
                     "rspark's is; then again in that process (warm). " + " ".join(floors))
    targets = [r for r in rows if "target_met" in r]
    if targets:
        report.print()
        report.print(f"Targets at {TARGET_SIZE:,} events: " + "; ".join(_target_text(r) for r in targets) + ".")
    report.print()
    report.print("matches: the matcher's total (rspark's when the matcher did not run), RSTREAM rows summed over the "
                 "windows. rspark / matcher: rspark's events/s over the matcher's, end to end (above 1: rspark is "
                 "faster). counts agree: the matches per window, their total and their digest. The matcher's "
                 "match-only figure leaves out its parse (pyoxigraph), for scale: the end-to-end figures are the "
                 "comparison.")
    if "naive" in policies:
        report.print()
        report.print("SEQ[NAIVE] pairs the LAST events of the whole window (no key): all three operands are the same "
                     "pattern, whose LAST is the window's last event, never before itself, so it matches nothing.")
    if any(POLICIES[p][1] for p in policies):
        report.print()
        report.print("MATCH CONSUME: over a tumbling window an element is in one evaluation only, so consumption "
                     "cannot change the answers (the same matches as the selection alone).")
    if notes:
        report.print()
        report.print("rspark's one-time start of the process (the JVM, a first job, the Python workers), not in its "
                     "times: " + ", ".join(notes) + ". rspark's times include loading the stream (the first figure in "
                     "parentheses); the matcher's, reading and parsing it with pyoxigraph and ordering its events.")
    if "python" in engines and not args.no_tracemalloc:
        report.print()
        report.print("The matcher's tracemalloc peak is its matching alone (per-window state and output; the parsed "
                     "events are in its RSS), measured in an untimed second pass.")
    if rejected:
        report.print()
        report.print("ELEMENTS REJECTED by rspark's load: " + "; ".join(rejected))
    if disagree:
        report.print()
        report.print("MATCH COUNTS DIFFER (rspark vs the Python matcher): " + "; ".join(disagree))
        print("\n" + "!" * 100 + "\nMISMATCH: rspark and the Python matcher disagree:\n  " + "\n  ".join(disagree)
              + "\n" + "!" * 100, file=sys.stderr, flush=True)
    elif "python" in engines and "rspark" in engines and not failed:
        report.print()
        warm = f", and on the warm session's {len(warm_lines)}" if warm_lines else ""
        report.print(f"rspark and the Python matcher agree on every (size, policy): {len(rows)} of {len(rows)}{warm}.")
    (out_dir / f"{args.name}.json").write_text(json.dumps(rows, indent=1))
    if failed:
        print("\n" + "!" * 100 + "\nrspark FAILED (nothing written to RESULTS.md):\n  " + "\n  ".join(failed)
              + "\n" + "!" * 100, file=sys.stderr, flush=True)
        raise SystemExit(1)
    png = plot(rows, out_dir / f"{args.name}.png")
    if png:
        report.plot(png)
    report.write()
    if disagree:
        raise SystemExit(1)


def _warm_row(size: int, policy: str, rs: dict | None, py: dict | None, row: dict, disagree: list,
              failed: list) -> str:
    """The warm session's table line of (size, policy); its figures go into ``row`` (``warm_*``), a disagreement or
    failure into ``disagree`` / ``failed``."""
    cells = dict.fromkeys(WARM_COLUMNS, "-")
    py_s = None
    if py:
        py_s = py["parse_s"] + py["times"][policy]
        row.update(warm_python_s=py_s, warm_python_eps=size / py_s, warm_matches=sum(py["counts"][policy].values()))
        cells.update(matches=f"{row['warm_matches']:,}", py_eps=f"{size / py_s:,.0f}",
                     py_s=f"{py_s:.2f} ({py['parse_s']:.2f} + {py['times'][policy]:.2f})")
    if rs and policy in rs["errors"]:
        failed.append(f"{size:,}/{policy} (warm): {rs['errors'][policy]}")
        cells["rs_s"] = "FAILED"
    elif rs:
        rs_s = rs["load_s"] + rs["times"][policy]
        row.update(warm_rspark_s=rs_s, warm_load_s=rs["load_s"], warm_replay_s=rs["times"][policy],
                   warm_rspark_eps=size / rs_s)
        if not py:
            cells["matches"] = f"{sum(rs['counts'][policy].values()):,}"
        cells.update(rs_s=f"{rs_s:.2f} ({rs['load_s']:.2f} + {rs['times'][policy]:.2f})", rs_eps=f"{size / rs_s:,.0f}")
        verdicts = _verdicts(size, policy, rs, py, rs_s, py_s, cells, disagree, " (warm)")
        row.update({f"warm_{k}": v for k, v in verdicts.items() if k != "check"})
    return f"| {size:,} | {policy} | " + " | ".join(cells.values()) + " |"


def _floor_text(size: int, floor: dict, py: dict | None, policies: list[str]) -> str:
    """The floor's sentence for one size: its times, and what 5x the matcher would leave rspark (at the target
    size, for the target policies the matcher ran)."""
    text = (f"{size:,} events ({floor['lines']:,} lines): {floor['scan_s']:.2f} s ({size / floor['scan_s']:,.0f} "
            f"events/s), warm {floor['scan_warm_s']:.2f} s.")
    if py and size == TARGET_SIZE:
        budgets = {policy: (py["parse_s"] + py["times"][policy]) / TARGET_RATIO
                   for policy in TARGET_POLICIES if policy in policies}
        if budgets:
            under = "over" if floor["scan_s"] > max(budgets.values()) else "within"
            text += (f" {TARGET_RATIO:g}x the matcher means loading and matching in "
                     + ", ".join(f"{s:.2f} s ({policy})" for policy, s in budgets.items())
                     + f": the floor alone is {under} that.")
    return text


def _verdicts(size: int, policy: str, rs: dict, py: dict | None, rs_s: float, py_s: float | None, cells: dict,
              disagree: list, label: str = "") -> dict:
    """rspark's run of (size, policy) against the matcher's (when it ran) and the targets: the row's figures
    (agrees, check, ratio, target_met), the table's cells filled, a disagreement added to ``disagree``."""
    out: dict = {}
    if py:
        ok, cell = agreement(rs, py, policy)
        out.update(agrees=ok, check=cell, ratio=py_s / rs_s)
        cells.update(agree=cell, ratio=f"{py_s / rs_s:.2f}x")
        if not ok:
            disagree.append(f"{size:,}/{policy}{label}: {cell}")
    if size == TARGET_SIZE and policy in TARGET_POLICIES:
        out["target_met"] = size / rs_s >= TARGET_EPS and (not py or py_s / rs_s >= TARGET_RATIO)
        cells["target"] = "met" if out["target_met"] else "MISSED"
    return out


def _target_text(r: dict) -> str:
    """A target row's verdicts: events/s and the ratio to the matcher, of the first stream and of the warm one."""
    def verdicts(eps: float, ratio: float | None) -> str:
        text = f"{eps:,.0f} events/s (>= {TARGET_EPS:,}: {'met' if eps >= TARGET_EPS else 'MISSED'})"
        if ratio is not None:
            text += f", {ratio:.2f}x the matcher (>= {TARGET_RATIO:g}x: {'met' if ratio >= TARGET_RATIO else 'MISSED'})"
        return text

    text = f"{r['policy']}: {verdicts(r['rspark_eps'], r.get('ratio'))}"
    if "warm_rspark_eps" in r:
        text += f"; warm session {verdicts(r['warm_rspark_eps'], r.get('warm_ratio'))}"
    return text


def plot(rows, path: Path) -> Path | None:
    lines = []
    for i, policy in enumerate(dict.fromkeys(r["policy"] for r in rows)):
        pts = [r for r in rows if r["policy"] == policy]
        for key, style, who in (("rspark_eps", "o-", "rspark"), ("warm_rspark_eps", "^:", "rspark, warm"),
                                ("python_eps", "s--", "matcher")):
            sel = [r for r in pts if key in r]
            if sel:
                lines.append(harness.Line([r["size"] for r in sel], [r[key] for r in sel], style,
                                          label=f"{who} {policy}", color=f"C{i}"))
    panel = harness.Panel(lines, "stream events", "events / s (end to end)", xlog=True, ylog=True,
                          hlines=[(TARGET_EPS, "target (rspark)", ":")], legend=6, outside=True)
    return harness.plot(path, [panel], (8, 4))


if __name__ == "__main__":
    main()
