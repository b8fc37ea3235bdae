"""Stream elements valid over an interval (W3C RSP CG, "RDF Stream Processing: Requirements and Design Principles",
RDF stream section: "start time, end time: when the data element was valid", and its ``:atInterval`` example):
the interval literal, how each window takes such an element (docs/streams.md), EP-SPARQL's operators over the
intervals, and what is refused."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from rspark.model.time import TimeKind
from rspark.model.timestamps import DateTimeError, parse_validity
from rspark.rsp.profiles import get_profile
from rspark.rsp.windows import CountWindow, IntervalWindow, LandmarkWindow, NowWindow, TimeWindow

EX = "http://example.org/"
P = "PREFIX : <http://example.org/>\n"
AT = EX + "atInterval"
XSD = "http://www.w3.org/2001/XMLSchema#"


# --------------------------------------------------------------------------------------------- the literal


@pytest.mark.parametrize("literal, expected", [
    ('"2016-03-01T13:00:00Z/2016-03-01T13:00:10Z"', (TimeKind.DATETIME, 1456837200000, 0, 1456837210000, 0)),
    (f'"2016-03-01T13:00:00Z/2016-03-01T13:00:10Z"^^<{XSD}string>',
     (TimeKind.DATETIME, 1456837200000, 0, 1456837210000, 0)),
    ('"2016-03-01T13:00:00Z/PT10S"', (TimeKind.DATETIME, 1456837200000, 0, 1456837210000, 0)),
    ('"PT1M/2016-03-01T13:01:00Z"', (TimeKind.DATETIME, 1456837200000, 0, 1456837260000, 0)),
    ('"2016-03-01T14:00:00+01:00/2016-03-01T13:00:00Z"', (TimeKind.DATETIME, 1456837200000, 0, 1456837200000, 0)),
    ('"3/7.5"', (TimeKind.NUMERIC, 3, 0, 75, 1)),
    ('"-2/2"', (TimeKind.NUMERIC, -2, 0, 2, 0)),
    (f'"5"^^<{XSD}integer>', (TimeKind.NUMERIC, 5, 0, None, 0)),
    (f'"2016-03-01T13:00:00Z"^^<{XSD}dateTime>', (TimeKind.DATETIME, 1456837200000, 0, None, 0)),
])
def test_interval_literals(literal, expected):
    assert parse_validity(literal) == expected


@pytest.mark.parametrize("literal, message", [
    ('"7/3"', 'the interval "7/3" ends before it starts'),
    ('"2016-03-01T13:00:10Z/2016-03-01T13:00:00Z"', "ends before it starts"),
    ('"1/2/3"', "more than one '/'"),
    ('"a/b"', "is not ISO 8601 start/end, start/duration or duration/end"),
    ('"2016-03-01T13:00:00Z/P1M"', "uses years or months"),
    ('"2016-03-01T13:00:00Z/PT0.0001S"', "finer than a millisecond"),
    ('"1/2"@en', "a language-tagged string"),
    (f'"1/2"^^<{XSD}integer>', "not a valid integer"),
])
def test_bad_interval_literals_are_named(literal, message):
    with pytest.raises(ValueError, match=None) as info:
        parse_validity(literal)
    assert message in str(info.value)


def test_the_documents_second_60_is_not_a_time():
    # the RSP CG document's third element ends at 13:00:60Z, which is no xsd:dateTime (seconds 0-59)
    with pytest.raises(DateTimeError) as info:
        parse_validity('"2016-03-01T13:00:50Z/2016-03-01T13:00:60Z"')
    assert "second 60 is out of range" in str(info.value) and "the interval" in str(info.value)


@given(st.integers(-10**6, 10**6), st.integers(0, 10**6))
def test_numeric_intervals_round_trip(start, length):
    kind, s, se, e, ee = parse_validity(f'"{start}/{start + length}"')
    assert (kind, s, se, e, ee) == (TimeKind.NUMERIC, start, 0, start + length, 0)


@given(st.text(max_size=30))
def test_the_parser_never_fails_otherwise_than_by_value_error(text):
    literal = '"' + text.replace("\\", "").replace('"', "") + '"'
    try:
        parse_validity(literal)
    except ValueError:
        pass


# ------------------------------------------------------------------------- the RSP CG document's example


SOCIAL = """@prefix : <http://example.org/> .
:g1 { :axel :isIn :RedRoom . :darko :isIn :RedRoom . }
:g1 :atInterval "2016-03-01T13:00:00Z/2016-03-01T13:00:10Z" .
:g2 { :axel :isIn :BlueRoom . }
:g2 :atInterval "2016-03-01T13:00:20Z/2016-03-01T13:00:40Z" .
:g3 { :minh :isIn :RedRoom . }
:g3 :atInterval "2016-03-01T13:00:50Z/2016-03-01T13:00:{end}Z" .
"""
WHO = P + """SELECT ?who ?room
FROM NAMED WINDOW :w ON :social [RANGE PT15S STEP PT15S]
WHERE { WINDOW :w { ?who :isIn ?room } }"""


def _rows(records, *names) -> list:
    def local(term):
        if term is None:
            return "-"
        return term.lexical if hasattr(term, "lexical") else term.n3().replace("<" + EX, ":").replace(">", "")
    return [(r.time, sorted(tuple(local(row.get(n)) for n in names) for row in r.rows)) for r in records]


@pytest.fixture(scope="module")
def social(spark, tmp_path_factory):
    from rspark.engine.engine import Engine

    path = tmp_path_factory.mktemp("intervals") / "social.trig"
    path.write_text(SOCIAL.replace("{end}", "60"))  # as the document writes it
    fixed = path.with_name("social-fixed.trig")
    fixed.write_text(SOCIAL.replace("{end}", "59"))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", fixed, timestamp_predicate=AT)
        yield eng, path


def test_rsp_cg_at_interval_stream_in_tumbling_windows(social):
    """The W3C RSP CG document's ``:atInterval`` stream in 15 s tumbling windows (o, c]: an element is in every
    window its interval meets. By hand: (12:59:45, 13:00:00] meets g1 [00, 10]; (00, 15] still meets g1 (it ends at
    10); (15, 30] and (30, 45] meet g2 [20, 40]; (45, 60] meets g3 [50, 59]."""
    eng, _ = social
    got = _rows(eng.replay(WHO, until="2016-03-01T13:01:00Z"), "who", "room")
    red_pair = [(":axel", ":RedRoom"), (":darko", ":RedRoom")]
    assert got == [
        ("2016-03-01T13:00:00Z", red_pair),
        ("2016-03-01T13:00:15Z", red_pair),
        ("2016-03-01T13:00:30Z", [(":axel", ":BlueRoom")]),
        ("2016-03-01T13:00:45Z", [(":axel", ":BlueRoom")]),
        ("2016-03-01T13:01:00Z", [(":minh", ":RedRoom")]),
    ]


def test_at_the_start_alone_under_interval_elements_start(social):
    """``interval_elements=start``: each element is the point at its start (g1 at 13:00:00, g2 at 20, g3 at 50)."""
    eng, _ = social
    profile = get_profile("default").with_settings(interval_elements="start")
    got = _rows(eng.replay(WHO, until="2016-03-01T13:01:00Z", profile=profile), "who", "room")
    assert got == [
        ("2016-03-01T13:00:00Z", [(":axel", ":RedRoom"), (":darko", ":RedRoom")]),
        ("2016-03-01T13:00:15Z", []),
        ("2016-03-01T13:00:30Z", [(":axel", ":BlueRoom")]),
        ("2016-03-01T13:00:45Z", []),
        ("2016-03-01T13:01:00Z", [(":minh", ":RedRoom")]),
    ]


def test_now_landmark_and_interval_windows_hold_what_is_valid(social):
    """[NOW] holds the elements valid at the instant; [FROM t1 TO t2] those whose interval meets [t1, min(t2, t)];
    a landmark every element started by t."""
    eng, _ = social
    times = ["2016-03-01T13:00:05Z", "2016-03-01T13:00:15Z", "2016-03-01T13:00:40Z", "2016-03-01T13:00:55Z"]
    now = P + "SELECT ?who FROM NAMED WINDOW :w ON :social [NOW] WHERE { WINDOW :w { ?who :isIn ?room } }"
    assert _rows(eng.replay(now, times=times), "who") == [
        (times[0], [(":axel",), (":darko",)]), (times[1], []), (times[2], [(":axel",)]), (times[3], [(":minh",)])]
    between = P + ("SELECT ?who FROM NAMED WINDOW :w ON :social [FROM 2016-03-01T13:00:12Z TO 2016-03-01T13:00:45Z] "
                   "WHERE { WINDOW :w { ?who :isIn ?room } }")
    assert _rows(eng.replay(between, times=times), "who") == [
        (times[0], []), (times[1], []), (times[2], [(":axel",)]), (times[3], [(":axel",)])]
    land = P + ("SELECT DISTINCT ?who FROM NAMED WINDOW :w ON :social [LANDMARK 2016-03-01T13:00:00Z] "
                "WHERE { WINDOW :w { ?who :isIn ?room } }")
    assert _rows(eng.replay(land, times=times[1:3]), "who") == [
        (times[1], [(":axel",), (":darko",)]), (times[2], [(":axel",), (":darko",)])]


def test_timestamp_gives_the_start_of_an_element_valid_over_an_interval(social):
    eng, _ = social
    q = P + """SELECT ?who ?t FROM NAMED WINDOW :w ON :social [RANGE PT15S STEP PT15S]
