"""Window assignment (rspark.spark.streaming.windows), report policies (rspark.rsp.report, and as frames
rspark.spark.streaming.report) and engine profiles.

The expectations are the seeds' worked examples (RSEP-QL, Examples 2, 3, 5, 6 on the Figure 1 stream; RSP-QL*
Def. 15), the 12 RSP4J window scenarios, the engine heterogeneity of RSP-QL, Sec. 3 reproduced through the
profiles, and property tests against a per-instant pure-Python reading of the definitions.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark import compile_query
from rspark.model.time import Duration, Timeline, WindowError
from rspark.rsp.profiles import PROFILES, Profile, ProfileError, get_profile, profile_names
from rspark.rsp.windows import (
    CountWindow,
    IntervalWindow,
    LandmarkWindow,
    NowWindow,
    TimeWindow,
    TimeWindowSpec,
    resolve_window,
)
from rspark.spark.streaming.report import WindowInput, evaluation_instants
from rspark.spark.streaming.windows import RANK_BUCKETS, LocalInstants, assign_count, assign_window
from rspark.syntax.translate import QueryError
from tests.conftest import TESTDATA

REPO = Path(__file__).resolve().parents[1]

E = "http://e/"
NUMERIC = Timeline.numeric()  # resolve()'s default timeline

# RSEP-QL, Example 1 / Figure 1: S = (G1, 2), (G2, 4), (G3, 6), (G4, 8), (G5, 10).
FIG1 = [
    ("G1", 2, [("a1", "p", "b1")]),
    ("G2", 4, [("a2", "p", "b2")]),
    ("G3", 6, [("b1", "q", "c1"), ("b2", "q", "c2")]),
    ("G4", 8, [("b2", "q", "c2")]),
    ("G5", 10, [("a3", "p", "b3"), ("b1", "q", "c1")]),
]


def _iri(local: str) -> str:
    return f"<{E}{local}>"


def elements_frame(spark, rows) -> DataFrame:
    """(element, ts, seq) from [(name, ts), ...] in stream order."""
    return spark.createDataFrame([(name, int(ts), i) for i, (name, ts) in enumerate(rows)],
                                 "element string, ts long, seq long")


def quads_frame(spark, stream) -> DataFrame:
    rows = [(name, ts, i, _iri(s), _iri(p), _iri(o)) for i, (name, ts, triples) in enumerate(stream)
            for s, p, o in triples]
    return spark.createDataFrame(rows, "element string, ts long, seq long, s string, p string, o string")


@pytest.fixture(scope="module")
def fig1(spark) -> DataFrame:
    return elements_frame(spark, [(name, ts) for name, ts, _ in FIG1])


@pytest.fixture(scope="module")
def fig1_quads(spark) -> DataFrame:
    return quads_frame(spark, FIG1)


def window_spec(text: str):
    """The syntax-tree window spec the parser builds for ``text`` (e.g. ``[RANGE 5 SLIDE 1]``)."""
    plan = compile_query(f"PREFIX : <{E}> SELECT * FROM NAMED WINDOW :w ON :s {text} "
                         "WHERE { WINDOW :w { ?a ?b ?c } }")
    return plan.dataset.windows[0].spec


def resolve(text: str, profile="default", timeline=NUMERIC, first_ts=None):
    return resolve_window(window_spec(text), get_profile(profile), timeline, first_ts=first_ts)


def contents(df: DataFrame, column: str = "element") -> dict:
    """{instant: sorted list of ``column``} of an assignment."""
    out = defaultdict(list)
    for row in df.select("instant", column).collect():
        out[row["instant"]].append(row[column])
    return {t: sorted(v) for t, v in sorted(out.items())}


def pairs(df: DataFrame, column: str = "element") -> set:
    return {(row["instant"], row[column]) for row in df.select("instant", column).collect()}


# ================================================================================================ RSEP-QL examples


def test_seed000_example2_landmark(fig1):
    """W^lambda[(1)](S, 8) = (G1, 2), (G2, 4), (G3, 6), (G4, 8)."""
    w = resolve("[LANDMARK 1]")
    assert w == LandmarkWindow(1)
    assert contents(assign_window(fig1, w, [8])) == {8: ["G1", "G2", "G3", "G4"]}


def test_seed000_example2_time_based(fig1):
    """W^tau[(5, 1)](S, 8) = (G2, 4), (G3, 6), (G4, 8): 8 - 5 < ti <= 8. The paper's [RANGE 5] has slide 1."""
    w = resolve("[RANGE 5 SLIDE 1]")
    assert w == TimeWindow(range=5, slide=1)
    for strategy in ("explode", "panes", "bounds", "auto"):
        assert contents(assign_window(fig1, w, [8], strategy=strategy)) == {8: ["G2", "G3", "G4"]}
    assert contents(assign_window(fig1, w, LocalInstants([8]))) == {8: ["G2", "G3", "G4"]}  # auto: by bounds
    instants = fig1.sparkSession.createDataFrame([(8,)], "instant long")
    with pytest.raises(WindowError, match="^the bounds strategy needs the instants as values, not a DataFrame$"):
        assign_window(fig1, w, instants, strategy="bounds")
    # Example 7 restates W2^tau(S, 8) as G1..G4, which contradicts Example 2 and the definition (2 <= 8 - 5):
    # the definition wins. [RANGE 5] alone parses as a tumbling window (slide 5): t' = 5, content (0, 5].
    assert contents(assign_window(fig1, resolve("[RANGE 5]"), [8])) == {8: ["G1", "G2"]}


def test_window_bounds_as_parameters_give_the_same_content_and_reuse_the_compiled_code(fig1, monkeypatch):
    """A live buffer's windows take their bounds and instant as parameters (rspark.jvm.LongParameter): the same
    content as with literals at every instant, no bound written into the plan, and the plan of another instant runs
    the code Spark generated and compiled for the first (with literals each instant compiled its own)."""
    w = resolve("[RANGE 5 SLIDE 1]")
    for t in (3, 5, 8, 11):
        literal = assign_window(fig1, w, [t], strategy="bounds")
        param = assign_window(fig1, w, [t], strategy="bounds", parameters=True)
        assert contents(param) == contents(literal)
    plan = assign_window(fig1, w, [8], strategy="bounds", parameters=True)._jdf.queryExecution().executedPlan()
    text = plan.toString()
    assert "UDF()" in text and "<= 8" not in text and ">= 4" not in text, text

    def generated(t, parameters):
        df = assign_window(fig1, w, [t], strategy="bounds", parameters=parameters)
        jvm_ = fig1.sparkSession._jvm
        codegen = jvm_.org.apache.spark.sql.execution.debug.package.codegenStringSeq(df._jdf.queryExecution()
                                                                                     .executedPlan())
        return [codegen.apply(i)._2() for i in range(codegen.size())]

    assert generated(8, True) == generated(13, True)
    assert generated(8, False) != generated(13, False)
    # without rspark's jar in the session the parameters are literals: the same content
    monkeypatch.setattr("rspark.spark.streaming.windows.long_parameter", lambda spark, value: None)
    assert contents(assign_window(fig1, w, [8], strategy="bounds", parameters=True)) == {8: ["G2", "G3", "G4"]}


