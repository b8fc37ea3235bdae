"""Bringing a replay's answers to the driver in instant order, a range of instants at a time, as Arrow columns."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rspark.model import codec as E
from rspark.spark.streaming.keys import KEY

# A fetch of answers to the driver (one Arrow collect, whole instants) holds at most ROWS_PER_FETCH rows and about
# CELLS_PER_FETCH values: 250,000 rows of two columns, fewer of more. Fewer, larger fetches cost fewer jobs (each is
# planned and scheduled: about 0.15 s); the driver holds two fetches' answers at a time.
ROWS_PER_FETCH = 250_000
CELLS_PER_FETCH = 500_000


def rows_per_fetch(columns: int) -> int:
    """The rows of a fetch of answers of ``columns`` columns (the instant's not counted)."""
    return max(1, min(ROWS_PER_FETCH, CELLS_PER_FETCH // max(1, columns)))


def fetch_ranges(counts: list[tuple[int, int]], rows: int | None = None) -> list[tuple[int, int]]:
    """Consecutive instant ranges ``(first, last)`` covering ``counts`` (``(instant, rows)`` sorted by instant),
    each of whole instants and about ``rows`` rows (more when one instant has more; default ROWS_PER_FETCH)."""
    rows = ROWS_PER_FETCH if rows is None else rows
    out, first, size = [], None, 0
    for t, n in counts:
        if first is None:
            first = t
        size += n
        if size >= rows:
            out.append((first, t))
            first, size = None, 0
    if first is not None:
        out.append((first, counts[-1][0]))
    return out


def term_columns(table, decoded: frozenset) -> list[list]:
    """An Arrow table's columns as Python lists; those at the positions in ``decoded`` (encoded terms) as rspark
    terms, each distinct value decoded once (a column's dictionary: answers repeat the same sensors and values)."""
    columns = []
    for i, column in enumerate(table.columns):
        if i not in decoded:
            columns.append(column.to_pylist())
            continue
        # one dictionary for the whole column (a table's chunks, Spark's Arrow batches, would each have their own;
        # unified rather than the chunks combined, whose strings may pass an Arrow array's 2 GB)
        chunks = column.dictionary_encode().unify_dictionaries().chunks
        if not chunks:
            columns.append([])
            continue
        terms = E.decode_distinct(chunks[0].dictionary.to_pylist())
        terms.append(None)  # (a null's index, below)
        values: list = []
        for chunk in chunks:
            values.extend(terms[k] for k in chunk.indices.fill_null(len(terms) - 1).to_pylist())
        columns.append(values)
    return columns


def answer_tables(df: DataFrame, order: list, *, few: bool = False, drop: list | None = None) -> Iterator:
    """The answers (Arrow tables, column 0 the instant) in instant order (then ``order``), streamed: the answers
    are computed once into Spark's cache by a count of rows per instant, then fetched range of instants by range
    (each range whole instants), about :func:`rows_per_fetch` rows at a time, each range sorted by Spark and
    collected as Arrow columns (about a quarter of the driver time of pickled rows), so that the driver holds one
    range, not the replay. The next range is fetched in a thread while the caller reads the current one (the JVM
    sorts and sends it while Python turns rows into terms), so the driver holds at most two ranges. Uncached when
    the iteration ends.

    ``few``: the answers are those of a few instants (a live micro-batch's), fetched by one job, sorted in one
    task, without the cache and the count (which cost more than such answers). ``drop``: columns the sort reads
    (precomputed sort keys) that are not sent to the driver."""
    drop = drop or []
    if few:
        yield df.coalesce(1).sortWithinPartitions(KEY, *order).drop(*drop).toArrow()
        return
    cached = df.persist(StorageLevel.MEMORY_AND_DISK)

    def fetch(first: int, last: int):
        # one task sorts the range (a global orderBy would sample the data first: two more jobs a range)
        return (cached.filter(F.col(KEY).between(first, last)).coalesce(1).sortWithinPartitions(KEY, *order)
                .drop(*drop).toArrow())

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rspark-fetch")
    pending = None
    try:
        counts = sorted((r[0], r[1]) for r in cached.groupBy(KEY).count().collect())
        ranges = fetch_ranges(counts, rows_per_fetch(len(df.columns) - 1 - len(drop)))
        if ranges:
            pending = pool.submit(fetch, *ranges[0])
        for k in range(len(ranges)):
            table = pending.result()
            pending = pool.submit(fetch, *ranges[k + 1]) if k + 1 < len(ranges) else None
            yield table
    except BaseException:
        # the JVM may be gone (an out-of-memory error): the failure to report is the first one, not the cleanup's;
        # a fetch still running is not waited for (after Ctrl-C it may never end: its JVM call is being cancelled)
        with contextlib.suppress(Exception):
            pool.shutdown(wait=False, cancel_futures=True)
            cached.unpersist()
        raise
    pool.shutdown(wait=True)
    cached.unpersist()


def items_by_instant(tables: Iterable, items: Callable[[object], list]) -> Iterator[tuple[int, list]]:
    """(instant, items) for each instant the answer ``tables`` hold, in order: ``items(table)`` gives a table's
    items, one a row, and each instant's are a slice of them (the instants' runs found on the instant column)."""
    for table in tables:
        if table.num_rows == 0:
            continue
        keys = table.column(0).to_numpy()
        made = items(table)
        cuts = [0, *(np.flatnonzero(keys[1:] != keys[:-1]) + 1).tolist(), len(keys)]
        for a, b in zip(cuts, cuts[1:]):
            yield int(keys[a]), made[a:b]


def with_every_instant(groups: Iterable[tuple[int, list]], instants: list[int]) -> Iterator[tuple[int, list]]:
    """(instant, items) for every instant of ``instants`` (sorted; those without items get an empty list) and
    every instant of ``groups`` (sorted by instant; an instant's items in consecutive groups are joined), in
    order."""
    it = iter(groups)
    group = next(it, None)
    times = iter(instants)
    t = next(times, None)
    while t is not None or group is not None:
        key = group[0] if group is not None else None
        now = t if key is None or (t is not None and t <= key) else key
        items: list = []
        while group is not None and group[0] == now:
            items.extend(group[1])
            group = next(it, None)
        yield now, items
        while t is not None and t == now:
            t = next(times, None)

