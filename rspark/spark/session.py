"""The SparkSession rspark runs on: local[*] by default, a cluster when a master URL is given.

Settings of every session rspark uses, its own or one it is given (``ANSWER_CONF``: the SQL rspark generates
assumes them, so they are not tunables):

- ``spark.sql.ansi.enabled=false``: Spark 4 defaults to ANSI mode, where a failed cast or an overflow raises;
  rspark's expressions are written for Spark's other semantics, where it is NULL, which SPARQL needs as an unbound
  value (``xsd:integer("abc")``).
- ``spark.sql.session.timeZone=UTC``: the zone Spark's date and time functions work in; rspark's time values are
  UTC instants (xsd:dateTime without a timezone is taken as UTC, replay instants and NOW() are written in UTC:
  in another zone NOW() in a replay would be off by the zone's offset).
- ``spark.sql.caseSensitive=true``: SPARQL variables are case-sensitive (``?x`` and ``?X`` are two variables, two
  columns); Spark's default resolves column names ignoring case and finds them ambiguous.

A session rspark creates starts with them; on a session it is given (``Engine(spark=...)``) or an active one it
reuses, :func:`use_session` sets those that differ (``spark.conf.set``, for the whole session, logged at INFO on
the ``rspark`` logger) and leaves everything else, the log level included, as the user has it. A ``conf=`` value
for one of them is overridden, with a warning.

The JVM a session rspark creates runs in (unless PySpark has one already, as under spark-submit) writes nothing to
the terminal: its standard output and error, Spark's log among them, go to the ``rspark.spark.gateway`` logger at
DEBUG (:mod:`rspark.spark.gateway`).

Tunables (every one can be overridden with ``Engine(conf={KEY: VALUE})`` or ``rspark ... --conf KEY=VALUE``, and
by the settings of ``spark-submit``: in a process spark-submit started, the submitted master is the default master
and the submitted settings win over rspark's, ``conf=`` over both):

Every session rspark creates:

- ``spark.ui.showConsoleProgress=false``: no progress bars on the terminal, between rspark's output lines.
- ``spark.sql.execution.arrow.pyspark.enabled=true``: Arrow for the transfers between the driver's Python and Spark.
- ``spark.python.sql.dataFrameDebugging.enabled=false``: PySpark 4 records the Python call site of every DataFrame
  and Column call, for its error messages, at four extra JVM round trips a call; a SPARQL query is compiled from
  dozens of such calls and the errors users see are rspark's own, so rspark's sessions do not record them.
- ``spark.sql.codegen.cache.maxEntries=1000`` (Spark's default: 100): the compiled classes of Spark's generated
  code, kept for plans that generate the same code again. One replay of the README's sample compiles about 150;
  with a cache of 100 the least recently used are evicted before they are asked for again, so a live micro-batch
  (the same plans each batch) or a second replay recompiles them all (Janino: a second or more a batch on 2 cores).
  A compiled class takes some tens of KB of the JVM's metaspace.
- ``spark.sql.optimizer.excludedRules=...ConvertToLocalRelation``: Spark's optimizer evaluates a projection or a
  filter over a local relation (a live buffer's batches, the instants of an evaluation, small static data) on the
  driver while it plans, compiling each projection apart; rspark's plans hold dozens of them, and in a live
  micro-batch that costs more than running them in the plan's tasks, where they are compiled once with the stage
  (docs/evaluation.md, The optimizer). A value given for this setting replaces rspark's.
- ``spark.sql.constraintPropagation.enabled=false``: the optimizer infers the constraints every operator's rows
  satisfy to add or drop filters; over the wide plans a continuous query compiles to (a join and an R2S
  comparison per instant-keyed operator) that inference costs more planning time than the filters it finds save
  (docs/evaluation.md, The optimizer).
- ``spark.pyspark.python`` / ``spark.pyspark.driver.python``: the Python of Spark's Python workers (rspark parses
  RDF in them) and of the driver's Python tasks. In local mode both are the interpreter running rspark
  (``sys.executable``) unless ``spark.pyspark.python`` (conf) or ``PYSPARK_PYTHON`` (environment) names another:
  Spark's own default, ``python3`` from the ``PATH``, is often an interpreter without rspark's dependencies (rspark
  run from a virtualenv that is not activated: pipx, cron, an IDE, systemd). On a cluster the executors' Python
  is not forced (their machines may differ): ``spark.pyspark.python``, else ``PYSPARK_PYTHON``, else Spark's
  ``python3``; the choice is logged at INFO. The exception is a standalone master on the loopback interface
  (``spark://127.0.0.1:7077``, ``spark://localhost:7077``, :func:`loopback_master`): only workers on this machine
  can register with it, so its executors run ``sys.executable`` too, as in local mode (scripts/cluster.py starts
  such a cluster). As Spark documents, the conf wins over the environment variable (PySpark itself reads only the
  variable when its SparkContext starts: rspark sets the variable from the conf while it creates the session).
  On a cluster rspark checks the executors' Python once, when it starts the SparkContext: one task imports rspark
  (shipped as a zip, ``addPyFile``) and its dependencies there, and a failure (no such interpreter, another Python
  version, a missing package) is an :class:`~rspark.errors.RsparkError` naming the interpreter and the cause, rather
  than a Python traceback out of the first query (docs/cluster.md).

Every session rspark creates with its jar (local or not) caches tables as batches of Spark's binary rows
(``spark.sql.cache.serializer=rspark.jvm.RowBatchSerializer``, :func:`rspark.spark.jvm.cache_serializer`): Spark's
columns cost a stream's load more than reading its file (docs/evaluation.md, Loading). A static setting of the JVM:
``--conf spark.sql.cache.serializer=org.apache.spark.sql.execution.columnar.DefaultCachedBatchSerializer`` brings
Spark's columns back.

With ``spark.rspark.kafka=true`` (``rspark run`` sets it for a ``kafka://`` source or output), Spark's Kafka
connector and the jars it needs are put on ``spark.jars`` (or ``spark.jars.packages``): :mod:`rspark.spark.kafka`.

Local mode only (master ``local``, ``local[N]``, ``local[*]``, ``local-cluster[...]``; on a cluster, Spark's and the
cluster's defaults apply):

- ``spark.sql.shuffle.partitions`` and ``spark.default.parallelism``: twice the local cores (N of ``local[N]``, the
  machine's available cores for ``local[*]``), at least 4. rspark's data per query and window is mostly small:
  a few partitions a core keep every core busy without Spark's 200 tiny tasks a shuffle.
- ``spark.sql.adaptive.enabled=false``: adaptive execution re-plans every shuffle stage at run time; a replay runs
  one small stage per window and operator, where that costs more than it saves (docs/csrbench.md, Runtime).
  Queries over large skewed joins may want it back: ``--conf spark.sql.adaptive.enabled=true``.
- ``spark.ui.enabled=false``: no web UI (nor its port) for a local run.
- ``spark.ui.retainedJobs=100``, ``spark.ui.retainedStages=100``, ``spark.ui.retainedTasks=10000`` and
  ``spark.sql.ui.retainedExecutions=100`` (Spark's defaults: 1000, 1000, 100000, 1000): Spark keeps the status of
  its finished jobs, stages, tasks and SQL executions (with their plans) on the driver's heap, web UI or not, up to
  these counts. Live mode and ``rspark serve`` run a dozen jobs a micro-batch for hours: with Spark's counts that
  store grows with every job until a thousand jobs and executions are kept; with these it is full, and flat, within
  minutes. Raise them with ``--conf`` to see more history in a web UI you enable.
- ``spark.sql.inMemoryColumnarStorage.compressed=false``: rspark caches every loaded file and stream; Spark's
  column encodings of those caches (dictionary, run length) save memory but make a stream's parse job markedly
  slower (docs/evaluation.md, Loading). ``true`` for data near the memory limit (with Spark's own cache serializer,
  above).
- ``spark.sql.shuffle.orderIndependentChecksum.enabled=false`` and
  ``spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch=false``: with either on, Spark hashes every
  row a shuffle writes (XXH64) to tell whether a retried task wrote other rows than its first attempt; a local
  master does not retry tasks, and the hashing is 14% of the task time of a replay's windowed aggregate.
- The garbage-collection watchdog (:mod:`rspark.spark.gc_watch`): on a SparkContext rspark starts, running jobs are
  cancelled when the driver's JVM spends most of half a minute collecting garbage (a task whose data nearly fits
  the heap), and the run ends with the memory limit instead of going on for minutes without progress.
- ``spark.driver.extraJavaOptions`` (the driver's JVM runs the tasks in local mode) and
  ``spark.executor.extraJavaOptions`` (executors of ``local-cluster``): ``-Duser.timezone=UTC``, the JIT options
  (:data:`JIT_OPTIONS`) and, for the driver, the garbage collector (:data:`GC_OPTIONS`) and the class-data-sharing
  archive of Spark's classes (:mod:`rspark.spark.cds`, in a JVM this process starts: ``RSPARK_CDS=0`` leaves it
  out); docs/evaluation.md, The JVM. A value given for one of these replaces rspark's whole option string.
- ``spark.rspark.jit=quick`` (rspark's own setting; ``full`` by default): the driver's JVM compiles with its quick
  compiler only (``-XX:TieredStopAtLevel=1``, :data:`QUICK_JIT_OPTIONS`), not with the optimising one. A run that
  ends within seconds spends much of its CPU on the optimising compiler's work for code that then hardly runs:
  ``rspark replay`` and ``rspark sparql`` set it when their input files are small
  (:data:`QUICK_INPUT_BYTES`), where it halves the CPU time of a run; a long run (a large replay, live mode, the
  service) is faster with both compilers. Applied with rspark's Java options (not when the user's replace them).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import ipaddress
import logging
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from rspark.errors import InputError, RsparkError
from rspark.spark import cds, gc_watch
from rspark.spark.gateway import launch, writes_archive
from rspark.spark.jvm import CACHE_SERIALIZER_CONF, cache_serializer, jar_path
from rspark.spark.kafka import KAFKA_CONF, kafka_settings
from rspark.spark.lookups import keep_lookups

__all__ = [
    "ANSWER_CONF",
    "DEFAULT_CONF",
    "GC_OPTIONS",
    "JIT_CONF",
    "JIT_OPTIONS",
    "QUICK_INPUT_BYTES",
    "QUICK_JIT_OPTIONS",
    "default_conf",
    "get_session",
    "is_local",
    "local_cores",
    "loopback_master",
    "use_session",
]

log = logging.getLogger("rspark")

# Less inlining by the JVM's optimising (C2) compiler (HotSpot's defaults: 2500, 35 and 325). In the first minute of
# a session it compiles Spark's generated code, Janino and the task machinery on the cores the tasks need; with
# these limits its compiles are smaller and the compiled code about as fast. Unknown options are ignored on other
# JVMs.
JIT_OPTIONS = ("-XX:+IgnoreUnrecognizedVMOptions -XX:InlineSmallCode=1000 -XX:MaxInlineSize=20 "
               "-XX:FreqInlineSize=200")

# The driver's JIT compilers for a short run (``spark.rspark.jit=quick``, module docstring): the quick (C1) compiler
# only. Measured (benchmarks/startup.py, replay_throughput.py): the README's sample replay and a replay of 1e5 triples
# take about half the CPU time; at 1e6 triples (90 MB) both settings take the same, beyond it C2's code pays.
QUICK_JIT_OPTIONS = "-XX:TieredStopAtLevel=1"
JIT_CONF = "spark.rspark.jit"  # full (default) | quick

# Input files up to this size (summed; a gzipped file counted 8 times its size) make ``rspark replay`` and
# ``rspark sparql`` run with ``spark.rspark.jit=quick`` unless the user set it or the driver's Java options.
QUICK_INPUT_BYTES = 32 << 20

# The driver's garbage collector in local mode, where the driver's JVM runs the tasks: the throughput collector
# rather than G1, whose write barriers and concurrent work take a share of the few cores the tasks have. A task
# that outgrows the heap ends with an OutOfMemoryError once 5 full collections in a row spend over 90% of the time
# and leave under 10% of the heap free (HotSpot's GC overhead limit, 98% and 2% by default, under which such a task
# collects for minutes).
GC_OPTIONS = "-XX:+UseParallelGC -XX:GCTimeLimit=90 -XX:GCHeapFreeLimit=10"

# Settings rspark's answers depend on (module docstring): on every session it uses, whoever created it.
ANSWER_CONF = {
    "spark.sql.ansi.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.caseSensitive": "true",
}

# Tunables of every session rspark creates (module docstring)
_SESSION_CONF = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    "spark.sql.codegen.cache.maxEntries": "1000",
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation",
    "spark.sql.constraintPropagation.enabled": "false",
}

# Tunables of a local session (module docstring); partitions and parallelism come from local_cores
_LOCAL_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.ui.retainedTasks": "10000",
    "spark.sql.ui.retainedExecutions": "100",
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    "spark.sql.shuffle.orderIndependentChecksum.enabled": "false",
    "spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch": "false",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC " + GC_OPTIONS + " " + JIT_OPTIONS,
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC " + JIT_OPTIONS,
}


def is_local(master: str | None) -> bool:
    """Whether ``master`` runs Spark on this machine (None: rspark's default, ``local[*]``)."""
    return master is None or master.strip().startswith("local")


def loopback_master(master: str | None) -> bool:
    """Whether ``master`` is a standalone master on this machine's loopback interface (``spark://127.0.0.1:7077``,
    ``spark://localhost:7077``, ``spark://[::1]:7077``; every host of a multi-master URL). Its workers register
    at that address, which only this machine reaches: its executors run here."""
    text = (master or "").strip()
    if not text.startswith("spark://"):
        return False
    for address in text[len("spark://"):].split(","):
        host = address.rsplit(":", 1)[0] if address.count(":") == 1 or address.startswith("[") else address
        host = host.strip("[]").lower()
        if host == "localhost":
            continue
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return False
        except ValueError:  # another host name: it may resolve anywhere
            return False
    return True


def _machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may run on (a container's share)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def local_cores(master: str | None) -> int:
    """The task slots of a local master: N of ``local[N]`` / ``local[N, F]``, workers x cores of
    ``local-cluster[W, C, M]``, 1 for ``local``, the machine's available cores for ``local[*]`` (and None)."""
    if master is None:
        return _machine_cores()
    text = master.strip()
    cluster = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,.*\]", text)
    if cluster:
        return max(1, int(cluster.group(1)) * int(cluster.group(2)))
    threads = re.fullmatch(r"local\[\s*(\d+|\*)\s*(,.*)?\]", text)
    if threads:
        return _machine_cores() if threads.group(1) == "*" else max(1, int(threads.group(1)))
    return 1 if text == "local" else _machine_cores()


def default_conf(master: str | None = None) -> dict[str, str]:
    """The settings rspark gives a session it creates for ``master`` (module docstring), before ``conf=``."""
    settings = {**_SESSION_CONF, **ANSWER_CONF}
    if is_local(master):
        partitions = str(max(4, 2 * local_cores(master)))
        settings.update({"spark.sql.shuffle.partitions": partitions, "spark.default.parallelism": partitions,
                         **_LOCAL_CONF})
    return settings


# rspark's settings for a local[*] session on this machine (default_conf(None))
DEFAULT_CONF = default_conf(None)


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _ship_package(spark: SparkSession) -> None:
    """Executors parse RDF with rspark code (mapInArrow): on a cluster, send them the package as a zip."""
    root = Path(_package_root())
    staging = tempfile.mkdtemp(prefix="rspark-")
    # the driver serves the zip from this path to every executor that starts (addPyFile does not copy it): removed
    # when the driver's process ends, not before (each cluster session used to leave a zip of rspark in /tmp)
    atexit.register(shutil.rmtree, staging, True)
    target = Path(staging) / "rspark.zip"
    with zipfile.ZipFile(target, "w") as zf:
        for path in (root / "rspark").rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(root))
    spark.sparkContext.addPyFile(str(target))


