"""Differential property test of replay: random streams, window parameters, evaluation times and queries; at every
evaluation instant rspark's answer equals pyoxigraph's on that instant's window snapshot.

The snapshot is computed here from RSEP-QL's definitions, independently of rspark.spark.streaming.windows: under the
default profile the window of [RANGE r SLIDE s] evaluated at t is the last one that closed at or before t,
(c - r, c] with c = floor(t / s) * s (t0 = 0); its content is the union of the graphs of the elements whose
timestamp lies in it. The query then runs on pyoxigraph as plain SPARQL over that union (the WINDOW block's
pattern as the WHERE clause); computed numbers are compared in rspark's canonical forms (tests/support/numbers.py).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.numbers import canonical_lexical
from tests.support.panes import replay_spying_on_panes

EX = "http://example.org/"
P = f"PREFIX : <{EX}> "

# The WINDOW block's pattern and the projection; {w} is the window declaration.
QUERIES = [
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?o } }",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?x . ?x :q ?o } }",
    "SELECT ?s (COUNT(?o) AS ?c) {w} WHERE { WINDOW :w { ?s ?p ?o } } GROUP BY ?s",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?o OPTIONAL { ?o :q ?z } FILTER(!BOUND(?z)) } }",
    "SELECT (SUM(?o) AS ?total) (AVG(?o) AS ?avg) {w} WHERE { WINDOW :w { ?s :q ?o FILTER(isNumeric(?o)) } }",
    "SELECT DISTINCT ?o {w} WHERE { WINDOW :w { { ?s :p ?o } UNION { ?o :q ?s } } }",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?o MINUS { ?s :q ?any } } }",
    # no grouping key: a group at every instant, an error (an IRI summed) unbound, an empty window's sum 0
    "SELECT (SUM(?o) AS ?total) (COUNT(*) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?o } }",
]

NODES = [f":a{i}" for i in range(4)]
OBJECTS = NODES + ["0", "1", "2", "5", "2.5", '"x"']

triples = st.tuples(st.sampled_from(NODES), st.sampled_from([":p", ":q"]), st.sampled_from(OBJECTS))
elements = st.lists(st.tuples(st.integers(0, 20), st.lists(triples, min_size=1, max_size=3)), min_size=1, max_size=8)
windows = st.integers(1, 8).flatmap(lambda r: st.tuples(st.just(r), st.integers(1, r)))
cases = st.tuples(elements, windows, st.lists(st.integers(0, 25), min_size=1, max_size=4, unique=True),
                  st.sampled_from(range(len(QUERIES))))

_COUNTER = itertools.count()


def trig(stream: list) -> str:
    lines = ["@prefix : <http://example.org/> .", "@prefix prov: <http://www.w3.org/ns/prov#> ."]
    for i, (ts, graph) in enumerate(stream):
        body = " ".join(f"{s} {p} {o} ." for s, p, o in graph)
        lines.append(f":g{i} {{ {body} }}")
        lines.append(f":g{i} prov:generatedAtTime {ts} .")
    return "\n".join(lines) + "\n"


def snapshot_store(stream: list, rng: int, slide: int, t: int) -> ox.Store:
    close = (t // slide) * slide
    store = ox.Store()
    text = "@prefix : <http://example.org/> .\n" + "\n".join(
        f"{s} {p} {o} ." for ts, graph in stream if close - rng < ts <= close for s, p, o in graph)
    store.load(text.encode(), format=ox.RdfFormat.TURTLE)
    return store


def plain(query: str) -> str:
    """The query over one snapshot: no window declaration, the WINDOW block's pattern as the WHERE clause."""
    body = query.replace("{w} ", "")
    return P + re.sub(r"WHERE \{ WINDOW :w \{ (.*) \} \}", r"WHERE { \1 }", body)


def oracle_rows(query: str, store: ox.Store) -> Counter:
    computed = set(re.findall(r"AS \?(\w+)", query))
    rows = Counter()
    result = store.query(plain(query))
    names = [v.value for v in result.variables]
    for sol in result:
        row = []
        for n in names:
            term = sol[n]
            if term is None:
                row.append((n, None))
            elif isinstance(term, ox.Literal):
                lex = term.value
                if n in computed and term.datatype is not None:
                    lex = canonical_lexical(lex, term.datatype.value)
                row.append((n, ("lit", lex, term.datatype.value if not term.language else None, term.language)))
            else:
                row.append((n, ("iri", term.value, None, None)))
        rows[tuple(sorted(row, key=lambda x: x[0]))] += 1
    return rows


