"""[RANGE BGP n]: count-based windows over the matches of a basic graph pattern (the W3C RSP CG requirements,
"Count-based window based on Basic Graph Pattern"; rspark's definition is in rspark/spark/bgp_window.py and
docs/language.md)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.errors import NotSupportedError
from tests.test_replay_differential import elements

_COUNTER = itertools.count()

EX = "http://example.org/"
PREFIXES = ("PREFIX : <http://example.org/> PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#> "
            "PREFIX due: <http://example.org/due#> ")

# Each element one observation of who is in which room (the W3C RSP CG requirements' Observation), except g4 (two
# observations) and obs7, whose location arrives in a later element (g7). The observations of :axel, by completion:
#   obs3 @3, obs4 @4, obs5 @4, obs7 @7 (its last triple is in g7); the others: obs1 :darko @1, obs6 :minh @5.
STREAM = """@prefix : <http://example.org/> . @prefix ssn: <http://purl.oclc.org/NET/ssnx/ssn#> .
@prefix due: <http://example.org/due#> . @prefix prov: <http://www.w3.org/ns/prov#> .
:g1 { :obs1 a ssn:Observation ; ssn:observedBy :cam1 ; ssn:observedProperty :peopleInRoom ;
      ssn:observedValue :darko ; due:locatedIn :RedRoom }
:g1 prov:generatedAtTime 1 .
:g2 { :cam1 :status :ok }
:g2 prov:generatedAtTime 2 .
:g3 { :obs3 a ssn:Observation ; ssn:observedBy :cam1 ; ssn:observedProperty :peopleInRoom ;
      ssn:observedValue :axel ; due:locatedIn :RedRoom }
:g3 prov:generatedAtTime 3 .
:g4 { :obs5 a ssn:Observation ; ssn:observedBy :cam2 ; ssn:observedProperty :peopleInRoom ;
      ssn:observedValue :axel ; due:locatedIn :Hall .
      :obs4 a ssn:Observation ; ssn:observedBy :cam2 ; ssn:observedProperty :peopleInRoom ;
      ssn:observedValue :axel ; due:locatedIn :Kitchen }
:g4 prov:generatedAtTime 4 .
:g5 { :obs6 a ssn:Observation ; ssn:observedBy :cam1 ; ssn:observedProperty :peopleInRoom ;
      ssn:observedValue :minh ; due:locatedIn :Hall }
:g5 prov:generatedAtTime 5 .
:g6 { :obs7 a ssn:Observation ; ssn:observedBy :cam3 ; ssn:observedProperty :peopleInRoom ;
      ssn:observedValue :axel }
