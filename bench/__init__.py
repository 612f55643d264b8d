"""Recur's benchmark: `python -m bench` (see bench/README_PERFORMANCE.md)."""
