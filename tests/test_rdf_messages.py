"""RDF Message Logs, NDJSON-LD and JSON-LD streams (rspark.spark.loading.messages): the cases of the W3C RSP CG's
draft "RDF Messages" (w3c-cg/rsp, spec/messages.bs, sections "Message delimiters", "Repeated PREFIX and BASE
directives" and "JSON-LD") and of its test document "RDF Messages Tests" (spec/messages-tests.bs), written here as
rspark's own tests; the conversion into stream elements; pushes; a fuzz test of the splitter. The Spark tests at
the end replay a message log (and read rspark's own --format messages output back), a JSON-LD stream, and push a
message log live."""

from __future__ import annotations

import io
import json
import os

import pyoxigraph as ox
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rspark.algebra.ops import QueryForm
from rspark.engine.live.sources import recorded_elements
from rspark.engine.live.stamp import stamp_arrivals
from rspark.engine.writers import ReplayWriter
from rspark.errors import DataError
from rspark.model.terms import IRI
from rspark.service.elements import parse_push
from rspark.spark.loading import messages as M
from rspark.spark.streaming.record import Record

EX = "http://example.org/"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
V = 'VERSION "1.2-messages"\n'
XI = "http://www.w3.org/2001/XMLSchema#integer"


def datasets(text: str, fmt: str) -> list:
    """Each message's quads as sorted N-Quads lines (blank nodes as ``_:``), or the problem's text."""
    out = []
    for _, quads, problem in M.parse_messages(text, fmt):
        if problem is not None:
            out.append(problem)
        else:
            out.append(sorted(_line(q) for q in quads))
    return out


def _line(q: ox.Quad) -> str:
    terms = [q.subject, q.predicate, q.object] + ([] if isinstance(q.graph_name, ox.DefaultGraph) else [q.graph_name])
    return " ".join("_:" if isinstance(t, ox.BlankNode) else str(t) for t in terms) + " ."


def t(s: str, o: str, g: str | None = None) -> str:
    return f"<{EX}{s}> <{EX}p> <{EX}{o}>" + (f" <{EX}{g}>" if g else "") + " ."


T1, T2 = t("s1", "o1"), t("s2", "o2")


# --------------------------------------------------------------------- the draft's parsing tests (messages-tests)


@pytest.mark.parametrize("fmt", ["ntriples-messages", "turtle-messages"])
def test_single_message_without_delimiter(fmt):
    assert datasets(V + T1 + "\n", fmt) == [[T1]]


@pytest.mark.parametrize("fmt", ["ntriples-messages", "nquads-messages", "turtle-messages", "trig-messages"])
def test_two_messages_with_MESSAGE(fmt):
    assert datasets(V + T1 + "\nMESSAGE\n" + T2 + "\n", fmt) == [[T1], [T2]]


def test_two_messages_with_at_message():
    text = '@version "1.2-messages" .\n@prefix ex: <http://example.org/> .\n\nex:s1 ex:p ex:o1 .\n@message .\n' \
           'ex:s2 ex:p ex:o2 .\n'
    assert datasets(text, "turtle-messages") == [[T1], [T2]]


@pytest.mark.parametrize("fmt", ["ntriples-messages", "trig-messages"])
def test_empty_first_message(fmt):
    assert datasets(V + "MESSAGE\n" + T1 + "\n", fmt) == [[], [T1]]


@pytest.mark.parametrize("fmt", ["ntriples-messages", "trig-messages"])
def test_empty_message_between_non_empty_messages(fmt):
    assert datasets(V + T1 + "\nMESSAGE\nMESSAGE\n" + T2 + "\n", fmt) == [[T1], [], [T2]]


@pytest.mark.parametrize("fmt", ["ntriples-messages", "trig-messages"])
def test_final_delimiter_does_not_create_an_extra_empty_message(fmt):
    assert datasets(V + T1 + "\nMESSAGE\n", fmt) == [[T1]]
    assert datasets(V + T1 + "\nMESSAGE # the end\n\n", fmt) == [[T1]]


def test_n_quads_messages_preserve_graph_names():
    q1, q2 = t("s1", "o1", "g1"), t("s2", "o2", "g2")
    assert datasets(V + q1 + "\nMESSAGE\n" + q2 + "\n", "nquads-messages") == [[q1], [q2]]


def test_message_with_default_graph_and_named_graph_quads():
    text = V + "PREFIX ex: <http://example.org/>\n\nex:s1 ex:p ex:o1 .\nex:g {\n  ex:s2 ex:p ex:o2 .\n" \
               "  ex:s3 ex:p ex:o3 .\n}\nMESSAGE\nex:s4 ex:p ex:o4 .\n"
    assert datasets(text, "trig-messages") == [sorted([T1, t("s2", "o2", "g"), t("s3", "o3", "g")]),
                                               [t("s4", "o4")]]


