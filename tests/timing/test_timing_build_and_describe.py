"""build_spec validation (every bad input names its field) and describe() wording."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from recur_server.timing import TimingError, build_spec

ANCHOR = datetime(2026, 11, 1, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    ("fields", "field", "fragment"),
    [
        ({}, "timing", "got none"),
        ({"cron": "* * * * *", "rrule": "FREQ=DAILY"}, "timing", "got cron and rrule"),
        (
            {"interval_seconds": 5, "cron": "* * * * *", "at": ANCHOR},
            "timing",
            "got interval_seconds, cron and at",
        ),
        ({"cron": "61 * * * *"}, "cron", "minute field value 61 out of range 0-59"),
        ({"cron": "0 24 * * *"}, "cron", "hour field value 24 out of range 0-23"),
        ({"cron": "0 0 0 * *"}, "cron", "day-of-month field value 0 out of range 1-31"),
        ({"cron": "0 0 * 13 *"}, "cron", "month field value 13 out of range 1-12"),
        ({"cron": "0 0 * * 8"}, "cron", "day-of-week field value 8 out of range 0-7"),
        ({"cron": "0 0 * * FUN"}, "cron", "cannot read"),
        ({"cron": "*/0 * * * *"}, "cron", "step 0"),
        ({"cron": "10-5 * * * *"}, "cron", "backwards"),
        ({"cron": "1,,2 * * * *"}, "cron", "empty"),
        ({"cron": "0 0 9 * * * 2030"}, "cron", "7 fields"),
        ({"cron": "0 9 * *"}, "cron", "expected 5 fields"),
        ({"cron": "@reboot"}, "cron", "@reboot"),
        ({"cron": "@fortnightly"}, "cron", "unknown macro"),
        ({"cron": "0 0 L * *"}, "cron", "unsupported"),
        ({"cron": "0 0 * * 5#3"}, "cron", "unsupported"),
        ({"cron": "0 0 30 2 *"}, "cron", "never occurs in February"),
        ({"cron": "0 0 * * *", "day_or": "no"}, "day_or", "true or false"),
        ({"interval_seconds": 0, "anchor_at": ANCHOR}, "interval_seconds", "at least 1"),
        ({"interval_seconds": 2.5, "anchor_at": ANCHOR}, "interval_seconds", "whole number"),
        ({"interval_seconds": 60}, "anchor_at", "anchor"),
        ({"at": datetime(2026, 1, 1)}, "at", "timezone-aware"),
        ({"at": "2026-01-01T00:00:00Z"}, "at", "expected a datetime"),
        ({"at": ANCHOR, "timezone": "Mars/Base"}, "timezone", "unknown time zone 'Mars/Base'"),
        ({"at": ANCHOR, "timezone": ""}, "timezone", "non-empty"),
        (
            {"at": ANCHOR, "start_at": ANCHOR, "end_at": datetime(2026, 1, 1, tzinfo=UTC)},
            "end_at",
            "before start_at",
        ),
        ({"at": ANCHOR, "end_at": datetime(2026, 1, 1)}, "end_at", "timezone-aware"),
        ({"at": ANCHOR, "only_between": "00:00-00:00"}, "only_between", "equal"),
        ({"at": ANCHOR, "only_between": "9-17"}, "only_between", "HH:MM-HH:MM"),
        ({"at": ANCHOR, "only_between": "08:00-24:00"}, "only_between", "hour 24 out of range 0-23"),
        ({"at": ANCHOR, "only_between": "08:60-10:00"}, "only_between", "minute 60 out of range 0-59"),
        ({"at": ANCHOR, "not_on": ["someday"]}, "not_on", "unknown weekday"),
        ({"at": ANCHOR, "not_on": [8]}, "not_on", "out of range"),
        ({"at": ANCHOR, "not_on": [True]}, "not_on", "weekday"),
        ({"at": ANCHOR, "not_on": list(range(7))}, "not_on", "every day"),
        ({"at": ANCHOR, "jitter_seconds": -1}, "jitter_seconds", "from 0"),
        ({"at": ANCHOR, "jitter_seconds": "5"}, "jitter_seconds", "whole number"),
    ],
)
def test_bad_input_names_its_field(fields: dict[str, Any], field: str, fragment: str) -> None:
    with pytest.raises(TimingError) as caught:
        build_spec(fields)
    assert caught.value.field == field
    assert fragment in caught.value.message
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == f"{field}: {caught.value.message}"


@pytest.mark.parametrize(
    ("cron", "expected"),
    [
        ("0 9 * * MON-FRI", "At 09:00, Monday through Friday"),
        ("0 9 * * 1-5", "At 09:00, Monday through Friday"),
        ("@daily", "At 00:00"),
        ("*/5 * * * *", "Every 5 minutes"),
    ],
)
def test_cron_describe(cron: str, expected: str) -> None:
    assert build_spec({"cron": cron, "timezone": "Europe/Berlin"}).describe() == f"{expected} (Europe/Berlin)"


def test_cron_names_and_sunday_seven() -> None:
    sunday = datetime(2026, 11, 1, tzinfo=UTC)  # a Sunday
    for cron in (
        "0 12 * * 0",
        "0 12 * * 7",
        "0 12 * * SUN",
        "0 12 * NOV SUN",
        "0 12 * * FRI-SUN",
        "0 12 * * 5-7",
    ):
        assert build_spec({"cron": cron}).next_after(sunday) == datetime(2026, 11, 1, 12, tzinfo=UTC), cron


def test_day_or_and() -> None:
    start = datetime(2026, 11, 1, tzinfo=UTC)
    either = build_spec({"cron": "0 0 13 * FRI"})
    both = build_spec({"cron": "0 0 13 * FRI", "day_or": False})
    assert either.next_after(start) == datetime(2026, 11, 6, tzinfo=UTC)  # first Friday
    assert both.next_after(start) == datetime(2026, 11, 13, tzinfo=UTC)  # next Friday the 13th
    assert both.next_after(datetime(2026, 11, 14, tzinfo=UTC)) == datetime(2027, 8, 13, tzinfo=UTC)
    assert "and only on Friday" in both.describe()


def test_rrule_describe_last_weekday() -> None:
    spec = build_spec(
        {
            "rrule": "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
            "anchor_at": ANCHOR,
            "timezone": "Europe/Berlin",
        }
    )
    assert (
        spec.describe()
        == "Every month, on the last matching day (Monday through Friday), at 09:00 (Europe/Berlin)"
    )


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE", "Every 2 weeks, on Monday, Wednesday, at 09:00"),
        ("FREQ=MONTHLY;BYDAY=2TU", "Every month, on the 2nd Tuesday, at 09:00"),
        (
            "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=18;BYMINUTE=30",
            "Every month, on the last day of the month, at 18:30",
        ),
        ("FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU", "Every year, on the last Sunday, in March, at 09:00"),
        ("FREQ=DAILY;COUNT=5", "Every day, at 09:00, 5 times in total"),
        ("FREQ=DAILY;UNTIL=20270101T000000Z", "Every day, at 09:00, until 2027-01-01T00:00:00Z"),
        ("FREQ=MINUTELY;INTERVAL=15", "Every 15 minutes"),
    ],
)
def test_rrule_describe(rule: str, expected: str) -> None:
    spec = build_spec({"rrule": rule, "anchor_at": ANCHOR, "timezone": "Europe/Berlin"})
    assert spec.describe() == f"{expected} (Europe/Berlin)"


def test_interval_and_constraint_describe() -> None:
    assert build_spec({"interval_seconds": 30, "anchor_at": ANCHOR}).describe() == "Every 30 seconds"
    assert build_spec({"interval_seconds": 5400, "anchor_at": ANCHOR}).describe() == "Every 90 minutes"
    daily = build_spec({"interval_seconds": 86400, "anchor_at": ANCHOR, "timezone": "Europe/Berlin"})
    assert daily.describe() == "Every day at 09:00 (Europe/Berlin)"
    full = build_spec(
        {
            "interval_seconds": 3600,
            "anchor_at": ANCHOR,
            "only_between": "22:00-06:00",
            "not_on": ["SAT"],
            "jitter_seconds": 30,
            "start_at": ANCHOR,
            "timezone": "Asia/Kolkata",
        }
    )
    assert full.describe() == (
        "Every hour, only between 22:00 and 06:00, not on Saturday, starting "
        "2026-11-01T08:00:00Z, with up to 30 s of jitter (Asia/Kolkata)"
    )
    assert full.jitter_seconds == 30 and full.kind == "interval" and not full.is_one_shot


def test_spec_is_immutable() -> None:
    import dataclasses

    spec = build_spec({"cron": "* * * * *"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.jitter_seconds = 5  # type: ignore[misc]
