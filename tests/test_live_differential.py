"""Differential property test of live mode against replay (docs/live.md: "A live query gives, instant for instant,
the records `rspark replay` gives over the same elements").

Random small streams (a few subjects and predicates, integer timestamps, ties included) are pushed to a live stream
in random batches, out of order within the allowed lateness, while random queries drawn from templates are
registered: time windows (sliding and tumbling), count windows (elements and triples), landmark windows, the three
R2S operators, an RSEP-QL event pattern with a consumption policy, and a query network (one query's REGISTER STREAM
read by another). After the live run is closed (every instant up to the last element reported), each query's
records, instant by instant (the time and the bindings, exactly), equal a replay's over the same elements in the
order they arrived (equal timestamps keep that order in both: docs/streams.md, "Order").

Only the public interface is used: ``Engine.live_stream``, ``Engine.push``, ``Engine.register`` and its handle's
``wait`` and ``drain``, ``engine.live.close(flush=True)`` (docs/live.md), ``Engine.add_stream`` and
``Engine.replay``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

EX = "http://example.org/"
PREFIXES = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
P = "PREFIX : <http://example.org/>\n"

# ------------------------------------------------------------------------------------------------ streams

# triples over few terms, so that joins, events and R2S differences happen: :a :p :b, :b :q :c, :a :r n
TRIPLES = st.one_of(
    st.tuples(st.sampled_from([":a0", ":a1", ":a2"]), st.just(":p"), st.sampled_from([":b0", ":b1"])),
    st.tuples(st.sampled_from([":b0", ":b1"]), st.just(":q"), st.sampled_from([":c0", ":c1", ":c2"])),
    st.tuples(st.sampled_from([":a0", ":a1"]), st.just(":r"), st.sampled_from(["1", "2", "5"])),
)


@st.composite
def arrivals(draw, max_elements: int = 10):
    """(lateness, batches): the elements of a random stream (name, timestamp, triples) in the order they are
    pushed, cut into batches. An element arrives at its timestamp plus a delay of at most the lateness: every
    element that arrived before it is then at most the lateness ahead of it, so none is late (docs/live.md, "When
    an instant is reported": on time is at or after the newest timestamp minus the lateness)."""
    n = draw(st.integers(3, max_elements))
    stamps = sorted(draw(st.lists(st.integers(1, 16), min_size=n, max_size=n)))
    lateness = draw(st.sampled_from([0, 0, 1, 3]))
    elements = [(f"G{i}", ts, draw(st.lists(TRIPLES, min_size=1, max_size=3, unique=True)))
                for i, ts in enumerate(stamps)]
    delays = draw(st.lists(st.integers(0, lateness), min_size=n, max_size=n))
    order = sorted(range(n), key=lambda i: (elements[i][1] + delays[i], i))
    pushed = [elements[i] for i in order]
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=2)))
    batches = [pushed[a:b] for a, b in zip([0, *cuts], [*cuts, n])]
    return lateness, batches


def trig(elements) -> str:
    lines = [PREFIXES]
    for name, ts, triples in elements:
        body = " ".join(f"{s} {p} {o} ." for s, p, o in triples)
        lines.append(f":{name} {{ {body} }} :{name} prov:generatedAtTime {ts} .")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ queries

REGISTERED = {"producer": EX + "pairs"}
R2S = st.sampled_from(["", "RSTREAM", "ISTREAM", "DSTREAM"])
SLIDING = st.integers(1, 6).flatmap(lambda r: st.tuples(st.just(r), st.integers(1, r)))


@st.composite
def time_query(draw) -> str:
    """A sliding window over a join, or a tumbling one under an aggregate."""
    r2s = draw(R2S)
    if draw(st.booleans()):
        rng, slide = draw(SLIDING)
        return (f"SELECT {r2s} ?x ?z FROM NAMED WINDOW :w ON :S [RANGE {rng} SLIDE {slide}] "
                "WHERE { WINDOW :w { ?x :p ?y . ?y :q ?z } }")
    rng = draw(st.integers(1, 6))
    return (f"SELECT {r2s} ?s (COUNT(*) AS ?n) (SUM(?v) AS ?total) FROM NAMED WINDOW :w ON :S [RANGE {rng} TUMBLING] "
            "WHERE { WINDOW :w { ?s ?p ?o OPTIONAL { ?s :r ?v } } } GROUP BY ?s")


