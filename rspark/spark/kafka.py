"""Spark's Kafka connector (``spark-sql-kafka-0-10``) on the session's class path, for the ``kafka://`` sources and
sinks of live mode (docs/live.md, Kafka).

A session gets it when it is created with ``spark.rspark.kafka=true`` (``rspark run`` sets it when a
``kafka://`` source or output is given; ``Engine(conf={"spark.rspark.kafka": "true"})`` in Python): the
connector's jar and the jars it needs (the token provider, ``kafka-clients``, ``commons-pool2``) are put on
``spark.jars`` from rspark's cache directory (``~/.cache/rspark/kafka/<version>``) when they are there; otherwise
they are fetched there once with Maven (``mvn dependency:copy``) when ``mvn`` is on the ``PATH``; otherwise the
connector is named in ``spark.jars.packages`` and Spark resolves it from Maven Central with Ivy when the session
starts (what ``spark-submit --packages`` does). A session given the connector by its user (``spark.jars`` or
``spark.jars.packages`` naming ``spark-sql-kafka``) is left as it is.

The connector's version is Spark's, except where that release is not on Maven Central: PySpark 4.3's streaming
classes changed a constructor the 4.1 connector calls (``HDFSMetadataLog``), and the 4.2 connector, built against
the new one, is the one that runs on it. ``spark.rspark.kafka.version`` names another.

``python -m rspark.spark.kafka`` fills the cache (with Maven) and prints the jars.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark

from rspark.cache import cache_dir
from rspark.errors import RsparkError

__all__ = ["KAFKA_CONF", "connector_artifacts", "connector_jars", "connector_version", "has_connector",
           "kafka_settings"]

log = logging.getLogger("rspark")

KAFKA_CONF = "spark.rspark.kafka"
VERSION_CONF = "spark.rspark.kafka.version"
CONNECTOR = "spark-sql-kafka-0-10"

# Spark release -> the connector release that runs on it, where Spark's own is not on Maven Central
_CONNECTOR_FOR = {"4.3": "4.2.0"}

# The connector's jars that PySpark does not ship, by connector version: (group, artifact, version)
_KAFKA_CLIENTS = {"4.2.0": "3.9.2", "4.1.1": "3.9.1", "4.1.0": "3.9.1", "4.0.1": "3.9.0", "4.0.0": "3.9.0"}
_COMMONS_POOL = {"4.2.0": "2.13.1"}


def connector_version(requested: str | None = None) -> str:
    if requested:
        return requested.strip()
    spark = pyspark.__version__
    return _CONNECTOR_FOR.get(".".join(spark.split(".")[:2]), spark)


def connector_artifacts(version: str) -> list[tuple[str, str, str]]:
    return [("org.apache.spark", f"{CONNECTOR}_2.13", version),
            ("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", version),
            ("org.apache.kafka", "kafka-clients", _KAFKA_CLIENTS.get(version, "3.9.2")),
            ("org.apache.commons", "commons-pool2", _COMMONS_POOL.get(version, "2.12.1"))]


def _folder(version: str) -> Path:
    return cache_dir() / "kafka" / version


def connector_jars(version: str, *, fetch: bool = True) -> list[str] | None:
    """The connector's jars in rspark's cache, fetched there with Maven when they are not and ``fetch`` (and
    ``mvn`` is on the PATH); None when they are not there."""
    folder = _folder(version)
    wanted = [folder / f"{artifact}-{v}.jar" for _, artifact, v in connector_artifacts(version)]
    if all(p.is_file() for p in wanted):
        return [str(p) for p in wanted]
    mvn = shutil.which("mvn")
    if not fetch or mvn is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    for group, artifact, v in connector_artifacts(version):
        target = folder / f"{artifact}-{v}.jar"
        if target.is_file():
            continue
        log.info("fetching %s:%s:%s into %s with Maven", group, artifact, v, folder)
        done = subprocess.run([mvn, "-q", "-B", "dependency:copy", f"-Dartifact={group}:{artifact}:{v}",
                               f"-DoutputDirectory={folder}"], capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or not target.is_file():
            text = (done.stdout + done.stderr).strip().splitlines()
            cause = next((line for line in text if "ERROR" in line), text[-1] if text else "no output")
            raise RsparkError(f"Maven could not fetch {group}:{artifact}:{v} for Spark's Kafka connector: {cause}")
    return [str(p) for p in wanted]


def kafka_settings(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` with the connector on ``spark.jars`` or ``spark.jars.packages`` (module docstring), unless
    they name it already."""
    jars, packages = settings.get("spark.jars", ""), settings.get("spark.jars.packages", "")
    if CONNECTOR in jars or CONNECTOR in packages:
        return settings
    version = connector_version(settings.get(VERSION_CONF))
    found = connector_jars(version)
    out = dict(settings)
    if found is not None:
        out["spark.jars"] = ",".join(p for p in (jars, *found) if p)
        log.info("Spark's Kafka connector %s from %s", version, _folder(version))
    else:
        out["spark.jars.packages"] = ",".join(p for p in (packages, f"org.apache.spark:{CONNECTOR}_2.13:{version}")
                                              if p)
        log.info("Spark's Kafka connector %s resolved by Spark from Maven Central (spark.jars.packages)", version)
    return out


def has_connector(spark) -> bool:
    """Whether the session was started with Spark's Kafka connector."""
    conf = spark.sparkContext.getConf()
    return any(CONNECTOR in (conf.get(key) or "") for key in ("spark.jars", "spark.jars.packages"))


def main() -> int:
    jars = connector_jars(connector_version(sys.argv[1] if len(sys.argv) > 1 else None))
    if jars is None:
        print("mvn is not on the PATH: the connector cannot be fetched", file=sys.stderr)
        return 1
    print("\n".join(jars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
