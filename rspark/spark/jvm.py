"""rspark's JVM helpers: Java sources shipped in the package (``rspark/jvm``), compiled once into a jar in the
user's cache directory and put on the Spark session's class path.

Why: parsing N-Triples / N-Quads lines in Python workers costs most of a stream's load (moving every line to a
Python worker and back through Arrow); the Java line scanner (``rspark.jvm.NQuadsLine``, a Spark UDF) reads the
common lines inside the JVM (about twice as fast: docs/evaluation.md, "Loading"), and leaves every other line to the
Python path. ``rspark.jvm.SumAvgResult`` (a Spark UDF) gives SUM's and AVG's final value from their partial sums, in
place of a large SQL expression Spark would analyse, optimise and compile with every query that averages
(docs/evaluation.md, "Group and aggregates"). ``rspark.jvm.QuotedParts`` (a Spark UDF) splits an encoded quoted
triple into its three terms, so that RDF-star patterns decompose quoted triples in place instead of joining a table
of every quoted triple in the data. ``rspark.jvm.ArrowFrames`` makes a DataFrame of Arrow batches the driver holds
(a live buffer's) that scans them from an RDD, where PySpark would make a local relation Catalyst hashes row by row
(:func:`arrow_frame`). ``rspark.jvm.TermFacets`` (a Spark UDF) gives the facets of an encoded term that
SPARQL's operators look into (lexical form, numeric type and value, comparison category) in place of the
lambda-bound SQL struct Spark would analyse with every plan that compares or computes values (docs/evaluation.md,
"Generated code"). ``rspark.jvm.SqlColumns`` reads the SQL texts of compiled expressions into the
expressions Spark's parser would build, without that parser's cold start (:func:`rspark.spark.expr.sql.parsed`;
docs/evaluation.md, "Generated code"). ``rspark.jvm.LongParameter`` gives a long value to a plan as a parameter
rather than a literal, so that a live window's plan, built again at every evaluation with other bounds, runs the
code Spark compiled for the one before (:func:`long_parameter`; docs/live.md). ``rspark.jvm.RowBatchSerializer`` is
the session's cache serializer (``spark.sql.cache.serializer``, :func:`cache_serializer`): every cached stream and
graph is kept as batches of Spark's binary rows instead of Spark's columns, whose building cost a stream's load more
than reading the file (docs/evaluation.md, "Loading").

The jar is built with the ``javac`` of the JDK that runs Spark (found through ``JAVA_HOME`` or the ``PATH``),
against PySpark's own jars, and named after a hash of the sources and the PySpark version, so an upgrade rebuilds
it. Without a JDK (a JRE alone), with ``RSPARK_JVM=0`` in the environment, or in a session created without the jar,
everything works through the Python path and rspark's SQL, only slower; a helper that does not compile against the
installed PySpark (``ArrowFrames`` uses Spark's internal classes) is left out of the jar with a warning, and only its
callers take their Python path.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyspark
from py4j.java_gateway import JavaClass
from pyspark.sql.classic.column import Column
from pyspark.sql.types import DecimalType, DoubleType, IntegerType, StringType, StructField, StructType

from rspark.cache import cache_dir

__all__ = ["jar_path", "line_parser", "lines_source", "sum_avg_result", "quoted_parts", "term_facets",
           "long_parameter", "source_unavailable", "python_fallback", "LINE_PARSER", "SUM_AVG_RESULT", "QUOTED_PARTS",
           "TERM_FACETS", "LINES_SOURCE", "LONG_PARAMETER", "arrow_frame", "ARROW_FRAMES", "cache_serializer",
           "ROW_CACHE", "CACHE_SERIALIZER_CONF"]

log = logging.getLogger("rspark.jvm")

SOURCES = Path(__file__).resolve().parents[1] / "jvm"
LINE_PARSER = "rspark_nquads_line"  # the UDFs' names in a session
SUM_AVG_RESULT = "rspark_sum_avg"
QUOTED_PARTS = "rspark_quoted_parts"
TERM_FACETS = "rspark_term_facets"
LONG_PARAMETER = "rspark.jvm.LongParameter"  # a long value as a plan's parameter (by class name)
ARROW_FRAMES = "rspark.jvm.ArrowFrames"  # Arrow batches from the driver as a DataFrame (by class name)
LINES_SOURCE = "rspark.jvm.NQuadsSource"  # the data source reading N-Triples / N-Quads files (by class name)
ROW_CACHE = "rspark.jvm.RowBatchSerializer"  # the cache serializer of rspark's sessions (by class name)
CACHE_SERIALIZER_CONF = "spark.sql.cache.serializer"
# extensions of the files Hadoop's codecs decompress when Spark reads text: read by the text source, not ours
_CODEC_SUFFIXES = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br", ".xz", ".lzo", ".lzma")
_registered: dict[tuple[int, str], bool] = {}
_build_failure: str | None = None  # why javac failed to compile the jar in this process (None: it did not fail)


def enabled() -> bool:
    return os.environ.get("RSPARK_JVM", "1") != "0"


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def jar_path() -> str | None:
    """The jar of rspark's JVM helpers, compiled on first use; None when it cannot be built (no JDK) or
    ``RSPARK_JVM=0``."""
    if not enabled():
        return None

    sources = sorted(SOURCES.rglob("*.java"))
    digest = hashlib.sha256(pyspark.__version__.encode())
    for src in sources:
        digest.update(src.relative_to(SOURCES).as_posix().encode())
        digest.update(src.read_bytes())
    target = cache_dir() / f"rspark-jvm-{digest.hexdigest()[:16]}.jar"
    if target.is_file():
        return str(target)
    javac = _javac()
    if javac is None or not sources:
        log.info("no JDK (javac not found through JAVA_HOME or the PATH): rspark's JVM helpers are not built, "
                 "N-Triples / N-Quads lines are parsed in Python workers (about 2x slower)")
        return None
    spark_jars = Path(pyspark.__file__).resolve().parent / "jars"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="rspark-javac-") as tmp:
            classes = Path(tmp) / "classes"
            _compile(javac, spark_jars, classes, sources)
            staged = Path(tmp) / "rspark-jvm.jar"
            with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as jar:
                jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
                for cls in sorted(classes.rglob("*.class")):
                    jar.write(cls, cls.relative_to(classes).as_posix())
            shutil.copyfile(staged, str(target) + ".part")
            os.replace(str(target) + ".part", target)  # atomic: concurrent builders agree
    except (OSError, subprocess.SubprocessError) as exc:
        global _build_failure
        _build_failure = _failure_text(javac, exc)
        log.warning("rspark's JVM helpers could not be compiled (%s): N-Triples / N-Quads lines are parsed in Python "
                    "workers (about 2x slower)", _build_failure)
        return None
    return str(target)


def cache_serializer(jar: str | None) -> str | None:
    """The class name of rspark's cache serializer when ``jar`` (:func:`jar_path`) holds it, else None (no jar, or
    the class left out because it did not compile against this PySpark: Spark's own serializer then)."""
    if jar is None:
        return None
    try:
        with zipfile.ZipFile(jar) as archive:
            archive.getinfo(ROW_CACHE.replace(".", "/") + ".class")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    return ROW_CACHE


