"""Arrival time for elements pushed without a timestamp (a live stream declared with ``arrival_time=True``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyoxigraph as ox

from rspark.errors import DataError
from rspark.model.xsd import XSD_DATETIME
from rspark.spark.loading.rdf import document_problem


def stamp_arrivals(text: str, fmt: str, predicate: str, now: float) -> str:
    """``text`` (TriG or N-Quads) as N-Quads in which every named graph without a ``predicate`` triple in the
    default graph gets one: ``now`` (seconds since the epoch) as an ``xsd:dateTime``. Malformed input raises a
    :class:`~rspark.errors.DataError` with its line and column (nothing of it is pushed)."""
    form = ox.RdfFormat.N_QUADS if fmt in ("nquads", "nq") else ox.RdfFormat.TRIG
    try:
        quads = list(ox.parse(text.encode("utf-8"), format=form))
    except SyntaxError as exc:
        reason, line, column = document_problem(exc, text)
        raise DataError(f"malformed {fmt}: {reason}", file="pushed data", line=line, column=column) from None
    pred = ox.NamedNode(predicate)
    graphs = {q.graph_name for q in quads if not isinstance(q.graph_name, ox.DefaultGraph)}
    stamped = {q.subject for q in quads if isinstance(q.graph_name, ox.DefaultGraph) and q.predicate == pred}
    iso = datetime.fromtimestamp(now, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    stamp = ox.Literal(iso, datatype=ox.NamedNode(XSD_DATETIME))
    for g in sorted(graphs - stamped, key=str):
        quads.append(ox.Quad(g, pred, stamp, ox.DefaultGraph()))
    return ox.serialize(quads, format=ox.RdfFormat.N_QUADS).decode("utf-8")
