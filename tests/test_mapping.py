"""JSON and CSV records mapped to stream elements (rspark.spark.loading.mapping, docs/streams.md "JSON and CSV
records"): the mapping file's checks (file, line, key), a record's exact N-Quads (RML's IRI-safe templates, escaped
literals, a missing field's triple skipped), timestamps, rejected records named by file, line and record; fuzzed
mappings and records. Pure Python: no Spark."""

from __future__ import annotations

import json
import os
import string
import time
from pathlib import Path

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rspark.errors import DataError, InputError
from rspark.spark.loading import mapping as M

SAMPLES = Path(__file__).resolve().parent.parent / "rspark" / "samples"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
XSD = "http://www.w3.org/2001/XMLSchema#"
EX = "http://example.org/"


def parse(text: str) -> M.Mapping:
    return M.parse_mapping(text, file="m.yaml")


SIMPLE = """\
prefixes:
  ex: http://example.org/
timestamp: {field: t, format: epoch-ms}
mappings:
  obs:
    s: ex:obs/$(id)
    po:
      - [a, ex:Observation]
      - [ex:label, $(name), en~lang]
      - [ex:value, $(v)]
      - [ex:home, $(home)~iri]
"""


def test_samples_map_to_the_rdf_samples_elements():
    """The sample CSV and JSON Lines files with their mappings give exactly the quads of observations.trig."""
    expected = set(ox.parse(path=str(SAMPLES / "observations.trig")))
    for name, fmt in (("csv", "csv"), ("jsonl", "jsonl")):
        mp = M.load_mapping(str(SAMPLES / f"observations-{name}.yaml"))
        conv = M.convert_records((SAMPLES / f"observations.{name}").read_text(), fmt, mp, file="f", pred=PROV,
                                 element_base="urn:e#")
        assert conv.errors == [] and conv.messages == 120
        assert set(ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS)) == expected, name


def test_a_json_record_gives_exact_nquads():
    mp = parse(SIMPLE)
    rec = {"id": "a b/é%?", "name": 'say "hi"\n\\', "v": 2.5, "t": 1772370000123, "home": "http://x.org/h"}
    assert M.map_record(mp, rec, "urn:e#1", PROV) == [
        f"<{EX}obs/a%20b%2Fé%25%3F> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Observation> <urn:e#1> .\n",
        f'<{EX}obs/a%20b%2Fé%25%3F> <{EX}label> "say \\"hi\\"\\n\\\\"@en <urn:e#1> .\n',
        f'<{EX}obs/a%20b%2Fé%25%3F> <{EX}value> "2.5"^^<{XSD}double> <urn:e#1> .\n',
        f"<{EX}obs/a%20b%2Fé%25%3F> <{EX}home> <http://x.org/h> <urn:e#1> .\n",
        f'<urn:e#1> <{PROV}> "2026-03-01T13:00:00.123Z"^^<{XSD}dateTime> .\n',
    ]


def test_a_missing_or_null_field_skips_its_triple_only():
    mp = parse(SIMPLE)
    lines = M.map_record(mp, {"id": 1, "v": None, "t": 0, "home": "http://x.org/h"}, "urn:e#1", PROV)
    assert lines == [
        f"<{EX}obs/1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Observation> <urn:e#1> .\n",
        f"<{EX}obs/1> <{EX}home> <http://x.org/h> <urn:e#1> .\n",
        f'<urn:e#1> <{PROV}> "1970-01-01T00:00:00Z"^^<{XSD}dateTime> .\n',
    ]


def test_an_empty_csv_cell_is_a_missing_value_and_csv_values_are_strings():
    mp = parse("prefixes: {ex: 'http://example.org/'}\ntimestamp: t\nmappings:\n  m:\n    s: ex:$(id)\n"
               "    po: [[ex:v, $(v)], [ex:w, $(w), xsd:integer]]\n")
    conv = M.convert_records("id,v,w,t\n1,,7,2026-03-01T13:00:00+01:00\n", "csv", mp, file="f.csv", pred=PROV,
                             element_base="urn:e#")
    assert conv.nquads.decode() == (
        f'<{EX}1> <{EX}w> "7"^^<{XSD}integer> <urn:e#1> .\n'
        f'<urn:e#1> <{PROV}> "2026-03-01T13:00:00+01:00"^^<{XSD}dateTime> .\n')


