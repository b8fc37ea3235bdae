"""The class-data-sharing archive of the Spark JVM's classes (rspark.spark.cds): which Java options a new local
session gets, by the state of the cache folder. No JVM starts here: the options are strings, the archive and the
dumps are files this test writes (what the JVM does with the options is measured by benchmarks/startup.py)."""

from __future__ import annotations

import os
import time

import pytest

from rspark.spark import cds

SETTINGS = {"spark.jars": "/x/rspark-jvm.jar", "spark.driver.extraJavaOptions": "-Duser.timezone=UTC"}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("RSPARK_CDS", raising=False)
    if cds._java() is None:
        pytest.skip("no java on this machine")
    return tmp_path / "rspark"


def _key() -> str:
    return cds.archive_key(SETTINGS, cds._java())


def _old(path, seconds: float = 2 * cds.SETTLED_S) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_the_first_session_writes_the_dump_and_the_others_wait(cache):
    first = cds.java_options(SETTINGS)
    dump = cache / f"spark-cds-{_key()}.{os.getpid()}.dump"
    assert first == f"-XX:ArchiveClassesAtExit={dump} -Xlog:cds=off -Xlog:cds+dynamic=off"
    assert (cache / f"spark-cds-{_key()}.lock").read_text() == str(os.getpid())
    assert cds.java_options(SETTINGS) is None  # the lock is held: one dump at a time


def test_a_finished_dump_becomes_the_archive(cache):
    assert cds.java_options(SETTINGS).startswith(cds.DUMP_OPTION)
    dump = cache / f"spark-cds-{_key()}.{os.getpid()}.dump"
    dump.write_bytes(cds.MAGIC + b"archive")
    assert cds.java_options(SETTINGS) is None  # written to a moment ago: maybe not finished
    _old(dump)
    archive = cache / f"spark-cds-{_key()}.jsa"
    assert cds.java_options(SETTINGS) == f"-XX:SharedArchiveFile={archive} -Xshare:auto"
    assert archive.read_bytes() == cds.MAGIC + b"archive" and not dump.exists()
    assert not (cache / f"spark-cds-{_key()}.lock").exists()


def test_a_dump_without_its_header_is_removed_not_adopted(cache):
    """A JVM killed while it wrote the dump leaves a file that is no archive: removed, and written again later."""
    assert cds.java_options(SETTINGS).startswith(cds.DUMP_OPTION)
    dump = cache / f"spark-cds-{_key()}.{os.getpid()}.dump"
    dump.write_bytes(bytes(64))
    _old(dump)
    lock = cache / f"spark-cds-{_key()}.lock"
    _old(lock, cds.STALE_LOCK_S + 1)
    assert cds.java_options(SETTINGS).startswith(cds.DUMP_OPTION)  # the stale lock taken over: a new dump
    assert not dump.exists() and not (cache / f"spark-cds-{_key()}.jsa").exists()


def test_a_dump_of_a_process_still_running_is_left_alone(cache):
    cache.mkdir(parents=True)
    parent = os.getppid()  # alive, and not this process
    dump = cache / f"spark-cds-{_key()}.{parent}.dump"
    dump.write_bytes(b"half")
    _old(dump)
    cds.java_options(SETTINGS)
    assert dump.exists() and not (cache / f"spark-cds-{_key()}.jsa").exists()


def test_a_stale_lock_is_taken_over(cache):
    cache.mkdir(parents=True)
    lock = cache / f"spark-cds-{_key()}.lock"
    lock.write_text("1")
    assert cds.java_options(SETTINGS) is None
    _old(lock, cds.STALE_LOCK_S + 1)
    assert cds.java_options(SETTINGS).startswith(cds.DUMP_OPTION)


def test_the_key_follows_the_class_path_and_the_java_options(cache):
    java = cds._java()
    keys = {cds.archive_key(SETTINGS, java), cds.archive_key({**SETTINGS, "spark.jars": "/y.jar"}, java),
            cds.archive_key({**SETTINGS, "spark.jars.packages": "org.apache.spark:x:1"}, java),
            cds.archive_key({**SETTINGS, "spark.driver.extraJavaOptions": "-Xss4m"}, java)}
    assert len(keys) == 4


def test_the_least_recently_used_archives_are_removed(cache):
    cache.mkdir(parents=True)
    others = []
    for i in range(4):
        other = cache / f"spark-cds-other{i}.jsa"
        other.write_bytes(b"x")
        _old(other, 1000 - i)  # other3 the most recent
        others.append(other)
    archive = cache / f"spark-cds-{_key()}.jsa"
    archive.write_bytes(b"mine")
    assert cds.java_options(SETTINGS).startswith("-XX:SharedArchiveFile=")
    assert sorted(p.name for p in cache.glob("*.jsa")) == sorted([archive.name, others[3].name, others[2].name])


def test_turned_off(cache, monkeypatch):
    monkeypatch.setenv("RSPARK_CDS", "0")
    assert cds.java_options(SETTINGS) is None
    assert not cache.exists()


def test_the_dump_s_files_are_known_for_an_interrupted_command(cache):
    options = cds.java_options(SETTINGS)
    dump, lock = cds.dump_files(options)
    assert dump == cache / f"spark-cds-{_key()}.{os.getpid()}.dump" and lock.is_file()
    assert lock == cache / f"spark-cds-{_key()}.lock"
