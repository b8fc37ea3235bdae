"""Live mode (docs/live.md): records equal a replay's over the same elements, arriving in batches and out of order
within the allowed lateness; late elements counted and dead-lettered; malformed files quarantined while the stream
goes on; state and output that survive a restart; the sources (push, watched directory, TCP, paced replay); the
status counters."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rspark.errors import InputError
from rspark.model.time import DurationError

EX = "http://example.org/"
PREFIXES = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
# RSEP-QL, Figure 1 / Example 1: G1..G5 at 2, 4, 6, 8, 10
FIG1 = {
    2: ":G1 { :a1 :p :b1 . } :G1 prov:generatedAtTime 2 .",
    4: ":G2 { :a2 :p :b2 . } :G2 prov:generatedAtTime 4 .",
    6: ":G3 { :b1 :q :c1 . :b2 :q :c2 . } :G3 prov:generatedAtTime 6 .",
    8: ":G4 { :b2 :q :c2 . } :G4 prov:generatedAtTime 8 .",
    10: ":G5 { :a3 :p :b3 . :b1 :q :c1 . } :G5 prov:generatedAtTime 10 .",
}
SEQ = """PREFIX : <http://example.org/>
SELECT ?x ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)
FROM NAMED WINDOW :w1 ON :S [LANDMARK 1]
FROM NAMED WINDOW :w2 ON :S [RANGE 5 SLIDE 1]
EVENT ON :w1 { ?x :p ?y } AS E1
EVENT ON :w2 { ?y :q ?z } AS E2
WHERE { MATCH { E1 SEQ E2 } }"""
COUNT = """PREFIX : <http://example.org/>
SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s ?p ?o } }"""
ISTREAM = """PREFIX : <http://example.org/>
SELECT ISTREAM ?s ?o FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s :q ?o } }"""
CONSUME = SEQ.replace("MATCH { E1 SEQ E2 }", "MATCH CONSUME CHRONOLOGICAL { E1 SEQ[CHRONOLOGICAL] E2 }")
QUERIES = {"seq": SEQ, "count": COUNT, "istream": ISTREAM, "consume": CONSUME}


def trig(*times) -> str:
    return PREFIXES + "\n".join(FIG1[t] for t in times) + "\n"


def rows(records) -> list:
    """(query, time, sorted rows as N-Triples terms) per record: an exact, order-independent form."""
    return [(r.query, r.time, sorted(tuple(sorted((k, v.n3()) for k, v in row.items())) for row in r.rows))
            for r in records]


@pytest.fixture
def engine(spark, tmp_path):
    from rspark.engine.engine import Engine

    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        yield eng


@pytest.fixture(scope="module")
def replayed(spark, tmp_path_factory) -> dict:
    """Each query's replay records over the whole of Figure 1 (the stream closed at its last element, as a live
    run that stops reports up to the last element it saw)."""
    from rspark.engine.engine import Engine

    path = tmp_path_factory.mktemp("fig1") / "fig1.trig"
    path.write_text(trig(2, 4, 6, 8, 10))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        return {name: rows(eng.replay(q, names=[name])) for name, q in QUERIES.items()}


def push(engine, *times, wait: bool = True) -> None:
    engine.push(EX + "S", trig(*times))
    if wait:
        assert engine.live.wait_idle(timeout=120)


@pytest.mark.parametrize("driver_ingest", [True, False], ids=["driver-read", "loader"])
def test_live_equals_replay_with_batches_out_of_order(engine, replayed, driver_ingest, request):
    """Elements arrive in four batches, one of them out of order (4 before 2), one behind the latest element by
    the allowed lateness (8 after 10, lateness 2): every record equals the replay's. The batches are read on the
    driver (rspark.engine.live.ingest), or all by the loader on the executors."""
    engine.live_stream(EX + "S", lateness=2)
    engine.live.driver_ingest = driver_ingest
    if not driver_ingest:
        request.getfixturevalue("executor_loads")
    handles = {name: engine.register(q, name=name) for name, q in QUERIES.items()}
    push(engine, 4, 2)
    push(engine, 6)
    early = {name: rows(h.drain()) for name, h in handles.items()}
    # the watermark is 6 - 2 = 4: the instants before 4 are reported, none after
    assert [t for _, t, _ in early["seq"]] == [2, 3]
    assert [t for _, t, _ in early["count"]] == [2]
    push(engine, 10)
    push(engine, 8)
    engine.live.close(flush=True)
    for name, h in handles.items():
        assert early[name] + rows(h.drain()) == replayed[name], name
    status = engine.live_status()
    assert status["streams"][EX + "S"]["elements"] == 5
    assert status["streams"][EX + "S"]["late"] == 0
    assert status["queries"]["count"]["lag"] == 0  # closed: reported up to the newest element, 10


def test_sinks_given_to_register_get_the_records_of_its_first_evaluation(engine, replayed, tmp_path):
    """A query registered after its stream's elements arrived is evaluated at once; the sinks given to register
    (a callable, a Sink) get those first records, as results() does; a callback subscribed afterwards does not."""
    from rspark.engine.live.sinks import FileSink

    engine.live_stream(EX + "S", lateness=0)
    push(engine, 2, 4, 6)
    called, later = [], []
    out = tmp_path / "count.jsonl"
    h = engine.register(COUNT, name="count", sinks=[called.append, FileSink(str(out), "jsonl")])
    h.subscribe(later.append)
    first = rows(h.drain())
    assert [t for _, t, _ in first] == [2, 4]  # the instants before the watermark, 6
    assert rows(called) == first == replayed["count"][:2]
    assert later == []
    assert [json.loads(line)["time"] for line in out.read_text().splitlines()] == [2, 4]
    with pytest.raises(TypeError, match=r"register\(sinks=\.\.\.\): a Sink or a callable, not str"):
        engine.register(COUNT, name="other", sinks=["out.jsonl"])


def test_the_reported_instant_is_evaluated_again_only_as_istreams_reference(engine, replayed, monkeypatch):
    """A micro-batch evaluates the instants due since the last one reported; ISTREAM (and DSTREAM) compare each
    instant with the previous one, so the reported instant is evaluated again with them, while RSTREAM answers each
    instant alone and leaves it out. The records equal the replay's either way."""
    from rspark.engine.live import evaluation

    evaluated = []
    real = evaluation.evaluate

    def spy(spark, plan, label, streams, static, instants, profile, carried=None):
        out = real(spark, plan, label, streams, static, instants, profile, carried)
        evaluated.append((label, instants.after, list(out.instants)))
        return out

    monkeypatch.setattr(evaluation, "evaluate", spy)
    engine.live_stream(EX + "S", lateness=0)
    handles = {name: engine.register(QUERIES[name], name=name) for name in ("count", "istream")}
    push(engine, 2, 4, 6)  # the instants before the watermark 6: 2 and 4
    evaluated.clear()
    push(engine, 8, 10)  # then 6 and 8
    assert sorted(evaluated) == [("count", 4, [6, 8]), ("istream", 4, [4, 6, 8])]
    engine.live.close(flush=True)
    for name, h in handles.items():
        assert rows(h.drain()) == replayed[name], name