@pytest.mark.parametrize("fmt, value, expected", [
    ("epoch-s", "1772370000", "2026-03-01T13:00:00Z"),
    ("epoch-s", 1772370000.25, "2026-03-01T13:00:00.250Z"),
    ("epoch-ms", "-1", "1969-12-31T23:59:59.999Z"),
    ("datetime", "2026-03-01T13:00:00", "2026-03-01T13:00:00"),
])
def test_timestamp_formats(fmt, value, expected):
    mp = parse(f"timestamp: {{field: t, format: {fmt}}}\nmappings: {{m: {{s: 'urn:x', po: [['urn:p', '$(t)']]}}}}")
    assert M.map_record(mp, {"t": value}, "urn:e", PROV)[-1] == f'<urn:e> <{PROV}> "{expected}"^^<{XSD}dateTime> .\n'


def test_number_timestamps_are_integers():
    mp = parse("timestamp: {field: t, format: number}\nmappings: {m: {s: 'urn:x', po: [['urn:p', '$(t)']]}}")
    assert M.map_record(mp, {"t": 42}, "urn:e", PROV)[-1] == f'<urn:e> <{PROV}> "42"^^<{XSD}integer> .\n'


@pytest.mark.parametrize("fmt, value, reason", [
    ("epoch-s", None, "no timestamp (the field 't' is missing)"),
    ("epoch-s", "", "no timestamp (the field 't' is missing)"),
    ("epoch-s", "soon", "bad timestamp 't': 'soon' is no epoch-s timestamp (invalid)"),
    ("epoch-s", "1.0001", "bad timestamp 't': '1.0001' is no epoch-s timestamp (finer than a millisecond)"),
    ("epoch-ms", "1.5", "bad timestamp 't': '1.5' is no epoch-ms timestamp (not an integer)"),
    ("epoch-ms", "99999999999999999", "bad timestamp 't': '99999999999999999' is no epoch-ms timestamp (out of range)"),
    ("datetime", "2026-02-30T00:00:00Z", "bad timestamp 't': '2026-02-30T00:00:00Z' is no datetime timestamp "
                                         "(invalid)"),
    ("datetime", 5, "bad timestamp 't': 5 is no datetime timestamp (a number)"),
    ("number", True, "the timestamp 't' is a boolean (True), not a number timestamp"),
])
def test_a_bad_timestamp_rejects_the_record(fmt, value, reason):
    mp = parse(f"timestamp: {{field: t, format: {fmt}}}\nmappings: {{m: {{s: 'urn:x', po: [['urn:p', 'c']]}}}}")
    with pytest.raises(M.RecordError) as info:
        M.map_record(mp, {"t": value}, "urn:e", PROV)
    assert str(info.value) == reason


def test_rejected_records_are_named_and_the_others_flow():
    mp = parse("timestamp: {field: t, format: number}\nmappings: {m: {s: 'urn:x:$(id)', po: [['urn:p', '$(v)']]}}")
    text = ('{"id": 1, "v": 1, "t": 1}\n{"id": 2, "v": 2}\nnot json\n\n[1]\n{"id": 3, "v": {"a": 1}, "t": 3}\n'
            '{"id": 4, "v": 4, "t": 4}\n')
    conv = M.convert_records(text, "jsonl", mp, file="f.jsonl", pred=PROV, element_base="urn:e#")
    assert [str(e) for e in conv.errors] == [
        "f.jsonl:2: record 2: no timestamp (the field 't' is missing)",
        "f.jsonl:3: record 3: not JSON: Expecting value (column 1)",
        "f.jsonl:5: record 5: a record is a JSON object, not a list",
        "f.jsonl:6: record 6: the field 'v' is an object, not a value (the record path, `iterator`, reaches array "
        "items)",
    ]
    assert all(isinstance(e, DataError) for e in conv.errors)
    assert conv.nquads.decode() == (
        f'<urn:x:1> <urn:p> "1"^^<{XSD}integer> <urn:e#1> .\n<urn:e#1> <{PROV}> "1"^^<{XSD}integer> .\n'
        f'<urn:x:4> <urn:p> "4"^^<{XSD}integer> <urn:e#7> .\n<urn:e#7> <{PROV}> "4"^^<{XSD}integer> .\n')


