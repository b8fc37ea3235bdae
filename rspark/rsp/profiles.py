"""Engine profiles: the settings that make rspark behave like another RSP engine.

The same query over the same stream gives different answers in C-SPARQL, CQELS, SPARQLstream, RSP4J and EP-SPARQL
(RSP-QL, Sec. 3, RSEP-QL, Sec. 2 and Table 1). RSP-QL explains the differences with a handful of parameters
that the engines fix internally: the window bounds, the window origin t0, the report policy (which instants ET are
evaluated), the R2S operator and, for event patterns, the selection and consumption policies. A :class:`Profile`
names one value for each; ``docs/profiles.md`` shows them all in one table with the source of every setting.

A query can still override a profile where the language lets it: ``STARTING AT`` sets t0, ``REGISTER ISTREAM`` /
``SELECT RSTREAM`` set the R2S operator, ``COMPUTED EVERY d`` makes the report policy periodic, ``SEQ[RECENT]`` sets
the selection policy of one SEQ and ``MATCH CONSUME ...`` the consumption policy.

This module depends on nothing but the standard library, so any layer (the window assigner in ``rspark.spark``, the
CLI) can read a profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal

from rspark.errors import RsparkError
from rspark.rsp.policies import (
    R2S,
    TRIGGERS,
    Bounds,
    CloseRule,
    Consumption,
    DefaultWindow,
    ImplicitSlide,
    IntervalElements,
    ReportPolicy,
    Selection,
    T0Policy,
    WindowContent,
    setting,
)

# the report policies by their names, as the report layer and the profiles below use them
WINDOW_CLOSE = ReportPolicy.WINDOW_CLOSE
CONTENT_CHANGE = ReportPolicy.CONTENT_CHANGE
NON_EMPTY = ReportPolicy.NON_EMPTY
PERIODIC = ReportPolicy.PERIODIC


class ProfileError(RsparkError, ValueError):
    """An unknown profile name or an invalid setting; the message lists what is allowed."""


@dataclass(frozen=True, slots=True)
class Profile:
    """The semantic settings of one engine.

    Time-based windows (``[RANGE r SLIDE s]``): windows close at ``c = anchor + k * slide`` (``anchor = t0``, or
    ``t0 + range`` when ``windows_before_t0`` is false); the window evaluated at instant ``t`` is the last one with
    ``c <= t`` (``close_rule "<="``) or ``c < t`` (``"<"``); it holds the elements with ``c - range < ti <= c``
    (``bounds "(]"``) or ``c - range <= ti < c`` (``"[)"``).
    """

    name: str
    description: str
    bounds: Bounds = Bounds.OPEN_CLOSED
    close_rule: CloseRule = CloseRule.AT_OR_BEFORE
    t0: T0Policy | Decimal = T0Policy.ZERO  # or a number (stream units; epoch ms for date-time streams)
    windows_before_t0: bool = True
    # Report policies: for time-based windows, and for every other window (landmark, interval, count, NOW, event).
    time_report: frozenset[ReportPolicy] = frozenset({ReportPolicy.WINDOW_CLOSE})
    other_report: frozenset[ReportPolicy] = frozenset({ReportPolicy.CONTENT_CHANGE})
    implicit_slide: ImplicitSlide = ImplicitSlide.RANGE  # [RANGE r] with no SLIDE: tumbling or every tick
    r2s: R2S = R2S.RSTREAM  # when the query names no R2S operator
    emit_empty: bool = True  # an evaluation instant with no result still produces an output record
    # the window of a stream read with no window given: none (``element``, stream-to-stream) or the landmark
    default_window: DefaultWindow = DefaultWindow.ELEMENT
    selection: Selection = Selection.UNRESTRICTED  # the selection policy of a plain ``E1 SEQ E2``
    consumption: Consumption | None = None  # the consumption policy when MATCH names none
    # what WINDOW :w { P } matches P against: "graph", the union of the elements' graphs plus their metadata
    # (docs/language.md), or "dataset", RSP-QL*, Def. 6: the elements' default graphs (their metadata and
    # timestamp triples), the elements' own graphs reached with GRAPH. Under both, GRAPH inside WINDOW reads the
    # elements.
    window_content: WindowContent = WindowContent.GRAPH
    # how a time, landmark, interval or NOW window takes an element valid over an interval: while the intervals
    # meet, or at the element's start (docs/profiles.md, "Elements valid over an interval")
    interval_elements: IntervalElements = IntervalElements.MEETS
    sources: dict = field(default_factory=dict, compare=False)  # setting -> where it comes from

    def __post_init__(self) -> None:
        # settings may be given by their text ("[)", "chronological"): each becomes its enumeration's member
        problems = []

        def coerce(attr: str, kind) -> None:
            try:
                object.__setattr__(self, attr, setting(kind, getattr(self, attr)))
            except ValueError as exc:
                problems.append(f"{attr} {exc}")

        coerce("bounds", Bounds)
        coerce("close_rule", CloseRule)
        if not isinstance(self.t0, (int, Decimal)) or isinstance(self.t0, bool):
            coerce("t0", T0Policy)
        coerce("implicit_slide", ImplicitSlide)
        coerce("r2s", R2S)
        coerce("default_window", DefaultWindow)
        coerce("selection", Selection)
        if self.consumption is not None:
            coerce("consumption", Consumption)
        coerce("window_content", WindowContent)
        coerce("interval_elements", IntervalElements)
        for attr in ("time_report", "other_report"):
            value = getattr(self, attr)
            if not isinstance(value, (frozenset, set, tuple, list)):
                problems.append(f"{attr} {value!r} (a set of report policies)")
                continue
            try:
                policies = frozenset(setting(ReportPolicy, v) for v in value)
            except ValueError as exc:
                problems.append(f"{attr} {exc}")
                continue
            if not policies & TRIGGERS:
                problems.append(f"{attr} {sorted(policies)!r} names no trigger (window-close, content-change, "
                                "periodic)")
            object.__setattr__(self, attr, policies)
        if problems:
            raise ProfileError(f"profile {self.name!r}: invalid " + "; invalid ".join(problems))

    def report_policies(self, time_based: bool) -> frozenset:
        """The report policies of a time-based window (``time_based``) or of any other window."""
        return self.time_report if time_based else self.other_report

    def with_settings(self, **changes) -> Profile:
        """A copy with some settings changed (validated like a new profile)."""
        return replace(self, **changes)


_S000_W = "RSEP-QL, Sec. 3.2 (W^tau: t' - alpha < ti <= t')"
_S000_ET = "RSEP-QL, Sec. 3.4 (ET via report policies: C-SPARQL window close; EP-SPARQL and CQELS content change)"
_S001 = "RSP-QL, Sec. 3"
_CSR = "CSRBench oracle config (testdata/csrbench/oracle-original/src/main/resources/*.properties)"
_RSP4J = "testdata/rsp4j/rsp4j-window-scenarios.json (semantics + 12 scenarios)"
_T1 = "RSEP-QL, Table 1"

PROFILES: dict[str, Profile] = {}


def _register(profile: Profile) -> Profile:
    PROFILES[profile.name] = profile
    return profile


DEFAULT = _register(Profile(
    name="default",
    description="RSP-QL / RSEP-QL as written in the seeds and docs/profiles.md",
    sources={
        "bounds": _S000_W, "close_rule": _S000_W, "t0": "docs/profiles.md (t0 = 0, the epoch)",
        "time_report": "docs/profiles.md (every slide instant)",
        "other_report": "docs/profiles.md (landmark, count and event windows: every new element)",
        "r2s": "docs/language.md (no R2S operator: RSTREAM)", "emit_empty": "docs/profiles.md (also when it is empty)",
        "default_window": "W3C RSP CG requirements, S2S Operators (a stream read with no window is filtered "
                          "element by element)",
        "selection": "RSEP-QL, eq. 7 (unrestricted SEQ)", "consumption": "RSEP-QL, Sec. 4.4 (no consumption)",
    },
))

CSPARQL = _register(Profile(
    name="csparql",
    description="C-SPARQL: [o, c) windows reported on close when not empty, RSTREAM, naive SEQ via timestamp()",
    bounds="[)",
    time_report=frozenset({WINDOW_CLOSE, NON_EMPTY}),
    other_report=frozenset({CONTENT_CHANGE, NON_EMPTY}),
    r2s="RSTREAM",
    emit_empty=True,
    selection="naive",
    sources={
        "bounds": "docs/profiles.md ([o, c))", "time_report": f"{_S001} (Window Close and Non-empty Content)",
        "other_report": f"{_S001} (Non-empty Content); count windows trigger per element",
        "r2s": f"{_S001} (C-SPARQL implicitly uses only Rstream)",
        "emit_empty": f"{_CSR}: csparql system.output.emptyrelation = true",
        "selection": f"{_T1} (W^tau + SEQn = C-SPARQL SEQ via timestamp)",
    },
))

CQELS = _register(Profile(
    name="cqels",
    description="CQELS: evaluated on every new element (content change), ISTREAM output",
    time_report=frozenset({CONTENT_CHANGE, NON_EMPTY}),
    other_report=frozenset({CONTENT_CHANGE, NON_EMPTY}),
    implicit_slide="tick",
    r2s="ISTREAM",
    emit_empty=False,
    sources={
        "time_report": f"{_S001} (CQELS implements the Content-Change policy); {_CSR}: cqels nonemptycontent = true",
        "implicit_slide": "CQELS evaluates [RANGE r] over (t - r, t] at every new element",
        "other_report": _S001, "r2s": f"{_S001} (CQELS works only in Istream mode)",
        "emit_empty": f"{_CSR}: cqels system.output.emptyrelation = false",
    },
))

SPARQLSTREAM = _register(Profile(
    name="sparqlstream",
    description="SPARQLstream: reported on window close when not empty, RSTREAM",
    time_report=frozenset({WINDOW_CLOSE, NON_EMPTY}),
    other_report=frozenset({CONTENT_CHANGE, NON_EMPTY}),
    r2s="RSTREAM",
    emit_empty=False,
    sources={
        "time_report": f"{_S001} (C-SPARQL and SPARQLstream adopt Window Close and Non-empty Content)",
        "r2s": f"{_S001} (Rstream can be indicated in the query; CSRBench runs use rstream)",
        "emit_empty": f"{_CSR}: sparqlstream system.output.emptyrelation = false",
    },
))

RSP4J = _register(Profile(
    name="rsp4j",
    description="RSP4J (C-SPARQL-style operator): [o, c) windows on the slide grid from 0, opened by elements",
    bounds="[)",
    t0="zero",
    time_report=frozenset({WINDOW_CLOSE, NON_EMPTY}),
    other_report=frozenset({CONTENT_CHANGE, NON_EMPTY}),
    r2s="RSTREAM",
    emit_empty=False,
    sources={
        "bounds": f"docs/profiles.md; {_RSP4J}: windows are [c-RANGE, c)",
        "t0": f"{_RSP4J}: closes at multiples of STEP from t=0, the first 10s/5s window is [-5000,5000) "
              "(docs/profiles.md says 't0 = first element': reporting starts at the first window holding it)",
        "time_report": f"{_RSP4J}: OnWindowClose; windows are created by the elements they hold, so an empty "
                       "window is never reported",
        "emit_empty": f"{_RSP4J}: an evaluation with no binding emits nothing to the consumer",
    },
))

RSPQL_STAR = _register(Profile(
    name="rspql-star",
    description="RSP-QL*: [l, u) windows x - alpha <= ti < x, x = t0 + alpha + beta*i the last close before tau",
    bounds="[)",
    close_rule="<",
    windows_before_t0=False,
    time_report=frozenset({PERIODIC}),
    other_report=frozenset({CONTENT_CHANGE}),
    r2s="RSTREAM",
    emit_empty=True,
    window_content="dataset",
    sources={
        "bounds": "RSP-QL*, Def. 5 (l <= tau(E) < u) and Def. 15",
        "window_content": "RSP-QL*, Def. 6 (DS(W): default graph = the elements' default graphs, named graphs = "
                          "the elements'), Def. 14 (WINDOW u P over DS(W))",
        "close_rule": "RSP-QL*, Def. 15 (greatest i in N with x < tau)",
        "windows_before_t0": "RSP-QL*, Def. 15 (x = tau0 + alpha + beta*i, i in N: the first window is "
                             "[tau0, tau0+alpha))",
        "time_report": "RSP-QL*, Sec. 4 (the registered query is evaluated every 10 seconds: COMPUTED EVERY; "
                       "without it every slide)",
        "r2s": "RSP-QL*, Sec. 9 (output stream operators are future work): RSTREAM",
    },
))


def _epsparql(policy: str, selection: str, consumption: str | None, eq: str) -> Profile:
    return _register(Profile(
        name=f"epsparql-{policy}",
        description=f"EP-SPARQL, {policy} setting: landmark windows, content change, {eq}",
        time_report=frozenset({CONTENT_CHANGE}),
        other_report=frozenset({CONTENT_CHANGE}),
        r2s="ISTREAM",
        emit_empty=False,
        default_window="landmark",
        selection=selection,
        consumption=consumption,
        sources={
            "default_window": f"{_T1} (EP-SPARQL = W^lambda + SEQ...)",
            "time_report": _S000_ET, "other_report": _S000_ET,
            "r2s": "RSEP-QL, Sec. 2 [R3.1] (unrestricted returns e1, e2, e3 at 8 and only e4 at 10; outputs happen "
                   "as soon as they are available)",
            "emit_empty": "RSEP-QL, Sec. 2 [R3.1] (no event, no output)",
            "selection": f"{_T1}; RSEP-QL {eq}", "consumption": f"{_T1}; RSEP-QL, Def. 10",
        },
    ))


EPSPARQL_UNRESTRICTED = _epsparql("unrestricted", "unrestricted", None, "eq. 7")
EPSPARQL_CHRONOLOGICAL = _epsparql("chronological", "chronological", "chronological", "eq. 10 + P^c")
EPSPARQL_RECENT = _epsparql("recent", "recent", "recent", "eq. 11 + P^r")


def profile_names() -> list[str]:
    """The names of the built-in profiles, ``default`` first."""
    return list(PROFILES)


def get_profile(name: str | Profile | None = None) -> Profile:
    """The profile called ``name`` (None: ``default``; a Profile is returned as it is).

    Names are case-insensitive and ``_`` may stand for ``-`` (``rspql_star``). An unknown name raises
    :class:`ProfileError` listing the known ones.
    """
    if name is None:
        return DEFAULT
    if isinstance(name, Profile):
        return name
    key = str(name).strip().lower().replace("_", "-")
    if key in PROFILES:
        return PROFILES[key]
    raise ProfileError(f"unknown profile {name!r}; choose one of: {', '.join(PROFILES)}")
