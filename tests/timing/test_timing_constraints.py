"""Constraints (start_at, end_at, only_between, not_on) filter nominal times; they never move them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recur_server.timing import MAX_RULED_OUT, Spec, TimingError, build_spec, preview
from recur_server.timing.base import Timing


def z(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def test_hourly_only_office_hours_never_on_weekends() -> None:
    spec = build_spec(
        {
            "cron": "0 * * * *",
            "timezone": "Europe/Berlin",
            "only_between": "08:00-18:00",
            "not_on": ["sat", "Sunday"],
        }
    )
    # Friday 2026-11-06 16:30 Berlin (CET, +1): 17:00 is the last run of the week, then Monday 08:00
    assert preview(spec, z(2026, 11, 6, 15, 30), 3) == [
        z(2026, 11, 6, 16),
        z(2026, 11, 9, 7),
        z(2026, 11, 9, 8),
    ]
    assert spec.describe() == (
        "Every hour, only between 08:00 and 18:00, not on Saturday, Sunday (Europe/Berlin)"
    )


def test_window_start_inclusive_end_exclusive() -> None:
    spec = build_spec({"cron": "0 * * * *", "only_between": "08:00-10:00"})
    assert preview(spec, z(2026, 1, 1, 7, 59), 3) == [z(2026, 1, 1, 8), z(2026, 1, 1, 9), z(2026, 1, 2, 8)]


def test_overnight_window() -> None:
    spec = build_spec({"cron": "0 * * * *", "only_between": "22:00-02:00", "timezone": "Asia/Kolkata"})
    # Kolkata is +05:30: 22:00, 23:00, 00:00, 01:00 local = 16:30, 17:30, 18:30, 19:30 UTC
    assert preview(spec, z(2026, 1, 1, 12), 5) == [
        z(2026, 1, 1, 16, 30),
        z(2026, 1, 1, 17, 30),
        z(2026, 1, 1, 18, 30),
        z(2026, 1, 1, 19, 30),
        z(2026, 1, 2, 16, 30),
    ]


def test_not_on_uses_cron_numbers_sunday_zero() -> None:
    spec = build_spec({"cron": "0 12 * * *", "not_on": [0, 6]})
    # 2026-01-03 is a Saturday, 2026-01-04 a Sunday
    assert preview(spec, z(2026, 1, 2, 13), 2) == [z(2026, 1, 5, 12), z(2026, 1, 6, 12)]
    assert build_spec({"cron": "0 12 * * *", "not_on": [7]}).next_after(z(2026, 1, 3, 13)) == z(
        2026, 1, 5, 12
    )


def test_ruled_out_times_are_passed_over_not_moved() -> None:
    # every 7 minutes from 07:58: 08:05 is the first slot inside the window, not 08:00
    spec = build_spec(
        {"interval_seconds": 420, "anchor_at": z(2026, 1, 1, 7, 58), "only_between": "08:00-09:00"}
    )
    assert spec.next_after(z(2026, 1, 1, 7, 58)) == z(2026, 1, 1, 8, 5)


def test_start_and_end() -> None:
    spec = build_spec(
        {
            "interval_seconds": 3600,
            "anchor_at": z(2026, 1, 1),
            "start_at": z(2026, 1, 1, 5, 30),
            "end_at": z(2026, 1, 1, 8),
        }
    )
    assert preview(spec, z(2025, 12, 1), 10) == [z(2026, 1, 1, 6), z(2026, 1, 1, 7), z(2026, 1, 1, 8)]
    assert spec.next_after(z(2026, 1, 1, 8)) is None
    assert spec.next_after(z(2027, 1, 1)) is None


def test_a_start_less_than_a_second_after_a_slot_of_a_sub_second_grid_still_finds_the_next_slot() -> None:
    """An interval anchored at its creation instant keeps its milliseconds; a start_at a whole number of
    intervals later (whole seconds) then falls just after a slot. That slot is ruled out, and the search
    must go on past it rather than come back to it until it gives up."""
    anchor = z(2026, 1, 1, 10, 3, 33) + timedelta(milliseconds=975)
    spec = build_spec({"interval_seconds": 60, "anchor_at": anchor, "start_at": z(2026, 1, 1, 10, 8, 34)})
    assert spec.next_after(anchor) == anchor + timedelta(minutes=6)
    assert preview(spec, anchor, 2) == [anchor + timedelta(minutes=6), anchor + timedelta(minutes=7)]


def test_start_equal_to_a_slot_is_included() -> None:
    spec = build_spec({"cron": "0 * * * *", "start_at": z(2026, 1, 1, 5)})
    assert spec.next_after(z(2025, 1, 1)) == z(2026, 1, 1, 5)


def test_window_on_dst_gap_day() -> None:
    # New York 2024-03-10: 02:00-03:00 does not exist; a 02:00-04:00 window opens at 03:00 EDT
    spec = build_spec({"cron": "*/30 * * * *", "timezone": "America/New_York", "only_between": "02:00-04:00"})
    assert preview(spec, z(2024, 3, 10, 6), 3) == [
        z(2024, 3, 10, 7),
        z(2024, 3, 10, 7, 30),
        z(2024, 3, 11, 6),
    ]


@dataclass
class CountingTiming:
    """Wraps a timing and counts how often the search asks it for a candidate."""

    inner: Timing
    calls: list[datetime] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return self.inner.kind

    @property
    def is_one_shot(self) -> bool:
        return self.inner.is_one_shot

    def next_after(self, instant: datetime) -> datetime | None:
        self.calls.append(instant)
        return self.inner.next_after(instant)

    def minutes_of_day(self) -> None:
        return None  # tells no times of day: the search itself is what these tests count

    def describe(self) -> str:
        return self.inner.describe()


def counted(fields: dict[str, Any]) -> tuple[Spec, CountingTiming]:
    spec = build_spec(fields)
    counter = CountingTiming(spec.timing)
    return Spec(counter, spec.constraints, spec.jitter_seconds), counter


def test_every_second_in_one_hour_window_jumps_instead_of_crawling() -> None:
    spec, counter = counted(
        {
            "interval_seconds": 1,
            "anchor_at": z(2026, 1, 1),
            "only_between": "08:00-09:00",
            "not_on": ["sat", "sun"],
        }
    )
    # Friday 2026-01-02 09:00 -> Monday 08:00
    assert spec.next_after(z(2026, 1, 2, 9)) == z(2026, 1, 5, 8)
    assert len(counter.calls) <= 3


def test_excluded_weekend_skips_whole_days() -> None:
    spec, counter = counted({"cron": "* * * * *", "not_on": ["sat", "sun"]})
    assert spec.next_after(z(2026, 1, 3, 0, 0, 1)) == z(2026, 1, 5)
    assert len(counter.calls) <= 3


def test_search_is_bounded_by_ruled_out_candidates_not_by_years() -> None:
    # Only ever fires on 29 February that is a Monday: the next one (2044) is simply found.
    spec = build_spec({"cron": "0 0 29 2 1", "day_or": False})
    assert spec.next_after(z(2026, 1, 1)) == z(2044, 2, 29)
    # Daily at 03:00, only between 08:00 and 18:00: never. Bounded by ruled-out candidates, one a day.
    never, counter = counted({"cron": "0 3 * * *", "only_between": "08:00-18:00"})
    assert never.next_after(z(2026, 1, 1)) is None
    assert len(counter.calls) == MAX_RULED_OUT + 1


def test_one_shot_at() -> None:
    at = z(2026, 12, 1, 8)
    spec = build_spec({"at": at})
    assert spec.is_one_shot and spec.kind == "at"
    assert spec.next_after(at - timedelta(seconds=1)) == at
    assert spec.next_after(at) is None
    assert spec.describe() == "Once at 2026-12-01T08:00:00Z"
    # a one-shot outside its window or on an excluded day never fires
    assert build_spec({"at": at, "only_between": "09:00-10:00"}).next_after(z(2026, 1, 1)) is None


def test_inputs_in_other_zones_and_fractions_are_normalised() -> None:
    from zoneinfo import ZoneInfo

    tokyo = ZoneInfo("Asia/Tokyo")
    spec = build_spec({"interval_seconds": 60, "anchor_at": datetime(2026, 1, 1, 9, 0, 0, 500, tzinfo=tokyo)})
    result = spec.next_after(datetime(2026, 1, 1, 9, 0, 59, 999999, tzinfo=tokyo))
    assert result == z(2026, 1, 1, 0, 1) and result is not None
    assert result.tzinfo is UTC and result.microsecond == 0


def test_naive_instants_are_rejected() -> None:
    spec = build_spec({"cron": "* * * * *"})
    with pytest.raises(ValueError, match="timezone-aware"):
        spec.next_after(datetime(2026, 1, 1))
    with pytest.raises(TimingError) as caught:
        build_spec({"cron": "* * * * *", "start_at": datetime(2026, 1, 1)})
    assert caught.value.field == "start_at"


def test_horizon_counts_from_a_future_start() -> None:
    start = z(2035, 1, 1, 9)
    spec = build_spec({"cron": "0 9 * * *", "start_at": start})
    assert spec.next_after(z(2026, 1, 1)) == start


def test_an_interval_grid_keeps_its_anchors_milliseconds() -> None:
    anchor = z(2026, 1, 1, 9) + timedelta(milliseconds=250, microseconds=999)  # below a millisecond: dropped
    spec = build_spec({"interval_seconds": 10, "anchor_at": anchor})
    slot = z(2026, 1, 1, 9, 0, 10) + timedelta(milliseconds=250)
    # strictly after: the slot itself is not "after" the slot, a microsecond before it is
    assert spec.next_after(slot) == slot + timedelta(seconds=10)
    assert spec.next_after(slot - timedelta(microseconds=1)) == slot
    # before the anchor (negative elapsed time) the grid still lands on the anchor's phase
    assert spec.next_after(z(2026, 1, 1, 8, 59, 59)) == anchor.replace(microsecond=250_000)
    assert preview(spec, z(2026, 1, 1, 9, 0, 20), 2) == [slot + timedelta(seconds=10), slot + timedelta(seconds=20)]
    # calendar kinds are unchanged: whole seconds, strictly after a fractional instant
    cron = build_spec({"cron": "* * * * *"})
    assert cron.next_after(z(2026, 1, 1, 9, 0, 0) + timedelta(milliseconds=1)) == z(2026, 1, 1, 9, 1)
