"""Comparing query results as the SPARQL test suites do.

:func:`results_equal` returns ``(equal, message)``. Solution sequences are compared as multisets of rows
(or in order, see ``ordered``/``order_key``), graphs and datasets as sets of triples/quads; blank nodes
are compared up to one consistent bijection over the whole result (isomorphism: colour refinement to
prune, then backtracking search). Literals are compared exactly on lexical form, datatype and language
tag, the tag case-insensitively.
"""



from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from rspark.model.terms import (
    RDF_LANGSTRING,
    BlankNode,
    Literal,
    QuotedTriple,
    Term,
)
from rspark.results import (
    BooleanResult,
    DatasetResult,
    GraphResult,
    QueryResult,
    Row,
    SolutionSequence,
    complete_vars,
    csv_text,
)

# a row as (var, term, var, term, ...) sorted by var, a triple or a quad; elements are terms or plain values
Item = tuple


def _normalize(term: Term) -> Term:
    """Language tags compare case-insensitively: lower-case them."""
    if isinstance(term, Literal) and term.language is not None and term.language != term.language.lower():
        return Literal(term.lexical, RDF_LANGSTRING, term.language.lower())
    if isinstance(term, QuotedTriple):
        return QuotedTriple(_normalize(term.subject), _normalize(term.predicate), _normalize(term.object))
    return term


def _lossy(term: Term) -> Term | None:
    """The CSV view of a term: blank nodes stay, everything else becomes its CSV string; "" means unbound."""
    if isinstance(term, BlankNode):
        return term
    text = csv_text(term)
    return Literal(text) if text != "" else None


def _has_bnode(elem: Any) -> bool:
    if isinstance(elem, BlankNode):
        return True
    if isinstance(elem, QuotedTriple):
        return _has_bnode(elem.subject) or _has_bnode(elem.predicate) or _has_bnode(elem.object)
    return False


def _bnodes(elem: Any, out: set[BlankNode]) -> None:
    if isinstance(elem, BlankNode):
        out.add(elem)
    elif isinstance(elem, QuotedTriple):
        _bnodes(elem.subject, out)
        _bnodes(elem.predicate, out)
        _bnodes(elem.object, out)


def _shape(elem: Any, colors: dict[BlankNode, Hashable], me: BlankNode | None = None) -> Hashable:
    """The element with every blank node replaced by its colour (``me`` by a distinct marker)."""
    if isinstance(elem, BlankNode):
        return ("\0bnode", "self" if elem == me else colors.get(elem, 0))
    if isinstance(elem, QuotedTriple):
        return ("\0triple", _shape(elem.subject, colors, me), _shape(elem.predicate, colors, me),
                _shape(elem.object, colors, me))
    return elem


def _signature(item: Item, colors: dict[BlankNode, Hashable]) -> Hashable:
    return tuple(_shape(elem, colors) for elem in item)


def _refine_step(colors: dict[BlankNode, Hashable],
                 occurrences: dict[BlankNode, list[Item]]) -> dict[BlankNode, Hashable]:
    """One round of colour refinement: a blank node's new colour summarises, independently of labels and of
    item order, its old colour and the items it occurs in (other blank nodes seen through their colours).
    Isomorphic inputs get equal colours, so an isomorphism can only map a blank node to one of equal colour."""
    return {
        b: hash((colors[b], frozenset(Counter(tuple(_shape(e, colors, b) for e in item) for item in items).items())))
        for b, items in occurrences.items()
    }


def _occurrences(items: list[Item]) -> dict[BlankNode, list[Item]]:
    occurrences: dict[BlankNode, list[Item]] = {}
    for item in items:
        found: set[BlankNode] = set()
        for elem in item:
            _bnodes(elem, found)
        for b in found:
            occurrences.setdefault(b, []).append(item)
    return occurrences


