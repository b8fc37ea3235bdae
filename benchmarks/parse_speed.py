"""Parse + translate speed of the query front end over the W3C syntax and evaluation queries.

Measures, in one run, for every query of the W3C SPARQL 1.1 / 1.0 / SPARQL-star suites that rspark accepts:
  - rspark: parse_query (Lark LALR, transformer inlined) + translate to algebra;
  - baseline 1: the same grammar with Lark's Earley parser (parse tree only, no translation) -- what the issue asks
    to compare against;
  - baseline 2: pyoxigraph (Rust) preparing and running the query on an empty store: a native reference point.
Prints a table of median / p90 / max per query in milliseconds and ratios, writes it to benchmarks/RESULTS.md (its
section, see ``_results.py``; ``--no-results`` skips it), and saves a PNG histogram.

    python benchmarks/parse_speed.py [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from lark import Lark

import rspark
from rspark import compile_query

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "w3c"
SUITES = ["sparql11", "sparql10", "sparql-star/rdf-star-cg"]


def grammar() -> str:
    """rspark's query grammar: the Lark file shipped in the package (found wherever it sits in it)."""
    found = sorted(Path(rspark.__file__).parent.rglob("rspql.lark"))
    if len(found) != 1:
        raise SystemExit(f"expected one rspql.lark grammar in the rspark package, found {[str(p) for p in found]}")
    return found[0].read_text(encoding="utf-8")


_CODEPOINT = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def decode_codepoints(text: str) -> str:
    """SPARQL 1.1 section 19.2: ``\\uXXXX`` / ``\\UXXXXXXXX`` escapes replaced before parsing (what rspark's
    parser does first, for the Earley parser that reads the same grammar); ValueError on a surrogate."""
    def replace(match: re.Match) -> str:
        code = int(match.group(1) or match.group(2), 16)
        if 0xD800 <= code < 0xE000 or code > 0x10FFFF:
            raise ValueError(f"invalid code point escape {match.group(0)}")
        return chr(code)

    return _CODEPOINT.sub(replace, text)


def corpus() -> list[tuple[str, str]]:
    out = []
    for suite in SUITES:
        for test in json.loads((TESTDATA / suite / "tests-index.json").read_text(encoding="utf-8")):
            kind = test["type"]
            if "Negative" in kind or "Update" in kind or not test.get("query"):
                continue
            if "Syntax" not in kind and kind != "QueryEvaluationTest":
                continue
            path = TESTDATA / suite / test["query"]
            out.append((path.as_uri(), path.read_text(encoding="utf-8")))
    return out


def _run(store, text: str, base: str):
    result = store.query(text, base_iri=base)
    return result if isinstance(result, bool) else list(result)


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per query; the best run is kept")
    harness.common_arguments(parser, "parse_speed", conf=False)
    args = parser.parse_args()
    report = _results.Report(args.name, enabled=not args.no_results)

    queries = corpus()
    earley = Lark(grammar(), parser="earley", lexer="dynamic")
    try:
        import pyoxigraph

        store = pyoxigraph.Store()
    except ImportError:  # pragma: no cover
        store = None

    rows = {"rspark LALR parse+translate": [], "Lark Earley parse only": [], "pyoxigraph query (empty store)": []}
    earley_failed = oxi_failed = 0
    for base, text in queries:
        rows["rspark LALR parse+translate"].append(
            timed(lambda text=text, base=base: compile_query(text, base_iri=base), args.repeat))
        try:
            decoded = decode_codepoints(text)
            earley.parse(decoded)
            rows["Lark Earley parse only"].append(
                timed(lambda decoded=decoded: earley.parse(decoded), max(1, args.repeat // 2)))
        except Exception:
            earley_failed += 1
        if store is not None:
            try:
                rows["pyoxigraph query (empty store)"].append(
                    timed(lambda text=text, base=base: _run(store, text, base), args.repeat))
            except Exception:  # noqa: BLE001 - syntax it does not read, SERVICE calls, ...
                oxi_failed += 1

    base_median = statistics.median(rows["rspark LALR parse+translate"])
    report.print(f"{len(queries)} queries (W3C positive syntax + evaluation queries), best of {args.repeat} runs each")
    report.print()
    report.print("```", stdout=False)
    report.print(f"{'parser':34} {'n':>5} {'median ms':>10} {'p90 ms':>8} {'max ms':>8} {'median / rspark':>16}")
    for name, values in rows.items():
        if not values:
            continue
        values = sorted(values)
        p90 = values[int(0.9 * (len(values) - 1))]
        med = statistics.median(values)
        report.print(f"{name:34} {len(values):>5} {med:>10.3f} {p90:>8.3f} {values[-1]:>8.3f} "
                     f"{med / base_median:>15.2f}x")
    report.print("```", stdout=False)
    if earley_failed or oxi_failed:
        report.print()
        report.print(f"not timed: Earley could not parse {earley_failed}; pyoxigraph rejected {oxi_failed} "
                     "(RSP or SPARQL-star CG syntax it does not read)")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plt = _results.pyplot()
    if plt is None:
        report.write()
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, values in rows.items():
        if values:
            ax.hist(values, bins=[i * 0.25 for i in range(0, 81)], alpha=0.5, label=name)
    ax.set_xlabel("time per query (ms)")
    ax.set_ylabel("queries")
    ax.set_title("Query front end: parse + translate time per W3C query")
    ax.legend()
    report.plot(_results.save_plot(fig, out / f"{args.name}.png"))
    report.write()


if __name__ == "__main__":
    main()
