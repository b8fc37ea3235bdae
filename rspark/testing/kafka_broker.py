"""A single-node Kafka broker (KRaft: broker and controller in one JVM) for the Kafka tests and the live latency
benchmark, from Apache Kafka's own jars: ``python3 -m rspark.testing.kafka_broker`` (or ``python3 -m
tests.kafka_broker``) fetches them once from Maven Central with ``mvn`` into rspark's cache (``.ci/run`` does),
:func:`start` formats a storage directory and starts the broker on two free loopback ports; :meth:`Broker.stop`
stops it (SIGTERM: Kafka's orderly shutdown; ``kill=True``: SIGKILL) and :meth:`Broker.restart` starts it again on
the same ports and storage (its topics and offsets kept)."""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from rspark.cache import cache_dir

VERSION = "4.1.1"
POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rspark.tests</groupId><artifactId>kafka-broker</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{VERSION}</version></dependency>
  </dependencies>
</project>
"""


def jar_dir() -> Path:
    return cache_dir() / "kafka-broker" / VERSION


def missing() -> str | None:
    """Why the broker cannot start (its jars are not fetched), None when it can."""
    if not (jar_dir() / f"kafka_2.13-{VERSION}.jar").is_file():
        return (f"the Kafka broker's jars (org.apache.kafka:kafka_2.13:{VERSION}) are not in {jar_dir()}: "
                "fetch them with `python3 -m rspark.testing.kafka_broker` (needs mvn; .ci/run does it)")
    return None


def fetch() -> Path:
    """The broker's jars and their runtime dependencies, copied by Maven into :func:`jar_dir`."""
    if missing() is None:
        return jar_dir()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pom.xml").write_text(POM)
        subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
                        f"-DoutputDirectory={jar_dir()}"], cwd=tmp, check=True, timeout=900)
    return jar_dir()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """A running broker: ``servers`` (``127.0.0.1:PORT``) for a client, ``folder`` its storage, log and settings."""

    def __init__(self, process: subprocess.Popen, port: int, folder: Path) -> None:
        self.process, self.port, self.folder = process, port, folder
        self.servers = f"127.0.0.1:{port}"

    def stop(self, *, kill: bool = True, timeout: float = 60) -> None:
        """Stops the broker: SIGKILL (``kill``), else SIGTERM, Kafka's orderly shutdown (its logs flushed and closed;
        SIGKILL after ``timeout`` seconds)."""
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
                try:
                    self.process.wait(timeout)
                    return
                except subprocess.TimeoutExpired:
                    self.process.kill()
            self.process.wait(30)

    def restart(self, timeout: float = 120) -> Broker:
        """Starts the stopped broker again on the same ports and storage (its topics and offsets kept); returns
        once it accepts connections."""
        if self.process.poll() is None:
            raise RuntimeError("the Kafka broker is running: stop it first")
        self.process = _launch(self.folder)
        _wait_listening(self, timeout)
        return self


def _java() -> list[str]:
    return ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", str(jar_dir() / "*")]


def _launch(folder: Path) -> subprocess.Popen:
    with open(folder / "broker.log", "ab") as log:  # the broker's output, read when it fails to start
        return subprocess.Popen([*_java(), "kafka.Kafka", str(folder / "server.properties")], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _wait_listening(broker: Broker, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if broker.process.poll() is not None:
            raise RuntimeError(f"the Kafka broker ended: {(broker.folder / 'broker.log').read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", broker.port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    broker.stop()
    raise RuntimeError(f"the Kafka broker did not listen on {broker.port} in {timeout} s")


def start(folder: Path, timeout: float = 120) -> Broker:
    """Formats ``folder``'s storage and starts the broker; returns once it accepts connections."""
    port, controller = _free_port(), _free_port()
    (folder / "data").mkdir(parents=True, exist_ok=True)
    props = folder / "server.properties"
    props.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{controller}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT", f"log.dirs={folder / 'data'}", "num.partitions=1",
        "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0", ""]))
    cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    subprocess.run([*_java(), "kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(props)],
                   check=True, capture_output=True, timeout=120)
    broker = Broker(_launch(folder), port, folder)
    _wait_listening(broker, timeout)
    return broker


if __name__ == "__main__":
    print(fetch())
    sys.exit(0)
