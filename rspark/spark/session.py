"""The SparkSession rspark runs on: local[*] by default, a cluster when a master URL is given."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import SparkSession

from rspark.spark.jvm import jar_path

# The JVM's inlining limits (see DEFAULT_CONF): HotSpot's defaults are 2500, 35 and 325 (JDK 17, x86-64);
# unknown options are ignored on other JVMs
JIT_OPTIONS = ("-XX:+IgnoreUnrecognizedVMOptions -XX:InlineSmallCode=1000 -XX:MaxInlineSize=20 "
               "-XX:FreqInlineSize=200")

# The driver's garbage collector (see DEFAULT_CONF): the throughput collector, which ends a task that outgrows the
# heap with an OutOfMemoryError once 5 full collections in a row spend over 90% of the time and leave under 10% of
# the heap free (HotSpot's GC overhead limit, 98% and 2% by default, under which such a task collects for minutes)
GC_OPTIONS = "-XX:+UseParallelGC -XX:GCTimeLimit=90 -XX:GCHeapFreeLimit=10"

# Small data and 2-core machines: few shuffle partitions; adaptive execution coalesces further.
DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    # Adaptive execution re-plans every shuffle stage at run time; on rspark's many small stages (a replay has one
    # per window and operator) that costs far more than it saves: a CQELS replay of CSRBench q6 ran 123 jobs with
    # it and 18 without (docs/csrbench.md). Users with large skewed joins can turn it back on through conf=.
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    # Less inlining by the JVM's optimising (C2) compiler: it compiles Spark's generated code, Janino and the
    # task machinery in the first minute of a session, on the cores the tasks need (a 1e7-triple stream load ran
    # with 32-41 s of compiler-thread time on 2 cores). With these limits the compiles are smaller and the code
    # about as fast: loading the two streams of benchmarks/replay_throughput.py at 1e7 and the first windowed
    # filter, 70.6 s and 70.8 s against 88.8 s and 97.5 s with the defaults (docs/evaluation.md "The JVM").
    # The driver's JVM runs the tasks in local mode: the throughput collector (GC_OPTIONS) rather than G1, whose
    # write barriers and concurrent work take a share of 2 cores. Loading the two 1e7-triple streams of
    # benchmarks/replay_throughput.py and the windowed filter: 35.7 s and 36.5 s against 39.7 s and 39.6 s with G1
    # (docs/evaluation.md "The JVM"). Executors on a cluster keep the JVM's default (G1, for large heaps).
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC " + GC_OPTIONS + " " + JIT_OPTIONS,
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC " + JIT_OPTIONS,
    # Spark 4 defaults to ANSI mode, where a bad cast raises; SPARQL maps such errors to unbound values.
    "spark.sql.ansi.enabled": "false",
    # PySpark 4 records the Python call site of every DataFrame and Column call for its error messages, at four
    # extra JVM round trips a call; a SPARQL query is compiled from dozens of such calls, and the errors users see
    # are rspark's own. Off, compiling the 3-pattern star join of benchmarks/sparql_scaling.py costs half as long.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # rspark caches every loaded file and stream; Spark's column encodings of those caches (dictionary, run length)
    # cost about a third of a stream's parse job and save about a third of the cache's memory: a
    # 5,000,000-line stream's parse job takes 5.1-5.5 s without them, 8.1-8.2 s with (docs/evaluation.md "Loading").
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
}


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _ship_package(spark: SparkSession) -> None:
    """Executors parse RDF with rspark code (mapInArrow): on a cluster, send them the package as a zip."""
    import tempfile
    import zipfile

    root = Path(_package_root())
    target = Path(tempfile.mkdtemp(prefix="rspark-")) / "rspark.zip"
    with zipfile.ZipFile(target, "w") as zf:
        for path in (root / "rspark").rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(root))
    spark.sparkContext.addPyFile(str(target))


def get_session(master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """Create or reuse the SparkSession (``master`` defaults to ``local[*]``)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # local Python workers inherit this environment: let them import rspark also from a source checkout
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _package_root() not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([_package_root(), *paths])
    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    builder = SparkSession.builder.appName("rspark").master(master or "local[*]")
    settings = {**DEFAULT_CONF, **(conf or {})}
    jar = jar_path()  # rspark's JVM helpers (the fast line parser); None without a JDK: the Python path
    if jar is not None:
        settings["spark.jars"] = ",".join(p for p in (settings.get("spark.jars"), jar) if p)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if master and not master.startswith("local"):
        _ship_package(spark)
    return spark
