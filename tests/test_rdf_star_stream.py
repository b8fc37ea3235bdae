"""RSP-QL* (RSP-QL*): RDF-star streams and triple-star patterns in continuous queries.

RSP-QL*, Sec. 4 describes its query (Listing 1.1 is an image; tests/queries/seeds/s004_query_shape.rq is its shape):
a window of 1 min sliding every 10 s over a heart-rate stream, an RDF-star pattern matching each observation's value
and its confidence, a threshold filter. The stream below has three observations with hand-checked answers."""

from __future__ import annotations

import pytest

EX = "http://example.org/"
HEART = "http://base/s/heart"
PREFIXES = ("PREFIX : <http://example.org/> PREFIX ex: <http://www.example.org/ontology#> "
            "PREFIX sosa: <http://www.w3.org/ns/sosa/> PREFIX prov: <http://www.w3.org/ns/prov#> ")
DT = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"

STREAM = f"""@prefix ex: <http://www.example.org/ontology#> . @prefix sosa: <http://www.w3.org/ns/sosa/> .
@prefix prov: <http://www.w3.org/ns/prov#> . @prefix : <http://example.org/> .
:g1 {{ :o1 a sosa:Observation . :o1 sosa:hasSimpleResult 80 {{| ex:confidence 0.95 |}} . }}
:g1 prov:generatedAtTime "2022-01-01T00:00:05Z"{DT} .
:g2 {{ :o2 a sosa:Observation . << :o2 sosa:hasSimpleResult 120 >> ex:confidence 0.5 .
       << << :o2 sosa:hasSimpleResult 120 >> ex:confidence 0.5 >> ex:assessedBy :nurse . }}
:g2 prov:generatedAtTime "2022-01-01T00:00:15Z"{DT} .
:g3 {{ :o3 a sosa:Observation . :o3 sosa:hasSimpleResult 90 {{| ex:confidence 0.99 |}} . }}
:g3 prov:generatedAtTime "2022-01-01T00:00:25Z"{DT} .
"""