def test_a_json_document_with_a_record_path():
    mp = parse("iterator: $.data.readings[*].r\ntimestamp: {field: t, format: number}\nelement: urn:o:$(id)\n"
               "mappings: {m: {s: 'urn:x:$(id)', po: [['urn:p', '$(v)']]}}")
    doc = json.dumps({"data": {"readings": [{"r": {"id": "a", "v": True, "t": 1}}, {"q": 1},
                                            {"r": {"id": "b", "v": "x", "t": 2}}]}})
    conv = M.convert_records(doc, "json", mp, file="d.json", pred=PROV, element_base="urn:e#")
    assert [str(e) for e in conv.errors] == ["d.json: record 2: item 2 of the record path $.data.readings[*].r has "
                                             "no 'r'"]
    assert conv.nquads.decode() == (
        f'<urn:x:a> <urn:p> "true"^^<{XSD}boolean> <urn:o:a> .\n<urn:o:a> <{PROV}> "1"^^<{XSD}integer> .\n'
        f'<urn:x:b> <urn:p> "x" <urn:o:b> .\n<urn:o:b> <{PROV}> "2"^^<{XSD}integer> .\n')


def test_csv_problems():
    mp = parse("csv: {delimiter: ';'}\ntimestamp: {field: t, format: number}\n"
               "mappings: {m: {s: 'urn:x:$(id)', po: [['urn:p', '$(v)']]}}")
    conv = M.convert_records('id;v;t\n1;"a;b";1\n2;x\n3;"open;3\n4;y;4\n', "csv", mp, file="f.csv", pred=PROV,
                             element_base="urn:e#")
    assert [str(e) for e in conv.errors] == [
        "f.csv:3: record 2: 2 fields where the header has 3",
        "f.csv:4: record 3: an unclosed quote (a CSV record is one line: a quoted field cannot hold a line break)",
    ]
    assert conv.nquads.decode().count("\n") == 4
    with pytest.raises(InputError, match=r"^f\.csv: the mapping m\.yaml reads the column 'v' \(mappings\.m\.po\), "
                                         r"which the CSV header does not have \(its columns: id, t\)$"):
        list(M.records("id;t\n", "csv", mp, file="f.csv"))


def test_a_whole_reference_iri_must_be_absolute():
    with pytest.raises(M.RecordError, match=r"^the field 'home' is no absolute IRI: 'x y'$"):
        M.map_record(parse(SIMPLE), {"id": 1, "t": 1, "home": "x y"}, "urn:e", PROV)


