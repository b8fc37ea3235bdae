"""Live mode: continuous queries over streams as they arrive (docs/live.md)."""
