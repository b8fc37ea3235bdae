"""Live mode carries a consuming query's state from micro-batch to micro-batch (docs/live.md, "Queries that consume
events"): each run resumes every key's consumption state where the last one left it, so the records equal a
replay's, the buffer is pruned as for any time window, and the state, saved in the checkpoint, survives a restart."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rspark.cep import machine
from rspark.cep.carried import CarriedConsumption
from rspark.cep.machine import ConsumingEvaluator, forget_before
from rspark.service.metrics import metrics_text
from tests.test_cep_properties import E1, E2, Seq, as_ops

EX = "http://example.org/"
PREFIXES = "@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
QUERY = """PREFIX : <http://example.org/>
SELECT {r2s} ?x ?y ?z (getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)
FROM NAMED WINDOW :w1 ON :S [RANGE 8 SLIDE 2]
FROM NAMED WINDOW :w2 ON :S [RANGE 4 SLIDE 2]
EVENT ON :w1 {{ ?x :p ?y }} AS E1
EVENT ON :w2 {{ ?y :q ?z }} AS E2
WHERE {{ MATCH CONSUME {policy} {{ E1 SEQ[{policy}] E2 }} }}"""


def element(i: int, triples: list[str]) -> str:
    return f":G{i} {{ {' '.join(t + ' .' for t in triples)} }} :G{i} prov:generatedAtTime {i} ."


def stream(n: int, seed: int) -> dict[int, str]:
    """``n`` elements at 1..n, each with one or two triples :a :p :b / :b :q :c over few terms (so that events
    repeat, overlap and consume each other)."""
    rnd = random.Random(seed)
    out = {}
    for i in range(1, n + 1):
        triples = [f":a{rnd.randrange(3)} :p :b{rnd.randrange(2)}" if rnd.random() < 0.6 else
                   f":b{rnd.randrange(2)} :q :c{rnd.randrange(3)}" for _ in range(rnd.choice((1, 2)))]
        out[i] = element(i, triples)
    return out


def records(recs) -> list:
    """(time, sorted rows as SPARQL JSON bindings) per record: an exact, order-independent form."""
    return [plain(r.to_json()) for r in recs]


def plain(js: dict) -> tuple:
    """A record's JSON form (a line of the JSON-lines sink) as (time, sorted bindings)."""
    return js["time"], sorted(json.dumps(b, sort_keys=True) for b in js["results"]["bindings"])


def replayed(spark, tmp_path, elements: dict, query: str) -> list:
    from rspark.engine.engine import Engine

    path = tmp_path / "s.trig"
    path.write_text(PREFIXES + "\n".join(elements[t] for t in sorted(elements)) + "\n")
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        return records(eng.replay(query, names=["q"]))


def occurrences(q) -> list:
    return [occ for pairs in q.consumption["matches"].values() for _key, state in pairs for occ in state["consumed"]]


# ---------------------------------------------------------------------------------------------- the evaluator


def test_a_run_resumed_from_a_snapshot_equals_one_run():
    # instants 1..300 of a sliding window run at once, and in runs of 1 to 40 instants, each resuming from the
    # snapshot taken just before the last instant of the one before (which it evaluates again): the same events
    rnd = random.Random(7)
    mu = (("x", "a"),)

    def matches(i):
        out = []
        for j in (i - 2, i - 1, i):  # the window holds three instants' elements
            r = random.Random(j)
            if j > 0 and r.random() < 0.7:
                out.append((0, mu, 10 * j, 10 * j, frozenset({("w", f"A{j}", 10 * j, "s", "p", "o")})))
            if j > 0 and r.random() < 0.5:
                out.append((1, mu, 10 * j + 1, 10 * j + 1, frozenset({("w", f"B{j}", 10 * j + 1, "s", "q", "o")})))
        return out

    expr, beps = as_ops(Seq(E1, E2)), [as_ops(E1), as_ops(E2)]
    whole = ConsumingEvaluator(expr, beps)
    expected = [e for i in range(1, 301) for e in whole.step(i, matches(i))]
    assert len(expected) > 50
    got, start, snapshot = [], 1, None
    while True:
        end = min(300, start + rnd.randrange(1, 40))
        run = ConsumingEvaluator(expr, beps, hold=end)
        if snapshot is not None:
            run.resume(json.loads(json.dumps(snapshot)))  # through JSON, as the checkpoint keeps it
        found = [e for i in range(start, end + 1) for e in run.step(i, matches(i))]
        if snapshot is None:
            got += found
        else:  # the instant evaluated again gives what it gave before
            assert [e for e in found if e[0] == start] == [e for e in got if e[0] == start]
            got += [e for e in found if e[0] > start]
        if end == 300:
            break
        snapshot = run.held
        start = end  # the next run evaluates this run's last instant again
    assert got == expected


