"""RSP-QL*'s evaluation (Keskisarkka et al., SEMANTiCS 2019, Sec. 8) on rspark: RDF-star against RDF reification, in
bytes per stream element (Fig. 1) and in query time (Fig. 2).

Fig. 1 (bytes): one stream element with n annotated triples, each with one metadata triple, written in TriG-star
(``:s :p :o {| :confidence 0.9 |}``) and with RDF reification (the triple, and a statement node with rdf:type
rdf:Statement, rdf:subject, rdf:predicate, rdf:object and the metadata triple: the paper's "four additional triples"),
each with one prefix and a base IRI (reification also declares the rdf: prefix), plain and gzip-compressed (level 9;
the paper's compressor is not named), for n = 1 to 100.

Fig. 2 (query time): streams of E elements (numeric timestamps 1..E), each with one confidence-annotated triple
(``:obsI :value V {| :confidence C |}``) and k other annotated triples (``:obsI :tagJ "J" {| :source :sJ |}``); a query
that matches and filters the confidence-annotated triples per window ``[RANGE 100 STEP 100]``, written three ways:

  rdf-star          ``<< ?obs :value ?v >> :confidence ?c FILTER(?c > 0.5)``
  reification       the statement's five patterns in the vocabulary's order (rdf:type first, the metadata last)
  reification-sel   the same patterns ordered by selectivity (the metadata predicate first), as the paper's
                    optimised reification query

each replayed by rspark (``Engine.replay_iter`` after one load of the stream, load timed apart, the median of three
replays after an untimed one; the RDF-star query also as ``rdf-star-join``, its quoted triples decomposed by a join
with the stream's quoted-triple table, rspark's way without its JVM helpers, instead of in place), and by pyoxigraph
beside it in the same run (the stream parsed once, then per window a store of its elements and the query). The
answers of the seven (three forms on two engines, and rdf-star-join) must be equal: the script fails otherwise.
Prints the tables, writes them to benchmarks/RESULTS.md (``--no-results`` skips it), saves JSON and a PNG.

    python benchmarks/rdfstar_vs_reification.py [--elements 10000] [--others 0,10,50,100] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results
import harness

EX = "http://example.org/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
PROV = "http://www.w3.org/ns/prov#"
RANGE = 100
REPEAT = 3  # rspark's replays of each query: the median is reported
SIZES = [1, 2, 5, 10, 20, 50, 100]
P = f"PREFIX : <{EX}> PREFIX rdf: <{RDF}> "
WINDOW = f"FROM NAMED WINDOW :w ON :s [RANGE {RANGE} STEP {RANGE}] "
BODIES = {
    "rdf-star": "<< ?obs :value ?v >> :confidence ?c FILTER(?c > 0.5)",
    "reification": "?st rdf:type rdf:Statement . ?st rdf:subject ?obs . ?st rdf:predicate :value . "
                   "?st rdf:object ?v . ?st :confidence ?c FILTER(?c > 0.5)",
    "reification-sel": "?st :confidence ?c . ?st rdf:predicate :value . ?st rdf:subject ?obs . ?st rdf:object ?v . "
                       "?st rdf:type rdf:Statement FILTER(?c > 0.5)",
}
FORMS = {"rdf-star": "star", "reification": "reif", "reification-sel": "reif"}
# rspark only: the RDF-star query with quoted triples decomposed by a join with the stream's table of quoted triples
# (the path of a session without rspark's JVM helpers) instead of in place
JOIN_FORM = "rdf-star-join"


def query(form: str) -> str:
    body = BODIES["rdf-star" if form == JOIN_FORM else form]
    # (the join form's text differs by a comment: a compiled plan is never reused for it)
    return P + "SELECT ?obs ?v ?c " + WINDOW + "WHERE { WINDOW :w { " + body + " } }" + \
        ("\n# joined with the quoted triples" if form == JOIN_FORM else "")


# ------------------------------------------------------------------------------------------------ the data


def element(i: int, annotated: list[tuple[str, str, str, str, str]], reified: bool) -> str:
    """One element ``:gI`` holding ``annotated`` triples (s, p, o, metadata predicate, metadata object)."""
    if not reified:
        body = " ".join(f"{s} {p} {o} {{| {q} {v} |}} ." for s, p, o, q, v in annotated)
    else:
        body = " ".join(f"{s} {p} {o} . _:st{i}x{j} rdf:type rdf:Statement ; rdf:subject {s} ; rdf:predicate {p} ; "
                        f"rdf:object {o} ; {q} {v} ." for j, (s, p, o, q, v) in enumerate(annotated))
    return f":g{i} {{ {body} }}\n:g{i} prov:generatedAtTime {i} .\n"


def header(reified: bool) -> str:
    return (f"@prefix : <{EX}> .\n@prefix prov: <{PROV}> .\n" + (f"@prefix rdf: <{RDF}> .\n" if reified else ""))


def one_element_bytes(n: int, reified: bool) -> str:
    """Fig. 1's element: one prefix and a base IRI (and rdf: for reification), n triples with one metadata triple
    each."""
    triples = [(f":s{j}", ":p", f":o{j}", ":confidence", f"0.{j % 9 + 1}") for j in range(n)]
    body = element(1, triples, reified).split("\n")[0]
    return (f"@prefix : <{EX}> .\n" + (f"@prefix rdf: <{RDF}> .\n" if reified else "") +
            f"@base <{EX}stream/> .\n" + body + "\n")


def write_stream(path: Path, elements: int, others: int, reified: bool) -> None:
    with path.open("w") as f:
        f.write(header(reified))
        for i in range(1, elements + 1):
            confidence = f"0.{(i * 7) % 10}"  # 0.0 .. 0.9: about 40 % above 0.5
            triples = [(f":obs{i}", ":value", str(i % 97), ":confidence", confidence)]
            triples += [(f":obs{i}", f":tag{j}", f'"{j}"', ":source", f":src{j}") for j in range(others)]
            f.write(element(i, triples, reified))


# ------------------------------------------------------------------------------------------------ the engines


def _digest(rows) -> tuple[int, str]:
    digest, count = 0, 0
    for key in rows:
        digest ^= int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")
        count += 1
    return count, f"{digest:016x}"


def worker_rspark(paths: dict, conf: list[str]) -> dict:
    import os

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from rspark import Engine

    out: dict = {"load_s": {}, "times": {}, "rows": {}, "digest": {}}
    settings = harness.spark_settings(conf, **{"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "8"})
    with Engine(conf=settings) as engine:
        harness.start_spark(engine.spark)
        engine.add_stream(EX + "s", paths["warm"])  # untimed: the first load in a process pays for warming up
        for kind in ("star", "reif"):
            path = paths[kind]
            engine.clear()
            t = time.perf_counter()
            engine.add_stream(EX + "s", path)
            out["load_s"][kind] = time.perf_counter() - t
            for form, needs in [*FORMS.items(), (JOIN_FORM, "star")]:
                if needs != kind:
                    continue
                if form == JOIN_FORM:  # the compiler asks rspark.spark.jvm for the UDF: none, so it joins
                    from rspark.spark import jvm

                    jvm.quoted_parts, in_place = (lambda spark: None), jvm.quoted_parts
                list(engine.replay_iter(query(form), until=RANGE))  # untimed: Spark's code paths warm
                times = []
                for _ in range(REPEAT):
                    t = time.perf_counter()
                    keys = [f"{r.ticks} {row['obs'].value} {row['v'].lexical} {row['c'].lexical}"
                            for r in engine.replay_iter(query(form)) for row in r.rows]
                    times.append(time.perf_counter() - t)
                out["times"][form] = statistics.median(times)
                out["rows"][form], out["digest"][form] = _digest(keys)
                if form == JOIN_FORM:
                    jvm.quoted_parts = in_place
    return out


def pyoxigraph_run(paths: dict) -> dict:
    """Per window, a store of its elements' triples and the query; the stream parsed once first (timed apart)."""
    import pyoxigraph as ox

    out: dict = {"load_s": {}, "times": {}, "rows": {}, "digest": {}}
    stamp = PROV + "generatedAtTime"
    for kind, path in paths.items():
        t = time.perf_counter()
        stamps, by_element = {}, {}
        for q in ox.parse(path=path, format=ox.RdfFormat.TRIG):
            if isinstance(q.graph_name, ox.DefaultGraph):
                if q.predicate.value == stamp:
                    stamps[q.subject] = int(q.object.value)
            else:
                by_element.setdefault(q.graph_name, []).append(ox.Triple(q.subject, q.predicate, q.object))
        elements = sorted((stamps[g], triples) for g, triples in by_element.items())
        out["load_s"][kind] = time.perf_counter() - t
        last = elements[-1][0]
        for form, needs in FORMS.items():
            if needs != kind:
                continue
            text = P + "SELECT ?obs ?v ?c WHERE { " + BODIES[form] + " }"
            t = time.perf_counter()
            keys = []
            for close in range(RANGE, last + 1, RANGE):  # the windows (close - RANGE, close] up to the last element
                store = ox.Store()
                store.extend(ox.Quad(tr.subject, tr.predicate, tr.object) for ts, triples in elements
                             if close - RANGE < ts <= close for tr in triples)
                for row in store.query(text):
                    keys.append(f"{close} {row['obs'].value} {row['v'].value} {row['c'].value}")
            out["times"][form] = time.perf_counter() - t
            out["rows"][form], out["digest"][form] = _digest(keys)
    return out


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=10000, help="stream elements (Fig. 2)")
    ap.add_argument("--others", default="0,10,50,100", help="other annotated triples per element (Fig. 2)")
    harness.common_arguments(ap, "rdfstar_vs_reification", worker=["rspark"])
    ap.add_argument("--paths", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        harness.worker_result(worker_rspark(json.loads(args.paths), args.conf))
        return
    report = _results.Report(args.name, enabled=not args.no_results)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    report.print("Fig. 1: bytes of one stream element with n annotated triples, one metadata triple each.")
    report.print()
    report.print("| annotated triples | RDF-star bytes | reification bytes | RDF-star / reification | RDF-star gzip | "
                 "reification gzip | gzip RDF-star / reification |")
    report.print("|---|---|---|---|---|---|---|")
    sizes = []
    for n in SIZES:
        star, reif = one_element_bytes(n, False).encode(), one_element_bytes(n, True).encode()
        zs, zr = len(gzip.compress(star, 9)), len(gzip.compress(reif, 9))
        sizes.append({"n": n, "star": len(star), "reif": len(reif), "star_gz": zs, "reif_gz": zr})
        report.print(f"| {n} | {len(star):,} | {len(reif):,} | {len(star) / len(reif):.2f} | {zs:,} | {zr:,} | "
                     f"{zs / zr:.2f} |")
    report.print()

    report.print(f"Fig. 2: replay of {args.elements:,} elements (windows of {RANGE}), the confidence-annotated triple "
                 "matched and filtered, per number of other annotated triples per element. Times after the load.")
    report.print()
    report.print("| other annotated | form | rspark s | pyoxigraph per window s | rspark / RDF-star | "
                 "pyoxigraph / RDF-star | rows | answers agree | rspark load s (star, reif) |")
    report.print("|---|---|---|---|---|---|---|---|---|")
    rows, disagree = [], []
    for k in [int(s) for s in args.others.split(",")]:
        paths = {}
        for kind, reified in (("star", False), ("reif", True)):
            path = out_dir / f"annotated-{args.elements}-{k}-{kind}.trig"
            if not path.exists():
                write_stream(path, args.elements, k, reified)
            paths[kind] = str(path)
        warm = out_dir / "annotated-warm.trig"
        if not warm.exists():
            write_stream(warm, 50, 2, True)
        spark = harness.run_worker(__file__, ["--worker", "rspark", "--paths", json.dumps({**paths, "warm": str(warm)}),
                                              *(f"--conf={item}" for item in args.conf)])
        ox = pyoxigraph_run(paths)
        digests = {spark["digest"][f] for f in [*FORMS, JOIN_FORM]} | {ox["digest"][f] for f in FORMS}
        agree = len(digests) == 1
        if not agree:
            disagree.append(str(k))
        for form in [*FORMS, JOIN_FORM]:
            s, o = spark["times"][form], ox["times"].get(form)
            rows.append({"others": k, "form": form, "rspark_s": s, "pyoxigraph_s": o, "rows": spark["rows"][form],
                         "agree": agree, "rspark_load_s": spark["load_s"], "pyoxigraph_load_s": ox["load_s"]})
            theirs = ("—", "—") if o is None else (f"{o:.2f}", f"{o / ox['times']['rdf-star']:.2f}x")
            report.print(f"| {k} | {form} | {s:.2f} | {theirs[0]} | {s / spark['times']['rdf-star']:.2f}x | "
                         f"{theirs[1]} | {spark['rows'][form]:,} | {'yes' if agree else 'NO'} | "
                         f"{spark['load_s']['star']:.1f}, {spark['load_s']['reif']:.1f} |")
    report.print()
    report.print("rspark / RDF-star: a form's replay time over the RDF-star query's (above 1: slower than RDF-star); "
                 "the same for pyoxigraph. The stream files of the two representations are loaded once each. "
                 f"{JOIN_FORM}: rspark's RDF-star query with each quoted triple decomposed by a join with the "
                 "stream's table of quoted triples (the way without rspark's JVM helpers) instead of in place.")
    if disagree:
        report.print()
        report.print("ANSWERS DIFFER at " + ", ".join(disagree) + " other annotated triples")
    (out_dir / f"{args.name}.json").write_text(json.dumps({"bytes": sizes, "queries": rows}, indent=1))
    xs = [r["n"] for r in sizes]
    fig1 = harness.Panel([harness.Line(xs, [r["star"] for r in sizes], label="RDF-star"),
                          harness.Line(xs, [r["reif"] for r in sizes], label="reification"),
                          harness.Line(xs, [r["star_gz"] for r in sizes], "o--", label="RDF-star, gzip"),
                          harness.Line(xs, [r["reif_gz"] for r in sizes], "o--", label="reification, gzip")],
                         "annotated triples per element", "bytes per element", title="Fig. 1: bytes",
                         xlog=True, ylog=True)
    lines = []
    for form in [*FORMS, JOIN_FORM]:
        mine = [r for r in rows if r["form"] == form]
        lines.append(harness.Line([r["others"] for r in mine], [r["rspark_s"] for r in mine], label=f"rspark {form}"))
        if form == JOIN_FORM:
            continue
        lines.append(harness.Line([r["others"] for r in mine], [r["pyoxigraph_s"] for r in mine], "o--",
                                  label=f"pyoxigraph {form}"))
    fig2 = harness.Panel(lines, "other annotated triples per element", "replay s (after the load)",
                         title="Fig. 2: query time")
    png = harness.plot(out_dir / f"{args.name}.png", [fig1, fig2], (11, 4))
    if png:
        report.plot(png)
    report.write()
    if disagree:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
