"""Orchestration: the Engine API, replays (the plan for a set of instants, then its answers in time order) and
the output writers."""
