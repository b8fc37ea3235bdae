"""The ``rspark`` command line.

Exit codes (CONTRACT section 4): 0 success; 2 a usage or query syntax error (message with file, line and column);
1 any other failure.
"""

from __future__ import annotations

import argparse
import sys

from rspark.algebra.sse import to_sse
from rspark.algebra.translate import compile_query
from rspark.errors import RsparkError
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


def _pairs(values: list[str] | None, flag: str) -> list[tuple[str, str]]:
    out = []
    for value in values or []:
        iri, sep, path = value.partition("=")
        if not sep or not iri or not path:
            raise UsageError(f"{flag} expects IRI=PATH, got {value!r}")
        out.append((iri, path))
    return out


class UsageError(Exception):
    """A command-line usage problem (exit code 2)."""


def _conf(values: list[str] | None) -> dict[str, str]:
    """``--conf KEY=VALUE`` options: Spark configuration for the session (e.g. spark.driver.memory=8g)."""
    out = {}
    for value in values or []:
        key, sep, setting = value.partition("=")
        if not sep or not key.strip() or not setting.strip():
            raise UsageError(f"--conf expects KEY=VALUE (a Spark setting, e.g. spark.driver.memory=8g), "
                             f"got {value!r}")
        out[key.strip()] = setting.strip()
    return out


def cmd_sparql(args: argparse.Namespace) -> int:
    """Answer a SPARQL 1.1 query over static data files."""
    from rspark.engine.engine import Engine

    text = _read(args.query)
    graphs = _pairs(args.graph, "--graph")
    compile_query(text, base_iri=args.base, source=args.query)  # syntax errors before Spark starts
    with Engine(master=args.master, conf=_conf(args.conf)) as engine:
        for path in args.data or []:
            engine.load(path)
        for iri, path in graphs:
            engine.load(path, graph=iri)
        result = engine.sparql(text, base_iri=args.base, source=args.query)
        fmt = args.format or ("table" if sys.stdout.isatty() else "json")
        sys.stdout.write(result.serialize(fmt))
    return 0