def test_forgetting_below_a_window_floor():
    state = {"consumed": [["w1", "G1", 1, "s", "p", "o"], ["w1", "G5", 5, "s", "p", "o"],
                          ["w2", "G1", 1, "s", "q", "o"]], "limit": 500, "instant": 6}
    assert forget_before(state, {"w1": 4, "w2": None}) == {
        "consumed": [["w1", "G5", 5, "s", "p", "o"], ["w2", "G1", 1, "s", "q", "o"]],
        "limit": machine._PRUNE_AT, "instant": 6}
    assert forget_before(state, {"w1": 6, "w2": 2}) is None
    carried = CarriedConsumption({"0": [[["k1"], state], [["k2"], state]]}, floors={"w1": 4, "w2": 2})
    carried.update(0, {("k2",): {"consumed": [["w1", "G7", 7, "s", "p", "o"]], "limit": 64, "instant": 8}})
    assert carried.states == {"0": [[["k1"], {"consumed": [["w1", "G5", 5, "s", "p", "o"]], "limit": 64,
                                              "instant": 6}],
                                    [["k2"], {"consumed": [["w1", "G7", 7, "s", "p", "o"]], "limit": 64,
                                              "instant": 8}]]}


# ---------------------------------------------------------------------------------------------- live mode


@pytest.mark.parametrize("policy, r2s", [("CHRONOLOGICAL", ""), ("RECENT", "ISTREAM")])
def test_live_consumption_equals_replay_prunes_its_buffer_and_survives_a_restart(spark, tmp_path, policy, r2s):
    """40 elements in batches of 1 to 6, a restart after the first half: the file holds the replay's records
    exactly; the buffer was pruned (it no longer holds the first elements); the carried state holds only
    occurrences a later window can still hold."""
    from rspark.engine.engine import Engine

    query = QUERY.format(policy=policy, r2s=r2s)
    elements = stream(40, seed=3)
    expected = replayed(spark, tmp_path, elements, query)
    assert sum(len(rows) for _, rows in expected) >= 10
    times = sorted(elements)
    rnd = random.Random(5)
    batches = []
    while times:
        k = rnd.randrange(1, 7)
        batches.append(times[:k])
        times = times[k:]
    half = len(batches) // 2
    out = tmp_path / "q.jsonl"
    ckpt = str(tmp_path / "ckpt")
    lows, states = [], []
    for part, flush in ((batches[:half], False), (batches[half:], True)):
        with Engine(spark=spark, checkpoint=ckpt) as eng:
            q = eng.register(query, name="q")
            q.write_to(str(out))
            live = eng.live.queries["q"]
            for batch in part:
                eng.push(EX + "S", PREFIXES + "\n".join(elements[t] for t in batch) + "\n")
                assert eng.live.wait_idle(timeout=120)
                lows.append(eng.live.streams[EX + "S"].buffer.low)
                status = eng.live_status()
                assert status["streams"][EX + "S"]["held_from"] == lows[-1]
                assert status["queries"]["q"]["consumed"] == len(occurrences(live))
                if live.last is not None:
                    floor = float(live.last) - 10  # the last instant reported less w1's range and slide
                    assert all(occ[2] >= floor for occ in occurrences(live)), live.consumption
                    states.append(len(occurrences(live)))
            metrics = metrics_text(SimpleNamespace(live=eng.live, streams={}, sse_clients=0, requests=0, refused=0))
            assert f'rspark_query_consumed_occurrences{{query="q"}} {len(occurrences(live))}' in metrics.splitlines()
            eng.live.close(flush=flush)
    assert [plain(json.loads(line)) for line in out.read_text().splitlines()] == expected
    assert lows[-1] is not None and lows[-1] >= 20  # the first half of the stream is gone from the buffer
    assert max(states) > 0  # a state was carried


