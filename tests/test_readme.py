"""The README's Python example runs as written, and the output it shows for the sample replay is real.

The ```python block of README.md is executed from the repository root in a fresh namespace, with its standard
output captured; the test checks what it prints, and that the first three records of its replay are, as JSON
lines, the three lines of `rspark replay ... --format jsonl` output pasted in the README."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def _blocks(text: str, lang: str) -> list[str]:
    """The bodies of the fenced code blocks opened with ```lang (an empty lang: blocks with no language)."""
    out, body, opened = [], None, None
    for line in text.splitlines(keepends=True):
        fence = re.match(r"^```([\w+-]*)[ \t]*$", line.rstrip("\n"))
        if body is None:
            if fence:
                body, opened = [], fence.group(1)
        elif fence and not fence.group(1):
            if opened == lang:
                out.append("".join(body))
            body = None
        else:
            body.append(line)
    return out


def _run(code: str) -> tuple[str, dict]:
    out = io.StringIO()
    namespace: dict = {"__name__": "__readme__"}
    cwd = os.getcwd()
    os.chdir(REPO)  # the example's paths are relative to the repository root
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - the README's own example
    finally:
        os.chdir(cwd)
    return out.getvalue(), namespace


def test_readme_has_two_python_examples_and_the_sample_output():
    text = README.read_text(encoding="utf-8")
    assert len(_blocks(text, "python")) == 2
    pasted = [b for b in _blocks(text, "") if b.startswith('{"query"')]
    assert len(pasted) == 1 and len(pasted[0].splitlines()) == 3


def test_readme_python_example_runs(spark):
    text = README.read_text(encoding="utf-8")
    printed, namespace = _run(_blocks(text, "python")[0])
    assert printed.splitlines() == [
        "http://example.org/s1 Kitchen",
        "http://example.org/s2 Lab",
        "http://example.org/s3 Kitchen",
        "15 records; first at 2026-03-01T13:00:00Z",
        "2026-03-01T13:10:00Z [('http://example.org/s3', '30.25'), ('http://example.org/s2', '25.35'), "
        "('http://example.org/s1', '20.7')]",
    ]
    table = namespace["table"]
    assert list(table.columns) == ["sensor", "label"]
    assert table.values.tolist() == [["http://example.org/s1", "Kitchen"], ["http://example.org/s2", "Lab"],
                                     ["http://example.org/s3", "Kitchen"]]

    # the README's pasted `rspark replay --format jsonl` lines are the first three records of the same replay
    records = namespace["records"]
    pasted = [b for b in _blocks(text, "") if b.startswith('{"query"')][0].splitlines()
    assert [json.dumps(r.to_json(), ensure_ascii=False) for r in records[:3]] == pasted


def test_readme_live_example_runs(spark):
    text = README.read_text(encoding="utf-8")
    printed, namespace = _run(_blocks(text, "python")[1])
    assert printed.splitlines() == ["14 records, the last at 2026-03-01T13:13:00Z ; lag 30001 ms"]
    assert "`14 records, the last at 2026-03-01T13:13:00Z ; lag 30001 ms`" in " ".join(text.split())