def _choose_python(settings: dict[str, str], local: bool, same_machine: bool = False) -> dict[str, str]:
    """Fill in ``spark.pyspark.python`` / ``spark.pyspark.driver.python`` of ``settings`` (module docstring) and
    return the environment variables PySpark and the JVM must see while the SparkContext starts. ``same_machine``:
    a cluster whose executors run on this machine (:func:`loopback_master`)."""
    workers, source = settings.get("spark.pyspark.python"), "spark.pyspark.python"  # the conf wins, as in Spark
    if not workers:
        workers, source = os.environ.get("PYSPARK_PYTHON"), "PYSPARK_PYTHON"
    if not workers and local and sys.executable:
        workers, source = sys.executable, "the driver's interpreter"
    # A loopback standalone master's executors run on this machine: the driver's interpreter is theirs too. Without
    # this they ran Spark's default, the first python3 on the worker's PATH (measured: a worker started without the
    # virtualenv's PATH ran /usr/bin/python3, and every task failed importing lark)
    if not workers and same_machine and sys.executable:
        workers, source = sys.executable, "the driver's interpreter: the loopback master's executors run here"
    if workers:
        settings["spark.pyspark.python"] = workers
    if local:
        log.debug("Spark's Python workers run %s (%s)", workers or "python3", source)
    elif workers:
        log.info("the executors' Python workers run %s (%s)", workers, source)
    else:
        log.info("the executors' Python workers run Spark's default, python3 from each executor's PATH "
                 "(set spark.pyspark.python or PYSPARK_PYTHON to choose another)")
    # the driver is this process: its Python tasks (e.g. Spark's Python data source lookup) run this interpreter
    driver = settings.get("spark.pyspark.driver.python") or os.environ.get("PYSPARK_DRIVER_PYTHON") or sys.executable
    if driver:
        settings["spark.pyspark.driver.python"] = driver
    env = {}
    if workers:
        env["PYSPARK_PYTHON"] = workers
    if driver:
        env["PYSPARK_DRIVER_PYTHON"] = driver
    return env


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in os.environ while the block runs (PySpark's SparkContext reads PYSPARK_PYTHON when it starts,
    and the JVM it launches keeps the environment it started with); the previous values afterwards."""
    previous = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _submitted_conf() -> dict[str, str]:
    """The settings of the JVM spark-submit started for this process (PySpark finds it by PYSPARK_GATEWAY_PORT);
    empty in a process PySpark starts its JVM for (rspark's own sessions: the JVM must not start before
    :func:`get_session` has chosen its options)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}

    SparkContext._ensure_initialized()  # connects to the running JVM
    return dict(SparkConf().getAll())


