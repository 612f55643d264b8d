"""harness/tick_grid.py: how the multi-host, rolling-upgrade and clock-skew tests account for a schedule's ticks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from harness.tick_grid import covered_ticks, lost_ticks, off_grid

START = datetime(2026, 11, 30, 15, 12, 32, 179000, tzinfo=UTC)
TWO = timedelta(seconds=2)


def _run(repeat: int, retry: int = 0, at: datetime | None = None) -> dict[str, Any]:
    due = at or START + TWO * repeat
    return {"scheduled_for": due.isoformat(), "repeat_number": repeat, "retry_number": retry, "reason": None,
            "ticks": None}


def test_a_retry_stands_for_its_ticks_grid_time_not_for_the_time_it_was_due() -> None:
    """A retry's row is due when its backoff ends, off the grid and possibly past ticks that have not run yet
    (a chain that is catching up): it covers its tick, which its first attempt's row already stands for. Taken
    for a tick of its own, it made the multi-host test report 18 ticks "with no row" that were still to run."""
    runs = [_run(n) for n in range(16)] + [_run(12, retry=1, at=START + timedelta(seconds=68.062))]
    covered = covered_ticks(runs, TWO)
    assert lost_ticks(covered, TWO) == []
    assert off_grid(covered, TWO) == []
    assert max(covered) == START + TWO * 15


def test_a_tick_with_no_row_between_two_that_have_one_is_lost() -> None:
    runs = [_run(n) for n in range(5) if n != 3]
    assert lost_ticks(covered_ticks(runs, TWO), TWO) == [START + TWO * 3]


def test_a_policys_row_stands_for_each_tick_of_its_gap() -> None:
    gap = {"scheduled_for": (START + TWO).isoformat(), "repeat_number": None, "retry_number": None,
           "reason": "overlap", "ticks": 3}
    runs = [_run(0), gap, _run(4)]
    assert lost_ticks(covered_ticks(runs, TWO), TWO) == []
