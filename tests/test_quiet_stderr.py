"""Standard error carries ``rspark:`` lines only, whatever Spark does: its start-up notices, its log (Janino's "Code
grows beyond 64 KB" with its stack trace among them), and the output of a JVM stopping after Ctrl-C or after its
Python process was killed (rspark.spark.gateway). And the generated code of rspark's expressions stays within the
JVM's limits (rspark.spark.expr.sql.let_in).

Each command test runs ``python -m rspark`` in a session of its own, as a user runs it, and reads all of its standard
error (the JVM's too, when it writes there). The replay of two windows' counts (TWO_WINDOWS, check_two_windows) runs
beside the README's sample through the installed entry point, whose standard error must be its three warnings
exactly (tests/test_workers_python.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "rspark" / "samples"
STREAM = SAMPLES / "observations.trig"
SENSORS = SAMPLES / "sensors.ttl"
OBS = "http://example.org/obs"
EX = "http://example.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
P = "PREFIX : <http://example.org/>\n"

# a COUNT sub-SELECT in each of two windows over one stream, their ratio and difference: with Spark compiling the
# expressions' lambdas into its generated code, the stage computing the two BINDs and the FILTER did not compile
# ("Code grows beyond 64 KB", about 1,200 lines of stack trace on standard error, the stage run again without
# generated code)
TWO_WINDOWS = P + """SELECT ?s ?n1 ?n2 ?ratio ?diff
FROM NAMED WINDOW :w1 ON :obs [RANGE PT10M SLIDE PT1M]
FROM NAMED WINDOW :w2 ON :obs [RANGE PT5M SLIDE PT1M]
WHERE {
  { SELECT ?s (COUNT(*) AS ?n1) WHERE { WINDOW :w1 { ?o :by ?s } } GROUP BY ?s }
  { SELECT ?s (COUNT(*) AS ?n2) WHERE { WINDOW :w2 { ?o :by ?s } } GROUP BY ?s }
  BIND(?n2 / ?n1 AS ?ratio)
  BIND(?n1 - ?n2 AS ?diff)
  FILTER(?ratio < 1)
}
ORDER BY ?s
"""

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _start(*args: str, limit: float = 900) -> subprocess.Popen:
    """``python -m rspark ARGS`` in a session of its own (its pid is the session's id), output read as text; the
    session is killed after ``limit`` seconds, so that a test waiting for its output ends."""
    proc = subprocess.Popen([sys.executable, "-m", "rspark", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, start_new_session=True)
    timer = threading.Timer(limit, _kill_session, [proc])
    timer.daemon = True
    timer.start()
    return proc


def _session(sid: int) -> list[str]:
    """The command lines of the processes of session ``sid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[3]) == sid:  # state ppid pgrp session ...
                out.append(Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"))
        except (OSError, ValueError):
            pass
    return out


def _spark_jvm_listens(sid: int) -> bool:
    """Whether the Spark JVM of session ``sid`` (spark-submit's SparkSubmit) listens on a TCP port: its py4j
    gateway is up, PySpark connects to it and asks it for the SparkContext."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[3]) != sid:
                continue
            if b"org.apache.spark.deploy.SparkSubmit" not in Path(f"/proc/{entry}/cmdline").read_bytes():
                continue
            sockets = {os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")}
            for table in ("tcp", "tcp6"):
                for line in Path(f"/proc/{entry}/net/{table}").read_text().splitlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A" and f"socket:[{fields[9]}]" in sockets:  # LISTEN
                        return True
        except (OSError, ValueError, IndexError):
            pass
    return False


def _gone(sid: int, timeout: float) -> list[str]:
    """Wait up to ``timeout`` seconds for session ``sid`` to have no process; the processes left."""
    deadline = time.monotonic() + timeout
    while _session(sid) and time.monotonic() < deadline:
        time.sleep(0.5)
    return _session(sid)


def _kill_session(proc: subprocess.Popen) -> None:
    for _ in range(2):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            return
        time.sleep(0.5)


def _only_rspark_lines(stderr: str) -> None:
    others = [line for line in stderr.splitlines() if line.strip() and not line.startswith("rspark:")]
    assert others == [], "standard error has lines that are not rspark's:\n" + "\n".join(others[:40])


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = _start(*args)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        _kill_session(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _records(stdout: str) -> list[tuple]:
    """(time HH:MM, [(variable values, the URIs' namespace dropped)]) per jsonl record."""
    out = []
    for line in stdout.splitlines():
        rec = json.loads(line)
        rows = [tuple(row[v]["value"].replace(EX, "") if v in row else None for v in rec["head"]["vars"])
                for row in rec["results"]["bindings"]]
        out.append((rec["time"][11:16], rows))
    return out


# the two queries' command is the README's sample replay with them beside it, run through the installed entry point
# (tests/test_workers_python.py): one JVM for the three queries, standard error read whole there
MERGED = P + "SELECT ?o FROM STREAM :obs [RANGE PT1M SLIDE PT1M] WHERE { ?o :by :s1 }"


def check_two_windows(lines: list[str]) -> None:
    """The jsonl records of TWO_WINDOWS (run as two_windows.rq) and, beside it, of MERGED (merged.rq), a FROM
    STREAM query whose job runs Python code and so opens PySpark's accumulator socket (the JVM closing that socket
    as the command ended printed an EOFError traceback): their answers, exactly."""
    mine = "\n".join(line for line in lines if json.loads(line)["query"] == "two_windows.rq")
    # each sensor reads every 30 s from 13:00:00: at t the 10-minute window holds (t - 10 min, t], the 5-minute one
    # (t - 5 min, t]; the ratio is truncated at 18 fractional digits and written canonically
    expected = [(f"13:0{m}", []) for m in range(5)]
    for minute, n1, ratio in [(5, 11, "0.90909090909090909"), (6, 13, "0.76923076923076923"),
                              (7, 15, "0.666666666666666666"), (8, 17, "0.588235294117647058"),
                              (9, 19, "0.52631578947368421")] + [(m, 20, "0.5") for m in range(10, 15)]:
        expected.append((f"13:{minute:02d}", [(f"s{i}", str(n1), "10", ratio, str(n1 - 10)) for i in range(1, 5)]))
    assert _records(mine) == expected
    first = json.loads(mine.splitlines()[5])["results"]["bindings"][0]
    assert first["ratio"]["datatype"] == XSD + "decimal" and first["diff"]["datatype"] == XSD + "integer"
    # s1 reads at 13:00:00 (o1), 13:00:30 (o5), 13:01:00 (o9): the window (13:00, 13:01] holds o5 and o9
    others = _records("\n".join(line for line in lines if json.loads(line)["query"] == "merged.rq"))
    assert len(others) == 15 and sorted(others[1][1]) == [("o5",), ("o9",)]


def test_sample_sparql_writes_only_rspark_lines(tmp_path):
    """``rspark sparql`` over the sample's static graph: the sensors in order and nothing on standard error (no JVM or
    PySpark line). The sample replay's standard error is checked where the installed entry point runs it
    (tests/test_workers_python.py). The command returns without waiting for its local JVM's shutdown, and that JVM
    ends on its own: no process of the command is left a few seconds later."""
    query = tmp_path / "sensors.rq"
    query.write_text(P + "SELECT ?s WHERE { ?s a :Sensor } ORDER BY ?s")
    proc = _start("sparql", str(query), "--data", str(SENSORS), "--format", "csv")
    try:
        out, err = proc.communicate(timeout=600)
        left = _gone(proc.pid, 30)
    finally:
        _kill_session(proc)
    assert proc.returncode == 0, err[-3000:]
    assert err == ""
    assert out.splitlines() == ["s"] + [f"{EX}s{i}" for i in range(1, 5)]
    assert left == []


def test_jvm_that_does_not_start_is_one_error_line(tmp_path):
    """A JVM that cannot start (an invalid heap size) is one error line naming what the JVM said, exit 1 (the JVM's
    own lines, then an "internal error" and PySpark's traceback, before)."""
    query = tmp_path / "sensors.rq"
    query.write_text(P + "SELECT ?s WHERE { ?s a :Sensor }")
    proc = _run("sparql", str(query), "--data", str(SENSORS), "--conf", "spark.driver.memory=abc", timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "rspark: error: the Spark JVM did not start: Invalid maximum heap size: -Xmxabc; Error: Could not create the "
        "Java Virtual Machine.; Error: A fatal exception has occurred. Program will exit."]


@pytest.mark.parametrize("delay", [0.5, 4.0])
def test_ctrl_c_while_spark_starts_prints_only_rspark_lines(delay):
    """SIGINT to the process group (as a terminal sends Ctrl-C) ``delay`` seconds after the JVM's py4j gateway is
    up: while the JVM creates the SparkContext (its Java stack trace followed ``rspark: interrupted``), or about
    when PySpark's SparkContext has put its own Ctrl-C handler in place (py4j's Python tracebacks): exit 130 with
    ``rspark: interrupted``, nothing else on standard error, no process left."""
    proc = _start("replay", str(SAMPLES / "sensor_average.rq"), "--stream", f"{OBS}={STREAM}", "--graph",
                  f"{EX}sensors={SENSORS}", "--format", "jsonl")
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        while not _spark_jvm_listens(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(err)
            time.sleep(0.05)
        time.sleep(delay)  # PySpark connected and asked for the SparkContext, which takes seconds to start
        os.killpg(proc.pid, signal.SIGINT)
        out = proc.stdout.read()
        code = proc.wait(timeout=120)
        left = _gone(proc.pid, 60)
        reader.join(30)  # the pipe closes when every process holding it has ended
    finally:
        _kill_session(proc)
    stderr = "".join(err)
    assert code == 130, stderr
    assert out == ""
    _only_rspark_lines(stderr)
    assert "rspark: interrupted" in stderr.splitlines(), stderr
    assert left == []


def test_killed_run_leaves_no_jvm_and_writes_nothing(tmp_path):
    """``rspark run`` killed with SIGKILL (its Python process alone, as the kernel's out-of-memory killer does): its
    JVM ends within a bounded time, and neither it nor its Python workers write anything more on the standard error
    they were started with."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    query = tmp_path / "count.rq"
    query.write_text(P + "SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :obs [RANGE PT1M SLIDE PT1M] "
                         "WHERE { WINDOW :w { ?o :value ?v } }")
    proc = _start("run", str(query), "--source", f"{OBS}={inbox}", "--format", "jsonl", "--max-seconds", "900",
                  "--checkpoint", str(tmp_path / "ckpt"))
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        staged = tmp_path / "elements.trig"
        staged.write_text(STREAM.read_text())
        os.replace(staged, inbox / "elements.trig")
        first = proc.stdout.readline()  # a record: the JVM runs the live batches
        assert first.startswith('{"query"'), "".join(err)
        before = len(err)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        left = _gone(proc.pid, 60)
        reader.join(30)
    finally:
        _kill_session(proc)
    assert left == [], left
    after = "".join(err[before:])
    assert after == "", "written after the kill:\n" + after[-3000:]
    _only_rspark_lines("".join(err))


def test_generated_code_of_an_expression_stays_small(spark):
    """A SPARQL division compiled by rspark: Spark's generated code for it has no method near the JVM's 64 KB
    limit, nor above HotSpot's 8,000 bytes, beyond which a method is never compiled to machine code (with the
    lambdas compiled into the stage, the division alone was a 53 KB method). Its answer is the division's."""
    from pyspark.sql import functions as F

    from rspark.algebra.expr import Call
    from rspark.model.terms import Literal, Variable
    from rspark.spark.expr.compile import ExprEnv, compile_expr

    class Scope:
        def column(self, name):
            return F.col(name)

    integer = '"^^<' + XSD + 'integer>'
    df = spark.createDataFrame([(f'"{i}{integer}', f'"{i + 1}.5"^^<{XSD}decimal>') for i in range(1, 5)],
                               "a string, b string")
    ratio = compile_expr(Call("/", (Variable("b"), Variable("a"))), Scope(), ExprEnv(now="2026-03-01T00:00:00Z"))
    plus = compile_expr(Call("+", (Variable("a"), Literal("1", XSD + "integer"))), Scope(),
                        ExprEnv(now="2026-03-01T00:00:00Z"))
    result = df.select(ratio.alias("r"), plus.alias("p"))
    debug = getattr(spark._jvm.org.apache.spark.sql.execution.debug, "package$").__getattr__("MODULE$")
    stages = debug.codegenStringSeq(result._jdf.queryExecution().executedPlan())
    sizes = [int(stages.apply(i)._3().maxMethodCodeSize()) for i in range(stages.size())]
    assert all(0 <= size <= 8000 for size in sizes), sizes
    assert sorted(r.r for r in result.collect()) == [
        f'"{v}"^^<{XSD}decimal>' for v in ("1.375", "1.5", "1.75", "2.5")]


def test_an_interrupt_raised_in_a_finaliser_is_not_printed(capsys):
    """Ctrl-C's KeyboardInterrupt may land in a finaliser (py4j's, run by the garbage collector), which Python
    reports as "Exception ignored in ...": once the interrupt arrived that report is dropped (the interrupt is
    acted on anyway); any other exception in a finaliser is reported as Python reports it."""
    from rspark.cli import _Interrupts

    class Interrupted:
        def __del__(self):
            raise KeyboardInterrupt

    class Broken:
        def __del__(self):
            raise ValueError("a finaliser's own error")

    hook = sys.unraisablehook
    interrupts = _Interrupts()
    interrupts.quiet()
    try:
        Interrupted()
        Broken()
    finally:
        interrupts.restore()
    err = capsys.readouterr().err
    assert "KeyboardInterrupt" not in err
    assert "ValueError: a finaliser's own error" in err
    assert sys.unraisablehook is hook
