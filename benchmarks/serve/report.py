"""serve_load.py's report: the table (one row per rate and query, see :data:`HEADER`), the notes under it (how
each figure is measured, the servers' start and stop, the acceptance verdicts) and the plot (latency over the
stream's time per rate; the lag over time; the RSS over time)."""

from __future__ import annotations

from pathlib import Path

import harness
from harness import fmt, trio
from workloads.sensors import RANGE_MS, TRIPLES_PER_ELEMENT

from serve.analysis import analyse


def yes(value) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def table_row(res: dict, q: dict) -> str:
    mem = res["mem"]
    replay = "| - | - |"
    if "replay_s" in res:
        load = res["replay_load_s"]
        replay = f"| {res['replay_s']:.1f} ({load:.1f} + {res['replay_s'] - load:.1f}) | {q.get('agrees', '-')} |"
    events = f"{q['events_min']}" if q["events_min"] == q["events_max"] else f"{q['events_min']}-{q['events_max']}"
    kept = "yes" if q["kept_up"] else "NO"
    unreported = f" ({q['unreported']} unreported)" if q["unreported"] else ""
    flat = f"{yes(mem['server'].get('flat'))}/{yes(mem['heap'].get('flat'))}"
    h = mem["heap"]
    heap = (f"{fmt(h['floor_first'], ',.0f')} / {fmt(h['floor_last'], ',.0f')}; {fmt(h['first'], ',.0f')} / "
            f"{fmt(h['last'], ',.0f')}; {fmt(h['max'], ',.0f')} ({h['n']})") if h["n"] else "-"
    return (f"| {res['rate']:,} | {res['pushed_rate']:,.0f} | {q['query']} | {res['clients']} "
            f"| {events} / {q['expected']}{unreported} "
            f"| {q['lost']} | {q['duplicated']} | {q['unexpected'] + q['out_of_order']} "
            f"| {q['lists_differ']} / {q['data_differ']} | {q['reconnects']} "
            f"| {fmt(q['latency_p50_s'])} | {fmt(q['latency_p99_s'])} | {fmt(q['latency_max_s'])} "
            f"| {fmt(q['server_p50_s'])} / {fmt(q['server_p99_s'])} "
            f"| {fmt(q['lag_first_s'])} / {fmt(q['lag_last_s'])} | {fmt(q['lag_slope'], '.3f')} "
            f"| {fmt(res['catch_up_s'], '.1f')}{'' if res['caught_up'] else ' (timed out)'} | {kept} "
            f"| {fmt(res['post_s_p50'], '.3f')} / {fmt(res['post_s_max'], '.2f')} "
            f"| {trio(mem['server'])} | {trio(mem['jvm'])} | {trio(mem['tree'])} "
            f"| {fmt(mem['server']['slope_mb_min'], '.1f')} / {fmt(mem['jvm']['slope_mb_min'], '.1f')} | {heap} "
            f"| {flat} "
            f"| {fmt(mem['load'], '.1f')} "
            + replay)


HEADER = ("| rate triples/s | pushed triples/s | query | clients | events per client / expected | lost | duplicated "
          "| unexpected or out of order | clients differing: lists / events | reconnects "
          "| latency p50 s | p99 s | max s | server p50 / p99 s | lag first / last third s | lag slope s/s "
          "| catch-up s | kept up | POST s p50 / max | server RSS MB first/max/last | JVM RSS MB first/max/last "
          "| tree RSS MB first/max/last | RSS slope 2nd half MB/min server / JVM "
          "| JVM heap after full GC MB: least first / last third; mean first / last third; max (samples) "
          "| memory flat server RSS / JVM heap "
          "| load "
          "| replay s (load + replay) | replay agrees |")


def table(report, cases: list, names: list[str], args) -> list:
    """The table: each case's queries analysed against the replay's records (when it ran), a row each; a failed
    case in one row. Returns the (case, query figures) pairs."""
    rows = []
    report.print(HEADER)
    report.print("|" + "---|" * (HEADER.count("|") - 1))
    for res in cases:
        if "error" in res:
            report.print(f"| {res['rate']:,} | FAILED: {res['error']} |")
            continue
        for name in names:
            records = res.get("replay_records")
            base = records.get(name) if records else None
            q = analyse(res, name, sorted(base) if base is not None else None, records, args)
            res.setdefault("per_query", {})[name] = q
            rows.append((res, q))
            report.print(table_row(res, q))
    return rows