def _times(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise UsageError("--times expects a comma-separated list of instants")
    return items


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay continuous queries over recorded streams; print one record per evaluation instant."""
    import json
    from pathlib import Path

    from rspark.engine.engine import Engine
    from rspark.io import results as R

    texts = [(_read(path), path) for path in args.queries]
    for text, path in texts:
        compile_query(text, source=path)  # syntax errors first, before Spark starts
    streams = _pairs(args.stream, "--stream")
    graphs = _pairs(args.graph, "--graph")
    if not streams:
        raise UsageError("replay needs at least one --stream IRI=PATH")
    fmt = args.format or ("table" if sys.stdout.isatty() else "jsonl")
    with Engine(master=args.master, profile=args.profile, conf=_conf(args.conf)) as engine:
        for path in args.data or []:
            engine.load(path)
        for iri, path in graphs:
            engine.load(path, graph=iri)
        engine.add_streams(streams, strict=args.strict)  # loaded concurrently
        for err in engine.errors:
            print(f"rspark: warning: {err}", file=sys.stderr)
        outputs = engine.replay_iter([t for t, _ in texts], until=args.until, times=_times(args.times),
                                     names=[Path(p).name for _, p in texts])
        out = sys.stdout
        header_done: set = set()
        for rec in outputs:
            if fmt == "jsonl":
                out.write(json.dumps(rec.to_json(), ensure_ascii=False) + "\n")
            elif fmt == "trig":
                if rec.form != "CONSTRUCT":
                    raise UsageError("--format trig writes CONSTRUCT output; this query is " + rec.form)
                out.write(_trig_element(rec))
            elif fmt == "table":
                out.write(f"# {rec.query} @ {rec.time}\n" + R.to_table(rec.value) + "\n")
            elif fmt in ("csv", "tsv"):
                if rec.form != "SELECT":
                    raise UsageError(f"--format {fmt} writes SELECT output; this query is {rec.form}")
                text = (R.to_csv if fmt == "csv" else R.to_tsv)(R.SolutionSequence(["time", "query"] + rec.vars, [
                    {"time": _time_literal(rec.time), "query": _plain(rec.query), **row} for row in rec.rows]))
                lines = text.splitlines(keepends=True)
                if rec.query in header_done:
                    lines = lines[1:]
                header_done.add(rec.query)
                out.write("".join(lines))
    return 0


def _plain(text: str):
    from rspark.model.terms import Literal

    return Literal(str(text))


def _time_literal(value):
    from rspark.model.terms import XSD, Literal

    if isinstance(value, str):
        return Literal(value, XSD + "dateTime")
    return Literal(str(value), XSD + ("integer" if isinstance(value, int) else "decimal"))


_GENERATED_AT = "<http://www.w3.org/ns/prov#generatedAtTime>"


def _trig_element(rec) -> str:
    """One CONSTRUCT output instant as a stream element in the format of CONTRACT section 1.

    A template with GRAPH blocks builds the elements itself: its named graphs are written as they are, with its
    default-graph triples (their metadata) after them, and a graph that the template did not give a
    prov:generatedAtTime is stamped with the instant."""
    from rspark.io.results import GraphResult, to_ntriples

    stamp = _time_literal(rec.time).n3()
    if rec.quads:
        graphs: dict = {}
        default = []
        for s, p, o, g in rec.triples:
            if g is None:
                default.append((s, p, o))
            else:
                graphs.setdefault(g, []).append((s, p, o))
        stamped = {s for s, p, _ in default if p.n3() == _GENERATED_AT}
        out = []
        for g, triples in graphs.items():
            body = to_ntriples(GraphResult(triples))
            out.append(f"{g.n3()} {{\n" + "".join("  " + line + "\n" for line in body.splitlines()) + "}\n")
            if g not in stamped:
                out.append(f"{g.n3()} {_GENERATED_AT} {stamp} .\n")
        out.append(to_ntriples(GraphResult(default)))
        return "".join(out)
    name = f"<urn:rspark:{rec.query}#t{rec.ticks}>"
    body = to_ntriples(GraphResult(rec.triples))
    lines = "".join("  " + line + "\n" for line in body.splitlines())
    return f"{name} {{\n{lines}}}\n{name} {_GENERATED_AT} {stamp} .\n"


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

    sparql = commands.add_parser(
        "sparql", help="answer a SPARQL 1.1 query over RDF files (on Spark)",
        description="Load the data files (default graph) and named graphs, answer the query, print the result.")
    sparql.add_argument("query", metavar="QUERY.rq", help="query file; '-' reads standard input")
    sparql.add_argument("--data", action="append", metavar="PATH",
                        help="RDF file for the default graph (.ttl .nt .nq .trig .rdf); repeatable")
    sparql.add_argument("--graph", action="append", metavar="IRI=PATH", help="RDF file as the named graph IRI; repeatable")
    sparql.add_argument("--format", choices=["json", "xml", "csv", "tsv", "table", "ntriples", "nquads"],
                        help="result format (default: table on a terminal, else json; ntriples for CONSTRUCT, nquads for "
                             "a CONSTRUCT with GRAPH blocks)")
    sparql.add_argument("--base", metavar="IRI", default=None, help="base IRI for relative IRIs in the query")
    sparql.add_argument("--master", metavar="URL", default=None, help="Spark master (default local[*])")
    sparql.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="a Spark setting for the session, e.g. spark.driver.memory=8g; repeatable")
    sparql.set_defaults(run=cmd_sparql)

    replay = commands.add_parser(
        "replay", help="replay continuous queries over recorded RDF streams",
        description="Evaluate RSP-QL queries over recorded streams (TriG / N-Quads, one named graph per element, "
                    "timestamped by prov:generatedAtTime) at every evaluation instant, in time order.")
    replay.add_argument("queries", nargs="+", metavar="QUERY.rq", help="query files (queries registering a stream "
                                                                       "feed the queries reading it)")
    replay.add_argument("--stream", action="append", metavar="IRI=PATH", help="a recorded stream; repeatable")
    replay.add_argument("--data", action="append", metavar="PATH", help="static data for the default graph")
    replay.add_argument("--graph", action="append", metavar="IRI=PATH", help="static named graph; repeatable")
    replay.add_argument("--until", metavar="T", help="last instant (number or ISO 8601 date-time; default: the "
                                                     "last element's timestamp)")
    replay.add_argument("--times", metavar="T1,T2,...", help="evaluate exactly at these instants")
    replay.add_argument("--profile", metavar="NAME", help="engine profile (default, csparql, cqels, sparqlstream, "
                                                          "rsp4j, rspql-star, epsparql-*): see docs/profiles.md")
    replay.add_argument("--format", choices=["jsonl", "table", "csv", "tsv", "trig"],
                        help="output format (default: table on a terminal, else jsonl)")
    replay.add_argument("--strict", action="store_true", help="fail on the first bad stream element instead of "
                                                              "reporting and skipping it")
    replay.add_argument("--master", metavar="URL", default=None, help="Spark master (default local[*])")
    replay.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="a Spark setting for the session, e.g. spark.driver.memory=8g; repeatable")
    replay.set_defaults(run=cmd_replay)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return args.run(args)
    except (QuerySyntaxError, UsageError) as exc:
        print(f"rspark: {exc}", file=sys.stderr)
        return 2
    except RsparkError as exc:
        print(f"rspark: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # profile, window and report errors name the bad setting
        from rspark.engine.profiles import ProfileError

        print(f"rspark: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ProfileError) else 1
    except Exception as exc:
        from rspark.errors import jvm_gone, memory_limit_error

        if not jvm_gone(exc):
            if isinstance(exc, OSError):
                print(f"rspark: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
                return 1
            raise
        # the Spark JVM went away outside the query (while loading, or freeing the cache after it)
        err = memory_limit_error(exc, "the command", jvm=True)
        print(f"rspark: {err or 'lost the connection to the Spark JVM: ' + str(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
