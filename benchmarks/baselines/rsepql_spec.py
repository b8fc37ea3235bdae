"""A spec-literal evaluator of RSEP-QL's event patterns (the equations, window by window) and the self-check that
compares the Python matcher (:mod:`baselines.cep_matcher`) with it on small streams (``cep_throughput.py
--self-check``)."""

from __future__ import annotations

from collections import defaultdict

from workloads.stocks import POLICIES, RANGE, stream_events

from baselines.cep_matcher import match


def _first(events, last: bool = False):
    """FIRST (LAST) of an event set: the events with none strictly before (after) them; order: end, then start."""
    if not events:
        return set()
    key = (max if last else min)((e[2], e[1]) for e in events)
    return {e for e in events if (e[2], e[1]) == key}


def spec_eval(node, elems, ub, subst):
    """RSEP-QL's equations 4, 7, 9, 10, 11 as written, over one window's elements [(tick, company, price)]: a node
    is ('E', var) or (op, left, right); an event is (mu, start, end) with mu a frozenset of (var, value). ``elems``:
    the elements by company, and all of them under None; ``ub``: the exclusive upper bound, ``subst``: the
    substitution (a dict)."""
    if node[0] == "E":
        out = set()
        # the window's elements, or (a lookup, same answer) those of the company the substitution binds
        for t, k, p in elems[subst["company"]] if "company" in subst else elems[None]:
            if t >= ub:
                continue
            mu = {"company": k, node[1]: p}
            if all(subst.get(v, x) == x for v, x in mu.items()):
                out.add((frozenset(mu.items()), t, t))
        return out
    op, left, right = node
    out = set()
    if op == "SEQ[NAIVE]":
        for mu1, t1, t2 in _first(spec_eval(left, elems, ub, subst), last=True):
            for mu2, t3, t4 in _first(spec_eval(right, elems, ub, subst), last=True):
                d1, d2 = dict(mu1), dict(mu2)
                if all(d2.get(v, x) == x for v, x in d1.items()) and (t2 < t4 or (t2 == t4 and t1 < t3)):
                    out.add((mu1 | mu2, t1, t4))
        return out
    rights = spec_eval(right, elems, ub, subst)
    if op == "SEQ":
        for mu2, t3, t4 in rights:
            for mu1, t1, _t2 in spec_eval(left, elems, t3, {**subst, **dict(mu2)}):
                out.add((mu1 | mu2, t1, t4))
        return out
    last = op == "SEQ[RECENT]"
    groups: dict = defaultdict(list)
    for e2 in rights:
        lefts = spec_eval(left, elems, e2[1], {**subst, **dict(e2[0])})
        if lefts:
            groups[e2[0]].append((e2, lefts))
    for kept in groups.values():
        chosen = _first([e2 for e2, _ in kept], last=last)
        for (mu2, t3, t4), lefts in kept:
            if (mu2, t3, t4) in chosen:
                for mu1, t1, _t2 in _first(lefts, last=last):
                    out.add((mu1 | mu2, t1, t4))
    return out


def spec_match(events, policy: str):
    """The spec evaluator window by window (the windows computed afresh from the ticks), with consumption per
    (window, element) across the evaluation instants: (close, set of (company, p1, p2, p3, start, end))."""
    seq, consume = POLICIES[policy]
    tree = (seq, (seq, ("E", "p1"), ("E", "p2")), ("E", "p3"))
    closes = sorted({-(-t // RANGE) * RANGE for t, _, _ in events})
    consumed: set = set()
    for close in closes:
        elems: dict = defaultdict(list)
        for e in events:
            if close - RANGE < e[0] <= close and e[0] not in consumed:
                elems[None].append(e)
                elems[e[1]].append(e)
        found = spec_eval(tree, elems, float("inf"), {})
        if consume:  # the first and last elements of the result's events (E2's is not identified by an event:
            # no matter, a tumbling window's elements are in no later evaluation)
            for _mu, t1, t4 in found:
                consumed.update((t1, t4))
        yield close, {(dict(mu)["company"], dict(mu)["p1"], dict(mu)["p2"], dict(mu)["p3"], t1, t4)
                      for mu, t1, t4 in found}


def self_check() -> bool:
    """The matcher against the spec evaluator on small streams (few companies and prices: long per-company runs and
    repeated prices, where the policies differ), window by window, all policies; also that the matcher's matches
    are distinct (a set)."""
    ok = True
    for n, companies, prices, seed in [(2500, 80, 4, 1), (3000, 150, 3, 2), (2000, 50, 30, 3), (1500, 400, 2, 4)]:
        events = list(stream_events(n, companies, prices, seed))
        for policy in POLICIES:
            mine = {c: {m[:6] for m in ms} for c, ms in match(events, policy)}
            dupes = sum(len(ms) - len({m[:6] for m in ms}) for _, ms in match(events, policy))
            spec = {c: s for c, s in spec_match(events, policy)}
            same = {c: s for c, s in mine.items() if s} == {c: s for c, s in spec.items() if s} and not dupes
            total = sum(len(s) for s in spec.values())
            print(f"self-check n={n} companies={companies} prices={prices} {policy:22} spec {total:6} matches: "
                  f"{'same' if same else 'DIFFERENT'}", flush=True)
            ok &= same
    return ok

