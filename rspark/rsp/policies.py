"""The settings of the stream model as types: report policies, window conventions, R2S operators and the event
policies, each an enumeration of what the papers define.

Each is a ``StrEnum``: a member equals its text (``ReportPolicy.WINDOW_CLOSE == "window-close"``), so profiles and
queries may name settings by their text, and the text is what messages and ``docs/profiles.md`` show. Reading a
setting from text goes through :func:`setting`, which names the allowed values when the text is none of them
(as RSP4J's ``Tick``, ``ReportGrain`` and ``StreamOperator``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar


class ReportPolicy(StrEnum):
    """When a window is evaluated (RSP-QL's report policies, as SECRET names them)."""

    WINDOW_CLOSE = "window-close"  # when a time window closes (every slide instant)
    CONTENT_CHANGE = "content-change"  # when an element enters the stream
    NON_EMPTY = "non-empty"  # ... and only when the window content is not empty
    PERIODIC = "periodic"  # every d (COMPUTED EVERY d; without it, every slide)


TRIGGERS = frozenset({ReportPolicy.WINDOW_CLOSE, ReportPolicy.CONTENT_CHANGE, ReportPolicy.PERIODIC})


class Bounds(StrEnum):
    """Which end of a time window's range is open: ``(c - range, c]`` or ``[c - range, c)``."""

    OPEN_CLOSED = "(]"
    CLOSED_OPEN = "[)"


class CloseRule(StrEnum):
    """The window evaluated at ``t`` is the last one that closed at ``c <= t`` (RSEP-QL, Sec. 3.2) or at
    ``c < t`` (RSP-QL*, Def. 15)."""

    AT_OR_BEFORE = "<="
    BEFORE = "<"


class T0Policy(StrEnum):
    """Where windows start counting when the query gives no ``STARTING AT`` (or a number: stream units)."""

    ZERO = "zero"
    FIRST_ELEMENT = "first-element"


class ImplicitSlide(StrEnum):
    """``[RANGE r]`` with no SLIDE: tumbling (slide = range) or sliding with every tick."""

    RANGE = "range"
    TICK = "tick"


class R2S(StrEnum):
    """The relation-to-stream operators."""

    RSTREAM = "RSTREAM"  # the whole answer at every instant
    ISTREAM = "ISTREAM"  # what is new since the previous instant
    DSTREAM = "DSTREAM"  # what is gone since the previous instant


class Selection(StrEnum):
    """The selection policy of a SEQ (RSEP-QL, Sec. 4, eqs. 7, 9-11)."""

    UNRESTRICTED = "unrestricted"
    NAIVE = "naive"
    CHRONOLOGICAL = "chronological"
    RECENT = "recent"


class Consumption(StrEnum):
    """The consumption policy of a MATCH (RSEP-QL, Defs. 8-10); no consumption is ``None``."""

    CHRONOLOGICAL = "chronological"
    RECENT = "recent"


class SeqSelection(StrEnum):
    """The selection policy a query names in ``E1 SEQ[policy] E2``, as written (upper case; a plain ``SEQ`` names
    none and takes the profile's :class:`Selection`, of the same names)."""

    UNRESTRICTED = "UNRESTRICTED"
    NAIVE = "NAIVE"
    CHRONOLOGICAL = "CHRONOLOGICAL"
    RECENT = "RECENT"

    @classmethod
    def of(cls, selection: Selection | str) -> SeqSelection:
        """A profile's selection policy as ``SEQ[...]`` names it (``Selection.RECENT`` -> ``SeqSelection.RECENT``)."""
        return cls[Selection(selection).name]


class MatchConsumption(StrEnum):
    """The consumption policy a query names in ``MATCH CONSUME policy``, as written (upper case): the profile's
    :class:`Consumption` policies, and ``NONE`` (no consumption, whatever the profile says). A MATCH with no
    CONSUME names none and takes the profile's."""

    CHRONOLOGICAL = "CHRONOLOGICAL"
    RECENT = "RECENT"
    NONE = "NONE"

    @classmethod
    def of(cls, consumption: Consumption | str | None) -> MatchConsumption:
        """A profile's consumption policy as ``MATCH CONSUME`` names it; None (no consumption) is ``NONE``."""
        return cls.NONE if consumption is None else cls[Consumption(consumption).name]


class DefaultWindow(StrEnum):
    """The window of a stream that a query reads with no window given: ``element``, none (stream-to-stream: each
    element is read alone, at its timestamp, W3C RSP CG, S2S Operators), ``landmark`` (the stream from t0, as
    EP-SPARQL reads it) or ``now`` (CQELS ``[NOW]``)."""

    ELEMENT = "element"
    LANDMARK = "landmark"
    NOW = "now"


class WindowContent(StrEnum):
    """What ``WINDOW :w { P }`` matches: the union of the elements' graphs (``graph``) or the window as a dataset
    (``dataset``, RSP-QL*, Def. 6)."""

    GRAPH = "graph"
    DATASET = "dataset"


class IntervalElements(StrEnum):
    """How a time, landmark, interval or NOW window takes an element valid over an interval (docs/streams.md):
    while the element's interval meets the window's (``meets``), or at the element's start alone, as a point
    (``start``)."""

    MEETS = "meets"
    START = "start"


class CountUnit(StrEnum):
    """What a count-based window counts."""

    ELEMENTS = "ELEMENTS"
    TRIPLES = "TRIPLES"
    BGP = "BGP"


E = TypeVar("E", bound=StrEnum)


def setting(kind: type[E], value: object) -> E:
    """``value`` as a member of ``kind``; a ValueError naming the allowed values when it is none of them."""
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(m.value) for m in kind)
        raise ValueError(f"{value!r} (expected one of {allowed})") from None