def method(report, args) -> None:
    """What each column is and how it is measured, with this run's settings."""
    report.print()
    warm = (f"warmed up by {args.warmup:g} s of the same pushing on a stream and queries of their own (deleted "
            "before the case), " if args.warmup > 0 else "")
    report.print(f"Each rate: a fresh `rspark serve` ({' '.join('--conf ' + c for c in args.server_conf)}), "
                 f"{warm}{args.clients} SSE clients per query connected before the first push, {args.seconds:g} s of "
                 f"pushing (one POST of N-Quads every {args.chunk_ms} ms, {TRIPLES_PER_ELEMENT} triples per element, "
                 f"its timestamp included; {args.sensors} sensors), then one element 1 ms after the last. Queries "
                 f"over a tumbling 1-s window [RANGE {RANGE_MS} SLIDE {RANGE_MS}] (one record per second of stream). "
                 "Events per client: the SSE `result` events each client got (min-max over the clients) / the "
                 "instants expected (the replay's); lost: expected instants the server reported that a client "
                 "lacks, summed over the clients; duplicated: ids a client got more than once, summed; clients "
                 "differing: clients whose list of ids differs from the first client's / events whose data differs "
                 "from the first client's event of the same id. Latency: a client's read of the event - the return "
                 "of the POST holding the last element stamped at or before the instant, over every client's "
                 + (f"events after the first {args.skip:g} s of stream" if args.skip else "events")
                 + "; server p50 / p99: the service's own figure "
                 "(a micro-batch's arrival to its records). Lag: wall s - the last instant reported (GET /queries, "
                 "every second while pushing); kept up: the last third's mean lag not above the first's by more "
                 "than max(1 s, 50 %) and the last instant reported within the drain timeout "
                 f"({args.drain_timeout:g} s); catch-up: the final push to the last instant reported. POST s: a "
                 f"push's round trip. RSS (from /proc, every {args.sample_s:g} s from the first push to the end): "
                 "the server's Python process, its Spark JVM, the whole tree (PySpark workers included); load: the "
                 "machine's 1-min load average (every process, this one included), mean of the samples; JVM "
                 "heap after full GC: the heap the JVM still uses after `jcmd PID GC.run`, every "
                 f"{args.heap_s:g} s while pushing: the least sample and the mean of the first and of the last "
                 "third of the samples, and the greatest (what is live after a GC is the retained heap plus the "
                 "memory pages of the tasks running at that moment, hash aggregates and sorters, freed when they "
                 "end: the least sample of a stretch bounds what was retained during it; RSS follows the heap the "
                 "JVM has committed, which grows within -Xmx and is not given back); memory flat: the server "
                 "process's last RSS sample not above its first, and the JVM heap's least sample of the last third "
                 "not above the least of the first third, by more than "
                 f"max({args.flat_mb:g} MB, {args.flat_pct:g} %). Replay: "
                 "the same elements from one N-Quads file, loaded and replayed in "
                 "this process (after the live cases); agrees: the first client's records against the replay's "
                 "(same instants; the same head and bindings at each, in any order).")


def servers(report, cases: list, names: list[str], startup: float | None) -> None:
    """Each case's server: its start, its clients' connection, its warm-up, its stop, the errors in its log; the
    replay's Spark start."""
    report.print()
    starts = [f"{r['rate']:,}: server answered in {r['server_start_s']:.1f} s, {r['clients'] * len(names)} "
              f"clients connected in {r['connect_s']:.1f} s, "
              + (f"warm-up {r['warmup_s']:.0f} s ({'caught up' if r['warmup_caught_up'] else 'NOT caught up'}), "
                 if "warmup_s" in r else "")
              + f"exit status {r['server_exit']} after SIGTERM "
              f"({r['server_stop_s']:.1f} s), {r['server_log_problem_lines']} error lines in its log, "
              f"{len(r['push_errors'])} refused pushes; HTTP requests {r['metrics'].get('rspark_http_requests_total')}"
              f", refused {r['metrics'].get('rspark_http_refused_total')}"
              for r in cases if "error" not in r]
    spark_start = f" Replay's Spark start: {startup:.1f} s." if startup else ""
    report.print("Servers: " + "; ".join(starts) + "." + spark_start)


def acceptance(report, rows: list, failed: list) -> None:
    """The issue's acceptance, per rate and query; then what failed."""
    verdicts = []
    for res, q in rows:
        ok_events = q["lost"] == 0 and q["duplicated"] == 0 and q["lists_differ"] == 0 and q["data_differ"] == 0
        flat = bool(res["mem"]["server"].get("flat") and res["mem"]["heap"].get("flat"))
        events = "no event lost or duplicated" if ok_events else "EVENTS LOST OR DUPLICATED"
        if q["unreported"]:
            events += f" ({q['unreported']} instants not reported within the drain timeout)"
        verdicts.append(f"{q['query']} at {res['rate']:,}: p50 {fmt(q['latency_p50_s'])} s, p99 "
                        f"{fmt(q['latency_p99_s'])} s; {events}; memory {'flat' if flat else 'NOT flat'}; "
                        f"{'kept up' if q['kept_up'] else 'did NOT keep up'}")
    report.print()
    report.print("Acceptance (100 SSE clients, 1k and 10k triples/s for 5 minutes: p50 / p99 from push to SSE "
                 "delivery, no event lost or duplicated on any client, server memory flat): "
                 + ("; ".join(verdicts) + "." if verdicts else "no case ran."))
    if failed:
        report.print()
        report.print("FAILED: " + "; ".join(failed))


def plot(rows, cases, path: Path) -> Path | None:
    if not rows:
        return None
    latency, lag, memory = [], [], []
    for i, (res, q) in enumerate(rows):
        color, label = f"C{i}", f"{res['rate']:,}/s {q['query']}"
        pts = [(int(t) / 1000, v) for t, v in q["by_instant"].items()]
        if pts:
            latency.append(harness.Line([t for t, _ in pts], [v["p50"] for _, v in pts], "-",
                                        f"{label} (clients: median, min-max band)", color, width=1,
                                        band=([v["min"] for _, v in pts], [v["max"] for _, v in pts])))
        if q["lags"]:
            lag.append(harness.Line([t for t, _ in q["lags"]], [v for _, v in q["lags"]], "-", label, color, width=1))
    for i, res in enumerate(c for c in cases if "error" not in c):
        for key, style in (("server", "-"), ("jvm", "--"), ("tree", ":")):
            pts = res["mem"][key]["samples"]
            if pts:
                memory.append(harness.Line([t for t, _ in pts], [v for _, v in pts], style, f"{res['rate']:,}/s {key}",
                                           f"C{i}", width=1))
    return harness.plot(path, [harness.Panel(latency, "instant (s of stream)", "latency s (push -> SSE event)"),
                               harness.Panel(lag, "s since the first push", "lag s (wall - last instant reported)"),
                               harness.Panel(memory, "s since the first push", "RSS MB", legend=6)], (15, 4.2))