def test_a_live_evaluation_reads_the_quads_of_its_patterns_predicates(engine, replayed, monkeypatch):
    """Window patterns and event patterns with constant predicates read the buffer's quads of those predicates
    (selected by Arrow on the driver), never the whole buffer; a pattern with a variable predicate reads it all.
    The records are the replay's."""
    from rspark.engine.live.buffer import LiveBuffer

    asked = []
    real = LiveBuffer.table

    def spy(self, name, segments=None, **kw):
        if name == "quads" and segments is None:
            asked.append(kw.get("predicates"))
        return real(self, name, segments, **kw)

    monkeypatch.setattr(LiveBuffer, "table", spy)
    engine.live_stream(EX + "S", lateness=0)
    handles = {name: engine.register(QUERIES[name], name=name) for name in ("seq", "istream")}
    push(engine, 2, 4, 6, 8, 10)
    engine.live.close(flush=True)
    assert set(asked) == {frozenset({f"<{EX}p>"}), frozenset({f"<{EX}q>"})}, asked
    for name, h in handles.items():
        assert rows(h.drain()) == replayed[name], name
    asked.clear()
    engine.register(COUNT, name="count").refresh()  # ?s ?p ?o: every quad
    assert None in asked


def test_a_time_windows_live_evaluation_does_not_give_the_buffers_elements_to_spark(engine, replayed, monkeypatch):
    """A time window's content is its quads selected by timestamp and its instants are found on the driver: the
    buffer's elements table is never made into a DataFrame (a local relation of the whole buffer) for it. The
    records are the replay's."""
    from rspark.engine.live.buffer import LiveBuffer

    asked = []
    real = LiveBuffer.table

    def spy(self, name, segments=None, **kw):
        if segments is None:
            asked.append(name)
        return real(self, name, segments, **kw)

    monkeypatch.setattr(LiveBuffer, "table", spy)
    engine.live_stream(EX + "S", lateness=0)
    h = engine.register(QUERIES["istream"], name="istream")
    push(engine, 2, 4)
    push(engine, 6, 8)
    push(engine, 10)
    engine.live.close(flush=True)
    assert "quads" in asked and "elements" not in asked, asked
    assert rows(h.drain()) == replayed["istream"]


