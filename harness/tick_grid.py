"""A schedule's ticks as its run rows account for them, for the tests that check that no tick was lost across
hosts or versions (tests/test_multi_host.py, tests/test_rolling_upgrade.py): every tick on the schedule's grid
between its first and its last row has a row of its own (a run of it) or is one of the ticks a policy's row
stands for (`reason` set: one row for a gap of `ticks` ticks, from its `scheduled_for`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from harness.stack import parse_instant


def covered_ticks(runs: list[dict[str, Any]], interval: timedelta) -> set[datetime]:
    """Every tick a row stands for: a run's own, and each tick of a policy's gap. A retry's row stands for its
    first attempt's tick, which that attempt's row already covers: its own `scheduled_for` is when its backoff
    ended, off the grid, and may lie past ticks a chain that is catching up has not run yet."""
    covered: set[datetime] = set()
    for run in runs:
        if run.get("retry_number"):
            continue
        first = parse_instant(run["scheduled_for"])
        if run["reason"] is not None:
            covered.update(first + interval * k for k in range(run["ticks"]))
        else:
            covered.add(first)
    return covered


def lost_ticks(covered: set[datetime], interval: timedelta) -> list[datetime]:
    """The ticks of the grid from the first covered one to the last that no row stands for."""
    if not covered:
        return []
    first, last = min(covered), max(covered)
    return [tick for tick in (first + interval * k for k in range(int((last - first) / interval)))
            if tick not in covered]


def off_grid(covered: set[datetime], interval: timedelta) -> list[datetime]:
    """Ticks that are not a whole number of intervals after the first covered one."""
    if not covered:
        return []
    first = min(covered)
    return sorted(tick for tick in covered if (tick - first) % interval)
