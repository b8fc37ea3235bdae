"""Live mode's read model (rspark.engine.live.view): the values the service and its dashboard read, without Spark."""

from __future__ import annotations

from rspark import compile_query
from rspark.engine.live.view import Band, IntervalVariables, WindowView, interval_variables, to_json

WINDOW = "FROM NAMED WINDOW :w ON :S [RANGE 10 SLIDE 2]"


def test_interval_variables_come_from_the_algebra():
    select = compile_query(f"PREFIX : <http://e/> SELECT ?x (getSTARTTIME() AS ?s) (getENDTIME() AS ?e) {WINDOW} "
                           "WHERE { WINDOW :w { ?x :p ?y } }")
    assert interval_variables(select.op) == IntervalVariables("s", "e")
    bound = compile_query(f"PREFIX : <http://e/> SELECT ?x ?from ?to {WINDOW} WHERE {{ WINDOW :w {{ ?x :p ?y }} "
                          "BIND(getENDTIME() AS ?to) BIND(getSTARTTIME() AS ?from) }")
    assert interval_variables(bound.op) == IntervalVariables("from", "to")
    # a variable named like the function, or only one of the two bound: none
    text = (f"PREFIX : <http://e/> SELECT ?getSTARTTIME (getSTARTTIME() AS ?s) {WINDOW} "
            "WHERE { WINDOW :w { ?x :p ?getSTARTTIME } }")
    assert interval_variables(compile_query(text).op) is None


def test_a_window_view_as_json():
    band = Band(0, 4, start_open=True, at=4)
    w = WindowView("http://e/w", "http://e/S", "time", range=4, slide=2, current=band, next=Band(2, 6, True, at=6))
    assert w.parameters() == {"name": "http://e/w", "stream": "http://e/S", "kind": "time", "range": 4, "slide": 2,
                              "size": None}
    assert to_json(band) == {"start": 0, "end": 4, "start_open": True, "end_open": False, "at": 4}
    counted = WindowView("http://e/w", "http://e/S", "count", size=2, unit="elements", partition="http://e/isIn")
    assert counted.parameters() == {"name": "http://e/w", "stream": "http://e/S", "kind": "count", "range": None,
                                    "slide": None, "size": 2, "unit": "elements", "partition": "http://e/isIn"}
    landmark = WindowView(None, "http://e/S", "landmark", start="2026-03-01T13:00:00Z")
    assert landmark.parameters()["start"] == "2026-03-01T13:00:00Z"
