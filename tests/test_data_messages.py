"""What rspark tells about bad or surprising input (issue 23): invalid UTF-8 in every loading path, missing files,
the log of loading decisions (which path parses a file, and why), and the warnings about replays that print less
than a user expects (an empty stream, numbers read as epoch milliseconds, a slide longer than the range, a pattern
that matches nothing under ``rspql-star``, the window still open at the stream's end), and ``until="end"``.

Every message is asserted exactly, with its logger and level."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest

from rspark.errors import DataError, MissingFileError
from rspark.spark import jvm
from rspark.spark.loading import loader
from rspark.spark.loading.loader import load_rdf, load_stream

SAMPLES = Path(__file__).resolve().parents[1] / "rspark" / "samples"
OBS, SENSORS = "http://example.org/obs", "http://example.org/sensors"
PROV = "http://www.w3.org/ns/prov#generatedAtTime"
XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
STILL_OPEN = ("the window holding it is still open; pass until='end' (rspark replay --until end) to close the "
              "stream at its last element")


def records(caplog, name: str, level: int | None = None) -> list[tuple[str, int, str]]:
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records
            if r.name == name and (level is None or r.levelno == level)]


@pytest.fixture
def engine(spark):
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        yield eng


def elements(loaded) -> list[tuple[str, int]]:
    return sorted((r["element"], r["ts"]) for r in loaded.elements.collect())


# ------------------------------------------------------------------------------------------ invalid UTF-8: N-Quads


def nquads_line(i: int, value: bytes = b"") -> bytes:
    value = value or f"v{i}".encode()
    return (f"<http://e/s{i}> <http://e/p> \"".encode() + value + f"\" <http://e/g{i}> .\n".encode()
            + f"<http://e/g{i}> <{PROV}> \"{i}\"^^<{XSD_INT}> .\n".encode())


# lines 1-6: g1, g2, g3; line 7: g9's statement with the byte 0xFF at column 33, line 8 its timestamp; lines 9-10: g4
BAD_NQ = (nquads_line(1) + nquads_line(2) + nquads_line(3) + nquads_line(9, b"bad \xff byte") + nquads_line(4))
GOOD_ELEMENTS = [("<http://e/g1>", 1), ("<http://e/g2>", 2), ("<http://e/g3>", 3), ("<http://e/g4>", 4)]


def test_invalid_utf8_in_an_nquads_stream_through_the_jvm_data_source(spark, tmp_path, logs):
    path = tmp_path / "bad.nq"
    path.write_bytes(BAD_NQ)
    loaded = load_stream(spark, "http://e/s", path)
    assert [str(e) for e in loaded.errors] == [f"{path}:7:33: invalid UTF-8 (byte 0xFF) (element <http://e/g9>)"]
    err = loaded.errors[0]
    assert (err.file, err.line, err.column, err.element, err.reason) == (
        str(path), 7, 33, "<http://e/g9>", "invalid UTF-8 (byte 0xFF) (element <http://e/g9>)")
    assert elements(loaded) == GOOD_ELEMENTS
    assert records(logs, "rspark.loading") == [
        ("rspark.loading", logging.INFO, f"loading {path} (N-Quads) with rspark's JVM data source")]
    loaded.unpersist()
    with pytest.raises(DataError) as info:
        load_stream(spark, "http://e/s", path, strict=True)
    assert str(info.value) == f"{path}:7:33: invalid UTF-8 (byte 0xFF) (element <http://e/g9>)"


def test_invalid_utf8_in_an_nquads_stream_through_the_jvm_udf(spark, tmp_path, logs):
    path = tmp_path / "bad.nq.gz"  # compressed: Spark's text source and the scanner as a UDF
    path.write_bytes(gzip.compress(BAD_NQ))
    loaded = load_stream(spark, "http://e/s", path)
    assert [str(e) for e in loaded.errors] == [f"{path}:7:33: invalid UTF-8 (byte 0xFF) (element <http://e/g9>)"]
    assert elements(loaded) == GOOD_ELEMENTS
    assert records(logs, "rspark.loading") == [
        ("rspark.loading", logging.INFO, f"loading {path} (N-Quads) with Spark's text source and rspark's JVM line "
                                         "scanner (a UDF), not rspark's data source: a compressed file (Hadoop's "
                                         "codecs decompress it)")]
    loaded.unpersist()


def test_invalid_utf8_in_an_nquads_stream_through_python_with_rspark_jvm_0(spark, tmp_path, logs, monkeypatch):
    monkeypatch.setenv("RSPARK_JVM", "0")
    path = tmp_path / "bad.nq"
    path.write_bytes(BAD_NQ)
    loaded = load_stream(spark, "http://e/s", path)
    assert [str(e) for e in loaded.errors] == [f"{path}:7:33: invalid UTF-8 (byte 0xFF) (element <http://e/g9>)"]
    assert elements(loaded) == GOOD_ELEMENTS
    assert records(logs, "rspark.loading") == [
        ("rspark.loading", logging.INFO, f"loading {path} (N-Quads) in Python workers (pyoxigraph), about 2x slower "
                                         "than rspark's JVM line scanner: RSPARK_JVM=0")]
    loaded.unpersist()
    with pytest.raises(DataError) as info:
        load_stream(spark, "http://e/s", path, strict=True)
    assert str(info.value) == f"{path}:7:33: invalid UTF-8 (byte 0xFF) (element <http://e/g9>)"


def test_invalid_utf8_in_an_ntriples_file_loaded_not_strict_and_strict(spark, tmp_path):
    path = tmp_path / "bad.nt"
    path.write_bytes(b'<http://e/s> <http://e/p> "a" .\n<http://e/s> <http://e/p> "b\xe2\x82" .\n'
                     b'<http://e/s> <http://e/p> "c" .\n')
    loaded = load_rdf(spark, path, strict=False)
    assert [str(e) for e in loaded.errors] == [f"{path}:2:29: invalid UTF-8 (bytes 0xE2 0x82)"]
    assert sorted(r["o"] for r in loaded.quads.collect()) == ['"a"', '"c"']
    loaded.unpersist()
    with pytest.raises(DataError) as info:
        load_rdf(spark, path)
    assert str(info.value) == f"{path}:2:29: invalid UTF-8 (bytes 0xE2 0x82)"
    gz = tmp_path / "bad.nt.gz"  # Spark's text source and the scanner UDF
    gz.write_bytes(gzip.compress(path.read_bytes()))
    loaded = load_rdf(spark, gz, strict=False)
    assert [str(e) for e in loaded.errors] == [f"{gz}:2:29: invalid UTF-8 (bytes 0xE2 0x82)"]
    assert sorted(r["o"] for r in loaded.quads.collect()) == ['"a"', '"c"']
    loaded.unpersist()


def test_invalid_utf8_in_an_nquads_file_loaded_not_strict_through_python(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("RSPARK_JVM", "0")
    path = tmp_path / "bad.nq"
    path.write_bytes(b'<http://e/s> <http://e/p> "\xff" <http://e/g> .\n'
                     b'<http://e/s> <http://e/p> "ok" <http://e/g> .\n')
    loaded = load_rdf(spark, path, strict=False)
    assert [str(e) for e in loaded.errors] == [f"{path}:1:28: invalid UTF-8 (byte 0xFF) (element <http://e/g>)"]
    assert [tuple(r) for r in loaded.quads.collect()] == [("<http://e/s>", "<http://e/p>", '"ok"', "<http://e/g>")]
    loaded.unpersist()


# --------------------------------------------------------------------------------------- invalid UTF-8: TriG, Turtle

BAD_TRIG = (b"@prefix : <http://e/> .\n"
            b"@prefix prov: <http://www.w3.org/ns/prov#> .\n"
            b"# caf\xe9: a Latin-1 comment\n"              # line 3: reported, nothing skipped
            b":g1 { :s :p \"a\" . }\n"
            b":g1 prov:generatedAtTime 1 .\n"
            b":g2 { :s :p \"b\xe2\x82\" . }\n"               # line 6, column 15: element :g2 rejected
            b":g2 prov:generatedAtTime 2 .\n"
            b":g3 { :s :p \"c\" . }\n"
            b":g3 prov:generatedAtTime 3 .\n")


def test_invalid_utf8_in_a_trig_stream(engine, tmp_path):
    path = tmp_path / "bad.trig"
    path.write_bytes(BAD_TRIG)
    engine.add_stream("http://e/s", path)
    assert [str(e) for e in engine.errors] == [
        f"{path}:3:6: invalid UTF-8 (byte 0xE9)",
        f"{path}:6:15: invalid UTF-8 (bytes 0xE2 0x82) (element <http://e/g2>)",
    ]
    q = ("PREFIX : <http://e/> SELECT ?o FROM NAMED WINDOW :w ON :s [RANGE 1] WHERE { WINDOW :w { ?s :p ?o } }")
    assert [(r.time, [row["o"].lexical for row in r.rows]) for r in engine.replay(q)] == [
        (1, ["a"]), (2, []), (3, ["c"])]


def test_invalid_utf8_in_a_trig_stream_strict(spark, tmp_path):
    path = tmp_path / "bad.trig"
    path.write_bytes(BAD_TRIG)
    with pytest.raises(DataError) as info:
        load_stream(spark, "http://e/s", path, strict=True)
    assert str(info.value) == f"{path}:3:6: invalid UTF-8 (byte 0xE9)"


def test_invalid_utf8_in_a_graph_label_names_no_element(spark, tmp_path):
    path = tmp_path / "label.trig"
    path.write_bytes(b"@prefix : <http://e/> .\n<http://e/g\xff> { :s :p 1 . }\n:g1 { :s :p 2 . }\n"
                     b":g1 <http://www.w3.org/ns/prov#generatedAtTime> 1 .\n")
    loaded = load_stream(spark, "http://e/s", path)
    assert [str(e) for e in loaded.errors] == [f"{path}:2:12: invalid UTF-8 (byte 0xFF)"]
    assert elements(loaded) == [("<http://e/g1>", 1)]
    loaded.unpersist()


def test_invalid_utf8_in_turtle_and_trig_graphs(spark, tmp_path):
    ttl = tmp_path / "bad.ttl"
    ttl.write_bytes(b'@prefix : <http://e/> .\n:s :p "a" .\n:s :p "b\xff" .\n:s :p "c" .\n')
    loaded = load_rdf(spark, ttl, strict=False)
    assert [str(e) for e in loaded.errors] == [f"{ttl}:3:9: invalid UTF-8 (byte 0xFF)"]
    assert sorted(r["o"] for r in loaded.quads.collect()) == ['"a"', '"c"']
    loaded.unpersist()
    with pytest.raises(DataError) as info:  # strict: pyoxigraph's one pass, its error in the same words
        load_rdf(spark, ttl)
    assert str(info.value) == f"{ttl}:3:9: invalid UTF-8 (byte 0xFF)"
    trig = tmp_path / "bad.trig"
    trig.write_bytes(BAD_TRIG)
    with pytest.raises(DataError) as info:
        load_rdf(spark, trig)
    assert str(info.value) == f"{trig}:3:6: invalid UTF-8 (byte 0xE9)"


def test_invalid_utf8_helpers():
    from rspark.spark.loading import rdf

    text, bad = rdf.decode_marking(b"\xef\xbb\xbfab\n\xe2\x82\"x\xff")
    assert text == "ab\n\ufffd\"x\ufffd"
    assert bad == [(3, 1, 1, "invalid UTF-8 (bytes 0xE2 0x82)"), (6, 1, 4, "invalid UTF-8 (byte 0xFF)")]
    assert rdf.decode_marking("é \ufffd".encode()) == ("é \ufffd", [])  # a U+FFFD written in the file is data
    assert rdf.first_invalid_utf8(b"ok\n\xef\xbb\xbf") is None
    assert rdf.first_invalid_utf8(b"ok\nab\xc3") == (2, 3, "invalid UTF-8 (byte 0xC3)")


# ------------------------------------------------------------------------------------------------- missing files


def test_a_missing_file_is_a_data_error_before_any_spark_job(engine, tmp_path):
    sc = engine.spark.sparkContext
    sc.setJobGroup("rspark-missing-file", "no job expected")
    try:
        missing = tmp_path / "nowhere.trig"
        with pytest.raises(MissingFileError) as info:
            engine.add_stream("http://e/s", missing)
        assert str(info.value) == f"{missing}: no such file"
        assert isinstance(info.value, DataError) and isinstance(info.value, FileNotFoundError)
        assert (info.value.file, info.value.filename) == (str(missing), str(missing))
        good = SAMPLES / "observations.trig"
        with pytest.raises(MissingFileError) as info:  # checked before the other stream is loaded
            engine.add_streams([("http://e/a", good), ("http://e/b", tmp_path / "b.nq")])
        assert str(info.value) == f"{tmp_path / 'b.nq'}: no such file"
        with pytest.raises(MissingFileError) as info:
            engine.load(tmp_path / "data.ttl", graph="http://e/g")
        assert str(info.value) == f"{tmp_path / 'data.ttl'}: no such file"
        with pytest.raises(MissingFileError) as info:
            engine.load(f"file://{tmp_path}/data.nt")
        assert str(info.value) == f"file://{tmp_path}/data.nt: no such file"
        assert sc.statusTracker().getJobIdsForGroup("rspark-missing-file") == []
        assert engine.streams == {}
    finally:
        sc.setJobGroup(None, None)


# ------------------------------------------------------------------------------------------- loading decisions


def test_the_python_fallback_is_a_warning_when_not_asked_for(spark, tmp_path, logs, monkeypatch, executor_loads):
    monkeypatch.setattr(jvm, "_build_failure", "javac exited with status 1: error: boom")
    monkeypatch.setattr(jvm, "line_parser", lambda spark: None)
    monkeypatch.setattr(jvm, "lines_source", lambda *args, **kwargs: None)
    monkeypatch.setattr(loader, "_warned_fallbacks", set())
    path = tmp_path / "ok.nt"
    path.write_text('<http://e/s> <http://e/p> "a" .\n')
    load_rdf(spark, path).unpersist()
    load_rdf(spark, path).unpersist()
    message = (f"loading {path} (N-Triples) in Python workers (pyoxigraph), about 2x slower than rspark's JVM line "
               "scanner: rspark's JVM helpers could not be compiled (javac exited with status 1: error: boom)")
    assert records(logs, "rspark.loading") == [("rspark.loading", logging.WARNING, message),  # once a session
                                               ("rspark.loading", logging.INFO, message)]


def test_a_failed_compile_of_the_jvm_helpers_is_a_warning(tmp_path, logs, monkeypatch):
    javac = tmp_path / "javac"
    javac.write_text("#!/bin/sh\necho 'error: boom' >&2\nexit 1\n")
    javac.chmod(0o755)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_javac", lambda: str(javac))
    monkeypatch.setattr(jvm, "_build_failure", None)
    assert jvm.jar_path() is None
    assert records(logs, "rspark.jvm") == [
        ("rspark.jvm", logging.WARNING, f"rspark's JVM helpers could not be compiled ({javac} exited with status 1: "
                                        "error: boom): N-Triples / N-Quads lines are parsed in Python workers (about "
                                        "2x slower)")]
    assert jvm.python_fallback(None) == (f"rspark's JVM helpers could not be compiled ({javac} exited with status 1: "
                                         "error: boom)", True)


def test_no_jdk_is_an_info(tmp_path, logs, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    monkeypatch.setattr(jvm, "_build_failure", None)
    assert jvm.jar_path() is None
    assert records(logs, "rspark.jvm") == [
        ("rspark.jvm", logging.INFO, "no JDK (javac not found through JAVA_HOME or the PATH): rspark's JVM helpers "
                                     "are not built, N-Triples / N-Quads lines are parsed in Python workers (about "
                                     "2x slower)")]
    assert jvm.python_fallback(None) == ("no JDK (javac not found through JAVA_HOME or the PATH), so rspark's JVM "
                                         "helpers are not built", False)
    monkeypatch.setenv("RSPARK_JVM", "0")
    assert jvm.python_fallback(None) == ("RSPARK_JVM=0", False)


def test_the_reasons_for_not_using_rspark_s_data_source(tmp_path, monkeypatch):
    from types import SimpleNamespace

    def session(master):
        return SimpleNamespace(sparkContext=SimpleNamespace(master=master))

    nq = tmp_path / "s.nq"
    nq.write_text("")
    assert jvm.source_unavailable(session("spark://h:7077"), str(nq)) == \
        "a cluster master (spark://h:7077): the file is read where each task runs"
    assert jvm.source_unavailable(session("local[2]"), str(tmp_path / "s.nq.gz")) == \
        "a compressed file (Hadoop's codecs decompress it)"
    assert jvm.source_unavailable(session("local[2]"), "hdfs://h/s.nq") == "not a regular local file"
    monkeypatch.setattr(jvm, "_javac", lambda: "/usr/bin/javac")
    monkeypatch.setattr(jvm, "_build_failure", None)
    assert jvm.python_fallback(None) == ("the Spark session was created without rspark's jar (a session started "
                                         "elsewhere: add rspark.spark.jvm.jar_path() to its spark.jars)", True)
    monkeypatch.setenv("RSPARK_JVM", "0")
    assert jvm.source_unavailable(session("local[2]"), str(nq)) == "RSPARK_JVM=0"


# ------------------------------------------------------------------------------- control characters in messages


def test_messages_that_quote_input_escape_control_characters():
    """One helper, rspark.errors.printable, makes what a message quotes safe for a terminal: control characters
    (C0, DEL, C1), line and paragraph separators, bidirectional controls and lone surrogates are written as escapes;
    the rest, backslashes included, is left as it is (so escaping twice changes nothing)."""
    from rspark.errors import printable

    assert printable("a\x00b\x1b[31mc\x7f\x9b\td\ne\rf") == "a\\x00b\\x1b[31mc\\x7f\\x9b\\td\\ne\\rf"
    assert printable("\u202eevil\u2066\u2028\udcff") == "\\u202eevil\\u2066\\u2028\\udcff"
    assert printable("caf\u00e9 <http://e/\u4e2d> \\u0041 'x'") == "caf\u00e9 <http://e/\u4e2d> \\u0041 'x'"
    assert printable(printable("\x00\\x00")) == printable("\x00\\x00") == "\\x00\\x00"
    err = DataError("'\x00' is not allowed at the beginning of a prefix name", file="bin\nary.nq", line=3, column=1,
                    element="<http://e/g\x07>")
    assert str(err) == ("bin\\nary.nq:3:1: '\\x00' is not allowed at the beginning of a prefix name "
                        "(element <http://e/g\\x07>)")
    assert err.reason == "'\\x00' is not allowed at the beginning of a prefix name (element <http://e/g\\x07>)"


def test_control_characters_of_a_stream_are_escaped_in_its_messages(engine, tmp_path):
    """Bad lines holding NUL, ESC, BEL and a right-to-left override, and a timestamp whose lexical form holds an
    ESC (written as an N-Quads escape): every message names them as escapes."""
    path = tmp_path / "controls.nq"
    path.write_bytes(nquads_line(1)
                     + b"\x00\x00\x00\x02ELF\n"                                          # line 3
                     + b"\x1b[2J\x1b[31mred\x07 <http://e/s> <http://e/p> 1 <http://e/g5> .\n"  # line 4
                     + "\u202e <http://e/s> <http://e/p> 1 .\n".encode()                     # line 5
                     + b'<http://e/s> <http://e/p> "1" <http://e/g6> .\n'                     # line 6
                     + f'<http://e/g6> <{PROV}> "\\u001B[2J" .\n'.encode()                     # line 7
                     + nquads_line(2))
    engine.add_stream("http://e/s", path)
    assert [str(e) for e in engine.errors] == [
        f"{path}:3:1: '\\x00' is not allowed at the beginning of a prefix name",
        f"{path}:4:1: '\\x1b' is not allowed at the beginning of a prefix name (element <http://e/g5>)",
        f"{path}:5:1: '\\u202e' is not allowed at the beginning of a prefix name",
        f'{path}:7: bad timestamp: the timestamp "\\x1b[2J" is a plain string; expected xsd:dateTime or a number '
        "(xsd:integer, xsd:decimal, xsd:long) (element <http://e/g6>)",
    ]
    assert not any(ch in str(e) for e in engine.errors for ch in "\x00\x1b\x07\u202e")
    assert sorted(engine.streams) == ["http://e/s"]


# ----------------------------------------------------------------------------------------- unterminated strings

UNTERMINATED = "unterminated string: no closing \" on the line where it starts"


def _ten_lines(bad: str) -> str:
    """A TriG stream of ten lines whose third is ``bad`` (element :g1's block), then :g2 to :g4."""
    return ("@prefix : <http://e/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n" + bad + "\n"
            + ":g1 prov:generatedAtTime 1 .\n"
            + "".join(f':g{i} {{ :s :p "v{i}" . }}\n:g{i} prov:generatedAtTime {i} .\n' for i in (2, 3, 4)))


@pytest.mark.parametrize("bad,message", [
    (':g1 { :s :p "abc . }', f"3:13: {UNTERMINATED}"),
    (":g1 { :s :p 'abc . }", "3:13: unterminated string: no closing ' on the line where it starts"),
    (':g1 { :s :p "a" ; :q "b\\"c . }', f"3:22: {UNTERMINATED}"),
    (':g1 { :s :p """abc . }', '3:13: unterminated string: no closing """ before the end of the file'),
])
def test_an_unterminated_string_in_a_trig_stream_is_named_where_it_starts(spark, tmp_path, bad, message):
    path = tmp_path / "s.trig"
    path.write_text(_ten_lines(bad))
    loaded = load_stream(spark, "http://e/s", path)
    assert [str(e) for e in loaded.errors] == [f"{path}:{message} (element <http://e/g1>)"]
    # a long string runs to the end of the file: no element after it is read
    assert elements(loaded) == ([] if '"""' in bad else [("<http://e/g2>", 2), ("<http://e/g3>", 3),
                                                          ("<http://e/g4>", 4)])
    loaded.unpersist()


def test_an_unterminated_string_in_an_nquads_stream_is_named_where_it_starts(spark, tmp_path):
    path = tmp_path / "s.nq"
    lines = b"".join(nquads_line(i) for i in range(1, 6)).decode().splitlines()
    lines[2] = '<http://e/s2> <http://e/p> "abc <http://e/g2> .'  # line 3 of 10: g2's statement
    path.write_text("\n".join(lines) + "\n")
    loaded = load_stream(spark, "http://e/s", path)
    assert [str(e) for e in loaded.errors] == [f"{path}:3:28: {UNTERMINATED} (element <http://e/g2>)"]
    assert elements(loaded) == [("<http://e/g1>", 1), ("<http://e/g3>", 3), ("<http://e/g4>", 4), ("<http://e/g5>", 5)]
    loaded.unpersist()


def test_an_unterminated_string_in_a_document_parsed_whole(spark, tmp_path):
    """A strict load parses a Turtle file in one pass, where the parser stops at the end of the line: the string's
    start is found on that line."""
    ttl = tmp_path / "s.ttl"
    ttl.write_text('@prefix : <http://e/> .\n:s :p "a" .\n:s :p "abc .\n:s :p "c" .\n')
    with pytest.raises(DataError) as info:
        load_rdf(spark, ttl)
    assert str(info.value) == f"{ttl}:3:7: {UNTERMINATED}"


def test_an_unterminated_string_in_a_push():
    from rspark.service.elements import parse_push

    body = b'@prefix : <http://e/> .\n:g1 { :s :p "abc . }\n:g1 :t 1 .\n'
    with pytest.raises(DataError) as info:
        parse_push(body, "application/trig", predicate="http://e/t", arrival_time=False, now=0)
    assert str(info.value) == f"request body:2:13: malformed TriG: {UNTERMINATED}"


# -------------------------------------------------------------------------------------------------- empty streams


def test_an_empty_stream_is_a_warning(engine, tmp_path, logs):
    empty = tmp_path / "empty.trig"
    empty.write_text("<http://e/a> <http://e/p> 1 .\n")
    engine.add_stream("http://e/empty", empty)
    assert records(logs, "rspark.loading", logging.WARNING) == [
        ("rspark.loading", logging.WARNING, f"stream <http://e/empty> has no elements (file {empty})"),
    ]
    assert engine.errors == []


def test_an_empty_file_is_an_empty_stream_without_a_spark_job(engine, tmp_path, logs):
    """A 0-byte stream file: the warning, and an empty stream that replays (at the instants asked for) with no
    Spark job to load it."""
    empty = tmp_path / "empty.nq"
    empty.write_bytes(b"")
    sc = engine.spark.sparkContext
    sc.setJobGroup("rspark-empty-file", "no job expected")
    try:
        engine.add_stream("http://e/s", empty)
        assert sc.statusTracker().getJobIdsForGroup("rspark-empty-file") == []
    finally:
        sc.setJobGroup(None, None)
    assert records(logs, "rspark.loading", logging.WARNING) == [
        ("rspark.loading", logging.WARNING, f"stream <http://e/s> has no elements ({empty} is empty)")]
    assert engine.errors == []
    q = "SELECT ?o FROM NAMED WINDOW <w> ON <http://e/s> [RANGE 5] WHERE { WINDOW <w> { ?s ?p ?o } }"
    assert engine.replay(q) == []
    assert [(r.time, r.rows) for r in engine.replay(q, times=[5, 10])] == [(5, []), (10, [])]


NO_TIMESTAMP = "no timestamp (a default-graph triple <element> <timestamp-predicate> literal)"


def test_a_stream_with_no_valid_element_is_an_error(engine, tmp_path, logs):
    """Elements, all rejected: a DataError naming the file, how many were rejected and the first; the stream is
    not added and nothing is logged."""
    rejected = tmp_path / "rejected.trig"
    rejected.write_text("<http://e/g1> { <http://e/s> <http://e/p> 1 . }\n"
                        "<http://e/g2> { <http://e/s> <http://e/p> 2 . }\n")
    with pytest.raises(DataError) as info:
        engine.add_stream("http://e/rejected", rejected)
    assert str(info.value) == (f"{rejected}: no valid stream element (2 rejected; first: line 1: {NO_TIMESTAMP} "
                               "(element <http://e/g1>))")
    assert [str(e) for e in info.value.errors] == [f"{rejected}:1: {NO_TIMESTAMP} (element <http://e/g1>)",
                                                   f"{rejected}:2: {NO_TIMESTAMP} (element <http://e/g2>)"]
    assert (engine.streams, engine.errors) == ({}, [])
    assert records(logs, "rspark.loading", logging.WARNING) == []


NUL_FIRST = "'\\x00' is not allowed at the beginning of a prefix name"


@pytest.mark.parametrize("name,rejected,first,strict", [
    # N-Quads: every line is a problem, the first one's at its first byte
    ("garbage.nq", 120, f"line 1, column 1: {NUL_FIRST}", f"1:1: {NUL_FIRST}"),
    # TriG: no '.' or '{' ends a statement, so the file is one statement, reported at its first byte that is not
    # UTF-8
    ("garbage.trig", 1, "line 2, column 8: invalid UTF-8 (bytes 0xFF 0xFE)", "2:8: invalid UTF-8 (bytes 0xFF 0xFE)"),
])
def test_a_binary_file_given_as_a_stream_is_an_error(engine, tmp_path, name, rejected, first, strict):
    """No element at all, only malformed lines (N-Quads) or statements (TriG): an error with the first problem,
    escaped; --strict (strict=True) still stops at the first problem."""
    from tests.support.binary import binary_bytes

    path = tmp_path / name
    path.write_bytes(binary_bytes(120))
    with pytest.raises(DataError) as info:
        engine.add_stream("http://e/s", path)
    assert str(info.value) == f"{path}: no valid stream element ({rejected} rejected; first: {first})"
    assert len(info.value.errors) == rejected
    with pytest.raises(DataError) as info:
        engine.add_stream("http://e/s", path, strict=True)
    assert str(info.value) == f"{path}:{strict}"
    assert engine.streams == {}


def test_one_load_without_a_valid_element_fails_the_others(engine, tmp_path):
    from tests.support.binary import binary_bytes

    garbage = tmp_path / "garbage.nq"
    garbage.write_bytes(binary_bytes(3))
    with pytest.raises(DataError) as info:
        engine.add_streams({"http://e/obs": SAMPLES / "observations.trig", "http://e/bin": garbage})
    assert str(info.value).startswith(f"{garbage}: no valid stream element (3 rejected; first: ")
    assert engine.streams == {}


# ------------------------------------------------------------------------------------------------ replay warnings


@pytest.fixture(scope="module")
def sample(spark):
    """The README's sample: sensor_average.rq over observations.trig and sensors.ttl."""
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        eng.load(SAMPLES / "sensors.ttl", graph=SENSORS)
        eng.add_stream(OBS, SAMPLES / "observations.trig")
        yield eng, (SAMPLES / "sensor_average.rq").read_text()


def averages(outputs) -> list:
    return [(r.time, [(row["sensor"].value.rsplit("/", 1)[1], row["avg"].lexical) for row in r.rows])
            for r in outputs]


def test_the_sample_warns_that_its_last_window_is_still_open(sample, logs):
    engine, query = sample
    out = engine.replay(query)
    assert len(out) == 15 and out[-1].time == "2026-03-01T13:14:00Z"
    assert records(logs, "rspark.replay") == [
        ("rspark.replay", logging.INFO, "http://example.org/out: 15 evaluation instants, 2026-03-01T13:00:00Z to "
                                        "2026-03-01T13:14:00Z"),
        ("rspark.replay", logging.WARNING, "http://example.org/out: the last element of <http://example.org/obs> "
                                           "(at 2026-03-01T13:14:30Z) is after the last evaluation instant "
                                           f"2026-03-01T13:14:00Z: {STILL_OPEN}"),
    ]


def test_until_end_reports_the_sample_s_last_window(sample, logs):
    engine, query = sample
    default = averages(engine.replay(query))
    logs.clear()
    closed = averages(engine.replay(query, until="end"))
    # the window (13:05, 13:15] holding the last readings (13:14:30) closes at 13:15: one record more (ISTREAM: the
    # three sensors' new averages over it)
    assert closed == default + [("2026-03-01T13:15:00Z", [("s3", "30.631578947368421052"),
                                                           ("s2", "25.578947368421052631"),
                                                           ("s1", "21.421052631578947368")])]
    assert len(closed) == 16
    assert records(logs, "rspark.replay") == [
        ("rspark.replay", logging.INFO, "http://example.org/out: 16 evaluation instants, 2026-03-01T13:00:00Z to "
                                        "2026-03-01T13:15:00Z")]
    assert averages(engine.replay_iter(query, until="END")) == closed


def test_an_explicit_until_does_not_warn(sample, logs):
    engine, query = sample
    assert len(engine.replay(query, until="2026-03-01T13:05:00Z")) == 6
    assert records(logs, "rspark.replay", logging.WARNING) == []


def test_numeric_times_over_a_date_time_stream_warn_once(sample, logs):
    engine, query = sample
    out = engine.replay(query, times=["1000", 2000])
    assert [r.time for r in out] == ["1970-01-01T00:00:01Z", "1970-01-01T00:00:02Z"]
    assert records(logs, "rspark.replay", logging.WARNING) == [
        ("rspark.replay", logging.WARNING, "numeric --times values over a date-time stream are read as epoch "
                                           "milliseconds: 1000 is 1970-01-01T00:00:01Z; write an ISO 8601 date-time "
                                           "(2026-03-01T13:00:00Z) to mean a date")]
    logs.clear()
    engine.replay(query, until=60000)
    assert records(logs, "rspark.replay", logging.WARNING) == [
        ("rspark.replay", logging.WARNING, "numeric --until values over a date-time stream are read as epoch "
                                           "milliseconds: 60000 is 1970-01-01T00:01:00Z; write an ISO 8601 date-time "
                                           "(2026-03-01T13:00:00Z) to mean a date")]


NUMERIC = "".join(f"<http://e/g{i}> {{ <http://e/s{i}> <http://e/p> {i} . }}\n<http://e/g{i}> <{PROV}> {i} .\n"
                  for i in range(1, 13))  # elements at 1, 2, ..., 12


@pytest.fixture(scope="module")
def numeric(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    path = tmp_path_factory.mktemp("numeric") / "num.trig"
    path.write_text(NUMERIC)
    with Engine(spark=spark) as eng:
        eng.add_stream("http://e/num", path)
        yield eng


def values(outputs) -> list:
    return [(r.time, sorted(int(row["v"].lexical) for row in r.rows)) for r in outputs]


Q_NUM = "PREFIX : <http://e/> SELECT ?v FROM NAMED WINDOW :w ON :num [{}] WHERE {{ WINDOW :w {{ ?s :p ?v }} }}"


def test_numeric_stream_until_end_and_the_open_window_warning(numeric, logs):
    q = Q_NUM.format("RANGE 5 SLIDE 5")
    assert values(numeric.replay(q)) == [(5, [1, 2, 3, 4, 5]), (10, [6, 7, 8, 9, 10])]
    assert records(logs, "rspark.replay", logging.WARNING) == [
        ("rspark.replay", logging.WARNING, "query: the last element of <http://e/num> (at 12) is after the last "
                                           f"evaluation instant 10: {STILL_OPEN}")]
    logs.clear()
    assert values(numeric.replay(q, until="end")) == [(5, [1, 2, 3, 4, 5]), (10, [6, 7, 8, 9, 10]), (15, [11, 12])]
    # content change (cqels): the last instant is the last element's already; nothing more to close, no warning
    assert values(numeric.replay(Q_NUM.format("RANGE 5 SLIDE 1"), profile="cqels", until="end"))[-1] == \
        (12, [12])
    assert values(numeric.replay(Q_NUM.format("RANGE 5 SLIDE 1"), profile="cqels"))[-1] == (12, [12])
    assert records(logs, "rspark.replay", logging.WARNING) == []


def test_rspql_star_until_end_reports_after_the_strict_close(numeric, logs):
    # [l, u) windows closing at 5 + 5i, evaluated every 5 ticks strictly after the close (RSP-QL* Def. 15): at 10
    # the window [0, 5); the window [10, 15) holding 11 and 12 closes at 15 and is first evaluated at the period
    # instant 20
    q = ("PREFIX : <http://e/> PREFIX prov: <http://www.w3.org/ns/prov#> SELECT ?v FROM NAMED WINDOW :w ON :num "
         "[RANGE 5 SLIDE 5] WHERE { WINDOW :w { GRAPH ?g { ?s :p ?v } } }")
    assert values(numeric.replay(q, profile="rspql-star")) == [(5, []), (10, [1, 2, 3, 4])]
    assert records(logs, "rspark.replay", logging.WARNING) == [
        ("rspark.replay", logging.WARNING, "query: the last element of <http://e/num> (at 12) is after the last "
                                           f"evaluation instant 10: {STILL_OPEN}")]
    assert values(numeric.replay(q, profile="rspql-star", until="end")) == [
        (5, []), (10, [1, 2, 3, 4]), (15, [5, 6, 7, 8, 9]), (20, [10, 11, 12])]


def test_a_slide_longer_than_the_range_is_a_warning(numeric, logs):
    q = Q_NUM.format("RANGE 2 SLIDE 5")
    assert values(numeric.replay(q)) == [(5, [4, 5]), (10, [9, 10])]
    assert records(logs, "rspark.replay", logging.WARNING)[0] == (
        "rspark.replay", logging.WARNING, "query: window <http://e/w> [RANGE 2 SLIDE 5] slides by more than its range: "
                                          "the elements between the end of one window and the start of the next are "
                                          "in no window")
    logs.clear()
    numeric.replay(Q_NUM.format("RANGE 5 SLIDE 5"), until=10)
    assert records(logs, "rspark.replay", logging.WARNING) == []


def test_a_plain_pattern_in_a_window_under_rspql_star_is_a_warning(numeric, logs):
    q = ("PREFIX : <http://e/> SELECT ?v FROM NAMED WINDOW :w ON :num [RANGE 5 SLIDE 5] "
         "WHERE { WINDOW :w { ?s :p ?v } }")
    assert values(numeric.replay(q, profile="rspql-star", until=10)) == [(5, []), (10, [])]  # matches nothing
    assert records(logs, "rspark.replay", logging.WARNING) == [
        ("rspark.replay", logging.WARNING, "query: under the rspql-star profile, WINDOW <http://e/w> { ... } matches "
                                           "its triple patterns against the window's default graph (the elements' "
                                           "timestamps and metadata), not the elements' graphs, so a pattern over "
                                           "the elements' data matches nothing: write WINDOW <http://e/w> "
                                           "{ GRAPH ?g { ... } } (docs/profiles.md, Window content)")]
    logs.clear()
    fine = ("PREFIX : <http://e/> PREFIX prov: <http://www.w3.org/ns/prov#> SELECT ?v FROM NAMED WINDOW :w ON :num "
            "[RANGE 5 SLIDE 5] WHERE { WINDOW :w { ?g prov:generatedAtTime ?t GRAPH ?g { ?s :p ?v } } }")
    assert values(numeric.replay(fine, profile="rspql-star", until=10)) == [(5, []), (10, [1, 2, 3, 4])]
    numeric.replay(q, until=10)  # the default profile: the window is a graph
    assert records(logs, "rspark.replay", logging.WARNING) == []


# ----------------------------------------------------------------------------------------- the closing instant


def test_closing_instants_of_each_report_policy():
    from rspark.rsp.profiles import CONTENT_CHANGE, NON_EMPTY, PERIODIC, WINDOW_CLOSE
    from rspark.rsp.report import closing_instant, end_instant
    from rspark.rsp.windows import CountWindow, LandmarkWindow, TimeWindow

    sliding = TimeWindow(range=10, slide=5)  # (c - 10, c], c = 5k
    assert closing_instant(sliding, {WINDOW_CLOSE}, 12) == 15  # the first of (5, 15] and (10, 20]
    assert closing_instant(sliding, {WINDOW_CLOSE, NON_EMPTY}, 15) == 15
    assert closing_instant(sliding, {PERIODIC}, 12, every=4) == 16  # the first period instant at or after 15
    assert closing_instant(sliding, {CONTENT_CHANGE}, 12) is None  # at 12 the window (0, 10] is evaluated
    assert closing_instant(TimeWindow(range=10, slide=1), {CONTENT_CHANGE}, 12) == 12
    star = TimeWindow(range=5, slide=5, bounds="[)", close_rule="<", windows_before_t0=False)  # [c - 5, c), c = 5 + 5i
    assert closing_instant(star, {WINDOW_CLOSE}, 12) == 16  # [10, 15) is evaluated strictly after 15
    assert closing_instant(star, {PERIODIC}, 12) == 20
    gap = TimeWindow(range=2, slide=10)  # (8, 10], (18, 20], ...: 5 is in none
    assert closing_instant(gap, {WINDOW_CLOSE}, 5) is None
    assert end_instant(gap, {WINDOW_CLOSE}, 5) == 5
    assert closing_instant(LandmarkWindow(0), {CONTENT_CHANGE}, 13) == 13
    assert closing_instant(CountWindow("ELEMENTS", 3), {PERIODIC}, 13, every=4) == 16
