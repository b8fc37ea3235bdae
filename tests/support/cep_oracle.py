"""A brute-force reading of RSEP-QL's event patterns (Dell'Aglio et al., EKAW 2016, Sec. 3.2 and 4.2-4.4, as fixed
by the project's shared spec), for tests: pure Python, independent of rspark, written for obviousness, not speed.

Data:
- a stream is a list of elements ``(name, ts, triples)``: ``triples`` an iterable of ``(s, p, o)`` strings;
- a window is :class:`Landmark` (``t0 <= ts <= t``) or :class:`TimeWindowSpec` (``t' - range < ts <= t'`` with
  ``t' = floor(t / slide) * slide``, the default profile's RSEP-QL W^tau);
- an event declaration maps an event name to ``(window name, [triple patterns])``; a pattern term starting with
  ``?`` is a variable;
- an event expression is a tree of :class:`Event`, :class:`First`, :class:`Last` and :class:`Seq` (selection
  ``None`` (unrestricted, eq. 7), ``"NAIVE"`` (eq. 9), ``"CHRONOLOGICAL"`` (eq. 10), ``"RECENT"`` (eq. 11)).

An event mapping is ``(mu, t1, t2)`` with ``mu`` a frozenset of ``(variable name without '?', term)`` pairs.

Evaluation at an instant is recursive with an active-window restriction: an exclusive upper bound ``ub`` on the
elements' timestamps (``W^sqcup[0, t3 - 1]`` of eq. 7) and a substitution (eq. 7's ``mu2(E1)``). With consumption
(Def. 8-10), each event mapping also carries the triple occurrences ``(window, element, triple)`` its BEP matches
used (the union over all the ways it is derived); after each instant those of every result event are consumed."""

from __future__ import annotations

import math
from dataclasses import dataclass

SELECTIONS = (None, "NAIVE", "CHRONOLOGICAL", "RECENT")


# ------------------------------------------------------------------------------------------------------- windows

@dataclass(frozen=True)
class Landmark:
    t0: int

    def holds(self, ts: int, t: int) -> bool:
        return self.t0 <= ts <= t


