"""The dashboard of ``rspark serve`` (docs/service.md, "Dashboard") in headless Chromium.

The test starts ``python3 -m rspark serve`` on a free loopback port, declares a stream and registers a query over
HTTP, opens the dashboard, then pushes elements over HTTP and checks what the page shows: the query in the list,
one element mark on the time line per element pushed, the latest answer's values in the answers table, and the
late counter after a late push. It writes the screenshot that docs/service.md shows (docs/images/dashboard.png).
Another test holds the page's first polls and checks that it says it is loading until they answer.

It drives the system Chromium (Debian's ``chromium``) through Playwright, without ``playwright install``: a machine
without ``chromium`` fails this test (it does not skip)."""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.sse import Server

pytestmark = pytest.mark.spark

# the screenshot goes to the test's temporary directory; docs/service.md's image is made with
# RSPARK_DASHBOARD_SCREENSHOT=docs/images/dashboard.png python3 -m pytest tests/test_dashboard.py
SCREENSHOT_ENV = "RSPARK_DASHBOARD_SCREENSHOT"
EX = "http://example.org/"
QUERY = """PREFIX : <http://example.org/>
REGISTER RSTREAM :out AS
SELECT ?s (COUNT(*) AS ?n)
FROM NAMED WINDOW :w ON :obs [RANGE PT10S STEP PT2S]
WHERE { WINDOW :w { ?s :p ?o } } GROUP BY ?s"""
# two observations of one subject in order, consumed once found (its state carries their occurrences)
CONSUMING = """PREFIX : <http://example.org/>
SELECT ?s ?a ?b
FROM NAMED WINDOW :w ON :obs [RANGE PT10S STEP PT2S]
EVENT ON :w { ?s :p ?a } AS E1
EVENT ON :w { ?s :p ?b } AS E2
WHERE { MATCH CONSUME CHRONOLOGICAL { E1 SEQ[CHRONOLOGICAL] E2 } }"""
PREFIXES = ("@prefix : <http://example.org/> .\n@prefix prov: <http://www.w3.org/ns/prov#> .\n"
            "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n")
# one element a push, at increasing times; the window at 13:00:08, (12:59:58, 13:00:08], holds e1..e4: :s1 three
# triples (e1, e2, e4), :s2 two (e2, e3). e5 at 13:00:09 makes the instants before it due (lateness 0).
ELEMENTS = [
    ("e1", "13:00:01", ":s1 :p :o1 ."),
    ("e2", "13:00:03", ":s1 :p :o2 . :s2 :p :o3 ."),
    ("e3", "13:00:05", ":s2 :p :o4 ."),
    ("e4", "13:00:07", ":s1 :p :o5 ."),
    ("e5", "13:00:09", ":s3 :p :o6 ."),
]
LATE = ("e6", "13:00:06", ":s3 :p :o7 .")  # at or before 13:00:08, an instant already reported: late
MARKS = "#timeline .element-mark"


def trig(name: str, clock: str, triples: str) -> bytes:
    return (PREFIXES + f":{name} {{ {triples} }}\n"
            f':{name} prov:generatedAtTime "2026-03-01T{clock}Z"^^xsd:dateTime .\n').encode()


def request(method: str, url: str, body: bytes | None = None, ctype: str | None = None) -> tuple[int, object]:
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": ctype} if ctype else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode("utf-8", "replace")


@pytest.fixture
def serve(tmp_path):
    """Starts ``rspark serve`` on a free loopback port when called (after the browser checks): its base URL and a
    function giving the end of its log. The process is stopped after the test."""
    servers: list[Server] = []

    def start():
        server = Server(checkpoint=str(tmp_path / "ckpt"))
        servers.append(server)
        server.wait_ready()
        return server.url, server.log

    yield start
    for server in servers:
        server.stop()


def chromium() -> str:
    """The system Chromium's path, and Playwright: either missing, the test fails (it never skips)."""
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("the dashboard test needs the system Chromium (`chromium` on PATH, /usr/bin/chromium on Debian: "
                    "apt-get install chromium); it is not installed")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("the dashboard test needs Playwright for Python: python3 -m pip install -e '.[test]' (no "
                    "`playwright install`: it drives the system Chromium)")
    return path


