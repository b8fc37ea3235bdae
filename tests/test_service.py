"""``rspark serve`` end to end: a subprocess on a free loopback port, driven over HTTP like a user would.

A stream is declared, RSEP-QL's SEQ query (Figure 1, Example 8) and a windowed aggregate are registered, Figure 1's
elements are pushed one POST at a time, and the Server-Sent Events of each query equal the records of a replay of
the same stream; a client that reconnects with ``Last-Event-ID`` gets exactly what it missed; after a restart
with the same checkpoint the service has the same streams and queries and goes on without repeating a record."""

from __future__ import annotations

import json
import signal

import httpx2 as httpx
import pytest

from tests.support.sse import Server, SSEReader
from tests.test_live import EX, FIG1, PREFIXES, SEQ

COUNT = """PREFIX : <http://example.org/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s ?p ?o } }"""
QUERIES = {"seq": SEQ, "count": COUNT}
TRIPLES = {2: 1, 4: 1, 6: 2, 8: 1, 10: 2}  # triples of each element of Figure 1


def canonical(record: dict) -> dict:
    """A jsonl record with its bindings in a fixed order (a record's rows are a bag)."""
    out = dict(record)
    if "results" in out:
        out["results"] = {"bindings": sorted(out["results"]["bindings"], key=lambda b: json.dumps(b, sort_keys=True))}
    return out


@pytest.fixture(scope="module")
def replayed(spark, tmp_path_factory) -> dict:
    """Each query's records from a replay of Figure 1 plus an element at 12 (the service's queries are named
    after the HTTP resource, so the replay names them the same)."""
    from rspark.engine.engine import Engine

    path = tmp_path_factory.mktemp("fig1") / "fig1.trig"
    path.write_text(PREFIXES + "\n".join(FIG1.values()) + "\n:G6 { :a6 :p :b6 . } :G6 prov:generatedAtTime 12 .\n")
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        return {name: [canonical(r.to_json()) for r in eng.replay(q, names=[name], until=11)]
                for name, q in QUERIES.items()}


@pytest.mark.slow
def test_serve_end_to_end_equals_replay_and_resumes(tmp_path, replayed):
    ckpt = str(tmp_path / "ckpt")
    server = Server(checkpoint=ckpt)
    try:
        server.wait_ready()
        url = server.url
        r = httpx.put(f"{url}/streams/S", json={"iri": EX + "S"}, timeout=120)
        assert r.status_code == 201, r.text
        for name, q in QUERIES.items():
            r = httpx.put(f"{url}/queries/{name}", content=q, headers={"Content-Type": "application/sparql-query"},
                          timeout=120)
            assert r.status_code == 201, r.text
        readers = {name: SSEReader(f"{url}/queries/{name}/results") for name in QUERIES}
        for t, element in FIG1.items():  # one push per element, as TriG
            r = httpx.post(f"{url}/streams/S", content=PREFIXES + element,
                           headers={"Content-Type": "application/trig"}, timeout=30)
            assert r.status_code == 202, r.text
            assert r.json() == {"accepted": 1, "triples": TRIPLES[t], "late": 0}
        # the newest element is at 10: every instant before it is due (allowed lateness 0)
        expected = {name: [rec for rec in records if rec["time"] <= 9] for name, records in replayed.items()}
        got = {}
        for name, reader in readers.items():
            events = reader.wait_for(len(expected[name]))
            got[name] = events
            assert [e["event"] for e in events] == ["result"] * len(expected[name])
            assert [canonical(json.loads(e["data"])) for e in events] == expected[name], name
            assert [e["id"] for e in events] == [str(rec["time"]) for rec in expected[name]]
        # a client that reconnects after the second event gets exactly the events after it
        seq = got["seq"]
        again = SSEReader(f"{url}/queries/seq/results", headers={"Last-Event-ID": seq[1]["id"]})
        events = again.wait_for(len(seq) - 2, timeout=30)
        assert [e["id"] for e in events] == [e["id"] for e in seq[2:]]
        assert [e["data"] for e in events] == [e["data"] for e in seq[2:]]
        status = httpx.get(f"{url}/queries/count", timeout=30).json()
        assert status["records"] == len(expected["count"]) and status["elements"] == 5 and status["late"] == 0
        for reader in [*readers.values(), again]:
            reader.close()
    finally:
        code = server.stop()
    assert code == 0, server.log()

    # a restart with the same checkpoint: the same stream and queries, and the next element's instants only
    server = Server(checkpoint=ckpt)
    try:
        server.wait_ready()
        url = server.url
        assert sorted(q["name"] for q in httpx.get(f"{url}/queries", timeout=30).json()["queries"]) == ["count", "seq"]
        assert [s["name"] for s in httpx.get(f"{url}/streams", timeout=30).json()["streams"]] == ["S"]
        readers = {name: SSEReader(f"{url}/queries/{name}/results") for name in QUERIES}
        r = httpx.post(f"{url}/streams/S", content=PREFIXES + ":G6 { :a6 :p :b6 . } :G6 prov:generatedAtTime 12 .",
                       headers={"Content-Type": "application/trig"}, timeout=30)
        assert r.status_code == 202, r.text
        for name, reader in readers.items():
            later = [rec for rec in replayed[name] if 9 < rec["time"] <= 11]
            events = reader.wait_for(len(later))
            assert [canonical(json.loads(e["data"])) for e in events] == later, name
            reader.close()
    finally:
        code = server.stop(signal.SIGINT)
    assert code in (0, 130), server.log()
