"""No horizon surprises: a valid timing whose next run is far away runs then; "no run" only when there is none.

Also: a default DTSTART (the creation instant) is never itself a run, and far-off or out-of-range instants
give None or a TimingError, never an OverflowError.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recur_server.timing import LATEST, MAX_RULED_OUT, TimingError, build_spec, preview, to_utc


def z(year: int, month: int = 1, day: int = 1, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


# --- far-away runs are found -----------------------------------------------------------------------------

def test_yearly_every_six_years_keeps_running() -> None:
    spec = build_spec({"rrule": "FREQ=YEARLY;INTERVAL=6", "anchor_at": z(2026, 3, 2, 12, 0, 1)})
    assert preview(spec, z(2026, 3, 2, 12, 0, 1), 3) == [
        z(2032, 3, 2, 12, 0, 1), z(2038, 3, 2, 12, 0, 1), z(2044, 3, 2, 12, 0, 1)]


def test_a_one_shot_in_2033_is_found() -> None:
    assert build_spec({"at": z(2033, 1, 1)}).next_after(z(2026, 3, 2)) == z(2033, 1, 1)


def test_a_ten_year_interval_is_found() -> None:
    spec = build_spec({"interval_seconds": 316_224_000, "anchor_at": z(2026, 3, 2)})
    assert spec.next_after(z(2026, 3, 2)) == z(2026, 3, 2) + timedelta(seconds=316_224_000)


def test_a_cron_that_matches_once_in_28_years_is_found() -> None:
    # 29 February that is a Monday: 2044, then 2072.
    spec = build_spec({"cron": "0 0 29 2 1", "day_or": False})
    assert preview(spec, z(2026), 2) == [z(2044, 2, 29), z(2072, 2, 29)]


def test_a_window_that_matches_only_years_later_is_found() -> None:
    # Every 2 years on 2 March, and only on a Sunday: the first such 2 March is in 2036.
    spec = build_spec({"rrule": "FREQ=YEARLY;INTERVAL=2", "anchor_at": z(2026, 3, 2, 12, 0, 1),
                       "not_on": ["mon", "tue", "wed", "thu", "fri", "sat"]})
    assert spec.next_after(z(2026, 3, 2, 12, 0, 1)) == z(2036, 3, 2, 12, 0, 1)


@settings(max_examples=200, deadline=None)
@given(
    seconds=st.integers(1, 316_224_000),
    anchor=st.datetimes(datetime(1970, 1, 1), datetime(2999, 1, 1), timezones=st.just(UTC)),
    after=st.datetimes(datetime(1970, 1, 1), datetime(2999, 12, 31, 23, 59, 59), timezones=st.just(UTC)),
)
def test_an_interval_always_has_a_next_run_inside_the_range(seconds: int, anchor: datetime, after: datetime) -> None:
    spec = build_spec({"interval_seconds": seconds, "anchor_at": anchor})
    following = spec.next_after(after)
    if following is None:
        assert to_utc(after) + timedelta(seconds=seconds) >= LATEST
    else:
        assert to_utc(after) < following <= to_utc(after) + timedelta(seconds=seconds)


@settings(max_examples=100, deadline=None)
@given(interval=st.integers(1, 60), year=st.integers(1970, 2900))
def test_yearly_rules_of_any_interval_run_until_the_range_ends(interval: int, year: int) -> None:
    spec = build_spec({"rrule": f"FREQ=YEARLY;INTERVAL={interval}", "anchor_at": z(1970, 6, 1)})
    following = spec.next_after(z(year))
    expected = 1970
    while z(expected, 6, 1) <= z(year):
        expected += interval
    assert following == (z(expected, 6, 1) if z(expected, 6, 1) < LATEST else None)


# --- "no run" only when there truly is none ---------------------------------------------------------------

def test_count_until_and_end_at_end_a_schedule() -> None:
    anchor = z(2026, 1, 1, 9)
    assert build_spec({"rrule": "FREQ=YEARLY;COUNT=2", "anchor_at": anchor}).next_after(z(2027, 1, 1, 9)) is None
    until = build_spec({"rrule": "FREQ=YEARLY;UNTIL=20400101T000000Z", "anchor_at": anchor})
    assert until.next_after(z(2039, 1, 1, 9)) is None
    ended = build_spec({"interval_seconds": 86400 * 3650, "anchor_at": anchor, "end_at": z(2030)})
    assert ended.next_after(anchor) is None
    assert build_spec({"at": z(2033)}).next_after(z(2033)) is None


def test_a_combination_that_never_matches_gives_up_after_the_documented_bound() -> None:
    # Daily at 03:00 but only between 08:00 and 18:00: never. Each ruled-out candidate costs one step.
    spec = build_spec({"cron": "0 3 * * *", "only_between": "08:00-18:00"})
    assert spec.next_after(z(2026, 3, 2)) is None
    assert 1000 <= MAX_RULED_OUT <= 10_000


def test_nothing_runs_at_or_after_the_end_of_the_supported_range() -> None:
    assert z(3000) == LATEST
    assert build_spec({"at": z(2999, 12, 31, 23, 59, 59)}).next_after(z(2999)) == z(2999, 12, 31, 23, 59, 59)
    assert build_spec({"cron": "0 0 1 1 *"}).next_after(z(2999, 6, 1)) is None
    assert build_spec({"interval_seconds": 60, "anchor_at": z(2026)}).next_after(z(2999, 12, 31, 23, 59)) is None


# --- out-of-range instants: None or TimingError, never OverflowError ---------------------------------------

@pytest.mark.parametrize("fields", [
    {"interval_seconds": 60, "anchor_at": z(2026), "start_at": datetime(9999, 12, 31, tzinfo=UTC)},
    {"interval_seconds": 316_224_000, "anchor_at": datetime(9999, 1, 1, tzinfo=UTC)},
    {"rrule": "FREQ=YEARLY", "anchor_at": datetime(9999, 12, 31, tzinfo=UTC)},
    {"cron": "0 0 * * *", "start_at": datetime(9999, 12, 31, 23, 59, tzinfo=UTC), "timezone": "Pacific/Kiritimati"},
    {"at": datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)},
    {"cron": "* * * * *", "end_at": datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), "only_between": "08:00-09:00"},
])
def test_stored_far_future_values_give_no_run_instead_of_an_overflow(fields: dict[str, object]) -> None:
    spec = build_spec(fields)
    assert spec.next_after(z(2026)) is None or spec.next_after(z(2026)) < LATEST  # type: ignore[operator]
    assert spec.next_after(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)) is None
    assert preview(spec, datetime(9999, 12, 31, tzinfo=UTC), 3) == []
    assert spec.describe()


@pytest.mark.parametrize("value", [
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
    datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-14))),
])
def test_instants_whose_offset_leaves_the_calendar_are_a_timing_error(value: datetime) -> None:
    with pytest.raises(TimingError) as caught:
        to_utc(value, "start_at")
    assert caught.value.field == "start_at"
    with pytest.raises(TimingError):
        build_spec({"cron": "* * * * *", "start_at": value})


# --- a default DTSTART is not a run -------------------------------------------------------------------

@pytest.mark.parametrize(("rule", "first"), [
    ("FREQ=YEARLY", z(2027, 3, 2, 12, 0, 1)),
    ("FREQ=DAILY", z(2026, 3, 3, 12, 0, 1)),
    ("FREQ=SECONDLY", z(2026, 3, 2, 12, 0, 2)),
    ("FREQ=WEEKLY;BYDAY=MO", z(2026, 3, 9, 12, 0, 1)),  # 2 March 2026 is a Monday
])
def test_a_default_dtstart_is_never_itself_a_run(rule: str, first: datetime) -> None:
    created = z(2026, 3, 2, 12, 0, 1)  # the creation instant, rounded up to the whole second
    spec = build_spec({"rrule": rule, "anchor_at": created, "anchor_explicit": False})
    assert spec.next_after(created - timedelta(milliseconds=750)) == first


def test_an_explicit_anchor_is_a_run_as_rfc_5545_says() -> None:
    anchor = z(2026, 3, 2, 12)
    spec = build_spec({"rrule": "FREQ=DAILY", "anchor_at": anchor, "anchor_explicit": True})
    assert spec.next_after(anchor - timedelta(seconds=1)) == anchor


def test_count_counts_runs_when_the_dtstart_is_a_default() -> None:
    created = z(2026, 3, 2, 12, 0, 1)
    spec = build_spec({"rrule": "FREQ=DAILY;COUNT=3", "anchor_at": created, "anchor_explicit": False})
    assert preview(spec, created - timedelta(seconds=1), 10) == [created + timedelta(days=d) for d in (1, 2, 3)]
    # A rule whose DTSTART is not an occurrence anyway keeps its COUNT.
    weekly = build_spec({"rrule": "FREQ=WEEKLY;BYDAY=FR;COUNT=2", "anchor_at": created, "anchor_explicit": False})
    assert preview(weekly, created, 10) == [z(2026, 3, 6, 12, 0, 1), z(2026, 3, 13, 12, 0, 1)]