def test_seed000_example2_interval_nested_in_landmark(fig1):
    """W^sqcup[(0, 5)] . W^lambda[(1)](S, 8) = (G1, 2), (G2, 4): nesting time-based windows intersects contents."""
    interval = resolve("[FROM 0 TO 5]")
    assert interval == IntervalWindow(0, 5)
    inner = assign_window(fig1, resolve("[LANDMARK 1]"), [8]).select("instant", "element")
    outer = assign_window(fig1, interval, [8]).select("instant", "element")
    assert contents(outer.join(inner, ["instant", "element"])) == {8: ["G1", "G2"]}
    # W^sqcup[0, t3 - 1] as used by SEQ (eq. 7) at t3 = 6, evaluated at 8:
    assert contents(assign_window(fig1, IntervalWindow(0, 5), [8])) == {8: ["G1", "G2"]}


def test_seed000_example3_dataset_windows_over_time(fig1):
    """SDS = {(w1, W1^lambda(S)), (w2, W2^tau(S))} with p1 = (1), p2 = (5, 1): contents at every instant 0..12."""
    instants = list(range(0, 13))
    landmark = contents(assign_window(fig1, resolve("[LANDMARK 1]"), instants))
    assert landmark == {t: [name for name, ts, _ in FIG1 if 1 <= ts <= t] for t in instants if t >= 2}
    sliding = contents(assign_window(fig1, resolve("[RANGE 5 SLIDE 1]"), instants))
    assert sliding == {
        2: ["G1"], 3: ["G1"], 4: ["G1", "G2"], 5: ["G1", "G2"], 6: ["G1", "G2", "G3"], 7: ["G2", "G3"],
        8: ["G2", "G3", "G4"], 9: ["G3", "G4"], 10: ["G3", "G4", "G5"], 11: ["G4", "G5"], 12: ["G4", "G5"],
    }


def test_seed000_example5_snapshot(fig1, fig1_quads):
    """SDS_w2(12) = G4 U G5 = {:a3 :p :b3, :b1 :q :c1, :b2 :q :c2} (the snapshot is a set of triples)."""
    w = resolve("[RANGE 5 SLIDE 1]")
    assigned = assign_window(fig1, w, [12])
    assert contents(assigned) == {12: ["G4", "G5"]}
    snapshot = (assigned.select("instant", "element").join(fig1_quads, "element")
                .select("instant", "s", "p", "o").distinct().collect())
    assert sorted((r.s, r.p, r.o) for r in snapshot) == sorted(
        [(_iri("a3"), _iri("p"), _iri("b3")), (_iri("b1"), _iri("q"), _iri("c1")), (_iri("b2"), _iri("q"), _iri("c2"))])


def test_seed000_example6_window_graph_pattern(fig1, fig1_quads):
    """[[WINDOW w2 {?x :p ?y}]]^12 = {{?x -> :a3, ?y -> :b3}}."""
    assigned = assign_window(fig1, resolve("[RANGE 5 SLIDE 1]"), [12]).select("instant", "element")
    matches = (assigned.join(fig1_quads, "element").where(F.col("p") == _iri("p"))
               .select("instant", F.col("s").alias("x"), F.col("o").alias("y")).distinct().collect())
    assert [(r.instant, r.x, r.y) for r in matches] == [(12, _iri("a3"), _iri("b3"))]


def test_seed000_example7_event_window_at_8(fig1, fig1_quads):
    """The BEP (EVENT w2 (?y :q ?z)) at 8 matches per element: only G3 and G4 match, at 6, 6 and 8."""
    assigned = assign_window(fig1, resolve("[RANGE 5 SLIDE 1]"), [8]).select("instant", "element")
    matches = (assigned.join(fig1_quads, "element").where(F.col("p") == _iri("q"))
               .select("ts", "s", "o").collect())
    assert sorted((r.ts, r.s, r.o) for r in matches) == [
        (6, _iri("b1"), _iri("c1")), (6, _iri("b2"), _iri("c2")), (8, _iri("b2"), _iri("c2"))]


def test_default_profile_report_and_content_on_figure1(fig1):
    """docs/profiles.md: every slide instant from the first window holding G1 up to the last element, empty or not."""
    w = resolve("[RANGE 5 SLIDE 1]")
    et = evaluation_instants([WindowInput(w, fig1)], "default")
    assert et.values() == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert contents(assign_window(fig1, w, et.frame)) == {
        2: ["G1"], 3: ["G1"], 4: ["G1", "G2"], 5: ["G1", "G2"], 6: ["G1", "G2", "G3"], 7: ["G2", "G3"],
        8: ["G2", "G3", "G4"], 9: ["G3", "G4"], 10: ["G3", "G4", "G5"]}


# ===================================================================================== RSP-QL, Sec. 3: heterogeneity

HETEROGENEITY = {
    # profile: (ET, content at each instant) for [RANGE 4 SLIDE 2] over Figure 1
    "default": ([2, 4, 6, 8, 10], {2: ["G1"], 4: ["G1", "G2"], 6: ["G2", "G3"], 8: ["G3", "G4"], 10: ["G4", "G5"]}),
    "sparqlstream": ([2, 4, 6, 8, 10],
                     {2: ["G1"], 4: ["G1", "G2"], 6: ["G2", "G3"], 8: ["G3", "G4"], 10: ["G4", "G5"]}),
    "cqels": ([2, 4, 6, 8, 10], {2: ["G1"], 4: ["G1", "G2"], 6: ["G2", "G3"], 8: ["G3", "G4"], 10: ["G4", "G5"]}),
    # [o, c): the window closing at 8 is [4, 8): G2, G3 where (4, 8] holds G3, G4
    "csparql": ([4, 6, 8, 10], {4: ["G1"], 6: ["G1", "G2"], 8: ["G2", "G3"], 10: ["G3", "G4"]}),
    "rsp4j": ([4, 6, 8, 10], {4: ["G1"], 6: ["G1", "G2"], 8: ["G2", "G3"], 10: ["G3", "G4"]}),
    # RSP-QL*, Def. 15: at tau the window [x - 4, x) with x = 4 + 2i the last close strictly before tau
    "rspql-star": ([2, 4, 6, 8, 10], {6: ["G1"], 8: ["G1", "G2"], 10: ["G2", "G3"]}),
    "epsparql-unrestricted": ([2, 4, 6, 8, 10],
                              {2: ["G1"], 4: ["G1", "G2"], 6: ["G2", "G3"], 8: ["G3", "G4"], 10: ["G4", "G5"]}),
}

HETEROGENEITY_GAPS = {
    # [RANGE 1 SLIDE 1]: half the windows are empty; non-empty content removes those instants
    "default": [2, 3, 4, 5, 6, 7, 8, 9, 10],
    "sparqlstream": [2, 4, 6, 8, 10],
    "cqels": [2, 4, 6, 8, 10],
    "csparql": [3, 5, 7, 9],  # [c-1, c): G_i at ts is in the window closing at ts+1; G5's (11) is after the end
    "rsp4j": [3, 5, 7, 9],
}


