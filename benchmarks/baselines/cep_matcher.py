"""cep_throughput.py's baseline: a straightforward Python matcher of the 3-step SEQ over the stock stream
(``workloads/stocks.py``), measured against rspark in the same run.

SASE-style: per company, stacks of the events that can start a match (E1) and of the partial matches E1 SEQ E2, fed
the events in time order; the state is reset at each tumbling window's boundary and the window's matches are emitted
at its close, with the selection and consumption semantics of RSEP-QL (the spec rspark implements: each SEQ is
evaluated against an upper bound, the start of the right operand's event; CHRONOLOGICAL / RECENT select per solution
mapping of the right operand, i.e. per (company, price); NAIVE pairs the LAST events of the whole window; event sets
are sets, so matches equal in their bindings and interval collapse). :func:`read_events` is the matcher's reading of
the stream file (pyoxigraph), part of its measured time; :mod:`baselines.rsepql_spec` checks the matcher against the
spec's equations.
"""

from __future__ import annotations

from workloads.stocks import EX, POLICIES, PROV, RANGE

MASK = (1 << 64) - 1

# ------------------------------------------------------------------------------------------------------ the stream


def read_events(path: str) -> list[tuple[int, int, int]]:
    """The stream file read and parsed with pyoxigraph: its events (tick, company index, price), ordered by tick
    (stable: equal ticks keep the file's order, as rspark's replay does). One triple per element (the generated
    stream's shape)."""
    import pyoxigraph as ox

    fmt = ox.RdfFormat.TRIG if path.endswith(".trig") else ox.RdfFormat.N_QUADS
    stamp = PROV + "generatedAtTime"
    prefix = len(EX) + 1  # <http://example.org/c> -> the company's index
    stamps: dict = {}
    triples: list = []
    for q in ox.parse(path=path, format=fmt):
        g = q.graph_name
        if isinstance(g, ox.DefaultGraph):
            if q.predicate.value == stamp:
                stamps[q.subject] = int(q.object.value)
        else:
            triples.append((g, int(q.subject.value[prefix:]), int(q.object.value)))
    events = [(stamps[g], k, p) for g, k, p in triples]
    events.sort(key=lambda e: e[0])
    return events


# ---------------------------------------------------------------------------------------------- the Python matcher
#
# A match: (company, p1, p2, p3, start, end) with start = E1's tick, end = E3's tick; the matcher keeps the middle
# (E2's) tick beside it for consumption. Per window the matcher yields (close, [matches]).