@st.composite
def count_query(draw) -> str:
    unit = draw(st.sampled_from(["ELEMENTS", "TRIPLES"]))
    return (f"SELECT {draw(R2S)} ?s ?o FROM NAMED WINDOW :w ON :S [RANGE {unit} {draw(st.integers(1, 4))}] "
            "WHERE { WINDOW :w { ?s :p ?o } }")


@st.composite
def landmark_query(draw) -> str:
    return (f"SELECT {draw(R2S)} DISTINCT ?y ?z FROM NAMED WINDOW :w ON :S [LANDMARK {draw(st.integers(0, 8))}] "
            "WHERE { WINDOW :w { ?y :q ?z } }")


@st.composite
def event_query(draw) -> str:
    """RSEP-QL: E1 SEQ E2 over two windows, matched with a consumption policy (Defs. 8-10)."""
    policy = draw(st.sampled_from(["CHRONOLOGICAL", "RECENT"]))
    consume = draw(st.sampled_from(["CHRONOLOGICAL", "RECENT"]))
    (r1, s1), (r2, s2) = draw(SLIDING), draw(SLIDING)
    return (f"SELECT {draw(st.sampled_from(['', 'ISTREAM']))} ?x ?y ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2) "
            f"FROM NAMED WINDOW :w1 ON :S [RANGE {r1} SLIDE {s1}] FROM NAMED WINDOW :w2 ON :S [RANGE {r2} SLIDE {s2}] "
            "EVENT ON :w1 { ?x :p ?y } AS E1 EVENT ON :w2 { ?y :q ?z } AS E2 "
            f"WHERE {{ MATCH CONSUME {consume} {{ E1 SEQ[{policy}] E2 }} }}")


@st.composite
def network(draw) -> tuple[str, str]:
    """A producer that REGISTERs the stream :pairs and a consumer that reads it through a time, count or landmark
    window."""
    rng, slide = draw(SLIDING)
    producer = (f"REGISTER {draw(st.sampled_from(['RSTREAM', 'ISTREAM']))} STREAM :pairs AS "
                f"CONSTRUCT {{ ?x :pair ?z }} FROM NAMED WINDOW :w ON :S [RANGE {rng} SLIDE {slide}] "
                "WHERE { WINDOW :w { ?x :p ?y . ?y :q ?z } }")
    crng, cslide = draw(SLIDING)
    window = draw(st.sampled_from([f"[RANGE {crng} SLIDE {cslide}]", f"[RANGE ELEMENTS {crng}]", "[LANDMARK 0]"]))
    consumer = (f"SELECT {draw(R2S)} ?x (COUNT(*) AS ?n) FROM NAMED WINDOW :v ON :pairs {window} "
                "WHERE { WINDOW :v { ?x :pair ?z } } GROUP BY ?x")
    return producer, consumer


@st.composite
def queries(draw) -> dict[str, str]:
    producer, consumer = draw(network())
    return {"time": draw(time_query()), "count": draw(count_query()), "landmark": draw(landmark_query()),
            "event": draw(event_query()), "producer": producer, "consumer": consumer}


# ------------------------------------------------------------------------------------------------ runs


def records(recs) -> list:
    """(instant, sorted answers) per record, from its JSON form: the bindings of a SELECT (as SPARQL JSON), the
    N-Triples lines of a CONSTRUCT; exact, independent of the answers' order."""
    out = []
    for rec in recs:
        js = rec.to_json()
        answers = js["results"]["bindings"] if "results" in js else js["triples"]
        out.append((js["time"], sorted(json.dumps(a, sort_keys=True) for a in answers)))
    return out


def replayed(spark, path, batches, texts: dict[str, str]) -> dict[str, list]:
    from rspark.engine.engine import Engine

    path.write_text(trig([e for batch in batches for e in batch]), encoding="utf-8")
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        recs = eng.replay(list(texts.values()), names=list(texts))
    # a query that REGISTERs a stream gives its records under the stream's name
    return {name: records(r for r in recs if r.query == REGISTERED.get(name, name)) for name in texts}


