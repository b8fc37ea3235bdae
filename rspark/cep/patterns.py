"""What the event algebra of a query is made of (RSEP-QL, Sec. 3.3 and 4.2): its basic event patterns, its
variables, whether a consumption policy can run one key at a time, and whether the query asks for the events'
intervals (getSTARTTIME(), getENDTIME(), getDURATION())."""

from __future__ import annotations

from collections.abc import Iterator

from rspark.algebra import ops
from rspark.algebra.expr import Call, TriplePattern
from rspark.model.terms import BlankNode, Variable
from rspark.rsp.policies import MatchConsumption, SeqSelection

INTERVAL_CALLS = frozenset({"GETSTARTTIME", "GETENDTIME", "GETDURATION"})
# the hidden variables that carry a solution's interval (start, end) in ticks; a name no query can write
START, END = ".start", ".end"


def event_nodes(expr) -> Iterator:
    """Every node of an event expression, depth first."""
    yield expr
    if isinstance(expr, ops.EventSeq):
        yield from event_nodes(expr.left)
        yield from event_nodes(expr.right)
    elif isinstance(expr, (ops.EventFirst, ops.EventLast)):
        yield from event_nodes(expr.expr)


def basic_patterns(expr) -> list[ops.EventPattern]:
    """The basic event patterns (EVENT w P) of an event expression, in order, each once."""
    out: list[ops.EventPattern] = []
    for node in event_nodes(expr):
        if isinstance(node, ops.EventPattern) and node not in out:
            out.append(node)
    return out


def pattern_triples(bep: ops.EventPattern) -> list[TriplePattern]:
    """The triple patterns of a basic event pattern (its pattern is a BGP: the translator checks it)."""
    return [n for n in ops.descendants(bep.op) if isinstance(n, TriplePattern)]


def _var(term) -> str | None:
    if isinstance(term, Variable):
        return term.name
    if isinstance(term, BlankNode):
        return "_:" + term.id
    return None


def bep_variables(bep: ops.EventPattern) -> tuple[str, ...]:
    names: list[str] = []
    for t in pattern_triples(bep):
        for term in (t.subject, t.predicate, t.object):
            name = _var(term)
            if name is not None and name not in names:
                names.append(name)
    return tuple(names)


def event_variables(expr) -> tuple[str, ...]:
    """The variables an event expression binds (every event mapping binds all of them: BEPs are BGPs)."""
    names: list[str] = []
    for bep in basic_patterns(expr):
        names += [v for v in bep_variables(bep) if v not in names]
    return tuple(names)


def asks_intervals(op) -> bool:
    """Whether a query calls getSTARTTIME(), getENDTIME() or getDURATION() anywhere."""
    return any(isinstance(n, Call) and n.name in INTERVAL_CALLS for n in ops.descendants(op))


def has_interval_joins(op) -> bool:
    """Whether a pattern uses EP-SPARQL's operators (SEQ, EQUALS, OPTIONALSEQ, EQUALSOPTIONAL between groups)."""
    return any(isinstance(n, ops.IntervalJoin) for n in ops.descendants(op))


def consumption_key(expr) -> tuple[str, ...]:
    """The variables by which a consumption policy can run one key at a time, or () when it cannot.

    Consumption removes triple occurrences (RSEP-QL, Def. 10); running it per key is exact when every triple
    occurrence belongs to one key and no selection compares events of different keys. So: the key is the variables
    that every triple pattern of every basic event pattern has, each always at the same position (then a triple
    matched by any pattern carries one value of the key), and FIRST, LAST and SEQ[NAIVE] appear only inside the
    left operand of a SEQ, where the right event's bindings (which hold the key) are substituted."""
    beps = basic_patterns(expr)
    triples = [t for b in beps for t in pattern_triples(b)]
    if not triples:
        return ()

    def positions(t: TriplePattern) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for i, term in enumerate((t.subject, t.predicate, t.object)):
            name = _var(term)
            if name is not None:
                out.setdefault(name, set()).add(i)
        return out

    per = [positions(t) for t in triples]
    common = set(per[0])
    for p in per[1:]:
        common &= set(p)
    key = []
    for name in sorted(common):
        if all(p[name] == per[0][name] for p in per):
            key.append(name)
    if not key or not _selections_substituted(expr, False):
        return ()
    return tuple(key)


def _selections_substituted(expr, substituted: bool) -> bool:
    if isinstance(expr, ops.EventPattern):
        return True
    if isinstance(expr, (ops.EventFirst, ops.EventLast)):
        return substituted and _selections_substituted(expr.expr, substituted)
    if isinstance(expr, ops.EventSeq):
        if expr.selection == SeqSelection.NAIVE:
            return substituted and _selections_substituted(expr.left, True) and \
                _selections_substituted(expr.right, True)
        return _selections_substituted(expr.left, True) and _selections_substituted(expr.right, substituted)
    return False


def consumes_events(op, profile) -> bool:
    """Whether a query's MATCH patterns consume events (``MATCH CONSUME ...``, or the profile's consumption policy):
    then an instant's answers depend on what every earlier instant consumed (RSEP-QL, Def. 10)."""
    default = MatchConsumption.of(profile.consumption)
    return any(isinstance(n, ops.Match) and (n.consume or default) != MatchConsumption.NONE
               for n in ops.descendants(op))
