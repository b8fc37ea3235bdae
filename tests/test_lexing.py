"""The query parser's quick lexer (rspark.syntax.lexing): each terminal's pattern compiled once per process,
matched terminal by terminal in the lexer's order; the answers (syntax trees, errors with their positions and
expected tokens) are Lark's own lexer's on every query of the W3C SPARQL suites and rspark's own queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from rspark.syntax import lexing
from rspark.syntax import parser as P

REPO = Path(__file__).resolve().parents[1]
TESTDATA = REPO.parent / "shared" / "testdata"


def _corpus() -> list[Path]:
    paths = sorted((TESTDATA / "w3c").rglob("*.rq")) + sorted((REPO / "tests" / "queries").rglob("*.rq"))
    paths += sorted((REPO / "rspark" / "samples").rglob("*.rq")) + sorted((TESTDATA / "rsp4j").rglob("*.rq"))
    return paths


def _answers(monkeypatch, made, texts: list[str]) -> list[str]:
    monkeypatch.setattr(P, "_parser", made)
    out = []
    for text in texts:
        try:
            out.append(repr(P.parse_query(text)))
        except P.QuerySyntaxError as exc:
            out.append(f"error: {exc}")
    return out


def test_the_quick_lexer_reads_every_query_as_lark_s_lexer_does(monkeypatch):
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in _corpus()]
    assert len(texts) > 1200
    # terminal by terminal throughout (no lexer ever builds its alternation), against Lark's alternations
    monkeypatch.setattr(lexing, "ALTERNATION_AFTER", 10**9)
    quick = _answers(monkeypatch, P._make_parser(), texts)
    lark = _answers(monkeypatch, P._make_parser(quick_lexer=False), texts)
    assert sum(a.startswith("error: ") for a in lark) > 100  # the suites' negative syntax tests
    assert [i for i, (a, b) in enumerate(zip(quick, lark)) if a != b] == []


def test_a_lexer_builds_its_alternation_after_its_first_tokens(monkeypatch):
    monkeypatch.setattr(lexing, "ALTERNATION_AFTER", 3)
    made = P._make_parser()
    text = "SELECT * WHERE { ?s ?p ?o . ?o ?q ?r . ?r ?t ?u }"
    expected = _answers(monkeypatch, P._make_parser(quick_lexer=False), [text])
    assert _answers(monkeypatch, made, [text]) == expected
    scanners = {id(lx): lx._scanner for lx in [*made.parser.lexer.lexers.values()] if lx._scanner is not None}
    assert scanners and all(isinstance(s, lexing.TerminalScanner) for s in scanners.values())
    assert any(s._scanner is not None for s in scanners.values())  # a lexer that matched more than 3 tokens
    assert all(s._scanner is None or s._left <= 0 for s in scanners.values())


@pytest.mark.parametrize("text", ["PREFIX", "?x", "<http://example.org/>", "ex:a", "12.5e3", "?x ?y"])
def test_fullmatch_names_the_terminal_lark_s_scanner_names(text):
    made = P._make_parser()
    scanner = made.parser.lexer.root_lexer._build_scanner()
    assert isinstance(scanner, lexing.TerminalScanner)
    assert scanner.fullmatch(text) == lexing.Scanner(*scanner._lark_args).fullmatch(text)
    assert (scanner.fullmatch(text) is None) == (" " in text)
