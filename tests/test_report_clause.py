"""A window's report policies written in the query (``[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE, NON EMPTY]``):
RSP-QL (Dell'Aglio et al. 2015, Sec. 3) names the policies (window close, content change, non-empty content,
periodic); the clause replaces the profile's for that window, so the query reports at the same instants under every
profile (the profile still gives what the text leaves out: the window's bounds, its origin, empty records).

The stream is RSEP-QL's Figure 1 (tests/data/fig1.trig): G1..G5 at 2, 4, 6, 8, 10; ``:p`` triples in G1 (a1 b1),
G2 (a2 b2) and G5 (a3 b3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rspark import QuerySyntaxError

DATA = Path(__file__).parent / "data"
EX = "http://example.org/"


def query(window: str, register: str = "", r2s: str = "") -> str:
    return (f"PREFIX : <{EX}> {register} SELECT {r2s} ?x ?y FROM NAMED WINDOW :w ON :s {window} "
            "WHERE { WINDOW :w { ?x :p ?y } }")


# ----------------------------------------------------------------------------------------------- the syntax


@pytest.mark.parametrize("clause,policies", [
    ("REPORT ON WINDOW CLOSE", {"window-close"}),
    ("REPORT ON CONTENT CHANGE, NON EMPTY", {"content-change", "non-empty"}),
    ("report non empty on window close periodic", {"non-empty", "window-close", "periodic"}),
])
def test_the_clause_is_read_into_the_window(clause, policies):
    from rspark import compile_query, explain, parse_query
    from rspark.syntax.unparse import unparse

    text = query(f"[RANGE 4 SLIDE 4 {clause}]")
    spec = compile_query(text).dataset.windows[0].spec
    assert spec.report == policies
    ordered = [p for p in ("window-close", "content-change", "non-empty", "periodic") if p in policies]
    assert f"(range 4 slide 4) (report {' '.join(ordered)})" in explain(text)
    words = {"window-close": "ON WINDOW CLOSE", "content-change": "ON CONTENT CHANGE", "non-empty": "NON EMPTY",
             "periodic": "PERIODIC"}
    again = unparse(parse_query(text))
    assert f"[RANGE 4 SLIDE 4 REPORT {', '.join(words[p] for p in ordered)}]" in again
    assert compile_query(again).dataset.windows[0].spec == spec


def test_a_window_without_the_clause_has_the_profile_s_policies():
    from rspark import compile_query
    from rspark.model.time import TimeKind, Timeline
    from rspark.rsp.profiles import get_profile
    from rspark.rsp.report import report_policies
    from rspark.rsp.windows import resolve_window

    tl = Timeline.of(TimeKind.NUMERIC, 1)
    plain = compile_query(query("[RANGE 4 SLIDE 4]")).dataset.windows[0].spec
    written = compile_query(query("[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE]")).dataset.windows[0].spec
    assert plain.report is None
    for name in ("default", "csparql", "cqels", "rspql-star"):
        profile = get_profile(name)
        assert report_policies(profile, resolve_window(plain, profile, tl, first_ts=2)) == \
            set(profile.report_policies(True))
        assert report_policies(profile, resolve_window(written, profile, tl, first_ts=2)) == {"content-change"}


@pytest.mark.parametrize("text,at,message", [
    (query("[RANGE 4 REPORT NON EMPTY]"), "REPORT",
     "REPORT NON EMPTY only filters the instants another policy reports: add ON WINDOW CLOSE, ON CONTENT CHANGE, "
     "PERIODIC or EVERY d"),
    (query("[RANGE 4 REPORT PERIODIC, PERIODIC]"), "REPORT", "REPORT names PERIODIC twice"),
    (query("[RANGE 4 REPORT]"), "]", "unexpected ']'; expected EVERY, NON, ON, PERIODIC"),
    (query("[RANGE 4 REPORT EVERY 2, PERIODIC]"), "REPORT",
     "REPORT names PERIODIC twice (EVERY d is PERIODIC with a period)"),
    (query("[RANGE 4 REPORT EVERY 2 EVERY 3]"), "REPORT",
     "REPORT names PERIODIC twice (EVERY d is PERIODIC with a period)"),
    (query("[RANGE 4 REPORT EVERY 0]"), "0]", "REPORT EVERY period must be positive, got 0"),
    (query("[RANGE 4 SLIDE 2 REPORT EVERY 3]", "REGISTER RSTREAM :q COMPUTED EVERY 2 AS"), "WINDOW :w ON",
     "the REPORT clause of the window on this line gives its period (EVERY) and the query another (COMPUTED EVERY): "
     "leave one out"),
    (query("[RANGE 4 REPORT ON CLOSE]"), "CLOSE", "unexpected 'CLOSE'; expected WINDOW, CONTENT"),
    (query("[RANGE 4 SLIDE 2 REPORT ON WINDOW CLOSE]", "REGISTER RSTREAM :q COMPUTED EVERY 2 AS"), "WINDOW :w ON",
     "COMPUTED EVERY sets the period of a PERIODIC report policy, and the REPORT clause of the window on this line "
     "names none: add PERIODIC to it, or leave COMPUTED EVERY out"),
])
def test_a_clause_that_says_nothing_or_contradicts_is_refused(text, at, message):
    """Each error names the problem and where it is (line and column of the clause, the token, or the window)."""
    from rspark import compile_query

    with pytest.raises(QuerySyntaxError) as err:
        compile_query(text)
    column = text.index(at, text.index("[") if at != "WINDOW :w ON" else 0) + 1  # (the window's declaration)
    assert str(err.value) == f"<query>:1:{column}: {message}"


# ------------------------------------------------------------------------------------------------- replays

# [RANGE 4 SLIDE 4] under the default profile: windows (c-4, c] closing at c = 0, 4, 8, ...; the window evaluated at
# t is the last one closed at or before t. Window close: 4 and 8 (until 10, the last element). Content change: every
# element's timestamp, 2, 4, 6, 8, 10, each reading the last closed window: (-4, 0] at 2 (empty), (0, 4] at 4 and 6
# (a1 b1, a2 b2), (4, 8] at 8 and 10 (no :p triple).
A1, A2 = (("x", f"<{EX}a1>"), ("y", f"<{EX}b1>")), (("x", f"<{EX}a2>"), ("y", f"<{EX}b2>"))
FIRST_TWO = sorted([A1, A2])


def replay(spark, text: str, profile: str) -> list:
    from rspark.engine.engine import Engine
    from tests.test_live import rows

    with Engine(spark=spark, profile=profile) as eng:
        eng.add_stream(EX + "s", DATA / "fig1.trig")
        return [(time, found) for _, time, found in rows(eng.replay(text))]


def test_content_change_written_in_the_query_under_the_default_profile(spark):
    assert replay(spark, query("[RANGE 4 SLIDE 4]"), "default") == [(4, FIRST_TWO), (8, [])]
    assert replay(spark, query("[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE]"), "default") == \
        [(2, []), (4, FIRST_TWO), (6, FIRST_TWO), (8, []), (10, [])]
    # the window at 2, (-4, 0], holds no element; (4, 8] holds G3 and G4 (no :p triple): reported, empty
    assert replay(spark, query("[RANGE 4 SLIDE 4 REPORT ON CONTENT CHANGE NON EMPTY]"), "default") == \
        [(4, FIRST_TWO), (6, FIRST_TWO), (8, []), (10, [])]


def test_window_close_written_in_the_query_under_cqels(spark):
    """cqels reports on content change when the window holds an element (4, 6, 8 and 10: (4, 8] holds G3 and G4,
    without a :p triple) and leaves out empty records; the query's ON WINDOW CLOSE reports at the closes (4 and 8)
    instead (cqels's windows are (c-4, c] from 0, as the default profile's)."""
    assert replay(spark, query("[RANGE 4 SLIDE 4]", r2s="RSTREAM"), "cqels") == [(4, FIRST_TWO), (6, FIRST_TWO)]
    assert replay(spark, query("[RANGE 4 SLIDE 4 REPORT ON WINDOW CLOSE]", r2s="RSTREAM"), "cqels") == \
        [(4, FIRST_TWO)]


def test_periodic_with_computed_every(spark):
    """PERIODIC every COMPUTED EVERY 3 ticks from the window origin 0, at or after the first element: 3, 6, 9,
    each reading the last window closed: (-4, 0], (0, 4], (4, 8]."""
    text = query("[RANGE 4 SLIDE 4 REPORT PERIODIC]", "REGISTER RSTREAM :q COMPUTED EVERY 3 AS")
    assert replay(spark, text, "default") == [(3, []), (6, FIRST_TWO), (9, [])]


def test_report_every_gives_the_window_its_period():
    """REPORT EVERY d is PERIODIC with the period d, for that window alone (no COMPUTED EVERY, no REGISTER)."""
    from rspark import compile_query, explain, parse_query
    from rspark.syntax.unparse import unparse

    text = query("[RANGE 4 SLIDE 4 REPORT EVERY 3, NON EMPTY]")
    spec = compile_query(text).dataset.windows[0].spec
    assert spec.report == {"periodic", "non-empty"} and spec.report_every.amount == 3
    assert "(range 4 slide 4) (report non-empty periodic every 3)" in explain(text)
    again = unparse(parse_query(text))
    assert "[RANGE 4 SLIDE 4 REPORT NON EMPTY, EVERY 3]" in again
    assert compile_query(again).dataset.windows[0].spec == spec


def test_periodic_with_report_every(spark):
    """The same instants as PERIODIC with COMPUTED EVERY 3 (above), the period written in the window: 3, 6, 9. A
    count window's periods count from 0: [RANGE ELEMENTS 2 REPORT EVERY 5] at 5 (G1, G2) and 10 (G4, G5)."""
    assert replay(spark, query("[RANGE 4 SLIDE 4 REPORT EVERY 3]"), "default") == \
        [(3, []), (6, FIRST_TWO), (9, [])]
    assert replay(spark, query("[RANGE ELEMENTS 2 REPORT EVERY 5]"), "cqels") == \
        [(5, FIRST_TWO), (10, [(("x", f"<{EX}a3>"), ("y", f"<{EX}b3>"))])]


def test_explain_says_which_policies_each_window_reports_by_and_where_they_come_from(tmp_path, capsys):
    from rspark.cli import main

    path = tmp_path / "q.rq"
    path.write_text(f"PREFIX : <{EX}> SELECT ?s FROM NAMED WINDOW :w ON :s [RANGE 4 SLIDE 2 REPORT ON CONTENT CHANGE] "
                    "FROM NAMED WINDOW :v ON :s [RANGE 4] FROM STREAM :t [RANGE TRIPLES 3] "
                    "WHERE { WINDOW :w { ?s ?p ?o } WINDOW :v { ?s ?p ?o } }")
    assert main(["explain", "--profile", "csparql", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3:] == [
        f"; window <{EX}w> on <{EX}s> reports: content-change (the query's REPORT clause)",
        f"; window <{EX}v> on <{EX}s> reports: window-close non-empty (profile csparql)",
        f"; the window on <{EX}t> reports: content-change non-empty (profile csparql)"]
    assert main(["explain", str(path)]) == 0  # the default profile
    default = capsys.readouterr().out.splitlines()
    assert default[-2] == f"; window <{EX}v> on <{EX}s> reports: window-close (profile default)"
