"""The ``rspark`` command line: exit codes and one-line messages (2 usage or bad query, 1 bad data or runtime, 130
interrupted), everything that needs no data checked before Spark starts, one csv / tsv table for several queries,
the -v / -q logging flags, Ctrl-C, and internal bugs shown with their traceback (``--until end`` on the README's
sample: tests/test_workers_python.py, which runs that sample through the installed entry point).

The checks that need no Spark run as subprocesses that must end within seconds (Spark takes 10 s or more to start)
with one line on standard error; Spark is started by few tests: one in-process replay and sparql over the test
session's SparkSession, and one subprocess (Ctrl-C)."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "rspark" / "samples"
QUERY = SAMPLES / "sensor_average.rq"
STREAM = SAMPLES / "observations.trig"
SENSORS = SAMPLES / "sensors.ttl"
OBS = "http://example.org/obs"
SAMPLE_ARGS = [str(QUERY), "--stream", f"{OBS}={STREAM}", "--graph", f"http://example.org/sensors={SENSORS}"]
P = "PREFIX : <http://example.org/>\n"
# a JAVA_HOME with no Java in it: a command run with it that starts Spark fails with "the Spark JVM did not start"
NO_JVM = {**os.environ, "JAVA_HOME": str(REPO / "no-jvm-here")}


def run(*args: str, stdin: str | None = None, timeout: float = 120,
        env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rspark", *args], capture_output=True, text=True, input=stdin,
                          timeout=timeout, cwd=REPO, env=env)
    return proc, time.monotonic() - start


def fails_before_spark(args: list[str], message: str, code: int = 2, stdin: str | None = None) -> str:
    """Run ``rspark ARGS``: exit ``code`` with the one line ``message`` (a regular expression) on standard error,
    nothing on standard output, and without Spark: run with no Java to start (so a command that started Spark would
    fail with another message), and no Java or py4j text."""
    proc, _ = run(*args, stdin=stdin, env=NO_JVM)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.fullmatch(message, lines[0]), lines[0]
    assert not re.search(r"Traceback|py4j|java|Spark's default log4j", proc.stderr, re.I), proc.stderr
    return lines[0]


@pytest.fixture
def queries(tmp_path):
    """Query files: a CONSTRUCT, an ASK, a static SELECT, a second continuous SELECT and a syntax error."""
    files = {
        "construct.rq": P + "CONSTRUCT { ?o :seen ?v } FROM NAMED WINDOW :w ON :obs [RANGE PT1M SLIDE PT1M] "
                            "WHERE { WINDOW :w { ?o :value ?v } }",
        "ask.rq": P + "ASK FROM NAMED WINDOW :w ON :obs [RANGE PT1M SLIDE PT1M] WHERE { WINDOW :w { ?o :value 33 } }",
        "static.rq": P + "SELECT ?s WHERE { ?s a :Sensor }",
        "static_construct.rq": P + "CONSTRUCT { ?s a :Thing } WHERE { ?s a :Sensor }",
        "high.rq": P + "SELECT ?v ?sensor FROM NAMED WINDOW :w ON :obs [RANGE PT5M SLIDE PT5M] "
                       "WHERE { WINDOW :w { ?o :by ?sensor ; :value ?v } FILTER(?v >= 35) } ORDER BY ?v",
        "bad.rq": "SELECT * WHERE { ?s ?p }",
        "time.rq": P + "SELECT ?time FROM NAMED WINDOW :w ON :obs [RANGE PT1M] WHERE { WINDOW :w { ?o :value ?time } }",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


# ----------------------------------------------------------------------------------- checked before Spark starts


def test_bad_arguments_fail_fast_with_one_line(tmp_path):
    fails_before_spark(["replay", *SAMPLE_ARGS, "--profile", "nope"],
                       r"rspark: error: unknown profile 'nope'; choose one of: default, csparql, cqels, .*")
    fails_before_spark(["replay", *SAMPLE_ARGS, "--format", "xml"],
                       r"rspark: error: argument --format: invalid choice: 'xml' \(choose from .*jsonl.*trig.*\) "
                       r"\(see 'rspark replay --help'\)")
    fails_before_spark(["replay", *SAMPLE_ARGS, "--until", "tomorrow"],
                       re.escape("rspark: error: --until: not a time: 'tomorrow' (a number, or an ISO 8601 date-time "
                                 "such as 2026-03-01T13:05:00Z, or end)"))
    fails_before_spark(["replay", *SAMPLE_ARGS, "--times", "2026-03-01T13:05:00Z,13h"],
                       re.escape("rspark: error: --times: not a time: '13h' (a number, or an ISO 8601 date-time "
                                 "such as 2026-03-01T13:05:00Z)"))
    fails_before_spark(["replay", *SAMPLE_ARGS, "--conf", "spark.driver.memory"],
                       re.escape("rspark: error: --conf expects KEY=VALUE (a Spark setting, e.g. "
                                 "spark.driver.memory=8g), got 'spark.driver.memory'"))
    fails_before_spark(["replay", str(QUERY)], re.escape("rspark: error: replay needs at least one --stream IRI=PATH"))
    fails_before_spark(["frobnicate"], r"rspark: error: argument COMMAND: invalid choice: 'frobnicate' .*")
    fails_before_spark(["sparql", str(QUERY), "--stream", "x"],
                       re.escape("rspark: error: unrecognized arguments: --stream x (see 'rspark sparql --help')"))


def test_missing_files_fail_fast(tmp_path):
    missing = tmp_path / "obs.trig"
    fails_before_spark(["replay", str(QUERY), "--stream", f"{OBS}={missing}"],
                       re.escape(f"rspark: error: --stream {OBS}: no such file: {missing}"))
    fails_before_spark(["replay", *SAMPLE_ARGS, "--data", str(tmp_path / "d.ttl")],
                       re.escape(f"rspark: error: --data: no such file: {tmp_path / 'd.ttl'}"))
    fails_before_spark(["replay", str(QUERY), "--stream", f"{OBS}={STREAM}", "--graph",
                        f"http://example.org/sensors={tmp_path / 's.ttl'}"],
                       re.escape("rspark: error: --graph http://example.org/sensors: "
                                 f"no such file: {tmp_path / 's.ttl'}"))
    fails_before_spark(["sparql", str(tmp_path / "q.rq"), "--data", str(SENSORS)],
                       re.escape(f"rspark: error: query: no such file: {tmp_path / 'q.rq'}"))
    fails_before_spark(["replay", str(QUERY), "--stream", f"{OBS}={SENSORS}"],
                       re.escape(f"rspark: error: --stream {OBS}: a stream is a TriG or N-Quads file (.trig, .nq, "
                                 "optionally .gz), an RDF Message Log (VERSION \"1.2-messages\"), NDJSON-LD or "
                                 f"JSON-LD, not turtle: {SENSORS}"))
    fails_before_spark(["replay", str(QUERY), "--stream", f"{OBS}={STREAM}", "--stream-format", "yaml-ld"],
                       re.escape("rspark: error: --stream-format yaml-ld: unknown (trig, nquads, ndjsonld, jsonld, "
                                 "trig-messages, nquads-messages, turtle-messages, ntriples-messages)"))
    fails_before_spark(["replay", str(QUERY), "--stream", f"{OBS}={tmp_path}"],
                       re.escape(f"rspark: error: --stream {OBS}: {tmp_path} is a directory, not a file"))
    fails_before_spark(["replay", str(QUERY), "--stream", f"http://example.org/other={STREAM}"],
                       re.escape(f"rspark: error: {QUERY} reads the stream <{OBS}>, which no --stream gives (add "
                                 f"--stream {OBS}=PATH; given: <http://example.org/other>)"))


def test_format_must_fit_every_query(queries):
    construct, ask = queries / "construct.rq", queries / "ask.rq"
    fails_before_spark(["replay", str(QUERY), str(construct), "--stream", f"{OBS}={STREAM}", "--format", "csv"],
                       re.escape(f"rspark: error: --format csv writes SELECT results only, but {construct} is a "
                                 f"CONSTRUCT query: use --format jsonl, table, trig or messages for it"))
    fails_before_spark(["replay", str(QUERY), "--stream", f"{OBS}={STREAM}", "--format", "messages"],
                       re.escape(f"rspark: error: --format messages writes CONSTRUCT (without GRAPH blocks) and "
                                 f"DESCRIBE results only, but {QUERY} is a SELECT query: use --format jsonl, table, "
                                 f"csv or tsv for it"))
    fails_before_spark(["replay", str(ask), "--stream", f"{OBS}={STREAM}", "--format", "tsv"],
                       re.escape(f"rspark: error: --format tsv writes SELECT results only, but {ask} is an ASK "
                                 f"query: use --format jsonl or table for it"))
    fails_before_spark(["replay", str(construct), str(QUERY), "--stream", f"{OBS}={STREAM}", "--format", "trig"],
                       re.escape(f"rspark: error: --format trig writes CONSTRUCT and DESCRIBE results only, but "
                                 f"{QUERY} is a SELECT query: use --format jsonl, table, csv or tsv for it"))
    fails_before_spark(["replay", str(queries / "time.rq"), "--stream", f"{OBS}={STREAM}", "--format", "csv"],
                       re.escape(f"rspark: error: --format csv starts every row with the columns query, time, but "
                                 f"{queries / 'time.rq'} selects ?time: rename the variable (SELECT (?time AS "
                                 f"?time_) ...) or use --format jsonl or table"))
    fails_before_spark(["sparql", str(queries / "static_construct.rq"), "--data", str(SENSORS), "--format", "csv"],
                       re.escape(f"rspark: error: --format csv writes SELECT results only, but "
                                 f"{queries / 'static_construct.rq'} is a CONSTRUCT query: use --format json, table, "
                                 f"ntriples or nquads for it"))
    fails_before_spark(["sparql", str(queries / "static.rq"), "--data", str(SENSORS), "--format", "ntriples"],
                       re.escape(f"rspark: error: --format ntriples writes CONSTRUCT and DESCRIBE results (triples) "
                                 f"only, but {queries / 'static.rq'} is a SELECT query: use --format json, xml, csv, "
                                 f"tsv or table for it"))


def test_query_of_the_wrong_kind_is_the_same_error_for_sparql_and_replay(queries):
    """A continuous query given to `sparql` and a static query given to `replay` are both usage errors (exit 2),
    found before Spark starts."""
    fails_before_spark(["sparql", str(QUERY), "--data", str(SENSORS)],
                       re.escape(f"rspark: error: {QUERY} reads a stream or registers a continuous query: use "
                                 f"`rspark replay` (`rspark sparql` answers queries over static data)"))
    fails_before_spark(["replay", str(queries / "static.rq"), "--stream", f"{OBS}={STREAM}"],
                       re.escape(f"rspark: error: {queries / 'static.rq'} reads no stream (no FROM NAMED WINDOW or "
                                 f"FROM STREAM): use `rspark sparql` for a query over static data"))


def test_query_syntax_error_names_file_line_and_column(queries):
    bad = queries / "bad.rq"
    for command in (["explain", str(bad)], ["replay", str(QUERY), str(bad), "--stream", f"{OBS}={STREAM}"],
                    ["sparql", str(bad), "--data", str(SENSORS)]):
        fails_before_spark(command, re.escape(f"rspark: error: {bad}:1:24: unexpected '}}'; expected ") + ".*")
    # a query read from standard input is named '-'
    fails_before_spark(["replay", "-", "--stream", f"{OBS}={STREAM}"],
                       re.escape("rspark: error: -:1:24: unexpected '}'; expected ") + ".*", stdin=bad.read_text())


def test_standard_input_query_and_help():
    proc, _ = run("explain", "-", stdin="SELECT ?s WHERE { ?s ?p ?o }")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "(project (?s)\n  (bgp\n    (triple ?s ?p ?o)))\n", "")
    proc, _ = run("replay", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "exit status: 0 success; 2 a usage error or a bad query" in text
    assert "'end' also reports the window still open" in text
    assert "a single header 'query,time,' then the union of the queries' variables" in text
    proc, _ = run("--version")
    assert proc.returncode == 0 and re.fullmatch(r"rspark \d+\.\d+\.\d+\S*\n", proc.stdout)


def test_verbose_flags_before_and_after_the_command():
    debug = "rspark: debug: rspark "
    for args, shown in ((["-vv", "explain", "-"], True), (["explain", "-vv", "-"], True),
                        (["-v", "explain", "-v", "-"], True), (["-v", "explain", "-"], False),
                        (["-q", "explain", "-vv", "-"], False)):
        proc, _ = run(*args, stdin="ASK {}")
        assert proc.returncode == 0, proc.stderr
        assert (debug in proc.stderr) == shown, (args, proc.stderr)


def test_logging_levels(capsys):
    from rspark import cli

    engine_log = logging.getLogger("rspark.engine")
    saved = (cli.log.level, cli.log.propagate, list(cli.log.handlers))
    try:
        for verbose, quiet, shown in ((0, False, "WE"), (1, False, "IWE"), (2, False, "DIWE"), (2, True, "E")):
            cli.configure_logging(verbose, quiet)
            engine_log.debug("d")
            engine_log.info("i")
            engine_log.warning("stream <x> is empty")
            engine_log.error("e")
            expected = {"D": "rspark: debug: d\n", "I": "rspark: info: i\n",
                        "W": "rspark: warning: stream <x> is empty\n", "E": "rspark: error: e\n"}
            assert capsys.readouterr().err == "".join(expected[c] for c in shown)
    finally:
        cli.log.setLevel(saved[0])
        cli.log.propagate = saved[1]
        cli.log.handlers[:] = saved[2]


# ------------------------------------------------------------------------------------------- internal errors


def test_internal_bug_is_not_a_user_error(monkeypatch, capsys, tmp_path):
    """An exception that is not an RsparkError is a bug: its traceback is not swallowed into a user message."""
    from rspark import cli

    def broken(args):
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr(cli, "cmd_explain", broken)
    with pytest.raises(TypeError, match="unsupported operand"):
        cli.main(["explain", "-"])
    err = capsys.readouterr().err
    assert re.fullmatch(r"rspark: internal error: this is a bug in rspark \S+ \(Python \S+\); please report it with "
                        r"the traceback below\n", err)

    def value_error(args):  # no longer taken for a user error (the CLI used to catch every ValueError)
        raise ValueError("internal")

    monkeypatch.setattr(cli, "cmd_explain", value_error)
    with pytest.raises(ValueError, match="internal"):
        cli.main(["explain", "-"])


def test_internal_bug_traceback_in_a_subprocess(tmp_path):
    script = ("import sys, rspark.cli as c\n"
              "c.cmd_explain = lambda args: {}['missing']\n"
              "sys.exit(c.main(['explain', '-']))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, input="")
    assert proc.returncode == 1
    assert proc.stderr.startswith("rspark: internal error: this is a bug in rspark ")
    assert "Traceback (most recent call last):" in proc.stderr and proc.stderr.rstrip().endswith("KeyError: 'missing'")


def test_every_user_error_derives_from_rspark_error():
    from rspark.cli import UsageError, exit_code
    from rspark.engine.writers import FormatError
    from rspark.errors import DataError, MemoryLimitError, NotSupportedError, RsparkError, SparkStoppedError
    from rspark.model.time import DurationError, WindowError
    from rspark.rsp.profiles import ProfileError
    from rspark.rsp.report import ReportError
    from rspark.syntax.parser import QuerySyntaxError
    from rspark.syntax.translate import QueryError

    for cls in (QuerySyntaxError, QueryError, WindowError, ProfileError, ReportError, DurationError, FormatError):
        assert issubclass(cls, RsparkError) and issubclass(cls, ValueError), cls
    assert issubclass(QueryError, QuerySyntaxError)
    assert [exit_code(cls("x")) for cls in (UsageError, QueryError, WindowError, ProfileError, DurationError,
                                            FormatError)] == [2] * 6
    assert exit_code(QuerySyntaxError("x", line=1, column=1)) == 2
    assert [exit_code(e) for e in (DataError("x"), MemoryLimitError("x"), SparkStoppedError("x"),
                                   NotSupportedError("x"), ReportError("x"), RsparkError("x"))] == [1] * 6


# ------------------------------------------------------------------------------------------------ on Spark


def test_csv_and_tsv_of_several_queries_is_one_table(queries, capsys, spark):
    """Two SELECT queries of different variables: one header `query,time,` + the union of their variables in order
    of first appearance; the cells of a variable a query does not select are empty."""
    from rspark.cli import main

    high = queries / "high.rq"
    assert main(["replay", str(QUERY), str(high), *SAMPLE_ARGS[1:], "--format", "csv",
                 "--until", "2026-03-01T13:10:00Z"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.split("\r\n")
    assert lines[0] == "query,time,sensor,avg,v" and lines[-1] == ""
    rows = [line.split(",") for line in lines[1:-1]]
    assert all(len(row) == 5 for row in rows)
    assert [r for r in rows if r[0] == "high.rq"] == [["high.rq", "2026-03-01T13:05:00Z", "http://example.org/s3", "",
                                                       "35"]]
    assert ["http://example.org/out", "2026-03-01T13:02:00Z", "http://example.org/s3", "31.8", ""] in rows
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)  # in time order

    assert main(["-v", "replay", str(QUERY), str(high), *SAMPLE_ARGS[1:], "--format", "tsv",
                 "--times", "2026-03-01T13:05:00Z"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "?query\t?time\t?sensor\t?avg\t?v"
    assert all(len(line.split("\t")) == 5 for line in out.splitlines())
    assert ('"high.rq"\t"2026-03-01T13:05:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>\t<http://example.org/s3>'
            '\t\t"35"^^<http://www.w3.org/2001/XMLSchema#integer>') in out.splitlines()
    assert "rspark: info: replaying " in err and "rspark: info: 2 records" in err

    # sparql: a CONSTRUCT written to a pipe defaults to N-Triples
    assert main(["sparql", str(queries / "static_construct.rq"), "--data", str(SENSORS)]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == [
        f"<http://example.org/s{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Thing> ."
        for i in range(1, 5)]


def _session_members(sid: int) -> list[str]:
    """The command lines of the processes of session ``sid`` (started with start_new_session: the child's pid)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[3]) == sid:  # state ppid pgrp session ...
                out.append(Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:100])
        except (OSError, ValueError):
            pass
    return out


