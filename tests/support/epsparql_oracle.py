"""A brute-force reading of EP-SPARQL's interval semantics (Anicic et al., WWW 2011, Sec. 4.2, as fixed by the
project's shared spec), for tests: pure Python, independent of rspark, written for obviousness, not speed.

Data:
- a triple occurrence is ``(s, p, o, start, end)``; a stream element's triples occur at ``start == end == ts``,
  a triple derived by a CONSTRUCT rule over the interval of the solution that built it;
- terms are plain Python values: IRIs and other literals as strings (the tests write ``":ACME"``, ``'"AA"'``),
  numbers as ``int`` / ``Decimal``; a pattern term that is a string starting with ``?`` is a variable;
- time stamps are integers (numeric streams: the numbers; date-time streams: epoch milliseconds).

A solution is ``(mu, start, end)`` with ``mu`` a frozenset of ``(variable name without '?', term)`` pairs; every
operator returns a SET of solutions (the paper's operators "contain" tuples: one mapping with one interval is one
solution, however many ways it is derived).

Operators (EP-SPARQL Sec. 4.2):
- :class:`BGP`: one occurrence per pattern, mu defined exactly on the patterns' variables, [min starts, max ends];
- :class:`Join`: compatible pairs, [min, max];
- :class:`Filter`: the expression is a Python callable of an :class:`Env` (``env["x"]`` raises :class:`Unbound`
  for an unbound variable, which makes the filter false, as a SPARQL error does; ``env.bound("x")``,
  ``env.start``, ``env.end``, ``env.duration`` = end - start: getSTARTTIME(), getENDTIME(), getDURATION());
- :class:`SeqJoin` ``{A} SEQ {B}``: compatible, a.end < b.start, [a.start, b.end];
- :class:`EqJoin` ``{A} EQUALS {B}``: compatible, equal intervals;
- :class:`SeqRightJoin` ``{A} OPTIONALSEQ {B}`` (A optional): SeqJoin(A, B), plus each b with no compatible a
  ending before b starts;
- :class:`EqLeftJoin` ``{A} EQUALSOPTIONAL {B}`` (A mandatory): EqJoin(A, B), plus each a with no compatible b of
  the same interval;
- :class:`Union`, and :class:`LeftJoin` (OPTIONAL: compatible right solutions with right.end <= left.end, else the
  left alone) for completeness.

A query is evaluated at instant t over the occurrences of a landmark window (``t0 <= start`` and ``end <= t``),
closed under CONSTRUCT rules (the Q-closure: each rule's solutions add their template's triples as occurrences
with the solution's interval, until nothing new comes), and reported with ISTREAM: at each instant the multiset of
projected rows minus the previous instant's."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

XSD = "http://www.w3.org/2001/XMLSchema#"
PROV_TIME = "http://www.w3.org/ns/prov#generatedAtTime"
DAY = 86_400_000  # milliseconds


# ------------------------------------------------------------------------------------------------------- algebra

@dataclass(frozen=True)
class BGP:
    patterns: tuple  # of (s, p, o)

    def __init__(self, *patterns) -> None:
        object.__setattr__(self, "patterns", tuple(tuple(p) for p in patterns))


@dataclass(frozen=True)
class Join:
    left: object
    right: object


@dataclass(frozen=True)
class Union:
    left: object
    right: object


@dataclass(frozen=True)
class LeftJoin:
    left: object
    right: object


@dataclass(frozen=True)
class Filter:
    expr: object  # callable(Env) -> bool
    arg: object


@dataclass(frozen=True)
class SeqJoin:
    left: object
    right: object


@dataclass(frozen=True)
class EqJoin:
    left: object
    right: object


@dataclass(frozen=True)
class SeqRightJoin:
    left: object  # optional
    right: object  # mandatory


@dataclass(frozen=True)
class EqLeftJoin:
    left: object  # mandatory
    right: object  # optional


class Unbound(Exception):
    """A filter read an unbound variable: the filter is false for that solution (a SPARQL error)."""


class Env:
    """What a filter expression sees: one solution's bindings and interval."""

    def __init__(self, solution) -> None:
        mu, self.start, self.end = solution
        self.mu = dict(mu)
        self.duration = self.end - self.start

    def __getitem__(self, var: str):
        if var not in self.mu:
            raise Unbound(var)
        return self.mu[var]

    def bound(self, var: str) -> bool:
        return var in self.mu


