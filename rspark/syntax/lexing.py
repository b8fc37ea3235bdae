"""The query parser's lexer, made quick to start: each terminal's pattern compiled once per process, not once per
parser state.

Lark's contextual lexer keeps one lexer per set of terminals a parser state accepts (280 for rspark's grammar) and
compiles, the first time a state is reached, one alternation of all its terminals. The terminals holding
PN_CHARS_BASE's Unicode ranges (prefixed names, variables, blank node labels) are in most of those sets, so the
first query of a process compiled them dozens of times: about 0.3 s of CPU before the first query was parsed
(``rspark explain`` of the README's sample spent most of its time there).

:class:`TerminalScanner` answers as Lark's ``Scanner`` does, from the terminals' own patterns: at a position, the
first terminal in the lexer's order whose pattern matches there, which is the alternative an alternation of them in
that order matches (a backtracking matcher takes the first alternative that matches, not the longest). Each
pattern is compiled by the ``regex`` module, whose cache of compiled patterns makes a terminal's pattern one compile
per process whichever lexers hold it. Trying the terminals one by one costs more per token than one alternation,
so a lexer that has matched :data:`ALTERNATION_AFTER` tokens builds Lark's own scanner and uses it from then on: a
short query pays no alternation compile, a long one pays it only in the states it uses much.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from lark.lexer import BasicLexer, CallChain, ContextualLexer, Scanner, _create_unless

__all__ = ["ALTERNATION_AFTER", "TerminalScanner", "install"]

ALTERNATION_AFTER = 64  # tokens a lexer matches by its terminals' patterns before it builds Lark's alternation


class TerminalScanner:
    """Lark's ``Scanner`` (same constructor, ``allowed_types``, ``match`` and ``fullmatch``) over the terminals'
    patterns, one by one, until :data:`ALTERNATION_AFTER` matches; then Lark's own."""

    def __init__(self, terminals: list, g_regex_flags: int, re_: Any, use_bytes: bool) -> None:
        self.terminals = terminals
        self.allowed_types = {t.name for t in terminals}
        self._lark_args = (terminals, g_regex_flags, re_, use_bytes)
        self._patterns = [(re_.compile(t.pattern.to_regexp(), g_regex_flags), t.name) for t in terminals]
        self._left = ALTERNATION_AFTER
        self._scanner: Scanner | None = None

    def _alternation(self) -> Scanner:
        if self._scanner is None:
            self._scanner = Scanner(*self._lark_args)
        return self._scanner

    def match(self, text, pos: int):
        if self._scanner is not None or self._left <= 0:
            return self._alternation().match(text, pos)
        self._left -= 1
        for pattern, name in self._patterns:
            found = pattern.match(text.text, pos, text.end)
            if found:
                return found.group(0), name
        return None

    def fullmatch(self, text: str) -> str | None:
        for pattern, name in self._patterns:
            if pattern.fullmatch(text):
                return name
        return None


def _build_scanner(lexer: BasicLexer) -> TerminalScanner:
    """``BasicLexer._build_scanner`` (Lark 1.2 and 1.3) with a :class:`TerminalScanner`."""
    terminals, lexer.callback = _create_unless(lexer.terminals, lexer.g_regex_flags, lexer.re, lexer.use_bytes)
    for type_, f in lexer.user_callbacks.items():
        if type_ in lexer.callback:
            lexer.callback[type_] = CallChain(lexer.callback[type_], f, lambda t, type_=type_: t.type == type_)
        else:
            lexer.callback[type_] = f
    return TerminalScanner(terminals, lexer.g_regex_flags, lexer.re, lexer.use_bytes)


def install(contextual: ContextualLexer) -> int:
    """Have every lexer of ``contextual`` (a Lark parser's contextual lexer) build a :class:`TerminalScanner`;
    returns how many lexers it holds. A lexer whose scanner is built already keeps it."""
    lexers = {id(lx): lx for lx in [*contextual.lexers.values(), contextual.root_lexer]}
    for lexer in lexers.values():
        if isinstance(lexer, BasicLexer) and lexer._scanner is None:
            lexer._build_scanner = partial(_build_scanner, lexer)
    return len(lexers)
