"""Table tests pinning every DST rule: local clock kept, gap -> first instant after it, overlap -> first
occurrence, one run per wall-clock hour, exact elapsed time for sub-day intervals.

2024 changes used: New York 10 Mar 02:00 EST->03:00 EDT (07:00Z), 3 Nov 02:00 EDT->01:00 EST (06:00Z);
Berlin 31 Mar 02:00->03:00 (01:00Z), 27 Oct 03:00->02:00 (01:00Z); Lord Howe 7 Apr 02:00 (+11)->01:30
(+10:30) at 6 Apr 15:00Z, 6 Oct 02:00 (+10:30)->02:30 (+11) at 5 Oct 15:30Z; Kolkata never changes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from recur_server.timing import build_spec, preview

NY, BERLIN, LORD_HOWE, KOLKATA = "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"


def z(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """A literal UTC instant."""
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


CRON_CASES = [
    # daily 09:00 keeps 09:00 local across the change
    ("0 9 * * *", NY, z(2024, 3, 9), [z(2024, 3, 9, 14), z(2024, 3, 10, 13), z(2024, 3, 11, 13)]),
    ("0 9 * * *", NY, z(2024, 11, 2), [z(2024, 11, 2, 13), z(2024, 11, 3, 14), z(2024, 11, 4, 14)]),
    ("0 9 * * *", BERLIN, z(2024, 3, 30), [z(2024, 3, 30, 8), z(2024, 3, 31, 7), z(2024, 4, 1, 7)]),
    ("0 9 * * *", BERLIN, z(2024, 10, 26), [z(2024, 10, 26, 7), z(2024, 10, 27, 8), z(2024, 10, 28, 8)]),
    (
        "0 9 * * *",
        LORD_HOWE,
        z(2024, 4, 5),
        [z(2024, 4, 5, 22), z(2024, 4, 6, 22, 30), z(2024, 4, 7, 22, 30)],
    ),
    (
        "0 9 * * *",
        LORD_HOWE,
        z(2024, 10, 4),
        [z(2024, 10, 4, 22, 30), z(2024, 10, 5, 22), z(2024, 10, 6, 22)],
    ),
    (
        "0 9 * * *",
        KOLKATA,
        z(2024, 3, 9),
        [z(2024, 3, 9, 3, 30), z(2024, 3, 10, 3, 30), z(2024, 3, 11, 3, 30)],
    ),
    # a wall time in the gap runs once, at the first instant after the gap
    ("30 2 * * *", NY, z(2024, 3, 9, 12), [z(2024, 3, 10, 7), z(2024, 3, 11, 6, 30)]),
    ("*/15 2 * * *", NY, z(2024, 3, 9, 12), [z(2024, 3, 10, 7), z(2024, 3, 11, 6), z(2024, 3, 11, 6, 15)]),
    ("30 2 * * *", BERLIN, z(2024, 3, 30, 12), [z(2024, 3, 31, 1), z(2024, 4, 1, 0, 30)]),
    ("15 2 * * *", LORD_HOWE, z(2024, 10, 5), [z(2024, 10, 5, 15, 30), z(2024, 10, 6, 15, 15)]),
    # a wall time in the overlap runs once, at its first occurrence
    ("30 1 * * *", NY, z(2024, 11, 2, 12), [z(2024, 11, 3, 5, 30), z(2024, 11, 4, 6, 30)]),
    ("30 2 * * *", BERLIN, z(2024, 10, 26, 12), [z(2024, 10, 27, 0, 30), z(2024, 10, 28, 1, 30)]),
    ("45 1 * * *", LORD_HOWE, z(2024, 4, 6), [z(2024, 4, 6, 14, 45), z(2024, 4, 7, 15, 15)]),
    # hourly: once per wall-clock hour
    ("0 * * * *", NY, z(2024, 11, 3, 4, 30), [z(2024, 11, 3, 5), z(2024, 11, 3, 7), z(2024, 11, 3, 8)]),
    ("0 * * * *", NY, z(2024, 3, 10, 5, 30), [z(2024, 3, 10, 6), z(2024, 3, 10, 7), z(2024, 3, 10, 8)]),
    (
        "0 * * * *",
        BERLIN,
        z(2024, 10, 26, 23, 30),
        [z(2024, 10, 27, 0), z(2024, 10, 27, 2), z(2024, 10, 27, 3)],
    ),
    ("0 * * * *", BERLIN, z(2024, 3, 30, 23, 30), [z(2024, 3, 31, 0), z(2024, 3, 31, 1), z(2024, 3, 31, 2)]),
    (
        "0 * * * *",
        LORD_HOWE,
        z(2024, 4, 6, 13, 30),
        [z(2024, 4, 6, 14), z(2024, 4, 6, 15, 30), z(2024, 4, 6, 16, 30)],
    ),
    (
        "0 * * * *",
        LORD_HOWE,
        z(2024, 10, 5, 14),
        [z(2024, 10, 5, 14, 30), z(2024, 10, 5, 15, 30), z(2024, 10, 5, 16)],
    ),
    ("0 * * * *", KOLKATA, z(2024, 3, 10, 5, 45), [z(2024, 3, 10, 6, 30), z(2024, 3, 10, 7, 30)]),
]


@pytest.mark.parametrize(("cron", "zone", "start", "expected"), CRON_CASES)
def test_cron_dst_rules(cron: str, zone: str, start: datetime, expected: list[datetime]) -> None:
    assert preview(build_spec({"cron": cron, "timezone": zone}), start, len(expected)) == expected


RRULE_CASES = [
    # (rule, zone, anchor, start, expected)
    (
        "FREQ=DAILY",
        NY,
        z(2024, 3, 1, 14),
        z(2024, 3, 9),
        [z(2024, 3, 9, 14), z(2024, 3, 10, 13), z(2024, 3, 11, 13)],
    ),
    ("FREQ=DAILY", NY, z(2024, 10, 1, 13), z(2024, 11, 2), [z(2024, 11, 2, 13), z(2024, 11, 3, 14)]),
    (
        "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
        NY,
        z(2024, 3, 1, 12),
        z(2024, 3, 9, 12),
        [z(2024, 3, 10, 7), z(2024, 3, 11, 6, 30)],
    ),
    (
        "FREQ=MINUTELY;INTERVAL=15;BYHOUR=2",
        NY,
        z(2024, 3, 1, 7),
        z(2024, 3, 9, 12),
        [z(2024, 3, 10, 7), z(2024, 3, 11, 6), z(2024, 3, 11, 6, 15)],
    ),
    (
        "FREQ=DAILY;BYHOUR=1;BYMINUTE=30",
        NY,
        z(2024, 10, 1, 12),
        z(2024, 11, 2, 12),
        [z(2024, 11, 3, 5, 30), z(2024, 11, 4, 6, 30)],
    ),
    ("FREQ=HOURLY", NY, z(2024, 11, 1, 4), z(2024, 11, 3, 4, 30), [z(2024, 11, 3, 5), z(2024, 11, 3, 7)]),
    (
        "FREQ=HOURLY",
        NY,
        z(2024, 3, 1, 5),
        z(2024, 3, 10, 5, 30),
        [z(2024, 3, 10, 6), z(2024, 3, 10, 7), z(2024, 3, 10, 8)],
    ),
    ("FREQ=DAILY", BERLIN, z(2024, 3, 1, 8), z(2024, 3, 30), [z(2024, 3, 30, 8), z(2024, 3, 31, 7)]),
    (
        "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
        BERLIN,
        z(2024, 3, 1),
        z(2024, 3, 30, 12),
        [z(2024, 3, 31, 1), z(2024, 4, 1, 0, 30)],
    ),
    (
        "FREQ=DAILY;BYHOUR=2;BYMINUTE=30",
        BERLIN,
        z(2024, 10, 1),
        z(2024, 10, 26, 12),
        [z(2024, 10, 27, 0, 30), z(2024, 10, 28, 1, 30)],
    ),
    (
        "FREQ=HOURLY",
        BERLIN,
        z(2024, 10, 1),
        z(2024, 10, 26, 23, 30),
        [z(2024, 10, 27, 0), z(2024, 10, 27, 2)],
    ),
    (
        "FREQ=DAILY",
        LORD_HOWE,
        z(2024, 9, 1, 22, 30),
        z(2024, 10, 4),
        [z(2024, 10, 4, 22, 30), z(2024, 10, 5, 22)],
    ),
    (
        "FREQ=DAILY;BYHOUR=2;BYMINUTE=15",
        LORD_HOWE,
        z(2024, 9, 1),
        z(2024, 10, 5),
        [z(2024, 10, 5, 15, 30), z(2024, 10, 6, 15, 15)],
    ),
    (
        "FREQ=DAILY;BYHOUR=1;BYMINUTE=45",
        LORD_HOWE,
        z(2024, 3, 1),
        z(2024, 4, 6),
        [z(2024, 4, 6, 14, 45), z(2024, 4, 7, 15, 15)],
    ),
    (
        "FREQ=HOURLY",
        LORD_HOWE,
        z(2024, 3, 1, 13),
        z(2024, 4, 6, 13, 30),
        [z(2024, 4, 6, 14), z(2024, 4, 6, 15, 30), z(2024, 4, 6, 16, 30)],
    ),
    (
        "FREQ=DAILY",
        KOLKATA,
        z(2024, 3, 1, 3, 30),
        z(2024, 3, 9),
        [z(2024, 3, 9, 3, 30), z(2024, 3, 10, 3, 30)],
    ),
]


@pytest.mark.parametrize(("rule", "zone", "anchor", "start", "expected"), RRULE_CASES)
def test_rrule_dst_rules(
    rule: str, zone: str, anchor: datetime, start: datetime, expected: list[datetime]
) -> None:
    spec = build_spec({"rrule": rule, "timezone": zone, "anchor_at": anchor})
    assert preview(spec, start, len(expected)) == expected


INTERVAL_CASES: list[tuple[int, str, datetime, datetime, list[datetime]]] = [
    # shorter than a day: exact elapsed time in UTC, whatever the local clock does
    (
        3600,
        NY,
        z(2024, 3, 10, 5),
        z(2024, 3, 10, 5),
        [z(2024, 3, 10, 6), z(2024, 3, 10, 7), z(2024, 3, 10, 8)],
    ),
    (
        3600,
        NY,
        z(2024, 11, 3, 4),
        z(2024, 11, 3, 4),
        [z(2024, 11, 3, 5), z(2024, 11, 3, 6), z(2024, 11, 3, 7)],
    ),
    (
        5400,
        BERLIN,
        z(2024, 10, 26, 23),
        z(2024, 10, 26, 23),
        [z(2024, 10, 27, 0, 30), z(2024, 10, 27, 2), z(2024, 10, 27, 3, 30)],
    ),
    (1800, LORD_HOWE, z(2024, 10, 5, 14), z(2024, 10, 5, 15), [z(2024, 10, 5, 15, 30), z(2024, 10, 5, 16)]),
    (90000, NY, z(2024, 3, 9, 14), z(2024, 3, 9, 14), [z(2024, 3, 10, 15), z(2024, 3, 11, 16)]),
    # the anchor may lie in the future: it still defines the earlier slots
    (3600, KOLKATA, z(2030, 1, 1, 0, 30), z(2024, 3, 10, 5), [z(2024, 3, 10, 5, 30), z(2024, 3, 10, 6, 30)]),
    # whole days keep the local clock time
    (86400, NY, z(2024, 3, 9, 14), z(2024, 3, 9, 14), [z(2024, 3, 10, 13), z(2024, 3, 11, 13)]),
    (86400, NY, z(2024, 11, 2, 13), z(2024, 11, 2, 13), [z(2024, 11, 3, 14), z(2024, 11, 4, 14)]),
    (172800, NY, z(2024, 3, 9, 14), z(2024, 3, 9, 14), [z(2024, 3, 11, 13), z(2024, 3, 13, 13)]),
    (86400, NY, z(2024, 3, 9, 7, 30), z(2024, 3, 9, 8), [z(2024, 3, 10, 7), z(2024, 3, 11, 6, 30)]),  # gap
    (
        86400,
        NY,
        z(2024, 11, 2, 5, 30),
        z(2024, 11, 2, 6),
        [z(2024, 11, 3, 5, 30), z(2024, 11, 4, 6, 30)],
    ),  # fold
    (86400, BERLIN, z(2024, 3, 30, 8), z(2024, 3, 30, 8), [z(2024, 3, 31, 7), z(2024, 4, 1, 7)]),
    (604800, BERLIN, z(2024, 10, 20, 7), z(2024, 10, 20, 7), [z(2024, 10, 27, 8), z(2024, 11, 3, 8)]),
    (
        86400,
        LORD_HOWE,
        z(2024, 10, 4, 22, 30),
        z(2024, 10, 4, 22, 30),
        [z(2024, 10, 5, 22), z(2024, 10, 6, 22)],
    ),
    (86400, LORD_HOWE, z(2024, 4, 5, 15), z(2024, 4, 6, 0), [z(2024, 4, 6, 15, 30), z(2024, 4, 7, 15, 30)]),
    (
        86400,
        KOLKATA,
        z(2024, 3, 9, 3, 30),
        z(2024, 3, 9, 3, 30),
        [z(2024, 3, 10, 3, 30), z(2024, 3, 11, 3, 30)],
    ),
    # a day-multiple in UTC is still elapsed-exact in UTC itself
    (86400, "UTC", z(2024, 3, 9, 9), z(2024, 3, 9, 9), [z(2024, 3, 10, 9), z(2024, 3, 11, 9)]),
]


@pytest.mark.parametrize(("seconds", "zone", "anchor", "start", "expected"), INTERVAL_CASES)
def test_interval_dst_rules(
    seconds: int, zone: str, anchor: datetime, start: datetime, expected: list[datetime]
) -> None:
    fields: dict[str, Any] = {"interval_seconds": seconds, "anchor_at": anchor, "timezone": zone}
    assert preview(build_spec(fields), start, len(expected)) == expected


def test_gap_ticks_collapse_and_never_repeat() -> None:
    spec = build_spec({"cron": "*/5 2-3 * * *", "timezone": NY})
    first = spec.next_after(z(2024, 3, 10, 6, 59))
    assert first == z(2024, 3, 10, 7)  # 02:00..02:55 and 03:00 all run once, at 03:00 EDT
    assert spec.next_after(first) == z(2024, 3, 10, 7, 5)


def test_instant_in_second_occurrence_of_overlap() -> None:
    # 01:30 EST (06:30Z) is the second 01:30 of the day: 01:30's run (05:30Z) is already past.
    spec = build_spec({"cron": "30 1 * * *", "timezone": NY})
    assert spec.next_after(z(2024, 11, 3, 6, 15)) == z(2024, 11, 4, 6, 30)
    hourly = build_spec({"cron": "0,30 * * * *", "timezone": NY})
    assert preview(hourly, z(2024, 11, 3, 6, 10), 2) == [z(2024, 11, 3, 7), z(2024, 11, 3, 7, 30)]