def _match(
    actual: list[Item],
    expected: list[Item],
    blocks_a: list[Hashable] | None = None,
    blocks_e: list[Hashable] | None = None,
) -> dict[BlankNode, BlankNode] | None:
    """Find a blank-node bijection under which ``actual`` and ``expected`` are equal as multisets, items only
    matching items of the same block (when blocks are given). Returns the mapping (actual -> expected) or None.

    Colour refinement first (cheap, prunes almost everything), then a backtracking search over the items that
    hold blank nodes, taken in an order where each item shares blank nodes with earlier ones when possible.
    """
    if len(actual) != len(expected):
        return None
    blocks_a = blocks_a if blocks_a is not None else [0] * len(actual)
    blocks_e = blocks_e if blocks_e is not None else [0] * len(expected)

    occ_a, occ_e = _occurrences(actual), _occurrences(expected)
    if len(occ_a) != len(occ_e):
        return None
    colors_a: dict[BlankNode, Hashable] = dict.fromkeys(occ_a, 0)
    colors_e: dict[BlankNode, Hashable] = dict.fromkeys(occ_e, 0)
    for _ in range(len(occ_a)):
        next_a, next_e = _refine_step(colors_a, occ_a), _refine_step(colors_e, occ_e)
        if Counter(next_a.values()) != Counter(next_e.values()):
            return None
        grew = len(set(next_a.values())) > len(set(colors_a.values()))
        colors_a, colors_e = next_a, next_e
        if not grew:
            break

    keys_a = [(block, _signature(item, colors_a)) for block, item in zip(blocks_a, actual)]
    keys_e = [(block, _signature(item, colors_e)) for block, item in zip(blocks_e, expected)]
    if Counter(keys_a) != Counter(keys_e):
        return None

    # Ground items were matched by the signature check; search a bijection for the items with blank nodes.
    pending = [i for i, item in enumerate(actual) if any(_has_bnode(e) for e in item)]
    by_key: dict[Hashable, list[int]] = defaultdict(list)
    for j, item in enumerate(expected):
        if any(_has_bnode(e) for e in item):
            by_key[keys_e[j]].append(j)

    # Search order: start with the item with fewest candidates, then prefer items sharing a blank node with
    # an item already placed (their candidates are then constrained by the mapping).
    item_bnodes: dict[int, set[BlankNode]] = {}
    for i in pending:
        found: set[BlankNode] = set()
        for elem in actual[i]:
            _bnodes(elem, found)
        item_bnodes[i] = found
    items_of: dict[BlankNode, list[int]] = defaultdict(list)
    for i in pending:
        for b in item_bnodes[i]:
            items_of[b].append(i)
    rank = lambda i: (len(by_key[keys_a[i]]), i)  # noqa: E731
    order: list[int] = []
    placed: set[int] = set()
    frontier: list[tuple[tuple[int, int], int]] = []
    rest = sorted(pending, key=rank)
    rest_pos = 0
    while len(order) < len(pending):
        while frontier and frontier[0][1] in placed:
            heapq.heappop(frontier)
        if frontier:
            _, i = heapq.heappop(frontier)
        else:
            while rest[rest_pos] in placed:
                rest_pos += 1
            i = rest[rest_pos]
        placed.add(i)
        order.append(i)
        for b in item_bnodes[i]:
            for k in items_of[b]:
                if k not in placed:
                    heapq.heappush(frontier, (rank(k), k))

    m_ae: dict[BlankNode, BlankNode] = {}
    m_ea: dict[BlankNode, BlankNode] = {}

    def unify(a: Any, e: Any, added: list[BlankNode]) -> bool:
        if isinstance(a, BlankNode):
            if not isinstance(e, BlankNode):
                return False
            bound = m_ae.get(a)
            if bound is not None:
                return bound == e
            if e in m_ea:
                return False
            m_ae[a], m_ea[e] = e, a
            added.append(a)
            return True
        if isinstance(a, QuotedTriple):
            return (
                isinstance(e, QuotedTriple)
                and unify(a.subject, e.subject, added)
                and unify(a.predicate, e.predicate, added)
                and unify(a.object, e.object, added)
            )
        return a == e

    def undo(added: list[BlankNode]) -> None:
        for a in added:
            del m_ea[m_ae.pop(a)]

    used = [False] * len(expected)

    def candidates(i: int) -> Iterable[int]:
        seen: set[Item] = set()
        for j in by_key[keys_a[i]]:
            if not used[j] and expected[j] not in seen:
                seen.add(expected[j])  # equal expected items are interchangeable: try only one of them
                yield j

    # Iterative depth-first search (no recursion limit to worry about).
    choices: list[tuple[int, list[BlankNode]]] = []
    iterators = [candidates(order[0])] if order else []
    while len(choices) < len(order):
        level = len(choices)
        i = order[level]
        for j in iterators[level]:
            added: list[BlankNode] = []
            if all(unify(a, e, added) for a, e in zip(actual[i], expected[j])):
                used[j] = True
                choices.append((j, added))
                if len(choices) < len(order):
                    iterators.append(candidates(order[len(choices)]))
                break
            undo(added)
        else:
            iterators.pop()
            if not choices:
                return None
            j, added = choices.pop()
            used[j] = False
            undo(added)
    return dict(m_ae)


