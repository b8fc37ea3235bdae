"""The Kafka tests' broker: :mod:`rspark.testing.kafka_broker` (shared with benchmarks/live_latency.py).
``python3 -m tests.kafka_broker`` fetches its jars (``.ci/run`` does)."""

from __future__ import annotations

import sys

from rspark.testing.kafka_broker import VERSION, Broker, fetch, jar_dir, missing, start

__all__ = ["VERSION", "Broker", "fetch", "jar_dir", "missing", "start"]

if __name__ == "__main__":
    print(fetch())
    sys.exit(0)