def _compile(javac: str, spark_jars: Path, classes: Path, sources: list) -> None:
    """Compiles ``sources`` into ``classes``. Some helpers use Spark's internal classes (``ArrowFrames``: its Arrow
    converters and RDD relation), whose signatures may change between PySpark versions: when the sources that
    javac names in its errors are left out, the others are compiled without them (those helpers' callers then take
    their Python path), rather than every helper being lost. Raises when none is left, or the rest still fails."""
    command = [javac, "-nowarn", "--release", "17", "-cp", str(spark_jars / "*"), "-d", str(classes)]
    try:
        subprocess.run([*command, *map(str, sources)], check=True, capture_output=True, timeout=300)
        return
    except subprocess.CalledProcessError as exc:
        text = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else str(exc.stderr or "")
        failed = {src for src in sources if f"{src}:" in text}
        rest = [src for src in sources if src not in failed]
        if not failed or not rest:
            raise
        log.warning("rspark's JVM helpers %s do not compile against this PySpark (%s); the others are built",
                    ", ".join(sorted(src.stem for src in failed)), pyspark.__version__)
    shutil.rmtree(classes, ignore_errors=True)
    subprocess.run([*command, *map(str, rest)], check=True, capture_output=True, timeout=300)


def _failure_text(javac: str, exc: BaseException) -> str:
    """What went wrong building the jar, in one line: javac's first error line when it ran and failed."""
    stderr = getattr(exc, "stderr", None)
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    first = next((line.strip() for line in (stderr or "").splitlines() if line.strip()), None)
    if isinstance(exc, subprocess.CalledProcessError):
        return f"{javac} exited with status {exc.returncode}" + (f": {first}" if first else "")
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"{javac} took more than {exc.timeout:g} s"
    return f"{type(exc).__name__}: {exc}"