def test_blank_node_labels_are_scoped_per_message():
    """One continuous text: the same label in two messages is two nodes in the converted stream."""
    text = V + f"_:b0 <{EX}p> <{EX}o1> .\nMESSAGE\n_:b0 <{EX}p> <{EX}o2> .\n"
    for fmt in ("ntriples-messages", "turtle-messages"):
        conv = M.convert(text, fmt, file="f", pred=PROV, element_base="urn:m:")
        quads = list(ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS))
        assert [(q.predicate.value, q.object.value, q.graph_name.value) for q in quads] == [
            (EX + "p", EX + "o1", "urn:m:1"), (EX + "p", EX + "o2", "urn:m:2")]
        assert all(isinstance(q.subject, ox.BlankNode) for q in quads)
        assert quads[0].subject != quads[1].subject
    # within one message, one label is one node
    conv = M.convert(V + f"_:b <{EX}p> _:b .\n", "ntriples-messages", file="f", pred=PROV, element_base="urn:m:")
    (q,) = ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS)
    assert q.subject == q.object


def test_repeated_prefixes_across_messages():
    text = V + "PREFIX ex: <http://example.org/one/>\nex:s ex:p ex:o .\nMESSAGE\n" \
               "PREFIX ex: <http://example.org/two/>\nex:s ex:p ex:o .\n"
    one, two = EX + "one/", EX + "two/"
    assert datasets(text, "turtle-messages") == [[f"<{one}s> <{one}p> <{one}o> ."], [f"<{two}s> <{two}p> <{two}o> ."]]
    # a prefix declared in an earlier message holds in the later ones, until it is declared again
    text = V + "PREFIX ex: <http://example.org/one/>\nMESSAGE\nex:s ex:p ex:o .\n"
    assert datasets(text, "turtle-messages") == [[], [f"<{one}s> <{one}p> <{one}o> ."]]
    # a malformed directive is the problem of its own message only
    text = V + "PREFIX ex: <http://example.org/one/>\nPREFIX ex <bad>\nMESSAGE\nex:s ex:p ex:o .\n"
    got = datasets(text, "turtle-messages")
    assert got[0][1:] == (3, 8) and got[1:] == [[f"<{one}s> <{one}p> <{one}o> ."]]


def test_message_boundary_after_a_graph_block():
    text = V + f"<{EX}g> {{\n  <{EX}a> <{EX}b> <{EX}c> .\n}}\nMESSAGE\n<{EX}d> <{EX}e> <{EX}f> .\n"
    assert datasets(text, "trig-messages") == [[f"<{EX}a> <{EX}b> <{EX}c> <{EX}g> ."], [f"<{EX}d> <{EX}e> <{EX}f> ."]]


def test_a_delimiter_in_a_string_an_iri_or_a_comment_is_no_delimiter():
    text = V + f'<{EX}s> <{EX}p> "MESSAGE" .\n<{EX}s> <{EX}p> """a\nMESSAGE\nb""" . # MESSAGE\n' \
               f"<{EX}MESSAGE> <{EX}p> <{EX}o> .\n"
    assert [len(d) for d in datasets(text, "turtle-messages")] == [3]


# ------------------------------------------------------------------------------------------ the draft's errors


def test_a_delimiter_without_message_support_is_a_parse_error():
    """Without a "-messages" version label the text is no message log: read as TriG, whose parser rejects it."""
    text = f"<{EX}s> <{EX}p> <{EX}o> .\nMESSAGE\n"
    assert M.message_log_format(text, "trig") is None
    assert M.message_log_format('VERSION "1.2"\n' + text, "trig") is None
    with pytest.raises(SyntaxError):
        list(ox.parse(text.encode(), format=ox.RdfFormat.TRIG))


def test_at_message_without_its_dot_is_an_error_and_the_rest_flows():
    text = V + f"<{EX}s> <{EX}p> <{EX}o> .\n@message <{EX}invalid>\nMESSAGE\n<{EX}s2> <{EX}p> <{EX}o2> .\n"
    conv = M.convert(text, "turtle-messages", file="log.ttl", pred=PROV, element_base="urn:m:")
    assert [str(e) for e in conv.errors] == [
        "log.ttl:3:1: message 2: @message without its '.' (the delimiter is '@message .')"]
    assert [o[1:] for o in conv.origins] == [(2, 1), (5, 3)]


def test_a_delimiter_inside_an_open_graph_block_is_an_error_and_the_rest_flows():
    text = V + f"<{EX}g> {{\n  <{EX}a> <{EX}b> <{EX}c> .\nMESSAGE\n  <{EX}d> <{EX}e> <{EX}f> .\n}}\n" \
               f"MESSAGE\n<{EX}g2> {{ <{EX}a> <{EX}b> <{EX}c> . }}\n<{EX}g2> <{PROV}> 5 .\n"
    conv = M.convert(text, "trig-messages", file="log.trig", pred=PROV, element_base="urn:m:")
    assert [str(e) for e in conv.errors] == ["log.trig:4:1: message 1: a message delimiter inside a graph block"]
    assert conv.messages == 2 and [o[1:] for o in conv.origins] == [(8, 2)]