@pytest.mark.slow
def test_dashboard_shows_queries_elements_answers_and_late_data(serve, tmp_path):
    """The dashboard of one ``rspark serve``: first, before anything is declared, its loading state
    (says_it_is_loading_until_its_first_poll_answers); then a query and a stream, each push's mark on the time line,
    the latest answer and its window, a late element counted and drawn, a consuming query's counter."""
    chromium_bin = chromium()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    base, log_tail = serve()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_bin, args=["--no-sandbox"])
        try:
            # first, on the service as it started (one service and browser for both checks: each costs seconds)
            says_it_is_loading_until_its_first_poll_answers(browser, base, log_tail, tmp_path)

            stream = json.dumps({"iri": EX + "obs", "lateness": 0}).encode()
            status, body = request("PUT", base + "/streams/obs", stream, "application/json")
            assert status == 201, body
            status, body = request("PUT", base + "/queries/q1", QUERY.encode(), "application/sparql-query")
            assert status == 201, body
            # a stream of JSON or CSV records (a mapping): its source cell says so
            mapping = ("timestamp: t\nmappings:\n  m:\n    s: http://example.org/$(id)\n"
                       "    po: [[http://example.org/v, $(v)]]\n")
            status, body = request("PUT", base + "/streams/readings", json.dumps({"mapping": mapping}).encode(),
                                   "application/json")
            assert status == 201, body

            page = browser.new_page(viewport={"width": 1280, "height": 640})
            page_errors: list[str] = []
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))
            page.goto(base + "/")

            def wait_for(js: str, arg, what: str, timeout: float) -> None:
                try:
                    page.wait_for_function(js, arg=arg, timeout=timeout * 1000)
                except PlaywrightTimeout:
                    marks = page.locator(MARKS).count()
                    pytest.fail(f"the dashboard did not show {what} within {timeout:.0f} s (element marks: {marks}, "
                                f"answer time: {page.text_content('#answer-time')!r}, late: "
                                f"{page.text_content('#q-late')!r}); service log:\n{log_tail()}")

            # the query and the stream are listed, and the query is selected
            wait_for("() => document.querySelector('#queries tbody tr[data-name=\"q1\"]') !== null", None,
                     "the query q1 in the list", 30)
            assert page.locator("#queries tbody tr").count() == 1
            assert page.locator('#queries tbody tr[data-name="q1"] td').first.text_content() == "q1"
            assert page.locator('#queries tbody tr[data-name="q1"] td').nth(1).text_content() == "obs"
            assert page.locator('#streams tbody tr[data-name="obs"] td').first.text_content() == "obs"
            assert page.locator('#streams tbody tr[data-name="obs"] td.source').text_content() == "push"
            assert page.locator('#streams tbody tr[data-name="readings"] td.source').text_content() == "push · records"
            # the source column is in view: the streams' table fits its card (1280 px wide), nothing cut off
            widths = page.evaluate("() => { const t = document.querySelector('#streams'); "
                                   "return [t.scrollWidth, t.parentElement.clientWidth]; }")
            assert widths[0] <= widths[1], widths
            wait_for("() => document.querySelector('#q-name').textContent === 'q1'", None, "q1's panel", 10)
            assert page.locator("#query-panel").is_visible()
            assert page.locator("#q-consumed").is_hidden()  # q1 consumes no events
            assert page.locator(MARKS).count() == 0

            # every push adds exactly one mark to the time line
            for i, element in enumerate(ELEMENTS, start=1):
                status, body = request("POST", base + "/streams/obs", trig(*element), "application/trig")
                assert status == 202, body
                assert body["accepted"] == 1
                wait_for("n => document.querySelectorAll('#timeline .element-mark').length >= n", i,
                         f"{i} element marks", 30)
                assert page.locator(MARKS).count() == i
            assert page.locator(MARKS + ".late").count() == 0
            # the window at the last instant reported is drawn as a band
            wait_for("() => document.querySelector('#answer-time').textContent === '2026-03-01T13:00:08Z'", None,
                     "the answer at 13:00:08", 180)
            wait_for("() => document.querySelectorAll('#timeline rect.band').length === 1", None,
                     "the window's band", 10)

            # the answers table holds the latest record's values: at 13:00:08, the window (12:59:58, 13:00:08]
            assert page.locator("#answers thead th").all_text_contents() == ["?s", "?n"]
            rows = [tuple(row.locator("td").all_text_contents()) for row in page.locator("#answers tbody tr").all()]
            assert sorted(rows) == [(":s1", "3"), (":s2", "2")]

            # a late element: counted on the query's late counter, and drawn as a late mark
            status, body = request("POST", base + "/streams/obs", trig(*LATE), "application/trig")
            assert status == 202, body
            wait_for("() => document.querySelector('#q-late').textContent === '1'", None, "one late element", 120)
            wait_for("() => document.querySelectorAll('#timeline .element-mark.late').length >= 1", None,
                     "a late mark", 30)
            assert page.text_content("#q-late") == "1"
            assert page.locator(MARKS).count() == len(ELEMENTS) + 1
            assert page.locator(MARKS + ".late").count() == 1
            late_cell = page.locator('#streams tbody tr[data-name="obs"] td').nth(4)
            wait_for("() => document.querySelectorAll('#streams tbody tr[data-name=\"obs\"] td')[4].textContent "
                     "=== '1'", None, "the stream's late count", 10)
            assert late_cell.text_content() == "1"
            # the late element changed no answer
            assert page.text_content("#answer-time") == "2026-03-01T13:00:08Z"
            rows = [tuple(row.locator("td").all_text_contents()) for row in page.locator("#answers tbody tr").all()]
            assert sorted(rows) == [(":s1", "3"), (":s2", "2")]

            page.wait_for_timeout(1500)  # one more poll: every counter as it stands
            screenshot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "dashboard.png")
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
            assert screenshot.stat().st_size > 10_000

            # a query that consumes events, registered now (evaluated over what the stream holds) and selected: its
            # consumed counter shows what the service reports
            status, body = request("PUT", base + "/queries/q2", CONSUMING.encode(), "application/sparql-query")
            assert status == 201, body
            wait_for("() => document.querySelector('#queries tbody tr[data-name=\"q2\"]') !== null", None,
                     "the query q2 in the list", 30)
            page.locator('#queries tbody tr[data-name="q2"]').click()
            wait_for("() => document.querySelector('#q-name').textContent === 'q2'", None, "q2's panel", 10)
            consumed = None
            for _ in range(60):
                status, view = request("GET", base + "/queries/q2")
                consumed = view["consumed"]
                if consumed:
                    break
                page.wait_for_timeout(500)
            assert consumed and consumed > 0, view
            wait_for("n => document.querySelector('[data-counter=\"consumed\"]').textContent === String(n)",
                     consumed, "q2's consumed counter", 10)
            assert page.locator("#q-consumed").is_visible()
            assert page_errors == []
        finally:
            browser.close()


