"""The sequential evaluation of event patterns under a consumption policy (RSEP-QL, Sec. 4.4, Defs. 8-10).

A consumption policy makes each evaluation depend on the previous ones: the triple occurrences that took part in
the events of one evaluation instant are no longer input at the later ones. That state is carried from instant to
instant, so this part runs instant after instant, one key at a time (``patterns.consumption_key``), inside Spark's
Python workers (``rspark.spark.cep.match``). Everything else about events is a Spark plan.

The evaluator follows the equations: events are sets of (mu, t1, t2); an evaluation happens under an active window
that is an upper bound on timestamps (``ub``, exclusive) and a substitution (the bindings of the right event of an
enclosing SEQ). The order of events is by end, then start (``before``).
"""

from __future__ import annotations

from rspark.algebra import ops
from rspark.cep.patterns import event_nodes
from rspark.rsp.policies import SeqSelection

# an event: (mapping as a sorted tuple of (variable, term)), t1, t2 -> the triple occurrences it uses
Events = dict


def before(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """The order of events (RSEP-QL leaves it open, Sec. 4.2): by end, then by start."""
    return (a[1], a[0]) < (b[1], b[0])


def _compatible(mu: tuple, sub: dict) -> bool:
    return all(sub.get(k, v) == v for k, v in mu)


def _merge(mu1: tuple, mu2: tuple) -> tuple:
    return tuple(sorted(dict(mu1 + mu2).items()))


def _extreme(events: Events, last: bool) -> Events:
    if not events:
        return {}
    keys = [(t2, t1) for (_, t1, t2) in events]
    best = max(keys) if last else min(keys)
    return {e: occ for e, occ in events.items() if (e[2], e[1]) == best}


class Evaluator:
    """Evaluates an event expression at one instant over the matches of its basic event patterns at that instant:
    ``matches`` lists (index in ``beps``, mapping, ts, te, occurrences) (the mapping a sorted tuple of (variable,
    term) pairs; ``ts`` and ``te`` the start and end of the matched element's validity, equal for an element of one
    instant; the occurrences the triple occurrences the match uses). A basic event is (mapping, ts, te), and it is
    before an upper bound when it ends before it. The expression's basic event patterns are found
    in ``beps`` by equality once, here; each evaluation finds a node's matches by its identity (hashing an operator
    tree at every step costs more than the evaluation)."""

    def __init__(self, expr, beps: list) -> None:
        self.slots = {id(node): beps.index(node) for node in event_nodes(expr) if isinstance(node, ops.EventPattern)}
        self.matches: list = []

    def run(self, expr, sub: dict | None = None, ub: int | None = None) -> Events:
        sub = sub or {}
        if isinstance(expr, ops.EventPattern):
            out: Events = {}
            slot = self.slots[id(expr)]
            for b, mu, ts, te, occ in self.matches:
                if b == slot and (ub is None or te < ub) and _compatible(mu, sub):
                    key = (mu, ts, te)
                    out[key] = out.get(key, frozenset()) | occ
            return out
        if isinstance(expr, ops.EventFirst):
            return _extreme(self.run(expr.expr, sub, ub), last=False)
        if isinstance(expr, ops.EventLast):
            return _extreme(self.run(expr.expr, sub, ub), last=True)
        if isinstance(expr, ops.EventSeq):
            return self._seq(expr, sub, ub)
        raise TypeError(f"not an event expression: {expr!r}")

    def _seq(self, expr: ops.EventSeq, sub: dict, ub: int | None) -> Events:
        policy = expr.selection or SeqSelection.UNRESTRICTED
        out: Events = {}
        if policy == SeqSelection.NAIVE:
            lefts = _extreme(self.run(expr.left, sub, ub), last=True)
            rights = _extreme(self.run(expr.right, sub, ub), last=True)
            for (mu1, t1, t2), o1 in lefts.items():
                for (mu2, t3, t4), o2 in rights.items():
                    if before((t1, t2), (t3, t4)) and _compatible(mu1, dict(mu2)):
                        key = (_merge(mu1, mu2), t1, t4)
                        out[key] = out.get(key, frozenset()) | o1 | o2
            return out
        rights = self.run(expr.right, sub, ub)
        candidates = []  # (right event, its occurrences, the left events under its substitution)
        for (mu2, t3, t4), o2 in rights.items():
            lefts = self.run(expr.left, {**sub, **dict(mu2)}, t3)
            if lefts:
                candidates.append(((mu2, t3, t4), o2, lefts))
        if policy in (SeqSelection.CHRONOLOGICAL, SeqSelection.RECENT):
            last = policy == SeqSelection.RECENT
            best: dict = {}
            for (mu2, t3, t4), _, _ in candidates:
                k = (t4, t3)
                if mu2 not in best or (k > best[mu2] if last else k < best[mu2]):
                    best[mu2] = k
            candidates = [(r, o2, _extreme(lefts, last)) for r, o2, lefts in candidates
                          if (r[2], r[1]) == best[r[0]]]
        for (mu2, _t3, t4), o2, lefts in candidates:
            for (mu1, t1, _t2), o1 in lefts.items():
                key = (_merge(mu1, mu2), t1, t4)
                out[key] = out.get(key, frozenset()) | o1 | o2
        return out


def timestamps_needed(expr) -> int:
    """The fewest distinct timestamps among an instant's basic matches for ``expr`` to have an event there: a SEQ
    (but SEQ[NAIVE]) evaluates its left operand under the start of each right event (eq. 7), so the two operands'
    events have disjoint timestamps; SEQ[NAIVE] pairs events of the whole window, which may share them; FIRST and
    LAST keep some of their operand's events. Every basic event pattern of an expression is needed too: no
    operator has an event when an operand has none."""
    if isinstance(expr, ops.EventPattern):
        return 1
    if isinstance(expr, (ops.EventFirst, ops.EventLast)):
        return timestamps_needed(expr.expr)
    left, right = timestamps_needed(expr.left), timestamps_needed(expr.right)
    if expr.selection == SeqSelection.NAIVE:
        return max(left, right)
    return left + right


_PRUNE_AT = 64


class ConsumingEvaluator:
    """One key's evaluation under a consumption policy, instant after instant (RSEP-QL, Def. 10): :meth:`step`
    evaluates ``expr`` at an instant over its basic event patterns' matches there, leaving out those that use a
    consumed triple occurrence, and consumes the occurrences of every event found.

    The state is the consumed occurrences. Those that no match at an instant uses can be dropped then: a window's
    lower bound never moves back, so an element's triples in a later window are among those in the earlier ones,
    and a match at a later instant that used such an occurrence would be a match at this one (``matches`` must be
    every basic match of the key at the instant). The state is pruned so whenever it has doubled since it was last
    pruned (and holds more than ``_PRUNE_AT``): it stays within twice the consumed occurrences still in the
    windows, bounded by the windows' contents rather than by the stream's length.

    An occurrence is ``(window, element, te, s, p, o)``: the end of the element's validity ``te`` (its timestamp, for
    an element of one instant) lets a state carried from one run to the next (live mode's micro-batches) forget what
    no later window can hold (:meth:`forget_before`): a window holds an element while the element's end is at or
    after the window's start.
    :meth:`snapshot` gives the state as JSON-ready data and :meth:`resume` takes it back; with ``hold`` set to an
    instant, the state just before the first step at or after it is kept in ``held`` (the instant a later run
    evaluates again, as R2S's reference)."""

    def __init__(self, expr, beps: list, hold: int | None = None) -> None:
        self.expr = expr
        self.evaluator = Evaluator(expr, beps)
        self.consumed: set = set()
        self.limit = _PRUNE_AT  # the size of ``consumed`` above which it is pruned
        self.instant: int | None = None
        self.hold = hold
        self.held: dict | None = None

    def snapshot(self) -> dict:
        """The state as JSON-ready data: the consumed occurrences, the pruning limit and the last instant."""
        return {"consumed": [list(occ) for occ in self.consumed], "limit": self.limit, "instant": self.instant}

    def resume(self, state: dict) -> ConsumingEvaluator:
        """Takes back a :meth:`snapshot` (returns self)."""
        self.consumed = {tuple(occ) for occ in state["consumed"]}
        self.limit = max(_PRUNE_AT, int(state["limit"]))
        self.instant = state["instant"]
        return self

    def step(self, instant: int, matches: list) -> list[tuple]:
        """The events at ``instant``, after every earlier instant of the key, as (instant, mapping, t1, t2);
        ``matches`` lists (index in ``beps``, mapping, ts, te, occurrences)."""
        if self.instant is not None and instant <= self.instant:
            raise ValueError(f"consumption: instant {instant} after {self.instant} (instants must increase)")
        if self.held is None and self.hold is not None and instant >= self.hold:
            self.held = self.snapshot()
        self.instant = instant
        consumed = self.consumed
        if len(consumed) > self.limit:
            consumed.intersection_update(set().union(*[m[4] for m in matches]))
            self.limit = max(_PRUNE_AT, 2 * len(consumed))
        if consumed:
            matches = [m for m in matches if consumed.isdisjoint(m[4])]
        self.evaluator.matches = matches
        out = []
        for (mu, t1, t2), occ in self.evaluator.run(self.expr).items():
            out.append((instant, mu, t1, t2))
            consumed |= occ
        return out


def forget_before(state: dict, floors: dict) -> dict | None:
    """A :meth:`ConsumingEvaluator.snapshot` without the occurrences that no window can hold again: those of a
    window whose ``floors`` entry (the least timestamp its later instants may read) is above their end. None
    when nothing is left (a key with no state starts afresh)."""
    kept = [occ for occ in state["consumed"] if floors.get(occ[0]) is None or occ[2] >= floors[occ[0]]]
    if not kept:
        return None
    return {"consumed": kept, "limit": max(_PRUNE_AT, 2 * len(kept)), "instant": state["instant"]}
