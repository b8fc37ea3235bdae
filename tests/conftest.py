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
    """The one SparkSession of the test process (local, 2 shuffle partitions; each of the two pytest-xdist workers
    has its own)."""
    from rspark.spark.session import get_session

    # the whole suite shares this JVM: more than the 1 GB default driver memory. Spark's storage memory (about
    # 0.6 of the heap) fills with the blocks of finished replays until they are cleaned or evicted (measured: a
    # small replay repeated in one JVM levels off at 0.5 GB of heap with 1g, 2.3 GB with 4g), and with 4g a full
    # run once failed to build a broadcast late in the run: 6g leaves execution its room
    return get_session(conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                             "spark.driver.memory": "6g"})


# the weight of a test marked slow against one that is not, in pytest_collection_modifyitems (about a minute
# against about a second on the 2-core machine of CI)
SLOW_WEIGHT = 60


def pytest_collection_modifyitems(session, config, items):
    """Long cases first, on both of pytest-xdist's workers: its ``worksteal`` scheduler gives each worker one
    contiguous half of the collection and an idle worker steals from the end of another's queue, so a long test
    collected late runs alone at the end. The modules holding a test marked ``slow`` (kept whole: their
    module-scoped fixtures are set up once) are shared between the two halves, heaviest first (a slow test weighs
    SLOW_WEIGHT, another 1), each half starting with its share; the other modules follow in their order. Without
    xdist the order changes nothing else."""
    modules: dict = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    heavy = {name: group for name, group in modules.items() if any(i.get_closest_marker("slow") for i in group)}
    if not heavy or len(heavy) == len(modules):
        return

    def weight(group) -> int:
        return sum(SLOW_WEIGHT if i.get_closest_marker("slow") else 1 for i in group)

    halves: tuple[list, list] = ([], [])
    loads = [0, 0]
    for group in sorted(heavy.values(), key=weight, reverse=True):
        k = 0 if loads[0] <= loads[1] else 1
        halves[k].extend(group)
        loads[k] += weight(group)
    light = [i for name, group in modules.items() if name not in heavy for i in group]
    fill = len(items) // 2 - len(halves[0])  # the first half ends where xdist's split falls
    if fill < 0 or fill > len(light):
        items[:] = halves[0] + halves[1] + light
        return
    items[:] = halves[0] + light[:fill] + halves[1] + light[fill:]
