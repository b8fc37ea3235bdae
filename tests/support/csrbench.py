"""CSRBench (Dell'Aglio et al., ISWC 2013) for rspark's engine profiles: an oracle independent of rspark's runtime.

Three things live here, all in plain Python with pyoxigraph. Nothing comes from ``rspark.spark`` or
``rspark.engine`` (no window, report-policy or R2S code); from rspark only the term classes of
``rspark.model.terms`` are used, so that ``rspark.results.results_equal`` can compare the rows.

1. The **profile oracle** (:func:`expected_outputs`): what rspark must answer for a CSRBench query under the
   ``csparql``, ``cqels`` and ``sparqlstream`` profiles. The profile settings are transcribed by hand from the table
   in ``docs/profiles.md`` (:data:`PROFILES`; ``tests/test_csrbench.py`` checks the transcription against
   ``rspark.rsp.profiles`` so that the two cannot drift apart silently). For every query it lists the window
   closes, derives the evaluation instants from the report policy, collects each instant's window snapshot (the
   union of the element graphs), loads it into a fresh pyoxigraph ``Store`` and runs the query's WHERE clause as
   plain SPARQL 1.1 (hand-written next to each query in :data:`QUERIES`), then applies R2S (ISTREAM: multiset
   difference with the previous evaluation instant) and the emit-empty rule.

2. The **upstream answers** (:func:`upstream_answer`): the C-SPARQL, CQELS and SPARQLstream outputs stored in
   ``oracle-original/src/main/resources/answers/<engine>-answer-<n>.json``: ``{"relations": [{"timestamp": T,
   "head": {"vars": [...]}, "results": {"bindings": [{"timestamp": T', "binding": {var: {type, value,
   datatype}}}]}}]}``, one relation per engine output (C-SPARQL stamps them with the window close in application
   time; CQELS and SPARQLstream with the wall-clock milliseconds since the engine started), ``bindings: []`` for an
   empty relation; and :func:`compare_with_upstream`, which says whether rspark reproduces one.

3. The **CSRBench oracle itself** (:func:`csrbench_verdict`), re-implemented from the Java sources of
   ``dellaglio/csrbench-oracle`` at the commit in ``oracle-original/SOURCE_COMMIT`` (``Oracle``,
   ``s2r/WindowOperator``, ``result/StreamProcessorOutputBuilder``, ``result/StreamProcessorOutput.contains``,
   ``result/TimestampedRelationElement``): it says whether an engine answer is correct by the benchmark's own
   rules (the answer's relations, compared by content only, form a contiguous run of the oracle's output for some
   window origin ``t0`` in ``[0, range]`` stepping by 1 s). ``docs/csrbench.md`` uses it to explain why an upstream
   answer differs from rspark's.

The time unit is the millisecond: ``stream.trig`` stamps graph XX with ``1970-01-01T00:00:XXZ`` (XX * 1000 ms),
the same instants the CSRBench importer gives ``data_XX.ttl`` (``importer.data.interval = 1000``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

import pyoxigraph as ox

from rspark.model.terms import IRI, XSD, BlankNode, Literal, Term
from tests.conftest import TESTDATA

from .numbers import canonical_lexical

CSRBENCH = TESTDATA / "csrbench"
STREAM_FILE = CSRBENCH / "stream.trig"
QUERY_DIR = CSRBENCH / "rspql-queries"
RESOURCES = CSRBENCH / "oracle-original" / "src" / "main" / "resources"
ANSWERS = RESOURCES / "answers"

STREAM_IRI = "http://ex.org/streams/test"  # the stream every CSRBench query file reads
PROV_TIME = "http://www.w3.org/ns/prov#generatedAtTime"
SECOND = 1000
ENGINES = ("csparql", "cqels", "sparqlstream")  # profile names = upstream engine names

# ---------------------------------------------------------------------------------------------------- the queries

_PREFIXES = """PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>
PREFIX sens-obs: <http://knoesis.wright.edu/ssw/>
"""


@dataclass(frozen=True)
class CsrQuery:
    """One CSRBench query: its window (ms) and its WHERE clause as plain SPARQL 1.1 over one snapshot."""

    number: int
    range_ms: int
    slide_ms: int
    vars: tuple[str, ...]
    sparql: str
    note: str = ""

    @property
    def path(self) -> Path:
        return QUERY_DIR / f"q{self.number}.rspql"

    @property
    def rspql(self) -> str:
        return self.path.read_text(encoding="utf-8")


# Each SPARQL text is the RSP-QL query of rspql-queries/q<n>.rspql with the REGISTER clause and the FROM NAMED WINDOW
# declaration dropped and ``WINDOW <http://ex.org/csrbench/w> { P }`` replaced by ``P`` (the snapshot is the default
# graph of the store). They are, word for word, the ``srb.query<n>.booleanquery`` of srbench-queries.properties.
QUERIES: dict[int, CsrQuery] = {
    # q1.rspql: FROM NAMED WINDOW :w ON <http://ex.org/streams/test> [RANGE PT10S STEP PT10S]
    1: CsrQuery(1, 10 * SECOND, 10 * SECOND, ("sensor", "obs"), _PREFIXES + """
