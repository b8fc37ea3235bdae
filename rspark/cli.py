"""The ``rspark`` command line.

Exit codes (CONTRACT section 4): 0 success; 2 a usage or query syntax error (message with file, line and column);
1 any other failure.
"""

from __future__ import annotations

import argparse
import sys

from rspark.algebra.sse import to_sse
from rspark.algebra.translate import compile_query
from rspark.syntax.parser import QuerySyntaxError


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def cmd_explain(args: argparse.Namespace) -> int:
    """Print the algebra of each query file."""
    for i, path in enumerate(args.queries):
        text = _read(path)
        plan = compile_query(text, base_iri=args.base, source=path)
        if len(args.queries) > 1:
            print(("\n" if i else "") + f"# {path}")
        print(to_sse(plan))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rspark",
        description="RDF Stream Processing on Apache Spark: continuous SPARQL (RSP-QL, RSEP-QL, EP-SPARQL, RSP-QL*).")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    explain = commands.add_parser(
        "explain", help="print the parsed algebra of a query (S-expressions, as Jena's SSE)",
        description="Parse and translate each query file and print its algebra: the streaming dataset (windows, "
                    "graphs), registration, R2S operator, and the operator tree.")
    explain.add_argument("queries", nargs="+", metavar="QUERY.rq", help="query file(s); '-' reads standard input")
    explain.add_argument("--base", metavar="IRI", default=None, help="base IRI for relative IRIs in the query")
    explain.set_defaults(run=cmd_explain)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return args.run(args)
    except QuerySyntaxError as exc:
        print(f"rspark: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"rspark: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
