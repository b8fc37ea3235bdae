"""One case of serve_load.py: a rate on a fresh server (:func:`run_case`). A warm-up on a stream of its own, the
stream and the queries created, the SSE clients connected, the pushing at the rate (every element also written to
the file the replay reads), the draining until the last instant is reported and every client has it; meanwhile the
:class:`Samplers` read ``GET /queries`` (the lag), the server's memory and the JVM's heap after a full GC."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import harness
from harness import heap_after_gc_mb, percentile
from workloads.sensors import EX, QUERIES, STREAM, TRIPLES_PER_ELEMENT, Generator, stamps_for

from serve import httpx, instant
from serve.clients import Clients
from serve.server import Server, tree_memory

STREAM_NAME = "s"  # the stream's name in the service's paths (its IRI is the workload's STREAM)
NQUADS = "application/n-quads"
SPARQL = "application/sparql-query"
STATUS_EVERY = 1.0  # s between two GET /queries while pushing


def post_chunk(http, stream: str, text: str, due: int) -> tuple[float, str | None]:
    """POSTs one chunk; returns the wall time the answer came and an error (None when 202 with every element)."""
    resp = http.post(f"/streams/{stream}", content=text.encode("utf-8"), headers={"Content-Type": NQUADS})
    done = time.time()
    if resp.status_code != 202:
        return done, f"HTTP {resp.status_code}: {resp.text[:200]}"
    body = resp.json()
    # the service counts an element's triples in its graph (its timestamp, in the default graph, not)
    if body.get("accepted") != due or body.get("triples") != due * (TRIPLES_PER_ELEMENT - 1) or body.get("late"):
        return done, f"accepted {body} for {due} elements"
    return done, None


def push_for(http, stream: str, rate: int, seconds: float, t0: float, gen: Generator, chunk_ms: int,
             log_file=None) -> dict:
    """Pushes to ``stream`` at ``rate`` triples/s from ``t0`` for ``seconds``: a chunk every ``chunk_ms`` of wall
    time, the elements due since the previous one, stamped over the wall ms since ``t0`` the chunk covers; then
    one element 1 ms after the last (the last instant becomes due). Every element is written to ``log_file``."""
    chunks: list = []  # (first ts, last ts, wall time the POST returned, elements, POST seconds)
    errors: list = []
    sent = prev_ms = k = 0
    end_ms = int(seconds * 1000)
    while True:
        k += 1
        delay = t0 + k * chunk_ms / 1000 - time.time()
        if delay > 0:
            time.sleep(delay)
        now_ms = min(end_ms, int((time.time() - t0) * 1000))
        due = int(rate * now_ms / 1000 / TRIPLES_PER_ELEMENT) - sent
        if due > 0 and now_ms > prev_ms:
            stamps = stamps_for(prev_ms, now_ms, due)
            text = gen.chunk(stamps)
            if log_file is not None:
                log_file.write(text)
            before = time.time()
            done, err = post_chunk(http, stream, text, due)
            if err is not None:
                errors.append(f"chunk {len(chunks)}: {err}")
                if len(errors) >= 5:
                    raise RuntimeError(f"pushes to {stream} refused: " + "; ".join(errors))
            chunks.append((stamps[0], now_ms, done, due, done - before))
            sent += due
            prev_ms = now_ms
        if now_ms >= end_ms:
            break
    final = gen.chunk([end_ms + 1])
    if log_file is not None:
        log_file.write(final)
    before = time.time()
    pushed_at, err = post_chunk(http, stream, final, 1)
    if err is not None:
        errors.append(f"final element: {err}")
    return {"chunks": chunks, "sent": sent, "errors": errors, "pushed_at": pushed_at,
            "final_post_s": pushed_at - before, "end_ms": end_ms}


def wait_reported(http, names: list[str], until: int, timeout: float) -> tuple[dict, str | None]:
    """Polls ``GET /queries`` until every query in ``names`` reported ``until`` (or the timeout, or live mode's
    failure); returns each query's last instant and the failure."""
    hx = httpx()
    deadline = time.time() + timeout
    last: dict = {}
    while True:
        try:
            last = {q["name"]: instant(q["last"]) for q in http.get("/queries").json()["queries"]}
        except (hx.HTTPError, ValueError):  # a poll that failed: the next one asks again
            pass
        if all((last.get(n) or -1) >= until for n in names) or time.time() >= deadline:
            return last, None
        health = http.get("/healthz")
        if health.status_code != 200:
            return last, health.text[:300]
        time.sleep(0.2)