@pytest.mark.parametrize("text, message", [
    ("", "m.yaml: the mapping file is empty"),
    ("- 1", "m.yaml:1: expected a mapping of the keys prefixes, mappings, element, timestamp, iterator, csv, not a "
            "list"),
    ("mappings: {}\ntimestamp: t\nfoo: 1", "m.yaml:3: foo: unknown key (expected one of prefixes, mappings, element, "
                                           "timestamp, iterator, csv)"),
    ("timestamp: t", "m.yaml:1: the key 'mappings' is missing"),
    ("mappings: {}\ntimestamp: t", "m.yaml:1: mappings: no triples map"),
    ("timestamp: t\nsources: [a.csv]\nmappings: {}",
     "m.yaml:2: sources: not supported: sources (the records come from the file or the push the mapping is given "
     "with; `iterator` is their path)"),
    ("timestamp: t\nmappings:\n  m:\n    s: ex:$(id)\n    po: [[a, b]]",
     "m.yaml:4: mappings.m.s: the prefix 'ex' is not declared (prefixes)"),
    ("timestamp: t\nmappings:\n  m:\n    s: urn:x:$(id\n    po: [[a, b]]",
     "m.yaml:4: mappings.m.s: a reference $( without its closing ) in 'urn:x:$(id'"),
    ("timestamp: t\nmappings:\n  m:\n    s: urn:x\n    graphs: urn:g\n    po: [[a, b]]",
     "m.yaml:5: mappings.m.graphs: not supported: graphs (every triple of a record is in its element's named graph "
     "(`element`))"),
    ("timestamp: t\nmappings:\n  m:\n    s: urn:x\n    po:\n      - [urn:p, $(v), xx~lang, 1]",
     "m.yaml:6: mappings.m.po[0]: a pair is [predicate, object] or [predicate, object, datatype or LANG~lang], not 4 "
     "items"),
    ("timestamp: t\nmappings:\n  m:\n    s: urn:x\n    po:\n      - [urn:p, $(v), 'no tag~lang']",
     "m.yaml:6: mappings.m.po[0][2]: not a language tag: 'no tag'"),
    ("timestamp: t\nmappings:\n  m:\n    s: urn:x\n    po:\n      - [urn:$(p), $(v)]",
     "m.yaml:6: mappings.m.po[0][0]: not supported: a predicate template (a predicate is a constant IRI)"),
    ("timestamp: t\nmappings:\n  m:\n    s: 'http://a b/$(x)'\n    po: [[urn:p, v]]",
     "m.yaml:4: mappings.m.s: not a valid IRI: 'http://a b/x' (Invalid IRI code point ' ')"),
    ("timestamp: {field: t, format: iso}\nmappings: {}",
     "m.yaml:1: timestamp.format: unknown timestamp format 'iso' (expected datetime (xsd:dateTime), epoch-s, "
     "epoch-ms, number)"),
    ("timestamp: {field: 'a[*]'}\nmappings: {}",
     "m.yaml:1: timestamp.field: a field is a name or a dotted path of names, not 'a[*]' (no [*], no $)"),
    ("iterator: $.a[*].b[*]\ntimestamp: t\nmappings: {}",
     "m.yaml:1: iterator: a record path is $ then dotted keys with at most one [*] (such as $.readings[*]), not "
     "'$.a[*].b[*]'"),
    ("timestamp: t\ntimestamp: u\nmappings: {}", "m.yaml:2: the key 'timestamp' is given twice"),
    ("timestamp: [t", "m.yaml:1: not YAML: expected ',' or ']', but got '<stream end>'"),
    ("csv: {delimiter: '::'}\ntimestamp: t\nmappings: {}",
     "m.yaml:1: csv.delimiter: a delimiter is one character other than a quote or a line break, not '::'"),
])
def test_mapping_errors_name_file_line_and_key(text, message):
    with pytest.raises(M.MappingError) as info:
        parse(text)
    assert str(info.value) == message


def test_record_format():
    assert M.record_format(None, "a/b.CSV") == "csv" and M.record_format("NDJSON") == "jsonl"
    with pytest.raises(InputError, match=r"^a mapped stream's format is csv, json or jsonl, not 'xml'$"):
        M.record_format("xml")


@pytest.mark.parametrize("extra, message", [
    (["--mapping", "{bad}"], "rspark: error: --mapping {bad}:4: mappings: expected a mapping of triples maps by name, "
                             "not a list\n"),
    (["--mapping", "{good}", "--stream-format", "trig"],
     "rspark: error: --stream-format trig: with --mapping, the records' format: csv, json or jsonl\n"),
    (["--mapping", "{missing}"], "rspark: error: --mapping: no such file: {missing}\n"),
])
def test_cli_replay_mapping_errors_before_spark(tmp_path, capsys, monkeypatch, extra, message):
    """A bad --mapping is a usage error (exit 2) naming the file, the line and the key, before Spark starts."""
    from rspark import cli

    monkeypatch.setattr("rspark.engine.engine.Engine.__init__", None, raising=False)  # Spark must not start
    bad = tmp_path / "bad.yaml"
    bad.write_text("prefixes: {}\ntimestamp: t\nmappings:\n  - a\n")
    names = {"bad": str(bad), "good": str(SAMPLES / "observations-csv.yaml"), "missing": str(tmp_path / "no.yaml")}
    args = [str(SAMPLES / "sensor_average.rq"), "--stream", f"{EX}obs={SAMPLES / 'observations.csv'}"]
    code = cli.main(["replay", *args, *[a.format(**names) for a in extra]])
    assert code == 2
    assert capsys.readouterr().err == message.format(**names)