@pytest.mark.parametrize("profile", sorted(HETEROGENEITY))
def test_seed001_heterogeneity_same_window_different_profiles(fig1, profile):
    """RSP-QL, Sec. 3: C-SPARQL and SPARQLstream report on window close with non-empty content, CQELS on content
    change; window bounds and t0 are engine-internal. Same stream, same [RANGE 4 SLIDE 2], different answers."""
    w = resolve("[RANGE 4 SLIDE 2]", profile)
    et = evaluation_instants([WindowInput(w, fig1)], profile)
    expected_et, expected_content = HETEROGENEITY[profile]
    assert et.values() == expected_et
    assert contents(assign_window(fig1, w, et.frame)) == expected_content


@pytest.mark.parametrize("profile", sorted(HETEROGENEITY_GAPS))
def test_seed001_heterogeneity_non_empty_content(fig1, profile):
    w = resolve("[RANGE 1 SLIDE 1]", profile)
    et = evaluation_instants([WindowInput(w, fig1)], profile)
    assert et.values() == HETEROGENEITY_GAPS[profile]


def test_seed001_heterogeneity_r2s_and_empty_results():
    """C-SPARQL and SPARQLstream stream Rstream, CQELS only Istream (RSP-QL, Sec. 3); whether an empty evaluation is
    emitted follows the CSRBench oracle configuration of each engine."""
    assert {name: get_profile(name).r2s for name in ("default", "csparql", "sparqlstream", "cqels")} == {
        "default": "RSTREAM", "csparql": "RSTREAM", "sparqlstream": "RSTREAM", "cqels": "ISTREAM"}
    assert {name: get_profile(name).emit_empty for name in ("default", "csparql", "sparqlstream", "cqels")} == {
        "default": True, "csparql": True, "sparqlstream": False, "cqels": False}


# ======================================================================================= RSP-QL*, Def. 15 (RSP-QL*)


def test_seed004_def15_windows(fig1):
    """W(S, x - alpha, x) with x = tau0 + alpha + beta*i, the greatest i in N with x < tau; here tau0 = 1."""
    w = resolve("[RANGE 4 SLIDE 2 STARTING AT 1]", "rspql-star")
    assert w == TimeWindow(range=4, slide=2, t0=1, bounds="[)", close_rule="<", windows_before_t0=False,
                         explicit_start=True)
    # tau = 5: x = 5 is not < 5 and i = -1 is not in N: no window. tau = 6, 7: x = 5, [1, 5). tau = 8, 9: [3, 7).
    assert contents(assign_window(fig1, w, [4, 5, 6, 7, 8, 9])) == {
        6: ["G1", "G2"], 7: ["G1", "G2"], 8: ["G2", "G3"], 9: ["G2", "G3"]}


def test_rspql_star_computed_every(fig1):
    """REGISTER ... COMPUTED EVERY d: periodic instants t0 + j*d from the first element."""
    plan = compile_query(f"PREFIX : <{E}> REGISTER STREAM :out COMPUTED EVERY 3 AS SELECT * "
                         f"FROM NAMED WINDOW :w ON :s [RANGE 4 SLIDE 2] WHERE {{ WINDOW :w {{ ?a ?b ?c }} }}")
    timeline = Timeline.numeric()
    w = resolve_window(plan.dataset.windows[0].spec, get_profile("rspql-star"), timeline)
    et = evaluation_instants([WindowInput(w, fig1)], "rspql-star", every=timeline.duration(plan.register.every))
    assert et.values() == [3, 6, 9]
    assert contents(assign_window(fig1, w, et.frame)) == {6: ["G1"], 9: ["G2", "G3"]}


# ============================================================================================ other window kinds


def test_offset_window(fig1):
    """[FROM NOW-5 TO NOW-1 STEP 1]: at t the elements with t - 5 < ti <= t - 1."""
    w = resolve("[FROM NOW-5 TO NOW-1 STEP 1]")
    assert w == TimeWindow(range=4, slide=1, offset=1)
    assert contents(assign_window(fig1, w, [5, 9, 11])) == {5: ["G1", "G2"], 9: ["G3", "G4"], 11: ["G4", "G5"]}
    et = evaluation_instants([WindowInput(w, fig1)], "default")
    assert et.values() == [3, 4, 5, 6, 7, 8, 9, 10]  # closes 2..9 reported 1 later; 11 is after the last element


def test_now_window(fig1):
    w = resolve("[NOW]")
    assert contents(assign_window(fig1, w, range(0, 12))) == {2: ["G1"], 4: ["G2"], 6: ["G3"], 8: ["G4"],
                                                              10: ["G5"]}


def test_count_elements_window_content_change(fig1):
    w = resolve("[RANGE ELEMENTS 2]")
    assert w == CountWindow("ELEMENTS", 2)
    et = evaluation_instants([WindowInput(w, fig1)], "default")
    assert et.values() == [2, 4, 6, 8, 10]
    assert contents(assign_window(fig1, w, et.frame)) == {
        2: ["G1"], 4: ["G1", "G2"], 6: ["G2", "G3"], 8: ["G3", "G4"], 10: ["G4", "G5"]}


def test_count_elements_ties_broken_by_seq(spark):
    stream = elements_frame(spark, [("e1", 5), ("e2", 5), ("e3", 5), ("e4", 7)])
    assigned = assign_window(stream, CountWindow("ELEMENTS", 2), [4, 5, 6, 7, 100])
    assert contents(assigned) == {5: ["e2", "e3"], 6: ["e2", "e3"], 7: ["e3", "e4"], 100: ["e3", "e4"]}


def test_count_triples_window(fig1, fig1_quads):
    """The last 2 triples by (ts, seq, triple order s p o)."""
    w = resolve("[RANGE TRIPLES 2]")
    assigned = assign_window(fig1, w, [2, 6, 8, 10], quads=fig1_quads)
    got = defaultdict(list)
    for r in assigned.collect():
        got[r.instant].append((r.element, r.s.removeprefix(f"<{E}").rstrip(">"), r.o.removeprefix(f"<{E}").rstrip(">")))
    assert {t: sorted(v) for t, v in got.items()} == {
        2: [("G1", "a1", "b1")],
        6: [("G3", "b1", "c1"), ("G3", "b2", "c2")],
        8: [("G3", "b2", "c2"), ("G4", "b2", "c2")],
        10: [("G5", "a3", "b3"), ("G5", "b1", "c1")],
    }
    with pytest.raises(WindowError, match="quads"):
        assign_window(fig1, w, [2])


def test_count_bgp_is_left_to_the_compiler(fig1):
    with pytest.raises(WindowError, match="query compiler"):
        assign_window(fig1, resolve("[RANGE BGP 2]"), [2])