WHERE { WINDOW :w { ?who :isIn ?room BIND(timestamp(?who, :isIn, ?room) AS ?t) } }"""
    got = _rows(eng.replay(q, times=["2016-03-01T13:00:15Z", "2016-03-01T13:00:45Z"]), "who", "t")
    assert got == [("2016-03-01T13:00:15Z", [(":axel", "2016-03-01T13:00:00Z"), (":darko", "2016-03-01T13:00:00Z")]),
                   ("2016-03-01T13:00:45Z", [(":axel", "2016-03-01T13:00:20Z")])]


def test_the_documents_literal_is_rejected_with_its_place_and_the_rest_flows(spark, social):
    from rspark.engine.engine import Engine

    _, path = social
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "social", path, timestamp_predicate=AT)
        [err] = eng.errors
        assert (err.file, err.line, err.element) == (str(path), 7, "<http://example.org/g3>")
        assert "second 60 is out of range" in str(err)
        got = _rows(eng.replay(WHO, until="2016-03-01T13:00:45Z"), "who", "room")
        assert [t for t, _ in got] == ["2016-03-01T13:00:00Z", "2016-03-01T13:00:15Z", "2016-03-01T13:00:30Z",
                                       "2016-03-01T13:00:45Z"]


# ----------------------------------------------------------------------------- EP-SPARQL over intervals


MARKET = """@prefix : <http://example.org/> .
:a { :x :status :up . }
:a :t "1/4" .
:b { :x :status :down . }
:b :t "6/9" .
:c { :x :status :up . :x :load 3 . }
:c :t "8/12" .
:d { :x :status :down . }
:d :t 14 .
"""


def test_epsparql_operators_read_the_elements_intervals(spark, tmp_path):
    """EP-SPARQL (Sec. 3, 4.2) over elements valid over intervals: an element's triples occur over its interval.
    up [1, 4] SEQ down [6, 9] (4 < 6): the event [1, 9]; up [8, 12] SEQ down [6, 9]: no (8 is not after 9); up
    [1, 4] and up [8, 12] SEQ down [14, 14]: [1, 14] and [8, 14]. EQUALS pairs the two triples of :c, [8, 12]."""
    from rspark.engine.engine import Engine

    path = tmp_path / "market.trig"
    path.write_text(MARKET)
    seq = P + """SELECT (getSTARTTIME() AS ?start) (getENDTIME() AS ?end) (getDURATION() AS ?d)