def python_fallback(spark) -> tuple[str, bool]:
    """Why rspark's JVM line scanner cannot be used in this Spark session (it is not on its class path), and whether
    that is unexpected (a WARNING: javac is there but the jar was not built, or the session lacks it) rather than
    by configuration (``RSPARK_JVM=0``, no JDK: INFO)."""
    if not enabled():
        return "RSPARK_JVM=0", False
    if _build_failure is not None:
        return f"rspark's JVM helpers could not be compiled ({_build_failure})", True
    if _javac() is None:
        return "no JDK (javac not found through JAVA_HOME or the PATH), so rspark's JVM helpers are not built", False
    return ("the Spark session was created without rspark's jar (a session started elsewhere: add "
            "rspark.spark.jvm.jar_path() to its spark.jars)"), True


def _register(spark, name: str, cls: str, return_type) -> str | None:
    """``name`` once the Java UDF ``cls`` is registered in ``spark`` (on first use), None when the session cannot
    load it (created without the jar, or ``RSPARK_JVM=0``)."""
    if not enabled():
        return None
    key = (id(spark._jsparkSession), name)
    if key not in _registered:
        try:
            spark.udf.registerJavaFunction(name, cls, return_type)
            _registered[key] = True
        except Exception:  # the class is not on the session's class path
            _registered[key] = False
    return name if _registered[key] else None


def line_parser(spark) -> str | None:
    """The name of the JVM line-scanner UDF in this Spark session (``rspark.jvm.NQuadsLine``), or None."""
    schema = StructType([StructField(name, StringType()) for name in ("s", "p", "o", "g")])
    return _register(spark, LINE_PARSER, "rspark.jvm.NQuadsLine", schema)