FEEDER = """PREFIX : <http://example.org/>
REGISTER STREAM :found AS CONSTRUCT {r2s} {{ ?x :found ?z }}
FROM NAMED WINDOW :w1 ON :S [RANGE 8 SLIDE 2]
FROM NAMED WINDOW :w2 ON :S [RANGE 4 SLIDE 2]
EVENT ON :w1 {{ ?x :p ?y }} AS E1
EVENT ON :w2 {{ ?y :q ?z }} AS E2
WHERE {{ MATCH CONSUME CHRONOLOGICAL {{ E1 SEQ[CHRONOLOGICAL] E2 }} }}"""
READER = """PREFIX : <http://example.org/>
SELECT ?x ?z (COUNT(*) AS ?n) FROM NAMED WINDOW :v ON :found [RANGE 6 SLIDE 2]
WHERE { WINDOW :v { ?x :found ?z } } GROUP BY ?x ?z"""


def test_a_consuming_query_feeding_another_carries_its_state(spark, tmp_path):
    """A consuming query whose output stream another query reads: each run resumes its state from just before the
    earliest records the reader may still read (evaluated again: that stream's content), so its input buffer is
    pruned, and both queries' records equal a replay's, across a restart. Under ISTREAM, whose records need the
    instant before them evaluated too. (Its state taken before the run's last instant instead, the reader misses
    records: checked.)"""
    from rspark.engine.engine import Engine

    feeder = FEEDER.format(r2s="ISTREAM")
    elements = stream(40, seed=3)
    path = tmp_path / "s.trig"
    path.write_text(PREFIXES + "\n".join(elements[t] for t in sorted(elements)) + "\n")
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        replay = list(eng.replay([feeder, READER], names=["feeder", "reader"]))
    expected_reader = records(r for r in replay if r.query == "reader")
    expected_feeder = [(r.time, sorted(map(str, r.triples))) for r in replay if r.query == EX + "found"]
    assert sum(len(rows) for _, rows in expected_reader) >= 10 and sum(len(t) for _, t in expected_feeder) >= 10
    times, rnd, batches = sorted(elements), random.Random(11), []
    while times:
        k = rnd.randrange(1, 7)
        batches.append(times[:k])
        times = times[k:]
    half = len(batches) // 2
    ckpt = str(tmp_path / "ckpt")
    got_reader, got_feeder, resumed = [], [], []
    for part, flush in ((batches[:half], False), (batches[half:], True)):
        with Engine(spark=spark, checkpoint=ckpt) as eng:
            hf, hr = eng.register(feeder, name="feeder"), eng.register(READER, name="reader")
            q, reader = eng.live.queries["feeder"], eng.live.queries["reader"]
            for batch in part:
                before = reader.last  # what the reader had reported when the run began
                eng.push(EX + "S", PREFIXES + "\n".join(elements[t] for t in batch) + "\n")
                assert eng.live.wait_idle(timeout=120)
                if before is not None and q.horizon != before:
                    resumed.append((before, q.consumption["from"], eng.live.streams[EX + "S"].buffer.low))
            eng.live.close(flush=flush)
            got_reader += records(hr.drain())
            got_feeder += [(r.time, sorted(map(str, r.triples))) for r in hf.drain()]
    assert got_reader == expected_reader
    assert got_feeder == expected_feeder
    # the state is taken just before the last instant (every 2) below what the reader may still read when the
    # run begins: its last instant less its window's range and slide
    # run begins: its last instant less its window's range and slide; the buffer keeps what the feeder's windows
    # read from there on (its range and slide before it)
    assert len(resumed) >= 8 and all(start == max(2, before - 10) and low == max(1, start - 10)
                                     for before, start, low in resumed), resumed
    assert resumed[-1][2] >= 14