FROM STREAM :m [LANDMARK 0]
WHERE { { ?x :status :up } SEQ { ?x :status :down } }"""
    equals = P + """SELECT ?n (getSTARTTIME() AS ?start) (getENDTIME() AS ?end)
FROM STREAM :m [LANDMARK 0]
WHERE { { ?x :status :up } EQUALS { ?x :load ?n } }"""
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "m", path, timestamp_predicate=EX + "t")
        assert not eng.errors
        got = _rows(eng.replay(seq, profile="epsparql-unrestricted"), "start", "end", "d")
        assert got == [(6, [("1", "9", "8")]), (14, [("1", "14", "13"), ("8", "14", "6")])]
        got = _rows(eng.replay(equals, profile="epsparql-unrestricted"), "n", "start", "end")
        assert got == [(8, [("3", "8", "12")])]


def test_rsep_ql_event_patterns_read_the_elements_intervals(spark, tmp_path):
    """RSEP-QL's basic event over an element valid over an interval is (mu, start, end) (Def. 7), and E1 SEQ E2
    takes E1's events that end before E2's event starts (eq. 7, EP-SPARQL's SeqJoin for intervals). By hand, in a
    [RANGE 20 STEP 1] window: at 6, up [1, 4] then down [6, 9]: [1, 9]; at 14 also up [1, 4] and up [8, 12] then
    down [14, 14]: [1, 14], [8, 14] (up [8, 12] does not end before down [6, 9] starts). Under a consumption
    policy the events' intervals are the same, and an element's triples once used are no input again."""
    from rspark.engine.engine import Engine

    path = tmp_path / "market.trig"
    path.write_text(MARKET)
    q = P + """SELECT ?x (getSTARTTIME() AS ?start) (getENDTIME() AS ?end)
FROM NAMED WINDOW :w ON :m [RANGE {range} STEP 1]
EVENT ON :w {{ ?x :status :up }} AS UP
EVENT ON :w {{ ?x :status :down }} AS DOWN
WHERE {{ MATCH{consume} {{ UP SEQ DOWN }} }}"""
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "m", path, timestamp_predicate=EX + "t")
        got = _rows(eng.replay(q.format(range=20, consume=""), times=[5, 6, 8, 14]), "start", "end")
        assert got == [(5, []), (6, [("1", "9")]), (8, [("1", "9")]), (14, [("1", "14"), ("1", "9"), ("8", "14")])]
        # consuming (RSEP-QL, Def. 10): at 6 the event [1, 9] consumes up [1, 4] and down [6, 9]; at 8 up [8, 12] has
        # no down that starts after it ends; at 14 up [8, 12] then down [14, 14], up [1, 4] being consumed
        got = _rows(eng.replay(q.format(range=20, consume=" CONSUME CHRONOLOGICAL"), times=[5, 6, 8, 14]),
                    "start", "end")
        assert got == [(5, []), (6, [("1", "9")]), (8, []), (14, [("8", "14")])]
        # at their starts, the elements are instants (up 1, down 6, up 8, down 14): every event is [start, start]
        profile = get_profile("default").with_settings(interval_elements="start")
        got = _rows(eng.replay(q.format(range=10, consume=""), profile=profile, times=[5, 6, 9, 14]), "start", "end")
        assert got == [(5, []), (6, [("1", "6")]), (9, [("1", "6")]), (14, [("8", "14")])]


# ------------------------------------------------------------------ random streams, every window kind


def _held(window, elements, t) -> set:
    """The names of the elements in ``window`` at ``t`` under the documented semantics (docs/streams.md): count
    windows by start, every other window while the element's interval [ts, te] meets its content bounds."""
    if isinstance(window, CountWindow):
        started = sorted((ts, i, name) for i, (name, ts, _) in enumerate(elements) if ts <= t)
        return {name for _, _, name in started[-window.size:]}
    bounds = window.content_bounds(t)
    if bounds is None:
        return set()
    lo, hi = bounds
    return {name for name, ts, te in elements if ts <= hi and te >= lo}


WINDOWS = [
    ("w1", "[RANGE {r} STEP {s}]"), ("w2", "[LANDMARK {l}]"), ("w3", "[FROM {a} TO {b}]"), ("w4", "[NOW]"),
    ("w5", "[RANGE ELEMENTS {n}]"),
]


@st.composite
def interval_streams(draw):
    n = draw(st.integers(1, 7))
    elements = []
    for i in range(n):
        ts = draw(st.integers(0, 30))
        te = ts + draw(st.sampled_from([0, 0, 1, 3, 8, 20]))
        elements.append((f"e{i}", ts, te))
    r = draw(st.integers(1, 9))
    params = {"r": r, "s": draw(st.integers(1, r)), "l": draw(st.integers(0, 10)), "a": draw(st.integers(0, 20)),
              "n": draw(st.integers(1, 3))}
    params["b"] = params["a"] + draw(st.integers(0, 15))
    return elements, params


@pytest.mark.slow
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
          phases=(Phase.explicit, Phase.reuse, Phase.generate))  # a failure is printed as drawn: shrinking replays