def _row_item(row: Row) -> Item:
    return tuple(x for name in sorted(row) for x in (name, row[name]))


def _show_row(row: Row, names: Sequence[str]) -> str:
    cells = [f"?{name}={row[name].n3()}" for name in names if name in row]
    cells += [f"?{name}={row[name].n3()}" for name in sorted(row) if name not in names]
    return "{" + ", ".join(cells) + "}" if cells else "{}"


def _show_item(item: Item) -> str:
    return " ".join("<default graph>" if e is None else e.n3() for e in item)


def _listing(title: str, lines: list[str], limit: int = 10) -> list[str]:
    out = [f"  {title} ({len(lines)}):"]
    out += [f"    {line}" for line in lines[:limit]]
    if len(lines) > limit:
        out.append(f"    ... and {len(lines) - limit} more")
    return out


def _multiset_diff(actual: list[Item], expected: list[Item], show: Callable[[Item], str]) -> list[str]:
    """Lines listing items missing from / unexpected in ``actual``, blank nodes treated as wildcards."""
    blank = {}

    def sig(item: Item) -> Hashable:
        return _signature(item, blank)

    ca, ce = Counter(map(sig, actual)), Counter(map(sig, expected))
    missing_keys, extra_keys = ce - ca, ca - ce
    missing, extra = [], []
    for item in expected:
        if missing_keys[sig(item)] > 0:
            missing_keys[sig(item)] -= 1
            missing.append(show(item))
    for item in actual:
        if extra_keys[sig(item)] > 0:
            extra_keys[sig(item)] -= 1
            extra.append(show(item))
    out = []
    if missing:
        out += _listing("missing (expected but not found)", missing)
    if extra:
        out += _listing("unexpected (found but not expected)", extra)
    return out


def _compare_rows(
    actual: SolutionSequence,
    expected: SolutionSequence,
    ordered: bool,
    order_key: Callable[[Row], Hashable] | None,
    check_vars: bool,
) -> tuple[bool, str]:
    notes = []
    if set(actual.vars) != set(expected.vars):
        note = f"variables differ: actual {sorted(actual.vars)}, expected {sorted(expected.vars)}"
        if check_vars:
            return False, note
        notes.append(f"  note: {note}")

    lossy = actual.lossy or expected.lossy

    def prepare(rows: list[Row]) -> list[Row]:
        out = []
        for row in rows:
            new: Row = {}
            for name, term in row.items():
                value = _lossy(term) if lossy else _normalize(term)
                if value is not None:
                    new[name] = value
            out.append(new)
        return out

    rows_a, rows_e = prepare(actual.rows), prepare(expected.rows)
    items_a, items_e = [_row_item(r) for r in rows_a], [_row_item(r) for r in rows_e]
    names = complete_vars(expected.vars, expected.rows)
    show_item = lambda item: _show_row(dict(zip(item[0::2], item[1::2])), names)  # noqa: E731

    blocks_a = blocks_e = None
    if ordered and len(items_a) == len(items_e):
        if order_key is None:
            blocks_a = blocks_e = list(range(len(items_e)))
        else:
            # Runs of consecutive expected rows with equal ORDER BY keys may appear in any order within the run.
            blocks_e, run, previous = [], -1, object()
            for row in expected.rows:
                key = order_key(row)
                if run < 0 or key != previous:
                    run, previous = run + 1, key
                blocks_e.append(run)
            blocks_a = blocks_e
    if _match(items_a, items_e, blocks_a, blocks_e) is not None:
        return True, "results are equal"

    lines = [f"solution sequences differ: {len(items_a)} actual rows, {len(items_e)} expected rows"
             + (" (CSV view)" if lossy else "")]
    diff = _multiset_diff(items_a, items_e, show_item)
    if diff:
        lines += diff
    elif ordered and _match(items_a, items_e) is not None:
        position = next(
            (i for i, (a, e) in enumerate(zip(items_a, items_e)) if _signature(a, {}) != _signature(e, {})), None
        )
        lines.append("  the rows are equal as a multiset but their order differs"
                     + ("" if order_key is None else " (beyond ties of the order key)"))
        if position is not None:
            lines.append(f"    first difference at row {position}:")
            lines.append(f"      expected {show_item(items_e[position])}")
            lines.append(f"      actual   {show_item(items_a[position])}")
    else:
        lines.append("  the rows agree up to blank-node labels, but no consistent blank-node mapping exists")
    return False, "\n".join(lines + notes)


