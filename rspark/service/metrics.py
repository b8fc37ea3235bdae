"""``GET /metrics``: the service's counters in the Prometheus text exposition format (version 0.0.4)."""

from __future__ import annotations


def metrics_text(service) -> str:
    status = service.live.status()
    out: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: list[tuple[dict, object]]) -> None:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            if value is None:
                continue
            lab = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
            out.append(f"{name}{{{lab}}} {value}" if lab else f"{name} {value}")

    streams = status["streams"]
    names = {s.iri: s.name for s in list(service.streams.values())}

    def per_stream(key: str):
        return [({"stream": iri, "name": names.get(iri, "")}, s.get(key, 0)) for iri, s in streams.items()]

    family("rspark_stream_elements_total", "counter", "Stream elements accepted.", per_stream("elements"))
    family("rspark_stream_late_total", "counter", "Late stream elements (written to the dead-letter directory).",
           per_stream("late"))
    family("rspark_stream_rejected_total", "counter", "Stream elements rejected with a message.",
           per_stream("rejected"))
    family("rspark_stream_quarantined_total", "counter", "Files quarantined with their messages.",
           per_stream("quarantined"))
    family("rspark_stream_batches_total", "counter", "Micro-batches applied.", per_stream("batches"))
    queries = status["queries"]
    family("rspark_query_evaluations_total", "counter", "Evaluations of a query.",
           [({"query": n}, q["evaluations"]) for n, q in queries.items()])
    family("rspark_query_records_total", "counter", "Records delivered by a query.",
           [({"query": n}, q["records"]) for n, q in queries.items()])
    family("rspark_query_lag", "gauge", "How far a query's horizon is behind the newest element (stream units; "
           "milliseconds for date-time streams).", [({"query": n}, q["lag"]) for n, q in queries.items()])
    family("rspark_query_latency_seconds", "gauge", "Seconds from a micro-batch's arrival to its records.",
           [({"query": n, "quantile": "0.5"}, q["latency_p50"]) for n, q in queries.items()]
           + [({"query": n, "quantile": "0.99"}, q["latency_p99"]) for n, q in queries.items()])
    family("rspark_query_consumed_occurrences", "gauge", "Consumed triple occurrences a query that consumes events "
           "carries to its next evaluation.", [({"query": n}, q["consumed"]) for n, q in queries.items()])
    family("rspark_query_paused", "gauge", "1 when the query is paused.",
           [({"query": n}, int(bool(q["paused"]))) for n, q in queries.items()])
    family("rspark_sse_clients", "gauge", "Connected Server-Sent Events clients.", [({}, service.sse_clients)])
    family("rspark_http_requests_total", "counter", "HTTP requests received.", [({}, service.requests)])
    family("rspark_http_refused_total", "counter", "HTTP requests refused with a 4xx.", [({}, service.refused)])
    family("rspark_live_failed", "gauge", "1 when live mode stopped on a failure.",
           [({}, int(status["failure"] is not None))])
    return "\n".join(out) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