def warm_up(http, names: list[str], rate: int, args) -> dict:
    """A warm-up on the fresh server before the measured case, on a stream and queries of their own (deleted
    after): the JVM's code, the Python workers and the first plans are then warm, as in a service that runs."""
    hx = httpx()
    start = time.time()
    resp = http.put("/streams/warm", json={"iri": EX + "warm", "lateness": 0})
    if resp.status_code != 201:
        raise RuntimeError(f"PUT /streams/warm: HTTP {resp.status_code} {resp.text[:300]}")
    for name in names:
        text = QUERIES[name].replace("ON :s [", "ON :warm [")
        resp = http.put(f"/queries/warm-{name}", content=text.encode(), headers={"Content-Type": SPARQL})
        if resp.status_code != 201:
            raise RuntimeError(f"PUT /queries/warm-{name}: HTTP {resp.status_code} {resp.text[:300]}")
    pushed = push_for(http, "warm", rate, args.warmup, time.time(), Generator(args.sensors, args.alarm_every, 11),
                      args.chunk_ms)
    last, failure = wait_reported(http, [f"warm-{n}" for n in names], pushed["end_ms"], args.drain_timeout)
    if failure is not None:
        raise RuntimeError(f"live mode failed during the warm-up: {failure}")
    caught_up = all((last.get(f"warm-{n}") or -1) >= pushed["end_ms"] for n in names)
    deleted = []
    for path in [f"/queries/warm-{n}" for n in names] + ["/streams/warm"]:
        try:
            deleted.append(f"DELETE {path}: {http.delete(path).status_code}")
        except hx.HTTPError as exc:
            deleted.append(f"DELETE {path}: {type(exc).__name__}")
    return {"warmup_s": time.time() - start, "warmup_caught_up": caught_up,
            "warmup_catch_up_s": time.time() - pushed["pushed_at"], "warmup_deleted": deleted,
            "warmup_errors": pushed["errors"]}

class Samplers:
    """While a case runs, in threads of their own, times in s since ``t0`` (the first push): ``GET /queries``
    every ``STATUS_EVERY`` s (``statuses``: the lags), the server's memory every ``args.sample_s`` (``memory``), and
    while ``pushing`` is set the JVM's heap after a full GC every ``args.heap_s`` (``heap``)."""

    def __init__(self, server: Server, args) -> None:
        self.server, self.args = server, args
        self.stop = threading.Event()
        self.statuses: list = []  # (s since t0, pushing, {query: status}) while the case runs
        self.memory: list = []  # (s since t0, {server, jvm, tree, load})
        self.heap: list = []  # (s since t0, MB live after a full GC), every heap_s seconds while pushing
        self.pushing = threading.Event()
        self.pushing.set()
        self.t0 = time.time()
        self.java: int | None = None
        self.sampler: threading.Thread | None = None
        self.heaper: threading.Thread | None = None

    def start(self) -> None:
        self.java = harness.java_descendant(self.server.proc.pid)
        self.sampler = threading.Thread(target=self._sample, name="serve-load-sampler", daemon=True)
        self.sampler.start()
        self.heaper = threading.Thread(target=self._sample_heap, name="serve-load-heap", daemon=True)
        self.heaper.start()

    def finish(self) -> None:
        """Stops the samplers, with one last memory sample."""
        self.stop.set()
        self.sampler.join(30)
        self.memory.append((time.time() - self.t0, self._memory()))
        self.heaper.join(120)

    def _memory(self) -> dict:
        return {**tree_memory(self.server.proc.pid), "load": os.getloadavg()[0]}

    def _sample(self) -> None:
        hx = httpx()
        next_memory = 0.0
        with hx.Client(base_url=self.server.url, timeout=hx.Timeout(30)) as sh:
            while not self.stop.is_set():
                now = time.time() - self.t0
                try:
                    qs = {q["name"]: q for q in sh.get("/queries").json()["queries"]}
                    self.statuses.append((now, self.pushing.is_set(), qs))
                except (hx.HTTPError, ValueError) as exc:
                    self.statuses.append((now, self.pushing.is_set(), {"error": str(exc)[:200]}))
                if now >= next_memory:
                    self.memory.append((now, self._memory()))
                    next_memory = now + self.args.sample_s
                self.stop.wait(STATUS_EVERY)

    def _sample_heap(self) -> None:
        while True:
            self.heap.append((time.time() - self.t0, heap_after_gc_mb(self.java)))
            if self.stop.wait(self.args.heap_s) or not self.pushing.is_set():
                return