def _compare_items(actual: list[Item], expected: list[Item], what: str) -> tuple[bool, str]:
    # Graphs and datasets are sets: duplicates do not count.
    def norm(items):
        return list(dict.fromkeys(tuple(None if e is None else _normalize(e) for e in item) for item in items))

    items_a, items_e = norm(actual), norm(expected)
    if _match(items_a, items_e) is not None:
        return True, f"{what}s are isomorphic"
    lines = [f"{what}s differ: {len(items_a)} actual, {len(items_e)} expected distinct statements"]
    diff = _multiset_diff(items_a, items_e, _show_item)
    lines += diff or ["  the statements agree up to blank-node labels, but no consistent blank-node mapping exists"]
    return False, "\n".join(lines)


def results_equal(
    actual: QueryResult,
    expected: QueryResult,
    *,
    ordered: bool,
    order_key: Callable[[Row], Hashable] | None = None,
    check_vars: bool = False,
) -> tuple[bool, str]:
    """Compare a computed result with an expected one; returns ``(equal, message)``.

    Solution sequences: equal when some bijection between their blank nodes (one for the whole result) makes
    the rows equal as multisets. With ``ordered=True`` the row order must match as well: by default exactly
    (row i against row i, still under one blank-node bijection); when ``order_key`` is given (a function
    giving the ORDER BY key values of an expected row, comparable with ``==``), consecutive expected rows with
    equal keys form a run whose rows may come in any order at the same positions in ``actual``. Projected
    variable lists are only compared when ``check_vars`` is true (otherwise a difference is only mentioned).
    If either sequence was read from CSV (``lossy``), both are compared in their CSV view (strings).

    Booleans compare by value; graphs and datasets by isomorphism, as sets (``ordered`` is ignored).
    Literals compare on exact lexical form, datatype and language tag (the tag case-insensitively).
    The message explains the difference (missing/unexpected rows, order, blank-node mapping) for test reports.
    """
    if type(actual) is not type(expected):
        return False, f"result kinds differ: actual {type(actual).__name__}, expected {type(expected).__name__}"
    if isinstance(actual, BooleanResult):
        if actual.value == expected.value:
            return True, "results are equal"
        return False, (f"boolean results differ: actual {str(actual.value).lower()}, "
                       f"expected {str(expected.value).lower()}")
    if isinstance(actual, SolutionSequence):
        return _compare_rows(actual, expected, ordered, order_key, check_vars)
    if isinstance(actual, GraphResult):
        return _compare_items(list(actual.triples), list(expected.triples), "graph")
    if isinstance(actual, DatasetResult):
        return _compare_items(list(actual.quads), list(expected.quads), "dataset")
    raise TypeError(f"not a query result: {type(actual).__name__}")