@pytest.mark.slow
@pytest.mark.spark
def test_ctrl_c_prints_one_line_and_leaves_no_jvm(queries):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while the replay's Spark job runs: exit
    130, `rspark: interrupted`, no traceback, and no process of the run left (the JVM included)."""
    slow = queries / "slow.rq"  # every instant of a 1 s slide joins three copies of a 10-minute window: minutes
    slow.write_text(P + "SELECT (COUNT(*) AS ?n) FROM NAMED WINDOW :w ON :obs [RANGE PT10M SLIDE PT1S] "
                        "WHERE { WINDOW :w { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } }")
    proc = subprocess.Popen([sys.executable, "-m", "rspark", "-v", "replay", str(slow), "--stream",
                             f"{OBS}={STREAM}", "--format", "jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, start_new_session=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 300
        while not any("rspark: info: replaying" in line for line in err):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(err)
            time.sleep(0.1)
        time.sleep(3)  # in the Spark job (the plan is built in well under that, the job takes minutes)
        assert proc.poll() is None, "".join(err)
        before = len(err)
        os.killpg(proc.pid, signal.SIGINT)
        out = proc.stdout.read()
        code = proc.wait(timeout=120)
        reader.join(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    after = err[before:]
    assert code == 130, "".join(err)
    assert out == ""
    assert "rspark: interrupted\n" in after and len(after) <= 3, "".join(after)
    assert "Traceback" not in "".join(err), "".join(err)
    deadline = time.monotonic() + 30  # the JVM ends when its standard input (a pipe from Python) closes
    while _session_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _session_members(proc.pid) == []


def test_a_replay_of_small_files_is_a_short_run_for_the_jvm(tmp_path):
    """rspark replay / sparql over small input files ask for the JVM's quick compiler (spark.rspark.jit=quick);
    large files, a cluster, or the user's own setting or Java options keep the default."""
    from rspark import cli
    from rspark.spark.session import JIT_CONF, QUICK_INPUT_BYTES

    small, big, packed = tmp_path / "s.nq", tmp_path / "b.nq", tmp_path / "p.nq.gz"
    small.write_text("<a> <b> <c> .\n")
    with big.open("wb") as f:
        f.truncate(QUICK_INPUT_BYTES + 1)
    with packed.open("wb") as f:
        f.truncate(QUICK_INPUT_BYTES // 8 + 1)  # counted 8 times its size
    assert cli._short_run({}, None, [str(small)]) == {JIT_CONF: "quick"}
    assert cli._short_run({"k": "v"}, "local[2]", [str(small), str(small)]) == {"k": "v", JIT_CONF: "quick"}
    assert cli._short_run({}, None, [str(small), str(big)]) == {}
    assert cli._short_run({}, None, [str(packed)]) == {}
    assert cli._short_run({}, "spark://h:7077", [str(small)]) == {}
    assert cli._short_run({JIT_CONF: "full"}, None, [str(small)]) == {JIT_CONF: "full"}
    assert cli._short_run({"spark.driver.extraJavaOptions": "-Dx"}, None, [str(small)]) == \
        {"spark.driver.extraJavaOptions": "-Dx"}
    assert cli._short_run({}, None, ["hdfs://h/x.nq"]) == {}


def test_a_jvm_not_awaited_is_told_to_end_and_left_to_it(monkeypatch):
    """gateway.shutdown(wait=False): the JVM's standard input is closed (the JVM then ends by itself, stopping its
    SparkContext) and the call returns at once; with wait=True it waits for the JVM's exit code."""
    from rspark.spark import gateway

    class Stdin:
        closed = False

        def close(self):
            self.closed = True

    class Proc:
        pid = 4242
        waited = False

        def __init__(self):
            self.stdin = Stdin()

        def poll(self):
            return None

        def wait(self, timeout=None):
            self.waited = True
            return 0

    proc = Proc()
    monkeypatch.setattr(gateway, "_launched", [proc])
    assert gateway.shutdown(wait=False) is None
    assert proc.stdin.closed and not proc.waited and gateway._launched == []
    proc = Proc()
    monkeypatch.setattr(gateway, "_launched", [proc])
    assert gateway.shutdown() == 0
    assert proc.stdin.closed and proc.waited
