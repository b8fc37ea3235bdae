"""What a serve_load case measured, from its raw figures (:func:`serve.driver.run_case`'s): per query the latency
from push to SSE delivery, events lost, duplicated or unexpected on each client, the clients against each other and
the first client's records against the replay's, and the service keeping up (:func:`analyse`); the server's memory
(:func:`memory_summary`)."""

from __future__ import annotations

import bisect
import json
import statistics
from collections import Counter

from harness import backlog, percentile, thirds
from workloads.sensors import RANGE_MS

from serve import instant
from serve.clients import Clients


def canonical(record: dict) -> tuple:
    """A record, comparable with another: its instant, head and bindings (in any order), or its other fields."""
    rest = {k: v for k, v in record.items() if k not in ("query", "time", "results")}
    bindings = record.get("results", {}).get("bindings", [])
    return (instant(record.get("time")), json.dumps(rest, sort_keys=True),
            tuple(sorted(json.dumps(b, sort_keys=True) for b in bindings)))


def analyse(res: dict, name: str, expected: list[int] | None, baseline: dict | None, args) -> dict:
    """One query of a case: latencies, loss, duplicates, agreement between the clients and with the replay."""
    clients: Clients = res["clients_obj"]
    chunks = res["chunk_list"]
    end_ms = res["end_ms"]
    server_last = res["server_last"].get(name)
    if expected is None:
        first_ts = chunks[0][0] if chunks else 0
        expected = list(range(-(-first_ts // RANGE_MS) * RANGE_MS, end_ms + 1, RANGE_MS))
    expected_set = set(expected)
    reported = {t for t in expected if server_last is not None and t <= server_last}
    latencies, by_instant, per_client, differ_lists, differ_data = _clients(clients, name, chunks, reported,
                                                                            expected_set, args)
    out = {"query": name, "rate": res["rate"], "expected": len(expected), "reported": len(reported),
           "unreported": len(expected_set - reported),
           "events_min": min(c["events"] for c in per_client), "events_max": max(c["events"] for c in per_client),
           "lost": sum(c["lost"] for c in per_client), "duplicated": sum(c["duplicated"] for c in per_client),
           "unexpected": sum(c["unexpected"] for c in per_client),
           "out_of_order": sum(c["out_of_order"] for c in per_client),
           "clients_lost": sum(1 for c in per_client if c["lost"]),
           "clients_duplicated": sum(1 for c in per_client if c["duplicated"]),
           "reconnects": sum(max(0, c["connects"] - 1) for c in per_client),
           "gaps": sum(c["gaps"] for c in per_client), "ended": sum(c["ended"] for c in per_client),
           "client_errors": [e for e in clients.errors if e[1] == name][:20],
           "lists_differ": differ_lists, "data_differ": differ_data,
           "latency_n": len(latencies), "latency_p50_s": percentile(latencies, 0.5),
           "latency_p99_s": percentile(latencies, 0.99), "latency_max_s": max(latencies) if latencies else None,
           "by_instant": {str(t): {"n": len(v), "min": min(v), "p50": percentile(v, 0.5), "max": max(v)}
                          for t, v in sorted(by_instant.items())},
           "per_client": per_client}
    st = res["server_queries"].get(name, {})
    out.update(server_p50_s=st.get("latency_p50"), server_p99_s=st.get("latency_p99"),
               server_records=st.get("records"), server_evaluations=st.get("evaluations"))
    out.update(_lags(res, name, args))
    out["kept_up"] = bool(out["sustained"]) and res["caught_up"]
    if baseline is not None:
        out.update(_against_replay(clients.data[name], baseline.get(name, {}), reported))
    return out


def _clients(clients: Clients, name: str, chunks: list, reported: set, expected_set: set, args) -> tuple:
    """Each client of query ``name``: its counts (lost, duplicated, unexpected, out of order) against the expected
    instants, its lists of ids and its events' data against the first client's, its latencies. ``(latencies,
    by_instant, per_client, lists differing, events differing)``."""
    firsts = [c[0] for c in chunks]
    skip_ms = args.skip * 1000
    latencies: list = []
    by_instant: dict = {}
    per_client: list = []
    ref_ids = None
    ref_digest: dict = {}
    differ_lists = differ_data = 0
    for i in range(args.clients):
        evs = clients.events[(name, i)]
        ids = [instant(e[0]) for e in evs]
        counts = Counter(ids)
        dup = sum(c - 1 for c in counts.values() if c > 1)
        lost = len(reported - set(counts))
        unexpected = sum(c for t, c in counts.items() if t not in expected_set)
        disorder = sum(1 for a, b in zip(ids, ids[1:]) if b is None or a is None or b <= a)
        if i == 0:
            ref_ids = ids
            ref_digest = {e[0]: e[2] for e in evs}
        else:
            differ_lists += ids != ref_ids
            differ_data += sum(1 for e in evs if ref_digest.get(e[0]) != e[2])
        for (_, when, _), t in zip(evs, ids):
            if t is None:
                continue
            j = bisect.bisect_right(firsts, t) - 1
            if j < 0:
                continue
            lat = when - chunks[j][2]
            by_instant.setdefault(t, []).append(lat)
            if t > skip_ms:
                latencies.append(lat)
        per_client.append({"events": len(evs), "lost": lost, "duplicated": dup, "unexpected": unexpected,
                           "out_of_order": disorder, "connects": clients.connects[(name, i)],
                           "gaps": clients.gaps[(name, i)], "ended": clients.ended[(name, i)]})
    return latencies, by_instant, per_client, differ_lists, differ_data


def _lags(res: dict, name: str, args) -> dict:
    """The lag of query ``name`` while pushing: wall s since t0 - the last instant reported (s), its samples, the
    server's own lag, and :func:`harness.backlog`'s verdict on it."""
    lags = []
    for t, pushing, qs in res["statuses"]:
        q = qs.get(name) if isinstance(qs, dict) else None
        if pushing and isinstance(q, dict):
            last = instant(q.get("last"))
            lags.append((t, t - (last or 0) / 1000))
    out = {"lags": lags}
    out["server_lags"] = [(t, qs[name].get("lag")) for t, _, qs in res["statuses"] if isinstance(qs.get(name), dict)]
    out.update(backlog(lags, args.seconds))
    return out


def _against_replay(data: dict, base: dict, reported: set) -> dict:
    """The first client's records (``data``: event id -> data text) against the replay's (``base``: instant ->
    :func:`canonical` record), at every instant either has (the replay's only where the server reported them)."""
    out: dict = {}
    live = {}
    bad = 0
    for ident, text in data.items():
        try:
            live[instant(ident)] = canonical(json.loads(text))
        except ValueError:
            bad += 1
    keys = set(live) | {t for t in base if t in reported}
    differ = sorted(t for t in keys if live.get(t) != base.get(t))
    if differ or bad:
        t = differ[0] if differ else None
        what = (f"{len(differ)} instants differ (first {t}: live "
                f"{'-' if live.get(t) is None else len(live[t][2])} rows, replay "
                f"{'-' if base.get(t) is None else len(base[t][2])} rows)") if differ else ""
        out["agrees"] = "NO: " + "; ".join(filter(None, [what, f"{bad} unreadable" if bad else ""]))
    else:
        out["agrees"] = f"yes ({len(live)})"
    out["rows"] = sum(len(v[2]) for v in live.values())
    return out


def memory_summary(res: dict, args) -> dict:
    """first / max / last and the second half's slope (MB / min) of the memory samples, and the verdicts."""
    out = {}
    samples = res.get("memory", [])
    for key in ("server", "jvm", "tree"):
        pts = [(t, m[key]) for t, m in samples if m.get(key) is not None]
        vals = [v for _, v in pts]
        d = {"first": vals[0] if vals else None, "max": max(vals) if vals else None, "last": vals[-1] if vals else None,
             "slope_mb_min": None, "samples": pts}
        half = pts[len(pts) // 2:]
        if len(half) >= 3:
            ts, ys = [t for t, _ in half], [v for _, v in half]
            mt, my = statistics.fmean(ts), statistics.fmean(ys)
            den = sum((t - mt) ** 2 for t in ts)
            if den:
                d["slope_mb_min"] = 60 * sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / den
        if vals:
            d["flat"] = vals[-1] <= vals[0] + max(args.flat_mb, vals[0] * args.flat_pct / 100)
        out[key] = d
    heap = thirds(res.get("heap", []))
    # the verdict on the floors (the least sample of each third): the retained heap, without the running tasks' pages
    low, high = heap["floor_first"], heap["floor_last"]
    heap["flat"] = None if low is None else high <= low + max(args.flat_mb, low * args.flat_pct / 100)
    out["heap"] = heap
    loads = [m["load"] for _, m in samples if m.get("load") is not None]
    out["load"] = statistics.fmean(loads) if loads else None
    return out
