"""cep_throughput.py's report: the table of (events, policy) rows, the warm session's table, the keyless
consumption table, Spark's floor and the targets, the notes under them, the JSON rows and the plot.

:class:`Tables` gathers the workers' results size by size (printing each row through the run's
:class:`_results.Report` as it comes) and says what failed or disagreed; :func:`agreement` is the comparison of
rspark's matches with the matcher's (per window counts, the total, the digest).
"""

from __future__ import annotations

import sys
from pathlib import Path

import harness
from workloads.stocks import POLICIES, RANGE, STREAM

from cep.workers import keyless_query

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
TARGET_EPS = 150_000  # in a fresh process, with the ratio below
TARGET_RATIO = 1.5
WARM_TARGET_EPS = 300_000  # in a warm session (the second stream, loaded and queried in the same process)



class Tables:
    """The rows of a run, size by size, printed through ``report`` as they come; ``rows`` (the JSON), ``failed``
    (rspark's failures: nothing is written to RESULTS.md) and ``disagree`` (rspark against the matcher) after."""

    def __init__(self, report, policies: list[str]) -> None:
        self.report, self.policies = report, policies
        self.rows: list = []
        self.notes: list = []
        self.disagree: list = []
        self.failed: list = []
        self.rejected: list = []
        self.warm_lines: list = []
        self.keyless: list = []
        self.floors: list = []

    def header(self, args) -> None:
        """The stream and the targets, then the table's header."""
        report = self.report
        report.print(f"Stream: one event per element, element i at tick i, {args.companies:,} companies, prices 1.."
                     f"{args.prices}, seed {args.seed}; the query's window [RANGE {RANGE} SLIDE {RANGE}] (tumbling: "
                     f"{RANGE} events per window). Targets for {' and '.join(TARGET_POLICIES)} at {TARGET_SIZE:,} "
                     f"events: >= {TARGET_EPS:,} events/s and >= {TARGET_RATIO:g}x the Python matcher in a fresh "
                     f"process, >= {WARM_TARGET_EPS:,} events/s in a warm session.")
        report.print()
        report.print("| events | policy | " + " | ".join(COLUMNS.values()) + " |")
        report.print("|---" * (len(COLUMNS) + 2) + "|")

    def add_floor(self, size: int, floor: dict, py: dict | None) -> None:
        """Spark's floor of one size (its worker's result)."""
        if "error" in floor:
            self.failed.append(f"{size:,}/floor: {floor['error']}")
        else:
            self.floors.append(_floor_text(size, floor, py, self.policies))

    def add_size(self, size: int, rs: dict | None, py: dict | None, warm: bool) -> None:
        """One size's results (``rs``, ``py``: the rspark and matcher workers', None when not run): rspark's start
        and keyless query, then a row per policy (and its warm row when the second stream ran)."""
        if rs:
            self.notes.append(f"{rs['startup_s']:.1f} s ({size:,})")
            if "keyless" in rs:
                self._add_keyless(size, rs["keyless"])
            self.rejected += [f"{size:,}: {err}" for err in rs.get("load_errors", [])]
        for policy in self.policies:
            row = self._add_row(size, policy, rs, py)
            if warm:
                line = _warm_row(size, policy, (rs or {}).get("warm"), (py or {}).get("warm"), row, self.disagree,
                                 self.failed)
                self.warm_lines.append(line)

    def _add_keyless(self, size: int, k: dict) -> None:
        if "error" in k:
            self.failed.append(f"{size:,}/keyless consumption: {k['error']}")
        else:
            self.keyless.append(f"| {size:,} | {k['s']:.2f} | {k['evaluations']:,} | {k['events']:,} | "
                                + (f"{k['workers_mb']:.0f} |" if k["workers_mb"] is not None else "- |"))
            self.rows.append({"size": size, "policy": "keyless-consumption", "replay_s": k["s"],
                              "evaluations": k["evaluations"], "events": k["events"],
                              "workers_mb": k["workers_mb"]})

    def _add_row(self, size: int, policy: str, rs: dict | None, py: dict | None) -> dict:
        """The table's line of (size, policy), printed; its JSON row, kept and returned."""
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
                self.failed.append(f"{size:,}/{policy}: {rs['errors'][policy]}")
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
                row.update(_verdicts(size, policy, rs, py, rs_s, py_s if py else None, cells, self.disagree))
        cells["windows"] = f"{-(-size // RANGE):,}"
        self.report.print(f"| {size:,} | {policy} | " + " | ".join(cells.values()) + " |")
        self.rows.append(row)
        return row

    def footer(self, args, engines: list[str]) -> None:
        """Everything under the main table: the warm session's and the keyless tables, the floor, the targets, the
        notes, and what was rejected or disagreed (the disagreement on standard error too)."""
        self._warm_table(args)
        self._keyless_table()
        report, policies, rows = self.report, self.policies, self.rows
        if self.floors:
            report.print()
            report.print("Spark's floor: the stream file's lines read and cut into terms by rspark's data source (the "
                         "first step of its load) and counted, nothing else, in a fresh process of its own started as "
                         "rspark's is; then again in that process (warm). " + " ".join(self.floors))
        targets = [r for r in rows if "target_met" in r]
        if targets:
            report.print()
            report.print(f"Targets at {TARGET_SIZE:,} events: " + "; ".join(_target_text(r) for r in targets) + ".")
        report.print()
        report.print("matches: the matcher's total (rspark's when the matcher did not run), RSTREAM rows summed over "
                     "the windows. rspark / matcher: rspark's events/s over the matcher's, end to end (above 1: rspark "
                     "is faster). counts agree: the matches per window, their total and their digest. The matcher's "
                     "match-only figure leaves out its parse (pyoxigraph), for scale: the end-to-end figures are the "
                     "comparison.")
        if "naive" in policies:
            report.print()
            report.print("SEQ[NAIVE] pairs the LAST events of the whole window (no key): all three operands are the "
                         "same pattern, whose LAST is the window's last event, never before itself, so it matches "
                         "nothing.")
        if any(POLICIES[p][1] for p in policies):
            report.print()
            report.print("MATCH CONSUME: over a tumbling window an element is in one evaluation only, so consumption "
                         "cannot change the answers (the same matches as the selection alone).")
        self._notes(args, engines)

    def _warm_table(self, args) -> None:
        if not self.warm_lines:
            return
        report = self.report
        report.print()
        report.print(f"The second stream of each size (seed {args.seed + 1}), loaded and queried after the first in "
                     "the same processes (a warm session: rspark's JVM has compiled its hot code, which the first "
                     "stream's times include):")
        report.print()
        report.print("| events | policy | " + " | ".join(WARM_COLUMNS.values()) + " |")
        report.print("|---" * (len(WARM_COLUMNS) + 2) + "|")
        for line in self.warm_lines:
            report.print(line)

    def _keyless_table(self) -> None:
        if not self.keyless:
            return
        report = self.report
        report.print()
        report.print("Consumption without a key (one group: every basic match of the stream through one task of one "
                     "Python worker), the loaded first stream, a sliding window (each element in two windows):")
        report.print()
        report.print("```\n" + keyless_query().replace(f"<{STREAM}>", ":stocks").strip() + "\n```")
        report.print()
        report.print("| events | replay s | evaluations | events found | rspark Python worker peak RSS MB |")
        report.print("|---|---|---|---|---|")
        for line in self.keyless:
            report.print(line)
        report.print()
        report.print("The worker holds about two Arrow batches and one instant's rows, and the consumed triple "
                     "occurrences still in the window: its peak does not grow with the stream (docs/events.md, "
                     "Consumption).")

    def _notes(self, args, engines: list[str]) -> None:
        report, rows, disagree = self.report, self.rows, self.disagree
        if self.notes:
            report.print()
            report.print("rspark's one-time start of the process (the JVM, a first job, the Python workers), not in "
                         "its times: " + ", ".join(self.notes) + ". rspark's times include loading the stream (the "
                         "first figure in parentheses); the matcher's, reading and parsing it with pyoxigraph and "
                         "ordering its events.")
        if "python" in engines and not args.no_tracemalloc:
            report.print()
            report.print("The matcher's tracemalloc peak is its matching alone (per-window state and output; the "
                         "parsed events are in its RSS), measured in an untimed second pass.")
        if self.rejected:
            report.print()
            report.print("ELEMENTS REJECTED by rspark's load: " + "; ".join(self.rejected))
        if disagree:
            report.print()
            report.print("MATCH COUNTS DIFFER (rspark vs the Python matcher): " + "; ".join(disagree))
            print("\n" + "!" * 100 + "\nMISMATCH: rspark and the Python matcher disagree:\n  " + "\n  ".join(disagree)
                  + "\n" + "!" * 100, file=sys.stderr, flush=True)
        elif "python" in engines and "rspark" in engines and not self.failed:
            report.print()
            warm = f", and on the warm session's {len(self.warm_lines)}" if self.warm_lines else ""
            report.print(f"rspark and the Python matcher agree on every (size, policy): {len(rows)} of {len(rows)}"
                         f"{warm}.")


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
        verdicts = _verdicts(size, policy, rs, py, rs_s, py_s, cells, disagree, " (warm)", warm=True)
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
              disagree: list, label: str = "", warm: bool = False) -> dict:
    """rspark's run of (size, policy) against the matcher's (when it ran) and the targets (``warm``: the warm
    session's, events/s alone): the row's figures (agrees, check, ratio, target_met), the table's cells filled, a
    disagreement added to ``disagree``."""
    out: dict = {}
    if py:
        ok, cell = agreement(rs, py, policy)
        out.update(agrees=ok, check=cell, ratio=py_s / rs_s)
        cells.update(agree=cell, ratio=f"{py_s / rs_s:.2f}x")
        if not ok:
            disagree.append(f"{size:,}/{policy}{label}: {cell}")
    if size == TARGET_SIZE and policy in TARGET_POLICIES:
        if warm:
            out["target_met"] = size / rs_s >= WARM_TARGET_EPS
        else:
            out["target_met"] = size / rs_s >= TARGET_EPS and (not py or py_s / rs_s >= TARGET_RATIO)
        cells["target"] = "met" if out["target_met"] else "MISSED"
    return out


def _target_text(r: dict) -> str:
    """A target row's verdicts: events/s and the ratio to the matcher, of the first stream and of the warm one."""
    def verdicts(eps: float, ratio: float | None, target: int = TARGET_EPS) -> str:
        text = f"{eps:,.0f} events/s (>= {target:,}: {'met' if eps >= target else 'MISSED'})"
        if ratio is not None and target == TARGET_EPS:
            text += f", {ratio:.2f}x the matcher (>= {TARGET_RATIO:g}x: {'met' if ratio >= TARGET_RATIO else 'MISSED'})"
        return text

    text = f"{r['policy']}: {verdicts(r['rspark_eps'], r.get('ratio'))}"
    if "warm_rspark_eps" in r:
        text += f"; warm session {verdicts(r['warm_rspark_eps'], r.get('warm_ratio'), WARM_TARGET_EPS)}"
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
