"""Shared test fixtures. Test data is read in place from ../shared/testdata (never copied into the project)."""

from __future__ import annotations

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
    """The one SparkSession of the test run (local, 2 shuffle partitions)."""
    from rspark.spark.session import get_session

    return get_session(conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
