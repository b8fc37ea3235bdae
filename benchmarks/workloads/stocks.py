"""The stock-event workload: one price event an element (``:cK :price P``) at ticks 1..n, companies and prices
drawn with a fixed seed, and the three-event SEQ query over a tumbling window under each selection and consumption
policy (RSEP-QL, eqs. 7-11, Def. 10). Read by ``cep_throughput.py`` (its ``cep/`` and ``baselines/`` parts) and
``live_consumption.py``."""

from __future__ import annotations

import random
from pathlib import Path

EX = "http://example.org/"
PROV = "http://www.w3.org/ns/prov#"
XSD = "http://www.w3.org/2001/XMLSchema#"
STREAM = EX + "stocks"
RANGE = 1000  # = SLIDE: a tumbling window
# name -> (the SEQ operator, the MATCH consumption or None)
POLICIES = {
    "unrestricted": ("SEQ", None),
    "chronological": ("SEQ[CHRONOLOGICAL]", None),
    "recent": ("SEQ[RECENT]", None),
    "naive": ("SEQ[NAIVE]", None),
    "consume-chronological": ("SEQ[CHRONOLOGICAL]", "CHRONOLOGICAL"),
    "consume-recent": ("SEQ[RECENT]", "RECENT"),
}


def query(policy: str, stream: str = STREAM) -> str:
    seq, consume = POLICIES[policy]
    match = f"MATCH CONSUME {consume}" if consume else "MATCH"
    return (f"PREFIX : <{EX}>\n"
            "SELECT ?company ?p1 ?p2 ?p3 (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)\n"
            f"FROM NAMED WINDOW :w ON <{stream}> [RANGE {RANGE} SLIDE {RANGE}]\n"
            "EVENT ON :w { ?company :price ?p1 } AS E1\n"
            "EVENT ON :w { ?company :price ?p2 } AS E2\n"
            "EVENT ON :w { ?company :price ?p3 } AS E3\n"
            f"WHERE {{ {match} {{ E1 {seq} E2 {seq} E3 }} }}\n")


def stream_events(n: int, companies: int, prices: int, seed: int):
    """The stream's events in time order: (tick, company index, price), tick = 1..n."""
    rnd = random.Random(seed)
    company, price = rnd.randrange, rnd.randrange
    for t in range(1, n + 1):
        yield t, company(companies), price(prices) + 1


def generate(out_dir: Path, n: int, companies: int, prices: int, seed: int, fmt: str = "nq") -> str:
    """Write the stream (kept: a file of the same parameters is reused) and return its path."""
    path = out_dir / f"stocks-{n}-c{companies}-p{prices}-s{seed}.{fmt}"
    if path.exists():
        return str(path)
    tmp = path.with_name(f".{path.name}.tmp")
    integer = f"^^<{XSD}integer>"
    chunk: list[str] = []
    with tmp.open("w", encoding="utf-8") as f:
        if fmt == "trig":
            f.write(f"@prefix : <{EX}> .\n@prefix prov: <{PROV}> .\n")
        for t, k, p in stream_events(n, companies, prices, seed):
            if fmt == "trig":
                chunk.append(f":e{t} {{ :c{k} :price {p} . }}\n:e{t} prov:generatedAtTime {t} .\n")
            else:
                chunk.append(f'<{EX}c{k}> <{EX}price> "{p}"{integer} <{EX}e{t}> .\n'
                             f'<{EX}e{t}> <{PROV}generatedAtTime> "{t}"{integer} .\n')
            if len(chunk) >= 10_000:
                f.write("".join(chunk))
                chunk.clear()
        f.write("".join(chunk))
    tmp.replace(path)
    return str(path)