def live(spark, checkpoint, lateness: int, batches, texts: dict[str, str]) -> dict[str, list]:
    from rspark.engine.engine import Engine

    with Engine(spark=spark, checkpoint=str(checkpoint)) as eng:
        eng.live_stream(EX + "S", lateness=lateness)
        handles = {name: eng.register(text, name=name) for name, text in texts.items()}
        got = {name: [] for name in texts}
        for batch in batches:
            eng.push(EX + "S", trig(batch))
            assert next(iter(handles.values())).wait(timeout=120)
            for name, h in handles.items():
                got[name] += h.drain()
        status = eng.live_status()["streams"][EX + "S"]
        assert (status["elements"], status["late"]) == (sum(map(len, batches)), 0)
        eng.live.close(flush=True)
        for name, h in handles.items():
            got[name] += h.drain()
    return {name: records(recs) for name, recs in got.items()}


def check(spark, tmp_path, lateness: int, batches, texts: dict[str, str]) -> None:
    texts = {name: P + text for name, text in texts.items()}
    expected = replayed(spark, tmp_path / "stream.trig", batches, texts)
    got = live(spark, tmp_path / "ckpt", lateness, batches, texts)
    for name in texts:
        assert got[name] == expected[name], (
            f"{name}: {texts[name]}\nlateness {lateness}, batches {batches}\n"
            f"live   {got[name]}\nreplay {expected[name]}")


@pytest.mark.slow
@settings(max_examples=1, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(arrivals(), queries())
@example(  # three batches, out of order within a lateness of 3, equal timestamps split between batches
    (3, [[("G1", 2, [(":a0", ":p", ":b0")]), ("G0", 1, [(":a1", ":p", ":b1"), (":a0", ":r", "2")])],
         [("G3", 4, [(":b0", ":q", ":c0")]), ("G2", 4, [(":b1", ":q", ":c1")]), ("G4", 5, [(":a0", ":p", ":b1")])],
         [("G5", 5, [(":a2", ":p", ":b0"), (":b0", ":q", ":c2")]), ("G6", 8, [(":b1", ":q", ":c0")]),
          ("G7", 7, [(":a0", ":r", "5")]), ("G8", 9, [(":b0", ":q", ":c1")])]]),
    {"time": "SELECT ISTREAM ?x ?z FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] "
             "WHERE { WINDOW :w { ?x :p ?y . ?y :q ?z } }",
     "count": "SELECT DSTREAM ?s ?o FROM NAMED WINDOW :w ON :S [RANGE ELEMENTS 2] WHERE { WINDOW :w { ?s :p ?o } }",
     "landmark": "SELECT RSTREAM DISTINCT ?y ?z FROM NAMED WINDOW :w ON :S [LANDMARK 3] "
                 "WHERE { WINDOW :w { ?y :q ?z } }",
     "event": "SELECT ?x ?y ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2) "
              "FROM NAMED WINDOW :w1 ON :S [RANGE 6 SLIDE 2] FROM NAMED WINDOW :w2 ON :S [RANGE 3 SLIDE 1] "
              "EVENT ON :w1 { ?x :p ?y } AS E1 EVENT ON :w2 { ?y :q ?z } AS E2 "
              "WHERE { MATCH CONSUME CHRONOLOGICAL { E1 SEQ[RECENT] E2 } }",
     "producer": "REGISTER ISTREAM STREAM :pairs AS CONSTRUCT { ?x :pair ?z } "
                 "FROM NAMED WINDOW :w ON :S [RANGE 3 SLIDE 1] WHERE { WINDOW :w { ?x :p ?y . ?y :q ?z } }",
     "consumer": "SELECT ?x (COUNT(*) AS ?n) FROM NAMED WINDOW :v ON :pairs [RANGE 4 SLIDE 2] "
                 "WHERE { WINDOW :v { ?x :pair ?z } } GROUP BY ?x"})
def test_live_records_equal_the_replays_at_every_instant(spark, tmp_path_factory, stream, texts):
    """Every template in one live run (one engine, the batches pushed once), so that each example costs one replay
    and one live run."""
    lateness, batches = stream
    check(spark, tmp_path_factory.mktemp("live"), lateness, batches, texts)