def test_a_message_that_does_not_parse_is_named_by_file_line_column_and_number():
    text = V + "PREFIX : <http://example.org/>\n:s :p :o .\nMESSAGE\n:s :p .\nMESSAGE\n:s :p :o3 .\n"
    conv = M.convert(text, "turtle-messages", file="log.ttl", pred=PROV, element_base="urn:m:")
    assert [(e.line, e.column, e.reason) for e in conv.errors] == [
        (5, 7, "message 2: . is not a valid RDF object")]
    assert [o[1:] for o in conv.origins] == [(3, 1), (7, 3)]
    text = V + f"<{EX}s> <{EX}p> <{EX}o> .\nMESSAGE\n<{EX}s> <{EX}p> \"open .\n"
    conv = M.convert(text, "ntriples-messages", file="log.nt", pred=PROV, element_base="urn:m:")
    assert [(e.line, e.column) for e in conv.errors] == [(4, 47)]  # its opening quote
    assert conv.errors[0].reason.startswith("message 2: unterminated string")


# ----------------------------------------------------------------------- messages as stream elements


def nquads(conv: M.Converted) -> list[str]:
    return sorted(conv.nquads.decode().splitlines())


def test_a_message_of_triples_is_one_element_named_after_the_file_and_its_number():
    text = V + f"<{EX}o1> <{EX}v> 1 ; <{PROV}> 10 .\nMESSAGE\nMESSAGE\n<{EX}o2> <{EX}v> 2 ; <{PROV}> 11 .\n"
    conv = M.convert(text, "turtle-messages", file="f", pred=PROV, element_base="file:///s.ttl#message-")
    one, three = "<file:///s.ttl#message-1>", "<file:///s.ttl#message-3>"
    i = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    assert nquads(conv) == sorted([
        f'<{EX}o1> <{EX}v> "1"{i} {one} .', f'<{EX}o1> <{PROV}> "10"{i} {one} .', f'{one} <{PROV}> "10"{i} .',
        f'<{EX}o2> <{EX}v> "2"{i} {three} .', f'<{EX}o2> <{PROV}> "11"{i} {three} .', f'{three} <{PROV}> "11"{i} .'])
    assert (conv.messages, conv.errors) == (3, [])
    assert [o[1:] for o in conv.origins] == [(2, 1), (5, 3)]
    assert conv.origin(1) == (2, 1) and conv.origin(4) == (5, 3)
    # with an end predicate, a message's end triple ends its element's validity too
    end = "http://www.w3.org/ns/prov#invalidatedAtTime"
    conv = M.convert(V + f"<{EX}o1> <{EX}v> 1 ; <{PROV}> 10 ; <{end}> 12 .\n", "turtle-messages", file="f",
                     pred=PROV, element_base="urn:m:", end_pred=end)
    assert [line for line in nquads(conv) if line.startswith("<urn:m:")] == [
        f'<urn:m:1> <{PROV}> "10"{i} .', f'<urn:m:1> <{end}> "12"{i} .']


def test_a_message_with_one_named_graph_names_its_element_and_several_are_an_error():
    element = f"<{EX}g> {{ <{EX}s> <{EX}p> 1 . }}\n<{EX}g> <{PROV}> 5 .\n<{EX}g> <{EX}source> <{EX}lab> .\n"
    two = f"<{EX}a> {{ <{EX}s> <{EX}p> 1 . }}\n<{EX}b> {{ <{EX}s> <{EX}p> 2 . }}\n"
    conv = M.convert(V + element + "MESSAGE\n" + two, "trig-messages", file="f.trig", pred=PROV, element_base="urn:m:")
    i = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    assert nquads(conv) == sorted([f'<{EX}s> <{EX}p> "1"{i} <{EX}g> .', f'<{EX}g> <{PROV}> "5"{i} .',
                                   f"<{EX}g> <{EX}source> <{EX}lab> ."])
    assert [str(e) for e in conv.errors] == [
        "f.trig:6: message 2: 2 named graphs: a message is one stream element, one named graph (with its timestamp "
        "in the default graph) or triples"]


def test_a_message_without_a_timestamp_is_an_element_without_one_which_arrival_time_stamps():
    """The converter leaves the verdict to the loader (no timestamp: rejected, naming the message); a live stream
    declared with arrival time stamps it as any element pushed without a timestamp."""
    conv = M.convert_push(V + f'<{EX}s> <{EX}p> "1" .\n', "ntriples-messages", stream=EX + "s", pred=PROV)
    (quad,) = ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS)
    assert quad.graph_name.value.startswith("urn:rspark:message:") and quad.graph_name.value.endswith(":1")
    stamped = stamp_arrivals(conv.nquads.decode(), "nquads", PROV, 1_700_000_000.0)
    stamp = [q for q in ox.parse(stamped.encode(), format=ox.RdfFormat.N_QUADS) if q.predicate.value == PROV]
    assert [(q.subject, q.object.value) for q in stamp] == [(quad.graph_name, "2023-11-14T22:13:20.000Z")]


