"""Small file helpers of live mode and the service: a JSON document written atomically."""

from __future__ import annotations

import json
import os


def save_json(path: str, data: dict) -> None:
    """Writes ``data`` as JSON atomically (a temporary file, flushed to disk, renamed over ``path``): a crash
    leaves the old document or the new one, never half of one."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
