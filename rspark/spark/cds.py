"""A class-data-sharing (CDS) archive of the Spark JVM's classes, made by the first local session and mapped by the
next ones: the JVM then skips most of the loading, verifying and linking of Spark's classes at start-up.

Why: a local Spark session takes seconds to start on a small machine, most of it the JVM loading tens of thousands
of classes from Spark's jars (benchmarks/startup.py: a bare ``SparkSession`` created, one job, stopped, 13 s wall on
2 cores, 7-8 s with the archive mapped). Java 17 writes such an archive of the classes a run loaded when the JVM
exits (``-XX:ArchiveClassesAtExit``, a dynamic archive on top of the JDK's own) and maps it at the start of later
runs (``-XX:SharedArchiveFile``).

How, for a local session rspark creates (not under spark-submit, and not when the driver's Java options are the
user's): the archive is ``<cache>/spark-cds-<key>.jsa``, ``<key>`` a hash of what the archive depends on (the
``java`` that runs Spark, PySpark's jars, the extra jars and class path, the driver's Java options). When it exists
the JVM maps it; a JVM that cannot (another JDK, a changed class path) runs as without it (``-Xshare:auto``). When
it does not, one process at a time (a lock file, taken over after :data:`STALE_LOCK_S` seconds) has its JVM write a
dump ``spark-cds-<key>.<pid>.dump`` when it exits; a later session adopts a finished dump (one not written to for
:data:`SETTLED_S` seconds, whose writer has ended, that starts with the archive header) as the archive, and removes
one that is not (a JVM killed while writing it). At most :data:`KEEP` archives are kept (the least recently used are
removed). ``RSPARK_CDS=0`` in the environment turns all of it off. The archive is large (about 150 MB for Spark 4).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from pathlib import Path

import pyspark

from rspark.cache import cache_dir

log = logging.getLogger("rspark.spark.cds")

PREFIX = "spark-cds-"
SETTLED_S = 60.0  # a dump not written to for this long is finished (the JVM writes it in a few seconds at exit)
STALE_LOCK_S = 600.0  # a lock this old is taken over (its process ended without leaving a dump, or runs on)
KEEP = 3  # archives kept (of several JDKs, PySpark versions or class paths)
DUMP_OPTION = "-XX:ArchiveClassesAtExit="
MAGIC = (0xF00BABA8).to_bytes(4, "little")  # the first bytes of a dynamic archive (HotSpot's header), once written


def enabled() -> bool:
    return os.environ.get("RSPARK_CDS", "1") != "0"


def _java() -> Path | None:
    """The ``java`` spark-submit runs (``JAVA_HOME``'s, else the ``PATH``'s), resolved."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else None
    if found is None or not found.is_file():
        which = shutil.which("java")
        found = Path(which) if which else None
    return found.resolve() if found is not None else None


def archive_key(settings: dict[str, str], java: Path) -> str:
    """What the archive depends on, hashed: the JVM, PySpark's jars, the extra jars and class path, the driver's
    Java options (without the archive's own)."""
    digest = hashlib.sha256()
    stat = java.stat()
    digest.update(f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{pyspark.__version__}".encode())
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    digest.update("|".join(sorted(p.name for p in jars.glob("*.jar"))).encode() if jars.is_dir() else b"")
    for key in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath", "spark.driver.extraJavaOptions"):
        digest.update(f"|{key}={settings.get(key, '')}".encode())
    return digest.hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _adopt(folder: Path, key: str, archive: Path) -> None:
    """A finished dump of this key becomes the archive; other dumps of it that are finished are removed."""
    now = time.time()
    for dump in sorted(folder.glob(f"{PREFIX}{key}.*.dump")):
        try:
            settled = now - dump.stat().st_mtime >= SETTLED_S
            pid = int(dump.name.split(".")[-2])
        except (OSError, ValueError):
            continue
        if not settled or (_alive(pid) and pid != os.getpid()):
            continue
        try:
            with dump.open("rb") as handle:
                whole = handle.read(len(MAGIC)) == MAGIC  # (a JVM killed while writing leaves no header)
            if not archive.exists() and whole:
                os.replace(dump, archive)
                log.info("class-data-sharing archive of the Spark JVM's classes: %s", archive)
            else:
                dump.unlink()
        except OSError:
            pass
    if archive.exists():
        (folder / f"{PREFIX}{key}.lock").unlink(missing_ok=True)


def _take_lock(folder: Path, key: str) -> bool:
    """Whether this process is the one whose JVM writes the dump (the lock file is created, or taken over)."""
    lock = folder / f"{PREFIX}{key}.lock"
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                if time.time() - lock.stat().st_mtime < STALE_LOCK_S:
                    return False
                lock.unlink()
            except OSError:
                return False
            continue
        except OSError:
            return False
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return True
    return False


def _prune(folder: Path, keep: Path) -> None:
    """At most :data:`KEEP` archives: the least recently used others are removed."""
    archives = sorted(folder.glob(f"{PREFIX}*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [a for a in archives if a != keep][KEEP - 1:]:
        old.unlink(missing_ok=True)


def dump_files(options: str) -> list[Path]:
    """The files of the dump that ``options`` (of :func:`java_options`) has the JVM write: the dump and the lock."""
    dump = Path(options.split()[0][len(DUMP_OPTION):])
    key = dump.name[len(PREFIX):].split(".")[0]
    return [dump, dump.parent / f"{PREFIX}{key}.lock"]


def java_options(settings: dict[str, str]) -> str | None:
    """The Java options that map the archive, or have this process's JVM write the dump; None when there is neither
    (turned off, no ``java`` found, the cache folder not writable, another process writing the dump)."""
    if not enabled():
        return None
    java = _java()
    if java is None:
        return None
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        key = archive_key(settings, java)
        archive = folder / f"{PREFIX}{key}.jsa"
        _adopt(folder, key, archive)
        if archive.is_file():
            os.utime(archive)  # used: kept by _prune
            _prune(folder, archive)
            return f"-XX:SharedArchiveFile={archive} -Xshare:auto"
        if not _take_lock(folder, key):
            return None
    except OSError as exc:
        log.debug("no class-data-sharing archive: %s", exc)
        return None
    dump = folder / f"{PREFIX}{key}.{os.getpid()}.dump"
    # (what the JVM says of each class it leaves out of the dump, hundreds of lines, is not worth reading)
    return f"{DUMP_OPTION}{dump} -Xlog:cds=off -Xlog:cds+dynamic=off"