def rspark_rows(rec, names) -> Counter:
    from rspark.model.terms import IRI, Literal

    rows = Counter()
    for r in rec.rows:
        row = []
        for n in names:
            term = r.get(n)
            if term is None:
                row.append((n, None))
            elif isinstance(term, Literal):
                row.append((n, ("lit", term.lexical, None if term.language else term.datatype, term.language)))
            else:
                assert isinstance(term, IRI)
                row.append((n, ("iri", term.value, None, None)))
        rows[tuple(sorted(row, key=lambda x: x[0]))] += 1
    return rows


@pytest.fixture(scope="module")
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        yield eng


def _replayed_stream(engine, tmp_path_factory, stream: list, rng: int, slide: int) -> str:
    """The engine's only stream is now ``stream`` (written as TriG, under a fresh IRI); the window declaration
    [RANGE rng SLIDE slide] on it."""
    path = tmp_path_factory.mktemp("stream") / "s.trig"
    path.write_text(trig(stream), encoding="utf-8")
    engine.clear()
    iri = f"{EX}S{next(_COUNTER)}"
    engine.add_stream(iri, path)
    return f"FROM NAMED WINDOW :w ON <{iri}> [RANGE {rng} SLIDE {slide}]"


@pytest.mark.slow
@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(cases)
def test_replay_equals_pyoxigraph_per_instant(engine, tmp_path_factory, case):
    stream, (rng, slide), times, qi = case
    query = QUERIES[qi]
    window = _replayed_stream(engine, tmp_path_factory, stream, rng, slide)
    records = engine.replay(P + query.replace("{w}", window), times=sorted(times))
    _assert_each_instant_is_pyoxigraphs(records, stream, rng, slide, times, query)


def _assert_each_instant_is_pyoxigraphs(records, stream, rng, slide, times, query) -> None:
    """A record at each of ``times``, each with pyoxigraph's answers over the instant's window snapshot."""
    assert [rec.ticks for rec in records] == sorted(times)
    for rec in records:
        expected = oracle_rows(query, snapshot_store(stream, rng, slide, rec.ticks))
        assert rspark_rows(rec, list(rec.vars)) == expected, \
            f"t={rec.ticks} window=({rng}, {slide}) query={query}\nstream={stream}"


# dense streams and consecutive instants close together, so that neighbouring windows share elements (and answers)
dense_elements = st.lists(st.tuples(st.integers(0, 10), st.lists(triples, min_size=1, max_size=3)), min_size=3,
                          max_size=8)
close_times = st.tuples(st.integers(2, 6), st.lists(st.integers(1, 2), min_size=2, max_size=4)).map(
    lambda start_gaps: list(itertools.accumulate(start_gaps[1], initial=start_gaps[0])))
r2s_cases = st.tuples(dense_elements, st.integers(3, 8).map(lambda r: (r, 1)), close_times,
                      st.sampled_from(range(len(QUERIES))))


@pytest.mark.slow
@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(r2s_cases, st.sampled_from(["ISTREAM", "DSTREAM"]))
def test_istream_and_dstream_are_the_multiset_differences_of_consecutive_instants(engine, tmp_path_factory, case,
                                                                                  r2s):
    """ISTREAM gives an instant's answers less the previous instant's, DSTREAM the previous instant's less the
    instant's, as multisets (RSP-QL, Sec. 2); the first instant's previous answer is empty."""
    stream, (rng, slide), times, qi = case
    query = QUERIES[qi]
    window = _replayed_stream(engine, tmp_path_factory, stream, rng, slide)
    text = P + query.replace("{w}", window).replace("SELECT", f"SELECT {r2s}", 1)
    got = {rec.ticks: rspark_rows(rec, list(rec.vars)) for rec in engine.replay(text, times=sorted(times))}
    previous: Counter = Counter()
    for t in sorted(times):
        now = oracle_rows(query, snapshot_store(stream, rng, slide, t))
        expected = now - previous if r2s == "ISTREAM" else previous - now
        assert got.get(t, Counter()) == expected, f"{r2s} t={t} window=({rng}, {slide}) query={query}\n{stream}"
        previous = now


# Conjunctive window patterns (joins and filters over two or more triple patterns): a time window that slides by a
# third of its range or less, over a stream whose triples each lie in one element, matches them before the window
# (rspark.spark.streaming.windows.PaneSpans) instead of in every window's copy.
JOINED = [
    "SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?x . ?x :q ?o } }",
    "SELECT ?s ?x ?o {w} WHERE { WINDOW :w { ?s :p ?x . ?x :p ?o FILTER(?s != ?o) } }",
    "SELECT ?s (COUNT(*) AS ?c) {w} WHERE { WINDOW :w { ?s :p ?x . ?s :q ?y } } GROUP BY ?s",
    "SELECT ?s ?v {w} WHERE { WINDOW :w { ?s :q ?v . ?s :p ?x FILTER(isNumeric(?v) && ?v > 1) } }",
    "SELECT ?s ?o {w} WHERE { WINDOW :w { { ?s :p ?x } { ?x :q ?o } } }",
    "SELECT ?a ?d {w} WHERE { WINDOW :w { ?a :p ?b . ?b :p ?c . ?c :q ?d } }",
]