SELECT ?sensor ?obs WHERE {
  ?obs om-owl:observedProperty weather:_AirTemperature ;
       om-owl:procedure ?sensor ;
       om-owl:result ?res .
  ?res om-owl:floatValue ?value .
  FILTER(?value > 80)
}"""),
    # q2.rspql: [RANGE PT1S STEP PT1S], same pattern as q1
    2: CsrQuery(2, 1 * SECOND, 1 * SECOND, ("sensor", "obs"), _PREFIXES + """
SELECT ?sensor ?obs WHERE {
  ?obs om-owl:observedProperty weather:_AirTemperature ;
       om-owl:procedure ?sensor ;
       om-owl:result ?res .
  ?res om-owl:floatValue ?value .
  FILTER(?value > 80)
}"""),
    # q3.rspql: [RANGE PT4S STEP PT4S], relative humidity in (24, 49)
    3: CsrQuery(3, 4 * SECOND, 4 * SECOND, ("sensor", "obs", "value"), _PREFIXES + """
SELECT ?sensor ?obs ?value WHERE {
  ?obs om-owl:observedProperty weather:_RelativeHumidity ;
       om-owl:procedure ?sensor ;
       om-owl:result ?res .
  ?res om-owl:floatValue ?value .
  FILTER(?value < 49) FILTER(?value > 24)
}"""),
    # q4.rspql: [RANGE PT4S STEP PT4S], an aggregate (one row per window, AVG of nothing = 0)
    4: CsrQuery(4, 4 * SECOND, 4 * SECOND, ("avg",), _PREFIXES + """
SELECT (AVG(?value) AS ?avg) WHERE {
  ?obs om-owl:observedProperty weather:_AirTemperature ;
       om-owl:procedure ?sensor ;
       om-owl:result ?res .
  ?res om-owl:floatValue ?value .
  FILTER(?value > 80)
}"""),
    # q5.rspql: [RANGE PT5S STEP PT1S], the only sliding (overlapping) window
    5: CsrQuery(5, 5 * SECOND, 1 * SECOND, ("sensor", "obs"), _PREFIXES + """
SELECT ?sensor ?obs WHERE {
  ?obs om-owl:observedProperty weather:_AirTemperature ;
       om-owl:procedure ?sensor ;
       om-owl:result ?res .
  ?res om-owl:floatValue ?value .
  FILTER(?value > 80)
}"""),
    # q6.rspql: [RANGE PT5S STEP PT5S], a self-join per sensor (blank nodes in the pattern are variables)
    6: CsrQuery(6, 5 * SECOND, 5 * SECOND, ("sensor", "ob1", "value1", "obs"), _PREFIXES + """
