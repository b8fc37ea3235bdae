"""A live micro-batch's file read on the driver, when it is small and clean: no Spark job at all.

A batch pushed at 10,000 triples/s every 200 ms is a file of about 2,000 lines: loading it with
:func:`rspark.spark.loading.loader.load_stream` (parsing on executors, the element check as an aggregation, the
content join) costs half a second of Spark jobs for milliseconds of work. So a file of at most
``MAX_BYTES`` is first read here, on the driver, with the executors' own parsing functions (the
vectorised N-Quads line reader and pyoxigraph, :mod:`rspark.spark.loading.rdf`) and the element check of the
load in Arrow (:mod:`rspark.spark.loading.small`, which ``load_stream`` also uses for small stream files). It is
taken only when nothing in it needs a message or more than the common case: no malformed line or statement, every
element with exactly one valid timestamp of the stream's kind, no RDF-star term. Any other file returns None and
goes through ``load_stream``, whose checks and messages stay the only ones; the results of the two paths are the
same (tested on generated files).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from rspark.spark.loading import messages, rdf
from rspark.spark.loading.loader import small_stream_batch
from rspark.spark.loading.small import SmallBatch

__all__ = ["SmallBatch", "read_small", "combine", "MAX_BYTES"]

# the largest file read on the driver (bytes; about 320,000 N-Quads lines of 100 bytes). The driver reads a file of
# sensor elements in about 0.4 s at 8 MB and 0.9 s at 32 MB, where the loader's Spark jobs take seconds: a source
# whose micro-batches grow when the engine falls behind (a Kafka topic read at 100,000 triples/s gives files of 10
# MB and more) stays on the driver's way and catches up, instead of going through the loader and falling further
# behind
MAX_BYTES = 32 << 20


def read_small(path: str, timestamp_predicate: str, *, format: str | None = None,
               max_bytes: int = MAX_BYTES) -> SmallBatch | None:
    """The batch in ``path`` (N-Quads or TriG) when it is at most ``max_bytes`` and clean (see the module
    documentation), else None: the caller loads it with ``load_stream``."""
    try:
        fmt = rdf.detect_format(path, format)
    except Exception:  # noqa: BLE001 - anything unusual is load_stream's to report
        return None
    if format is None and messages.needs_conversion(path):  # a message log: converted by load_stream
        return None
    if fmt not in rdf.QUAD_FORMATS:
        return None
    return small_stream_batch(path, fmt, base_iri=rdf.file_base_iri(path), pred="<" + timestamp_predicate + ">",
                              max_bytes=max_bytes)


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
