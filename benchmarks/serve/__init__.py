"""serve_load.py's parts: :mod:`serve.server` (``rspark serve`` in a subprocess and its memory),
:mod:`serve.clients` (the SSE clients), :mod:`serve.driver` (one case: the pushing, the draining, the samplers),
:mod:`serve.analysis` (latency, loss, the service keeping up, memory), :mod:`serve.replay` (the baseline) and
:mod:`serve.report` (the table, its notes and the plot). The stream and the queries are in
:mod:`workloads.sensors`."""

from __future__ import annotations

from harness import number


def httpx():
    import httpx2

    return httpx2


def instant(value) -> int | None:
    """An event id or a record's time (numeric stream: ms since the case's start) as an int."""
    value = number(value)
    return None if value is None else int(value)
