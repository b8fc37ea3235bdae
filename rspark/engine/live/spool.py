"""One load per micro-batch: the batch's files that parse cleanly are written together as one N-Quads file (the
*spool*), which the replay's loader then loads once, instead of one load (a dozen Spark jobs) per file.

Each file is parsed on the driver with pyoxigraph (a micro-batch is small: what arrived in one trigger interval);
its blank nodes are renamed apart (``_:b`` of the third file becomes ``_:f2_b``), as the loader keeps two files'
blank nodes apart. A file that does not parse is left out of the spool and loaded alone, so that its messages name
its own lines and its good elements are kept as the loader keeps them. :class:`Origins` maps the spool's lines
back to the files they came from, for the messages about elements (no timestamp, two timestamps, ...)."""

from __future__ import annotations

import gzip
import os
from bisect import bisect_right
from dataclasses import dataclass, field

import pyoxigraph as ox

from rspark.spark.loading import messages


@dataclass
class Origins:
    """Which file each line range of the spool came from: ``starts[i]`` is the first line (1-based) of
    ``paths[i]``'s quads."""

    starts: list[int] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def file_of(self, line: int | None) -> str | None:
        if line is None or not self.starts:
            return None
        i = bisect_right(self.starts, line) - 1
        return self.paths[i] if i >= 0 else None


def spool_files(paths: list[str], directory: str, name: str) -> tuple[str | None, Origins, list[str]]:
    """Writes the files of ``paths`` that parse as one N-Quads file in ``directory``; returns its path (None when no
    file parsed), the origins of its lines, and the files to load alone."""
    os.makedirs(directory, exist_ok=True)
    spool = os.path.join(directory, name + ".nq")
    origins, alone = Origins(), []
    line = 1
    with open(spool, "wb") as out:
        for i, path in enumerate(paths):
            if messages.needs_conversion(path):  # a message log, JSON-LD: converted by the loader
                alone.append(path)
                continue
            try:
                with open(path, "rb") as f:
                    data = f.read()
                if path.endswith(".gz"):
                    data = gzip.decompress(data)
                base = path.removesuffix(".gz")
                fmt = ox.RdfFormat.N_QUADS if base.endswith((".nq", ".nquads")) else ox.RdfFormat.TRIG
                quads = [_apart(q, f"f{i}_") for q in ox.parse(data, format=fmt)]
                text = ox.serialize(quads, format=ox.RdfFormat.N_QUADS)
            except (SyntaxError, ValueError, OSError, EOFError):
                alone.append(path)
                continue
            if not quads:
                continue
            origins.starts.append(line)
            origins.paths.append(path)
            out.write(text)
            line += text.count(b"\n")
    if not origins.paths:
        os.remove(spool)
        return None, origins, alone
    return spool, origins, alone


def _apart(quad, prefix: str):
    """``quad`` with its blank nodes renamed with ``prefix`` (inside quoted triples too)."""
    def term(t):
        if isinstance(t, ox.BlankNode):
            return ox.BlankNode(prefix + t.value)
        if isinstance(t, ox.Triple):
            return ox.Triple(term(t.subject), t.predicate, term(t.object))
        return t

    graph = quad.graph_name
    if isinstance(graph, ox.BlankNode):
        graph = ox.BlankNode(prefix + graph.value)
    return ox.Quad(term(quad.subject), quad.predicate, term(quad.object), graph)