def test_interval_window_reports_while_content_changes(fig1):
    w = resolve("[FROM 3 TO 8]")
    et = evaluation_instants([WindowInput(w, fig1)], "default")
    assert et.values() == [4, 6, 8]
    assert contents(assign_window(fig1, w, [3, 4, 7, 10])) == {4: ["G2"], 7: ["G2", "G3"], 10: ["G2", "G3", "G4"]}


def test_explicit_times_are_et(fig1):
    """--times is the formal ET of RSEP-QL, Def. 5: exactly those instants, even before the first element."""
    w = resolve("[RANGE 5 SLIDE 1]")
    et = evaluation_instants([WindowInput(w, fig1)], "csparql", times=[12, 1, 8, 8])
    assert et.values() == [1, 8, 12]


def test_until_and_starting_at(fig1):
    w = resolve("[RANGE 4 SLIDE 2 STARTING AT 5]")
    assert (w.t0, w.anchor) == (5, 5)
    et = evaluation_instants([WindowInput(w, fig1)], "default", until=13)
    assert et.values() == [5, 7, 9, 11, 13]  # nothing before STARTING AT, up to --until
    assert contents(assign_window(fig1, w, et.frame)) == {
        5: ["G1", "G2"], 7: ["G2", "G3"], 9: ["G3", "G4"], 11: ["G4", "G5"], 13: ["G5"]}


def test_first_element_t0_policy(fig1):
    profile = get_profile("default").with_settings(name="t0-first", t0="first-element")
    w = resolve_window(TimeWindowSpec(Duration(Decimal(4), False), Duration(Decimal(3), False)), profile,
                       Timeline.numeric(), first_ts=2)
    assert (w.t0, w.anchor) == (2, 2)
    et = evaluation_instants([WindowInput(w, fig1)], profile)
    assert et.values() == [2, 5, 8]
    assert contents(assign_window(fig1, w, et.frame)) == {2: ["G1"], 5: ["G1", "G2"], 8: ["G3", "G4"]}
    with pytest.raises(WindowError, match="empty"):
        resolve_window(window_spec("[RANGE 4 SLIDE 3]"), profile, Timeline.numeric(), first_ts=None)


def test_implicit_slide(fig1):
    """[RANGE r] without SLIDE: tumbling by default; CQELS's window ends at every instant (one-tick slide)."""
    spec = TimeWindowSpec(Duration(Decimal(4), False), None)
    assert resolve_window(spec, get_profile("default"), Timeline.numeric()).slide == 4
    cqels = resolve_window(spec, get_profile("cqels"), Timeline.numeric())
    assert cqels == TimeWindow(range=4, slide=1)
    et = evaluation_instants([WindowInput(cqels, fig1)], "cqels")
    assert et.values() == [2, 4, 6, 8, 10]
    for strategy in ("explode", "range"):
        assert contents(assign_window(fig1, cqels, et.frame, strategy=strategy)) == {
            2: ["G1"], 4: ["G1", "G2"], 6: ["G2", "G3"], 8: ["G3", "G4"], 10: ["G4", "G5"]}
    # a one-millisecond slide over a date-time stream: the range join, not 60000 copies per element
    spec = TimeWindowSpec(Duration(Decimal(60_000), True), None)
    w = resolve_window(spec, get_profile("cqels"), Timeline.datetime())
    assert (w.range, w.slide, w.overlap) == (60_000, 1, 60_000)
    assert contents(assign_window(fig1, w, [10, 70_000])) == {10: ["G1", "G2", "G3", "G4", "G5"]}


def test_multiple_windows_union_of_instants(fig1):
    w1, w2 = resolve("[RANGE 4 SLIDE 4]"), resolve("[RANGE 6 SLIDE 3]")
    et = evaluation_instants([WindowInput(w1, fig1), WindowInput(w2, fig1)], "default")
    assert et.values() == [3, 4, 6, 8, 9]


def test_empty_stream(spark):
    empty = elements_frame(spark, [])
    for w in (resolve("[RANGE 4 SLIDE 2]"), resolve("[LANDMARK 0]"), CountWindow("ELEMENTS", 2)):
        assert evaluation_instants([WindowInput(w, empty)], "default").values() == []
        assert assign_window(empty, w, [1, 2]).count() == 0


SPANS = (0, 1, 2, 3, 5, 8, 13, 21, 40)  # until - first (may_report) / until - after (instants_after)


def definitional_instants(w: TimeWindow, policies, first: int, until: int, every=None, stamps=None) -> list[int]:
    """A time window's evaluation instants up to ``until`` read off the definitions, one candidate at a time: window
    close reports window k at its close (plus the offset, plus a tick under the strict close rule) from the first
    window that does not end before ``first``; periodic reports every ``t0 + j*period`` at or after ``first`` (and
    an explicit start); non-empty keeps an instant whose content holds one of ``stamps``."""
    from rspark.rsp.profiles import CONTENT_CHANGE, NON_EMPTY, PERIODIC, WINDOW_CLOSE

    found = set()
    if CONTENT_CHANGE in policies:  # every element's timestamp (from the explicit start on)
        start = w.t0 if (w.explicit_start or not w.windows_before_t0) else None
        found |= {s for s in stamps if start is None or s >= start}
    if WINDOW_CLOSE in policies:
        ks = [k for k in range(-300, 300) if w.window_bounds(k)[1] >= first]
        if not w.windows_before_t0 or w.explicit_start:
            ks = [k for k in ks if k >= 0]
        found |= {w.close(k) + w.offset + (1 if w.close_rule == "<" else 0) for k in ks}
    if PERIODIC in policies:
        period = every if every is not None else w.slide
        start = w.t0 if (w.explicit_start or not w.windows_before_t0) else None
        low = first if start is None else max(first, start)
        found |= {t for t in range(low, until + 1) if (t - w.t0) % period == 0}
    found = {t for t in found if t <= until}
    if NON_EMPTY in policies:
        found = {t for t in found if (b := w.content_bounds(t)) is not None and any(b[0] <= s <= b[1] for s in stamps)}
    return sorted(found)


@settings(max_examples=200, deadline=None)
@given(rng=st.integers(1, 12), slide=st.integers(1, 12), t0=st.integers(-5, 5), offset=st.integers(0, 3),
       bounds=st.sampled_from(["(]", "[)"]), close=st.sampled_from(["<=", "<"]), before=st.booleans(),
       explicit=st.booleans(), policies=st.sampled_from([("window-close",), ("periodic",),
                                                        ("window-close", "periodic")]),
       every=st.one_of(st.none(), st.integers(1, 7)), first=st.integers(-10, 30))
