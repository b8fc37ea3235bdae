"""Small file helpers of live mode and the service: a JSON document written atomically, a file removed."""

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


def remove_file(path: str) -> None:
    """Removes ``path``; one gone already is no error."""
    try:
        os.remove(path)
    except OSError:  # gone already: nothing to remove
        pass
