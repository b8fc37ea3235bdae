"""rspark on a Spark standalone cluster (a master and one worker started by scripts/cluster.py from the
pip-installed PySpark, loopback only) answers as it does locally: the README's sample query live (``rspark run``
over a paced replay source: its micro-batches are N-Quads files, read by Spark's text source and rspark's JVM line
scanner on the executors, with ``spark.rspark.live.driverRead=false``; its evaluations run on the executors), run
by the command line in a subprocess with ``--master spark://127.0.0.1:PORT`` (one SparkSession per process: this
test process holds a local one), gives the same records as the replay in local mode (this process's session). The
cluster is stopped at the end however the test ends, and its processes must be gone. (A replay on the cluster runs
the same plans over a loaded stream: the live run covers them, at a third of the test's time.)"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "rspark" / "samples"
# the sample is small: a few shuffle partitions, as the suite's own session (Spark's 200 on the cluster made the
# replay's many small stages take minutes); the same settings for both runs
CONF = ["--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.default.parallelism=2"]
# the runs stop at the sample's 6th instant (of 15): enough windows to compare, in a third of the time
UNTIL = "2026-03-01T13:05:00Z"


def _cluster_script():
    spec = importlib.util.spec_from_file_location("rspark_cluster_script", REPO / "scripts" / "cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rspark(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run([sys.executable, "-m", "rspark", *args], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, f"rspark {' '.join(args)} exited with {done.returncode}:\n{done.stderr[-3000:]}"
    return done


def _live(checkpoint: Path, *extra: str) -> tuple[list[dict], str]:
    """The sample query live: the sample stream written in at 120 times its pace (30 s of stream a quarter of a
    second), up to UNTIL."""
    done = _rspark("run", str(SAMPLES / "sensor_average.rq"),
                   "--source", f"http://example.org/obs=replay:{SAMPLES / 'observations.trig'}@120",
                   "--graph", f"http://example.org/sensors={SAMPLES / 'sensors.ttl'}",
                   "--until", UNTIL, "--checkpoint", str(checkpoint), "--format", "jsonl", "--max-seconds", "400",
                   *CONF, *extra)
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def _master_status(webui_port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui_port}/json/", timeout=10) as response:
        return json.load(response)


def _local(spark) -> list[dict]:
    """The same replay in local mode, in this process (its SparkSession has the same settings as CONF): the
    records as the command line's jsonl gives them."""
    from rspark.engine.engine import Engine

    with Engine(spark=spark) as eng:
        eng.load(SAMPLES / "sensors.ttl", graph="http://example.org/sensors")
        eng.add_stream("http://example.org/obs", SAMPLES / "observations.trig")
        return [json.loads(json.dumps(r.to_json())) for r in
                eng.replay((SAMPLES / "sensor_average.rq").read_text(encoding="utf-8"), until=UNTIL)]


def test_a_live_query_on_a_standalone_cluster_matches_local_mode(tmp_path, spark):
    from rspark.spark.jvm import jar_path

    cluster = _cluster_script()
    workdir = tmp_path / "cluster"
    pids: dict[str, int] = {}
    # the local replay (in this process's local session) goes on in a thread meanwhile
    with ThreadPoolExecutor(1) as pool:
        local_run = pool.submit(_local, spark)
        try:
            with cluster.standalone_cluster(workdir, cores=2, memory="2g", timeout=180) as master:
                state = cluster.read_state(workdir)
                pids = dict(state["pids"])
                assert master == f"spark://127.0.0.1:{state['port']}"
                assert set(pids) == {"master", "worker"} and all(cluster.alive(pid) for pid in pids.values())
                assert _master_status(state["webui_port"])["aliveworkers"] == 1
                # every micro-batch loaded on the executors (not read on the driver, as small clean ones are)
                live_on_cluster, live_log = _live(tmp_path / "checkpoint", "--master", master, "-v",
                                                  "--conf", "spark.rspark.live.driverRead=false",
                                                  "--conf", "spark.rspark.load.driverMaxBytes=0")
                apps = _master_status(state["webui_port"])
        finally:
            # standalone_cluster has stopped the cluster: none of its processes (nor of their groups) may be left
            left = cluster.leftover(pids)
        assert pids and not left, f"cluster processes still alive after stop: {left}"
        assert not (workdir / cluster.STATE_FILE).exists()
        local = local_run.result()

    # the work ran on the cluster: one application, finished, and the executors ran this interpreter (the
    # loopback master's default) with rspark importable (the session's check of the executors)
    finished = [app for app in apps["completedapps"] if app["name"] == "rspark"]
    assert len(finished) == 1 and all(app["state"] == "FINISHED" for app in finished), apps["completedapps"]
    assert f"the executors' Python workers run {sys.executable} (Python " in live_log, live_log[-3000:]
    assert "and import rspark" in live_log
    if jar_path() is not None:  # a JDK is here: the jar was built and the executors used its line scanner
        assert "with Spark's text source and rspark's JVM line scanner (a UDF)" in live_log, live_log[-3000:]

    assert len(local) == 6 and local[0]["time"] == "2026-03-01T13:00:00Z" and local[-1]["time"] == UNTIL
    assert len(live_on_cluster) == len(local)
    for instant, (live, expected) in enumerate(zip(live_on_cluster, local)):
        assert live == expected, f"live record {instant} differs"


def test_a_loopback_master_s_executors_run_the_driver_s_python(monkeypatch):
    from rspark.spark import session as S

    for master in ("spark://127.0.0.1:7077", "spark://localhost:7077", "spark://[::1]:7077",
                   "spark://127.0.0.1:7077,localhost:7078"):
        assert S.loopback_master(master), master
    for master in (None, "local[*]", "yarn", "spark://head:7077", "spark://10.0.0.5:7077",
                   "spark://127.0.0.1:7077,head:7077", "k8s://https://127.0.0.1:6443"):
        assert not S.loopback_master(master), master
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    settings = {}
    assert S._choose_python(settings, local=False, same_machine=True)["PYSPARK_PYTHON"] == sys.executable
    assert settings["spark.pyspark.python"] == sys.executable
    settings = {"spark.pyspark.python": "/opt/py/bin/python3"}  # the user's choice still wins
    assert S._choose_python(settings, local=False, same_machine=True)["PYSPARK_PYTHON"] == "/opt/py/bin/python3"


def test_a_cluster_not_up_in_time_is_stopped_with_a_clear_error(tmp_path):
    cluster = _cluster_script()
    with pytest.raises(cluster.ClusterError, match="timed out waiting for the master's web UI to answer"):
        cluster.start(tmp_path, timeout=0.5)
    assert not (tmp_path / cluster.STATE_FILE).exists()
    left = []  # the processes started in tmp_path (the daemons' working directory)
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")) == tmp_path.resolve() and cluster.alive(int(proc.name)):
                left.append(int(proc.name))
        except OSError:
            continue
    assert not left