# --------------------------------------------------------------------------------------------------- evaluation

def compatible(m1, m2) -> bool:
    d2 = dict(m2)
    return all(d2[v] == term for v, term in m1 if v in d2)


def combine(a, b):
    """The paper's a ⋈ b of two compatible solutions: the union of the mappings over [min starts, max ends]."""
    return (frozenset(a[0]) | frozenset(b[0]), min(a[1], b[1]), max(a[2], b[2]))


def _var(term) -> str | None:
    return term[1:] if isinstance(term, str) and term.startswith("?") else None


def _bgp(patterns, occurrences) -> set:
    out: set = set()

    def extend(i: int, mu: dict, start, end) -> None:
        if i == len(patterns):
            out.add((frozenset(mu.items()), start, end))
            return
        for s, p, o, t1, t2 in occurrences:
            new = dict(mu)
            ok = True
            for term, value in zip(patterns[i], (s, p, o)):
                v = _var(term)
                if v is None:
                    ok = term == value
                elif new.setdefault(v, value) != value:
                    ok = False
                if not ok:
                    break
            if ok:
                extend(i + 1, new, t1 if start is None else min(start, t1), t2 if end is None else max(end, t2))

    extend(0, {}, None, None)
    return out


def _holds(expr, solution) -> bool:
    try:
        return bool(expr(Env(solution)))
    except Unbound:
        return False


def evaluate(op, occurrences) -> set:
    """The set of solutions ``(mu, start, end)`` of ``op`` over the triple occurrences."""
    if isinstance(op, BGP):
        return _bgp(op.patterns, occurrences)
    if isinstance(op, Filter):
        return {s for s in evaluate(op.arg, occurrences) if _holds(op.expr, s)}
    left, right = evaluate(op.left, occurrences), evaluate(op.right, occurrences)
    if isinstance(op, Union):
        return left | right
    if isinstance(op, Join):
        return {combine(a, b) for a in left for b in right if compatible(a[0], b[0])}
    if isinstance(op, LeftJoin):
        joined = {a: [b for b in right if compatible(a[0], b[0]) and b[2] <= a[2]] for a in left}
        return {combine(a, b) for a, bs in joined.items() for b in bs} | {a for a, bs in joined.items() if not bs}
    if isinstance(op, SeqJoin):
        return {combine(a, b) for a in left for b in right if compatible(a[0], b[0]) and a[2] < b[1]}
    if isinstance(op, EqJoin):
        return {combine(a, b) for a in left for b in right
                if compatible(a[0], b[0]) and (a[1], a[2]) == (b[1], b[2])}
    if isinstance(op, SeqRightJoin):
        joined = {b: [a for a in left if compatible(a[0], b[0]) and a[2] < b[1]] for b in right}
        return {combine(a, b) for b, as_ in joined.items() for a in as_} | {b for b, as_ in joined.items() if not as_}
    if isinstance(op, EqLeftJoin):
        joined = {a: [b for b in right if compatible(a[0], b[0]) and (a[1], a[2]) == (b[1], b[2])] for a in left}
        return {combine(a, b) for a, bs in joined.items() for b in bs} | {a for a, bs in joined.items() if not bs}
    raise TypeError(f"not an operator: {op!r}")


# ------------------------------------------------------------------------------------------------------- queries

@dataclass(frozen=True)
class Select:
    """``SELECT columns WHERE where``: a column is a variable name (without '?'), or ``"getSTARTTIME()"``,
    ``"getENDTIME()"``, ``"getDURATION()"`` (the solution's start, end, end - start, as numbers)."""

    where: object
    columns: tuple

    def row(self, solution) -> tuple:
        mu, start, end = solution
        d = dict(mu)
        special = {"getSTARTTIME()": start, "getENDTIME()": end, "getDURATION()": end - start}
        return tuple(special[c] if c in special else d.get(c) for c in self.columns)