@given(case=interval_streams())
def test_random_interval_streams_in_every_window_kind(spark, tmp_path_factory, case):
    """Random elements, points (``ts``) and intervals (``"ts/te"``), read by a time, landmark, interval, NOW and
    count window at every instant 0..45: each window's content at each instant equals the brute-force reading of the
    documented semantics."""
    from rspark.engine.engine import Engine

    elements, params = case
    lines = ["@prefix : <http://example.org/> ."]
    for name, ts, te in elements:
        stamp = f'"{ts}/{te}"' if te != ts or name.endswith(("1", "3")) else str(ts)
        lines.append(f":{name} {{ :{name} :in :x . }}\n:{name} :t {stamp} .")
    path = tmp_path_factory.mktemp("random-intervals") / "s.trig"
    path.write_text("\n".join(lines) + "\n")
    decls = "\n".join(f"FROM NAMED WINDOW :{w} ON :s {spec.format(**params)}" for w, spec in WINDOWS)
    union = " UNION ".join(f'{{ WINDOW :{w} {{ ?e :in :x }} BIND("{w}" AS ?w) }}' for w, _ in WINDOWS)
    query = P + f"SELECT ?w ?e\n{decls}\nWHERE {{ {union} }}"
    times = list(range(0, 46))
    resolved = {
        "w1": TimeWindow(params["r"], params["s"]), "w2": LandmarkWindow(params["l"]),
        "w3": IntervalWindow(params["a"], params["b"]), "w4": NowWindow(), "w5": CountWindow("ELEMENTS", params["n"]),
    }
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "s", path, timestamp_predicate=EX + "t")
        assert not eng.errors
        records = eng.replay(query, times=times)
    got = {(r.time, row["w"].lexical): set() for r in records for row in r.rows}
    for r in records:
        for row in r.rows:
            got[(r.time, row["w"].lexical)].add(row["e"].n3()[len(EX) + 1:-1])
    expected = {}
    for t in times:
        for w, window in resolved.items():
            held = _held(window, elements, t)
            if held:
                expected[(t, w)] = held
    assert got == expected