def use_session(spark: SparkSession) -> SparkSession:
    """Make ``spark`` (a session rspark did not create, or one it reuses) give rspark's answers: set the settings of
    :data:`ANSWER_CONF` that differ, logging each change at INFO; nothing else of the session changes."""
    for key, value in ANSWER_CONF.items():
        current = spark.conf.get(key, None)
        if current is None or current.strip().lower() != value.lower():
            spark.conf.set(key, value)
            log.info("set %s=%s on the SparkSession (was %s): rspark's answers depend on it", key, value,
                     current)
    return spark


# imported by PySpark's first call into a new JVM (its py4j converter for numpy arrays asks pyspark.testing.utils
# whether numpy is there, which imports pandas: a quarter of a second)
_FIRST_CALL_IMPORT = "pyspark.testing.utils"


def _import_meanwhile() -> None:
    """Import in a thread what PySpark's first call into the JVM imports, while this thread waits for the JVM to
    start (:func:`rspark.spark.gateway.launch` polls for about a second): the import is then not on the path from
    the command to its SparkContext."""
    def load() -> None:
        # a failure is not reported here: PySpark's own call imports the module again, and reports it
        with contextlib.suppress(Exception):
            importlib.import_module(_FIRST_CALL_IMPORT)

    threading.Thread(target=load, name="rspark-import", daemon=True).start()


