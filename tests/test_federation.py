"""SERVICE (SPARQL 1.1 Federated Query) against an endpoint this test starts on 127.0.0.1: a SPARQL 1.1 Protocol
server answering from a pyoxigraph store. Static and continuous queries join the endpoint's solutions; a failure
names the endpoint and its cause, and SERVICE SILENT gives the one empty solution instead."""

from __future__ import annotations

import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyoxigraph as ox
import pytest

from rspark.model.terms import IRI, BlankNode, Literal, QuotedTriple
from rspark.results import json_term
from rspark.spark.sparql import federation

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"
P = "PREFIX : <http://example.org/> "
REMOTE = """@prefix : <http://example.org/> .
:darko :hasDegree :doctorate . :minh :hasDegree :master . :axel :label "Axel"@en .
"""


class Endpoint(BaseHTTPRequestHandler):
    store: ox.Store
    seen: list

    def do_POST(self):  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length", 0))
        form = urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8"))
        query = form["query"][0]
        self.seen.append((self.path, self.headers.get("Accept"), query))
        if self.path == "/slow":
            time.sleep(2)
        if self.path == "/broken":
            self._answer(500, b"the store is down", "text/plain")
            return
        if self.path == "/html":
            self._answer(200, b"<html>hello</html>", "text/html")
            return
        body = self.store.query(query).serialize(format=ox.QueryResultsFormat.JSON)
        self._answer(200, body, "application/sparql-results+json")

    def _answer(self, status: int, body: bytes, ctype: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (the timeout test)
            pass

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint():
    store = ox.Store()
    store.load(REMOTE.encode(), format=ox.RdfFormat.TURTLE)
    handler = type("Handler", (Endpoint,), {"store": store, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    server.shutdown()
    server.server_close()


# ------------------------------------------------------------------------------------------------ the protocol


def test_the_pattern_is_sent_as_a_select_and_its_json_read_into_terms(endpoint):
    url, seen = endpoint
    names, rows = federation.call(url + "/sparql", P + "SELECT * WHERE { ?s ?p ?o }")
    assert seen[-1][:2] == ("/sparql", "application/sparql-results+json")
    assert sorted(names) == ["o", "p", "s"]
    assert sorted((r["s"].value, r["o"].n3()) for r in rows) == [
        (EX + "axel", '"Axel"@en'), (EX + "darko", f"<{EX}doctorate>"), (EX + "minh", f"<{EX}master>")]


def test_every_kind_of_json_term_is_read():
    # SPARQL 1.1 Query Results JSON Format, and the RDF-star CG's "triple" terms
    assert json_term({"type": "uri", "value": EX + "a"}) == IRI(EX + "a")
    assert json_term({"type": "bnode", "value": "b0"}) == BlankNode("b0")
    assert json_term({"type": "literal", "value": "x", "xml:lang": "en-GB"}) == Literal("x", language="en-GB")
    assert json_term({"type": "literal", "value": "1", "datatype": "http://www.w3.org/2001/XMLSchema#int"}) \
        == Literal("1", "http://www.w3.org/2001/XMLSchema#int")
    assert json_term({"type": "literal", "value": "x"}) == Literal("x")
    triple = {"type": "triple", "value": {"subject": {"type": "uri", "value": EX + "a"},
                                          "predicate": {"type": "uri", "value": EX + "p"},
                                          "object": {"type": "literal", "value": "1"}}}
    assert json_term(triple) == QuotedTriple(IRI(EX + "a"), IRI(EX + "p"), Literal("1"))


def test_each_failure_names_the_endpoint_and_its_cause(endpoint, monkeypatch):
    url, _ = endpoint
    q = "SELECT * WHERE { ?s ?p ?o }"
    with pytest.raises(federation.ServiceCallError) as err:
        federation.call(url + "/broken", q)
    assert str(err.value) == f"SERVICE <{url}/broken>: the endpoint answered HTTP 500 Internal Server Error: " \
                             "the store is down"
    with pytest.raises(federation.ServiceCallError, match=r"^SERVICE <.*/html>: the answer is not a SPARQL JSON "
                                                          r"result of a SELECT"):
        federation.call(url + "/html", q)
    with pytest.raises(federation.ServiceCallError, match=rf"^SERVICE <{url}/slow>: no answer within 0.5 s$"):
        federation.call(url + "/slow", q, timeout=0.5)
    with pytest.raises(federation.ServiceCallError, match=r"^SERVICE <http://127.0.0.1:9/sparql>: the endpoint "
                                                          r"cannot be reached \(.*refused.*\)$"):
        federation.call("http://127.0.0.1:9/sparql", q)
    monkeypatch.setattr(federation, "TIMEOUT_S", 0.5)  # the default timeout is the module's
    with pytest.raises(federation.ServiceCallError, match="no answer within 0.5 s"):
        federation.call(url + "/slow", q)


def test_a_variable_endpoint_is_refused_before_spark_starts():
    from rspark.syntax.translate import QueryError, compile_query, ensure_evaluable

    plan = compile_query(P + "SELECT * WHERE { ?e :at ?x SERVICE ?e { ?s ?p ?o } }")
    with pytest.raises(QueryError, match=r"^<query>:1:59: not supported: SERVICE \?e: an endpoint given by a "
                                         r"variable"):
        ensure_evaluable(plan)


def test_rspark_serve_refuses_queries_that_call_a_service():
    from rspark.service.state import SERVICE_REFUSED, ServiceError, refuse_service_calls
    from rspark.syntax.translate import compile_query

    with pytest.raises(ServiceError) as err:
        refuse_service_calls(compile_query(P + "SELECT * WHERE { SERVICE <http://127.0.0.1:1/x> { ?s ?p ?o } }"))
    assert err.value.status == 400 and str(err.value) == SERVICE_REFUSED
    refuse_service_calls(compile_query(P + "SELECT * WHERE { ?s ?p ?o }"))


# ------------------------------------------------------------------------------------------------ on Spark


@pytest.fixture(scope="module")
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", DATA / "social.trig")
        yield eng


def local(term) -> str:
    return term.n3().replace("<" + EX, ":").replace(">", "") if term is not None else "-"


def test_a_static_query_joins_the_endpoints_solutions(engine, endpoint, tmp_path):
    url, _ = endpoint
    people = tmp_path / "people.ttl"
    people.write_text("@prefix : <http://example.org/> .\n:darko :knows :minh . :axel :knows :darko .\n")
    engine.clear()
    engine.load(people)
    engine.add_stream(EX + "social", DATA / "social.trig")
    q = P + (f"SELECT ?a ?b ?d WHERE {{ ?a :knows ?b SERVICE <{url}/sparql> {{ ?b :hasDegree ?d }} }} ORDER BY ?a")
    rows = [(local(r["a"]), local(r["b"]), local(r["d"])) for r in engine.sparql(q).value.rows]
    assert rows == [(":axel", ":darko", ":doctorate"), (":darko", ":minh", ":master")]
    asked = engine.sparql(q).value.rows  # asked again: the endpoint is asked again (the plan is not kept)
    assert len(asked) == 2


def test_a_continuous_query_joins_the_endpoints_solutions_at_every_instant(engine, endpoint):
    # social.trig, windows (c - 1 min, c]: at 13:00 axel and darko in RedRoom, at 13:01 axel (BlueRoom) and minh
    # (RedRoom), at 13:02 darko (room1), axel (room2), minh (room1); the endpoint knows darko's and minh's degrees
    url, seen = endpoint
    before = len(seen)
    q = P + (f"SELECT ?person ?degree FROM NAMED WINDOW :win ON :social [RANGE PT1M SLIDE PT1M] WHERE {{ "
             f"WINDOW :win {{ ?person :isIn ?room }} SERVICE <{url}/sparql> {{ ?person :hasDegree ?degree }} }}")
    got = [(r.time, sorted((local(row["person"]), local(row["degree"])) for row in r.rows))
           for r in engine.replay(q, until="2016-03-01T13:02:00Z")]
    assert got == [("2016-03-01T13:00:00Z", [(":darko", ":doctorate")]),
                   ("2016-03-01T13:01:00Z", [(":minh", ":master")]),
                   ("2016-03-01T13:02:00Z", [(":darko", ":doctorate"), (":minh", ":master")])]
    assert len(seen) == before + 1  # one call for the whole replay
    assert seen[-1][2] == f"SELECT * WHERE {{\n  ?person <{EX}hasDegree> ?degree .\n}}"


def test_a_failing_endpoint_fails_the_query_unless_silent(engine, endpoint):
    url, _ = endpoint
    from rspark.errors import RsparkError

    q = P + ("SELECT ?person ?x FROM NAMED WINDOW :win ON :social [RANGE PT1M SLIDE PT1M] WHERE { "
             "WINDOW :win { ?person :isIn :BlueRoom } SERVICE %s <" + url + "/broken> { ?person :label ?x } }")
    with pytest.raises(RsparkError, match=rf"^SERVICE <{url}/broken>: the endpoint answered HTTP 500"):
        engine.replay(q % "", until="2016-03-01T13:01:00Z")
    # SILENT: the one empty solution, joined with the window's: axel with ?x unbound
    got = [(r.time, [(local(row.get("person")), local(row.get("x"))) for row in r.rows])
           for r in engine.replay(q % "SILENT", until="2016-03-01T13:01:00Z")]
    assert got == [("2016-03-01T13:00:00Z", []), ("2016-03-01T13:01:00Z", [(":axel", "-")])]

