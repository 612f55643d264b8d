"""Small statistics over lists of seconds."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def rate(starts: list[float]) -> float:
    """Events per second between the first and the last start."""
    if len(starts) < 2:
        return 0.0
    span = max(starts) - min(starts)
    return (len(starts) - 1) / span if span > 0 else 0.0


def lateness_summary(pairs: list[tuple[float, float]]) -> dict[str, float | int]:
    """pairs of (nominal, started) epoch seconds -> p50/p99/max lateness in ms and the early count."""
    late = [started - nominal for nominal, started in pairs]
    if not late:
        return {"fires": 0, "p50_ms": math.nan, "p99_ms": math.nan, "max_ms": math.nan, "early": 0}
    return {
        "fires": len(late),
        "p50_ms": round(percentile(late, 50) * 1000, 1),
        "p99_ms": round(percentile(late, 99) * 1000, 1),
        "max_ms": round(max(late) * 1000, 1),
        "early": sum(1 for x in late if x < 0),
    }


def interleaved(rounds: int, variants: dict[str, Callable[[], T]]) -> dict[str, list[T]]:
    """Each variant measured once a round, in turn, `rounds` times, so that a drift of the machine falls on
    every variant alike; prints each measurement as it comes."""
    seen: dict[str, list[T]] = {label: [] for label in variants}
    for round_ in range(1, rounds + 1):
        for label, measure in variants.items():
            seen[label].append(measure())
            print(f"round {round_}: {label}: {seen[label][-1]}", flush=True)
    return seen