def run_case(rate: int, names: list[str], args, work: Path) -> dict:
    """One rate on a fresh server: the pushed elements go to ``work/stream.nq`` (for the replay); returns the
    figures (the clients' events are analysed by :func:`serve.analysis.analyse`)."""
    hx = httpx()
    out: dict = {"rate": rate, "seconds": args.seconds, "clients": args.clients, "queries": names}
    started = time.time()
    server = Server(work / "checkpoint", work / "serve.log", args.server_conf)
    out["server_command"] = " ".join(server.command[1:])
    clients = None
    samplers = None
    try:
        server.wait_ready(args.start_timeout)
        out["server_start_s"] = time.time() - started
        http = hx.Client(base_url=server.url, timeout=hx.Timeout(120))
        _prepare(http, names, rate, args, out)
        connecting = time.time()
        clients = Clients(server.url, names, args.clients)
        clients.start()
        _wait_connected(http, clients, names, args)
        out["connect_s"] = time.time() - connecting

        samplers = Samplers(server, args)
        samplers.start()
        pushed = _push(http, rate, args, work, samplers, out)
        _drain(http, names, args, clients, pushed, out)
        samplers.finish()
        out["heap"] = samplers.heap
        _final_status(http, out)
        http.close()
        clients.stop()
        out.update(chunk_list=pushed["chunks"], statuses=samplers.statuses, memory=samplers.memory, t0=samplers.t0)
    finally:
        if samplers is not None:
            samplers.stop.set()
        if clients is not None:
            clients.stop()
        if samplers is not None and samplers.sampler is not None:
            samplers.sampler.join(30)
        _stop(server, out)
    out["clients_obj"] = clients
    return out


def _prepare(http, names: list[str], rate: int, args, out: dict) -> None:
    """The warm-up (``args.warmup`` s; none at 0), then the stream and the queries the case measures."""
    if args.warmup > 0:
        out.update(warm_up(http, names, rate, args))
        print(f"  warm-up: {out['warmup_s']:.0f} s ({args.warmup:g} s of pushing on its own stream, "
              f"{'caught up' if out['warmup_caught_up'] else 'NOT caught up'})", flush=True)
    resp = http.put(f"/streams/{STREAM_NAME}", json={"iri": STREAM, "lateness": 0})
    if resp.status_code != 201:
        raise RuntimeError(f"PUT /streams/{STREAM_NAME}: HTTP {resp.status_code} {resp.text[:300]}")
    for name in names:
        resp = http.put(f"/queries/{name}", content=QUERIES[name].encode(), headers={"Content-Type": SPARQL})
        if resp.status_code != 201:
            raise RuntimeError(f"PUT /queries/{name}: HTTP {resp.status_code} {resp.text[:300]}")