def _once_each(stream: list) -> list:
    """``stream`` with each triple in its first element only (later copies dropped, emptied elements too)."""
    seen: set = set()
    out = []
    for ts, graph in stream:
        kept = [t for t in dict.fromkeys(graph) if t not in seen]
        seen.update(kept)
        if kept:
            out.append((ts, kept))
    return out


def _shifted(case: tuple) -> tuple:
    """A dense stream and instants near it, moved by an offset (panes far from the first, in high buckets)."""
    offset, stream, window, times, qi = case
    return [(ts + offset, graph) for ts, graph in stream], window, [t + offset for t in times], qi


def _pane_cases(queries: list) -> st.SearchStrategy:
    """Cases for the windows assigned by panes: a dense stream with each triple once (_once_each), a window of range
    3..12 sliding by a third of it or less, instants near the stream, a query of ``queries``, all moved by up to 60
    ticks (_shifted)."""
    return st.tuples(
        st.integers(0, 60),
        st.lists(st.tuples(st.integers(0, 16), st.lists(triples, min_size=1, max_size=4)), min_size=3,
                 max_size=16).map(_once_each),
        st.integers(3, 12).flatmap(lambda r: st.tuples(st.just(r), st.integers(1, r // 3))),
        st.lists(st.integers(0, 22), min_size=2, max_size=8, unique=True),
        st.sampled_from(range(len(queries)))).map(_shifted)


def _assert_by_panes_is_pyoxigraphs(engine, tmp_path_factory, case, queries: list, what: str) -> None:
    """The case's query replayed by panes (asserted, ``what`` says which path), pyoxigraph's at every instant."""
    stream, (rng, slide), times, qi = case
    query = queries[qi]
    window = _replayed_stream(engine, tmp_path_factory, stream, rng, slide)
    records, used = replay_spying_on_panes(engine, P + query.replace("{w}", window), times)
    assert used, what
    _assert_each_instant_is_pyoxigraphs(records, stream, rng, slide, times, query)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_pane_cases(JOINED))
def test_a_pattern_matched_before_the_window_equals_pyoxigraph_per_instant(engine, tmp_path_factory, case):
    _assert_by_panes_is_pyoxigraphs(engine, tmp_path_factory, case, JOINED,
                                    "the pattern was not matched before the window")


# Groupings of a window's solutions whose aggregates merge (no DISTINCT) are aggregated pane by pane, then merged per
# window (rspark.spark.streaming.r2r.aggregated_by_pane). The objects mix integers, a decimal, IRIs and a string:
# SUM and AVG meet errors, MIN and MAX compare terms of every kind. SAMPLE and GROUP_CONCAT read values that are the
# same in a group (their choice and order are free).
AGGREGATED = [
    "SELECT ?s (COUNT(*) AS ?n) (SUM(?o) AS ?sum) (AVG(?o) AS ?avg) {w} WHERE { WINDOW :w { ?s :q ?o } } GROUP BY ?s",
    "SELECT ?s (MIN(?o) AS ?lo) (MAX(?o) AS ?hi) (COUNT(?o) AS ?c) {w} WHERE { WINDOW :w { ?s :p ?o } } GROUP BY ?s",
    "SELECT (SUM(?v) AS ?t) (COUNT(*) AS ?n) {w} WHERE { WINDOW :w { ?s :p ?x . ?s :q ?v } }",
    "SELECT ?s (SAMPLE(STR(?s)) AS ?k) (GROUP_CONCAT(STR(?s)) AS ?g) {w} WHERE { WINDOW :w { ?s :p ?o } } "
    "GROUP BY ?s",
    "SELECT ?k (COUNT(*) AS ?n) (MAX(?o) AS ?m) {w} WHERE { WINDOW :w { ?s :q ?o } } GROUP BY (isIRI(?o) AS ?k)",
    "SELECT ?s (AVG(?v) AS ?a) {w} WHERE { WINDOW :w { ?s :p ?x . ?x :q ?v } } GROUP BY ?s HAVING (COUNT(*) > 1)",
    "SELECT ?o {w} WHERE { WINDOW :w { ?s :p ?o } } GROUP BY ?o",
]


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(_pane_cases(AGGREGATED))
def test_a_grouping_aggregated_pane_by_pane_equals_pyoxigraph_per_instant(engine, tmp_path_factory, case):
    _assert_by_panes_is_pyoxigraphs(engine, tmp_path_factory, case, AGGREGATED,
                                    "the grouping was not aggregated pane by pane")
