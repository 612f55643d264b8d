"""Named calendars in the timing math: skip, shift_next and shift_previous, with literal datetimes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recur_server.timing import TimingError, build_spec, preview
from recur_server.timing.calendar_days import MAX_SHIFT_DAYS, CalendarRule, is_calendar_day


def spec(cron, days, mode="skip", timezone="UTC", **extra):
    return build_spec({"cron": cron, "timezone": timezone, "calendar_days": days, "on_calendar": mode, **extra})


def utc(*parts):
    return datetime(*parts, tzinfo=UTC)


def test_skip_passes_over_a_calendar_day():
    daily = spec("0 9 * * *", [date(2026, 12, 25)])
    assert preview(daily, utc(2026, 12, 24, 10), 2) == [utc(2026, 12, 26, 9), utc(2026, 12, 27, 9)]


def test_skip_reads_the_date_in_the_schedules_zone():
    # 23:30 in New York on the 24th is 04:30 UTC on the 25th: the 24th is not a calendar day, so it runs.
    late = spec("30 23 * * *", [date(2026, 12, 25)], timezone="America/New_York")
    assert preview(late, utc(2026, 12, 24, 12), 2) == [utc(2026, 12, 25, 4, 30), utc(2026, 12, 27, 4, 30)]


def test_shift_next_across_a_month_end_and_a_run_of_holidays():
    # The 31st at 09:00; 31 December and 1 January are calendar days: the tick runs on 2 January.
    month_end = spec("0 9 31 * *", [date(2026, 12, 31), date(2027, 1, 1)], "shift_next")
    assert preview(month_end, utc(2026, 11, 1), 2) == [utc(2027, 1, 2, 9), utc(2027, 1, 31, 9)]


def test_shift_next_over_consecutive_holidays_and_not_on_weekdays():
    # Thursdays at 09:00; 24-26 December 2026 (Thu-Sat) are calendar days and Sundays are not_on: Monday 28th.
    weekly = spec("0 9 * * 4", [date(2026, 12, 24), date(2026, 12, 25), date(2026, 12, 26)], "shift_next",
                  not_on=["sun"])
    assert preview(weekly, utc(2026, 12, 18), 3) == [utc(2026, 12, 28, 9), utc(2026, 12, 31, 9), utc(2027, 1, 7, 9)]


def test_shift_next_keeps_the_wall_clock_across_the_end_of_summer_time_in_berlin():
    # 24 October 2026 09:00 CEST (07:00 UTC); summer time ends on the 25th: the tick moves to Monday the 26th
    # at 09:00 CET, 08:00 UTC.
    yearly = spec("0 9 24 10 *", [date(2026, 10, 24), date(2026, 10, 25)], "shift_next", timezone="Europe/Berlin")
    assert preview(yearly, utc(2026, 10, 1), 1) == [utc(2026, 10, 26, 8)]


def test_shift_previous_keeps_the_wall_clock_across_the_start_of_summer_time_in_new_york():
    # Monday 9 March 2026 09:00 EDT is a calendar day; summer time began on Sunday the 8th (09:00 EDT = 13:00 UTC).
    # Saturday the 7th is EST: it is not reached, the 8th is free.
    daily = spec("0 9 9 3 *", [date(2026, 3, 9)], "shift_previous", timezone="America/New_York")
    assert preview(daily, utc(2026, 3, 1), 1) == [utc(2026, 3, 8, 13)]
    across = spec("0 9 9 3 *", [date(2026, 3, 8), date(2026, 3, 9)], "shift_previous", timezone="America/New_York")
    assert preview(across, utc(2026, 3, 1), 1) == [utc(2026, 3, 7, 14)]


def test_shift_previous_moves_a_month_start_back_into_the_old_year():
    first = spec("0 9 1 * *", [date(2027, 1, 1)], "shift_previous")
    assert preview(first, utc(2026, 12, 15), 2) == [utc(2026, 12, 31, 9), utc(2027, 2, 1, 9)]


def test_a_shifted_tick_onto_a_tick_of_its_own_is_one_run():
    daily = spec("0 9 * * *", [date(2026, 12, 25)], "shift_next")
    assert preview(daily, utc(2026, 12, 24, 10), 2) == [utc(2026, 12, 26, 9), utc(2026, 12, 27, 9)]
    back = spec("0 9 * * *", [date(2026, 12, 25)], "shift_previous")
    assert preview(back, utc(2026, 12, 23, 10), 2) == [utc(2026, 12, 24, 9), utc(2026, 12, 26, 9)]


def test_the_next_tick_is_found_from_inside_a_holiday_and_before_the_moved_time():
    # The chain plans from the tick it just ran, or from now: both may lie between a raw tick and where it moved.
    monthly = spec("0 9 25 * *", [date(2026, 12, 25)], "shift_next")
    assert monthly.next_after(utc(2026, 12, 25, 12)) == utc(2026, 12, 26, 9)
    assert monthly.next_after(utc(2026, 12, 26, 8)) == utc(2026, 12, 26, 9)
    assert monthly.next_after(utc(2026, 12, 26, 9)) == utc(2027, 1, 25, 9)


def test_a_tick_with_no_free_day_in_reach_is_dropped():
    closed = [date(2026, 7, 1) + timedelta(days=n) for n in range(MAX_SHIFT_DAYS + 1)]
    monthly = spec("0 9 1 * *", closed, "shift_next")  # 1 July to 1 August: 1 July's tick finds no day
    assert preview(monthly, utc(2026, 6, 15), 1) == [utc(2026, 8, 2, 9)]  # 1 August's finds the 2nd


def test_a_moved_tick_past_end_at_does_not_run():
    monthly = spec("0 9 1 * *", [date(2026, 8, 1)], "shift_next", end_at=utc(2026, 8, 1, 12))
    assert preview(monthly, utc(2026, 7, 15), 1) == []


def test_skip_through_a_long_closure_is_bounded_and_finds_the_day_after():
    closed = [date(2026, 1, 1) + timedelta(days=n) for n in range(400)]
    minutely = spec("* * * * *", closed)
    assert minutely.next_after(utc(2025, 12, 31, 23, 59)) == utc(2027, 2, 5, 0, 0)


def test_describe_and_errors():
    text = spec("0 9 * * 1-5", [date(2026, 12, 25)], "shift_next", timezone="Europe/Berlin").describe()
    assert "moved to the next day off the calendar (1 date)" in text and "Europe/Berlin" in text
    with pytest.raises(TimingError) as caught:
        spec("0 9 * * *", [date(2026, 12, 25)], "sideways")
    assert caught.value.field == "on_calendar"
    assert spec("0 9 * * *", None, "shift_next").calendar is None


def test_the_question_other_decisions_ask():
    days = frozenset({date(2026, 12, 25)})
    assert is_calendar_day(days, date(2026, 12, 25)) and not is_calendar_day(days, date(2026, 12, 24))
    rule = CalendarRule(days, "shift_next")
    berlin = ZoneInfo("Europe/Berlin")
    assert rule.moved(utc(2026, 12, 25, 8), berlin) == utc(2026, 12, 26, 8)
    assert rule.moved(utc(2026, 12, 24, 8), berlin) == utc(2026, 12, 24, 8)
    assert CalendarRule(days).moved(utc(2026, 12, 25, 8), berlin) is None


def _brute_force(cron, days, mode, tz, start, end):
    """Every raw tick in a long span, moved one by one: the set of fire times, sorted."""
    raw = spec(cron, None, timezone=tz)
    rule = CalendarRule(frozenset(days), mode)
    times, cursor = set(), start - timedelta(days=40)
    while (cursor := raw.next_after(cursor)) is not None and cursor < end + timedelta(days=40):
        moved = rule.moved(cursor, ZoneInfo(tz))
        if moved is not None:
            times.add(moved)
    return sorted(t for t in times if start < t < end)


@settings(max_examples=40, deadline=None)
@given(days=st.sets(st.integers(0, 60), max_size=25), mode=st.sampled_from(["skip", "shift_next", "shift_previous"]),
       cron=st.sampled_from(["0 9 * * *", "0 9,17 * * 1-5", "30 2 * * *", "0 */7 * * *", "0 9 1,15 * *"]),
       tz=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York"]), offset=st.integers(0, 40 * 24))
def test_next_after_agrees_with_moving_every_tick(days, mode, cron, tz, offset):
    base = date(2026, 10, 1)
    calendar = [base + timedelta(days=n) for n in days]
    start = utc(2026, 10, 1) + timedelta(hours=offset)
    end = start + timedelta(days=20)
    expected = _brute_force(cron, calendar, mode, tz, start, end)
    got = [t for t in preview(spec(cron, calendar, mode, timezone=tz), start, len(expected) + 1) if t < end]
    assert got == expected