SELECT ?sensor ?ob1 ?value1 ?obs WHERE {
  ?ob1 om-owl:procedure ?sensor ;
       om-owl:observedProperty weather:_AirTemperature ;
       om-owl:result [om-owl:floatValue ?value1] .
  ?obs om-owl:procedure ?sensor ;
       om-owl:observedProperty weather:_AirTemperature ;
       om-owl:result [om-owl:floatValue ?value] .
  FILTER(?value1 > ?value)
  FILTER(?value > 75)
}""", note="srbench-queries.properties says 50000/50000 ms; every engine run (and q6.rspql) used 5 s / 5 s"),
    # q7.rspql: [RANGE PT5S STEP PT5S], a join with the readings of one fixed sensor
    7: CsrQuery(7, 5 * SECOND, 5 * SECOND, ("sensor", "ob1"), _PREFIXES + """
SELECT ?sensor ?ob1 WHERE {
  ?ob  om-owl:procedure sens-obs:System_C1190 ;
       om-owl:observedProperty weather:_AirTemperature ;
       om-owl:result [om-owl:floatValue ?value] .
  ?ob1 om-owl:procedure ?sensor ;
       om-owl:observedProperty weather:_AirTemperature ;
       om-owl:result [om-owl:floatValue ?value1] .
  FILTER(?value1 > ?value)
}"""),
}


def replay_text(number: int, profile: str) -> str:
    """The text rspark replays under ``profile``: the query file as it is, or, for a profile whose R2S operator is
    not RSTREAM (cqels), the file with the operator taken out of its REGISTER clause.

    The files say ``REGISTER RSTREAM <...q<n>> AS``. A query's own R2S operator wins over the profile's
    (docs/profiles.md), so as written the cqels profile would stream RSTREAM, while CQELS (and its CSRBench runs,
    ``srb.query<n>.output = istream``) only knows ISTREAM. ``REGISTER <...q<n>> AS`` keeps the name and lets the
    profile choose; for csparql and sparqlstream, whose operator is RSTREAM, the file is replayed unchanged. Either
    way the operator in effect is the profile's, which is what :func:`expected_outputs` applies.
    """
    text = QUERIES[number].rspql
    marker = "REGISTER RSTREAM <"
    if text.count(marker) != 1:
        raise ValueError(f"q{number}.rspql: expected one {marker!r}")
    if PROFILES[profile].r2s == "RSTREAM":
        return text
    return text.replace(marker, "REGISTER <")


def until_ms(number: int) -> int:
    """The replay horizon: the last element (33 s) plus the window range, so that every window holding an element
    closes and is reported, as the upstream engines (and the CSRBench oracle: ``maxtime * interval + size``) do.
    rspark's default (the last element's timestamp) would stop before the windows that close after 33 s."""
    return max(e.ts for e in load_stream()) + QUERIES[number].range_ms


# ------------------------------------------------------------------------------------------------- the stream


@dataclass(frozen=True)
class Element:
    """One stream element: a named graph of stream.trig and its timestamp (ms)."""

    name: str
    ts: int
    position: int  # file order, the tie-breaker
    triples: tuple  # pyoxigraph Triples


def _epoch_ms(literal: ox.Literal) -> int:
    if literal.datatype.value != XSD + "dateTime":
        raise ValueError(f"CSRBench timestamps are xsd:dateTime, not {literal}")
    dt = datetime.fromisoformat(literal.value.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def iso_time(ms: int) -> str:
    """An instant (epoch ms) as the CLI's help prints date-time stream times: ISO 8601, UTC, ``Z``, with the
    milliseconds only when there are some."""
    dt = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{ms % 1000:03d}Z" if ms % 1000 else "Z")


@cache
def load_stream(path: str = str(STREAM_FILE)) -> tuple[Element, ...]:
    """The elements of a TriG stream file, ordered by timestamp (ties: file order)."""
    graphs: dict[str, list] = {}
    stamps: dict[str, int] = {}
    for quad in ox.parse(path=path, format=ox.RdfFormat.TRIG):
        if isinstance(quad.graph_name, ox.DefaultGraph):
            if quad.predicate.value == PROV_TIME:
                stamps[quad.subject.value] = _epoch_ms(quad.object)
        else:
            graphs.setdefault(quad.graph_name.value, []).append(quad.triple)
    missing = sorted(set(graphs) - set(stamps))
    if missing:
        raise ValueError(f"{path}: graphs without a timestamp: {missing}")
    elements = [Element(g, stamps[g], i, tuple(ts)) for i, (g, ts) in enumerate(graphs.items())]
    return tuple(sorted(elements, key=lambda e: (e.ts, e.position)))


# ------------------------------------------------------------------------------------------- SPARQL on a snapshot


def to_term(term) -> Term:
    """A pyoxigraph term as an rspark term."""
    if isinstance(term, ox.NamedNode):
        return IRI(term.value)
    if isinstance(term, ox.BlankNode):
        return BlankNode(term.value)
    if isinstance(term, ox.Literal):
        if term.language:
            return Literal(term.value, language=term.language)
        return Literal(term.value, term.datatype.value)
    raise TypeError(f"unexpected term {term!r}")


_RESULTS: dict[tuple, list] = {}


def evaluate(number: int, snapshot: Sequence[Element]) -> list[dict[str, Term]]:
    """The query's WHERE clause over the union of ``snapshot``'s graphs, in a fresh pyoxigraph store (memoised by
    query and element set: windows repeat across instants and across the CSRBench oracle's t0 runs)."""
    key = (number, frozenset(e.name for e in snapshot))
    if key not in _RESULTS:
        store = ox.Store()
        store.extend(ox.Quad(t.subject, t.predicate, t.object, ox.DefaultGraph())
                     for e in snapshot for t in e.triples)
        solutions = store.query(QUERIES[number].sparql)
        names = [v.value for v in solutions.variables]
        # computed values (SELECT (expr AS ?x)) in XML Schema's canonical forms, as rspark writes them
        computed = set(re.findall(r"\bAS\s+\?(\w+)", QUERIES[number].sparql, re.I))
        rows = []
        for solution in solutions:
            row = {}
            for name in names:
                value = solution[name]
                if value is not None:
                    term = to_term(value)
                    if name in computed and isinstance(term, Literal) and term.datatype:
                        term = Literal(canonical_lexical(term.lexical, term.datatype), term.datatype)
                    row[name] = term
            rows.append(row)
        _RESULTS[key] = rows
    return [dict(r) for r in _RESULTS[key]]


# -------------------------------------------------------------------------------------- the profiles, transcribed


@dataclass(frozen=True)
class ProfileSettings:
    """The settings of one rspark profile that matter for a time-based window, as docs/profiles.md states them."""

    name: str
    bounds: str  # "(]": c - range < ts <= c ; "[)": c - range <= ts < c
    close_rule: str  # "<=": the window evaluated at t is the last with close c <= t ; "<": c < t
    t0: int  # origin of the slide grid (ms)
    windows_before_t0: bool  # closes at t0 + k*slide for every integer k (else t0 + range + k*slide, k >= 0)
    report: str  # "window-close" or "content-change" (for time-based windows)
    non_empty: bool  # only instants whose window holds at least one element
    r2s: str  # the R2S operator when the query names none
    emit_empty: bool  # an instant with no result still gives a record


# docs/profiles.md, "The settings": columns Bounds, Close rule, t0, Windows before t0, Report: time windows, R2S,
# Empty results emitted.
PROFILES: dict[str, ProfileSettings] = {
    # | csparql | [) | <= | zero | yes | range | window-close + non-empty | ... | RSTREAM | yes |
    "csparql": ProfileSettings("csparql", "[)", "<=", 0, True, "window-close", True, "RSTREAM", True),
    # | cqels | (] | <= | zero | yes | tick | content-change + non-empty | ... | ISTREAM | no |
    "cqels": ProfileSettings("cqels", "(]", "<=", 0, True, "content-change", True, "ISTREAM", False),
    # | sparqlstream | (] | <= | zero | yes | range | window-close + non-empty | ... | RSTREAM | no |
    "sparqlstream": ProfileSettings("sparqlstream", "(]", "<=", 0, True, "window-close", True, "RSTREAM", False),
}


@dataclass
class Record:
    """One output record: the instant (ms) and its solutions (a multiset of rows)."""

    ticks: int
    vars: tuple[str, ...]
    rows: list[dict[str, Term]] = field(default_factory=list)


def _closes(settings: ProfileSettings, q: CsrQuery, lo: int, hi: int) -> list[int]:
    """Every window close c of the slide grid with lo <= c <= hi, in order."""
    anchor = settings.t0 if settings.windows_before_t0 else settings.t0 + q.range_ms
    k = (lo - anchor) // q.slide_ms - 1
    out = []
    while anchor + k * q.slide_ms <= hi:
        c = anchor + k * q.slide_ms
        if c >= lo and (settings.windows_before_t0 or k >= 0):
            out.append(c)
        k += 1
    return out


def _holds(settings: ProfileSettings, q: CsrQuery, close: int, ts: int) -> bool:
    if settings.bounds == "(]":
        return close - q.range_ms < ts <= close
    return close - q.range_ms <= ts < close


def window_at(settings: ProfileSettings, q: CsrQuery, elements: Sequence[Element], t: int) -> list[Element]:
    """The snapshot at instant t: the elements of the last window closed at (or, under "<", before) t."""
    candidates = [c for c in _closes(settings, q, t - 2 * q.slide_ms - 1, t)
                  if (c <= t if settings.close_rule == "<=" else c < t)]
    if not candidates:
        return []
    close = max(candidates)
    return [e for e in elements if _holds(settings, q, close, e.ts)]


def evaluation_instants(settings: ProfileSettings, q: CsrQuery, elements: Sequence[Element], until: int) -> list[int]:
    """ET under the profile: window closes from the first window holding the first element (or every element
    timestamp), up to ``until``, then the non-empty filter."""
    first = min(e.ts for e in elements)
    if settings.report == "window-close":
        strict = 1 if settings.close_rule == "<" else 0
        closes = _closes(settings, q, first - q.range_ms - q.slide_ms, until)
        opening = min(c for c in closes if _holds(settings, q, c, first))
        instants = [c + strict for c in closes if c >= opening and c + strict <= until]
    else:
        instants = sorted({e.ts for e in elements if e.ts <= until})
    if settings.non_empty:
        instants = [t for t in instants if window_at(settings, q, elements, t)]
    return instants


def _row_key(row: dict[str, Term]) -> tuple:
    return tuple(sorted(row.items(), key=lambda kv: kv[0]))


def r2s(operator: str, current: list[dict], previous: list[dict] | None) -> list[dict]:
    """RSTREAM, ISTREAM (what is new) or DSTREAM (what is gone) as a multiset difference of consecutive instants."""
    operator = operator.upper()
    if operator == "RSTREAM":
        return list(current)
    before = Counter(_row_key(r) for r in previous or [])
    now = Counter(_row_key(r) for r in current)
    diff = now - before if operator == "ISTREAM" else before - now
    return [dict(key) for key in diff.elements()]


def expected_outputs(number: int, profile: str | ProfileSettings, *, until: int | None = None,
                     r2s_operator: str | None = None, slide_ms: int | None = None, not_before: int | None = None,
                     elements: Sequence[Element] | None = None) -> list[Record]:
    """What rspark must answer for CSRBench query ``number`` under ``profile`` (a name of :data:`PROFILES`, or
    settings of one's own), up to ``until`` ms (default: the last element).

    The R2S operator is the profile's (the query text of :func:`replay_text`) unless ``r2s_operator`` names the one
    a query text fixes itself. ``slide_ms`` replaces the query's STEP and ``not_before`` drops the instants before
    it (what ``STARTING AT`` does to reporting); both only serve the explanations in ``docs/csrbench.md``.
    """
    q = QUERIES[number]
    if slide_ms is not None:
        q = CsrQuery(q.number, q.range_ms, slide_ms, q.vars, q.sparql, q.note)
    settings = PROFILES[profile] if isinstance(profile, str) else profile
    operator = r2s_operator or settings.r2s
    elements = load_stream() if elements is None else elements
    if until is None:
        until = max(e.ts for e in elements)
    out: list[Record] = []
    previous = None
    for t in evaluation_instants(settings, q, elements, until):
        if not_before is not None and t < not_before:
            continue
        current = evaluate(number, window_at(settings, q, elements, t))
        rows = r2s(operator, current, previous)
        previous = current
        if rows or settings.emit_empty:
            out.append(Record(t, q.vars, rows))
    return out


# ---------------------------------------------------------------------------------------------- upstream answers


def _json_term(value: dict) -> Term:
    if value["type"] == "uri":
        return IRI(value["value"])
    if value["type"] == "literal":
        if value.get("datatype"):
            return Literal(value["value"], value["datatype"])
        if value.get("xml:lang"):
            return Literal(value["value"], language=value["xml:lang"])
        return Literal(value["value"])
    if value["type"] == "bnode":
        return BlankNode(value["value"])
    raise ValueError(f"unexpected binding {value!r}")


@dataclass
class UpstreamRelation:
    """One relation an upstream engine output: its timestamp (ms: application time for C-SPARQL, wall-clock since
    the engine started for CQELS and SPARQLstream) and its rows."""

    timestamp: int
    vars: tuple[str, ...]
    rows: list[dict[str, Term]]


def upstream_answer(engine: str, number: int) -> list[UpstreamRelation]:
    """The stored answer of ``engine`` (csparql, cqels, sparqlstream) to CSRBench query ``number``."""
    data = json.loads((ANSWERS / f"{engine}-answer-{number}.json").read_text(encoding="utf-8"))
    out = []
    for rel in data["relations"]:
        vars_ = tuple(rel["head"]["vars"])
        rows = [{v: _json_term(b["binding"][v]) for v in vars_ if v in b["binding"]}
                for b in rel["results"]["bindings"]]
        out.append(UpstreamRelation(int(rel["timestamp"]), vars_, rows))
    return out


_NUMERIC = {XSD + t for t in ("double", "float", "decimal", "integer", "int", "long", "short", "byte",
                              "nonNegativeInteger", "positiveInteger", "negativeInteger", "nonPositiveInteger")}


def numeric_value(term: Term) -> float | None:
    """The value of a numeric literal as a double (None for other terms)."""
    if isinstance(term, Literal) and term.datatype in _NUMERIC:
        try:
            return float(Decimal(term.lexical.strip()))
        except (InvalidOperation, ValueError):
            return None
    return None


def _value_key(row: dict[str, Term]) -> tuple:
    """A row with numeric literals as their double value: ``"43.0"^^xsd:double``, ``"43"^^xsd:double``,
    ``"43.0e0"^^xsd:double`` and ``"43"^^xsd:integer`` are the same number, as the engines print it differently."""
    items = []
    for var, term in row.items():
        value = numeric_value(term)
        items.append((var, ("number", value) if value is not None else term))
    return tuple(sorted(items, key=lambda kv: kv[0]))


def relation_content(rows: Iterable[dict[str, Term]]) -> Counter:
    """A relation's rows as a multiset of value-normalised rows."""
    return Counter(_value_key(r) for r in rows)


@dataclass
class Comparison:
    """rspark's records against an upstream answer, relation by relation."""

    reproduced: bool
    same_timestamps: bool | None  # None when the upstream timestamps are wall-clock (not comparable)
    contained: bool  # CSRBench's own test: the upstream contents are a contiguous run of rspark's relations
    rspark_count: int
    upstream_count: int
    first_difference: str


def compare_with_upstream(engine: str, records: Sequence, upstream: Sequence[UpstreamRelation]) -> Comparison:
    """Does rspark's output (records with ``.ticks`` and ``.rows``) reproduce the upstream answer?

    Reproduced: the same number of relations, each with the same rows (a multiset; numbers compared by value, as
    CSRBench does), in the same order; for C-SPARQL, whose relations carry the window close in application time,
    the timestamps must agree too. CQELS and SPARQLstream stamp relations with processing time, which a replay
    cannot (and should not) reproduce, so only their order and content count.
    """
    comparable_time = engine == "csparql"
    same_ts = None
    if comparable_time:
        same_ts = [r.ticks for r in records] == [u.timestamp for u in upstream]
    diff = ""
    for i, (r, u) in enumerate(zip(records, upstream)):
        if relation_content(r.rows) != relation_content(u.rows):
            diff = (f"relation {i + 1}: rspark t={r.ticks} {len(r.rows)} rows, upstream t={u.timestamp} "
                    f"{len(u.rows)} rows")
            break
    if not diff and len(records) != len(upstream):
        diff = f"rspark gives {len(records)} relations, upstream {len(upstream)}"
    if not diff and same_ts is False:
        diff = (f"same contents, different timestamps: rspark {[r.ticks for r in records]}, "
                f"upstream {[u.timestamp for u in upstream]}")
    mine = [relation_content(r.rows) for r in records]
    theirs = [relation_content(u.rows) for u in upstream]
    contained = any(mine[i:i + len(theirs)] == theirs for i in range(len(mine) - len(theirs) + 1))
    return Comparison(not diff, same_ts, contained, len(records), len(upstream), diff)


# ------------------------------------------------------------------------------- the CSRBench oracle, re-implemented


@dataclass(frozen=True)
class CsrPolicy:
    """An engine's CSRBench configuration (<engine>.properties)."""

    window_close: bool
    non_empty: bool
    content_change: bool
    empty_relation: bool
    output: str  # rstream | istream | dstream


# oracle-original/src/main/resources/{csparql,cqels,sparqlstream}.properties
CSR_POLICIES = {
    "csparql": CsrPolicy(window_close=True, non_empty=True, content_change=False, empty_relation=True,
                         output="rstream"),
    "cqels": CsrPolicy(window_close=False, non_empty=True, content_change=True, empty_relation=False,
                       output="istream"),
    "sparqlstream": CsrPolicy(window_close=True, non_empty=True, content_change=False, empty_relation=False,
                              output="rstream"),
}
CSR_TIME_UNIT = 1000  # setup.properties system.timeunit
CSR_MAX_TIME = 33  # setup.properties importer.data.maxtime (x importer.data.interval = 1000)


class JavaRow:
    """A TimestampedRelationElement: the CSRBench oracle's result row, with its equality kept as it is.

    Java: ``hashCode`` is the map's hash when no value is numeric, else the constant 31; ``equals`` is map equality,
    or, when the maps differ and ``this`` has numeric values, equality of the numeric values only (the other keys
    are then ignored: two Q3 rows with the same humidity but different sensors are "equal"). In a ``HashSet`` such
    rows collapse. This matters for q3, q4 and q6, whose rows carry numbers.
    """

    __slots__ = ("row", "numeric")

    def __init__(self, row: dict[str, Term]) -> None:
        self.row = dict(row)
        self.numeric = {k for k, v in self.row.items() if numeric_value(v) is not None}

    def __hash__(self) -> int:
        return 31 if self.numeric else hash(frozenset(self.row.items()))

    def __eq__(self, other) -> bool:
        if not isinstance(other, JavaRow):
            return NotImplemented
        if self.row == other.row:
            return True
        if not self.numeric:
            return False
        for key in self.numeric:
            if key not in other.row or numeric_value(self.row[key]) != numeric_value(other.row[key]):
                return False
        return True

    def __repr__(self) -> str:
        return "<" + " ".join(f"{k}={v.n3()}" for k, v in sorted(self.row.items())) + ">"


EMPTY_ROW = JavaRow({})  # createEmptyTimestampedRelationElement: how an empty relation is written out


def csrbench_oracle_output(engine: str, number: int, t0: int, *, elements: Sequence[Element] | None = None) -> list:
    """``Oracle.executeStreamQuery`` for one t0: the oracle's output relations (sets of :class:`JavaRow`)."""
    q, policy = QUERIES[number], CSR_POLICIES[engine]
    elements = load_stream() if elements is None else elements
    size, slide = q.range_ms, q.slide_ms
    last_timestamp = CSR_MAX_TIME * 1000 + size
    out: list[set] = []
    previous: set | None = None
    actual = t0

    def scopes():
        nonlocal actual
        while True:
            if policy.window_close and not policy.content_change:
                actual = actual + size if actual < size else actual + slide
                yield max(0, actual - size), actual
            elif policy.content_change and not policy.window_close:
                later = [e.ts for e in elements if e.ts > actual]
                if not later:
                    return
                actual = min(later)
                a = 0
                while a * slide + t0 + size <= actual:
                    a += 1
                yield max(t0, t0 + a * slide), actual + CSR_TIME_UNIT
            else:
                raise ValueError("report policy not supported by the CSRBench oracle")

    for lo, hi in scopes():
        if lo > last_timestamp:
            break
        snapshot = [e for e in elements if lo <= e.ts < hi]
        if not snapshot:  # every CSRBench engine configuration has nonemptycontent = true
            if not policy.non_empty and policy.empty_relation:
                relation: set | None = set()
            else:
                continue
        else:
            relation = {JavaRow(r) for r in evaluate(number, snapshot)}
        # StreamProcessorOutputBuilder.addRelation
        if policy.output == "rstream":
            emitted = relation
        elif policy.output == "istream":
            emitted = relation if previous is None else {r for r in relation if r not in previous}
        else:
            emitted = None if previous is None else {r for r in previous if r not in relation}
        if emitted is not None:
            if emitted:
                out.append(emitted)
            elif policy.empty_relation:
                out.append({EMPTY_ROW})
        previous = relation
    return out


def upstream_as_java(engine: str, number: int) -> list[set]:
    """The stored answer as the oracle's JsonConverter reads it (an empty relation holds one empty row)."""
    return [{JavaRow(r) for r in rel.rows} or {EMPTY_ROW} for rel in upstream_answer(engine, number)]


def csrbench_contains(output: Sequence[set], answer: Sequence[set]) -> bool:
    """``StreamProcessorOutput.contains``: the answer's relations are a contiguous run of the output's."""
    if len(output) < len(answer):
        return False
    if not answer:
        return True
    for i in range(len(output) - len(answer) + 1):
        if all(output[i + k] == answer[k] for k in range(len(answer))):
            return True
    return False


def csrbench_verdict(engine: str, number: int) -> list[int]:
    """The t0 values (ms) for which the CSRBench oracle accepts the stored answer of ``engine`` to query
    ``number`` (``Oracle.main`` tries t0 = 0, 1000, ..., range and stops at the first match); empty: wrong."""
    answer = upstream_as_java(engine, number)
    size = QUERIES[number].range_ms
    return [t0 for t0 in range(0, size + 1, CSR_TIME_UNIT)
            if csrbench_contains(csrbench_oracle_output(engine, number, t0), answer)]