def _json_records(recs) -> list:
    import json

    out = []
    for rec in recs:
        js = rec.to_json()
        out.append((js["time"], sorted(json.dumps(a, sort_keys=True) for a in js["results"]["bindings"])))
    return out


LIVE_QUERIES = {
    "time": "SELECT ?s ?o FROM NAMED WINDOW :w ON :S [RANGE 4 SLIDE 2] WHERE { WINDOW :w { ?s :p ?o } }",
    "now": "SELECT ?s ?o FROM NAMED WINDOW :w ON :S [NOW] WHERE { WINDOW :w { ?s :p ?o } }",
    "landmark": "SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :S [LANDMARK 3] WHERE { WINDOW :w { ?s :p ?o } }",
    "count": "SELECT ?s ?o FROM NAMED WINDOW :w ON :S [RANGE ELEMENTS 2] WHERE { WINDOW :w { ?s :p ?o } }",
    "consume": "SELECT ?x ?y FROM NAMED WINDOW :w ON :S [RANGE 8 SLIDE 1] EVENT ON :w { ?x :p :a } AS A "
               "EVENT ON :w { ?y :p :b } AS B WHERE { MATCH CONSUME CHRONOLOGICAL { A SEQ B } }",
}


@st.composite
def interval_batches(draw):
    """Elements in the order of their starts (no lateness), some valid over an interval, cut into batches."""
    n = draw(st.integers(2, 9))
    starts = sorted(draw(st.lists(st.integers(1, 20), min_size=n, max_size=n)))
    elements = [(f"g{i}", ts, ts + draw(st.sampled_from([0, 0, 2, 5, 12])), draw(st.sampled_from(["a", "b"])))
                for i, ts in enumerate(starts)]
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=2))) if n > 1 else []
    return [elements[a:b] for a, b in zip([0, *cuts], [*cuts, n])]


def _trig(elements) -> str:
    lines = ["@prefix : <http://example.org/> .", "@prefix prov: <http://www.w3.org/ns/prov#> ."]
    for name, ts, te, o in elements:
        stamp = f'"{ts}/{te}"' if te != ts else str(ts)
        lines.append(f":{name} {{ :{name} :p :{o} . }} :{name} prov:generatedAtTime {stamp} .")
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck),
          phases=(Phase.explicit,))  # (a live run costs ~20-50 s: the written example; the replay's are drawn above)
@given(interval_batches())
@example([[("g0", 1, 6, "a"), ("g1", 2, 2, "b")], [("g2", 5, 17, "a"), ("g3", 9, 9, "b")],
          [("g4", 14, 14, "a"), ("g5", 20, 25, "b")]])
