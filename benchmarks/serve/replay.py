"""serve_load.py's baseline, in the same run (after the live cases, so that it does not compete with a server for
the cores): the elements each case pushed, from the one N-Quads file they were also written to, loaded and replayed
by a local SparkSession in this process (:func:`replay_cases`); its time and its records, against the SSE ones."""

from __future__ import annotations

import json
import time
from pathlib import Path

import harness
from workloads.sensors import QUERIES, STREAM

from serve import instant
from serve.analysis import canonical


def run_replay(spark, names: list[str], path: Path, triples: int) -> dict:
    """The same elements from one N-Quads file, loaded and replayed in this process (timed); the records by query
    and instant."""
    from rspark import Engine

    records: dict = {n: {} for n in names}
    with Engine(spark=spark) as engine:
        start = time.perf_counter()
        engine.add_stream(STREAM, str(path))
        load = time.perf_counter() - start
        for rec in engine.replay_iter([QUERIES[n] for n in names], names=names):
            records[rec.query][instant(rec.time)] = canonical(json.loads(json.dumps(rec.to_json())))
        total = time.perf_counter() - start
    return {"replay_s": total, "replay_load_s": load, "replay_tps": triples / total if total else None,
            "replay_records": records}


def replay_cases(cases: list, names: list[str], works: dict, args, failed: list) -> float | None:
    """The replay of every case that ran (its figures into the case, a failure into ``failed``), in one
    SparkSession started once the servers are gone; the session's start in s (None: no replay)."""
    startup = None
    if not args.no_replay and any("error" not in c for c in cases):
        from rspark.spark.session import get_session

        start = time.perf_counter()
        spark = get_session(None, harness.spark_settings(args.conf, **{"spark.driver.memory": "4g"}))
        spark.range(1).count()
        startup = time.perf_counter() - start
        for res in cases:
            if "error" in res:
                continue
            try:
                res.update(run_replay(spark, names, works[res["rate"]] / "stream.nq", res["file_triples"]))
                print(f"  replay of {res['rate']:,}: {res['replay_s']:.1f} s", flush=True)
            except Exception as exc:  # noqa: BLE001 - reported
                res["replay_error"] = f"{type(exc).__name__}: {exc}"[:400]
                failed.append(f"replay of {res['rate']:,}: {res['replay_error']}")
    return startup