def _windows(events):
    """The events grouped by tumbling window, in time order: (close, events of (close - RANGE, close]). Only the
    windows that hold events (empty windows have no matches)."""
    close, batch = None, []
    for e in events:
        if close is None or e[0] > close:
            if batch:
                yield close, batch
            close, batch = -(-e[0] // RANGE) * RANGE, []
        batch.append(e)
    if batch:
        yield close, batch


def _unrestricted(batch):
    """E1 SEQ E2 SEQ E3: every E1 < E2 < E3 of a company. Per company: the E1 stack (every event so far) and the
    set of partial matches (t1, p1, p2): E2's tick is not part of a match's bindings or interval, so two partial
    matches with the same (t1, p2) give the same matches (event sets are sets)."""
    out = []
    stacks: dict = {}
    for t, k, p in batch:
        st = stacks.get(k)
        if st is None:
            stacks[k] = ([(t, p)], set())
            continue
        e1s, partial = st
        for t1, p1, p2 in partial:  # as E3: completes every partial match before it
            out.append((k, p1, p2, p, t1, t, None))
        for t1, p1 in e1s:  # as E2: extends every E1 before it
            partial.add((t1, p1, p))
        e1s.append((t, p))  # as E1
    return out


def _chronological(batch):
    """SEQ[CHRONOLOGICAL] at both steps. Per company: the first event (FIRST E1 under any later bound), the partial
    matches E1 SEQ[CHRONOLOGICAL] E2 kept per E2 price (the first E2 of that price with an E1 before it, paired with
    the first E1), the first of them (FIRST of the left operand: the earliest end; they are added in time order),
    and the E3 prices already matched (one match per (company, p3): the first E3 of that price whose left operand is
    not empty, paired with FIRST of it)."""
    out = []
    state: dict = {}
    for t, k, p in batch:
        st = state.get(k)
        if st is None:
            state[k] = [(t, p), {}, None, set()]
            continue
        first1, partial, first2, done = st
        if first2 is not None and p not in done:  # as E3
            done.add(p)
            out.append((k, first2[1], first2[2], p, first2[0], t, first2[3]))
        if p not in partial:  # as E2 (first1 exists: an event came before)
            m = (first1[0], first1[1], p, t)
            partial[p] = m
            if first2 is None:
                st[2] = m
    return out


def _recent(batch):
    """SEQ[RECENT] at both steps. Per company: the last event so far (LAST E1 under the next bound), the partial
    matches kept per E2 price (the last E2 of that price with an E1 before it, paired with the last E1 before it),
    the latest of them (LAST of the left operand: the latest end), and the match per E3 price (the last E3 of that
    price whose left operand is not empty, paired with LAST of it), replaced as later events come: final at the
    window's close."""
    state: dict = {}
    for t, k, p in batch:
        st = state.get(k)
        if st is None:
            state[k] = [(t, p), {}, None, {}]
            continue
        last1, partial, last2, done = st
        if last2 is not None:  # as E3
            done[p] = (k, last2[1], last2[2], p, last2[0], t, last2[3])
        m = (last1[0], last1[1], p, t)  # as E2
        partial[p] = m
        st[2] = m
        st[0] = (t, p)  # as E1
    return [m for st in state.values() for m in st[3].values()]


def _naive(batch):
    """SEQ[NAIVE] at both steps: LAST of each operand over the whole window (no substitution between them), paired
    when compatible and the left one strictly before. LAST E1 = LAST E2 = the window's last event, which is not
    before itself: the inner SEQ[NAIVE] is empty, and so is the whole pattern (kept as the evaluation, not as a
    shortcut, so the matcher pays what it costs)."""
    last = max(batch, key=lambda e: e[0])  # LAST E: the latest event (one per tick here)
    lasts = [e for e in batch if e[0] == last[0]]
    inner = [(a, b) for a in lasts for b in lasts if a[1] == b[1] and a[0] < b[0]]
    if not inner:
        return []
    end = max(b[0] for _, b in inner)
    inner = [(a, b) for a, b in inner if b[0] == end]
    start = max(a[0] for a, _ in inner)
    return [(a[1], a[2], b[2], c[2], a[0], c[0], b[0]) for a, b in inner if a[0] == start for c in lasts
            if c[1] == a[1] and (b[0] < c[0] or (b[0] == c[0] and a[0] < c[0]))]


SELECT = {"SEQ": _unrestricted, "SEQ[CHRONOLOGICAL]": _chronological, "SEQ[RECENT]": _recent,
          "SEQ[NAIVE]": _naive}


def match(events, policy: str):
    """The matches of ``policy`` window by window: (close, matches). With MATCH CONSUME the elements of a window's
    matches are consumed for the window from then on; a tumbling window's elements are in no later evaluation, so
    the consumed set is dropped at the window's boundary (consumption changes nothing here, as the spec says; the
    matcher still filters by it and records it)."""
    seq, consume = POLICIES[policy]
    select = SELECT[seq]
    consumed: set = set()
    for close, batch in _windows(events):
        if consume:
            batch = [e for e in batch if e[0] not in consumed]
            consumed = set()  # the previous window's: in no later window
        found = select(batch) if batch else []
        if consume:
            for m in found:
                consumed.update((m[4], m[5], m[6]))
        yield close, found


def digest_add(digest: int, row: tuple) -> int:
    """An order-independent fingerprint of a set of matches: the sum of their hashes (integers hash the same in
    every process)."""
    return (digest + hash(row)) & MASK