def test_may_report_agrees_with_the_instants(rng, slide, t0, offset, bounds, close, before, explicit,
                                             policies, every, first):
    """Live mode's check (may_report: can a window close or a period end in (after, until]?) against the
    instants the definitions give, for time windows under window-close and periodic policies, for every
    (after, until) of a grid (the instants up to a smaller until are a prefix)."""
    from rspark.rsp.profiles import ReportPolicy
    from rspark.rsp.report import may_report, report_policies

    w = TimeWindow(range=rng, slide=slide, t0=t0, offset=offset, bounds=bounds, close_rule=close,
                 windows_before_t0=before, explicit_start=explicit)
    profile = get_profile("default").with_settings(
        name="may-report", time_report=frozenset(ReportPolicy(p) for p in policies))
    last = first + max(SPANS)
    chosen = report_policies(profile, w, every)
    values = definitional_instants(w, chosen, first, last, every)
    for after in [None, *range(first - 10, last + 1, 3)]:
        for span in SPANS:
            until = first + span
            expected = any((after is None or t > after) and t <= until for t in values)
            assert may_report(w, chosen, first, after, until, every) is expected, (after, until, values)


@settings(max_examples=200, deadline=None)
@given(rng=st.integers(1, 9), slide=st.integers(1, 9), t0=st.integers(-5, 5), offset=st.integers(0, 3),
       profile=st.sampled_from(["default", "csparql", "rspql-star", "sparqlstream", "cqels",
                                "epsparql-unrestricted"]),
       every=st.one_of(st.none(), st.integers(1, 7)), stamps=st.lists(st.integers(-5, 40), min_size=1, max_size=10))
def test_instants_after_agrees_with_the_instants(rng, slide, t0, offset, profile, every, stamps):
    """The instants a live micro-batch asks for, found from the elements' timestamps (instants_after), against
    the instants the definitions give, content change and the non-empty filter included, for every (after,
    until) of a grid and from the start (after None)."""
    from types import SimpleNamespace

    from rspark.rsp.profiles import CONTENT_CHANGE, NON_EMPTY
    from rspark.rsp.report import instants_after, report_policies

    p = get_profile(profile)
    w = TimeWindow(range=rng, slide=slide, t0=t0, offset=offset, bounds=p.bounds, close_rule=p.close_rule,
                 windows_before_t0=p.windows_before_t0)
    last = 60
    bounds = (min(stamps), max(stamps))
    chosen = report_policies(p, w, every)
    values = definitional_instants(w, chosen, bounds[0], last, every, stamps)
    seen = SimpleNamespace(window=w, bounds=bounds, stamps=sorted(stamps))
    blind = SimpleNamespace(window=w, bounds=bounds, stamps=None)  # without the timestamps
    filtered = NON_EMPTY in chosen
    for until in range(-10, last + 1, 7):
        assert instants_after([seen], p, None, until, every) == [t for t in values if t <= until], until
    for after in range(-10, last - 5, 4):
        for span in SPANS:
            until = min(last, after + span)
            expected = [t for t in values if after < t <= until]
            assert instants_after([seen], p, after, until, every) == expected, (after, until)
            got = instants_after([blind], p, after, until, every)
            if CONTENT_CHANGE in chosen:  # the elements' timestamps are the instants: not known without them
                assert got is None
            else:  # the non-empty filter cannot be applied without them: None, unless nothing closes there
                assert (got is None or (got == [] and expected == [])) if filtered else got == expected


@pytest.mark.parametrize("profile,every,explicit", [("default", None, False), ("csparql", None, True),
                                                    ("rspql-star", 3, False), ("sparqlstream", None, False),
                                                    ("cqels", None, False)])
def test_the_frame_of_instants_agrees_with_the_arithmetic(spark, profile, every, explicit):
    """The DataFrame form (evaluation_instants: spark.range sequences and the non-empty semi-join) gives the
    instants of the pure arithmetic (rsp.report) and of the definitions."""
    import numpy as np

    from rspark.rsp.report import instants_after, report_policies

    p = get_profile(profile)
    w = TimeWindow(range=5, slide=2, t0=-3, offset=1, bounds=p.bounds, close_rule=p.close_rule,
                 windows_before_t0=p.windows_before_t0, explicit_start=explicit)
    stamps = [-4, 3, 4, 17, 30]
    stream = elements_frame(spark, [(f"e{i}", t) for i, t in enumerate(stamps)])
    bounds = (min(stamps), max(stamps))
    values = evaluation_instants([WindowInput(w, stream, bounds=bounds)], p, every=every, until=40).values()
    assert values == definitional_instants(w, report_policies(p, w, every), bounds[0], 40, every, stamps)
    held = WindowInput(w, stream, bounds=bounds, stamps=np.array(stamps, dtype=np.int64))
    assert instants_after([held], p, -100, 40, every) == values


def test_may_report_leaves_data_dependent_instants_open():
    """Content change (and every window that is not time-based) reports at element timestamps: not known
    without the data, so the live check says None and the query is evaluated."""
    from rspark.rsp.report import may_report, report_policies

    for w in (resolve("[RANGE 4 SLIDE 2]"), resolve("[LANDMARK 0]"), CountWindow("ELEMENTS", 2)):
        assert may_report(w, report_policies("cqels", w), 0, 3, 10) is None
    assert may_report(resolve("[LANDMARK 0]"), report_policies("default", resolve("[LANDMARK 0]")), 0, 3, 10) is None
    w = resolve("[RANGE 4 SLIDE 2]")
    assert may_report(w, report_policies("default", w), 0, 3, 3) is False  # (3, 3]: empty
    assert may_report(w, report_policies("default", w), 0, 3, 4) is True  # the window closing at 4


# =========================================================================================================== time units


def test_timeline_units():
    dt = Timeline.datetime()
    w = resolve_window(window_spec("[RANGE PT10M SLIDE PT1M]"), get_profile(None), dt)
    assert (w.range, w.slide) == (600_000, 60_000)
    # numeric stream with time_scale 1000 (timestamps like 1.5): plain numbers are stream units, ISO durations
    # read the numbers as milliseconds
    num = Timeline.numeric(1000)
    assert resolve_window(window_spec("[RANGE 5 SLIDE 0.5]"), get_profile(None), num).slide == 500
    assert resolve_window(window_spec("[RANGE PT1S]"), get_profile(None), num).range == 1_000_000
    with pytest.raises(WindowError, match="finer than"):
        resolve_window(window_spec("[RANGE 5 SLIDE 0.5]"), get_profile(None), Timeline.numeric(1))
    w = resolve_window(window_spec("[RANGE PT1M SLIDE PT30S STARTING AT 2016-03-01T13:00:00Z]"), get_profile(None), dt)
    assert w.t0 == 1456837200000 and w.explicit_start


def test_datetime_stream(spark):
    t0 = 1456837200000  # 2016-03-01T13:00:00Z
    stream = elements_frame(spark, [("a", t0 - 45_000), ("b", t0 + 10_000), ("c", t0 + 70_000)])
    w = resolve_window(window_spec("[RANGE PT1M SLIDE PT30S STARTING AT 2016-03-01T13:00:00Z]"), get_profile(None),
                       Timeline.datetime())
    et = evaluation_instants([WindowInput(w, stream)], "default")
    assert et.values() == [t0, t0 + 30_000, t0 + 60_000]  # not before t0; the last close at or before t0 + 70s
    assert contents(assign_window(stream, w, et.frame)) == {t0: ["a"], t0 + 30_000: ["b"], t0 + 60_000: ["b"]}


# ================================================================================================= RSP4J scenarios