def test_live_records_equal_the_replays_over_interval_elements(spark, tmp_path_factory, batches):
    """Elements valid over intervals pushed live in batches: every query's records equal a replay's over the same
    elements, instant by instant (a pruned buffer keeps the elements whose intervals still reach its bound)."""
    from rspark.engine.engine import Engine

    texts = {name: P + q for name, q in LIVE_QUERIES.items()}
    tmp = tmp_path_factory.mktemp("live-intervals")
    path = tmp / "s.trig"
    path.write_text(_trig([e for batch in batches for e in batch]))
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "S", path)
        recs = eng.replay(list(texts.values()), names=list(texts))
    expected = {name: _json_records(r for r in recs if r.query == name) for name in texts}
    with Engine(spark=spark, checkpoint=str(tmp / "ckpt")) as eng:
        eng.live_stream(EX + "S")
        handles = {name: eng.register(text, name=name) for name, text in texts.items()}
        got = {name: [] for name in texts}
        for batch in batches:
            eng.push(EX + "S", _trig(batch))
            assert next(iter(handles.values())).wait(timeout=120)
            for name, h in handles.items():
                got[name] += h.drain()
        status = eng.live_status()["streams"][EX + "S"]
        assert (status["elements"], status["late"], status["rejected"]) == (sum(map(len, batches)), 0, 0)
        eng.live.close(flush=True)
        for name, h in handles.items():
            got[name] += h.drain()
    for name in texts:
        assert _json_records(got[name]) == expected[name], name


ENDS = """@prefix : <http://example.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
:a { :x :status :up . }
:a prov:generatedAtTime 1 ; prov:invalidatedAtTime 4 .
:b { :x :status :down . }
:b prov:generatedAtTime 6 ; :source :lab .
:c { :x :status :up . }
:c prov:generatedAtTime 8 ; prov:invalidatedAtTime 7 .
:d { :x :status :down . }
:d prov:generatedAtTime 9 ; prov:invalidatedAtTime 10 , 11 .
"""


def test_an_end_predicate_gives_the_interval_an_element_without_one_is_a_point(spark, tmp_path):
    """``end_predicate``: the timestamp starts the interval and the end triple ends it (:a [1, 4]); an element with
    no end triple is a point (:b at 6); an end before the start and two ends are bad timestamps, named. The end
    triples are no metadata (:source is)."""
    from rspark.engine.engine import Engine

    path = tmp_path / "ends.trig"
    path.write_text(ENDS)
    q = P + "SELECT ?g ?p ?o FROM NAMED WINDOW :w ON :e [NOW] WHERE { WINDOW :w { ?g ?p ?o FILTER(?p != :status) } }"
    now = P + "SELECT ?st FROM NAMED WINDOW :w ON :e [NOW] WHERE { WINDOW :w { :x :status ?st } }"
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "e", path, end_predicate="http://www.w3.org/ns/prov#invalidatedAtTime")
        problems = sorted((e.element, str(e).split(": ", 1)[-1]) for e in eng.errors)
        assert [element for element, _ in problems] == ["<http://example.org/c>", "<http://example.org/d>"]
        assert "ends before it starts" in problems[0][1]
        assert "more than one timestamp" in problems[1][1]
        assert _rows(eng.replay(now, times=[0, 1, 3, 4, 5, 6, 7]), "st") == [
            (0, []), (1, [(":up",)]), (3, [(":up",)]), (4, [(":up",)]), (5, []), (6, [(":down",)]), (7, [])]
        assert _rows(eng.replay(q, times=[6]), "g", "p", "o") == [(6, [(":b", ":source", ":lab")])]


