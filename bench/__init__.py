"""Recur's benchmark: `python -m bench` (see docs/benchmarks.md and docs/performance.md)."""
