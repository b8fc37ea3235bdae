"""RDF-star patterns decompose quoted triples in place (the JVM UDF rspark/jvm/rspark/jvm/QuotedParts.java,
rspark.spark.sparql.quoted) rather than by a join with the table of every quoted triple in the data (the path of a
session without rspark's JVM helpers). Checked here:

* the UDF splits every encoded quoted triple into the encodings of its three terms, for generated terms with the
  hard cases of the encoding (literals holding ``" >> "``, ``<<``, quotes, backslashes, new lines; blank nodes;
  nested quoted triples in either position), and gives null for anything else (other terms, malformed strings);
* the two ways give the same solutions for generated RDF-star data and generated queries with quoted triple
  patterns (constants, variables, repeated variables, a variable bound outside the quoted pattern, nesting,
  OPTIONAL), and the W3C RDF-star evaluation tests run on the in-place way (tests/test_w3c_eval.py);
* a query's plan reads no quoted-triple table (the loader's ``explode`` of quoted terms) when the UDF is there.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.model.codec import encode
from rspark.model.terms import IRI, BlankNode, Literal, QuotedTriple
from rspark.spark import jvm

pytestmark = pytest.mark.spark

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
LEXICAL = st.sampled_from(["a", "a b", "x >> y", "<< <a> <b> <c> >>", 'say "hi"', "back\\slash", "line\nbreak",
                           "", " ", ">>", "\" >>", "_:b1 <x>", "1"])

iris = st.sampled_from([IRI(EX + "a"), IRI(EX + "p"), IRI(EX + "b c"[:5]), IRI("urn:x:y")])
literals = st.builds(lambda lex, kind: Literal(lex, language="en") if kind == "lang" else
                     Literal(lex, datatype=XSD + "integer") if kind == "typed" else Literal(lex),
                     LEXICAL, st.sampled_from(["plain", "lang", "typed"]))
blanks = st.sampled_from([BlankNode("b1"), BlankNode("x_2")])


def quoted_triples(depth: int = 2):
    inner = quoted_triples(depth - 1) if depth > 1 else iris
    subjects = st.one_of(iris, blanks, inner)
    objects = st.one_of(iris, blanks, literals, inner)
    return st.builds(QuotedTriple, subjects, iris, objects)


def _split(spark, values: list) -> list:
    udf = jvm.quoted_parts(spark)
    assert udf is not None, "the test session must have rspark's jar (a JDK is present in CI)"
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, t string")
    rows = df.selectExpr("i", f"{udf}(t) AS parts").collect()
    got = {r["i"]: (None if r["parts"] is None else tuple(r["parts"])) for r in rows}
    return [got[i] for i in range(len(values))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(quoted_triples(), min_size=1, max_size=30))
def test_the_udf_splits_every_encoded_quoted_triple(spark, triples):
    got = _split(spark, [encode(t) for t in triples])
    assert got == [(encode(t.subject), encode(t.predicate), encode(t.object)) for t in triples]


def test_the_udf_gives_null_for_anything_else(spark):
    values = [None, "<http://ex.org/a>", "_:b", '"<< <a> <b> <c> >>"', "<< <a> <b> >>", "<< <a> <b> <c>",
              "<< <a> <b> <c> <d> >>", '<< <a> <b> "open >>', "<<  <a> <b> <c> >>", "<< <a> <b> <c> >> ",
              "<< << <a> <b> <c> <p> <o> >>", "", "<< x <b> <c> >>"]
    assert _split(spark, values) == [None] * len(values)


# --------------------------------------------------------------------------- in place and by join, same solutions

NODES = [f"<{EX}s{i}>" for i in range(3)]
PREDICATES = [f"<{EX}p{i}>" for i in range(2)]
LITERALS = ['"1"^^<http://www.w3.org/2001/XMLSchema#integer>', '"x >> y"', '"<< a >>"@en', '"q \\" >>"']


@st.composite
def star_term(draw, depth: int, subject: bool):
    if depth > 0 and draw(st.booleans()):
        s = draw(star_term(depth - 1, True))
        o = draw(star_term(depth - 1, False))
        return f"<< {s} {draw(st.sampled_from(PREDICATES))} {o} >>"
    return draw(st.sampled_from(NODES if subject else NODES + LITERALS))


star_data = st.lists(st.tuples(star_term(2, True), st.sampled_from(PREDICATES), star_term(2, False)),
                     min_size=1, max_size=15, unique=True)
QUERIES = [
    "SELECT * WHERE { << ?s ?p ?o >> ?q ?v }",
    "SELECT * WHERE { ?x ?q << ?s :p0 ?o >> }",
    "SELECT * WHERE { << << ?a ?b ?c >> ?p ?o >> ?q ?v }",
    "SELECT * WHERE { ?x ?q << ?s ?p << ?a ?b ?c >> >> }",
    "SELECT * WHERE { << ?s ?p ?s >> ?q ?v }",
    "SELECT * WHERE { << ?s ?p ?o >> ?p ?v }",
    "SELECT * WHERE { ?s ?p ?o . << ?s ?p ?o >> ?q ?v }",
    "SELECT * WHERE { << ?s :p1 \"x >> y\" >> ?q ?v }",
    "SELECT ?s ?v WHERE { ?s ?q ?v OPTIONAL { << ?s ?p ?o >> :p0 ?w } }",
    "SELECT ?q (COUNT(*) AS ?n) WHERE { << ?s ?p ?o >> ?q ?v } GROUP BY ?q",
    "ASK { << << :s0 ?b ?c >> ?p ?o >> ?q ?v }",
]


def _frame(spark, engine, text: str):
    from rspark import compile_query
    from rspark.spark.sparql.query import make_env, projected_names, select_frame, solutions_of

    plan = compile_query(text)
    _, sols = solutions_of(spark, plan, engine.dataset_for(plan), make_env(plan.base))
    return select_frame(sols, projected_names(sols))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=star_data, q=st.sampled_from(QUERIES))
def test_in_place_equals_the_join_with_the_quoted_table(spark, tmp_path_factory, monkeypatch, data, q):
    from rspark.engine.engine import Engine

    path = tmp_path_factory.mktemp("star") / "data.nt"
    path.write_text("".join(f"{s} {p} {o} .\n" for s, p, o in data), encoding="utf-8")
    text = f"PREFIX : <{EX}> " + q
    with Engine(spark=spark) as engine:
        engine.load(path)
        in_place = sorted(map(tuple, _frame(spark, engine, text).collect()), key=repr)
        with monkeypatch.context() as m:
            m.setattr(jvm, "quoted_parts", lambda session: None)
            by_join = sorted(map(tuple, _frame(spark, engine, text).collect()), key=repr)
    assert in_place == by_join, f"{text}\n{data}"


def _plan_text(spark, engine, text: str) -> str:
    return _frame(spark, engine, text)._jdf.queryExecution().optimizedPlan().toString()


def test_the_plan_reads_no_quoted_triple_table(spark, tmp_path, monkeypatch):
    from rspark.engine.engine import Engine

    path = tmp_path / "data.nt"
    path.write_text(f'<< <{EX}s0> <{EX}p0> "x >> y" >> <{EX}p1> <{EX}s1> .\n', encoding="utf-8")
    text = "SELECT * WHERE { << ?s ?p ?o >> ?q ?v }"
    with Engine(spark=spark) as engine:
        engine.load(path)
        plan = _plan_text(spark, engine, text)
        rows = engine.sparql(text).value.rows
        assert jvm.QUOTED_PARTS + "(" in plan and "MapInArrow explode(" not in plan
        with monkeypatch.context() as m:
            m.setattr(jvm, "quoted_parts", lambda session: None)
            plan = _plan_text(spark, engine, text)
            assert jvm.QUOTED_PARTS + "(" not in plan and "MapInArrow explode(" in plan
    assert [{k: v.n3() for k, v in row.items()} for row in rows] == [
        {"s": f"<{EX}s0>", "p": f"<{EX}p0>", "o": '"x >> y"', "q": f"<{EX}p1>", "v": f"<{EX}s1>"}]


def test_nesting_repeated_variables_and_outer_bindings_exactly(spark, tmp_path):
    from rspark.engine.engine import Engine

    s0, s1, p0, p1 = (f"<{EX}{n}>" for n in ("s0", "s1", "p0", "p1"))
    inner = f'<< {s0} {p0} "x >> y" >>'
    path = tmp_path / "data.nt"
    path.write_text(f"<< {inner} {p1} {s1} >> {p0} {s0} .\n"  # nested subject
                    f"{s1} {p1} << {s0} {p0} {s0} >> .\n"  # subject = object
                    f"{s0} {p0} {s1} .\n<< {s0} {p0} {s1} >> {p1} \"1\" .\n", encoding="utf-8")
    queries = {
        "SELECT ?o ?v WHERE { << << ?s ?p ?o >> ?q ?w >> ?r ?v }": [('"x >> y"', s0)],
        "SELECT ?x WHERE { ?x ?q << ?s ?p ?s >> }": [(s1,)],
        "SELECT ?c WHERE { ?s ?p ?o . << ?s ?p ?o >> ?q ?c }": [('"1"',)],
        "SELECT ?s WHERE { << ?s ?p ?s >> ?q ?v }": [],
        "SELECT ?t WHERE { << ?t ?q ?w >> ?r ?v FILTER(isTRIPLE(?t)) }": [(inner,)],
    }
    with Engine(spark=spark) as engine:
        engine.load(path)
        for text, expected in queries.items():
            value = engine.sparql(text).value
            got = sorted(tuple(row[v].n3() for v in value.vars) for row in value.rows)
            assert got == sorted(expected), text