# ------------------------------------------------------------------------------------------------- NDJSON-LD

# The draft's NDJSON-LD cases use https://schema.org/ as the context, which rspark does not fetch (no remote
# contexts); these cases use an inline context of the same shape
CTX = {"@vocab": "https://schema.org/"}
CTX2 = {"@vocab": "https://example.org/other-vocab/"}


def ndjson(*objects) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def jsonld_datasets(text: str) -> list:
    conv = M.convert(text, "ndjsonld", file="f", pred=PROV, element_base="urn:m:")
    assert conv.errors == []
    by_message: dict = {}
    for q in ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS):
        by_message.setdefault(q.graph_name.value, []).append((q.predicate.value, str(q.object)))
    return [(name, sorted(v)) for name, v in by_message.items()]


def test_context_message_followed_by_data_message():
    text = ndjson({"@context": CTX}, {"@type": "Product", "name": "Hairdryer DRY 2000", "color": "red"})
    assert jsonld_datasets(text) == [("urn:m:1", [
        ("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "<https://schema.org/Product>"),
        ("https://schema.org/color", '"red"'), ("https://schema.org/name", '"Hairdryer DRY 2000"')])]


def test_an_empty_message_does_not_change_the_active_context():
    text = ndjson({"@context": CTX}, {}, {"@type": "Product", "color": "black"})
    conv = M.convert(text, "ndjsonld", file="f", pred=PROV, element_base="urn:m:")
    assert conv.messages == 2
    assert jsonld_datasets(text) == [("urn:m:2", [
        ("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "<https://schema.org/Product>"),
        ("https://schema.org/color", '"black"')])]


def test_a_context_switch_applies_to_the_following_data_messages():
    text = ndjson({"@context": CTX}, {"@type": "Product", "name": "Hairdryer"}, {"@context": CTX2},
                  {"@type": "OtherType", "name": "Piotr"})
    rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
    assert jsonld_datasets(text) == [
        ("urn:m:1", [(rdf_type, "<https://schema.org/Product>"), ("https://schema.org/name", '"Hairdryer"')]),
        ("urn:m:2", [(rdf_type, "<https://example.org/other-vocab/OtherType>"),
                     ("https://example.org/other-vocab/name", '"Piotr"')])]


def test_a_data_message_with_a_local_context_is_wrapped_with_the_active_one_which_it_does_not_change():
    text = ndjson({"@context": {"ex": "https://example.org/base/", "name": "ex:baseName"}},
                  {"@context": {"label": "ex:label"}, "@type": "ex:Thing", "name": "Alice", "label": "A"},
                  {"@type": "ex:Thing", "name": "Bob", "label": "B"})
    rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
    base = "https://example.org/base/"
    assert jsonld_datasets(text) == [
        ("urn:m:1", [(rdf_type, f"<{base}Thing>"), (base + "baseName", '"Alice"'), (base + "label", '"A"')]),
        ("urn:m:2", [(rdf_type, f"<{base}Thing>"), (base + "baseName", '"Bob"')])]


def test_a_data_message_without_a_prior_context_is_plain_json_ld():
    text = ndjson({"@id": "https://example.org/p1", "@type": "https://example.org/Product"})
    assert jsonld_datasets(text) == [
        ("urn:m:1", [("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "<https://example.org/Product>")])]


def test_ndjson_ld_problems_name_their_line_and_the_others_load():
    text = ('{"@context": {"@vocab": "http://example.org/"}}\n'
            '{"v": 1, "http://www.w3.org/ns/prov#generatedAtTime": "2026-03-01T13:00:00Z"}\n'
            "\n"
            '{"v": 2,\n'
            "[1, 2]\n"
            '{"@context": "https://schema.org/", "v": 3}\n'
            '{"v": 4, "http://www.w3.org/ns/prov#generatedAtTime": "2026-03-01T13:00:01Z"}\n')
    conv = M.convert(text, "ndjsonld", file="s.ndjsonld", pred=PROV, element_base="urn:m:")
    assert [str(e) for e in conv.errors] == [
        "s.ndjsonld:3: a blank line (NDJSON-LD: one JSON object a line)",
        "s.ndjsonld:4:9: not JSON: Expecting property name enclosed in double quotes",
        "s.ndjsonld:5: a JSON list, not an object (NDJSON-LD: one JSON object a line)",
        "s.ndjsonld:6: message 2: not JSON-LD: No LoadDocumentCallback has been set to load remote contexts"]
    dt = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"
    # a plain-string timestamp in the form of an xsd:dateTime is typed as one (JSON has no typed literal)
    assert [line for line in nquads(conv) if line.startswith("<urn:m:")] == [
        f'<urn:m:1> <{PROV}> "2026-03-01T13:00:00Z"{dt} .', f'<urn:m:3> <{PROV}> "2026-03-01T13:00:01Z"{dt} .']


# ------------------------------------------------------------------------------------------ JSON-LD streams


@pytest.mark.testdata
def test_the_rsp_ql_json_ld_example_stream_as_elements(testdata):
    """BGN_Location_TempC_Minute_Berlin.json: a default-graph timestamp (ssn:observationSamplingTime, typed
    xsd:dateTime by the context) for each blank-node-named graph; items named by their line."""
    path = testdata / "rsp-ql" / "Example_RDF_Streams" / "BGN_Location_TempC_Minute_Berlin.json"
    ssn = "http://www.w3.org/2005/Incubator/ssn/ssnx/ssn#observationSamplingTime"
    conv = M.convert(path.read_text(), "jsonld", file=path.name, pred=ssn, element_base="urn:m:",
                     base_iri="http://example.org/base/")
    assert conv.errors == [] and conv.messages == 9
    assert [o[1] for o in conv.origins] == [14, 24, 34, 44, 54, 64, 74, 84, 94]
    stamps, temps = {}, {}
    for q in ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS):
        if q.predicate.value == ssn:
            stamps[q.subject.value] = q.object.value
        else:
            assert q.subject.value == "http://example.org/base/Berlin"
            temps[q.graph_name.value] = q.object.value
    assert sorted((stamps[g], temps[g]) for g in stamps) == [
        ("2015-01-01T01:00:00", "12.5"), ("2015-01-01T01:01:00", "12.5"), ("2015-01-01T01:02:00", "12.0"),
        ("2015-01-01T01:03:00", "11.5"), ("2015-01-01T01:04:00", "11.0"), ("2015-01-01T01:05:00", "10.5"),
        ("2015-01-01T01:06:00", "10.0"), ("2015-01-01T01:08:00", "9.0"), ("2015-01-01T01:10:00", "8.5")]


@pytest.mark.testdata
def test_triplewave_streams_with_a_remote_context_are_rejected_item_by_item(testdata):
    path = testdata / "triplewave" / "examples" / "rdfstream" / "stream.1.rs"
    conv = M.convert(path.read_text(), "jsonld", file="stream.1.rs", pred=PROV, element_base="urn:m:")
    assert conv.nquads == b"" and [str(e) for e in conv.errors] == [
        f"stream.1.rs:{n}: not JSON-LD: No LoadDocumentCallback has been set to load remote contexts" for n in (1, 2)]


def test_a_json_ld_document_that_is_no_json_is_one_problem():
    conv = M.convert('[{"@id": "http://e/g",\n  "@graph": [}]', "jsonld", file="s.jsonld", pred=PROV,
                     element_base="urn:m:")
    assert [str(e) for e in conv.errors] == ["s.jsonld:2:14: not JSON: Expecting value"] and conv.nquads == b""


# --------------------------------------------------------------------------------------- formats, media types


def test_stream_formats_from_extension_announcement_and_name(tmp_path):
    assert M.stream_format("s.ndjsonld") == "ndjsonld"
    assert M.stream_format("s.jsonld.gz") == "jsonld" and M.stream_format("s.json") == "jsonld"
    assert M.stream_format("s.trig", head="# a log\n" + V) == "trig-messages"
    assert M.stream_format("s.nt", head="@version '1.1-messages' .") == "ntriples-messages"
    assert M.stream_format("s.trig", head='VERSION "1.2"\n') is None
    assert M.stream_format("s.nq") is None
    assert M.stream_format("stream.rs", "json-ld") == "jsonld"
    assert M.stream_format("s.txt", "nt-messages") == "ntriples-messages"
    assert M.media_type_format("application/trig; version=1.2-messages") == "trig-messages"
    assert M.media_type_format('application/n-quads;version="1.1-messages"') == "nquads-messages"
    assert M.media_type_format("application/x-ld+ndjson") == "ndjsonld"
    assert M.media_type_format("application/trig") is None
    assert M.media_type_format("application/trig", V + T1) == "trig-messages"
    assert M.media_type_format("text/turtle", T1) is None
    assert M.pushed_format(V + T1, "trig") == "trig-messages" and M.pushed_format(T1, "trig") is None
    assert M.pushed_format(V + t("s", "o", "g") + "\n", None) == "nquads-messages"
    assert M.pushed_format(V + "PREFIX : <http://e/>\n", None) == "trig-messages"
    assert M.pushed_format(t("s", "o", "g"), None) is None
    log = tmp_path / "s.trig"
    log.write_text(V + T1 + "\n")
    plain = tmp_path / "p.trig"
    plain.write_text(T1 + "\n")
    assert M.needs_conversion(str(log)) and not M.needs_conversion(str(plain))


def test_a_service_push_of_a_message_log_or_ndjson_ld():
    body = (V + f"<{EX}o1> <{EX}v> 1 ; <{PROV}> 3 .\nMESSAGE\n<{EX}o2> <{EX}v> 2 ; <{PROV}> 4 .\n").encode()
    push = parse_push(body, "application/trig; version=1.2-messages", predicate=PROV, arrival_time=False, now=0.0)
    assert [(e.graph.split(":")[-1], e.time, e.triples) for e in push.elements] == [("1", 3, 2), ("2", 4, 2)]
    body = ndjson({"@context": {"@vocab": EX}}, {"v": 1}).encode()
    push = parse_push(body, "application/x-ld+ndjson", predicate=PROV, arrival_time=True, now=1_700_000_000.0)
    assert [(e.time, e.triples) for e in push.elements] == [("2023-11-14T22:13:20Z", 1)]
    with pytest.raises(DataError, match=r"^request body:4:1: message 1: a message delimiter inside a graph block$"):
        parse_push((V + f"<{EX}g> {{\n<{EX}a> <{EX}b> 1 .\nMESSAGE\n}}\n").encode(), None, predicate=PROV,
                   arrival_time=True, now=0.0)


# ------------------------------------------------------------------------------------------- writing messages


def record(t: int, triples) -> Record:
    return Record(query="q", ticks=t, time=t, form=QueryForm.CONSTRUCT, triples=triples)


def test_messages_written_read_back_give_the_same_messages():
    """The draft's serialization test: messages [s1 p o1], [], [s2 p o2] written and parsed back."""
    out = io.StringIO()
    writer = ReplayWriter("messages", out)
    for rec in (record(1, [(IRI(EX + "s1"), IRI(EX + "p"), IRI(EX + "o1"))]), record(2, []),
                record(3, [(IRI(EX + "s2"), IRI(EX + "p"), IRI(EX + "o2"))])):
        writer.write(rec)
    writer.close()
    text = out.getvalue()
    assert text.startswith(V) and text.count("MESSAGE\n") == 2
    got = datasets(text, "trig-messages")
    i = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    assert got == [sorted([f"<{EX}s1> <{EX}p> <{EX}o1> <urn:rspark:q#t1> .", f'<urn:rspark:q#t1> <{PROV}> "1"{i} .']),
                   [],
                   sorted([f"<{EX}s2> <{EX}p> <{EX}o2> <urn:rspark:q#t3> .", f'<urn:rspark:q#t3> <{PROV}> "3"{i} .'])]


# ------------------------------------------------------------------------------------------------------ fuzz

_PIECES = st.sampled_from([
    "MESSAGE", "@message", ".", "{", "}", "[", "]", "(", ")", f"<{EX}a>", "<bad iri>", '"s"', '"open', '"""',
    "'", "_:b", "ex:p", "PREFIX ex: <http://e/>", "@prefix ex: <http://e/> .", "BASE <http://e/>", "VERSION",
    '"1.2-messages"', "a", "1", "1.5", ";", ",", "#", "\n", " ", "\\", "\x00", "\ud7ff", "<<", ">>", "GRAPH",
    '{"@context": {}}', "{}", '{"@id": "_:x", "@graph": []}', "[", "]", ":", '"@context"', "null", "\r\n",
])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=40).map(" ".join), st.sampled_from(M.STREAM_FORMATS), st.booleans())
def test_the_splitter_and_the_converter_never_raise_and_report_data_errors(body, fmt, announce):
    text = (V if announce else "") + body
    conv = M.convert(text, fmt, file="f", pred=PROV, element_base="urn:m:")
    assert all(type(e) is DataError and str(e).startswith("f") for e in conv.errors)
    lines = text.count("\n") + 1
    assert all(e.line is None or 1 <= e.line <= lines for e in conv.errors)
    list(ox.parse(conv.nquads, format=ox.RdfFormat.N_QUADS))  # what it gives is N-Quads
    for msg in M.split_messages(text, fmt) if fmt in M.MESSAGE_LOGS.values() else ():
        assert 0 <= msg.start <= msg.end <= len(text) and msg.number >= 1


# ------------------------------------------------------------------------------------------------------ Spark

LOG = V + """PREFIX : <http://example.org/>
PREFIX prov: <http://www.w3.org/ns/prov#>
:o1 :value 15 ; prov:generatedAtTime 1 .
_:b :seen :o1 .
MESSAGE
:o2 :value 20 ; prov:generatedAtTime 3 .
_:b :seen :o2 .
MESSAGE
:o3 :value 25 .
MESSAGE
:o9 :value .
MESSAGE
:o4 :value 30 ; prov:generatedAtTime 5 .
"""
SUM = """PREFIX : <http://example.org/>
SELECT (COUNT(DISTINCT ?b) AS ?seen) (SUM(?v) AS ?sum) FROM NAMED WINDOW :w ON <%s> [RANGE 4 STEP 2]
WHERE { WINDOW :w { ?o :value ?v . OPTIONAL { ?b :seen ?o } } }"""
COPY = """PREFIX : <http://example.org/>
CONSTRUCT { ?o :value ?v } FROM NAMED WINDOW :w ON <%s> [RANGE 2 STEP 2] WHERE { WINDOW :w { ?o :value ?v } }"""


def table(records) -> list:
    return [(r.time, sorted(tuple(sorted((k, v.n3()) for k, v in row.items())) for row in r.rows)) for r in records]


def test_a_message_log_replays_its_problems_are_named_and_its_messages_output_reads_back(spark, tmp_path):
    """One message, one element: a blank node label shared by two messages is two nodes (2 seen in the window
    [0, 4] holding o1 and o2); the message without a timestamp and the one that does not parse are reported with
    the file, the line and the message, and the others replay. CONSTRUCT records written with --format messages
    and read back as a stream give the same records again."""
    from rspark.engine.engine import Engine

    path = tmp_path / "log.trig"
    path.write_text(LOG)
    i = "http://www.w3.org/2001/XMLSchema#integer"
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "s", path)
        assert [str(e) for e in eng.errors] == [
            f"{path}:10: message 3: no timestamp (a default-graph triple <element> <timestamp-predicate> literal) "
            f"(element <{path.as_uri()}#message-3>)",
            f"{path}:12:12: message 4: . is not a valid RDF object"]
        with pytest.raises(DataError, match=r"log\.trig:10: message 3: no timestamp"):
            eng.add_stream(EX + "strict", path, strict=True)
        records = eng.replay([SUM % (EX + "s"), COPY % (EX + "s")], until="end", names=["sum", "copy"])
        assert table([r for r in records if r.query == "sum"]) == [
            (2, [(("seen", f'"1"^^<{i}>'), ("sum", f'"15"^^<{i}>'))]),
            (4, [(("seen", f'"2"^^<{i}>'), ("sum", f'"35"^^<{i}>'))]),
            (6, [(("seen", f'"1"^^<{i}>'), ("sum", f'"50"^^<{i}>'))])]
        copies = [r for r in records if r.query == "copy"]
        out = io.StringIO()
        writer = ReplayWriter("messages", out)
        for rec in copies:
            writer.write(rec)
        writer.close()
        (tmp_path / "out.trig").write_text(out.getvalue())
        assert out.getvalue().startswith(V) and out.getvalue().count("MESSAGE\n") == 2
        eng.add_stream(EX + "m", tmp_path / "out.trig")
        assert eng.errors[2:] == []
        again = [(r.time, sorted(r.to_json()["triples"])) for r in eng.replay(COPY % (EX + "m"), until="end")]
    original = [(r.time, sorted(r.to_json()["triples"])) for r in copies]
    assert original == [(2, [f'<{EX}o1> <{EX}value> "15"^^<{i}> .']), (4, [f'<{EX}o2> <{EX}value> "20"^^<{i}> .']),
                        (6, [f'<{EX}o4> <{EX}value> "30"^^<{i}> .'])]
    assert again == original


@pytest.mark.testdata
def test_json_ld_streams_replay(spark, testdata):
    """The W3C RSP CG's example stream (BGN Berlin: temperatures at 01:00 ... 01:06, 01:08, 01:10, read with the
    ssn:observationSamplingTime timestamps) and TripleWave's stream.rs (JSON-LD items, prov:generatedAtTime as
    plain strings with a +02:00 offset), replayed with hand-derived windows."""
    from rspark.engine.engine import Engine

    berlin = testdata / "rsp-ql" / "Example_RDF_Streams" / "BGN_Location_TempC_Minute_Berlin.json"
    triplewave = testdata / "triplewave" / "examples" / "rdfstream" / "stream.rs"
    ssn = "http://www.w3.org/2005/Incubator/ssn/ssnx/ssn#observationSamplingTime"
    temps = """PREFIX : <http://example.org/>
    SELECT (SUM(?t) AS ?sum) FROM NAMED WINDOW :w ON :berlin [RANGE PT2M STEP PT2M]
    WHERE { WINDOW :w { ?c <http://example.org/property-vocabulary#hasPointTempC> ?t } }"""
    kinds = """PREFIX : <http://example.org/>
    SELECT ?e ?kind FROM NAMED WINDOW :w ON :tw [RANGE PT10S STEP PT10S]
    WHERE { WINDOW :w { ?e a ?kind FILTER(STRSTARTS(STR(?kind), "http://example.org/")) } }"""
    d = "http://www.w3.org/2001/XMLSchema#decimal"
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "berlin", berlin, timestamp_predicate=ssn)
        eng.add_stream(EX + "tw", triplewave, format="jsonld")
        assert eng.errors == []
        assert [(r.time, [row["sum"].n3() for row in r.rows]) for r in eng.replay(temps, until="end")] == [
            ("2015-01-01T01:00:00Z", [f'"12.5"^^<{d}>']), ("2015-01-01T01:02:00Z", [f'"24.5"^^<{d}>']),
            ("2015-01-01T01:04:00Z", [f'"22.5"^^<{d}>']), ("2015-01-01T01:06:00Z", [f'"20.5"^^<{d}>']),
            ("2015-01-01T01:08:00Z", [f'"9.0"^^<{d}>']), ("2015-01-01T01:10:00Z", [f'"8.5"^^<{d}>'])]
        got = eng.replay(kinds, times=["2012-10-14T08:36:10Z", "2012-10-14T08:36:20Z"])
    tw, ex = "http://192.168.1.199/TripleWave/", "http://example.org/"
    assert [(r.time, sorted((row["e"].value, row["kind"].value) for row in r.rows)) for r in got] == [
        ("2012-10-14T08:36:10Z", [(tw + "afm1350203766710", ex + "AddForumMembership"),
                                  (tw + "apl1350203761822", ex + "LikePost")]),
        ("2012-10-14T08:36:20Z", [(tw + "acl1350203770922", ex + "LikeComment"),
                                  (tw + "acl1350203776400", ex + "LikeComment"),
                                  (tw + "afm1350203778779", ex + "AddForumMembership"),
                                  (tw + "afm1350203779356", ex + "AddForumMembership")])]


def test_message_logs_pushed_live_and_dropped_into_a_watched_directory(spark, tmp_path):
    """Pushes and files converted as a replay's files are: each message an element; a message that does not parse
    is in engine.live.errors (named by push, line and message) and the others go on."""
    from rspark.engine.engine import Engine

    count = """SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW <http://example.org/w> ON <http://example.org/%s>
    [RANGE 4 STEP 2] WHERE { WINDOW <http://example.org/w> { ?s <http://example.org/v> ?o } }"""
    log = V + (f'<{EX}a> <{EX}v> "1" .\n<{EX}a> <{PROV}> "2"^^<{XI}> .\n'
               f"MESSAGE\n<{EX}b> <{EX}v> .\nMESSAGE\n"
               f'<{EX}c> <{EX}v> "3" .\n<{EX}c> <{PROV}> "4"^^<{XI}> .\n')
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "s")
        eng.watch(EX + "t", inbox)
        handles = {name: eng.register(count % name, name=name) for name in ("s", "t")}
        eng.push(EX + "s", log)
        eng.push(EX + "s", ndjson({"@context": {"@vocab": EX}}, {"@id": EX + "d", "v": 1, PROV: 6},
                                  {"@id": EX + "e", "v": 2, PROV: 6}), format="ndjsonld")
        staged = tmp_path / "t.ndjsonld"
        staged.write_text(ndjson({"@context": {"@vocab": EX}}, {"v": 1, PROV: 2}, {}, {"v": 2, PROV: 6}))
        os.replace(staged, inbox / staged.name)
        assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        assert [str(e) for e in eng.live.errors] == [
            "pushed data:5:47: message 2: The object of a triple must be an IRI, a blank node or a literal"]
        got = {name: [(r.time, [row["n"].n3() for row in r.rows]) for r in h.drain()] for name, h in handles.items()}
    assert got == {"s": [(2, [f'"1"^^<{XI}>']), (4, [f'"2"^^<{XI}>']), (6, [f'"3"^^<{XI}>'])],
                   "t": [(2, [f'"1"^^<{XI}>']), (4, [f'"1"^^<{XI}>']), (6, [f'"1"^^<{XI}>'])]}