RSP4J_FILE = TESTDATA / "rsp4j" / "rsp4j-window-scenarios.json"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
HAS_VALUE = "http://test/hasValue"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


def _load_rsp4j():
    return {s["id"]: s for s in json.loads(RSP4J_FILE.read_text())["scenarios"]}


def _type(var, color):
    return (var, RDF_TYPE, f"http://color#{color}")


def _num(term):
    return int(term[0]) if isinstance(term, tuple) else None


# The WHERE clause of each scenario, by hand: [(window index | "static", [triple patterns])], filter, projection.
RSP4J_QUERIES = {
    "tp-tumbling-rstream": ([(0, [_type("?green", "Green")])], None, ["green"]),
    "tp-count-tumbling-rstream": ([(0, [_type("?green", "Green")])], None, "count:green"),
    "two-windows-same-stream": ([(0, [_type("?green", "Green")]), (1, [_type("?red", "Red")])], None,
                                ["green", "red"]),
    "two-windows-static-join": ([("static", [("?green", "http://color#source", "?source"),
                                             ("?red", "http://color#source", "?source")]),
                                 (0, [_type("?green", "Green")]), (1, [_type("?red", "Red")])], None,
                                ["green", "red", "source"]),
    "two-streams-cross-product": ([(0, [_type("?green", "Green")]), (1, [_type("?red", "Red")])], None,
                                  ["green", "red"]),
    "two-streams-join": ([(0, [_type("?blue", "Blue")]), (1, [_type("?blue", "Blue")])], None, ["blue"]),
    "filter-iri-sliding-istream": ([(0, [_type("?green", "Green")])], lambda m: m["green"] == "http://test/S4",
                                   ["green"]),
    "filter-var-equality": ([(0, [_type("?green", "Green"), _type("?green2", "Green")])],
                            lambda m: m["green"] == m["green2"], ["green", "green2"]),
    "filter-value-gt": ([(0, [("?obs", HAS_VALUE, "?value")])], lambda m: _num(m["value"]) > 40, ["value"]),
    "filter-value-conjunction": ([(0, [("?obs", HAS_VALUE, "?value"), ("?obs2", HAS_VALUE, "?value2")])],
                                 lambda m: _num(m["value2"]) >= 40 and _num(m["value"]) > _num(m["value2"]),
                                 ["value"]),
    "filter-outside-windows": ([(0, [_type("?green", "Green")]), (1, [_type("?green2", "Green")])],
                               lambda m: m["green"] == m["green2"], ["green", "green2"]),
}

# Window contents per scenario, per window, per evaluation instant (from the scenario notes).
TUMBLING_2S = {2000: ["S1", "S2"], 4000: ["S3", "S4"], 6000: ["S5", "S6"]}
SLIDING_4S = {2000: ["S1", "S2"], 4000: ["S1", "S2", "S3", "S4"], 6000: ["S3", "S4", "S5", "S6"]}
SLIDING_10S = {5000: ["S1", "S2", "S3", "S4"]}
RSP4J_CONTENTS = {
    "tp-tumbling-rstream": [TUMBLING_2S],
    "tp-count-tumbling-rstream": [TUMBLING_2S],
    "tp-wrong-window": [TUMBLING_2S],
    "two-windows-same-stream": [TUMBLING_2S, SLIDING_4S],
    "two-windows-static-join": [TUMBLING_2S, SLIDING_4S],
    "two-streams-cross-product": [{2000: ["S1"], 4000: ["S3", "S4"], 6000: ["S5"]},
                                  {2000: ["S2"], 4000: ["S2", "S3"], 6000: ["S3", "S5", "S6"]}],
    "two-streams-join": [{2000: ["S1"], 4000: ["S3", "S4"], 6000: ["S5"]},
                         {2000: ["S2"], 4000: ["S2", "S3"], 6000: ["S3", "S5", "S6"]}],
    "filter-iri-sliding-istream": [SLIDING_10S],
    "filter-var-equality": [SLIDING_10S],
    "filter-value-gt": [SLIDING_10S],
    "filter-value-conjunction": [SLIDING_10S],
    "filter-outside-windows": [SLIDING_10S, SLIDING_10S],
}


def _term(value):
    return (value["value"], value["datatype"]) if isinstance(value, dict) else value


def _match(patterns, triples, start):
    solutions = [dict(start)]
    for pattern in patterns:
        nxt = []
        for mu in solutions:
            for triple in triples:
                ext = dict(mu)
                for pos, term in zip(pattern, triple):
                    if pos.startswith("?"):
                        if ext.setdefault(pos[1:], term) != term:
                            break
                    elif pos != term:
                        break
                else:
                    nxt.append(ext)
        solutions = nxt
    return solutions


def _local(name: str) -> str:
    return name.split("/")[-1]


@pytest.mark.testdata
@pytest.mark.parametrize("scenario_id", sorted(RSP4J_CONTENTS))
def test_rsp4j_scenario(spark, scenario_id):
    """Each RSP4J scenario under the rsp4j profile: evaluation instants, window contents, and (evaluating the
    scenario's simple WHERE clause over those contents in Python) the exact bindings in order."""
    scenario = _load_rsp4j()[scenario_id]
    assert set(RSP4J_CONTENTS) == set(_load_rsp4j())
    if scenario_id == "tp-wrong-window":
        with pytest.raises(QueryError, match="undeclared window"):
            compile_query(scenario["query"])
        assert scenario["expected_count"] == 0  # the engine rejects the query: no output
        query = scenario["query"].replace("<http://test/wrongwindow>", "<http://test/window>")
    else:
        query = scenario["query"]
    plan = compile_query(query)
    profile, timeline = get_profile("rsp4j"), Timeline.numeric()  # scenario times are milliseconds

    frames, triples_of = {}, {}
    for stream_iri, items in scenario["streams"].items():
        rows = []
        for i, item in enumerate(items):
            name = f"{_local(stream_iri)}#{i}"
            rows.append((name, item["t"]))
            triples_of[name] = [tuple(_term(x) for x in triple) for triple in item["triples"]]
        frames[stream_iri] = elements_frame(spark, rows)
    inputs = []
    for decl in plan.dataset.windows:
        stream = frames[decl.stream.value]
        inputs.append(WindowInput(resolve_window(decl.spec, profile, timeline), stream))

    et = evaluation_instants(inputs, profile)
    assigned = [contents(assign_window(wi.elements, wi.window, et.frame)) for wi in inputs]
    # element names -> the subjects they carry (S1, S2, ...), as the scenario notes list them
    labelled = [{t: sorted(_local(triples_of[e][0][0]) for e in names) for t, names in a.items()} for a in assigned]
    assert labelled == RSP4J_CONTENTS[scenario_id]
    assert et.values() == sorted(set().union(*[c.keys() for c in RSP4J_CONTENTS[scenario_id]]))

    if scenario_id == "tp-wrong-window":
        return
    groups, keep, projection = RSP4J_QUERIES[scenario_id]
    static = [tuple(_term(x) for x in t) for t in scenario.get("static_default_graph", [])]
    r2s = plan.r2s or profile.r2s
    emitted, previous = [], Counter()
    for t in et.values():
        solutions = [{}]
        for where, patterns in groups:
            if where == "static":
                triples = static
            else:
                triples = [tr for e in assigned[where].get(t, []) for tr in triples_of[e]]
            solutions = [s for mu in solutions for s in _match(patterns, triples, mu)]
        if keep is not None:
            solutions = [mu for mu in solutions if keep(mu)]
        if projection == "count:green":
            rows = [(("count", str(sum(1 for mu in solutions if "green" in mu))),)]
        else:
            rows = [tuple((v, mu[v]) for v in projection) for mu in solutions]
        current = Counter(rows)
        new = current if r2s == "RSTREAM" else current - previous
        emitted.extend(sorted(new.elements(), key=repr))
        previous = current
    expected = [tuple((k, _term(v)) for k, v in sorted(b.items())) for b in scenario["expected_bindings_in_order"]]
    assert [tuple(sorted(row)) for row in emitted] == expected
    assert len(emitted) == scenario["expected_count"]


