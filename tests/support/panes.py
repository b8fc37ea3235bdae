"""Replays that tell whether a window's pattern was matched pane by pane (rspark.spark.streaming.r2r: a pattern
matched before the window, or a grouping aggregated by pane)."""

from __future__ import annotations


def replay_spying_on_panes(engine, text: str, times: list) -> tuple[list, bool]:
    """The records of ``text`` at ``times`` (sorted), and whether a window pattern was matched pane by pane."""
    from rspark.spark.streaming.r2r import StreamCompiler

    real = StreamCompiler._pane_matches
    used = []

    def spy(self, *args):
        used.append(True)
        return real(self, *args)

    StreamCompiler._pane_matches = spy
    try:
        return engine.replay(text, times=sorted(times)), bool(used)
    finally:
        StreamCompiler._pane_matches = real
