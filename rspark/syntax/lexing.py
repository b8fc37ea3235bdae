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

from functools import cache, partial
from typing import Any

from lark.lexer import BasicLexer, CallChain, ContextualLexer, PatternRE, PatternStr, Scanner, UnlessCallback

__all__ = ["ALTERNATION_AFTER", "TerminalScanner", "install"]

ALTERNATION_AFTER = 64  # tokens a lexer matches by its terminals' patterns before it builds Lark's alternation


class TerminalScanner:
    """Lark's ``Scanner`` (same constructor, ``allowed_types``, ``match`` and ``fullmatch``) over the terminals'
    patterns, one by one, until :data:`ALTERNATION_AFTER` matches; then Lark's own."""

    def __init__(self, terminals: list, g_regex_flags: int, re_: Any, use_bytes: bool) -> None:
        self.terminals = terminals
        self.allowed_types = {t.name for t in terminals}
        self._lark_args = (terminals, g_regex_flags, re_, use_bytes)
        self._patterns = [(_compiled(re_, t.pattern.to_regexp(), g_regex_flags), t.name) for t in terminals]
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


@cache
def _compiled(re_: Any, regexp: str, flags: int):
    """``re_.compile``, remembered here: the regex module's own cache is slower to look up than to use."""
    return re_.compile(regexp, flags)


@cache
def _matches_whole(re_: Any, regexp: str, text: str, flags: int) -> bool:
    """Whether ``regexp`` matches all of ``text`` from its start (as Lark's ``_get_match`` is compared)."""
    found = re_.match(regexp, text, flags)
    return found is not None and found.group(0) == text


@cache
def _unless(strings: tuple, flags: int, re_: Any, use_bytes: bool) -> UnlessCallback:
    return UnlessCallback(Scanner(list(strings), flags, re_, use_bytes=use_bytes))


def _create_unless(terminals: list, flags: int, re_: Any, use_bytes: bool) -> tuple[list, dict]:
    """Lark's ``lexer._create_unless`` (1.2 and 1.3: the same), its work shared by the lexers of every parser
    state: which keyword (a string terminal) each pattern terminal also matches is found once per pair, and the
    callback for a set of keywords is built once. Lark finds them again in each of the lexers, most of the rest of
    a first short query's parse."""
    strings = [t for t in terminals if isinstance(t.pattern, PatternStr)]
    embedded = set()
    callback = {}
    for retok in terminals:
        if not isinstance(retok.pattern, PatternRE):
            continue
        regexp = retok.pattern.to_regexp()
        unless = tuple(t for t in strings if t.priority == retok.priority
                       and _matches_whole(re_, regexp, t.pattern.value, flags))
        embedded.update(t for t in unless if t.pattern.flags <= retok.pattern.flags)
        if unless:
            callback[retok.name] = _unless(unless, flags, re_, use_bytes)
    return [t for t in terminals if t not in embedded], callback


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
