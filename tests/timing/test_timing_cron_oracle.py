"""Property test: cron next_after against an independent brute-force oracle (no croniter involved).

The oracle builds each field's value set straight from the generated structure (no parser), walks
local wall-clock days/hours/minutes, and maps each matching wall time to UTC from zoneinfo's UTC->local
conversion alone: first occurrence for repeated wall times, the transition instant for wall times
skipped by a gap, collapsing duplicates.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recur_server.timing import TimingError, build_spec

ZONES = (
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "UTC",
    "Pacific/Chatham",
    "America/Santiago",
)
FIRES = 8  # successive fires compared per example
WINDOW = timedelta(days=8)  # ... within this span after the instant
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

# (low, high, names) per field; day of week allows 7 (= Sunday) in numeric input.
FIELD_SPECS = ((0, 59, None), (0, 23, None), (1, 31, None), (1, 12, MONTHS), (0, 7, DAYS))


# ---------------------------------------------------------------- expression generation (text + set)


@st.composite
def field_item(draw: st.DrawFn, index: int) -> tuple[str, set[int]]:
    """One list item of a field as (text, values). Values use the field's raw numbers (dow 7 kept)."""
    low, high, names = FIELD_SPECS[index]
    top = 6 if index == 4 else high  # '*' and 'a/n' for day of week end at Saturday

    def label(value: int) -> str:
        if names is not None and (index == 3 or value <= 6) and draw(st.booleans()):  # 7 stays numeric
            return names[(value - low) % len(names)] if index == 3 else names[value % 7]
        return str(value)

    kind = draw(st.sampled_from(["value", "range", "range_step", "star_step", "start_step"]))
    if kind == "value":
        value = draw(st.integers(low, high))
        return label(value), {value}
    if kind == "star_step":
        step = draw(st.integers(1, max(1, top - low)))
        return f"*/{step}", set(range(low, top + 1, step))
    if kind == "start_step":
        start = draw(st.integers(low, top))
        step = draw(st.integers(1, max(1, top - low)))
        return f"{start}/{step}", set(range(start, top + 1, step))
    first = draw(st.integers(low, high))
    last = draw(st.integers(first, high))
    if kind == "range":
        return f"{label(first)}-{label(last)}", set(range(first, last + 1))
    step = draw(st.integers(1, max(1, last - first + 1)))
    return f"{label(first)}-{label(last)}/{step}", set(range(first, last + 1, step))


@st.composite
def cron_field(draw: st.DrawFn, index: int, star_weight: int) -> tuple[str, frozenset[int], bool]:
    """A whole field: '*' or a comma list of items. Returns (text, value set, is_star)."""
    low, high, _ = FIELD_SPECS[index]
    if draw(st.integers(0, 9)) < star_weight:
        values = set(range(low, (6 if index == 4 else high) + 1))
        return "*", frozenset(values), True
    items = draw(st.lists(field_item(index), min_size=1, max_size=3))
    values = set().union(*(v for _, v in items))
    if index == 4:
        values = {v % 7 for v in values}
    return ",".join(t for t, _ in items), frozenset(values), False


@st.composite
def cron_case(draw: st.DrawFn) -> tuple[str, tuple[frozenset[int], ...], bool, bool]:
    """(expression, value sets, dom_star, dow_star); mostly-star date fields so fires are frequent."""
    minute = draw(cron_field(0, 2))
    hour = draw(cron_field(1, 4))
    dom = draw(cron_field(2, 6))
    month = draw(cron_field(3, 8))
    dow = draw(cron_field(4, 6))
    text = " ".join(f[0] for f in (minute, hour, dom, month, dow))
    return text, (minute[1], hour[1], dom[1], month[1], dow[1]), dom[2], dow[2]


# ---------------------------------------------------------------- zone facts from UTC->local only


@cache
def transitions(zone: str) -> tuple[tuple[datetime, timedelta, timedelta], ...]:
    """(instant, offset before, offset after) for every offset change 2023-2031, to the minute."""
    tz = ZoneInfo(zone)
    found = []
    probe = datetime(2023, 1, 1, tzinfo=UTC)
    step = timedelta(hours=6)
    while probe < datetime(2031, 6, 1, tzinfo=UTC):
        before, after = probe.astimezone(tz).utcoffset(), (probe + step).astimezone(tz).utcoffset()
        if before != after:
            moment = probe
            while moment.astimezone(tz).utcoffset() == before:
                moment += timedelta(minutes=1)
            assert before is not None and after is not None
            found.append((moment, before, after))
        probe += step
    return tuple(found)


@cache
def offsets(zone: str) -> frozenset[timedelta]:
    """Every UTC offset the zone uses 2023-2031."""
    tz = ZoneInfo(zone)
    found = {o for _, a, b in transitions(zone) for o in (a, b)}
    found.add(datetime(2027, 1, 1, tzinfo=UTC).astimezone(tz).utcoffset() or timedelta(0))
    return frozenset(found)


def wall_of(instant: datetime, tz: ZoneInfo) -> datetime:
    return instant.astimezone(tz).replace(tzinfo=None)