@pytest.fixture(scope="module")
def engine(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    path = tmp_path_factory.mktemp("star") / "heart.trig"
    path.write_text(STREAM, encoding="utf-8")
    with Engine(spark=spark) as eng:
        eng.add_stream(HEART, path)
        yield eng


def rows(outputs, *names) -> list:
    return [(rec.time, sorted(tuple(rec_row[n].n3().replace("<" + EX, ":").replace(">", "") for n in names)
                              for rec_row in rec.rows)) for rec in outputs]


def test_seed004_confident_heart_rates_in_the_last_minute(engine):
    q = PREFIXES + ("SELECT ?obs ?hr ?c FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT1M STEP PT10S] "
                    "WHERE { WINDOW :w { ?obs a sosa:Observation . "
                    "<< ?obs sosa:hasSimpleResult ?hr >> ex:confidence ?c FILTER(?c > 0.9) } }")
    o1 = (":o1", '"80"^^<http://www.w3.org/2001/XMLSchema#integer')
    o3 = (":o3", '"90"^^<http://www.w3.org/2001/XMLSchema#integer')
    # default profile: at t the window (t' - 1 min, t'] of the last slide t' <= t
    got = rows(engine.replay(q, until="2022-01-01T00:00:30Z"), "obs", "hr")
    assert got == [("2022-01-01T00:00:10Z", [o1]), ("2022-01-01T00:00:20Z", [o1]), ("2022-01-01T00:00:30Z", [o1, o3])]
    # rspql-star (RSP-QL*, Def. 6, 14): the window is a dataset whose default graph holds the elements' default
    # graphs only (their timestamp triples); the observations are in its named graphs, so this pattern finds nothing
    got = rows(engine.replay(q, profile="rspql-star", until="2022-01-01T00:00:30Z"), "obs", "hr")
    assert got == [("2022-01-01T00:00:10Z", []), ("2022-01-01T00:00:20Z", []), ("2022-01-01T00:00:30Z", [])]


def test_seed004_query_as_written_under_rspql_star(engine):
    # tests/queries/seeds/s004_query_shape.rq: the element's timestamp from the window's default graph, its content
    # through GRAPH ?g. Def. 15: at tau the window is [x - 1 min, x), x the last close strictly before tau: at
    # 00:00:10 it ends at 00:00:00 (empty); at 00:00:30 it ends at 00:00:20 (g2's value has confidence 0.5, g3 is
    # not in it yet)
    from pathlib import Path

    text = (Path(__file__).parent / "queries" / "seeds" / "s004_query_shape.rq").read_text(encoding="utf-8")
    got = [(rec.time, sorted((r["hr"].lexical, r["time"].lexical) for r in rec.rows))
           for rec in engine.replay(text, profile="rspql-star", until="2022-01-01T00:00:30Z")]
    o1 = ("80", "2022-01-01T00:00:05Z")
    assert got == [("2022-01-01T00:00:10Z", []), ("2022-01-01T00:00:20Z", [o1]), ("2022-01-01T00:00:30Z", [o1])]
    # under the default profile the window is one graph without timestamp triples (docs/profiles.md): no ?time
    assert [rec.rows for rec in engine.replay(text, until="2022-01-01T00:00:30Z")] == [[], [], []]


def test_an_annotation_in_a_pattern_matches_asserted_annotated_triples(engine):
    # ?obs sosa:hasSimpleResult ?hr {| ex:confidence ?c |} is the triple pattern and the annotation of its quoted
    # triple (SPARQL-star's AnnotationPatternPath: ?obs sosa:hasSimpleResult ?hr . << ?obs sosa:hasSimpleResult ?hr >>
    # ex:confidence ?c): o1 and o3 assert their value and annotate it ({| |} in the stream), o2's value is only
    # quoted, never asserted. Default profile, [RANGE PT1M STEP PT10S]: the window at 00:00:10 holds g1 (00:00:05),
    # at 00:00:20 g1 and g2 (00:00:15), at 00:00:30 g1, g2 and g3 (00:00:25).
    q = PREFIXES + ("SELECT ?obs ?hr ?c FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT1M STEP PT10S] "
                    "WHERE { WINDOW :w { ?obs sosa:hasSimpleResult ?hr {| ex:confidence ?c |} } }")

    def answers(query):
        return [(rec.time, sorted((r["obs"].n3(), r["hr"].lexical, r["c"].lexical) for r in rec.rows))
                for rec in engine.replay(query, until="2022-01-01T00:00:30Z")]

    o1, o2, o3 = (f"<{EX}o1>", "80", "0.95"), (f"<{EX}o2>", "120", "0.5"), (f"<{EX}o3>", "90", "0.99")
    assert answers(q) == [("2022-01-01T00:00:10Z", [o1]), ("2022-01-01T00:00:20Z", [o1]),
                          ("2022-01-01T00:00:30Z", [o1, o3])]
    # the quoted triple pattern alone also matches o2's value, which the annotation leaves out
    quoted = q.replace("?obs sosa:hasSimpleResult ?hr {| ex:confidence ?c |}",
                       "<< ?obs sosa:hasSimpleResult ?hr >> ex:confidence ?c")
    assert answers(quoted) == [("2022-01-01T00:00:10Z", [o1]), ("2022-01-01T00:00:20Z", [o1, o2]),
                               ("2022-01-01T00:00:30Z", [o1, o2, o3])]


def test_graph_inside_window_reads_the_elements(engine):
    # under every profile GRAPH inside WINDOW ranges over the window's elements (their names), per instant
    q = PREFIXES + ("SELECT ?g ?obs FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT20S STEP PT10S] "
                    "WHERE { WINDOW :w { GRAPH ?g { ?obs a sosa:Observation } } }")
    got = rows(engine.replay(q, until="2022-01-01T00:00:30Z"), "g", "obs")
    assert got == [("2022-01-01T00:00:10Z", [(":g1", ":o1")]),
                   ("2022-01-01T00:00:20Z", [(":g1", ":o1"), (":g2", ":o2")]),
                   ("2022-01-01T00:00:30Z", [(":g2", ":o2"), (":g3", ":o3")])]
    q = PREFIXES + ("SELECT ?obs FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT20S STEP PT10S] "
                    "WHERE { WINDOW :w { GRAPH :g2 { ?obs a sosa:Observation } } }")
    assert rows(engine.replay(q, until="2022-01-01T00:00:30Z"), "obs") == [
        ("2022-01-01T00:00:10Z", []), ("2022-01-01T00:00:20Z", [(":o2",)]), ("2022-01-01T00:00:30Z", [(":o2",)])]


def test_nested_quoted_patterns_and_quoted_triples_as_values(engine):
    # two layers of nesting (RSP-QL*, Sec. 9: who assessed the confidence of a value)
    q = PREFIXES + ("SELECT ?obs ?who FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT1M STEP PT10S] "
                    "WHERE { WINDOW :w { << << ?obs sosa:hasSimpleResult ?hr >> ex:confidence ?c >> "
                    "ex:assessedBy ?who } }")
    assert rows(engine.replay(q, times=["2022-01-01T00:00:20Z"]), "obs", "who") == [
        ("2022-01-01T00:00:20Z", [(":o2", ":nurse")])]
    q = PREFIXES + ("SELECT ?hr FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT1M STEP PT10S] "
                    "WHERE { WINDOW :w { ?t ex:confidence ?c . BIND(OBJECT(?t) AS ?hr) FILTER(isTRIPLE(?t)) } }")
    assert rows(engine.replay(q, times=["2022-01-01T00:00:30Z"]), "hr") == [
        ("2022-01-01T00:00:30Z", [('"120"^^<http://www.w3.org/2001/XMLSchema#integer',),
                                  ('"80"^^<http://www.w3.org/2001/XMLSchema#integer',),
                                  ('"90"^^<http://www.w3.org/2001/XMLSchema#integer',)])]


def test_construct_quoted_triples_feed_a_registered_stream(engine):
    # a query network over RDF-star: the producer annotates confident values, the consumer decomposes them
    producer = PREFIXES + ("REGISTER STREAM :confident AS CONSTRUCT { << ?obs sosa:hasSimpleResult ?hr >> :flag :ok } "
                           "FROM NAMED WINDOW :w ON <http://base/s/heart> [RANGE PT10S STEP PT10S] "
                           "WHERE { WINDOW :w { << ?obs sosa:hasSimpleResult ?hr >> ex:confidence ?c "
                           "FILTER(?c > 0.9) } }")
    consumer = PREFIXES + ("REGISTER QUERY :q AS SELECT ?obs "
                           "FROM NAMED WINDOW :v ON :confident [RANGE PT10S STEP PT10S] "
                           "WHERE { WINDOW :v { << ?obs ?p ?v >> :flag :ok } }")
    out = [rec for rec in engine.replay([producer, consumer], until="2022-01-01T00:00:30Z") if rec.form == "SELECT"]
    assert rows(out, "obs") == [("2022-01-01T00:00:10Z", [(":o1",)]), ("2022-01-01T00:00:20Z", []),
                                ("2022-01-01T00:00:30Z", [(":o3",)])]


def test_graph_inside_window_variable(engine):
    # WINDOW ?w { GRAPH ?g { ... } }: each window's elements, under the window's name
    q = PREFIXES + ("SELECT ?w ?g FROM NAMED WINDOW :a ON <http://base/s/heart> [RANGE PT10S STEP PT10S] "
                    "FROM NAMED WINDOW :b ON <http://base/s/heart> [RANGE PT20S STEP PT10S] "
                    "WHERE { WINDOW ?w { GRAPH ?g { ?obs a sosa:Observation } } }")
    assert rows(engine.replay(q, times=["2022-01-01T00:00:20Z"]), "w", "g") == [
        ("2022-01-01T00:00:20Z", [(":a", ":g2"), (":b", ":g1"), (":b", ":g2")])]
