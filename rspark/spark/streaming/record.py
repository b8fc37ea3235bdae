"""The record of one evaluation instant of one continuous query: what ``rspark replay`` prints as a jsonl line and
what live mode delivers to its sinks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rspark import results as R
from rspark.algebra.ops import QueryForm


@dataclass
class Record:
    """One evaluation instant of one query. ``ticks``: the instant on the query's timeline; ``time``: the same
    instant as written in the output, a number (numeric streams) or an ISO 8601 string (date-time streams)."""

    query: str
    ticks: int
    time: Any
    form: str
    vars: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    boolean: bool | None = None
    triples: list[tuple] = field(default_factory=list)  # (s, p, o), or (s, p, o, g) when ``graph_names``
    # the items are quads (a CONSTRUCT template with GRAPH blocks): g is a graph name, None for the default graph
    graph_names: bool = False

    def to_json(self) -> dict:
        out: dict[str, Any] = {"query": self.query, "time": self.time}
        if self.form == QueryForm.ASK:
            out["head"] = {}
            out["boolean"] = bool(self.boolean)
        elif self.graph_names:
            out["quads"] = R.to_nquads(R.DatasetResult(self.triples)).splitlines()
        elif self.form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
            out["triples"] = R.to_ntriples(R.GraphResult(self.triples)).splitlines()
        else:
            js = R.to_json(R.SolutionSequence(self.vars, self.rows))
            out["head"] = js["head"]
            out["results"] = js["results"]
        return out

    @property
    def value(self):
        if self.form == QueryForm.ASK:
            return R.BooleanResult(bool(self.boolean))
        if self.graph_names:
            return R.DatasetResult(self.triples)
        if self.form in (QueryForm.CONSTRUCT, QueryForm.DESCRIBE):
            return R.GraphResult(self.triples)
        return R.SolutionSequence(self.vars, self.rows)