@dataclass(frozen=True)
class TimeWindowSpec:
    range: int
    slide: int

    def holds(self, ts: int, t: int) -> bool:
        close = (t // self.slide) * self.slide
        return close - self.range < ts <= close


# --------------------------------------------------------------------------------------------- event expressions

@dataclass(frozen=True)
class Event:
    name: str


@dataclass(frozen=True)
class First:
    expr: object


@dataclass(frozen=True)
class Last:
    expr: object


@dataclass(frozen=True)
class Seq:
    left: object
    right: object
    selection: str | None = None


def event_names(expr) -> list[str]:
    """The event names an expression uses, in first-use order."""
    if isinstance(expr, Event):
        return [expr.name]
    if isinstance(expr, First | Last):
        return event_names(expr.expr)
    out = event_names(expr.left)
    return out + [n for n in event_names(expr.right) if n not in out]


def variables(expr, events) -> list[str]:
    """The variables (without '?') of the events an expression uses, in first-use order."""
    out: list[str] = []
    for name in event_names(expr):
        for pattern in events[name][1]:
            for term in pattern:
                if term.startswith("?") and term[1:] not in out:
                    out.append(term[1:])
    return out


# ------------------------------------------------------------------------------------------------------ helpers

def before(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """The ordering of event intervals: (a1, a2) < (b1, b2) iff a2 < b2, or a2 == b2 and a1 < b1."""
    return a[1] < b[1] or (a[1] == b[1] and a[0] < b[0])


def compatible(m1, m2) -> bool:
    d1, d2 = dict(m1), dict(m2)
    return all(d2[v] == term for v, term in d1.items() if v in d2)


def union(m1, m2) -> frozenset:
    assert compatible(m1, m2), (m1, m2)
    return frozenset(m1) | frozenset(m2)


def firsts(events) -> set:
    """eq. 5: the events with no event strictly before them."""
    return {e for e in events if not any(before((o[1], o[2]), (e[1], e[2])) for o in events)}


def lasts(events) -> set:
    """eq. 6: the events with no event strictly after them."""
    return {e for e in events if not any(before((e[1], e[2]), (o[1], o[2])) for o in events)}


def bgp_solutions(patterns, graph) -> list[tuple[dict, frozenset]]:
    """Every solution mu of the BGP over the graph (a set of triples), with the triples mu(P): backtracking over the
    patterns, each matched against every triple."""
    results: list[tuple[dict, frozenset]] = []

    def extend(i: int, mu: dict) -> None:
        if i == len(patterns):
            matched = frozenset(tuple(mu[x[1:]] if x.startswith("?") else x for x in p) for p in patterns)
            results.append((dict(mu), matched))
            return
        for triple in graph:
            new = dict(mu)
            ok = True
            for term, value in zip(patterns[i], triple):
                if term.startswith("?"):
                    if new.setdefault(term[1:], value) != value:
                        ok = False
                        break
                elif term != value:
                    ok = False
                    break
            if ok:
                extend(i + 1, new)

    extend(0, {})
    seen: dict = {}
    for mu, matched in results:
        seen[frozenset(mu.items())] = (mu, matched)
    return list(seen.values())


# --------------------------------------------------------------------------------------------------- evaluation

class _Instant:
    """The evaluation of event expressions at one instant t, with the occurrences consumed before t."""

    def __init__(self, stream, windows, events, t: int, consumed: set) -> None:
        self.stream, self.windows, self.events, self.t, self.consumed = stream, windows, events, t, consumed

    @staticmethod
    def _add(out: dict, event, provenance) -> None:
        out[event] = out.get(event, frozenset()) | frozenset(provenance)

    def eval(self, expr, ub, subst: frozenset) -> dict:
        """{event mapping: the triple occurrences it uses} of ``expr`` under (ub, subst)."""
        if isinstance(expr, Event):
            return self._event(expr.name, ub, subst)
        if isinstance(expr, First):
            inner = self.eval(expr.expr, ub, subst)
            return {e: inner[e] for e in firsts(inner)}
        if isinstance(expr, Last):
            inner = self.eval(expr.expr, ub, subst)
            return {e: inner[e] for e in lasts(inner)}
        assert isinstance(expr, Seq), expr
        if expr.selection is None:
            return self._seq(expr, ub, subst)
        if expr.selection == "NAIVE":
            return self._naive(expr, ub, subst)
        assert expr.selection in ("CHRONOLOGICAL", "RECENT"), expr.selection
        return self._selected(expr, ub, subst)

    def _event(self, name: str, ub, subst) -> dict:
        """eq. 4, per element of the window at t before ub, over the element's remaining triples."""
        window, patterns = self.events[name]
        out: dict = {}
        for element, ts, triples in self.stream:
            if not (self.windows[window].holds(ts, self.t) and ts < ub):
                continue
            remaining = {tr for tr in triples if (window, element, tr) not in self.consumed}
            for mu, matched in bgp_solutions(patterns, remaining):
                mu = frozenset(mu.items())
                if compatible(mu, subst):
                    self._add(out, (mu, ts, ts), {(window, element, tr) for tr in matched})
        return out

    def _seq(self, expr: Seq, ub, subst) -> dict:
        """eq. 7: each E2 event with the E1 events of mu2(E1) strictly before its start."""
        out: dict = {}
        for (mu2, t3, t4), p2 in self.eval(expr.right, ub, subst).items():
            for (mu1, t1, _t2), p1 in self.eval(expr.left, min(ub, t3), union(subst, mu2)).items():
                self._add(out, (union(mu1, mu2), t1, t4), p1 | p2)
        return out

    def _naive(self, expr: Seq, ub, subst) -> dict:
        """eq. 9: LAST E1 and LAST E2, compatible, the first before the second."""
        left = self.eval(expr.left, ub, subst)
        right = self.eval(expr.right, ub, subst)
        out: dict = {}
        for (mu1, t1, t2) in lasts(left):
            for (mu2, t3, t4) in lasts(right):
                if compatible(mu1, mu2) and before((t1, t2), (t3, t4)):
                    self._add(out, (union(mu1, mu2), t1, t4), left[(mu1, t1, t2)] | right[(mu2, t3, t4)])
        return out

    def _selected(self, expr: Seq, ub, subst) -> dict:
        """eq. 10 / 11 per solution mapping of E2 (Example 10): in each group of E2 events with one mu2, among those
        with an E1 event before them, the first (CHRONOLOGICAL) / last (RECENT), paired with FIRST / LAST of those E1
        events."""
        pick = firsts if expr.selection == "CHRONOLOGICAL" else lasts
        right = self.eval(expr.right, ub, subst)
        preceded = {}
        for e2 in right:
            mu2, t3, _t4 = e2
            left = self.eval(expr.left, min(ub, t3), union(subst, mu2))
            if left:
                preceded[e2] = left
        out: dict = {}
        for mu2 in {e2[0] for e2 in preceded}:
            group = {e2 for e2 in preceded if e2[0] == mu2}
            for e2 in pick(group):
                left = preceded[e2]
                for e1 in pick(left):
                    self._add(out, (union(e1[0], mu2), e1[1], e2[2]), left[e1] | right[e2])
        return out


def _frozen(stream) -> list:
    return [(name, ts, frozenset(tuple(tr) for tr in triples)) for name, ts, triples in stream]


def evaluate_at(stream, windows, events, expr, t: int, consumed=frozenset()) -> dict:
    """{event mapping: the triple occurrences (window, element, triple) it uses} of ``expr`` at ``t`` (MATCH's active
    window W^id: no bound, no substitution), the occurrences ``consumed`` before t left out of the windows."""
    return _Instant(_frozen(stream), windows, events, t, set(consumed)).eval(expr, math.inf, frozenset())


def evaluate(stream, windows, events, expr, times, consume: str | None = None) -> dict:
    """{t: frozenset of event mappings of ``expr``} for each t of ``times`` (in the given order: ET). ``consume``:
    None (no consumption), or ``"CHRONOLOGICAL"`` / ``"RECENT"`` (both consume the occurrences of every result event
    at each instant for the later instants)."""
    stream = _frozen(stream)
    consumed: set = set()
    out: dict = {}
    for t in times:
        result = evaluate_at(stream, windows, events, expr, t, consumed)
        out[t] = frozenset(result)
        if consume is not None:
            for provenance in result.values():
                consumed |= provenance
    return out


def match(events_at_t) -> frozenset:
    """eq. 8: MATCH, the set of solution mappings of the events."""
    return frozenset(mu for mu, _t1, _t2 in events_at_t)