def says_it_is_loading_until_its_first_poll_answers(browser, base: str, log_tail, tmp_path: Path) -> None:
    """On a service with no stream and no query yet: until ``GET /streams`` and ``GET /queries`` first answer, the
    page says it is loading, not that no stream or query is declared, nor counts of 0. The two requests are held by
    the browser (Playwright's routing) while the page is checked, then let through: the page then says that none is
    declared, and counts 0."""
    page = browser.new_page(viewport={"width": 1280, "height": 480})
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    held: list = []
    lists = (base + "/streams", base + "/queries")
    page.route(lambda url: url in lists, lambda route: held.append(route))
    page.goto(base + "/")
    page.wait_for_function("() => document.readyState === 'complete'")
    for _ in range(600):  # until both polls have asked (neither is answered)
        if len(held) == 2:
            break
        page.wait_for_timeout(50)
    assert sorted(route.request.url for route in held) == sorted(lists)
    assert page.text_content("#streams-empty") == "Loading the streams…"
    assert page.text_content("#queries-empty") == "Loading the queries…"
    assert page.locator("#streams-empty").is_visible() and page.locator("#queries-empty").is_visible()
    assert [page.text_content(f"#total-{k}") for k in ("streams", "queries", "late", "errors")] == ["-"] * 4
    assert page.text_content("#conn") == "connecting"
    screenshot = tmp_path / "dashboard-loading.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.stat().st_size > 5_000

    for route in held:
        route.continue_()
    page.wait_for_function("() => document.querySelector('#conn').textContent === 'live'", timeout=30_000)
    assert page.text_content("#streams-empty") == "No stream declared yet (PUT /streams/{name})."
    assert page.text_content("#queries-empty") == "No query registered yet (PUT /queries/{name})."
    assert [page.text_content(f"#total-{k}") for k in ("streams", "queries", "late", "errors")] == ["0"] * 4
    page.screenshot(path=str(tmp_path / "dashboard-empty.png"), full_page=True)
    assert page_errors == [], log_tail()
    page.close()
