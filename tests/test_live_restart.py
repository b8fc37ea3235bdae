"""Live mode survives SIGKILL: ``rspark run`` killed mid-stream and started again with the same checkpoint and output
file writes exactly what an uninterrupted run writes (a replay of the same elements): no record lost, none twice,
for a window query and an event pattern with chronological consumption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_live import CONSUME, COUNT, trig

pytestmark = pytest.mark.slow

EX = "http://example.org/"


def _run(tmp: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    cmd = [sys.executable, "-m", "rspark", "run", str(tmp / "count.rq"), str(tmp / "consume.rq"),
           "--source", f"{EX}S={tmp / 'in'}", "--checkpoint", str(tmp / "ckpt"), "--output", str(tmp / "out.jsonl"),
           "--format", "jsonl", *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _drop(tmp: Path, name: str, *times: int) -> None:
    staged = tmp / ("." + name)
    staged.write_text(trig(*times))
    os.replace(staged, tmp / "in" / name)


def _lines(tmp: Path) -> int:
    out = tmp / "out.jsonl"
    return len(out.read_text().splitlines()) if out.exists() else 0


def _wait_for(predicate, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise AssertionError(f"rspark run ended early: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_sigkill_and_restart_give_the_uninterrupted_output(tmp_path, spark):
    (tmp_path / "in").mkdir()
    (tmp_path / "count.rq").write_text(COUNT)
    (tmp_path / "consume.rq").write_text(CONSUME)
    first = _run(tmp_path, "--max-seconds", "900")
    try:
        _drop(tmp_path, "a.trig", 2, 4)
        _wait_for(lambda: _lines(tmp_path) >= 2, 300, first)
        _drop(tmp_path, "b.trig", 6)
        time.sleep(1.0)  # the batch of b.trig is being loaded and evaluated: kill it there
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
    killed_at = _lines(tmp_path)
    second = _run(tmp_path, "--until", "10", "--max-seconds", "900")
    try:
        _drop(tmp_path, "c.trig", 8, 10)
        assert second.wait(600) == 0, second.stderr.read().decode()[-2000:]
    finally:
        if second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]

    # the uninterrupted run's output: a replay of the same elements (in this process's session), as jsonl records
    from rspark.engine.engine import Engine

    (tmp_path / "all.trig").write_text(trig(2, 4, 6, 8, 10))
    with Engine(spark=spark) as eng:
        eng.add_stream(f"{EX}S", tmp_path / "all.trig")
        expected = [json.loads(json.dumps(r.to_json())) for r in
                    eng.replay([COUNT, CONSUME], names=["count.rq", "consume.rq"])]

    def by_query(recs):
        return {q: [(r["time"], r["results"]["bindings"]) for r in recs if r["query"] == q]
                for q in ("count.rq", "consume.rq")}

    got, want = by_query(records), by_query(expected)
    assert [t for t, _ in got["count.rq"]] == [2, 4, 6, 8, 10]
    for q in want:
        assert [t for t, _ in got[q]] == [t for t, _ in want[q]], q
        for (t, b1), (_, b2) in zip(got[q], want[q]):
            assert sorted(map(json.dumps, b1)) == sorted(map(json.dumps, b2)), (q, t)
    assert 2 <= killed_at < len(records)