def test_cli_run_takes_a_mapping_for_directory_and_message_sources(tmp_path, capsys):
    from rspark import cli

    query = str(SAMPLES / "sensor_average.rq")
    mapping = str(SAMPLES / "observations-csv.yaml")
    assert cli.main(["run", query, "--source", f"{EX}obs=tcp://127.0.0.1:1", "--mapping",
                     f"{EX}obs={mapping}"]) == 2
    assert capsys.readouterr().err == (f"rspark: error: --mapping {EX}obs: a mapping is taken by directory, "
                                       "kafka://, mqtt://, sse:// and ws:// sources, not by tcp://127.0.0.1:1\n")
    # a payload format that does not go with the stream: before Spark starts
    assert cli.main(["run", query, "--source", f"{EX}obs=mqtt://127.0.0.1:1/t", "--mapping", f"{EX}obs={mapping}",
                     "--payload-format", "trig"]) == 2
    assert capsys.readouterr().err == ("rspark: error: source 'mqtt://127.0.0.1:1/t': the stream maps records: its "
                                       "messages are csv, json or jsonl, not 'trig'\n")
    assert cli.main(["run", query, "--source", f"{EX}obs=ws://127.0.0.1:1/t", "--payload-format", "csv"]) == 2
    assert capsys.readouterr().err == ("rspark: error: source 'ws://127.0.0.1:1/t': csv messages need a mapping on "
                                       "the stream (--mapping IRI=FILE, live_stream(iri, mapping=FILE), a "
                                       "declaration's \"mapping\")\n")
    assert cli.main(["run", query, "--source", f"{EX}obs=kafka://127.0.0.1:1/t?format=json"]) == 2
    assert capsys.readouterr().err == ("rspark: error: source 'kafka://127.0.0.1:1/t?format=json': json messages "
                                       "need a mapping on the stream (--mapping IRI=FILE, live_stream(iri, "
                                       "mapping=FILE), a declaration's \"mapping\")\n")
    assert cli.main(["run", query, "--source", f"{EX}obs=kafka://127.0.0.1:1/t", "--payload-format", "json"]) == 2
    assert capsys.readouterr().err == ("rspark: error: --payload-format is for mqtt://, sse:// and ws:// sources (a "
                                       "Kafka address says format=...)\n")
    assert cli.main(["run", query, "--source", f"{EX}obs={tmp_path}", "--mapping", f"{EX}other={mapping}"]) == 2
    assert capsys.readouterr().err == f"rspark: error: --mapping {EX}other: no --source declares that stream\n"


# --------------------------------------------------------------------------------------------------- fuzzing

_KEYS = ["prefixes", "mappings", "element", "timestamp", "iterator", "csv", "s", "po", "p", "o", "field", "format",
         "value", "datatype", "language", "type", "delimiter", "columns", "ex", "m", "sources", "a"]
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                     st.sampled_from(["ex:$(id)", "$(v)", "urn:x", "http://e.org/", "epoch-s", "xsd:integer",
                                      "en~lang", "$.r[*]", "t", "a", "$(", "ex:", "iri", "~iri", ""]),
                     st.text(string.printable, max_size=8))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)),
                       max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=6), raw=st.text(max_size=40))
def test_fuzz_the_mapping_parser(doc, raw):
    """Any document, or any text, is a Mapping or a MappingError naming the file: never another exception."""
    for text in (json.dumps(doc), raw):
        try:
            mp = M.parse_mapping(text, file="m.yaml")
        except M.MappingError as exc:
            assert str(exc).startswith("m.yaml")
        else:
            assert mp.maps


_FIELD = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                   st.text(max_size=10), st.lists(st.integers(), max_size=2), st.just({"k": 1}))


@settings(max_examples=300, deadline=None)
@given(record=st.fixed_dictionaries({}, optional={"id": _FIELD, "name": _FIELD, "v": _FIELD, "t": _FIELD,
                                                  "home": _FIELD}))
def test_fuzz_records(record):
    """Any JSON record gives N-Quads that pyoxigraph reads back (one element, its timestamp in the default graph),
    or a RecordError."""
    mp = parse(SIMPLE)
    try:
        lines = M.map_record(mp, record, "urn:e#1", PROV)
    except M.RecordError as exc:
        assert str(exc)
        return
    quads = list(ox.parse("".join(lines).encode("utf-8"), format=ox.RdfFormat.N_QUADS))
    assert len(quads) == len(lines)
    assert [q for q in quads if isinstance(q.graph_name, ox.DefaultGraph)] == [
        ox.Quad(ox.NamedNode("urn:e#1"), ox.NamedNode(PROV), quads[-1].object)]


_LINE = st.one_of(st.text(max_size=30), st.sampled_from(['{"id": 1, "t": 2, "v": 3}', '{"id": "a b", "t": "x"}',
                                                        "1,2,3", '1,"a,b",3', '"', "", "[]", "null"]))