def get_session(master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """Create or reuse the SparkSession (``master`` defaults to ``local[*]``; ``conf`` overrides rspark's settings,
    see the module docstring).

    With no ``master`` and no ``conf``, an active session is reused as it is, but for :data:`ANSWER_CONF`. Static
    settings (the JVM's options, the workers' Python) take effect only when this call starts the SparkContext; the
    log level is set (ERROR, WARN when the ``rspark`` logger shows DEBUG) only on a SparkContext this call starts.
    A JVM this call starts has its output read by rspark (:mod:`rspark.spark.gateway`). py4j's lookups of classes
    and static methods are kept once resolved (:mod:`rspark.spark.lookups`)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    keep_lookups()  # py4j's class and static-method lookups kept once resolved (rspark.spark.lookups)
    # local Python workers inherit this environment: let them import rspark also from a source checkout
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _package_root() not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([_package_root(), *paths])
    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return use_session(active)
    # Under spark-submit (or the pyspark shell) this process's JVM already runs with the submitted settings
    # (--master, --conf, --jars, --py-files): they are the user's, so they are the master and win over rspark's
    # tunables (conf= still wins over them). Without this Engine() under `spark-submit --master spark://...` ran on
    # local[*] (measured), and rspark's settings replaced the submitted ones (spark.jars: the user's --jars).
    submitted = _submitted_conf()
    submitted_master = submitted.pop("spark.master", None)  # a master given here (master=) wins over it
    if master is None and submitted_master:
        master = submitted_master
    local = is_local(master)
    settings = {**default_conf(master), **submitted, **(conf or {})}
    for key, value in ANSWER_CONF.items():
        if settings[key].strip().lower() != value.lower():
            log.warning("%s=%s ignored: rspark's answers need %s", key, settings[key], value)
            settings[key] = value
    if str(settings.get(KAFKA_CONF, "")).strip().lower() == "true":
        settings = kafka_settings(settings)  # Spark's Kafka connector (rspark.spark.kafka)
    jar = jar_path()  # rspark's JVM helpers (the fast line parser); None without a JDK: the Python path
    if jar is not None:
        settings["spark.jars"] = ",".join(p for p in (settings.get("spark.jars"), jar) if p)
    rows_cache = cache_serializer(jar)  # caches as batches of binary rows (rspark.jvm.RowBatchSerializer)
    if rows_cache is not None:
        settings.setdefault(CACHE_SERIALIZER_CONF, rows_cache)
    env = _choose_python(settings, local, same_machine=loopback_master(master))
    created = getattr(SparkContext, "_active_spark_context", None) is None
    user_options = "spark.driver.extraJavaOptions" in {**submitted, **(conf or {})}
    jit = str(settings.pop(JIT_CONF, "full")).strip().lower()
    if jit not in ("full", "quick"):
        raise InputError(f"{JIT_CONF}={jit}: expected full or quick")
    if created and local and not submitted and not user_options:
        sharing = cds.java_options(settings)  # the Spark JVM's classes mapped from an archive (rspark.spark.cds)
        if sharing is not None:
            settings["spark.driver.extraJavaOptions"] += " " + sharing
            if sharing.startswith(cds.DUMP_OPTION):
                files = cds.dump_files(sharing)
                writes_archive(lambda: [f.unlink(missing_ok=True) for f in files])
        if jit == "quick":  # after the archive's key: the JIT's options do not change which classes it holds
            settings["spark.driver.extraJavaOptions"] += " " + QUICK_JIT_OPTIONS
    builder = SparkSession.builder.appName("rspark").master(master or "local[*]")
    for key, value in settings.items():
        builder = builder.config(key, value)
    main = threading.current_thread() is threading.main_thread()
    interrupts = signal.getsignal(signal.SIGINT) if main else None
    with _environment(env if created else {}):
        if created:  # the JVM, its output read by rspark (rspark.spark.gateway), unless PySpark has one already
            _import_meanwhile()
            launch({"spark.master": master or "local[*]", "spark.app.name": "rspark", **settings})
        spark = builder.getOrCreate()
    if main and getattr(interrupts, "_rspark", False) and signal.getsignal(signal.SIGINT) is not interrupts:
        # PySpark's SparkContext puts its own Ctrl-C handler in place of the command line's, which cancels the jobs
        # through the py4j connection the interrupted call is using (py4j's tracebacks on standard error): the
        # command line's handler (rspark.cli) is put back at once
        signal.signal(signal.SIGINT, interrupts)
    if created:
        # Spark's log goes to the rspark logger at DEBUG (rspark.spark.gateway): its warnings too when that shows
        spark.sparkContext.setLogLevel("WARN" if log.isEnabledFor(logging.DEBUG) else "ERROR")
        if local:  # jobs that keep the JVM collecting garbage are cancelled (rspark.spark.gc_watch)
            gc_watch.watch(spark.sparkContext)
        if not local:
            _ship_package(spark)
            try:
                _check_executors(spark)
            except BaseException:
                spark.stop()  # its static settings (the executors' Python) change only with a new SparkContext
                raise
    else:
        log.info("reusing the running SparkContext (master %s): its static settings stay as they are; "
                 "its Python workers run %s", spark.sparkContext.master, spark.sparkContext.pythonExec)
    return use_session(spark)


# what a failed executor check's exception text says about the cause, first match wins
_PYTHON_FAILURES = re.compile(r"Cannot run program[^\n]*|PYTHON_VERSION_MISMATCH[^\n]*(?:\n[^\n]*){0,2}"
                              r"|(?:ModuleNotFound|Import)Error: [^\n]*")


def _check_executors(spark: SparkSession) -> None:
    """Run one task on the cluster that imports rspark and the packages its executor code uses, and raise an
    :class:`RsparkError` naming the executors' interpreter and the cause when that fails: without it a cluster
    whose executors run another Python (missing, another version, without rspark's dependencies) failed in the
    first query with a Python traceback from the executor, reported as a bug in rspark."""
    python = spark.sparkContext.pythonExec

    def probe(_):
        missing = []
        for name in ("pyarrow", "pandas", "lark", "pyoxigraph", "rspark"):  # rspark: the shipped zip
            try:
                importlib.import_module(name)
            except ImportError as exc:
                missing.append(f"{name} ({type(exc).__name__}: {exc})")
        yield sys.executable, "%d.%d.%d" % sys.version_info[:3], missing

    advice = ("set spark.pyspark.python (--conf) or PYSPARK_PYTHON to the executors' interpreter with rspark's "
              "dependencies installed (docs/cluster.md)")
    try:
        executable, version, missing = spark.sparkContext.parallelize([0], 1).mapPartitions(probe).collect()[0]
    except Exception as exc:
        text = str(exc)
        found = _PYTHON_FAILURES.search(text)
        cause = found.group(0) if found else (text.strip().splitlines() or [type(exc).__name__])[0]
        cause = " ".join(cause.split())[:400]
        raise RsparkError(f"the executors cannot run rspark's Python code with {python}: {cause}; {advice}") from None
    if missing:
        raise RsparkError(f"the executors' Python ({executable}, Python {version}) cannot import "
                          f"{'; '.join(missing)}; {advice}")
    log.info("the executors' Python workers run %s (Python %s) and import rspark", executable, version)
