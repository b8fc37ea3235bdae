"""History and live in one stream (Janus's hybrid windows): a live stream that starts from its recorded past. The
recorded file's elements are written into the stream's inbox before any live element, as one file (the inbox
reader loads it as one batch), so the first live instants' windows hold the historical elements, the queries catch
up on the history at their first evaluation and go on with the live elements: the records are a replay's over the
history followed by the live elements, with no gap and no repeat.

The stream's checkpoint keeps a marker (``history.json``: the file and its element count) written once the history
is in the inbox: a restart on the checkpoint with the same history writes nothing again."""

from __future__ import annotations

import json
import os

from rspark.engine.live.files import save_json
from rspark.engine.live.sources import recorded_elements
from rspark.errors import InputError

MARKER = "history.json"


def start_from_history(st, path: str, checkpoint: str) -> int:
    """Writes the recorded stream ``path`` into the inbox of the live stream ``st`` (a
    :class:`~rspark.engine.live.registry.LiveStream`), unless the checkpoint says it already is; returns the number
    of elements written (0 when they were written before). ``checkpoint``: the stream's folder in the
    checkpoint. A stream that already has elements, or that started from another history, is an error naming both:
    the history comes before every live element."""
    if not os.path.isfile(path):
        raise InputError(f"history of <{st.iri}>: no such file: {path}")
    marker = os.path.join(checkpoint, MARKER)
    source = os.path.abspath(path)
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as f:
            done = json.load(f)
        if done.get("path") != source:
            raise InputError(f"history of <{st.iri}>: the stream's checkpoint ({checkpoint}) started it from "
                             f"{done.get('path')}, not {source}; a stream has one history (use another checkpoint)")
        return 0
    if st.counters["elements"] or st.counters["late"] or st.counters["rejected"] or st.written or _inbox_files(st):
        raise InputError(f"history of <{st.iri}>: the stream already has elements; its history is read before "
                         "every live element (declare it with its history first, or use another checkpoint)")
    elements = recorded_elements(path, st.timestamp_predicate)
    if elements:
        st.write("".join(text for _, text in elements), "nq")
    os.makedirs(checkpoint, exist_ok=True)
    save_json(marker, {"path": source, "elements": len(elements)})
    return len(elements)


def _inbox_files(st) -> bool:
    """Whether the stream's inbox holds a file not yet read (written by an earlier process)."""
    return os.path.isdir(st.inbox) and any(not name.startswith(".") for name in os.listdir(st.inbox))