def test_late_elements_are_counted_and_dead_lettered(engine, replayed, tmp_path, caplog):
    import hashlib

    engine.live_stream(EX + "S", lateness=0)
    h = engine.register(COUNT, name="count")
    push(engine, 2, 4, 6, 10)  # the instants before 10 are reported
    with caplog.at_level("WARNING", logger="rspark.live"):
        push(engine, 8)  # G4 at 8 would have changed the instants 8 and 10: late
    status = engine.live_status()["streams"][EX + "S"]
    assert (status["elements"], status["late"]) == (4, 1)
    assert h.status()["late"] == 1
    # CHECKPOINT/late/<the IRI without its scheme, '_' for '/' ...>-<8 hex digits of its SHA-1>/ (docs/live.md)
    late_dir = Path(status["inbox"]).parents[2] / "late"
    stream_dir = late_dir / f"example.org_S-{hashlib.sha1((EX + 'S').encode()).hexdigest()[:8]}"
    assert [p.name for p in late_dir.iterdir()] == [stream_dir.name]
    [dead] = list(stream_dir.glob("*.nq"))
    [warning] = [r.getMessage() for r in caplog.records if "late element" in r.getMessage()]
    assert f"written to {dead}:" in warning
    assert sorted(dead.read_text().splitlines()) == [
        '<http://example.org/G4> <http://www.w3.org/ns/prov#generatedAtTime> '
        '"8"^^<http://www.w3.org/2001/XMLSchema#integer> .',
        "<http://example.org/b2> <http://example.org/q> <http://example.org/c2> <http://example.org/G4> .",
    ]
    engine.live.close(flush=True)
    got = rows(h.drain())
    assert [t for _, t, _ in got] == [2, 4, 6, 8, 10]
    assert got[3][2] == [(("n", '"2"^^<http://www.w3.org/2001/XMLSchema#integer>'),)]  # (4, 8] without G4


