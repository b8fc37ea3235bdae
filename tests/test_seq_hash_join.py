"""A SEQ's joins by hash tables of the left events when their matches fit a task's memory
(``rspark.spark.cep.match.hash_join_rows``, ``rspark.spark.streaming.s2r.one_pattern_rows``), by sort-merge joins
otherwise: the same answers either way, and the bound that decides it."""

from __future__ import annotations

import itertools
import random
from types import SimpleNamespace

import rspark.spark.cep.match as cep_match
import rspark.spark.streaming.evaluate as evaluate
from rspark import Engine
from rspark.rsp.windows import LandmarkWindow, TimeWindow
from rspark.spark.streaming.s2r import one_pattern_rows

EX = "http://example.org/"
INTEGER = "http://www.w3.org/2001/XMLSchema#integer"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"


def _stream(quads=10, ends=None):
    return SimpleNamespace(n_quads=quads, ends=ends)


def test_one_pattern_rows_counts_the_instants_an_element_can_be_assigned_to():
    tumbling = TimeWindow(range=10, slide=10)
    assert one_pattern_rows(_stream(), tumbling, [10, 20, 30]) == 10  # one window an element, one instant each
    assert one_pattern_rows(_stream(), tumbling, [10, 12, 20]) == 20  # window 1 evaluated at 10 and at 12
    sliding = TimeWindow(range=10, slide=5)  # each element in two windows
    assert one_pattern_rows(_stream(), sliding, [5, 10, 15, 20]) == 20
    assert one_pattern_rows(_stream(), sliding, [5, 10, 11, 15, 20]) == 30  # window 2 at 10 and 11, window 3 at 15
    assert one_pattern_rows(_stream(), TimeWindow(range=10, slide=3), [3, 6, 9, 12, 15]) == 40  # ceil(10 / 3)
    assert one_pattern_rows(_stream(), tumbling, []) == 0
    assert one_pattern_rows(_stream(), sliding, [5, 10 ** 15, 10 ** 15 + 1]) == 20  # far apart: no table of windows


def test_one_pattern_rows_is_unknown_without_a_bound():
    tumbling = TimeWindow(range=10, slide=10)
    assert one_pattern_rows(_stream(quads=None), tumbling, [10]) is None  # the load did not count the quads
    assert one_pattern_rows(_stream(), LandmarkWindow(start=0), [10]) is None
    assert one_pattern_rows(_stream(ends=object()), tumbling, [10]) is None  # held while their intervals meet it


def _session(master, heap, fraction="0.6", storage="0.5"):
    conf = {"spark.memory.fraction": fraction, "spark.memory.storageFraction": storage}
    runtime = SimpleNamespace(maxMemory=lambda: heap)
    lang = SimpleNamespace(Runtime=SimpleNamespace(getRuntime=lambda: runtime))
    jvm = SimpleNamespace(java=SimpleNamespace(lang=lang))
    context = SimpleNamespace(master=master, getConf=lambda: SimpleNamespace(get=conf.get), _jvm=jvm)
    return SimpleNamespace(sparkContext=context)


def test_hash_join_rows_is_a_tasks_share_of_the_execution_memory():
    heap = (300 << 20) + (1 << 30)
    # 1 GiB x 0.6 x 0.5 over 2 cores, over 2 tables, at 256 bytes a row
    assert cep_match.hash_join_rows(_session("local[2]", heap), 2) == int((1 << 30) * 0.3 / 2 / 2 / 256)
    assert cep_match.hash_join_rows(_session("local[4]", heap), 1) == int((1 << 30) * 0.3 / 4 / 256)
    assert cep_match.hash_join_rows(_session("local", heap, fraction="0.5"), 1) == int((1 << 30) * 0.25 / 256)
    assert cep_match.hash_join_rows(_session("local[2]", heap), 0) is None  # no join
    assert cep_match.hash_join_rows(_session("spark://host:7077", heap), 2) is None  # executors elsewhere
    assert cep_match.hash_join_rows(_session("local-cluster[2,1,1024]", heap), 2) is None


