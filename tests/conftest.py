"""Shared test fixtures. Test data is read in place from ../shared/testdata (never copied into the project)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# every SQL text rspark's own reader turns into a Column is also parsed by Spark's parser and the two expressions
# compared (rspark.spark.expr.sql.check_reader): the whole suite is the reader's differential test
os.environ.setdefault("RSPARK_CHECK_SQL", "1")

REPO = Path(__file__).resolve().parents[1]
# RSPARK_TESTDATA: another place for the shared test data (a missing one shows what runs without it)
TESTDATA = Path(os.environ.get("RSPARK_TESTDATA", REPO.parent / "shared" / "testdata"))


NO_TESTDATA = f"the shared test data is not at {TESTDATA} (the repository sits beside shared/testdata)"


def pytest_configure(config):
    config.addinivalue_line("markers", "spark: starts Spark (a SparkSession, or an rspark command that starts one)")
    config.addinivalue_line("markers", "testdata: reads ../shared/testdata (skipped, with one reason, without it)")
    if _quick_lane(config):
        # a test that starts a JVM without its spark marker fails in this lane instead of passing slowly
        os.environ["JAVA_HOME"] = str(REPO / "no-jvm-in-the-not-spark-lane")


def _quick_lane(config) -> bool:
    """``pytest -m "not spark"``: the pure-Python tests, without the long (``slow``) runs of the fuzzers."""
    return config.getoption("markexpr", "").replace(" ", "") == "notspark"


def pytest_report_header(config):
    if _quick_lane(config):
        return 'the pure-Python lane: Spark cannot start; slow cases left out (-m "not spark and slow" runs them)'


def pytest_collection_modifyitems(config, items):
    """A test that uses the ``spark`` fixture (directly or through another fixture) starts Spark: it is marked
    ``spark``; tests that start it otherwise (``rspark`` commands in a subprocess) are marked in their files. A
    test marked ``testdata`` is skipped with one reason when ../shared/testdata is absent."""
    for item in items:
        if "spark" in item.fixturenames:
            item.add_marker(pytest.mark.spark)
        if not TESTDATA.is_dir() and ("testdata" in item.fixturenames or item.get_closest_marker("testdata")):
            item.add_marker(pytest.mark.skip(reason=NO_TESTDATA))
    if _quick_lane(config):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(scope="session")
def testdata() -> Path:
    return TESTDATA


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test process (local, 2 shuffle partitions; each of the two pytest-xdist workers
    has its own)."""
    from rspark.spark.session import get_session

    # the whole suite shares this JVM: more than the 1 GB default driver memory. Spark's storage memory (about
    # 0.6 of the heap) fills with the blocks of finished replays until they are cleaned or evicted (measured: a
    # small replay repeated in one JVM levels off at 0.5 GB of heap with 1g, 2.3 GB with 4g), and with 4g a full
    # run once failed to build a broadcast late in the run: 6g leaves execution its room. Spark sizes its memory
    # pages from the heap: 64 MB with 6g on 2 cores, zeroed for every task that aggregates or sorts (a tenth of the
    # JVM's samples in a live test); 16 MB is what a session with the default 1 GB gets, as users' runs do
    return get_session(conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                             "spark.driver.memory": "6g", "spark.buffer.pageSize": "16m"})



@pytest.fixture
def executor_loads(spark):
    """Every static file parsed on the executors, however small (a test of their parsing: splits, fallbacks)."""
    from rspark.spark.loading.loader import DRIVER_MAX_BYTES_CONF

    spark.conf.set(DRIVER_MAX_BYTES_CONF, "0")
    yield
    spark.conf.unset(DRIVER_MAX_BYTES_CONF)


@pytest.fixture
def logs(caplog):
    """caplog, with the ``rspark`` logger's records reaching it (the CLI's logging stops their propagation) and
    INFO recorded."""
    rspark_log = logging.getLogger("rspark")
    saved = rspark_log.propagate
    rspark_log.propagate = True
    with caplog.at_level(logging.INFO, logger="rspark"):
        yield caplog
    rspark_log.propagate = saved