# ========================================================================================================== profiles


def test_profiles_exist_and_errors_list_names():
    assert profile_names() == ["default", "csparql", "cqels", "sparqlstream", "rsp4j", "rspql-star",
                               "epsparql-unrestricted", "epsparql-chronological", "epsparql-recent"]
    assert get_profile(None) is PROFILES["default"]
    assert get_profile("RSPQL_STAR").name == "rspql-star"
    profile = get_profile("cqels")
    assert get_profile(profile) is profile
    with pytest.raises(ProfileError) as err:
        get_profile("esper")
    assert "unknown profile 'esper'" in str(err.value)
    for name in profile_names():
        assert name in str(err.value)
    with pytest.raises(ProfileError, match="bounds"):
        Profile(name="bad", description="", bounds="[]")
    with pytest.raises(ProfileError, match="names no trigger"):
        Profile(name="bad", description="", time_report=frozenset({"non-empty"}))
    recent = get_profile("epsparql-recent")
    assert (recent.selection, recent.consumption) == ("recent", "recent")
    assert get_profile("csparql").selection == "naive"



def test_profile_settings_are_typed():
    """Every setting of a profile is a member of its enumeration, also when given as text; a bad one names the
    allowed values."""
    from rspark.rsp.policies import R2S, Bounds, CloseRule, Consumption, ReportPolicy, Selection, WindowContent

    star = get_profile("rspql-star")
    assert star.bounds is Bounds.CLOSED_OPEN and star.close_rule is CloseRule.BEFORE
    assert star.window_content is WindowContent.DATASET
    assert star.time_report == frozenset({ReportPolicy.PERIODIC})
    assert all(isinstance(p, ReportPolicy) for p in star.time_report | star.other_report)
    recent = get_profile("epsparql-recent")
    assert (recent.selection is Selection.RECENT and recent.consumption is Consumption.RECENT
            and recent.r2s is R2S.ISTREAM)
    custom = Profile(name="mine", description="", bounds="[)", r2s="DSTREAM", time_report={"periodic", "non-empty"})
    assert custom.bounds is Bounds.CLOSED_OPEN and custom.r2s is R2S.DSTREAM
    assert custom.time_report == frozenset({ReportPolicy.PERIODIC, ReportPolicy.NON_EMPTY})
    with pytest.raises(ProfileError) as err:
        Profile(name="bad", description="", selection="greedy")
    assert str(err.value) == ("profile 'bad': invalid selection 'greedy' (expected one of 'unrestricted', 'naive', "
                              "'chronological', 'recent')")
    with pytest.raises(WindowError, match=r"count window unit 'LINES' \(expected one of 'ELEMENTS', 'TRIPLES', "
                                          r"'BGP'\)"):
        CountWindow("LINES", 3)
    assert TimeWindow(range=10, slide=5, bounds="[)").bounds is Bounds.CLOSED_OPEN


def _policies(value: frozenset) -> str:
    triggers = sorted(value - {"non-empty"})
    return " + ".join(triggers + (["non-empty"] if "non-empty" in value else []))


