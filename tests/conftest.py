"""Shared test fixtures. Test data is read in place from ../shared/testdata (never copied into the project)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

REPO = Path(__file__).resolve().parents[1]
TESTDATA = REPO.parent / "shared" / "testdata"


@pytest.fixture(scope="session")
def testdata() -> Path:
    if not TESTDATA.is_dir():
        raise RuntimeError(f"test data not found at {TESTDATA}: the repository must sit beside shared/")
    return TESTDATA


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test process (local, 2 shuffle partitions; each of the two pytest-xdist workers
    has its own)."""
    from rspark.spark.session import get_session

    # the whole suite shares this JVM: more than the 1 GB default driver memory. Spark's storage memory (about
    # 0.6 of the heap) fills with the blocks of finished replays until they are cleaned or evicted (measured: a
    # small replay repeated in one JVM levels off at 0.5 GB of heap with 1g, 2.3 GB with 4g), and with 4g a full
    # run once failed to build a broadcast late in the run: 6g leaves execution its room
    return get_session(conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                             "spark.driver.memory": "6g"})



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