def test_a_consuming_query_feeding_a_landmark_window_keeps_its_stream(spark, tmp_path):
    """The reader's landmark window reads every record the feeding query ever gave: the state stays the one before
    the feeding query's first instant, which each run evaluates from, and its input buffer is kept whole; the
    reader's records equal the replay's."""
    from rspark.engine.engine import Engine

    feeder = FEEDER.format(r2s="ISTREAM")
    reader = READER.replace("[RANGE 6 SLIDE 2]", "[LANDMARK 0]")
    elements = stream(16, seed=4)
    path = tmp_path / "s.trig"
    path.write_text(PREFIXES + "\n".join(elements[t] for t in sorted(elements)) + "\n")
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        expected = records(r for r in eng.replay([feeder, reader], names=["feeder", "reader"]) if r.query == "reader")
    assert sum(len(rows) for _, rows in expected) >= 5
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.register(feeder, name="feeder")
        h = eng.register(reader, name="reader")
        for lo, hi in ((1, 5), (6, 11), (12, 16)):
            eng.push(EX + "S", PREFIXES + "\n".join(elements[t] for t in range(lo, hi + 1)) + "\n")
            assert eng.live.wait_idle(timeout=120)
            assert eng.live.queries["feeder"].consumption["from"] == 2  # its first instant
            assert eng.live.streams[EX + "S"].buffer.low == 1
        eng.live.close(flush=True)
        assert records(h.drain()) == expected


@settings(max_examples=5, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["CHRONOLOGICAL", "RECENT"]),
       cuts=st.lists(st.integers(1, 29), max_size=6, unique=True))
def test_live_consumption_in_any_batches_equals_replay(spark, tmp_path_factory, seed, policy, cuts):
    from rspark.engine.engine import Engine

    tmp = tmp_path_factory.mktemp("live-consume")
    query = QUERY.format(policy=policy, r2s="")
    elements = stream(30, seed)
    expected = replayed(spark, tmp, elements, query)
    bounds = [0, *sorted(cuts), 30]
    with Engine(spark=spark, checkpoint=str(tmp / "ckpt")) as eng:
        h = eng.register(query, name="q")
        for lo, hi in zip(bounds, bounds[1:]):
            eng.push(EX + "S", PREFIXES + "\n".join(elements[t] for t in range(lo + 1, hi + 1)) + "\n")
            assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        assert records(h.drain()) == expected


# ---------------------------------------------------------------------------------------------- a saved state

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
                     max_leaves=12)
_OCCURRENCE = st.one_of(st.tuples(st.text(max_size=3), st.text(max_size=3), st.integers(0, 20), st.text(max_size=3),
                                  st.text(max_size=3), st.text(max_size=3)).map(list), _JSON)
_STATE = st.one_of(st.fixed_dictionaries({"consumed": st.lists(_OCCURRENCE, max_size=3),
                                          "limit": st.integers(0, 100) | _JSON,
                                          "instant": st.none() | st.integers(0, 20)}), _JSON)
_VALID_OCCURRENCE = st.tuples(st.sampled_from(["w", "v"]), st.text(max_size=3), st.integers(0, 20),
                              st.text(max_size=3), st.text(max_size=3), st.text(max_size=3)).map(list)
_VALID = st.dictionaries(st.sampled_from(["0", "1"]), st.lists(st.tuples(
    st.lists(st.text(max_size=3), min_size=1, max_size=2),
    st.fixed_dictionaries({"consumed": st.lists(_VALID_OCCURRENCE, max_size=4), "limit": st.integers(0, 100),
                           "instant": st.none() | st.integers(0, 20)})).map(list), max_size=3), max_size=2)