def _events(n, companies, seed):
    rnd = random.Random(seed)
    return [(t, rnd.randrange(companies), rnd.randrange(5) + 1) for t in range(1, n + 1)]


def _write(path, events):
    with path.open("w") as f:
        for t, c, p in events:
            f.write(f'<{EX}c{c}> <{EX}price> "{p}"^^<{INTEGER}> <{EX}e{t}> .\n'
                    f'<{EX}e{t}> <{PROV}> "{t}"^^<{INTEGER}> .\n')


QUERY = (f"PREFIX : <{EX}>\n"
         "SELECT ?c ?p1 ?p2 ?p3 (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)\n"
         f"FROM NAMED WINDOW :w ON <{EX}stocks> [RANGE 20 SLIDE 10]\n"
         "EVENT ON :w { ?c :price ?p1 } AS E1\n"
         "EVENT ON :w { ?c :price ?p2 } AS E2\n"
         "EVENT ON :w { ?c :price ?p3 } AS E3\n"
         "WHERE { MATCH { E1 SEQ E2 SEQ E3 } }\n")


def _expected(events, instants):
    """Unrestricted SEQ of three events of one company in the window (t - 20, t] at each instant t (RSEP-QL,
    eqs. 4, 7, 8): every e1 before e2 before e3, as the set of (company, prices, start, end)."""
    out = {}
    for t in instants:
        held = [e for e in events if t - 20 < e[0] <= t]
        out[t] = {(c1, p1, p2, p3, t1, t3) for (t1, c1, p1), (t2, c2, p2), (t3, c3, p3)
                  in itertools.permutations(held, 3) if c1 == c2 == c3 and t1 < t2 < t3}
    return out


def _answers(engine, plans):
    real = evaluate.answer_tables

    def spy(df, *args, **kwargs):
        plans.append(df._jdf.queryExecution().executedPlan().toString())
        return real(df, *args, **kwargs)

    evaluate.answer_tables = spy
    try:
        records = list(engine.replay_iter(QUERY, until="end"))
    finally:
        evaluate.answer_tables = real
    numbers = ("p1", "p2", "p3", "t1", "t2")
    return {r.ticks: {(row["c"].value.rsplit("/c", 1)[1], *(int(row[k].lexical) for k in numbers)) for row in r.rows}
            for r in records}


def test_a_seq_joins_by_hash_tables_within_the_bound_and_by_sorting_beyond_it(spark, tmp_path, monkeypatch):
    events = _events(120, 3, 5)
    path = tmp_path / "stocks.nq"
    _write(path, events)
    plans: dict[str, list] = {"broadcast": [], "hashed": [], "sorted": []}
    answers = {}
    with Engine(spark=spark) as engine:
        engine.add_streams({EX + "stocks": str(path)})
        assert engine.streams[EX + "stocks"].n_quads == len(events)  # the load counted them
        # a few matches: Spark broadcasts them (below its threshold), no hint
        answers["broadcast"] = _answers(engine, plans["broadcast"])
        threshold = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # as for matches beyond it
        try:
            answers["hashed"] = _answers(engine, plans["hashed"])
            monkeypatch.setattr(cep_match, "HASH_ROW_BYTES", 1 << 40)  # no table fits a task: sort-merge joins
            answers["sorted"] = _answers(engine, plans["sorted"])
        finally:
            spark.conf.set("spark.sql.autoBroadcastJoinThreshold", threshold)
    # (Spark broadcasts the window's instants in every plan; in the first, the few matches to the sequence's joins)
    joins = {name: [found[0].count(j) for j in ("BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin")]
             for name, found in plans.items()}
    assert joins == {"broadcast": [4, 0, 0], "hashed": [1, 2, 0], "sorted": [1, 0, 2]}, plans
    expected = _expected([(t, str(c), p) for t, c, p in events], range(10, 130, 10))
    assert sorted(answers["hashed"]) == list(range(10, 130, 10))
    assert sum(map(len, expected.values())) > 50  # matches at most instants
    assert answers["broadcast"] == answers["hashed"] == answers["sorted"] == expected