@settings(max_examples=300, deadline=None)
@example(lines=["\r0"], fmt="csv")  # a carriage return inside the header: an InputError, not csv.Error
@given(lines=st.lists(_LINE, max_size=5), fmt=st.sampled_from(["csv", "jsonl", "json"]))
def test_fuzz_record_texts(lines, fmt):
    """Any text of records converts to N-Quads that pyoxigraph reads (two lines or more an element) and a
    DataError per rejected record naming the file; a CSV header without the mapping's columns and a JSON document
    that does not parse are the only errors raised."""
    mp = parse("timestamp: {field: t, format: number}\nmappings: {m: {s: 'urn:x:$(id)', po: [['urn:p', '$(v)']]}}")
    text = "\n".join(lines)
    try:
        conv = M.convert_records(text, fmt, mp, file="f", pred=PROV, element_base="urn:e#")
    except (InputError, DataError) as exc:
        assert str(exc).startswith("f")
        return
    quads = list(ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS))
    assert len(quads) == conv.nquads.count(b"\n") and len(quads) >= 2 * len(conv.origins)
    assert all(str(e).startswith("f") and isinstance(e, DataError) for e in conv.errors)


# ------------------------------------------------------------------------------------------- Spark: replay, live

QUERY = (SAMPLES / "sensor_average.rq").read_text()


def _records(records) -> list:
    return [(r.query, r.time, [sorted((k, v.n3()) for k, v in row.items()) for row in r.rows]) for r in records]


def _content(eng) -> list:
    """The loaded stream's elements and triples (file positions left out), sorted."""
    rows = eng._loaded[-1].quads.select("s", "p", "o", "element", "ts").collect()
    return sorted(tuple(r) for r in rows)


@pytest.fixture(scope="module")
def sample(spark) -> tuple[list, list]:
    """The README sample's RDF stream (observations.trig): its loaded content and its records."""
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        eng.load(SAMPLES / "sensors.ttl", graph=EX + "sensors")
        eng.add_stream(EX + "obs", SAMPLES / "observations.trig")
        return _content(eng), _records(eng.replay(QUERY))


def test_mapped_replay_of_csv_and_jsonl_equals_the_rdf_sample(spark, sample, tmp_path):
    """The sample's CSV (one bad record added: rejected, named by file, line and record), JSON Lines and JSON
    (records under a record path) feeds, mapped on the executors, load exactly the RDF sample's elements; the CSV's
    replay gives exactly its records."""
    from rspark.engine.engine import Engine

    lines = (SAMPLES / "observations.csv").read_text().splitlines(keepends=True)
    csv_path = tmp_path / "obs.csv"
    csv_path.write_text("".join(lines[:3] + ["99,1,50,half past one\n"] + lines[3:]))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "obs", SAMPLES / "observations.jsonl", mapping=SAMPLES / "observations-jsonl.yaml")
        assert eng.errors == []
        assert _content(eng) == sample[0]
    # one JSON document, its records under a record path (one of them no object)
    readings = [json.loads(line) for line in (SAMPLES / "observations.jsonl").read_text().splitlines()]
    doc = tmp_path / "obs.json"
    doc.write_text(json.dumps({"feed": {"items": readings[:5] + [7] + readings[5:]}}))
    mapping = tmp_path / "doc.yaml"
    mapping.write_text("iterator: $.feed.items[*]\n" + (SAMPLES / "observations-jsonl.yaml").read_text())
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "obs", doc, mapping=mapping)
        assert [str(e) for e in eng.errors] == [f"{doc}: record 6: a record is a JSON object, not int 7"]
        assert _content(eng) == sample[0]
    with Engine(spark=spark) as eng:
        eng.load(SAMPLES / "sensors.ttl", graph=EX + "sensors")
        eng.add_stream(EX + "obs", csv_path, mapping=SAMPLES / "observations-csv.yaml")
        assert [str(e) for e in eng.errors] == [
            f"{csv_path}:4: record 3: bad timestamp 'time': 'half past one' is no epoch-s timestamp (invalid)"]
        assert _content(eng) == sample[0]
        assert _records(eng.replay(QUERY)) == sample[1]


