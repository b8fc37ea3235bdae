"""rspark's SparkSession (rspark.spark.session): the settings its answers depend on hold on a session the user
brings, the user's log level is kept, machine-specific tunables come from the machine (local mode only), and the
Python of Spark's workers is the driver's interpreter unless the user chose one (issue 23)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from rspark.engine.engine import Engine
from rspark.model.terms import XSD, Literal
from rspark.spark import session as S

REPO = Path(__file__).resolve().parents[1]
ANSI = "spark.sql.ansi.enabled"
ZONE = "spark.sql.session.timeZone"
CASE = "spark.sql.caseSensitive"
NOW = """PREFIX : <http://example.org/>
REGISTER RSTREAM :out AS SELECT (NOW() AS ?now)
FROM NAMED WINDOW :w ON :obs [RANGE PT10M SLIDE PT1M]
WHERE { WINDOW :w { ?o :value ?v } } LIMIT 1"""
CASTS = ('PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> '
         'SELECT ?v ?x WHERE { VALUES ?v { "abc" "12" } BIND(xsd:integer(?v) AS ?x) }')


def _log_level(spark) -> str:
    return str(spark.sparkContext._jvm.org.apache.logging.log4j.LogManager.getRootLogger().getLevel())


@pytest.fixture
def user_conf(spark):
    """Lets a test change the session's ANSI mode and time zone as a user would; restores them afterwards."""
    before = {key: spark.conf.get(key) for key in (ANSI, ZONE, CASE)}
    yield spark
    for key, value in before.items():
        spark.conf.set(key, value)


def test_a_session_in_ansi_mode_and_another_time_zone_gives_rspark_s_answers(user_conf, caplog):
    """The session a user brings, in ANSI mode and New York time: the Engine sets rspark's settings on it (logged):
    a bad cast is an unbound value, and NOW() in a replay is the evaluation instant in UTC (08:00Z for 13:00Z in
    the session's time zone otherwise)."""
    spark = user_conf
    spark.conf.set(ANSI, "true")
    spark.conf.set(ZONE, "America/New_York")
    with caplog.at_level(logging.INFO, logger="rspark"):
        engine = Engine(spark=spark)
    with engine:
        assert spark.conf.get(ANSI) == "false" and spark.conf.get(ZONE) == "UTC"
        changed = " ".join(r.getMessage() for r in caplog.records if r.name == "rspark")
        assert f"{ANSI}=false" in changed and f"{ZONE}=UTC" in changed
        rows = sorted((dict(row) for row in engine.sparql(CASTS)), key=lambda r: r["v"].lexical)
        assert rows == [{"v": Literal("12"), "x": Literal("12", XSD + "integer")}, {"v": Literal("abc")}]
        engine.add_stream("http://example.org/obs", REPO / "rspark/samples/observations.trig")
        [record] = engine.replay(NOW, times=["2026-03-01T13:00:00Z"])
        assert [row["now"] for row in record.rows] == [Literal("2026-03-01T13:00:00Z", XSD + "dateTime")]


def test_variables_differing_only_in_case_are_two_variables(user_conf):
    """SPARQL variables are case-sensitive: ?x and ?X are two columns, also on a session the user set to Spark's
    default of resolving column names ignoring case."""
    user_conf.conf.set(CASE, "false")
    with Engine(spark=user_conf) as engine:
        rows = [dict(row) for row in engine.sparql("SELECT ?x ?X WHERE { VALUES (?x ?X) { (1 2) } }")]
    assert rows == [{"x": Literal("1", XSD + "integer"), "X": Literal("2", XSD + "integer")}]


def test_a_session_with_rspark_s_answer_settings_is_left_alone(user_conf, caplog):
    with caplog.at_level(logging.INFO, logger="rspark"):
        Engine(spark=user_conf)
    assert not [r for r in caplog.records if r.name == "rspark"]


