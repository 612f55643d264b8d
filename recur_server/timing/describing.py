"""Small shared wording helpers for describe()."""
from __future__ import annotations

_UNITS = ((604800, "week"), (86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


def plural(count: int, unit: str) -> str:
    """"1 hour", "2 hours"."""
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


def describe_seconds(seconds: int) -> str:
    """Largest exact unit: 30 -> "30 seconds", 3600 -> "hour", 5400 -> "90 minutes"."""
    for size, unit in _UNITS:
        if seconds % size == 0:
            count = seconds // size
            return unit if count == 1 else plural(count, unit)
    return plural(seconds, "second")  # pragma: no cover - size 1 always divides