def _wait_connected(http, clients: Clients, names: list[str], args) -> None:
    """Until the server counts every SSE client on every query (``sse_clients`` of ``GET /queries``)."""
    deadline = time.time() + args.connect_timeout
    counted: dict = {}
    while time.time() < deadline:
        counted = {q["name"]: q["sse_clients"] for q in http.get("/queries").json()["queries"]}
        if clients.connected() == len(names) * args.clients and all(counted.get(n) == args.clients
                                                                     for n in names):
            break
        time.sleep(0.2)
    else:
        raise RuntimeError(f"{clients.connected()} SSE clients connected of {len(names) * args.clients} "
                           f"within {args.connect_timeout:g} s (the server counts {counted})")


def _push(http, rate: int, args, work: Path, samplers: Samplers, out: dict) -> dict:
    """The pushing, every element written to the file the replay reads; its figures into ``out``."""
    with open(work / "stream.nq", "w", encoding="utf-8") as log_file:
        pushed = push_for(http, STREAM_NAME, rate, args.seconds, samplers.t0, Generator(args.sensors, args.alarm_every),
                          args.chunk_ms, log_file)
    chunks, sent, end_ms, pushed_at = pushed["chunks"], pushed["sent"], pushed["end_ms"], pushed["pushed_at"]
    samplers.pushing.clear()
    t0 = samplers.t0
    out.update(push_s=pushed_at - t0, elements=sent, triples=sent * TRIPLES_PER_ELEMENT, chunks=len(chunks),
               pushed_rate=sent * TRIPLES_PER_ELEMENT / max(1e-9, chunks[-1][2] - t0) if chunks else 0.0,
               post_s_p50=percentile([c[4] for c in chunks], 0.5),
               post_s_max=max((c[4] for c in chunks), default=None), push_errors=pushed["errors"],
               final_post_s=pushed["final_post_s"], end_ms=end_ms,
               file_triples=(sent + 1) * TRIPLES_PER_ELEMENT)
    print(f"  {rate:,} triples/s: pushed {sent:,} elements in {len(chunks)} POSTs "
          f"({out['pushed_rate']:,.0f} triples/s); draining", flush=True)
    return pushed


def _drain(http, names: list[str], args, clients: Clients, pushed: dict, out: dict) -> None:
    """Until every query reported the last instant (or the timeout), then until the clients got it."""
    end_ms, pushed_at = pushed["end_ms"], pushed["pushed_at"]
    last, failure = wait_reported(http, names, end_ms, args.drain_timeout)
    out["caught_up"] = all((last.get(n) or -1) >= end_ms for n in names)
    out["catch_up_s"] = time.time() - pushed_at
    out["server_last"] = last
    out["live_failure"] = failure
    settle = time.time() + (args.settle_timeout if out["caught_up"] else 5)
    while time.time() < settle:
        if all(any(instant(e[0]) == last.get(q) for e in reversed(evs[-3:]))
               for (q, _), evs in clients.events.items()):
            break
        time.sleep(0.1)
    out["settle_s"] = time.time() - pushed_at - out["catch_up_s"]


def _final_status(http, out: dict) -> None:
    """The service's own figures at the end: its queries, the stream, its HTTP and SSE metrics."""
    final_status = {q["name"]: q for q in http.get("/queries").json()["queries"]}
    out["server_queries"] = final_status
    out["server_stream"] = http.get(f"/streams/{STREAM_NAME}").json()
    out["metrics"] = {line.split(" ")[0]: line.split(" ")[-1] for line in http.get("/metrics").text.splitlines()
                      if line.startswith(("rspark_http_", "rspark_sse_clients", "rspark_live_failed"))}


def _stop(server: Server, out: dict) -> None:
    """Stops the server (SIGTERM): its exit status, and the problems its log shows."""
    stopping = time.time()
    out["server_exit"] = server.stop()
    out["server_stop_s"] = time.time() - stopping
    text = server.log_tail(10**9)
    problems = [line for line in text.splitlines() if re.search(r"Traceback|ERROR|Exception|CRITICAL", line)]
    out["server_log_problems"] = problems[:50]
    out["server_log_problem_lines"] = len(problems)
    out["server_log_tail"] = text[-3000:]