def test_a_paced_replay_source_reads_a_message_log_element_by_element(tmp_path):
    """``rspark run --source IRI=replay:log.trig@SPEED`` writes a message log's elements one by one, in time order."""
    path = tmp_path / "log.trig"
    path.write_text(V + f"<{EX}b> <{EX}v> 2 ; <{PROV}> 4 .\nMESSAGE\n<{EX}a> <{EX}v> 1 ; <{PROV}> 2 .\n")
    elements = recorded_elements(str(path), PROV)
    assert [(ms, sorted(text.splitlines())) for ms, text in elements] == [
        (2.0, sorted([f'<{EX}a> <{EX}v> "1"^^<{XI}> <{path.as_uri()}#message-2> .',
                      f'<{EX}a> <{PROV}> "2"^^<{XI}> <{path.as_uri()}#message-2> .',
                      f'<{path.as_uri()}#message-2> <{PROV}> "2"^^<{XI}> .'])),
        (4.0, sorted([f'<{EX}b> <{EX}v> "2"^^<{XI}> <{path.as_uri()}#message-1> .',
                      f'<{EX}b> <{PROV}> "4"^^<{XI}> <{path.as_uri()}#message-1> .',
                      f'<{path.as_uri()}#message-1> <{PROV}> "4"^^<{XI}> .']))]
