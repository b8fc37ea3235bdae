"""Spark's Python workers run the interpreter that runs rspark (issue 23): the installed ``rspark`` entry point,
started by its absolute path with no virtualenv active and a ``python3`` on the PATH that cannot run them, answers
the README's sample; ``--conf spark.pyspark.python=X`` makes the workers run X (also over ``PYSPARK_PYTHON``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _entry_point() -> Path:
    beside = Path(sys.executable).parent / "rspark"
    if beside.is_file():
        return beside
    found = shutil.which("rspark")
    if found is None:
        pytest.skip("the rspark entry point is not installed (python3 -m pip install -e .)")
    return Path(found).resolve()


def _fake_pythons(directory: Path) -> Path:
    """A directory whose ``python3`` and ``python`` record that they ran (in ``ran``) and exit 1: first on the PATH,
    it stands for an interpreter without rspark's dependencies, and shows whether Spark started one."""
    directory.mkdir()
    marker = directory / "ran"
    for name in ("python3", "python"):
        script = directory / name
        script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\necho "not this python" >&2\nexit 1\n')
        script.chmod(0o755)
    return marker


def _environment(fake_ran: Path) -> dict[str, str]:
    """The environment of a program started outside any virtualenv (cron, systemd, an IDE): the fake pythons, then
    the system's directories; java still found."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "PYTHONHOME",
                          "CONDA_PREFIX", "PYENV_VERSION")}
    path = [str(fake_ran.parent), "/usr/bin", "/bin"]
    java = shutil.which("java")
    if not env.get("JAVA_HOME") and java and shutil.which("java", path=os.pathsep.join(path)) is None:
        path.append(str(Path(java).resolve().parent))
    env.update(PATH=os.pathsep.join(path), SPARK_LOCAL_IP="127.0.0.1")
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(_entry_point()), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          check=False, timeout=900)


def _readme_first_record() -> str:
    for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith('{"query": '):
            return line
    raise AssertionError("README.md shows no output record of the sample")


# the sample's records: (time HH:MM, [(sensor, average)]), the namespace dropped
SAMPLE_RECORDS = [
    ("13:00", [("s3", "32.0"), ("s2", "28.0")]),
    ("13:01", [("s2", "25.333333333333333333")]),
    ("13:02", [("s3", "31.8"), ("s2", "25.8")]),
    ("13:03", [("s3", "31.857142857142857142"), ("s2", "25.285714285714285714")]),
    ("13:04", [("s3", "31.444444444444444444"), ("s2", "25.888888888888888888")]),
    ("13:05", [("s3", "30.454545454545454545"), ("s2", "25.454545454545454545")]),
    ("13:06", [("s3", "30.384615384615384615"), ("s2", "25.76923076923076923"), ("s1", "20.307692307692307692")]),
    ("13:07", [("s3", "30.0"), ("s2", "25.533333333333333333"), ("s1", "20.6")]),
    ("13:08", [("s3", "30.117647058823529411"), ("s2", "25.647058823529411764"), ("s1", "20.588235294117647058")]),
    ("13:09", [("s3", "30.263157894736842105"), ("s2", "25.789473684210526315"), ("s1", "20.52631578947368421")]),
    ("13:10", [("s3", "30.25"), ("s2", "25.35"), ("s1", "20.7")]),
    ("13:11", [("s3", "30.45"), ("s2", "25.4"), ("s1", "21.25")]),
    ("13:12", [("s3", "30.05"), ("s2", "25.35"), ("s1", "22.1")]),
    ("13:13", [("s3", "30.35"), ("s2", "25.45"), ("s1", "22.05")]),
    ("13:14", [("s3", "30.05"), ("s2", "25.25")]),
]


def test_the_entry_point_answers_the_readme_sample_without_a_virtualenv(tmp_path):
    """The README's first command through the installed entry point, with a PATH whose python3 is not the one rspark
    is installed in, and beside the sample's query tests/test_quiet_stderr.py's two (counts of two windows, whose
    stage's generated code once did not compile, and a FROM STREAM query running Python code): the sample's 15
    records exactly (the README's first record first), the two others' exactly, and on standard error only the
    rspark warning of each query that the window holding the last element (13:14:30) is still open (no JVM, Janino
    or PySpark line). The 16th record, with ``--until end``, is tests/test_session.py's."""
    from tests.test_quiet_stderr import MERGED, TWO_WINDOWS, check_two_windows

    marker = _fake_pythons(tmp_path / "bin")
    (tmp_path / "two_windows.rq").write_text(TWO_WINDOWS, encoding="utf-8")
    (tmp_path / "merged.rq").write_text(MERGED, encoding="utf-8")
    done = _run(["replay", "rspark/samples/sensor_average.rq", str(tmp_path / "two_windows.rq"),
                 str(tmp_path / "merged.rq"),
                 "--stream", "http://example.org/obs=rspark/samples/observations.trig",
                 "--graph", "http://example.org/sensors=rspark/samples/sensors.ttl", "--format", "jsonl"],
                _environment(marker))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.splitlines() == [
        f"rspark: warning: {name}: the last element of <http://example.org/obs> (at 2026-03-01T13:14:30Z) is after "
        "the last evaluation instant 2026-03-01T13:14:00Z: the window holding it is still open; pass until='end' "
        "(rspark replay --until end) to close the stream at its last element"
        for name in ("http://example.org/out", "two_windows.rq", "merged.rq")], done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == _readme_first_record()
    check_two_windows(lines)
    records = [line for line in lines if json.loads(line)["query"] == "http://example.org/out"]
    assert len(records) + 30 == len(lines)  # 15 records of each of the other two
    got = []
    for line in records:
        rec = json.loads(line)
        rows = [tuple(row[v]["value"].replace("http://example.org/", "") for v in rec["head"]["vars"])
                for row in rec["results"]["bindings"]]
        got.append((rec["time"][11:16], rows))
    assert got == SAMPLE_RECORDS
    assert not marker.exists()  # the PATH's python3 never ran


def test_conf_spark_pyspark_python_runs_the_workers(tmp_path):
    """A wrapper named by --conf spark.pyspark.python records its runs and runs this interpreter; PYSPARK_PYTHON
    names the failing fake: Spark's documented order, the conf over the environment variable."""
    fake_ran = _fake_pythons(tmp_path / "bin")
    ran = tmp_path / "wrapper-ran"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{ran}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    env = _environment(fake_ran)
    env["PYSPARK_PYTHON"] = str(fake_ran.parent / "python3")
    query = tmp_path / "rooms.rq"
    query.write_text("SELECT ?s ?p ?o WHERE { ?s ?p ?o }\n", encoding="utf-8")
    # Turtle is parsed in Python workers (mapInArrow), however small the file
    done = _run(["sparql", str(query), "--data", "rspark/samples/sensors.ttl", "--format", "json",
                 "--conf", f"spark.pyspark.python={wrapper}", "--conf", "spark.rspark.load.driverMaxBytes=0"], env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["results"]["bindings"]
    assert ran.exists() and "pyspark" in ran.read_text()
    assert not fake_ran.exists()
