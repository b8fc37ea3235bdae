"""A small, clean stream file read on the driver: its elements, content and metadata as Arrow tables, no Spark job.

A stream file of a few thousand lines (a recorded sample, a live micro-batch's file) costs a loader's Python task
and several Spark jobs (the parse, the element check as an aggregation, the content join) for milliseconds of work.
Such a file is parsed on the driver with the executors' own functions (:func:`rspark.spark.loading.loader.parse_small`)
and its elements are checked here, in Arrow, as the load checks them (``loader._build_stream``). It is taken only
when nothing in it needs a message or more than the common case: no malformed line or statement, every element with
exactly one valid timestamp of one kind, no RDF-star term, at least one element. Anything else is left to the
loader (:func:`stream_batch` answers None), whose checks and messages stay the only ones. Used by
:func:`rspark.spark.loading.loader.load_stream` (files up to ``spark.rspark.load.driverMaxBytes``) and by the live
ingest (:mod:`rspark.engine.live.ingest`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from rspark.model.time import TimeKind
from rspark.model.timestamps import PLAIN_INTEGER_STAMP, parse_timestamp

__all__ = ["SmallBatch", "stream_batch", "triples_unique"]


def triples_unique(tables: list[pa.Table], predicates: frozenset | None = None) -> bool:
    """Whether every triple (``s``, ``p``, ``o``) of ``tables`` (with one of ``predicates``, encoded IRIs; None: any)
    occurs once: the duplicate check of :meth:`rspark.spark.streaming.stream.Stream.triples_unique` for content the
    driver holds, found by Arrow instead of a Spark job."""
    if not tables:
        return True
    triples = pa.concat_tables([table.select(["s", "p", "o"]) for table in tables])
    if predicates is not None:
        triples = triples.filter(pc.is_in(triples["p"], value_set=pa.array(sorted(predicates), pa.string())))
    return triples.group_by(["s", "p", "o"]).aggregate([]).num_rows == triples.num_rows


@dataclass
class SmallBatch:
    """A clean stream read on the driver: ``elements`` (``element``, ``ts``, ``rank``: file order by the element's
    first statement), ``quads`` (``s``, ``p``, ``o``, ``element``), ``metadata`` (``s``, ``p``, ``o``; None: none),
    the time kind and scale (``ts`` in units of 1 / ``time_scale``), and the least and greatest ``ts``."""

    elements: pa.Table
    quads: pa.Table
    metadata: pa.Table | None
    time_kind: TimeKind
    time_scale: int
    lo: int
    hi: int

    @property
    def n_elements(self) -> int:
        return self.elements.num_rows


def stream_batch(raw: pa.Table, pred: str) -> SmallBatch | None:
    """The element check of the load over a clean file's raw quads (``loader.RAW_ARROW`` with positions; ``pred``
    the encoded timestamp predicate): None when there is no element, or an element has no timestamp, several, a bad
    one or one of another kind than the others'."""
    raw = raw.sort_by([("blk", "ascending"), ("idx", "ascending"), ("ord", "ascending")])
    raw = raw.append_column("pos", pa.array(range(raw.num_rows), pa.int64()))
    named_mask = pc.not_equal(raw["g"], "")
    named = raw.filter(named_mask)
    default = raw.filter(pc.invert(named_mask))
    stamp_mask = pc.equal(default["p"], pred)
    stamps = default.filter(stamp_mask)
    if named.num_rows == 0:
        return None

    # the elements in file order (their first statement), and each one's timestamp values
    first = named.group_by("g").aggregate([("pos", "min")]).sort_by("pos_min")
    names = first["g"]
    values = stamps.group_by("s").aggregate([("o", "min"), ("o", "max")])
    index = pc.index_in(names, value_set=values["s"])
    if index.null_count:
        return None  # an element without timestamp
    v0, v1 = pc.take(values["o_min"], index), pc.take(values["o_max"], index)
    if not pc.all(pc.equal(v0, v1)).as_py():
        return None  # several timestamps
    parsed = _timestamps(v0)
    if parsed is None:
        return None
    kind, ts, scale_exp = parsed
    elements = pa.table({"element": names, "ts": ts, "rank": pa.array(range(len(names)), pa.int64())})
    quads = pa.table({"s": named["s"], "p": named["p"], "o": named["o"], "element": named["g"]})
    # metadata: the default graph's other triples, and the timestamps of names that are no element
    is_element_stamp = pc.and_(stamp_mask, pc.is_in(default["s"], value_set=names))
    meta = default.filter(pc.invert(is_element_stamp)).select(["s", "p", "o"])
    lo, hi = pc.min_max(ts).values()
    return SmallBatch(elements, quads, meta if meta.num_rows else None, kind, 10 ** scale_exp, lo.as_py(),
                      hi.as_py())


def _timestamps(encoded: pa.Array) -> tuple[TimeKind, pa.Array, int] | None:
    """The elements' timestamps (encoded literals) as ``(kind, ts, scale exponent)``: epoch ms for
    ``xsd:dateTime``, else numbers in units of ``10**-exponent``; None when one is not valid, or is of another
    kind than the first's (the load rejects those elements, with a message)."""
    plain = pc.match_substring_regex(encoded, PLAIN_INTEGER_STAMP)
    if pc.all(plain).as_py():  # canonical integers: read by Arrow
        lexical = pc.list_element(pc.split_pattern(encoded, '"'), 1)
        return TimeKind.NUMERIC, pc.cast(lexical, pa.int64()), 0
    kinds, values, exps = [], [], []
    for value in encoded.to_pylist():
        try:
            kind, v, e = parse_timestamp(value)
        except ValueError:
            return None
        kinds.append(kind)
        values.append(v)
        exps.append(e)
    if len(set(kinds)) > 1:
        return None
    if kinds[0] is TimeKind.DATETIME:
        return TimeKind.DATETIME, pa.array(values, pa.int64()), 0
    scale_exp = max(exps)
    if max(len(str(abs(v))) - e for v, e in zip(values, exps)) + scale_exp > 18:
        return None  # the load's message: the timestamps need too many digits
    return TimeKind.NUMERIC, pa.array([v * 10 ** (scale_exp - e) for v, e in zip(values, exps)], pa.int64()), scale_exp
