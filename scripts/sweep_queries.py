"""Every query file of the tests and of ../shared/testdata through the installed command line, as a user would run
it: ``rspark replay`` when the repository has a stream for every stream the query reads, ``rspark explain``
otherwise. Each must answer (exit 0) or be refused with a located error (exit 2, ``FILE:LINE:COLUMN:``), and its
standard error must hold ``rspark:`` lines only (no Java trace, no Spark start-up line).

    python3 scripts/sweep_queries.py [--only SUBSTRING] [--explain-only]

Prints one line per file (outcome, records, stderr lines) and a summary; exits 1 if any file breaks the rule.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTDATA = REPO.parent / "shared" / "testdata"
sys.path.insert(0, str(REPO))

STREAMS = {  # stream IRI -> a recorded stream of the repository or the test data
    "http://example.org/streams/social": REPO / "tests/data/social.trig",
    "http://example.org/social": REPO / "tests/data/social.trig",
    "http://example.org/S": REPO / "tests/data/fig1.trig",
    "http://ex.org/streams/test": TESTDATA / "csrbench/stream.trig",
}
LOCATED = re.compile(r"^rspark: error: .+:\d+:\d+: ")


def query_files(tmp: Path) -> list[Path]:
    from tests.support.rspql_md import rspql_md_queries

    files = sorted((REPO / "tests/queries").rglob("*.rq"))
    files += sorted(TESTDATA.glob("rsp4j/**/*.rspql")) + sorted((TESTDATA / "csrbench/rspql-queries").glob("*.rspql"))
    for name, line, text in rspql_md_queries(TESTDATA / "rsp-ql"):
        path = tmp / f"{Path(name).stem.replace(' ', '_')}_{line}.rq"
        path.write_text(text, encoding="utf-8")
        files.append(path)
    return files


def streams_of(path: Path) -> list[str] | None:
    """The stream IRIs the query reads, or None when it does not translate (explain reports why)."""
    from rspark.syntax.translate import compile_query

    try:
        plan = compile_query(path.read_text(encoding="utf-8"))
    except Exception:  # noqa: BLE001 - the command line reports it
        return None
    return sorted({d.stream.value for d in plan.dataset.windows})


def run(path: Path, explain_only: bool) -> tuple[str, int, list[str], bool]:
    iris = streams_of(path)
    replay = not explain_only and iris and all(iri in STREAMS for iri in iris)
    if replay:
        args = ["replay", str(path), "--until", "end", "--format", "jsonl"]
        for iri in iris:
            args += ["--stream", f"{iri}={STREAMS[iri]}"]
    else:
        args = ["explain", str(path)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    out = subprocess.run(["rspark", *args], capture_output=True, text=True, env=env, timeout=600)
    err = [line for line in out.stderr.splitlines() if line.strip()]
    foreign = [line for line in err if not line.startswith("rspark:")]
    records = len(out.stdout.splitlines()) if replay else 0
    if out.returncode == 0:
        outcome = f"answered ({records} records)" if replay else "explained"
        ok = not foreign
    elif out.returncode == 2:
        outcome = "refused"
        ok = not foreign and bool(err) and bool(LOCATED.match(err[-1]))
    else:
        outcome = f"exit {out.returncode}"
        ok = False
    detail = err[-1] if out.returncode else ""
    return f"{args[0]:7} {outcome}", len(foreign), [detail] if detail else [], ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=None, help="only the files whose path holds this text")
    parser.add_argument("--explain-only", action="store_true", help="explain every file (no Spark)")
    args = parser.parse_args()
    bad = 0
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in query_files(Path(tmp)):
            if args.only and args.only not in str(path):
                continue
            outcome, foreign, detail, ok = run(path, args.explain_only)
            bad += not ok
            key = outcome.split(" (")[0]
            counts[key] = counts.get(key, 0) + 1
            shown = path.relative_to(REPO.parent) if REPO.parent in path.parents else path.name
            print(f"{'ok ' if ok else 'BAD'} {shown}: {outcome}; {foreign} foreign stderr lines"
                  + (f"; {detail[0][:160]}" if detail else ""), flush=True)
    print("summary:", ", ".join(f"{n} {k.strip()}" for k, n in sorted(counts.items())), f"; {bad} breaking the rule")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
