"""retry_delay, jitter_delay, parse_every, validate_not_past."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recur_server.timing import TimingError, jitter_delay, parse_every, retry_delay, validate_not_past

NOMINAL = datetime(2026, 3, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize(("retry", "expected"), [(1, 30), (2, 60), (3, 120), (4, 240), (5, 300), (50, 300)])
def test_retry_delay_doubles_then_caps_at_ten_intervals(retry: int, expected: int) -> None:
    assert retry_delay(30, retry) == expected


def test_retry_delay_rejects_bad_input() -> None:
    with pytest.raises(TimingError) as caught:
        retry_delay(30, 0)
    assert caught.value.field == "retry"
    with pytest.raises(TimingError) as caught:
        retry_delay(-1, 1)
    assert caught.value.field == "interval_seconds"


def test_jitter_same_tick_same_delay_and_varies_across_ticks() -> None:
    first = jitter_delay("sched-1", NOMINAL, 600, None)
    assert first == jitter_delay("sched-1", NOMINAL, 600, None)
    # the same instant written in another zone is the same tick
    from zoneinfo import ZoneInfo

    assert first == jitter_delay("sched-1", NOMINAL.astimezone(ZoneInfo("Asia/Tokyo")), 600, None)
    delays = {jitter_delay("sched-1", NOMINAL + timedelta(minutes=k), 600, None) for k in range(50)}
    assert len(delays) > 10
    assert (
        jitter_delay("sched-2", NOMINAL, 600, None) != first
        or jitter_delay("sched-3", NOMINAL, 600, None) != first
    )


def test_jitter_known_value_is_stable_across_processes() -> None:
    # pinned: SHA-256 of "abc|2026-03-01T12:00:00Z", first 8 bytes big-endian, mod 1000
    import hashlib

    digest = hashlib.sha256(b"abc|2026-03-01T12:00:00Z").digest()
    assert jitter_delay("abc", NOMINAL, 1000, None) == int.from_bytes(digest[:8], "big") % 1000


@given(
    schedule_id=st.text(max_size=20),
    minutes=st.integers(0, 10**6),
    jitter=st.integers(0, 7200),
    gap=st.one_of(st.none(), st.integers(1, 10000)),
)
def test_jitter_in_range_and_never_reaches_next_nominal(
    schedule_id: str, minutes: int, jitter: int, gap: int | None
) -> None:
    nominal = NOMINAL + timedelta(minutes=minutes)
    following = None if gap is None else nominal + timedelta(seconds=gap)
    delay = jitter_delay(schedule_id, nominal, jitter, following)
    assert 0 <= delay < max(jitter, 1)
    if following is not None:
        assert nominal + timedelta(seconds=delay) < following or delay == 0


def test_jitter_zero_and_bad_values() -> None:
    assert jitter_delay("x", NOMINAL, 0, None) == 0
    with pytest.raises(TimingError) as caught:
        jitter_delay("x", NOMINAL, -5, None)
    assert caught.value.field == "jitter_seconds"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("2h", 7200),
        ("1d", 86400),
        ("hourly", 3600),
        ("daily", 86400),
        ("weekly", 604800),
        (" 10M ", 600),
        ("2w", 1209600),
    ],
)
def test_parse_every(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "5", "5x", "-5m", "1.5h", "every day", "fortnightly"])
def test_parse_every_rejects(text: str) -> None:
    with pytest.raises(TimingError) as caught:
        parse_every(text)
    assert caught.value.field == "every"


def test_validate_not_past() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    validate_not_past(now + timedelta(seconds=1), now)
    with pytest.raises(TimingError) as caught:
        validate_not_past(now, now)
    assert caught.value.field == "at" and "not in the future" in caught.value.message
