"""RSP-QL*'s application use case (Keskisarkka et al., SEMANTiCS 2019, Sec. 7; Listing 1.2 is an image, and
``rspark/samples/ehealth/alerts.rq`` has its shape): five streams about the patient :rut (heart rate, breathing rate,
oxygen saturation, each reading annotated with its confidence; her activity; where she and her partner are), the
thresholds of each activity as background data, an alert pushed to a stream when a window's confident values cross
her current activity's thresholds, and a consumer of the alert stream that calls her partner. The expected alerts
are derived by hand below; the same data and query written with RDF reification give the same alerts.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

import rspark

SAMPLES = Path(rspark.__file__).parent / "samples" / "ehealth"
NS = "http://example.org/ehealth#"
CONTEXT = "http://example.org/ehealth/context"
STREAMS = ["heart", "breathing", "oxygen", "activity", "location"]
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
UNTIL = "2026-03-02T10:12:00Z"

# The 3-minute tumbling windows, each value kept when its confidence is at least 0.8:
#   10:03  resting (max heart 90, max breathing 20, min oxygen 94): heart avg(95, 97) = 96 > 90, breathing
#          avg(22, 21) = 21.5 > 20, oxygen min(95) = 95, not below 94: no alert
#   10:06  resting: heart 98 (150 has confidence 0.2) > 90, breathing 24 > 20, oxygen 93 (85 has 0.1) < 94: ALERT,
#          :rut in the living room, her partner in the kitchen
#   10:09  walking (120, 28, 92): heart 110, not above 120: no alert
#   10:12  walking: heart avg(125, 130) = 127.5 > 120, breathing 30 > 28, oxygen 90 < 92: ALERT, :rut in the
#          street, her partner at the office
ALERTS = {
    "2026-03-02T10:03:00Z": [],
    "2026-03-02T10:06:00Z": [("resting", 98.0, 24.0, 93.0, "livingRoom", "kitchen")],
    "2026-03-02T10:09:00Z": [],
    "2026-03-02T10:12:00Z": [("walking", 127.5, 30.0, 90.0, "street", "office")],
}
# the consumer's instants: its window's closes from the alert stream's first element (10:06) on
CALLS = {t: [(a[5], a[0], a[1]) for a in alerts] for t, alerts in ALERTS.items() if t >= "2026-03-02T10:06:00Z"}


def _local(term) -> str:
    return term.value.rsplit("#", 1)[1]


def _alerts(records) -> dict:
    out = {}
    for rec in records:
        by_alert: dict = {}
        for s, p, o in rec.triples:
            by_alert.setdefault(s, {})[p.value[len(NS):]] = o
        out[rec.time] = sorted((_local(a["activity"]), float(a["heartRate"].lexical), float(a["breathingRate"].lexical),
                                float(a["oxygenSaturation"].lexical), _local(a["patientIn"]), _local(a["partnerIn"]))
                               for a in by_alert.values())
    return out


def _calls(records) -> dict:
    return {rec.time: sorted((_local(r["partnerIn"]), _local(r["activity"]), float(r["heartRate"].lexical))
                             for r in rec.rows) for rec in records}


def reified_stream(text: str) -> str:
    """The stream with each annotated triple ``s p o {| q v |}`` written with RDF reification: the triple, and a
    statement node with rdf:subject, rdf:predicate, rdf:object and the annotation."""
    numbers = itertools.count(1)

    def reify(m: re.Match) -> str:
        s, p, o, q, v = m.groups()
        return (f"{s} {p} {o} . _:r{next(numbers)} rdf:subject {s} ; rdf:predicate {p} ; rdf:object {o} ; {q} {v} .")

    out = re.sub(r"(\S+) (\S+) (\S+) \{\| (\S+) (\S+) \|\} \.", reify, text)
    assert "{|" not in out
    return f"@prefix rdf: <{RDF}> .\n" + out


def reified_query(text: str) -> str:
    """The query with each quoted triple pattern ``<< s p ?v >> q ?c`` matched on its reification instead."""
    out = re.sub(r"<< (\S+) (\S+) (\S+) >> (\S+) (\S+)",
                 r"?st rdf:subject \1 ; rdf:predicate \2 ; rdf:object \3 ; \4 \5", text)
    assert "<<" not in out
    return f"PREFIX rdf: <{RDF}>\n" + out


@pytest.mark.slow
def test_seed004_use_case_alerts_the_partner_and_reads_the_same_with_rdf_reification(spark, tmp_path):
    """One replay of three queries: the alerts (RDF-star), the call to the partner (reading the alert stream), and
    the alerts written with RDF reification over the streams written so (each stream under its IRI with ``-reified``
    appended, its alerts registered as :alertsReified)."""
    from rspark.engine.engine import Engine

    for name in STREAMS:
        (tmp_path / f"{name}.trig").write_text(reified_stream((SAMPLES / f"{name}.trig").read_text()))
    assert "<<" not in (tmp_path / "heart.trig").read_text()
    alerts = (SAMPLES / "alerts.rq").read_text()
    reified = reified_query(alerts).replace("REGISTER STREAM :alerts", "REGISTER STREAM :alertsReified")
    for name in STREAMS:
        reified = reified.replace(f" ON :{name} ", f" ON :{name}-reified ")
    with Engine(spark=spark) as engine:
        for name in STREAMS:
            engine.add_stream(NS + name, SAMPLES / f"{name}.trig")
            engine.add_stream(NS + name + "-reified", tmp_path / f"{name}.trig")
        engine.load(SAMPLES / "context.ttl", graph=CONTEXT)
        records = engine.replay([alerts, (SAMPLES / "call_partner.rq").read_text(), reified],
                                names=["alerts", "call_partner", "reified"], until=UNTIL)
    # a producer's records carry its REGISTER name
    assert _alerts([r for r in records if r.query == NS + "alerts"]) == ALERTS
    assert _calls([r for r in records if r.query == "call_partner"]) == CALLS
    assert _alerts([r for r in records if r.query == NS + "alertsReified"]) == ALERTS