def _split_bytes(spark, size: int) -> int:
    """The bytes of an input split of a ``size``-byte file, as Spark's file sources choose it
    (``FilePartition.maxSplitBytes``): at most ``spark.sql.files.maxPartitionBytes``, and small enough that every
    core gets a split (``spark.sql.files.minPartitionNum``, else the default parallelism), but not below
    ``spark.sql.files.openCostInBytes``."""
    conf = spark._jsparkSession.sessionState().conf()
    max_bytes, open_cost = conf.filesMaxPartitionBytes(), conf.filesOpenCostInBytes()
    min_partitions = conf.filesMinPartitionNum()
    if min_partitions.isDefined():
        cores = int(min_partitions.get())
    else:
        leaf = spark.conf.get("spark.sql.leafNodeDefaultParallelism", None)
        cores = int(leaf) if leaf else spark.sparkContext.defaultParallelism
    return int(min(max_bytes, max(open_cost, (size + open_cost) // max(1, cores))))


def lines_source(spark, path: str, *, quads: bool, prefix: str, mode: str = "rows", pred: str | None = None,
                 pending: int | None = None):
    """The lines of a local N-Triples / N-Quads file read by rspark's data source (``rspark.jvm.NQuadsSource``):
    mode "rows" gives ``s, p, o, g, value, blk, idx`` (the terms of each line the JVM scanner reads, else its text
    for the Python path; a position per line), mode "count" gives ``blk, n`` (the lines of each input split), mode
    "stream" a stream file's content, elements, metadata and each split's summary in one pass, with ``pred`` the
    encoded timestamp predicate and ``pending`` how many statements may wait for their element's timestamp in a
    split (``k, s, p, o, element, ts, seq, h``: the loader's one-pass load, see ``NQuadsSource.StreamReader``).
    None when the source cannot be used, and the loader reads the file with Spark's text source and the scanner
    UDF instead: without rspark's jar in the session or with ``RSPARK_JVM=0``, on a cluster (the file is read
    where the task runs), for a compressed file, or for anything but a regular local file. Both give the same rows
    (tests/test_jvm_parser.py). :func:`source_unavailable` tells why."""
    if source_unavailable(spark, path) is not None:
        return None
    local = Path(path)
    key = (id(spark._jsparkSession), LINES_SOURCE)
    reader = spark.read.format(LINES_SOURCE).option("path", str(local)) \
        .option("splitBytes", str(_split_bytes(spark, local.stat().st_size))) \
        .option("quads", "true" if quads else "false").option("prefix", prefix).option("mode", mode)
    if pred is not None:
        reader = reader.option("pred", pred)
    if pending is not None:
        reader = reader.option("pending", str(pending))
    try:
        df = reader.load()
    except Exception as exc:
        if "DATA_SOURCE_NOT_FOUND" in str(exc) or "ClassNotFound" in str(exc):
            _registered[key] = False  # the class is not on the session's class path
        return None
    _registered[key] = True
    return df


def source_unavailable(spark, path: str) -> str | None:
    """Why rspark's data source cannot read ``path`` in this Spark session (None: it can, as far as is known before
    :func:`lines_source` tries): the reasons :func:`lines_source` lists, in words for the loader's log."""
    if not enabled():
        return "RSPARK_JVM=0"
    master = spark.sparkContext.master
    if not master.startswith("local"):
        return f"a cluster master ({master}): the file is read where each task runs"
    local = Path(path)
    if local.name.lower().endswith(_CODEC_SUFFIXES):
        return "a compressed file (Hadoop's codecs decompress it)"
    if not local.is_absolute() or not local.is_file():
        return "not a regular local file"
    if _registered.get((id(spark._jsparkSession), LINES_SOURCE)) is False:
        return "rspark's jar is not on the session's class path"
    return None


def sum_avg_result(spark) -> str | None:
    """The name of the UDF giving SUM's and AVG's final value from their partial sums in this Spark session
    (``rspark.jvm.SumAvgResult``, see :func:`rspark.spark.expr.aggregate._sum_avg_split`), or None."""
    return _register(spark, SUM_AVG_RESULT, "rspark.jvm.SumAvgResult", StringType())


def term_facets(spark) -> str | None:
    """The name of the UDF giving an encoded term's facets (suffix, lexical form, numeric type and value, comparison
    category: ``rspark.jvm.TermFacets``, the struct :func:`rspark.spark.expr.values.facet_pack` builds in SQL
    otherwise) in this Spark session, or None."""
    schema = StructType([StructField("enc", StringType()), StructField("sfx", StringType()),
                         StructField("lexr", StringType()), StructField("t", IntegerType()),
                         StructField("d", DecimalType(38, 18)), StructField("f", DoubleType()),
                         StructField("k", IntegerType())])
    return _register(spark, TERM_FACETS, "rspark.jvm.TermFacets", schema)


def arrow_frame(spark, table, struct: StructType, batch_rows: int):
    """``table`` (a pyarrow Table in ``struct``'s column types) as a DataFrame scanning an RDD of its record batches
    of at most ``batch_rows`` rows, one partition each (``rspark.jvm.ArrowFrames``: never a local relation, whose
    rows Catalyst hashes and compares whenever it analyses a union or a self-join of it), or None when the session
    cannot load rspark's jar or the table has no rows. The batches go to the JVM as PySpark's ``createDataFrame``
    sends them. A frame of one batch says it is one partition: a grouping or a DISTINCT over it needs no shuffle."""
    key = (id(spark._jsparkSession), ARROW_FRAMES)
    if not enabled() or _registered.get(key) is False:
        return None
    # why here: PySpark's Arrow serializer, only for this path (its module imports pandas-related code)
    from pyspark.sql.classic.dataframe import DataFrame
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer
    from pyspark.sql.pandas.types import to_arrow_schema

    jvm = spark._jvm
    frames = jvm.rspark.jvm.ArrowFrames
    if not isinstance(frames, JavaClass):  # a JavaPackage: the class is not on the session's class path
        _registered[key] = False
        return None
    table = table.cast(to_arrow_schema(struct))  # (as createDataFrame casts: the types Spark's reader expects)
    # a table concatenated from many (a live buffer's segments) has a chunk per part, and to_batches cuts at every
    # chunk's end: combined first, its partitions are cut by rows alone (one task for a few pushes' rows)
    batches = [b for b in table.combine_chunks().to_batches(max_chunksize=max(1, batch_rows)) if b.num_rows]
    if not batches:
        return None  # (no rows: the caller's local relation of none)
    jiter = spark.sparkContext._serialize_to_jvm(
        batches, ArrowStreamSerializer(), lambda name: jvm.PythonSQLUtils.readArrowStreamFromFile(name),
        lambda: jvm.ArrowIteratorServer())
    jdf = frames.toDataFrame(jiter, struct.json(), spark._jsparkSession, table.num_rows)
    _registered[key] = True
    df = DataFrame(jdf, spark)
    df._schema = struct
    return df


def long_parameter(spark, value: int):
    """``value`` as a Column Spark's generated code does not hold (``rspark.jvm.LongParameter``: a plan built again
    with another value reuses the compiled code), or None when the session cannot load rspark's jar."""
    key = (id(spark._jsparkSession), LONG_PARAMETER)
    if not enabled() or _registered.get(key) is False:
        return None
    try:
        column = Column(spark._jvm.rspark.jvm.LongParameter.column(int(value)))
    except Exception:  # the class is not on the session's class path (py4j: a JavaPackage is not callable)
        _registered[key] = False
        return None
    _registered[key] = True
    return column


def quoted_parts(spark) -> str | None:
    """The name of the UDF splitting an encoded quoted triple into its subject, predicate and object in this Spark
    session (``rspark.jvm.QuotedParts``: RDF-star patterns decompose quoted triples in place with it, see
    :mod:`rspark.spark.sparql.quoted`), or None."""
    schema = StructType([StructField(name, StringType()) for name in ("s", "p", "o")])
    return _register(spark, QUOTED_PARTS, "rspark.jvm.QuotedParts", schema)