@dataclass(frozen=True)
class Construct:
    """A CONSTRUCT rule: each solution of ``where`` whose mapping binds every variable of a template triple gives
    that triple, as an occurrence over the solution's interval."""

    where: object
    template: tuple  # of (s, p, o)

    def triples(self, solution) -> list[tuple]:
        mu = dict(solution[0])
        out = []
        for pattern in self.template:
            terms = [mu.get(_var(t)) if _var(t) else t for t in pattern]
            if None not in terms:
                out.append(tuple(terms))
        return out


def landmark(occurrences, t0: int, t: int) -> list:
    """The occurrences a landmark window [t0, t] holds at instant t."""
    return [occ for occ in occurrences if t0 <= occ[3] and occ[4] <= t]


def closure(occurrences, rules) -> list:
    """EP-SPARQL's Q-closure: the occurrences with every occurrence the rules derive from them (iterated)."""
    out = set(occurrences)
    while True:
        new = {(s, p, o, sol[1], sol[2]) for rule in rules for sol in evaluate(rule.where, out)
               for s, p, o in rule.triples(sol)} - out
        if not new:
            return sorted(out, key=repr)
        out |= new


def instants(occurrences) -> list[int]:
    """Content change: every distinct time stamp of the stream."""
    return sorted({occ[3] for occ in occurrences} | {occ[4] for occ in occurrences})


def replay(query, occurrences, *, t0: int, times=None, rules=()) -> list[tuple[int, list]]:
    """ISTREAM over a landmark window from t0, at each instant of ``times`` (default: content change): the list of
    ``(t, sorted new rows)`` of the instants with new rows. For a :class:`Select` a row is the tuple of its
    columns (None where unbound); for a :class:`Construct` the triples built by its new solutions (a solution is
    its mapping: CONSTRUCT has no interval columns). ``rules`` close the window's content first (the query itself
    is not one of them unless listed)."""
    times = instants(occurrences) if times is None else times
    out = []
    previous: Counter = Counter()
    for t in times:
        content = closure(landmark(occurrences, t0, t), rules)
        solutions = evaluate(query.where, content)
        if isinstance(query, Select):
            current = Counter(query.row(s) for s in solutions)
            new = sorted((current - previous).elements(), key=repr)
        else:
            current = Counter(s[0] for s in solutions)
            new = []
            for mu, n in (current - previous).items():  # the n latest solutions with that mapping are the new ones
                latest = sorted((s for s in solutions if s[0] == mu), key=lambda s: (s[2], s[1]))[-n:]
                new += [tr for s in latest for tr in query.triples(s)]
            new.sort(key=repr)
        previous = current
        if new:
            out.append((t, new))
    return out


# --------------------------------------------------------------------------------------------------- TriG input

def epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _value(term, prefix: str):
    """The oracle's value of a pyoxigraph term: an IRI under ``prefix`` as ``:local``, others ``<iri>``; integers
    and decimals as numbers; other literals as their N-Triples form."""
    kind = type(term).__name__
    if kind == "NamedNode":
        return ":" + term.value[len(prefix):] if term.value.startswith(prefix) else f"<{term.value}>"
    if kind == "Literal":
        dt = term.datatype.value
        if dt == XSD + "integer":
            return int(term.value)
        if dt == XSD + "decimal":
            return Decimal(term.value)
        if dt == XSD + "dateTime":
            return epoch_ms(term.value)
    return str(term)


def read_trig(path, prefix: str = "http://example.org/") -> list[tuple]:
    """The triple occurrences of a TriG stream file (each named graph an element stamped by its
    ``prov:generatedAtTime`` in the default graph: a number, or an xsd:dateTime read as epoch milliseconds); other
    default-graph triples are left out (the tests' streams have none)."""
    import pyoxigraph

    quads = list(pyoxigraph.parse(path=str(path), format=pyoxigraph.RdfFormat.TRIG))
    stamps = {q.subject.value: _value(q.object, prefix) for q in quads
              if type(q.graph_name).__name__ == "DefaultGraph" and q.predicate.value == PROV_TIME}
    out = []
    for q in quads:
        if type(q.graph_name).__name__ == "DefaultGraph":
            continue
        ts = stamps[q.graph_name.value]
        out.append((_value(q.subject, prefix), _value(q.predicate, prefix), _value(q.object, prefix), ts, ts))
    return out