_BROKEN = st.dictionaries(st.sampled_from(["0", "1", "x", "\u00b2"]), st.lists(
    st.tuples(st.lists(st.text(max_size=3), max_size=2) | _JSON, _STATE).map(list) | _JSON, max_size=3), max_size=2)
# valid states, and states with something wrong somewhere (most of them)
_SAVED = st.one_of(st.just({}), st.fixed_dictionaries({"scale": st.sampled_from([1, 10]), "matches": _VALID},
                                                     optional={"from": st.integers(0, 20)}),
                   st.fixed_dictionaries({"scale": st.sampled_from([1, 10]) | _JSON, "matches": _BROKEN | _VALID},
                                         optional={"from": st.integers(0, 20) | _JSON}),
                   _JSON)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_SAVED)
@example({"scale": 1, "matches": {"0": [[[["k"]], {"consumed": [], "limit": 64, "instant": None}]]}})  # a list key
@example({"scale": 1, "matches": {"\u00b2": []}})  # a digit int() refuses
def test_a_saved_state_is_read_or_refused_with_a_message(saved):
    from rspark.cep.carried import check_saved
    from rspark.errors import RsparkError

    try:
        check_saved(saved, "ckpt/state.json, query q")
    except RsparkError as exc:
        assert str(exc).startswith("ckpt/state.json, query q: the consumption state is not valid (")
        assert str(exc).endswith("); remove the query's entry to start it afresh")
        return
    # read at a scale 10 times finer (a finer timestamp arrived): ticks x 10; w's floor at 50 then
    carried = CarriedConsumption.load(saved, 10 * saved.get("scale", 1))
    assert carried.resume == (None if saved.get("from") is None else 10 * saved["from"])
    carried.floors = {"w": 50}
    for position, pairs in saved.get("matches", {}).items():
        by_key = {tuple(key): state for key, state in pairs}  # a key given twice: its last state
        for key, state in carried.keyed(int(position)).items():
            evaluator = ConsumingEvaluator(as_ops(Seq(E1, E2)), [as_ops(E1), as_ops(E2)]).resume(state)
            assert evaluator.consumed == {(w, el, 10 * ts, *spo) for w, el, ts, *spo in by_key[key]["consumed"]}
            assert evaluator.instant == (None if by_key[key]["instant"] is None else 10 * by_key[key]["instant"])
        carried.update(int(position), {})
        # what is left: the occurrences below w's floor forgotten, keys with nothing left dropped
        left = [occ for _key, state in carried.saved()["matches"][position] for occ in state["consumed"]]
        assert sorted(map(tuple, left)) == sorted((w, el, 10 * ts, *spo) for state in by_key.values()
                                                  for w, el, ts, *spo in state["consumed"] if w != "w" or ts >= 5)


def test_a_checkpoint_with_a_broken_consumption_state_is_refused_by_name(spark, tmp_path):
    from rspark.engine.engine import Engine
    from rspark.errors import RsparkError

    query = QUERY.format(policy="CHRONOLOGICAL", r2s="")
    ckpt = tmp_path / "ckpt"
    with Engine(spark=spark, checkpoint=str(ckpt)) as eng:
        eng.register(query, name="q")
        elements = stream(12, seed=1)
        eng.push(EX + "S", PREFIXES + "\n".join(elements.values()) + "\n")
        assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=False)
    saved = json.loads((ckpt / "state.json").read_text())
    assert saved["queries"]["q"]["last"] is not None and "consumption" in saved["queries"]["q"]
    saved["queries"]["q"]["consumption"]["matches"] = {
        "0": [[["k"], {"consumed": [["w", "G1", "2", "s", "p", "o"]], "limit": 64, "instant": 4}]]}
    (ckpt / "state.json").write_text(json.dumps(saved))
    with Engine(spark=spark, checkpoint=str(ckpt)) as eng:
        with pytest.raises(RsparkError) as info:
            eng.register(query, name="q")
        eng.live.close(flush=False)
    assert str(info.value) == (
        f"{ckpt / 'state.json'}, query q: the consumption state is not valid (MATCH 0, pair 0: an occurrence is "
        "[window, element, te, s, p, o], not ['w', 'G1', '2', 's', 'p', 'o']); remove the query's entry to start "
        "it afresh")


