"""Six-field cron, seconds first (Quartz, Spring, robfig/cron's seconds option): parsed, previewed across a
DST change and described; five fields keep their meaning. Literal datetimes, no clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from recur_server.timing import TimingError, build_spec

ANCHOR = datetime(2026, 11, 1, 8, tzinfo=UTC)


def _next(cron: str, after: datetime, count: int, tz: str = "UTC") -> list[datetime]:
    spec = build_spec({"cron": cron, "timezone": tz, "anchor_at": ANCHOR})
    out, at = [], after
    for _ in range(count):
        at = spec.next_after(at)
        out.append(at)
    return out


def test_every_five_seconds() -> None:
    start = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)
    assert _next("*/5 * * * * *", start, 4) == [start + timedelta(seconds=s) for s in (5, 10, 15, 20)]


def test_the_first_field_is_the_second_and_the_rest_read_as_five_fields_do() -> None:
    start = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)  # a Monday
    # 09:30:15 on weekdays: the same as "30 9 * * MON-FRI" with a second.
    assert _next("15 30 9 * * MON-FRI", start, 2) == [datetime(2026, 3, 2, 9, 30, 15, tzinfo=UTC),
                                                      datetime(2026, 3, 3, 9, 30, 15, tzinfo=UTC)]
    assert _next("0 30 9 * * ?", start, 1) == _next("30 9 * * *", start, 1)  # Quartz's '?' and second 0
    assert _next("30 9 * * *", start, 1) == [datetime(2026, 3, 2, 9, 30, tzinfo=UTC)]  # five: unchanged


def test_a_second_level_tick_in_a_spring_forward_gap_runs_at_the_gaps_end_once() -> None:
    paris = ZoneInfo("Europe/Paris")  # 2026-03-29: 02:00 -> 03:00 local
    before = datetime(2026, 3, 29, 1, 59, 50, tzinfo=paris).astimezone(UTC)
    ticks = _next("*/20 * 2 * * *", before, 2, "Europe/Paris")  # every 20 s of the 02:00 hour, which never is
    assert ticks[0] == datetime(2026, 3, 29, 3, 0, 0, tzinfo=paris).astimezone(UTC)  # the gap's ticks: one run
    assert ticks[1] == datetime(2026, 3, 30, 2, 0, 0, tzinfo=paris).astimezone(UTC)  # next day's 02:00:00


@pytest.mark.parametrize(("cron", "fragment"), [
    ("60 * * * * *", "second field value 60 out of range 0-59"),
    ("*/0 * * * * *", "second field: step 0"),
    ("0 0 9 * * * 2030", "7 fields"),
    ("x 0 9 * * *", "second field: cannot read"),
])
def test_a_bad_seconds_field_is_named(cron: str, fragment: str) -> None:
    with pytest.raises(TimingError) as caught:
        build_spec({"cron": cron, "anchor_at": ANCHOR})
    assert caught.value.field == "cron" and fragment in str(caught.value)


def test_describe_says_the_seconds() -> None:
    assert build_spec({"cron": "*/5 * * * * *", "anchor_at": ANCHOR}).describe() == "Every 5 seconds (UTC)"
    text = build_spec({"cron": "15 30 9 * * MON-FRI", "anchor_at": ANCHOR}).describe()
    assert "09:30:15" in text and "Monday through Friday" in text
