"""JSON and CSV records that arrive as messages (rspark.engine.live.records): which payload formats go with a mapped
and an unmapped stream, the executors' side of a mapped Kafka source (each record's value mapped, its problems named
by topic, partition and offset, a value none of whose records maps given back whole), fuzzed values. Pure Python:
no Spark (the live sources against real servers are in tests/test_mapping.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.engine.live.records import NoRecordMapped, map_messages, message_base
from rspark.errors import DataError, InputError
from rspark.spark.loading.mapping import load_mapping
from rspark.spark.loading.payload import message_format

SAMPLES = Path(__file__).resolve().parent.parent / "rspark" / "samples"
CSV_MAPPING = load_mapping(str(SAMPLES / "observations-csv.yaml"))
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
SPEC = "kafka://127.0.0.1:9092/readings"


@pytest.mark.parametrize("payload_format, mapped, rdf, expected", [
    (None, True, True, "json"), ("csv", True, True, "csv"), ("JSONL", True, False, "jsonl"),
    ("ndjson", True, True, "jsonl"), (None, False, True, None), ("trig", False, True, "trig"),
    ("nquads", False, True, "nquads")])
def test_the_message_format_of_a_source(payload_format, mapped, rdf, expected):
    assert message_format("mqtt://h:1/t", payload_format, CSV_MAPPING if mapped else None, rdf=rdf) == expected


@pytest.mark.parametrize("payload_format, mapped, rdf, message", [
    ("trig", True, True, "source 'mqtt://h:1/t': the stream maps records: its messages are csv, json or jsonl, not "
                         "'trig'"),
    ("csv", False, True, "source 'mqtt://h:1/t': csv messages need a mapping on the stream (--mapping IRI=FILE, "
                         "live_stream(iri, mapping=FILE), a declaration's \"mapping\")"),
    ("trig", False, False, "source 'mqtt://h:1/t': the payload format is with a mapping csv, json or jsonl, not "
                           "'trig'"),
    ("xml", False, True, "source 'mqtt://h:1/t': the payload format is trig or nquads, or with a mapping csv, json "
                         "or jsonl, not 'xml'")])
def test_a_message_format_that_does_not_go_with_the_stream_is_refused(payload_format, mapped, rdf, message):
    with pytest.raises(InputError) as info:
        message_format("mqtt://h:1/t", payload_format, CSV_MAPPING if mapped else None, rdf=rdf)
    assert str(info.value) == message


def test_a_mapped_kafka_micro_batch_on_the_executors_side():
    """Three record values: two CSV records (one rejected, named by its place in the topic, line and record), one
    without a timestamp (given back whole, with its problem), one that is not CSV of the mapping's columns."""
    rows = [("id,sensor,value,time\n1,1,15,1772370000\nx,1,2,\n", "readings", 0, 7),
            ("id,sensor,value,time\n2,2,28,\n", "readings", 1, 3),
            ("a,b\n1,2\n", "readings", 1, 4), ("  \n", "readings", 0, 8), (None, "readings", 0, 9)]
    out = list(map_messages(rows, CSV_MAPPING, "csv", PROV, SPEC))
    place = SPEC + " (topic readings, partition {p}, offset {o})"
    assert out == [
        (0, 7, "<http://example.org/o1> <http://example.org/by> <http://example.org/s1> <http://example.org/o1> .\n"
               '<http://example.org/o1> <http://example.org/value> "15"^^<http://www.w3.org/2001/XMLSchema#integer> '
               "<http://example.org/o1> .\n"
               f'<http://example.org/o1> <{PROV}> "2026-03-01T13:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
               " .\n",
         [("record 2: no timestamp (the field 'time' is missing)", place.format(p=0, o=7), 3)], None),
        (1, 3, "", [("record 1: no timestamp (the field 'time' is missing)", place.format(p=1, o=3), 2)],
         "id,sensor,value,time\n2,2,28,\n"),
        (1, 4, "", [(f"{place.format(p=1, o=4)}: the mapping {SAMPLES / 'observations-csv.yaml'} reads the column "
                     "'time' (timestamp.field), which the CSV header does not have (its columns: a, b)", None, None)],
         "a,b\n1,2\n")]
    rebuilt = DataError(*out[0][3][0][:1], file=out[0][3][0][1], line=out[0][3][0][2])
    assert str(rebuilt) == f"{place.format(p=0, o=7)}:3: record 2: no timestamp (the field 'time' is missing)"


def test_no_record_mapped_says_the_first_problem_and_keeps_them_all():
    errors = [DataError("record 1: bad", file="f", line=2), DataError("record 2: worse", file="f", line=3)]
    exc = NoRecordMapped(errors)
    assert str(exc) == "f:2: record 1: bad (and 1 more rejected record)"
    assert exc.errors == errors and (exc.file, exc.line) == ("f", 2)
    assert str(NoRecordMapped(errors[:1])) == "f:2: record 1: bad"


def test_message_bases_are_iris_of_the_identity():
    assert message_base("t", 0, 7) == message_base("t", 0, 7) != message_base("t", 0, 8)
    assert message_base("t", 0, 7).startswith("urn:rspark:record:") and message_base("t", 0, 7).endswith(":")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(st.text(max_size=60), st.sampled_from([
    "id,sensor,value,time\n1,1,15,1772370000\n", '{"id": 1, "sensor": 2, "value": 3, "time": 1772370000}',
    '[{"id": 1}]', "id,sensor,value,time\r\n", "\ufeffid,sensor,value,time\n1,2,3,x\n"])),
    fmt=st.sampled_from(["csv", "json", "jsonl"]))
def test_fuzz_any_value_is_mapped_or_named(value, fmt):
    """Any record value gives elements or named problems, never an exception on the executors (a failed task
    would fail the micro-batch again and again)."""
    [(partition, offset, nquads, problems, failed)] = list(map_messages([(value + "x", "t", 0, 1)], CSV_MAPPING,
                                                                          fmt, PROV, SPEC))
    assert (partition, offset) == (0, 1)
    assert (failed is None) == bool(nquads)
    assert failed is not None or all(line.endswith(" .") for line in nquads.splitlines())
    assert all(isinstance(reason, str) and reason for reason, _, _ in problems)
    assert nquads or problems