def test_a_finer_time_scale_arriving_later_rescales_the_carried_state(spark, tmp_path):
    """Integer timestamps first, then decimal ones (the stream's ticks become tenths) while the occurrences an event
    consumed are still in the windows: the carried state's timestamps and instants follow the new scale (else the
    event is found again at the next instants), and the records equal the replay's. (The events' mappings: their
    intervals, from getSTARTTIME(), are integers in the live records before the change, decimals in the replay.)"""
    from rspark.engine.engine import Engine

    query = QUERY.format(policy="CHRONOLOGICAL", r2s="").replace("(getSTARTTIME() AS ?t1) (getENDTIME() AS ?t2)", "")
    # the event at 2 is consumed there; the first run reports 2 and 4 and hands over the state before 4
    first = {1: element(1, [":a0 :p :b0"]), 2: element(2, [":b0 :q :c0"])}
    first.update({t: element(t, [":a1 :p :b1"]) for t in (3, 4, 5)})
    later = {t: element(int(t * 10), [":a1 :p :b1"]).replace(f"generatedAtTime {int(t * 10)} .",
                                                                f"generatedAtTime {t} .")
             for t in (5.5, 6.5, 7.5, 8.5)}
    elements = {**first, **later}
    expected = replayed(spark, tmp_path, elements, query)
    assert [t for t, rows in expected if rows] == [2]  # the event (E1 at 1, E2 at 2), consumed: found once
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        h = eng.register(query, name="q")
        for batch in (first, later):
            eng.push(EX + "S", PREFIXES + "\n".join(batch.values()) + "\n")
            assert eng.live.wait_idle(timeout=120)
            if batch is first:
                assert eng.live.queries["q"].last == 4 and occurrences(eng.live.queries["q"])
        assert eng.live.streams[EX + "S"].buffer.scale == 10
        # every carried timestamp in tenths: G1..G5 at 10..50, G55.. (5.5, ...) at 55, ...
        held = occurrences(eng.live.queries["q"])
        assert held and all(ts == (10 * n if n <= 5 else n) for _w, el, ts, *_ in held
                            for n in [int(el.rsplit("G", 1)[1].rstrip(">"))])
        assert eng.live.queries["q"].consumption["scale"] == 10
        eng.live.close(flush=True)
        assert records(h.drain()) == expected


def test_a_query_stopped_and_registered_again_starts_afresh(spark, tmp_path):
    """A query restored from the checkpoint, then stopped: registered again in the same process it starts afresh
    (its saved progress and consumption state are gone, from memory and from the checkpoint), not from the
    progress it had when the process started, which the pruned buffer no longer backs."""
    from rspark.engine.engine import Engine

    query = QUERY.format(policy="CHRONOLOGICAL", r2s="")
    elements = stream(24, seed=2)
    ckpt = tmp_path / "ckpt"
    with Engine(spark=spark, checkpoint=str(ckpt)) as eng:
        eng.register(query, name="q")
        eng.push(EX + "S", PREFIXES + "\n".join(elements[t] for t in range(1, 13)) + "\n")
        assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=False)
    with Engine(spark=spark, checkpoint=str(ckpt)) as eng:
        h = eng.register(query, name="q")
        assert eng.live.queries["q"].last == 10  # restored
        eng.push(EX + "S", PREFIXES + "\n".join(elements[t] for t in range(13, 25)) + "\n")
        assert eng.live.wait_idle(timeout=120)
        h.stop()
        assert "q" not in json.loads((ckpt / "state.json").read_text())["queries"]
        again = eng.register(query, name="q")  # evaluated at once over what the buffer holds
        q = eng.live.queries["q"]
        assert q.records == len(again.drain()) > 0  # its counters are this registration's alone
        eng.live.close(flush=False)
