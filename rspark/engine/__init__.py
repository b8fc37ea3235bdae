"""The runtime: the Engine API, stream registry, replay scheduling, profiles and report policies."""