def test_a_malformed_file_is_quarantined_and_the_stream_goes_on(engine):
    engine.live_stream(EX + "S")
    h = engine.register(COUNT, name="count")
    engine.push(EX + "S", PREFIXES + ":G1 { :a1 :p :b1 . } :G1 prov:generatedAtTime 2 .\n"
                ":G2 { :a2 :p } :G2 prov:generatedAtTime 4 .\n")
    assert engine.live.wait_idle(timeout=120)
    push(engine, 6)
    status = engine.live_status()["streams"][EX + "S"]
    assert status["quarantined"] == 1 and status["rejected"] >= 1
    [message] = [str(e) for e in engine.live.errors]
    assert message.endswith(".trig:4:14: } is not a valid RDF object (element <http://example.org/G2>)")
    quarantine = Path(status["inbox"]).parents[2] / "quarantine"
    assert len(list(quarantine.rglob("*.errors.txt"))) == 1
    assert [p.name.rsplit("-", 1)[0] for p in quarantine.iterdir()] == ["example.org_S"]  # as late/ (docs/live.md)
    engine.live.close(flush=True)
    assert [(t, r) for _, t, r in rows(h.drain())] == [
        (2, [(("n", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'),)]),
        (4, [(("n", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'),)]),  # (0, 4]: G1 (G2 was rejected)
        (6, [(("n", '"2"^^<http://www.w3.org/2001/XMLSchema#integer>'),)]),  # (2, 6]: G3's two triples
    ]


def test_a_restart_with_the_checkpoint_resumes_without_loss_or_duplicates(spark, tmp_path, replayed):
    """The first run stops without reporting what is not yet due; the second, on the same checkpoint and output
    file, goes on from there: the file holds each record of the replay once, for a window query and a query that
    consumes events (its consumption state depends on every earlier instant)."""
    from rspark.engine.engine import Engine

    ckpt = str(tmp_path / "ckpt")
    out = {name: tmp_path / f"{name}.jsonl" for name in ("count", "consume")}
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        for name in out:
            eng.register(QUERIES[name], name=name).write_to(str(out[name]))
        push(eng, 2, 4)
        push(eng, 6)
        eng.live.close(flush=False)
    first = {name: len(path.read_text().splitlines()) for name, path in out.items()}
    assert first == {"count": 2, "consume": 4}  # the instants before 6: 2, 4 and 2, 3, 4, 5
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        for name in out:
            eng.register(QUERIES[name], name=name).write_to(str(out[name]))
        push(eng, 8, 10)
        eng.live.close(flush=True)
    for name, path in out.items():
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert [(r["query"], r["time"]) for r in records] == [(q, t) for q, t, _ in replayed[name]], name


def test_records_of_the_evaluation_at_registration_are_not_delivered_again_after_a_restart(spark, tmp_path,
                                                                                               replayed):
    """A query registered after its stream's elements arrived is evaluated at once (outside any micro-batch): the
    state is saved then, so that a restart with no micro-batch in between goes on after those records instead of
    delivering them again."""
    from rspark.engine.engine import Engine

    ckpt = str(tmp_path / "ckpt")
    got = []
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        eng.live_stream(EX + "S")
        push(eng, 2, 4, 6)
        h = eng.register(COUNT, name="count")  # instants 2 and 4 are due: reported by the registration
        got += rows(h.drain())
        eng.live.close(flush=False)
    assert [t for _, t, _ in got] == [2, 4]
    with Engine(spark=spark, checkpoint=ckpt) as eng:
        h = eng.register(COUNT, name="count")
        push(eng, 8, 10)
        eng.live.close(flush=True)
        got += rows(h.drain())
    assert got == replayed["count"]


def test_the_inbox_is_a_replayable_log(spark, tmp_path, replayed):
    """Pushed files stay in the inbox until the micro-batch that read them is committed. A process that stopped
    before committing (the files still there, not named by the state) reads them again on a restart; one that
    stopped after saving the state but before deleting them (named by the state as the last batch applied) does
    not read them twice."""
    from rspark.engine.engine import Engine
    from rspark.engine.live.registry import write_inbox

    ckpt = tmp_path / "ckpt"
    out = tmp_path / "count.jsonl"
    with Engine(spark=spark, checkpoint=str(ckpt)) as eng:
        eng.register(COUNT, name="count").write_to(str(out))
        push(eng, 2, 4)
        st = eng.live.streams[EX + "S"]
        assert os.listdir(st.inbox) == []  # read and committed: deleted
        inbox, batches = st.inbox, dict(st.batches)
        eng.live.close(flush=False)
    state = json.loads((ckpt / "state.json").read_text())
    assert state["streams"][EX + "S"]["batches"] == batches == {"inbox": 0}
    # a crash after the state named batch 0's files, before they were deleted: they are back in the inbox
    applied = state["streams"][EX + "S"]["inbox_applied"]
    assert len(applied) == 1
    (Path(inbox) / applied[0]).write_text(trig(2, 4))
    # ... and a file written but never read (the process stopped before its micro-batch)
    write_inbox(inbox, trig(6), "trig")
    with Engine(spark=spark, checkpoint=str(ckpt)) as eng:
        eng.register(COUNT, name="count").write_to(str(out))
        assert eng.live.wait_idle(timeout=120)
        st = eng.live.streams[EX + "S"]
        assert st.counters["elements"] == 3  # G1, G2 once, then G3
        assert st.counters["late"] == 0 and st.batches == {"inbox": 1} and os.listdir(st.inbox) == []
        push(eng, 8, 10)
        eng.live.close(flush=True)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["query"], r["time"]) for r in records] == [(q, t) for q, t, _ in replayed["count"]]


def test_an_inbox_batch_counts_its_latency_from_its_first_files_writing(engine):
    """A micro-batch's records are late by the time from the writing of its earliest inbox file (its name holds
    it), not from the start of the micro-batch: a file that waited while the runner was busy (here: its lock held,
    as a running micro-batch holds it) counts its wait."""
    h = engine.register(COUNT, name="count")
    push(engine, 2)
    seen = []
    on_batch = engine.live.on_batch

    def spy(*args, **kwargs):
        seen.append(kwargs.get("arrived"))
        return on_batch(*args, **kwargs)

    engine.live.on_batch = spy
    with engine.live.lock:  # the reader takes the file and waits for the lock
        path = engine.live.push(EX + "S", trig(4, 6))
        deadline = time.time() + 60
        while not seen and time.time() < deadline:
            time.sleep(0.01)
        released = time.time()
    assert engine.live.wait_idle(timeout=120)
    written = int(os.path.basename(path).split("-")[0]) / 1e9
    assert seen == [written]
    assert [r.time for r in h.drain()] == [2, 4]
    # both records of that batch (instants 2 and 4, due once 6 arrived) count from the file's writing
    latencies = engine.live.queries["count"].latencies
    assert len(latencies) == 2 and min(latencies) >= released - written


def test_pushed_files_are_read_as_they_are_written(engine, replayed, monkeypatch):
    """An inbox file this process writes is read on the driver as soon as it is written, in the runner's reading
    thread, while the micro-batch before still runs (here: the runner's lock held, as a running micro-batch holds
    it); the micro-batch then takes those readings, and the records equal the replay's."""
    from rspark.engine.live import runner as live_runner

    threads: list = []
    real = live_runner.read_small

    def spy(path, predicate, **kwargs):
        threads.append(threading.current_thread().name)
        return real(path, predicate, **kwargs)

    monkeypatch.setattr(live_runner, "read_small", spy)
    engine.live_stream(EX + "S")
    h = engine.register(COUNT, name="count")
    with engine.live.lock:
        push(engine, 2, 4, wait=False)
        push(engine, 6, 8, 10, wait=False)
        deadline = time.time() + 60
        while len(threads) < 2 and time.time() < deadline:
            time.sleep(0.01)
        assert len(threads) == 2 and all(name.startswith("rspark-read") for name in threads)
    assert engine.live.wait_idle(timeout=120)
    engine.live.close(flush=True)
    assert len(threads) == 2  # not read again by the micro-batch
    assert rows(h.drain()) == replayed["count"]


def test_a_reading_registered_after_its_file_was_taken_is_dropped(engine):
    """A reading of an inbox file that was registered after a micro-batch had taken the file (its name sorts before
    a later batch's files) is dropped by that later batch, not kept for ever."""
    from concurrent.futures import Future

    engine.live_stream(EX + "S")
    st = engine.live.streams[EX + "S"]
    stale: Future = Future()
    stale.set_result(None)
    st.prefetched["00000000000000000001-1-00001.nq"] = (st.timestamp_predicate, stale)
    push(engine, 2)
    assert st.prefetched == {}


def test_written_at_reads_the_earliest_inbox_name_and_not_before_the_start():
    from rspark.engine.live.inbox import written_at

    names = ["01700000000500000000-12-00001.nq", "01700000000200000000-12-00002-m1.trig"]  # write_inbox's names
    assert written_at(names, 0.0) == 1700000000.2
    assert written_at(names, 1700000000.3) == 1700000000.3  # a file left from before the reader started
    assert written_at(["a.nq", "12-3.nq"], 0.0) is None


def test_a_watched_directory(engine, tmp_path, replayed):
    inbox = tmp_path / "in"
    inbox.mkdir()
    engine.watch(EX + "S", inbox)
    h = engine.register(SEQ, name="seq")
    for i, times in enumerate([(2, 4), (6, 8), (10,)]):
        tmp = tmp_path / f"part{i}.trig"
        tmp.write_text(trig(*times))
        os.replace(tmp, inbox / tmp.name)
        assert engine.live.wait_idle(timeout=120)
    engine.live.close(flush=True)
    assert rows(h.drain()) == replayed["seq"]


def test_files_arriving_together_load_as_one_batch(engine, tmp_path, replayed):
    """Files that arrive within one trigger are loaded together; a file's problems still name that file, and a file
    that does not parse is loaded alone (its good elements kept)."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "a.trig").write_text(trig(2, 4))
    stamp = '"6"^^<http://www.w3.org/2001/XMLSchema#integer>'
    (staged / "b.nq").write_text(
        f"<{EX}b1> <{EX}q> <{EX}c1> <{EX}G3> .\n<{EX}b2> <{EX}q> <{EX}c2> <{EX}G3> .\n"
        f"<{EX}G3> <http://www.w3.org/ns/prov#generatedAtTime> {stamp} .\n"
        f"<{EX}x> <{EX}p> <{EX}y> <{EX}G9> .\n")  # G9 has no timestamp
    (staged / "c.trig").write_text(trig(8, 10) + ":G7 { :a :p }\n")
    h = engine.register(SEQ, name="seq")
    engine.watch(EX + "S", inbox)
    for name in ("a.trig", "b.nq", "c.trig"):
        os.replace(staged / name, inbox / name)
    assert engine.live.wait_idle(timeout=120)
    engine.live.close(flush=True)
    assert rows(h.drain()) == replayed["seq"]
    messages = sorted(str(e) for e in engine.live.errors)
    assert len(messages) == 2
    assert messages[0].startswith(str(inbox / "b.nq") + ": ") and "G9" in messages[0]
    assert messages[1].startswith(str(inbox / "c.trig") + ":5:")


def test_a_tcp_source(engine, replayed):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    lines = []
    for t in sorted(FIG1):
        g = f"<{EX}G{t // 2}>"
        stamp = f'"{t}"^^<http://www.w3.org/2001/XMLSchema#integer>'
        lines.append(f"{g} <http://www.w3.org/ns/prov#generatedAtTime> {stamp} .")
    body = {2: [("a1", "p", "b1")], 4: [("a2", "p", "b2")], 6: [("b1", "q", "c1"), ("b2", "q", "c2")],
            8: [("b2", "q", "c2")], 10: [("a3", "p", "b3"), ("b1", "q", "c1")]}
    for t, triples in body.items():
        for s, p, o in triples:
            lines.append(f"<{EX}{s}> <{EX}{p}> <{EX}{o}> <{EX}G{t // 2}> .")
    sent = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(("\n".join(lines) + "\n").encode())
            sent.set()
            time.sleep(5)  # keep the connection open while Spark reads

    threading.Thread(target=serve, daemon=True).start()
    h = engine.register(COUNT, name="count")
    engine.source(EX + "S", f"tcp://127.0.0.1:{port}")
    assert sent.wait(60)
    deadline = time.time() + 120
    while engine.live_status()["streams"][EX + "S"]["elements"] < 5 and time.time() < deadline:
        time.sleep(0.2)
    assert engine.live.wait_idle(timeout=120)
    engine.live.close(flush=True)
    server.close()
    assert rows(h.drain()) == replayed["count"]


def test_a_paced_replay_source(engine, tmp_path, replayed):
    path = tmp_path / "fig1.trig"
    path.write_text(trig(2, 4, 6, 8, 10))
    h = engine.register(ISTREAM, name="istream")
    engine.source(EX + "S", f"replay:{path}@0.01")  # 2 units (ms) apart at 1/100 of the pace: 0.2 s
    [paced] = engine.live.paced
    deadline = time.time() + 60
    while not paced.done and time.time() < deadline:
        time.sleep(0.1)
    assert paced.done
    assert engine.live.wait_idle(timeout=120)
    engine.live.close(flush=True)
    assert rows(h.drain()) == replayed["istream"]


def test_arrival_time_stamps_elements_pushed_without_one(engine):
    engine.live_stream(EX + "A", arrival_time=True)
    before = time.time()
    engine.push(EX + "A", "<http://example.org/g1> { <http://example.org/s> <http://example.org/p> 1 . }\n")
    assert engine.live.wait_idle(timeout=120)
    status = engine.live_status()["streams"][EX + "A"]
    assert status["elements"] == 1
    from datetime import datetime

    stamp = datetime.fromisoformat(status["last"].replace("Z", "+00:00")).timestamp()
    assert before - 1 <= stamp <= time.time()


def test_without_arrival_time_an_element_without_timestamp_is_rejected(engine):
    engine.live_stream(EX + "B")
    engine.push(EX + "B", "<http://example.org/g1> { <http://example.org/s> <http://example.org/p> 1 . }\n")
    assert engine.live.wait_idle(timeout=120)
    status = engine.live_status()["streams"][EX + "B"]
    assert (status["elements"], status["rejected"]) == (0, 1)
    assert "no timestamp" in str(engine.live.errors[-1]) or "timestamp" in str(engine.live.errors[-1])


@pytest.mark.parametrize("spec, message", [
    ("tcp://localhost", "expected tcp://HOST:PORT"),
    ("tcp://localhost:99999", "expected tcp://HOST:PORT"),
    ("replay:/no/such/file.trig@2", "no such file"),
    ("replay:x.trig@fast", "must be a number"),
    ("/no/such/dir", "not a directory"),
])
def test_bad_sources(spec, message):
    from rspark.engine.live.sources import parse_source

    with pytest.raises(InputError, match=message):
        parse_source(spec)


def test_bad_lateness_is_refused(engine):
    with pytest.raises(InputError, match="negative"):
        engine.live_stream(EX + "S", lateness=-1)
    with pytest.raises(DurationError, match="duration"):
        engine.live_stream(EX + "T", lateness="PT5Q")


SOURCE_SPECS = (r"(tcp://[a-z0-9.:\[\]]{0,20}|replay:[^@]{0,15}@[0-9.e-]{0,6}"
                r"|kafka://[a-z0-9.:,\[\]]{0,12}/?[a-z ,]{0,6}(\?[a-zA-Z.=&]{0,20})?"
                r"|sses?://[a-z0-9.:\[\]]{0,14}(/[a-z/]{0,8})?)")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=40), st.from_regex(SOURCE_SPECS, fullmatch=True)))
def test_source_specs_parse_or_fail_with_a_message(text):
    """Fuzz: every source spec is a directory, tcp://HOST:PORT with a valid port, replay:FILE@SPEED with a positive
    speed, kafka://HOST:PORT/TOPIC, or an InputError naming the spec."""
    from rspark.engine.live.sources import parse_source

    try:
        kind, args = parse_source(text)
    except InputError as exc:
        assert repr(text) in str(exc)
        return
    assert kind in ("dir", "tcp", "replay", "mqtt", "kafka", "sse")
    if kind == "kafka":
        assert args["servers"] and args["topic"] and args["format"] in ("auto", "trig", "nquads", "nq")
    if kind == "tcp":
        assert 0 < args["port"] < 65536
    if kind == "replay":
        assert args["speed"] > 0 and os.path.isfile(args["path"])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>{}.:_\"@ \n#abgpsx0123456789^/")), max_size=80))
def test_arrival_stamping_of_any_text_gives_nquads_or_a_located_error(text):
    """Fuzz: text pushed to a stream with arrival time is stamped N-Quads, or a DataError with its line."""
    import pyoxigraph as ox

    from rspark.engine.live.stamp import stamp_arrivals
    from rspark.errors import DataError

    try:
        out = stamp_arrivals(text, "trig", "http://www.w3.org/ns/prov#generatedAtTime", 1_800_000_000.0)
    except DataError as exc:
        assert str(exc).startswith("pushed data:")
        return
    quads = list(ox.parse(out.encode(), format=ox.RdfFormat.N_QUADS))
    graphs = {q.graph_name for q in quads if not isinstance(q.graph_name, ox.DefaultGraph)}
    stamped = {q.subject for q in quads if isinstance(q.graph_name, ox.DefaultGraph)
               and q.predicate.value == "http://www.w3.org/ns/prov#generatedAtTime"}
    assert graphs <= stamped


# ------------------------------------------------------------------------------------------------ every profile

def _generated(times) -> str:
    """A stream with one element per timestamp: sensor readings, two triples an element, some shared between
    elements (so ISTREAM / DSTREAM see triples come back)."""
    out = [PREFIXES]
    for t in times:
        out.append(f":E{t} {{ :s{t % 3} :v {t % 4} . :s{t % 3} :seen :x{t % 2} . }} :E{t} prov:generatedAtTime {t} .")
    return "\n".join(out) + "\n"


PROFILE_QUERIES = {
    "count": "SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s :v ?o } }",
    "every": ("REGISTER RSTREAM :out COMPUTED EVERY 3 AS SELECT ?s ?o FROM NAMED WINDOW :w ON :S [RANGE 5 SLIDE 5] "
              "WHERE { WINDOW :w { ?s :v ?o } }"),
    "landmark": "SELECT DISTINCT ?s ?x FROM NAMED WINDOW :w ON :S [LANDMARK 3] WHERE { WINDOW :w { ?s :seen ?x } }",
    "elements": "SELECT ?s ?o FROM NAMED WINDOW :w ON :S [RANGE ELEMENTS 3] WHERE { WINDOW :w { ?s :v ?o } }",
    "written": ("SELECT ?s ?o FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2 REPORT ON CONTENT CHANGE, NON EMPTY] "
                "WHERE { WINDOW :w { ?s :v ?o } }"),
}


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["csparql", "cqels", "rspql-star"])
def test_live_equals_replay_under_every_profile(spark, tmp_path, profile):
    """The report policies (window close + non-empty under csparql, content change + ISTREAM under cqels,
    periodic with [l, u) windows under rspql-star; the default profile's in the tests above; a REPORT clause's under
    each), over time, landmark and count windows: pushed in three batches (the second out of order), the live records
    are the replay's."""
    from rspark.engine.engine import Engine

    times = list(range(1, 13))
    path = tmp_path / "all.trig"
    path.write_text(_generated(times))
    queries = {name: "PREFIX : <http://example.org/>\n" + q for name, q in PROFILE_QUERIES.items()}
    with Engine(spark=spark, profile=profile) as eng:
        eng.add_stream(EX + "S", path)
        # the count window's records with the late elements 7 and 8 (the other queries' are not compared)
        last_three = rows(eng.replay(queries["elements"], names=["elements"]))
    with Engine(spark=spark, profile=profile, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "S")
        handles = {name: eng.register(q, name=name) for name, q in queries.items()}
        for batch in (times[:4], times[8:] + times[4:6], times[6:8]):
            eng.push(EX + "S", _generated(batch))
            assert eng.live.wait_idle(timeout=120)
        assert eng.live_status()["streams"][EX + "S"]["late"] == 2  # 7 and 8 came after the instants up to 11
        eng.live.close(flush=True)
        got = {name: rows(h.drain()) for name, h in handles.items()}
    # the late elements 7 and 8 are not in the live stream: compare with a replay without them
    path.write_text(_generated(times[:6] + times[8:]))
    with Engine(spark=spark, profile=profile) as eng:
        eng.add_stream(EX + "S", path)
        without = {name: rows(eng.replay(q, names=[name])) for name, q in queries.items()}
    for name in queries:
        assert got[name] == without[name], (profile, name)
    # the late elements mattered: to the last three elements, under every profile (landmark's and written's too)
    assert last_three != without["elements"]


@pytest.mark.parametrize("profile", ["default", "cqels"])
def test_a_query_network_runs_live(spark, tmp_path, profile):
    """A query that registers a stream feeds the query that reads it, live as in a replay (evaluated together),
    under the default report policy and under cqels's (content change: the consumer's instants follow what the
    producer wrote, which the producer's earlier records must still hold after each batch)."""
    from rspark.engine.engine import Engine

    producer = ("PREFIX : <http://example.org/>\nREGISTER STREAM :pairs AS CONSTRUCT { ?x :pair ?z } "
                "FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?x :p ?y . ?y :q ?z } }")
    consumer = ("PREFIX : <http://example.org/>\nSELECT (COUNT(*) AS ?n) "
                "FROM NAMED WINDOW :v ON :pairs [RANGE 4 SLIDE 2] WHERE { WINDOW :v { ?x :pair ?z } }")
    elements = {2: ":G1 { :a1 :p :b1 . :b1 :q :c1 . } :G1 prov:generatedAtTime 2 .",
                4: ":G2 { :a2 :p :b2 . } :G2 prov:generatedAtTime 4 .",
                6: ":G3 { :b2 :q :c2 . :a3 :p :b2 . } :G3 prov:generatedAtTime 6 .",
                8: ":G4 { :a1 :p :b1 . :b1 :q :c1 . } :G4 prov:generatedAtTime 8 .",
                10: ":G5 { :a4 :p :b4 . } :G5 prov:generatedAtTime 10 ."}
    path = tmp_path / "s.trig"
    path.write_text(PREFIXES + "\n".join(elements.values()) + "\n")
    with Engine(spark=spark, profile=profile) as eng:
        eng.add_stream(EX + "S", path)
        expected = rows(r for r in eng.replay([producer, consumer], names=["producer", "consumer"])
                        if r.query == "consumer")
    with Engine(spark=spark, profile=profile, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.register(producer, name="producer")
        h = eng.register(consumer, name="consumer")
        for batch in ((2, 4), (6,), (8, 10)):
            eng.push(EX + "S", PREFIXES + "\n".join(elements[t] for t in batch) + "\n")
            assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        got = rows(h.drain())
    if profile == "default":
        assert [t for _, t, _ in got] == [2, 4, 6, 8, 10]
    assert got and got == expected
