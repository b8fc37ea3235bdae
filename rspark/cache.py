"""rspark's per-user cache directory (``$XDG_CACHE_HOME/rspark``, else ``~/.cache/rspark``): the compiled jar of
its JVM helpers (:mod:`rspark.spark.jvm`) and the analysed query grammar (:mod:`rspark.syntax.parser`)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rspark"