:g6 prov:generatedAtTime 6 .
:g7 { :obs7 due:locatedIn :Garden }
:g7 prov:generatedAtTime 7 .
"""

AXEL = ("?obs a ssn:Observation; ssn:observedBy ?sensor; ssn:observedProperty :peopleInRoom; "
        "ssn:observedValue :axel; due:locatedIn ?room .")


@pytest.fixture(scope="module")
def engine(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    d = tmp_path_factory.mktemp("bgp")
    (d / "social.trig").write_text(STREAM, encoding="utf-8")
    (d / "people.ttl").write_text("@prefix : <http://example.org/> . :axel :name \"Axel\" . :minh :name \"Minh\" . "
                                  ":darko :name \"Darko\" .", encoding="utf-8")
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", d / "social.trig")
        eng.load(d / "people.ttl")
        yield eng


def local(term) -> str:
    return term.n3().replace("<" + EX, ":").replace(">", "") if term is not None else "-"


def rows(outputs, *names) -> list:
    return [(rec.time, sorted(tuple(local(r.get(n)) for n in names) for r in rec.rows)) for rec in outputs]


def test_seed002_last_three_observations_of_axel(engine):
    # the W3C RSP CG requirements' query, its pattern read through WINDOW :win (RSP-QL: a named window is read by a
    # WINDOW block)
    q = PREFIXES + (f"SELECT ?obs ?room FROM NAMED WINDOW :win ON :social [RANGE BGP 3] "
                    f"WHERE {{ WINDOW :win {{ {AXEL} }} }}")
    got = rows(engine.replay(q, times=[1, 2, 3, 4, 5, 6, 7]), "obs", "room")
    assert got == [
        (1, []), (2, []),
        (3, [(":obs3", ":RedRoom")]),
        (4, [(":obs3", ":RedRoom"), (":obs4", ":Kitchen"), (":obs5", ":Hall")]),
        (5, [(":obs3", ":RedRoom"), (":obs4", ":Kitchen"), (":obs5", ":Hall")]),
        (6, [(":obs3", ":RedRoom"), (":obs4", ":Kitchen"), (":obs5", ":Hall")]),  # obs7 is not complete yet
        (7, [(":obs4", ":Kitchen"), (":obs5", ":Hall"), (":obs7", ":Garden")]),
    ]


def test_a_triple_window_cuts_the_observations_a_bgp_window_does_not(engine):
    # the seed's point: the last 4 triples at 4 (g4's, in s, p, o order) are obs5 without its location, no whole
    # observation; the last BGP match is one
    triples = PREFIXES + (f"SELECT ?obs FROM NAMED WINDOW :win ON :social [RANGE TRIPLES 4] "
                          f"WHERE {{ WINDOW :win {{ {AXEL} }} }}")
    bgp = PREFIXES + f"SELECT ?obs FROM NAMED WINDOW :win ON :social [RANGE BGP 1] WHERE {{ WINDOW :win {{ {AXEL} }} }}"
    assert rows(engine.replay(triples, times=[4]), "obs") == [(4, [])]
    # ties (obs4 and obs5 complete in the same element) are cut by the terms' order: obs5 is the last
    assert rows(engine.replay(bgp, times=[4]), "obs") == [(4, [(":obs5",)])]


def test_the_window_content_is_the_graph_of_the_matches(engine):
    # the content at 5 (last 2 observations of anyone: obs5 @4, obs6 @5) holds their triples, and only those
    q = PREFIXES + ("CONSTRUCT { ?obs ssn:observedValue ?who ; due:locatedIn ?room } "
                    "FROM NAMED WINDOW :w ON :social [RANGE BGP 2] "
                    "WHERE { WINDOW :w { ?obs ssn:observedValue ?who ; due:locatedIn ?room } }")
    [rec] = engine.replay(q, times=[5])
    ssn_value = "<http://purl.oclc.org/NET/ssnx/ssn#observedValue"  # (local() strips the '>')
    assert sorted(tuple(local(t) for t in tr) for tr in rec.triples) == [
        (":obs5", ":due#locatedIn", ":Hall"), (":obs5", ssn_value, ":axel"),
        (":obs6", ":due#locatedIn", ":Hall"), (":obs6", ssn_value, ":minh"),
    ]


def test_optional_and_filter_apply_to_the_counted_matches(engine):
    # the counted BGP is the block's mandatory part; OPTIONAL and FILTER act on the window's graph after the cut
    q = PREFIXES + ("SELECT ?obs ?status FROM NAMED WINDOW :w ON :social [RANGE BGP 2] WHERE { WINDOW :w { "
                    "?obs ssn:observedBy ?cam . OPTIONAL { ?cam :status ?status } FILTER(?obs != :obs1) } }")
    # last 2 at 3: obs1 and obs3, both by :cam1; obs1 is filtered out; :cam1 :status :ok (g2) is in the stream
    # before 3 but not in the window's graph, which holds the matches' triples only
    assert rows(engine.replay(q, times=[3]), "obs", "status") == [(3, [(":obs3", "-")])]


def test_cqels_inline_window_and_from_stream_with_a_static_graph(engine):
    inline = PREFIXES + ("SELECT ?obs ?who WHERE { STREAM :social [RANGE BGP 2] { ?obs ssn:observedValue ?who } }")
    assert rows(engine.replay(inline, times=[5, 6]), "obs", "who") == [
        (5, [(":obs5", ":axel"), (":obs6", ":minh")]),
        (6, [(":obs6", ":minh"), (":obs7", ":axel")]),
    ]
    # FROM STREAM: the counted pattern is the query's, matched over the stream and the static default graph (a match
    # needs one stream triple); the static triples it uses are not added to the default graph a second time
    merged = PREFIXES + ("SELECT ?obs ?name FROM STREAM :social [RANGE BGP 2] "
                         "WHERE { ?obs ssn:observedValue ?who . ?who :name ?name }")
    assert rows(engine.replay(merged, times=[1, 5]), "obs", "name") == [
        (1, [(":obs1", '"Darko"')]),
        (5, [(":obs5", '"Axel"'), (":obs6", '"Minh"')]),
    ]


def test_non_empty_profiles_start_at_the_first_match(engine):
    # csparql reports empty results but only where the window holds something: from the first axel match (3) on
    q = PREFIXES + f"SELECT ?obs FROM NAMED WINDOW :win ON :social [RANGE BGP 1] WHERE {{ WINDOW :win {{ {AXEL} }} }}"
    got = rows(engine.replay(q, profile="csparql"), "obs")
    assert got == [(3, [(":obs3",)]), (4, [(":obs5",)]), (5, [(":obs5",)]), (6, [(":obs5",)]), (7, [(":obs7",)])]


def test_a_window_block_without_triple_patterns_is_not_supported(engine):
    q = PREFIXES + ("SELECT ?x FROM NAMED WINDOW :w ON :social [RANGE BGP 2] "
                    "WHERE { WINDOW :w { { ?x :status :ok } UNION { ?x :status :down } } }")
    with pytest.raises(NotSupportedError,
                       match=r"\[RANGE BGP n\] window \(<http://example.org/w>\) read by a pattern without"):
        list(engine.replay(q, times=[2]))


# ------------------------------------------------------------------------------- differential, against pyoxigraph
# The oracle follows the definition, independently of rspark.spark: at t, every match of the counted BGP over the
# stream's triples with ts <= t (pyoxigraph); a match's position is the greatest over its triples of the triple's
# first (ts, file order); the last n by position make the window's graph; the WINDOW block runs on it (pyoxigraph).
# Where the cut falls between matches of the same position, each choice of them is an acceptable answer.

BGP_QUERIES = [  # (query, its counted BGP)
    ("SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?o } }", "?s :p ?o"),
    ("SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :p ?x . ?x :q ?o } }", "?s :p ?x . ?x :q ?o"),
    ("SELECT ?s (COUNT(?o) AS ?c) {w} WHERE { WINDOW :w { ?s ?p ?o } } GROUP BY ?s", "?s ?p ?o"),
    ("SELECT ?s ?o ?z {w} WHERE { WINDOW :w { ?s :p ?o OPTIONAL { ?o :q ?z } } }", "?s :p ?o"),
    ("SELECT ?s ?o {w} WHERE { WINDOW :w { ?s :q ?o . ?s :p ?x FILTER(?x != :a1) } }", "?s :q ?o . ?s :p ?x"),
]


def _term(token: str, sol: dict) -> str:
    return sol[token[1:]] if token.startswith("?") else f"<{EX}{token[1:]}>"


def bgp_oracle(stream: list, query: str, bgp: str, size: int, t: int) -> list:
    """pyoxigraph's rows of ``query`` at ``t`` (Counters): one per way to cut the matches. When the cut falls between
    matches of one position (completed by one element), rspark picks them by its encoded-term order, which this
    oracle does not model: every choice of the tied matches is an acceptable answer."""
    import pyoxigraph as ox

    from tests.test_replay_differential import oracle_rows

    first: dict[str, tuple] = {}  # triple (N-Triples) -> its first (ts, file order)
    for i, (ts, graph) in enumerate(stream):
        if ts <= t:
            text = "@prefix : <http://example.org/> .\n" + " ".join(f"{s} {p} {o} ." for s, p, o in graph)
            for q in ox.parse(text.encode(), format=ox.RdfFormat.TURTLE):
                key = f"{q.subject} {q.predicate} {q.object} ."
                first[key] = min(first.get(key, (ts, i)), (ts, i))
    store = ox.Store()
    if first:
        store.load("\n".join(first).encode(), format=ox.RdfFormat.N_TRIPLES)
    result = store.query("PREFIX : <http://example.org/> SELECT * WHERE { " + bgp + " }")
    names = [v.value for v in result.variables]
    patterns = [p.split() for p in bgp.split(" . ")]
    matches = []
    for sol in result:
        binding = {n: str(sol[n]) for n in names}
        triples = [f"{_term(a, binding)} {_term(b, binding)} {_term(c, binding)} ." for a, b, c in patterns]
        matches.append((max(first[tr] for tr in triples), triples))
    matches.sort(key=lambda m: m[0])
    if size >= len(matches):
        choices = [matches]
    else:
        cut = matches[-size][0]  # the position where the window starts
        certain = [m for m in matches if m[0] > cut]
        tied = [m for m in matches if m[0] == cut]
        choices = [certain + list(c) for c in itertools.combinations(tied, size - len(certain))]
    answers = []
    for chosen in choices:
        window = ox.Store()
        graph = {tr for _, triples in chosen for tr in triples}
        if graph:
            window.load("\n".join(graph).encode(), format=ox.RdfFormat.N_TRIPLES)
        answers.append(oracle_rows(query, window))
    return answers


@pytest.mark.slow
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.tuples(elements, st.integers(1, 4), st.lists(st.integers(0, 22), min_size=1, max_size=4, unique=True),
                 st.sampled_from(range(len(BGP_QUERIES)))))
def test_bgp_window_equals_pyoxigraph_per_instant(engine, tmp_path_factory, case):
    from tests.test_replay_differential import P, rspark_rows, trig

    stream, size, times, qi = case
    query, bgp = BGP_QUERIES[qi]
    path = tmp_path_factory.mktemp("bgpstream") / "s.trig"
    path.write_text(trig(stream), encoding="utf-8")
    iri = f"{EX}B{next(_COUNTER)}"
    engine.add_stream(iri, path)
    window = f"FROM NAMED WINDOW :w ON <{iri}> [RANGE BGP {size}]"
    records = engine.replay(P + query.replace("{w}", window), times=sorted(times))
    assert [rec.ticks for rec in records] == sorted(times)
    for rec in records:
        answers = bgp_oracle(stream, query, bgp, size, rec.ticks)
        got = rspark_rows(rec, list(rec.vars))
        assert got in answers, f"t={rec.ticks} size={size} query={query}\nstream={stream}\noracle={answers}"
