"""A live micro-batch's file read on the driver, when it is small and clean: no Spark job at all.

A batch pushed at 10,000 triples/s every 200 ms is a file of about 2,000 lines: loading it with
:func:`rspark.spark.loading.loader.load_stream` (parsing on executors, the element check as an aggregation, the
content join) costs half a second of Spark jobs for milliseconds of work. So a file of at most
``MAX_BYTES`` is first read here, on the driver, with the executors' own parsing functions (the
vectorised N-Quads line reader and pyoxigraph, :mod:`rspark.spark.loading.rdf`) and the element check of the load
in Arrow. It is taken only when nothing in it needs a message or more than the common case: no malformed line or
statement, every element with exactly one valid timestamp of the stream's kind, no RDF-star term. Any other file
returns None and goes through ``load_stream``, whose checks and messages stay the only ones; the results of the two
paths are the same (tested on generated files).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from rspark.spark.loading import rdf

__all__ = ["SmallBatch", "read_small", "combine", "MAX_BYTES"]

# the largest file read on the driver (bytes; about 80,000 N-Quads lines of 100 bytes)
MAX_BYTES = 8 << 20


@dataclass
class SmallBatch:
    """A clean batch read on the driver: ``elements`` (``element``, ``ts``, ``rank``: file order), ``quads`` (``s``,
    ``p``, ``o``, ``element``), ``metadata`` (``s``, ``p``, ``o``; None: none), the time kind and scale
    (``ts`` in units of 1 / ``time_scale``), and the least and greatest ``ts``."""

    elements: pa.Table
    quads: pa.Table
    metadata: pa.Table | None
    time_kind: str
    time_scale: int
    lo: int
    hi: int

    @property
    def n_elements(self) -> int:
        return self.elements.num_rows


def read_small(path: str, timestamp_predicate: str, *, format: str | None = None,
               max_bytes: int = MAX_BYTES) -> SmallBatch | None:
    """The batch in ``path`` (N-Quads or TriG) when it is at most ``max_bytes`` and clean (see the module
    documentation), else None: the caller loads it with ``load_stream``."""
    from rspark.spark.loading.loader import new_token, parse_small

    try:
        fmt = rdf.detect_format(path, format)
        if fmt not in rdf.QUAD_FORMATS or rdf.is_compressed(path) or os.path.getsize(path) > max_bytes:
            return None
        data = rdf.read_bytes(path)
    except Exception:  # noqa: BLE001 - anything unusual is load_stream's to report
        return None
    raw = parse_small(data, fmt, base_iri=rdf.file_base_iri(path), token=new_token(), default_graph="",
                      triple_graph=None, positions=True)
    if raw is None or raw.num_rows == 0:
        return None  # a problem or a quoted triple (load_stream's to handle), or nothing at all
    return _check(raw, "<" + timestamp_predicate + ">")


def _check(raw: pa.Table, pred: str) -> SmallBatch | None:
    """The load's element check (``loader._build_stream``) for a batch without problems: None when an element has
    no timestamp, several, a bad one or one of another kind than the first element's."""
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
    # the content: the named graphs' quads with their element's timestamp and rank
    quads = pa.table({"s": named["s"], "p": named["p"], "o": named["o"], "element": named["g"]})
    # metadata: the default graph's other triples, and the timestamps of names that are no element
    is_element_stamp = pc.and_(stamp_mask, pc.is_in(default["s"], value_set=names))
    meta = default.filter(pc.invert(is_element_stamp)).select(["s", "p", "o"])
    lo, hi = pc.min_max(ts).values()
    return SmallBatch(elements, quads, meta if meta.num_rows else None, kind, 10 ** scale_exp, lo.as_py(),
                      hi.as_py())


def _timestamps(encoded: pa.Array) -> tuple[str, pa.Array, int] | None:
    """The elements' timestamps (encoded literals) as ``(kind, ts, scale exponent)``: epoch ms for
    ``xsd:dateTime``, else numbers in units of ``10**-exponent``; None when one is not valid, or is of another
    kind than the first's (the load rejects those elements, with a message)."""
    from rspark.spark.loading.loader import PLAIN_INTEGER_STAMP

    plain = pc.match_substring_regex(encoded, PLAIN_INTEGER_STAMP)
    if pc.all(plain).as_py():  # canonical integers: read by Arrow
        lexical = pc.list_element(pc.split_pattern(encoded, '"'), 1)
        return "number", pc.cast(lexical, pa.int64()), 0
    kinds, values, exps = [], [], []
    for value in encoded.to_pylist():
        try:
            kind, v, e = rdf.parse_timestamp(value)
        except ValueError:
            return None
        kinds.append(kind)
        values.append(v)
        exps.append(e)
    if len(set(kinds)) > 1:
        return None
    if kinds[0] == "datetime":
        return "datetime", pa.array(values, pa.int64()), 0
    scale_exp = max(exps)
    if max(len(str(abs(v))) - e for v, e in zip(values, exps)) + scale_exp > 18:
        return None  # the load's message: the timestamps need too many digits
    return "number", pa.array([v * 10 ** (scale_exp - e) for v, e in zip(values, exps)], pa.int64()), scale_exp


def combine(batches: list[SmallBatch]) -> SmallBatch | None:
    """The batches of several files of one micro-batch as one, in the order given (the files' arrival order, as
    the loader's spool concatenates them), timestamps at the finest scale among them; None when they do not
    combine as the spool's single load would read them (timestamps of two kinds, an element name in two files)."""
    if len(batches) == 1:
        return batches[0]
    if len({b.time_kind for b in batches}) > 1:
        return None
    names = pa.chunked_array([b.elements["element"] for b in batches])
    if pc.count_distinct(names).as_py() != len(names):
        return None
    scale = max(b.time_scale for b in batches)
    elements, offset = [], 0
    for b in batches:
        factor = pa.scalar(scale // b.time_scale, pa.int64())
        elements.append(pa.table({"element": b.elements["element"], "ts": pc.multiply(b.elements["ts"], factor),
                                  "rank": pc.add(b.elements["rank"], pa.scalar(offset, pa.int64()))}))
        offset += b.n_elements
    metadata = [b.metadata for b in batches if b.metadata is not None]
    return SmallBatch(pa.concat_tables(elements), pa.concat_tables([b.quads for b in batches]),
                      pa.concat_tables(metadata) if metadata else None, batches[0].time_kind, scale,
                      min(b.lo * (scale // b.time_scale) for b in batches),
                      max(b.hi * (scale // b.time_scale) for b in batches))