def test_the_command_line_reads_intervals_and_names_a_bad_predicate(tmp_path):
    import subprocess
    import sys

    stream = tmp_path / "social.trig"
    stream.write_text(SOCIAL.replace("{end}", "59"))
    query = tmp_path / "who.rq"
    query.write_text(WHO)
    bad = subprocess.run([sys.executable, "-m", "rspark", "replay", str(query), "--stream",
                          f"{EX}social={stream}", "--timestamp-predicate", "atInterval"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "--timestamp-predicate expects an absolute IRI" in bad.stderr and "'atInterval'" in bad.stderr


def test_rspark_replay_reads_the_at_interval_stream(spark, tmp_path, capsys):
    from rspark.cli import main

    stream = tmp_path / "social.trig"
    stream.write_text(SOCIAL.replace("{end}", "59"))
    query = tmp_path / "who.rq"
    query.write_text(WHO)
    assert main(["replay", str(query), "--stream", f"{EX}social={stream}", "--timestamp-predicate",
                 f"<{AT}>", "--format", "csv", "--until", "2016-03-01T13:00:30Z"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.split("\r\n")
    assert lines[0] == "query,time,who,room" and lines[-1] == ""
    assert sorted(lines[1:-1]) == [  # (rows of one instant in any order)
        "who.rq,2016-03-01T13:00:00Z,http://example.org/axel,http://example.org/RedRoom",
        "who.rq,2016-03-01T13:00:00Z,http://example.org/darko,http://example.org/RedRoom",
        "who.rq,2016-03-01T13:00:15Z,http://example.org/axel,http://example.org/RedRoom",
        "who.rq,2016-03-01T13:00:15Z,http://example.org/darko,http://example.org/RedRoom",
        "who.rq,2016-03-01T13:00:30Z,http://example.org/axel,http://example.org/BlueRoom",
    ]


def test_a_paced_replay_places_elements_at_their_start_and_passes_a_bad_one_on(tmp_path):
    """``replay:PATH@SPEED`` reads the timestamps with the loader's parser: an interval at its start; an element
    whose timestamp is not read goes with the element before it, for the loader to name (not dropped)."""
    from rspark.engine.live.sources import recorded_elements

    path = tmp_path / "s.trig"
    path.write_text(SOCIAL.replace("{end}", "60"))
    got = [(ms, text.count("\n")) for ms, text in recorded_elements(str(path), AT)]
    assert got == [(1456837200000.0, 3), (1456837220000.0, 2), (1456837220000.0, 2)]
    ends = tmp_path / "ends.trig"
    ends.write_text(ENDS)  # an element's other default-graph triples (an end, metadata) go with it
    texts = [text for _, text in recorded_elements(str(ends), "http://www.w3.org/ns/prov#generatedAtTime")]
    assert [t.count("invalidatedAtTime") for t in texts] == [1, 0, 1, 2]
    assert "<http://example.org/source>" in texts[1]


def test_a_window_as_a_dataset_gives_the_interval_as_the_stream_writes_it(social):
    """Under RSP-QL*'s window-as-dataset reading (the rspql-star profile), an element's timestamp triple in the
    window's default graph is its interval literal (with the start's and the end's canonical forms)."""
    eng, _ = social
    q = P + """SELECT ?g ?t FROM NAMED WINDOW :w ON :social [RANGE PT30S STEP PT30S]
WHERE { WINDOW :w { ?g :atInterval ?t } }"""
    got = _rows(eng.replay(q, profile="rspql-star", times=["2016-03-01T13:00:31Z"]), "g", "t")
    assert got == [("2016-03-01T13:00:31Z", [(":g1", "2016-03-01T13:00:00Z/2016-03-01T13:00:10Z"),
                                             (":g2", "2016-03-01T13:00:20Z/2016-03-01T13:00:40Z")])]


def test_live_mode_reads_an_end_predicate_as_a_replay_does(spark, tmp_path):
    """A live stream declared with an end predicate: the pushed elements' end triples end their intervals, and the
    records equal a replay's with the same predicate."""
    import json

    from rspark.engine.engine import Engine

    clean = "\n".join(line for line in ENDS.splitlines() if ":c " not in line and ":d " not in line) + "\n"
    path = tmp_path / "ends.trig"
    path.write_text(clean)
    end = "http://www.w3.org/ns/prov#invalidatedAtTime"
    now = P + "SELECT ?st FROM NAMED WINDOW :w ON :e [RANGE 2 STEP 2] WHERE { WINDOW :w { :x :status ?st } }"
    with Engine(spark=spark) as eng:
        eng.add_stream(EX + "e", path, end_predicate=end)
        expected = _json_records(eng.replay(now))
    # :a [1, 4] is in (0, 2] and (2, 4]; :b at 6 in (4, 6]
    assert [(t, [json.loads(a)["st"]["value"][len(EX):] for a in answers]) for t, answers in expected] == [
        (2, ["up"]), (4, ["up"]), (6, ["down"])]
    with Engine(spark=spark, checkpoint=str(tmp_path / "ckpt")) as eng:
        eng.live_stream(EX + "e", end_predicate=end)
        handle = eng.register(now, name="now")
        eng.push(EX + "e", clean)
        assert eng.live.wait_idle(timeout=120)
        eng.live.close(flush=True)
        assert _json_records(handle.drain()) == expected