def oracle_utc(wall: datetime, tz: ZoneInfo, zone: str) -> datetime:
    """UTC instant a wall time runs at: earliest instant showing it, or the end of the gap skipping it."""
    shown = [u for u in (wall.replace(tzinfo=UTC) - off for off in offsets(zone)) if wall_of(u, tz) == wall]
    if shown:
        return min(shown)
    for moment, before, after in transitions(zone):
        if (moment + before).replace(tzinfo=None) <= wall < (moment + after).replace(tzinfo=None):
            return moment
    raise AssertionError(f"wall time {wall} neither shown nor in a gap")


def oracle_fires(
    case: tuple[str, tuple[frozenset[int], ...], bool, bool], day_or: bool, zone: str, instant: datetime
) -> list[datetime]:
    """First FIRES run instants in (instant, instant + WINDOW], by walking local wall time."""
    _, (minutes, hours, doms, months, dows), dom_star, dow_star = case
    tz = ZoneInfo(zone)
    limit = instant + WINDOW
    # Offsets in these zones change by at most an hour, so earlier wall times cannot run after `instant`.
    first_wall = wall_of(instant, tz) - timedelta(hours=3)
    day = first_wall.replace(hour=0, minute=0, second=0)
    fires: set[datetime] = set()
    last_wall = wall_of(limit, tz) + timedelta(hours=3)
    while day <= last_wall:
        if len(fires) >= FIRES:  # later wall times map later: a margin of 3 h past the last one is plenty
            last_wall = min(last_wall, wall_of(sorted(fires)[FIRES - 1], tz) + timedelta(hours=3))
        dom_ok, dow_ok = day.day in doms, (day.weekday() + 1) % 7 in dows
        both_restricted = not (dom_star or dow_star)
        day_ok = (dom_ok or dow_ok) if both_restricted and day_or else (dom_ok and dow_ok)
        if day_ok and day.month in months:
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    wall = day.replace(hour=hour, minute=minute)
                    if wall < first_wall or wall > last_wall:
                        continue
                    run = oracle_utc(wall, tz, zone)
                    if instant < run <= limit:
                        fires.add(run)
        day += timedelta(days=1)
    return sorted(fires)[:FIRES]


# ---------------------------------------------------------------- instants near DST changes


@st.composite
def instant_near_change(draw: st.DrawFn, zone: str) -> datetime:
    """Mostly within a few days before/after an offset change 2024-2030; sometimes anywhere."""
    changes = [m for m, _, _ in transitions(zone) if m.year >= 2024 and m.year <= 2030]
    if changes and draw(st.integers(0, 9)) < 8:
        base = draw(st.sampled_from(changes))
        seconds = draw(st.integers(-3 * 86400, 86400))
        if draw(st.booleans()):
            seconds -= seconds % 60  # exactly on a minute, often exactly on a candidate
        return base + timedelta(seconds=seconds)
    return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(seconds=draw(st.integers(0, 7 * 365 * 86400)))


@st.composite
def scenario(
    draw: st.DrawFn,
) -> tuple[tuple[str, tuple[frozenset[int], ...], bool, bool], bool, str, datetime]:
    zone = draw(st.sampled_from(ZONES))
    return draw(cron_case()), draw(st.booleans()), zone, draw(instant_near_change(zone))


# Days in each month in the longest year (a day-of-month that fits no listed month never fires).
_LONGEST_MONTHS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def never_on_a_real_date(cron: tuple[str, tuple[frozenset[int], ...], bool, bool], day_or: bool) -> bool:
    """The day-of-month field decides (it is restricted, and not OR-ed with a restricted weekday field)
    and none of its days exists in any of the listed months."""
    _, (_, _, days, months, _), dom_star, dow_star = cron
    if dom_star or (day_or and not dow_star):
        return False
    return not any(day <= _LONGEST_MONTHS[month - 1] for day in days for month in months)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_cron_matches_brute_force_oracle(
    case: tuple[tuple[str, tuple[frozenset[int], ...], bool, bool], bool, str, datetime],
) -> None:
    cron, day_or, zone, instant = case
    fields = {"cron": cron[0], "day_or": day_or, "timezone": zone}
    if never_on_a_real_date(cron, day_or):  # e.g. "* * 30 2 *": refused with a reason, not searched for years
        with pytest.raises(TimingError) as refused:
            build_spec(fields)
        assert refused.value.field == "cron" and "never occurs" in refused.value.message
        return
    expected = oracle_fires(cron, day_or, zone, instant)
    spec = build_spec(fields)
    got: list[datetime] = []
    cursor = instant
    while len(got) < FIRES:
        nxt = spec.next_after(cursor)
        if nxt is None or nxt > instant + WINDOW:
            break
        assert nxt > cursor, f"{cron[0]!r} in {zone}: {nxt} is not after {cursor}"
        assert nxt.tzinfo is UTC and nxt.microsecond == 0
        got.append(nxt)
        cursor = nxt
    assert got == expected, f"{cron[0]!r} day_or={day_or} in {zone} after {instant.isoformat()}"
