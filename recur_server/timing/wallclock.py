"""Mapping naive local wall-clock times to UTC with the product's DST rules.

A wall time inside a spring-forward gap maps to the first instant after the gap; a wall time that
occurs twice at fall back maps to its first occurrence (fold=0). The mapping is monotonic
(non-decreasing) in wall time, which the iterators rely on.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from .instants import UTC

_SECOND = timedelta(seconds=1)


def utc_to_wall(instant: datetime, tz: ZoneInfo) -> datetime:
    """The naive local wall time shown in `tz` at the aware `instant`."""
    return instant.astimezone(tz).replace(tzinfo=None)


def wall_to_utc(wall: datetime, tz: ZoneInfo) -> datetime:
    """Map a naive wall time in `tz` to the UTC instant it runs at (gap -> end of gap, overlap -> first)."""
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if utc_to_wall(first, tz) == wall:
        return first
    # In a gap: fold=0 used the offset from before the change, so `first` lies after the transition,
    # and fold=1 (offset after the change) lies before it. Bisect for the first instant whose wall
    # time is past `wall`: that is the transition instant, i.e. the first instant after the gap.
    low = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    high = first
    if low >= high:  # defensive: odd zone data; never return an instant before the gap
        return high
    while high - low > _SECOND:
        mid = low + timedelta(seconds=int((high - low).total_seconds()) // 2)
        if utc_to_wall(mid, tz) > wall:
            high = mid
        else:
            low = mid
    return high