def test_live_csv_records_pushed_and_from_a_watched_directory(spark, sample, tmp_path):
    """A live stream with a mapping takes CSV pushes and the .csv files that appear in its watched directory (a
    rejected record of each listed with its file, line and record; the others evaluated): its records equal the RDF
    sample's. A push of records to a stream without a mapping is refused."""
    from rspark.engine.engine import Engine

    lines = (SAMPLES / "observations.csv").read_text().splitlines(keepends=True)
    inbox = tmp_path / "in"
    inbox.mkdir()
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.load(SAMPLES / "sensors.ttl", graph=EX + "sensors")
        eng.watch(EX + "obs", inbox, mapping=SAMPLES / "observations-csv.yaml")
        handle = eng.register(QUERY, name="avg")
        eng.push(EX + "obs", "".join([lines[0], "x,1,2,\n"] + lines[1:61]), format="csv")
        assert eng.live.wait_idle(timeout=60)
        staged = tmp_path / "second.csv"
        staged.write_text("".join(lines[:1] + lines[61:] + ["y,1,2\n"]))
        os.replace(staged, inbox / "second.csv")
        assert eng.live.wait_idle(timeout=60)
        eng.live.close(flush=True)
        assert _records(handle.drain()) == sample[1]
        assert [str(e) for e in eng.live.errors] == [
            "pushed data:2: record 1: no timestamp (the field 'time' is missing)",
            f"{inbox / 'second.csv'}:62: record 61: 3 fields where the header has 4"]
        with pytest.raises(InputError, match=r"^push to <http://example\.org/other>: csv records need a mapping"):
            eng.push(EX + "other", "a,b\n", format="csv")


@pytest.fixture(scope="module")
def mosquitto(tmp_path_factory):
    from tests.test_mqtt import Mosquitto

    b = Mosquitto(tmp_path_factory.mktemp("mosquitto"))
    b.start()
    yield b
    b.stop()


def test_live_records_from_mqtt_sse_and_websocket_messages(spark, sample, tmp_path, mosquitto):
    """One mapped stream fed by three message sources in turn: the sample's first 40 records as CSV MQTT messages
    (10 records and the header each), the next 40 as JSON Server-Sent Events (one record each), the last 40 as JSON
    Lines WebSocket messages (10 a message). Its records equal the RDF sample's. A record rejected inside a message
    is warned of and counted and its message's other records flow; a message that gives no element (no record
    mapped, not JSON, not UTF-8) is quarantined with the reason, and the messages after it flow."""
    from rspark.engine.engine import Engine
    from tests.test_mqtt import publish
    from tests.test_sse import Feed
    from tests.test_websocket import Server

    lines = (SAMPLES / "observations.csv").read_text().splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    assert len(rows) == 120

    def record(line: str) -> dict:
        i, s, v, t = line.strip().split(",")
        return {"id": int(i), "sensor": int(s), "value": int(v), "time": int(t)}

    mqtt = [header + "".join(rows[k:k + 10]) + ("y,1,2,\n" if k == 0 else "") for k in range(0, 40, 10)]
    mqtt.insert(2, header + "x,1,2,\n")  # its one record has no timestamp: nothing mapped
    feed = Feed()
    feed.events = [(str(k), json.dumps(record(rows[k]))) for k in range(40, 80)]
    feed.events.insert(5, ("oops", "{oops"))
    ws = ["".join(json.dumps(record(r)) + "\n" for r in rows[k:k + 10]) for k in range(80, 120, 10)]
    ws.insert(1, b"\xff\xfe{}")
    sse_server = feed.serve()
    ws_server = Server(ws)
    iri, mqtt_url = EX + "obs", mosquitto.url("readings/csv")
    sse_url = f"sse://127.0.0.1:{sse_server.server_address[1]}/readings"
    ws_url = f"ws://127.0.0.1:{ws_server.port}/readings"
    try:
        with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
            eng.load(SAMPLES / "sensors.ttl", graph=EX + "sensors")
            eng.live_stream(iri, mapping=SAMPLES / "observations-csv.yaml")
            handle = eng.register(QUERY, name="avg")

            def wait(check, what: str) -> dict:
                deadline = time.monotonic() + 60
                while True:
                    status = eng.live_status()["streams"][iri]
                    if check(status):
                        return status
                    assert time.monotonic() < deadline, (what, status)
                    time.sleep(0.05)

            eng.source(iri, mqtt_url, payload_format="csv")
            wait(lambda s: s["sources"] and s["sources"][0]["connected"], "the MQTT connection")
            time.sleep(0.3)  # (its subscription taken by the broker)
            publish(mosquitto, [("readings/csv", m) for m in mqtt])
            wait(lambda s: s["elements"] == 40 and s["quarantined"] == 1, "the MQTT messages")
            eng.source(iri, sse_url)
            wait(lambda s: s["elements"] == 80 and s["quarantined"] == 2, "the events")
            eng.source(iri, ws_url, payload_format="jsonl")
            status = wait(lambda s: s["elements"] == 120 and s["quarantined"] == 3, "the WebSocket messages")
            assert eng.live.wait_idle(timeout=60)
            eng.live.close(flush=True)
            assert _records(handle.drain()) == sample[1]
            errors = [str(e) for e in eng.live.errors]
            reasons = "".join(p.read_text() for p in sorted((tmp_path / "ckpt" / "quarantine").rglob("*.errors.txt")))
    finally:
        sse_server.shutdown()
        ws_server.shutdown()
    assert status["rejected"] == 2
    assert [s["kind"] for s in status["sources"]] == ["mqtt", "sse", "websocket"]
    where = f"{mqtt_url} message "
    assert errors[0].startswith(where) and errors[0].endswith(":12: record 11: no timestamp (the field 'time' is "
                                                              "missing)")
    assert errors[1].startswith(where) and errors[1].endswith(":2: record 1: no timestamp (the field 'time' is "
                                                              "missing)")
    http = sse_url.replace("sse://", "http://")
    assert errors[2:] == [f"{http} event oops:1:2: not JSON: Expecting property name enclosed in double quotes",
                          f"{ws_url}: message 2: a binary message of 4 bytes that is not UTF-8 text (byte 0: "
                          "b'\\xff')"]
    assert reasons.splitlines() == errors[1:]


