"""Concurrency: one Engine answering queries from several threads at once gives the answers of one query at a
time, and compiling a query gives the same plan (the same hidden column and SQL variable names) in any thread,
however many other compilations run beside it (issue 23, item 6)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "rspark" / "samples"

DATA = """\
@prefix : <http://example.org/> .
:alice :knows :bob , :carol ; :age 31 ; :name "Alice" .
:bob :knows :carol , :dave ; :age 25 ; :name "Bob" .
:carol :knows :dave ; :age 42 .
:dave :knows :erin ; :age 19 ; :name "Dave" .
:erin :age 55 ; :likes :alice .
"""

P = "PREFIX : <http://example.org/> "

SELECT_AGG = P + """SELECT ?p (COUNT(?f) AS ?n) (AVG(?age) AS ?avg) (MAX(?age) AS ?oldest)
WHERE { ?p :knows ?f . ?f :age ?age FILTER(?age > 20) } GROUP BY ?p HAVING (COUNT(?f) >= 1) ORDER BY ?p"""

CONSTRUCT = P + """CONSTRUCT { ?b :knownBy ?a . ?a :label ?l }
WHERE { ?a :knows ?b OPTIONAL { ?a :name ?n } BIND(COALESCE(UCASE(?n), "?") AS ?l) }"""

PATH = P + """SELECT ?x ?y WHERE { ?x :knows+ ?y FILTER NOT EXISTS { ?x :knows ?y } }"""

ASK = P + """ASK { ?x :knows/:knows ?y . ?y :age ?a FILTER(?a > 50) }"""

REPLAY = (SAMPLES / "sensor_average.rq").read_text(encoding="utf-8")

# Queries compiled (not run) by the compilation test: every kind of hidden name the compiler makes (join renames,
# EXISTS flags, ORDER BY and GROUP BY key columns, graph keys, quoted-triple temporaries) and expressions with
# many SQL lambda variables.
COMPILED = [
    SELECT_AGG,
    CONSTRUCT,
    ASK,
    P + """SELECT ?x ?y ?z WHERE { ?x :knows/:knows ?y . ?y ^:knows|:likes ?z
           FILTER EXISTS { ?z :age ?a FILTER(?a > 20) } } ORDER BY DESC(?y) ?z""",
    P + """SELECT ?p ?s ?d WHERE { ?p :age ?a OPTIONAL { ?p :name ?n } MINUS { ?p :likes ?q }
           BIND(IF(?a > 30 && BOUND(?n), CONCAT(LCASE(?n), "-", STR(?a)), SUBSTR(STR(?p), 20, 3)) AS ?s)
           BIND(ROUND(?a * 1.5 + ABS(?a - 40) / 3) AS ?d) FILTER(REGEX(STR(?p), "a|b", "i") || ?d >= 40) }
           ORDER BY ?d""",
    P + """SELECT ?k (SUM(?a) AS ?total) (GROUP_CONCAT(?n; separator=",") AS ?names) (SAMPLE(?a) AS ?one)
           WHERE { { ?p :name ?n } UNION { ?p :age ?a } } GROUP BY (STRLEN(?n) AS ?k) (DATATYPE(?a))""",
    P + """SELECT ?g ?s ?when WHERE { GRAPH ?g { ?s a :Sensor } OPTIONAL { << ?s :room ?r >> :since ?when } }""",
]


@pytest.fixture(scope="module")
def engine(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    path = tmp_path_factory.mktemp("concurrency") / "people.ttl"
    path.write_text(DATA, encoding="utf-8")
    with Engine(spark=spark) as eng:
        eng.load(path)
        eng.load(SAMPLES / "sensors.ttl", graph="http://example.org/sensors")
        eng.add_stream("http://example.org/obs", SAMPLES / "observations.trig")
        yield eng


# ------------------------------------------------------------------------------------------------------ answers


def _answer(engine, kind: str):
    """A comparable form of a query's answer: solutions and triples as multisets, replay records exactly (the
    rows of one instant as a multiset: ORDER BY ties may come in any order)."""
    if kind == "replay":
        out = []
        for rec in engine.replay(REPLAY):
            js = rec.to_json()
            rows = js.pop("results", {}).get("bindings", [])
            out.append((json.dumps(js, sort_keys=True), Counter(json.dumps(r, sort_keys=True) for r in rows)))
        return out
    text = {"select": SELECT_AGG, "construct": CONSTRUCT, "path": PATH, "ask": ASK}[kind]
    result = engine.sparql(text)
    if kind == "ask":
        return bool(result)
    if kind == "construct":
        return Counter(result)
    return Counter(frozenset(row.items()) for row in result)


def test_engine_answers_queries_from_threads_as_one_at_a_time(engine):
    """Four different queries (a SELECT with FILTER and aggregates, a CONSTRUCT, a property path with NOT EXISTS,
    a replay over a stream) from four threads started together, three times each: the answers of the same queries
    run one after the other. Then the same query from four threads at once (the plan cache hands its plan to one
    of them, the others compile their own)."""
    kinds = ["select", "construct", "path", "replay"]
    expected = {k: _answer(engine, k) for k in kinds + ["ask"]}
    assert expected["select"] and expected["construct"] and expected["path"] and expected["replay"]
    assert expected["ask"] is True
    barrier = threading.Barrier(len(kinds))

    def run(kind: str):
        barrier.wait(timeout=120)
        return [_answer(engine, kind) for _ in range(2)]

    with ThreadPoolExecutor(max_workers=len(kinds)) as pool:
        futures = {k: pool.submit(run, k) for k in kinds}
        answers = {k: f.result(timeout=900) for k, f in futures.items()}
    for kind in kinds:
        for i, got in enumerate(answers[kind]):
            assert got == expected[kind], (kind, i)

    same = threading.Barrier(4)

    def again(kind: str):
        same.wait(timeout=120)
        return _answer(engine, kind)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(again, ["select", "select", "ask", "ask"]))
    assert results == [expected["select"], expected["select"], True, True]


# -------------------------------------------------------------------------------------------------- compilation


def _plan_text(engine, text: str) -> str:
    """The analysed Spark plan of a query's answer frame, built but not run, without Spark's expression ids (which
    differ at every analysis): what the names of the compilation decide."""
    from rspark.spark.expr.compile import ExprEnv
    from rspark.spark.sparql.query import construct_frame, projected_names, select_frame, solutions_of
    from rspark.syntax.translate import compile_query

    plan = compile_query(text)
    _, sols = solutions_of(engine.spark, plan, engine.dataset_for(plan), ExprEnv(now="2026-03-01T13:00:00Z"))
    if plan.form == "SELECT":
        df = select_frame(sols, projected_names(sols))
    elif plan.form == "CONSTRUCT":
        df = construct_frame(sols, plan.template)
    else:
        df = sols.df
    return re.sub(r"#\d+", "#", df._jdf.queryExecution().analyzed().toString())


def test_compilation_is_deterministic_and_independent_of_other_threads(engine):
    """The same queries compiled in eight threads at once, several times each: every thread builds exactly the
    plan of a compilation alone (hidden column names and SQL lambda variables included), and compiling a query
    twice gives the same plan. (With the module-level counters of before, names depended on every compilation
    before and beside.)"""
    sequential = [_plan_text(engine, q) for q in COMPILED]
    assert sequential == [_plan_text(engine, q) for q in COMPILED]  # the same query, the same plan text
    joined = "\n".join(sequential)
    for name in ("__r0", "__ex", "__o", "__k", "__g0", "__q", "__v1"):  # the names that had counters are used
        assert name in joined, name
    threads = 8
    barrier = threading.Barrier(threads)

    def compile_all(i: int) -> list[list[str]]:
        barrier.wait(timeout=120)
        rounds = []
        for _ in range(2):
            order = COMPILED[i % len(COMPILED):] + COMPILED[:i % len(COMPILED)]  # different mixes at once
            texts = {q: _plan_text(engine, q) for q in order}
            rounds.append([texts[q] for q in COMPILED])
        return rounds

    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = list(pool.map(compile_all, range(threads), timeout=900))
    for i, rounds in enumerate(results):
        for r, texts in enumerate(rounds):
            for q, got, want in zip(COMPILED, texts, sequential):
                assert got == want, (i, r, q)


def test_sql_naming_belongs_to_each_compilation():
    """SQL lambda variables are numbered per compilation of an expression (a ContextVar): threads compiling at
    the same time, interleaved, each count from 1 within their own compilation, nested compilations go on
    counting, and names made outside any compilation never collide with them."""
    from rspark.spark.expr.sql import fresh, naming

    barrier = threading.Barrier(8)

    def compile_one(_: int) -> list[str]:
        barrier.wait(timeout=60)
        out = []
        with naming():
            for _ in range(20):
                out.append(fresh())
                time.sleep(0.0005)  # let the other threads run in between
                with naming():  # a nested compilation goes on counting
                    out.append(fresh())
        return out

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(compile_one, range(8)))
    assert all(r == [f"__v{i}" for i in range(1, 41)] for r in results)
    loose = {fresh() for _ in range(5)}
    assert len(loose) == 5 and not loose & {f"__v{i}" for i in range(1, 41)}
