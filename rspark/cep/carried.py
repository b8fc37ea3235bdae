"""A consuming query's state carried from one run to the next: live mode evaluates a query that consumes events
micro-batch after micro-batch, each run from the instant it last reported, so the consumption state of every key
(:class:`~rspark.cep.machine.ConsumingEvaluator`) is handed from run to run, and saved in live mode's checkpoint.

Saved, the state is JSON-ready data: ``{"scale": n, "from": t, "matches": {position: [[key, snapshot], ...]}}``,
per MATCH pattern of the query (by its position among the query's MATCH patterns) a list of ``[key, snapshot]``
pairs, ``key`` the values of the pattern's consumption key (``[0]`` for a pattern without one) and ``snapshot`` the
evaluator's, whose timestamps and instants are ticks at the time scale ``n`` (a numeric stream's scale grows when
finer timestamps arrive: the state is rescaled when it is read). A run takes each key's snapshot just before the
instant ``t`` (``resume``), from which the next run evaluates again: the run's last instant (R2S's reference for the
next run), or, for a query whose output stream other queries read, the last instant before the earliest one whose
records those queries may still read (its records from there on are that stream's content, evaluated again with
each run). The occurrences no later window can hold (below a window's ``floors`` entry) are forgotten, and so is
a key left with none. A state saved without ``from`` (none yet, or an older rspark's) resumes from the query's
last reported instant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rspark.cep.machine import forget_before
from rspark.errors import RsparkError


@dataclass
class CarriedConsumption:
    """``states``: MATCH position (a string, as JSON keys are) -> ``[key, snapshot]`` pairs; ``scale``: the time
    scale of their ticks; ``resume``: the instant the snapshots are taken just before, which the next run evaluates
    first (ticks; None: not known yet); ``floors``: a named window (encoded IRI) -> the least timestamp its
    instants from ``resume`` on may read (None: any, a window that is not time-based)."""

    states: dict = field(default_factory=dict)
    scale: int = 1
    resume: int | None = None
    floors: dict = field(default_factory=dict)

    @classmethod
    def load(cls, saved: dict, scale: int) -> CarriedConsumption:
        """A saved state (:meth:`saved`; ``{}`` for none yet) with its ticks at ``scale``, a multiple of the saved
        one (a stream's time scale only grows)."""
        old = saved.get("scale", scale)
        states = {position: list(pairs) for position, pairs in saved.get("matches", {}).items()}
        if old != scale:
            if scale % old:
                raise RsparkError(f"the consumption state's time scale {old} does not divide the stream's {scale}")
            states = {position: [[key, _rescaled(state, scale // old)] for key, state in pairs]
                      for position, pairs in states.items()}
        return cls(states, scale, resume_ticks(saved, scale))

    def saved(self) -> dict:
        """The state as live mode saves it (:meth:`load` reads it back)."""
        out = {"scale": self.scale, "matches": self.states}
        if self.resume is not None:
            out["from"] = self.resume
        return out

    def keyed(self, position: int) -> dict[tuple, dict]:
        """The snapshots of one MATCH pattern by key (a tuple)."""
        return {tuple(key): state for key, state in self.states.get(str(position), [])}

    def update(self, position: int, snapshots: dict[tuple, dict]) -> None:
        """The run's snapshots of the keys it evaluated replace theirs; every key's state then forgets what is
        below the floors."""
        merged = self.keyed(position)
        merged.update(snapshots)
        kept = []
        for key, state in merged.items():
            state = forget_before(state, self.floors)
            if state is not None:
                kept.append([list(key), state])
        self.states[str(position)] = kept


def resume_ticks(saved: dict, scale: int) -> int | None:
    """The instant a saved state resumes from (its ``from``), in ticks at ``scale`` (a multiple of the saved one);
    None when it does not say."""
    start = saved.get("from")
    return None if start is None else start * (scale // saved.get("scale", scale))


def occurrence_count(saved: dict) -> int:
    """The consumed occurrences a saved state (:meth:`CarriedConsumption.saved`) holds, over its keys and MATCH
    patterns."""
    return sum(len(state["consumed"]) for pairs in list(saved.get("matches", {}).values()) for _key, state in pairs)


def _rescaled(state: dict, factor: int) -> dict:
    """A snapshot with its timestamps and instant ``factor`` times finer."""
    return {"consumed": [[w, el, ts * factor, *spo] for w, el, ts, *spo in state["consumed"]],
            "limit": state["limit"], "instant": None if state["instant"] is None else state["instant"] * factor}


def check_saved(saved, where: str) -> dict:
    """``saved`` (a checkpoint's consumption state) if it has the shape :meth:`CarriedConsumption.load` reads,
    else an :class:`~rspark.errors.RsparkError` naming ``where`` and the first part that is wrong."""

    def bad(what: str):
        return RsparkError(f"{where}: the consumption state is not valid ({what}); remove the query's entry to "
                           "start it afresh")

    if not isinstance(saved, dict):
        raise bad("not an object")
    if not saved:
        return saved
    if not {"scale", "matches"} <= set(saved) <= {"scale", "from", "matches"} or not isinstance(saved["matches"], dict):
        raise bad('not {"scale": n, "from": t, "matches": {...}}')
    scale = saved["scale"]
    if not isinstance(scale, int) or isinstance(scale, bool) or scale < 1:
        raise bad(f"scale {scale!r}: not a positive integer")
    start = saved.get("from")
    if start is not None and (not isinstance(start, int) or isinstance(start, bool)):
        raise bad(f"from {start!r}: not an integer")
    for position, pairs in saved["matches"].items():
        if not (position.isascii() and position.isdigit()) or not isinstance(pairs, list):
            raise bad(f"MATCH {position!r}: not a list of [key, state] pairs")
        for i, pair in enumerate(pairs):
            at = f"MATCH {position}, pair {i}"
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], list)
                    and all(isinstance(k, (str, int)) for k in pair[0]) and isinstance(pair[1], dict)):
                raise bad(f"{at}: not a [key, state] pair")
            state = pair[1]
            if not (isinstance(state.get("consumed"), list) and isinstance(state.get("limit"), int)
                    and (state.get("instant") is None or isinstance(state.get("instant"), int))):
                raise bad(f"{at}: a state has consumed (a list), limit and instant (integers)")
            for occ in state["consumed"]:
                if not (isinstance(occ, list) and len(occ) == 6 and isinstance(occ[2], int)
                        and all(isinstance(x, str) for k, x in enumerate(occ) if k != 2)):
                    raise bad(f"{at}: an occurrence is [window, element, te, s, p, o], not {occ!r}")
    return saved