def test_a_mapped_replay_whose_parts_the_driver_does_not_see_is_an_error(spark, tmp_path, monkeypatch):
    """On a cluster the executors write the mapped N-Quads on their own disks unless spark.rspark.mapped.dir names a
    directory they share with the driver: parts the driver does not find are an error naming the setting, never a
    partial stream. The setting is taken (the parts go there) and checked."""
    from rspark.engine.engine import Engine
    from rspark.errors import RsparkError
    from rspark.spark.loading import loader

    shared = tmp_path / "shared"
    shared.mkdir()
    made = []
    real_mkdtemp = loader.tempfile.mkdtemp
    monkeypatch.setattr(loader.tempfile, "mkdtemp", lambda **kw: made.append(kw["dir"]) or real_mkdtemp(**kw))
    spark.conf.set(loader.MAPPED_DIR_CONF, str(shared))
    try:
        with Engine(spark=spark) as eng:
            eng.add_stream(EX + "obs", SAMPLES / "observations.csv", mapping=SAMPLES / "observations-csv.yaml")
            assert eng._loaded[-1].n_elements == 120 and made == [str(shared)]
        real_glob = loader.glob.glob
        monkeypatch.setattr(loader.glob, "glob", lambda pattern: real_glob(pattern)[1:])  # one part not seen
        with Engine(spark=spark) as eng, pytest.raises(RsparkError) as info:
            eng.add_stream(EX + "obs", SAMPLES / "observations.csv", mapping=SAMPLES / "observations-csv.yaml")
        assert str(info.value).startswith(f"{SAMPLES / 'observations.csv'}: the mapped records were written by "
                                          f"Spark's executors under {shared}/rspark-mapped-")
        assert str(info.value).endswith("on the driver's file system: on a cluster, give a directory the driver and "
                                        "every executor share: --conf spark.rspark.mapped.dir=DIR")
        spark.conf.set(loader.MAPPED_DIR_CONF, str(tmp_path / "none"))
        with Engine(spark=spark) as eng, pytest.raises(InputError, match=r"spark\.rspark\.mapped\.dir=.*: not a "):
            eng.add_stream(EX + "obs", SAMPLES / "observations.csv", mapping=SAMPLES / "observations-csv.yaml")
    finally:
        spark.conf.unset(loader.MAPPED_DIR_CONF)
    assert list(shared.iterdir()) == []  # (the parts and the joined file removed)
