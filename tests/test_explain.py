"""Golden tests of the printed algebra (rspark explain) for a representative subset of the query corpora.

Each expected text was read and checked against the query by hand when it was recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from rspark import explain
from tests.conftest import REPO, TESTDATA

EXPECTED = {
    "seed000_example4": (REPO, "tests/queries/seeds/s000_example4.rq", """\
(select
  (dataset
    (window :w1 :S (landmark 1))
    (window :w2 :S (range 5)))
  (project (?x ?z)
    (match
      (seq
        (event E1 :w1
          (bgp
            (triple ?x :p ?y)))
        (event E2 :w2
          (bgp
            (triple ?y :q ?z)))))))"""),
    "csrbench_q5": (TESTDATA, "csrbench/rspql-queries/q5.rspql", """\
(select
  (register <http://ex.org/csrbench/q5>)
  (r2s rstream)
  (dataset
    (window <http://ex.org/csrbench/w> <http://ex.org/streams/test> (range 5000ms slide 1000ms)))
  (project (?sensor ?obs)
    (window <http://ex.org/csrbench/w>
      (filter (> ?value 80)
        (bgp
          (triple ?obs om-owl:observedProperty weather:_AirTemperature)
          (triple ?obs om-owl:procedure ?sensor)
          (triple ?obs om-owl:result ?res)
          (triple ?res om-owl:floatValue ?value))))))"""),
    "rsp4j_two_streams": (TESTDATA, "rsp4j/csparql2/src/test/resources/qTwoStreams.rspql", """\
(select
  (register <s1>)
  (r2s rstream)
  (dataset
    (window <rw> <http://localhost:1255/streams/red> (range 15000ms slide 5000ms))
    (window <gw> <http://localhost:1255/streams/green> (range 15000ms slide 5000ms)))
  (project (?cntr ?cntg ?moreRedsThanGreens)
    (extend ((?moreRedsThanGreens (> ?cntr ?cntg)))
      (extend ((?cntg ?.1))
        (extend ((?cntr ?.0))
          (group () ((?.0 (count ?r)) (?.1 (count ?g)))
            (union
              (window <rw>
                (bgp
                  (triple ?r rdf:type c:Red)))
              (window <gw>
                (bgp
                  (triple ?g rdf:type c:Green))))))))))"""),
    "rsp4j_citybench_q1": (TESTDATA, "rsp4j/csparql2/src/test/resources/citybench/q1.rspql", """\
(select
  (register <q1>)
  (r2s rstream)
  (dataset
    (graph <http://citybench/SensorRepository.rdf>)
    (window <w1> ses:AarhusTrafficData182955 (range 3000ms slide 1000ms))
    (window <w2> ses:AarhusTrafficData158505 (range 3000ms slide 1000ms)))
  (project (?obId1 ?obId2 ?v1 ?v2)
    (join
      (join
        (bgp
          (triple ?p1 rdf:type ct:CongestionLevel)
          (triple ?p2 rdf:type ct:CongestionLevel))
        (window <w1>
          (bgp
            (triple ?obId1 ssn:observedProperty ?p1)
            (triple ?obId1 ssn:hasValue ?v1)
            (triple ?obId1 ssn:observedBy ses:AarhusTrafficData182955))))
      (window <w2>
        (bgp
          (triple ?obId2 ssn:observedProperty ?p2)
          (triple ?obId2 ssn:hasValue ?v2)
          (triple ?obId2 ssn:observedBy ses:AarhusTrafficData158505))))))"""),
    "seed002_cqels_stream": (REPO, "tests/queries/seeds/s002_06_track_axel_sliding_cqels.rq", """\
(select
  (dataset
    (window <urn:rspark:window:1> ex:social (range 600000ms slide 60000ms)))
  (project (?room)
    (window <urn:rspark:window:1>
      (bgp
        (triple :axel :isIn ?room)))))"""),
    "seed002_triple_window": (REPO, "tests/queries/seeds/s002_09_triple_window_csparql.rq", """\
(select
  (register Track3latest query)
  (dataset
    (stream ex:social (count triples 3)))
  (project (?who)
    (bgp
      (triple ?who :isIn ?room))))"""),
    "seed002_istream": (REPO, "tests/queries/seeds/s002_26_istream_rspql.rq", """\
(select
  (r2s istream)
  (dataset
    (window :win ex:social (range 60000ms slide 60000ms)))
  (project (?room ?person)
    (window :win
      (bgp
        (triple ?person :isIn ?room)))))"""),
    "seed004_rdf_star": (REPO, "tests/queries/seeds/s004_query_shape.rq", """\
(select
  (register <http://base/output> stream (every 10000ms))
  (dataset
    (window <http://base/w> <http://base/s/heart> (range 60000ms slide 10000ms)))
  (project (?hr ?time)
    (window <http://base/w>
      (join
        (bgp
          (triple ?g prov:generatedAtTime ?time))
        (graph ?g
          (filter (> ?c 0.9)
            (bgp
              (triple ?obs rdf:type sosa:Observation)
              (triple << ?obs sosa:hasSimpleResult ?hr >> ex:confidence ?c))))))))"""),
    "sample_sensor_average": (REPO, "rspark/samples/sensor_average.rq", """\
(select
  (register :out)
  (r2s istream)
  (dataset
    (graph :sensors)
    (window :w :obs (range 600000ms slide 60000ms)))
  (slice 0 3
    (project (?sensor ?avg)
      (order ((desc ?avg))
        (extend ((?avg ?.0))
          (filter (> ?.0 20)
            (group (?sensor) ((?.0 (avg ?v)))
              (leftjoin
                (join
                  (bgp
                    (triple ?sensor rdf:type :Sensor))
                  (window :w
                    (filter (> ?v 10)
                      (bgp
                        (triple ?o :by ?sensor)
                        (triple ?o :value ?v)))))
                (bgp
                  (triple ?sensor :room ??P1)
                  (triple ??P1 :label ?room))))))))))"""),
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.testdata) if EXPECTED[name][0] is TESTDATA
                                  else name for name in sorted(EXPECTED)])
def test_explain(name):
    root, path, expected = EXPECTED[name]
    text = (Path(root) / path).read_text(encoding="utf-8")
    assert explain(text) == expected