def test_conf_cannot_turn_ansi_mode_on(spark, caplog):
    with caplog.at_level(logging.WARNING, logger="rspark"):
        same = S.get_session(conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                                   ANSI: "true"})
    assert same is spark and spark.conf.get(ANSI) == "false"
    assert any(f"{ANSI}=true ignored" in r.getMessage() for r in caplog.records)


def test_the_user_s_log_level_is_kept(spark):
    """rspark sets the log level (ERROR) only on a SparkContext it starts: not on a session it is given, nor on an
    active one it reuses."""
    before = _log_level(spark)
    spark.sparkContext.setLogLevel("WARN")
    try:
        Engine(spark=spark)
        assert S.get_session() is spark
        S.get_session(conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
        assert _log_level(spark) == "WARN"
    finally:
        spark.sparkContext.setLogLevel(before)


def test_local_tunables_come_from_the_local_cores(monkeypatch):
    monkeypatch.setattr(S, "_machine_cores", lambda: 6)
    assert S.local_cores(None) == S.local_cores("local[*]") == S.local_cores("local[*, 3]") == 6
    assert S.local_cores("local") == 1 and S.local_cores("local[3]") == 3 and S.local_cores("local[5,2]") == 5
    assert S.local_cores("local-cluster[2, 3, 1024]") == 6
    for master, partitions in ((None, "12"), ("local[*]", "12"), ("local[3]", "6"), ("local", "4"),
                               ("local[1]", "4")):
        conf = S.default_conf(master)
        assert conf["spark.sql.shuffle.partitions"] == conf["spark.default.parallelism"] == partitions
        assert S.GC_OPTIONS in conf["spark.driver.extraJavaOptions"]
        assert S.JIT_OPTIONS in conf["spark.driver.extraJavaOptions"]
        assert conf["spark.sql.adaptive.enabled"] == "false"
        assert conf[ANSI] == "false" and conf[ZONE] == "UTC"
        assert (conf["spark.ui.retainedJobs"], conf["spark.ui.retainedStages"], conf["spark.ui.retainedTasks"],
                conf["spark.sql.ui.retainedExecutions"]) == ("100", "100", "10000", "100")
        assert conf["spark.sql.codegen.cache.maxEntries"] == "1000"
        assert conf["spark.sql.optimizer.excludedRules"] == \
            "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"
        assert conf["spark.sql.constraintPropagation.enabled"] == "false"


def test_the_same_plans_again_compile_no_generated_code_again(spark):
    """The README sample loaded and replayed twice, as another stream each time (as a live micro-batch's load and
    evaluation repeat the same plans): the second time Spark compiles none of its generated classes again. With
    Spark's cache of 100 classes, the about 150 of one round evict each other and every round compiles them all."""
    assert spark.conf.get("spark.sql.codegen.cache.maxEntries") == "1000"
    samples = REPO / "rspark" / "samples"
    query = (samples / "sensor_average.rq").read_text(encoding="utf-8")
    compiled = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    counts = []
    with Engine(spark=spark) as eng:
        eng.load(samples / "sensors.ttl", graph="http://example.org/sensors")
        for name in ("first", "second"):
            before = compiled.getCount()
            eng.add_stream(f"http://example.org/{name}", samples / "observations.trig")
            records = list(eng.replay(query.replace(":obs [", f":{name} ["), until="end"))
            counts.append(compiled.getCount() - before)
            assert len(records) == 16 and records[-1].time == "2026-03-01T13:15:00Z"  # the README's --until end
    assert counts[1] == 0, counts


def test_a_local_shuffle_hashes_no_row(spark):
    """A local master does not retry tasks: its shuffles compute no order-independent checksum of their rows (Spark
    does when either of its two settings is on)."""
    plan = spark.range(100).repartition(4, "id")._jdf.queryExecution().executedPlan()
    shuffle = plan if plan.nodeName() == "Exchange" else plan.children().apply(0)
    assert shuffle.nodeName() == "Exchange", plan.toString()
    assert len(shuffle.shuffleDependency().rowBasedChecksums()) == 0


def test_nothing_machine_specific_is_forced_on_a_cluster():
    conf = S.default_conf("spark://head:7077")
    assert conf[ANSI] == "false" and conf[ZONE] == "UTC"
    for key in ("spark.sql.shuffle.partitions", "spark.default.parallelism", "spark.sql.adaptive.enabled",
                "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions", "spark.ui.enabled",
                "spark.ui.retainedJobs", "spark.sql.ui.retainedExecutions",
                "spark.sql.inMemoryColumnarStorage.compressed"):
        assert key not in conf, key
    assert not S.is_local("yarn") and not S.is_local("k8s://https://h:443") and S.is_local("local[2]")


def test_the_workers_python_is_the_driver_s_interpreter_in_local_mode(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    settings = S.default_conf(None)
    env = S._choose_python(settings, local=True)
    assert settings["spark.pyspark.python"] == settings["spark.pyspark.driver.python"] == sys.executable
    assert env == {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def test_the_user_s_python_wins_conf_over_environment(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/env/python")
    settings = {}
    assert S._choose_python(settings, local=True)["PYSPARK_PYTHON"] == "/opt/env/python"
    assert settings["spark.pyspark.python"] == "/opt/env/python"
    settings = {"spark.pyspark.python": "/opt/conf/python"}
    assert S._choose_python(settings, local=True)["PYSPARK_PYTHON"] == "/opt/conf/python"
    assert settings["spark.pyspark.python"] == "/opt/conf/python"


def test_a_cluster_s_executors_keep_their_python_and_the_choice_is_logged(monkeypatch, caplog):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    settings = {}
    with caplog.at_level(logging.INFO, logger="rspark"):
        env = S._choose_python(settings, local=False)
    assert "PYSPARK_PYTHON" not in env and "spark.pyspark.python" not in settings
    assert any("Spark's default, python3" in r.getMessage() for r in caplog.records)
    caplog.clear()
    settings = {"spark.pyspark.python": "/opt/py/bin/python3"}
    with caplog.at_level(logging.INFO, logger="rspark"):
        env = S._choose_python(settings, local=False)
    assert env["PYSPARK_PYTHON"] == "/opt/py/bin/python3"
    assert any("/opt/py/bin/python3 (spark.pyspark.python)" in r.getMessage() for r in caplog.records)


class _Launched(Exception):
    """Raised by the stand-in for the JVM's launch: the settings it was given are the test's answer."""


def _launch_settings(monkeypatch, conf: dict) -> dict:
    """The settings get_session(conf=conf) starts its JVM with (no JVM is started)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    captured: dict = {}

    def launch(settings):
        captured.update(settings)
        raise _Launched

    monkeypatch.setattr(S, "launch", launch)
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    monkeypatch.setenv("RSPARK_CDS", "0")
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    with pytest.raises(_Launched):
        S.get_session(conf=conf)
    return captured


def test_a_short_run_s_jvm_compiles_with_the_quick_compiler_only(monkeypatch):
    quick = _launch_settings(monkeypatch, {S.JIT_CONF: "quick"})
    assert quick["spark.driver.extraJavaOptions"].split()[-1] == S.QUICK_JIT_OPTIONS == "-XX:TieredStopAtLevel=1"
    assert S.JIT_CONF not in quick  # rspark's own setting, not Spark's
    full = _launch_settings(monkeypatch, {S.JIT_CONF: "full"})
    assert S.QUICK_JIT_OPTIONS not in full["spark.driver.extraJavaOptions"]
    assert S.QUICK_JIT_OPTIONS not in _launch_settings(monkeypatch, {"spark.ui.enabled": "false"})[
        "spark.driver.extraJavaOptions"]
    # the user's Java options replace rspark's whole string: the quick compiler is not added to them
    users = _launch_settings(monkeypatch, {S.JIT_CONF: "quick", "spark.driver.extraJavaOptions": "-Dx=1"})
    assert users["spark.driver.extraJavaOptions"] == "-Dx=1"
    with pytest.raises(S.InputError, match=r"spark\.rspark\.jit=fast: expected full or quick"):
        S.get_session(conf={S.JIT_CONF: "fast"})
