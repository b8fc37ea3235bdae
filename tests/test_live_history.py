"""History and live in one stream (rspark.engine.live.history): a live stream that starts from its recorded past
gives the records of a replay over the history followed by the live elements, once per checkpoint."""

from __future__ import annotations

import pytest
from test_cli import fails_before_spark

from rspark.errors import InputError

EX = "http://example.org/"
PREFIXES = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
QUERY = """PREFIX : <http://example.org/>
SELECT (COUNT(*) AS ?n) (SUM(?v) AS ?total) FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2]
WHERE { WINDOW :w { ?s :v ?v } }"""


def _element(t: int) -> str:
    return f":g{t} {{ :s{t} :v {t} . }} :g{t} prov:generatedAtTime {t} .\n"


def _rows(records) -> list:
    return [(r.time, [(row["n"].lexical, row["total"].lexical) for row in r.rows]) for r in records]


def test_a_live_stream_starts_from_its_history_once(spark, tmp_path):
    """History 1..6, then 7..9 and 10..12 pushed live: the records equal a replay's over 1..12 (the windows at 8
    hold 5, 6 of the history and 7, 8 live). Restarted on its checkpoint with the same history, nothing is read
    again and nothing is reported again; another history, or a history for a stream that has elements, is an error
    naming the stream."""
    from rspark.engine.engine import Engine

    history = tmp_path / "history.trig"
    history.write_text(PREFIXES + "".join(_element(t) for t in range(1, 7)))
    everything = tmp_path / "all.trig"
    everything.write_text(PREFIXES + "".join(_element(t) for t in range(1, 13)))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", everything)
        expected = _rows(eng.replay(QUERY))
    assert expected[3] == (8, [("4", "26")])  # 5 + 6 + 7 + 8
    ckpt = str(tmp_path / "ckpt")
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        eng.live_stream(EX + "S", history=history)
        h = eng.register(QUERY, name="q")
        for batch in (range(7, 10), range(10, 13)):
            eng.push(EX + "S", PREFIXES + "".join(_element(t) for t in batch))
            assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        got = _rows(h.drain())
        assert eng.live_status()["streams"][EX + "S"]["elements"] == 12
        eng.live_stream(EX + "T")
        eng.push(EX + "T", PREFIXES + _element(1))
        with pytest.raises(InputError) as info:
            eng.live_stream(EX + "T", history=history)
        assert str(info.value).startswith("history of <http://example.org/T>: the stream already has elements")
    assert got == expected
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        eng.live_stream(EX + "S", history=history)
        h = eng.register(QUERY, name="q")
        assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        assert h.drain() == []
        assert eng.live_status()["streams"][EX + "S"]["elements"] == 12
        other = tmp_path / "other.trig"
        other.write_text(PREFIXES + _element(1))
        with pytest.raises(InputError) as info:
            eng.live_stream(EX + "S", history=other)
        assert "started it from" in str(info.value) and str(other) in str(info.value)


def test_the_command_lines_history_is_checked_before_spark(tmp_path):
    (tmp_path / "q.rq").write_text(QUERY)
    (tmp_path / "h.ttl").write_text(PREFIXES)
    run = ["run", str(tmp_path / "q.rq"), "--source", f"{EX}S={tmp_path}"]
    fails_before_spark([*run, "--history", f"{EX}T={tmp_path / 'h.ttl'}"],
                       r"rspark: error: --history http://example.org/T: no --source declares that stream")
    fails_before_spark([*run, "--history", f"{EX}S={tmp_path / 'h.ttl'}"],
                       r"rspark: error: --history http://example.org/S: a stream is a TriG or N-Quads file .*h.ttl")
    fails_before_spark([*run, "--history", f"{EX}S={tmp_path / 'none.trig'}"],
                       r"rspark: error: --history http://example.org/S: no such file: .*none.trig")
