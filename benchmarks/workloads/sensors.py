"""The live sensor workload: observations (and every so often an alarm) of a few sensors, three triples an
element with integer millisecond timestamps, generated in chunks stamped at their push time; and the three queries
over a tumbling one-second window (a filter, an aggregate, a SEQ). Read by ``live_latency.py`` and
``serve_load.py`` (its ``serve/`` parts)."""

from __future__ import annotations

import random

EX = "http://example.org/"
PROV = "http://www.w3.org/ns/prov#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
STREAM = EX + "s"
RANGE_MS = 1000  # = SLIDE: a tumbling window
TRIPLES_PER_ELEMENT = 3  # two in the element's graph, its timestamp
THRESHOLD = 95
_WINDOW = f"FROM NAMED WINDOW :w ON :s [RANGE {RANGE_MS} SLIDE {RANGE_MS}]"
QUERIES = {
    "filter": f"PREFIX : <{EX}>\nSELECT ?s ?v {_WINDOW}\n"
              f"WHERE {{ WINDOW :w {{ ?s :value ?v FILTER(?v > {THRESHOLD}) }} }}\n",
    "aggregate": f"PREFIX : <{EX}>\nSELECT ?s (AVG(?v) AS ?avg) {_WINDOW}\n"
                 "WHERE { WINDOW :w { ?s :value ?v } } GROUP BY ?s\n",
    "seq": f"PREFIX : <{EX}>\nSELECT ?s ?v1 ?v2 (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)\n{_WINDOW}\n"
           "EVENT ON :w { ?s :value ?v1 } AS E1\n"
           "EVENT ON :w { ?s :alarm ?v2 } AS E2\n"
           "WHERE { MATCH { E1 SEQ E2 } }\n",
}
class Generator:
    """The elements, as N-Quads text, numbered from 0 in the order they are pushed."""

    def __init__(self, sensors: int, alarm_every: int, seed: int = 7) -> None:
        self.rnd = random.Random(seed)
        self.sensors = [f"<{EX}sensor{k}>" for k in range(sensors)]
        self.alarm_every = alarm_every
        self.n = 0
        integer = f'^^<{XSD}integer> '
        self.value = f"<{EX}value> "
        self.alarm = f"<{EX}alarm> "
        self.obs = f"<{RDF_TYPE}> <{EX}Obs> "
        self.alarm_type = f"<{RDF_TYPE}> <{EX}Alarm> "
        self.integer = integer
        self.stamp = f"<{PROV}generatedAtTime> "

    def chunk(self, stamps: list[int]) -> str:
        rnd, sensors, lines = self.rnd, self.sensors, []
        n_sensors = len(sensors)
        for ts in stamps:
            n = self.n
            self.n += 1
            g = f"<{EX}e{n}>"
            s = sensors[rnd.randrange(n_sensors)]
            v = rnd.randrange(100)
            if self.alarm_every and n % self.alarm_every == self.alarm_every - 1:
                lines.append(f'{s} {self.alarm}"{v}"{self.integer}{g} .\n{s} {self.alarm_type}{g} .\n')
            else:
                lines.append(f'{s} {self.value}"{v}"{self.integer}{g} .\n{s} {self.obs}{g} .\n')
            lines.append(f'{g} {self.stamp}"{ts}"{self.integer}.\n')
        return "".join(lines)


def stamps_for(prev_ms: int, now_ms: int, count: int) -> list[int]:
    """``count`` timestamps spread over (prev_ms, now_ms], the last one now_ms, non-decreasing."""
    span = now_ms - prev_ms
    return [prev_ms + -(-(i + 1) * span // count) for i in range(count)]