def test_docs_table_matches_profiles():
    """docs/profiles.md has one row per profile and every cell agrees with the code."""
    rows = {}
    for line in (REPO / "docs" / "profiles.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 15:
            rows[cells[0].strip("`")] = cells
    assert list(rows) == profile_names()
    for name, cells in rows.items():
        p = get_profile(name)
        expected = [f"`{p.name}`", f"`{p.bounds}`", f"`{p.close_rule}`", str(p.t0),
                    "yes" if p.windows_before_t0 else "no", p.implicit_slide, _policies(p.time_report),
                    _policies(p.other_report), p.r2s, "yes" if p.emit_empty else "no", p.default_window, p.selection,
                    p.consumption or "none", p.window_content]
        assert cells[:14] == expected, name
        assert any(source in cells[14]
                   for source in ("RSEP-QL", "RSP-QL", "EP-SPARQL", "CSRBench", "RSP4J", "testdata")), name


# ==================================================================================================== property tests


def _oracle_time(stream, t, rng, slide, t0, offset, profile):
    """Seed definitions, one instant at a time: names of the elements in the window at t."""
    te = t - offset
    if profile == "default":  # RSEP-QL W^tau / docs/profiles.md: t' = t0 + floor((t - t0)/slide)*slide
        tp = t0 + (te - t0) // slide * slide
        return {e for e, ts in stream if tp - rng < ts <= tp}
    if profile == "csparql":  # the last close on the grid at or before t, [o, c)
        c = t0 + (te - t0) // slide * slide
        return {e for e, ts in stream if c - rng <= ts < c}
    # rspql-star, RSP-QL*, Def. 15: x = t0 + alpha + beta*i for the greatest i in N with x < tau
    x, i = None, 0
    while t0 + rng + slide * i < te:
        x, i = t0 + rng + slide * i, i + 1
    return set() if x is None else {e for e, ts in stream if x - rng <= ts < x}


streams = st.lists(st.integers(-5, 40), max_size=12).map(lambda ts: [(f"e{i}", t) for i, t in enumerate(ts)])
instant_lists = st.lists(st.integers(-10, 60), min_size=1, max_size=8, unique=True)
PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(stream=streams, rng=st.integers(1, 9), slide=st.integers(1, 9), t0=st.one_of(st.none(), st.integers(-5, 10)),
       offset=st.integers(0, 3), profile=st.sampled_from(["default", "csparql", "rspql-star"]),
       instants=instant_lists, strategy=st.sampled_from(["explode", "panes", "range", "bounds", "auto"]))
def test_property_time_window(spark, stream, rng, slide, t0, offset, profile, instants, strategy):
    p = get_profile(profile)
    w = TimeWindow(range=rng, slide=slide, t0=t0 or 0, offset=offset, bounds=p.bounds, close_rule=p.close_rule,
                 windows_before_t0=p.windows_before_t0, explicit_start=t0 is not None)
    got = pairs(assign_window(elements_frame(spark, stream), w, instants, strategy=strategy))
    expected = {(t, e) for t in instants for e in _oracle_time(stream, t, rng, slide, t0 or 0, offset, profile)}
    assert got == expected


@PROPERTY
@given(stream=streams, kind=st.sampled_from(["landmark", "interval", "now", "elements", "triples"]),
       a=st.integers(-5, 30), b=st.integers(0, 20), n=st.integers(1, 5), instants=instant_lists)
def test_property_other_windows(spark, stream, kind, a, b, n, instants):
    frame = elements_frame(spark, stream)
    if kind == "triples":  # each element carries 1 or 2 triples, ordered by subject inside the element
        quads = [(e, ts, i, f"s{j}", "p", "o") for i, (e, ts) in enumerate(stream) for j in range(1 + i % 2)]
        qframe = spark.createDataFrame(quads, "element string, ts long, seq long, s string, p string, o string")
        got = {(r.instant, r.element, r.s) for r in
               assign_window(frame, CountWindow("TRIPLES", n), instants, quads=qframe).collect()}
        expected = set()
        for t in instants:
            before = sorted((q for q in quads if q[1] <= t), key=lambda q: (q[1], q[2], q[3]))
            expected |= {(t, q[0], q[3]) for q in before[max(0, len(before) - n):]}
        assert got == expected
        return
    if kind == "elements":
        window = CountWindow("ELEMENTS", n)

        def content(t):
            before = sorted(((ts, i, e) for i, (e, ts) in enumerate(stream) if ts <= t))
            return {e for _, _, e in before[max(0, len(before) - n):]}
    elif kind == "landmark":
        window = LandmarkWindow(a)

        def content(t):
            return {e for e, ts in stream if a <= ts <= t}
    elif kind == "interval":
        window = IntervalWindow(a, a + b)

        def content(t):
            return {e for e, ts in stream if a <= ts <= a + b and ts <= t}
    else:
        window = NowWindow()

        def content(t):
            return {e for e, ts in stream if ts == t}
    got = pairs(assign_window(frame, window, instants))
    assert got == {(t, e) for t in instants for e in content(t)}


@PROPERTY
@given(stream=streams.filter(bool), rng=st.integers(1, 9), data=st.data(), t0=st.one_of(st.none(), st.integers(-5, 10)),
       offset=st.integers(0, 3), profile=st.sampled_from(["default", "csparql", "sparqlstream", "rspql-strict"]),
       until=st.one_of(st.none(), st.integers(0, 50)))
def test_property_window_close_instants(spark, stream, rng, data, t0, offset, profile, until):
    """Window close = every instant at which a new window becomes the evaluated one, from the first window that
    holds (or follows) the first element, not before STARTING AT, up to until; non-empty keeps those with
    content."""
    slide = data.draw(st.integers(1, rng))  # sliding or tumbling (range >= slide)
    if profile == "rspql-strict":  # RSP-QL*'s windows reported on close
        p = get_profile("rspql-star").with_settings(name=profile, time_report=frozenset({"window-close"}))
        oracle_profile = "rspql-star"
    else:
        p, oracle_profile = get_profile(profile), ("default" if get_profile(profile).bounds == "(]" else "csparql")
    w = TimeWindow(range=rng, slide=slide, t0=t0 or 0, offset=offset, bounds=p.bounds, close_rule=p.close_rule,
                 windows_before_t0=p.windows_before_t0, explicit_start=t0 is not None)
    frame = elements_frame(spark, stream)
    got = evaluation_instants([WindowInput(w, frame)], p, until=until).values()

    first = min(ts for _, ts in stream)
    last = max(ts for _, ts in stream) if until is None else until
    origin = t0 or 0

    def window_at(t):
        return _oracle_time([(str(ts), ts) for ts in range(-100, 200)], t, rng, slide, origin, offset, oracle_profile)

    changes = [t for t in range(-60, last + 1) if window_at(t) and window_at(t) != window_at(t - 1)]
    # the first window that holds the first element, or lies after it (RSP-QL* has no window before t0)
    holding_first = [t for t in changes if max(map(int, window_at(t))) >= first]
    expected = [t for t in changes if holding_first and t >= holding_first[0]
                and (t0 is None or t - offset - (1 if p.close_rule == "<" else 0) >= origin)]
    if "non-empty" in p.time_report:
        expected = [t for t in expected if _oracle_time(stream, t, rng, slide, origin, offset, oracle_profile)]
    assert got == expected


# ============================================================================================================== memory


def test_assignment_never_collects_elements(spark, monkeypatch):
    """Building the plans brings only aggregates to the driver (a min/max row; for count windows a histogram of
    at most RANK_BUCKETS rows), whatever the stream size; the pairs are counted on the executors."""
    n = 200_000
    elements = spark.range(n).select(F.concat(F.lit("e"), F.col("id").cast("string")).alias("element"),
                                     F.col("id").alias("ts"), F.col("id").alias("seq"))
    collected = []  # rows brought to the driver by each call
    frame_class = type(elements)  # PySpark 4: the classic DataFrame subclass implements the actions

    def spy(name):
        real = getattr(frame_class, name)

        def wrapper(self, *args, **kwargs):
            result = real(self, *args, **kwargs)
            collected.append(1 if result is None or hasattr(result, "asDict") else len(result))
            return result
        return wrapper

    def refuse(self, *args, **kwargs):
        raise AssertionError("elements streamed to the driver")

    for name in ("collect", "toPandas", "take", "head", "first", "tail"):
        monkeypatch.setattr(frame_class, name, spy(name))
    monkeypatch.setattr(frame_class, "toLocalIterator", refuse)
    monkeypatch.setattr(frame_class, "toArrow", refuse)

    sliding = resolve("[RANGE 10 SLIDE 5]")
    et = evaluation_instants([WindowInput(sliding, elements)], "default")  # closes 0, 5, ..., 199995
    plans = {
        "time/explode": (assign_window(elements, sliding, et.frame, strategy="explode"), 1 + 6 + 10 * 39_998),
        "time/panes": (assign_window(elements, sliding, [100, 105, 199_999], strategy="panes"), 30),
        "landmark": (assign_window(elements, LandmarkWindow(0), [5, 10]), 6 + 11),
        "count": (assign_count(elements, 3, [0, 1_000, 199_999]), 1 + 3 + 3),
        "content-change": (assign_window(elements, CountWindow("ELEMENTS", 2),
                                         evaluation_instants([WindowInput(CountWindow("ELEMENTS", 2), elements)],
                                                             "default").frame), 2 * n - 1),
    }
    # min/max rows, and the count windows' histogram of at most RANK_BUCKETS rows: never the elements
    assert collected and max(collected) <= RANK_BUCKETS, collected
    for name, (df, expected) in plans.items():
        plan = df._jdf.queryExecution().optimizedPlan().toString()
        assert "LocalRelation" not in plan or name in ("time/panes", "landmark", "count"), name
        assert "ExistingRDD" not in plan, name
        assert df.count() == expected, name
    assert max(collected) <= RANK_BUCKETS, collected
