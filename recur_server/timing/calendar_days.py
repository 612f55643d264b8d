"""A schedule's calendar: a set of local dates its ticks skip (`skip`) or move off, to the same wall-clock
time on the next (`shift_next`) or previous (`shift_previous`) day that is neither in the set nor a `not_on`
weekday. Pure: the dates are an argument; the days are the schedule's own zone's.

A tick shifted onto a time the schedule fires at anyway (a daily tick moved onto the next day's) is one run:
the fire times are a set. A tick with no free day within MAX_SHIFT_DAYS is dropped, like a skipped one.

Public for other decisions (why a tick did not run): `is_calendar_day(days, day)`, and `CalendarRule.moved`
(where a raw tick of the timing runs: itself, moved, or None).
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from .errors import TimingError
from .wallclock import utc_to_wall, wall_to_utc
from .weekdays import cron_weekday

SKIP, SHIFT_NEXT, SHIFT_PREVIOUS = "skip", "shift_next", "shift_previous"
ON_CALENDAR = (SKIP, SHIFT_NEXT, SHIFT_PREVIOUS)
# How far a tick may move: a run of more calendar (or not_on) days than this drops the ticks inside it.
MAX_SHIFT_DAYS = 31
# Raw ticks examined for one answer: each calendar day costs one (its first tick), so this covers runs of
# calendar days far longer than any shift (a skip over a long closure) while bounding the work.
MAX_STEPS = 2_000
_DAY = timedelta(days=1)
_TICK = timedelta(milliseconds=1)  # the package's precision: "strictly after t" is t + 1 ms on
_SLACK = timedelta(hours=3)  # more than any zone's DST change, for jumps that must not pass a tick

RawNext = Callable[[datetime], "datetime | None"]


def is_calendar_day(days: Collection[date], day: date) -> bool:
    """Whether the local `day` is one of the calendar's dates (a tick on it is skipped or moved)."""
    return day in days


def parse_on_calendar(value: object) -> str:
    """What a schedule does on a calendar day; None means `skip`."""
    if value is None:
        return SKIP
    if not isinstance(value, str) or value not in ON_CALENDAR:
        raise TimingError("on_calendar", f"expected one of {', '.join(ON_CALENDAR)}, got {value!r}")
    return value


@dataclass(frozen=True)
class CalendarRule:
    """The calendar's dates, what a tick on one does, and the weekdays (cron numbers) a moved tick avoids."""

    days: frozenset[date]
    mode: str = SKIP
    not_on: frozenset[int] = frozenset()

    def is_off(self, day: date) -> bool:
        """A day no tick runs on: a calendar day, or a `not_on` weekday."""
        return day in self.days or cron_weekday(day.weekday()) in self.not_on

    def target_day(self, day: date) -> date | None:
        """The day a tick of the local `day` runs on: itself off the calendar; for a calendar day the next or
        previous day that is not off (within MAX_SHIFT_DAYS), or None (skip, or no such day)."""
        if day not in self.days:
            return day
        if self.mode == SKIP:
            return None
        step = _DAY if self.mode == SHIFT_NEXT else -_DAY
        candidate = day
        for _ in range(MAX_SHIFT_DAYS):
            try:
                candidate += step
            except OverflowError:
                return None
            if not self.is_off(candidate):
                return candidate
        return None

    def moved(self, tick: datetime, tz: ZoneInfo) -> datetime | None:
        """Where a raw tick (aware UTC) of the timing runs: itself, the same wall-clock time on its target day
        (a DST change in between keeps the wall-clock time), or None when the calendar drops it."""
        wall = utc_to_wall(tick, tz)
        target = self.target_day(wall.date())
        if target is None:
            return None
        if target == wall.date():
            return tick
        return wall_to_utc(datetime.combine(target, wall.time()), tz)

    def describe(self) -> str:
        """E.g. "moved to the next day off the calendar (24 dates)"."""
        count = f"{len(self.days)} date{'' if len(self.days) == 1 else 's'}"
        if self.mode == SKIP:
            return f"except on calendar days ({count})"
        way = "next" if self.mode == SHIFT_NEXT else "previous"
        return f"on calendar days moved to the {way} day off the calendar ({count})"

    def next_after(self, raw_next: RawNext, fits: Callable[[datetime], bool], instant: datetime,
                   tz: ZoneInfo) -> datetime | None:
        """The first fire time strictly after `instant`. `raw_next(t)` gives the timing's first tick after t
        that its other constraints allow; `fits(moved)` says whether a moved tick still may fire (start_at,
        end_at, window)."""
        if self.mode == SKIP:
            return _next_skipping(self, raw_next, instant, tz)
        if self.mode == SHIFT_NEXT:
            return _next_shifted_forward(self, raw_next, fits, instant, tz)
        return _next_shifted_back(self, raw_next, fits, instant, tz)


def _day_start(day: date, tz: ZoneInfo) -> datetime:
    return wall_to_utc(datetime.combine(day, time(0)), tz)


def _day_end(day: date, tz: ZoneInfo) -> datetime:
    """The last instant (to the package's precision) of the local `day`: after it, the next day's ticks."""
    return _day_start(day + _DAY, tz) - _TICK


def _same_clock_after(day: date, instant: datetime, tz: ZoneInfo) -> datetime:
    """A cursor on `day` before any tick whose wall-clock time, put on `instant`'s date, is after `instant`."""
    clock = utc_to_wall(instant, tz).time()
    return wall_to_utc(datetime.combine(day, clock), tz) - _SLACK


def _next_skipping(rule: CalendarRule, raw_next: RawNext, instant: datetime, tz: ZoneInfo) -> datetime | None:
    cursor = instant
    for _ in range(MAX_STEPS):
        tick = raw_next(cursor)
        if tick is None:
            return None
        day = utc_to_wall(tick, tz).date()
        if day not in rule.days:
            return tick
        cursor = max(_day_end(day, tz), tick)
    return None


def _candidate(rule: CalendarRule, tick: datetime, instant: datetime, tz: ZoneInfo
               ) -> tuple[datetime | None, datetime]:
    """A calendar day's tick moved, if that lands after `instant`; and the cursor to read the next tick from
    (its day's end once the day has given its earliest candidate: later ticks of it land later)."""
    day = utc_to_wall(tick, tz).date()
    target = rule.target_day(day)
    if target is None:
        return None, max(_day_end(day, tz), tick)
    moved = rule.moved(tick, tz)
    assert moved is not None
    if moved > instant:
        return moved, max(_day_end(day, tz), tick)
    home = utc_to_wall(instant, tz).date()
    if target < home:
        return None, max(_day_end(day, tz), tick)
    return None, max(_same_clock_after(day, instant, tz), tick)


def _next_shifted_forward(rule: CalendarRule, raw_next: RawNext, fits: Callable[[datetime], bool],
                          instant: datetime, tz: ZoneInfo) -> datetime | None:
    # A moved tick lands after its raw tick, so ticks of calendar days just before `instant` may land after
    # it: read from the start of the run of off days that ends on (or just before) instant's day.
    home = utc_to_wall(instant, tz).date()
    first = home
    day = home if home in rule.days else home - _DAY
    for _ in range(MAX_SHIFT_DAYS):
        if not rule.is_off(day):
            break
        first, day = day, day - _DAY
    cursor = instant if first == home and home not in rule.days else min(_day_start(first, tz) - _TICK, instant)
    best: datetime | None = None
    for _ in range(MAX_STEPS):
        tick = raw_next(cursor)
        if tick is None or (best is not None and tick >= best):
            break  # every later tick lands at or after itself: none comes before `best`
        if utc_to_wall(tick, tz).date() not in rule.days:
            if tick > instant:
                return tick if best is None else min(best, tick)
            cursor = instant
            continue
        moved, cursor = _candidate(rule, tick, instant, tz)
        if moved is not None and fits(moved):
            best = moved if best is None else min(best, moved)
    return best


def _next_shifted_back(rule: CalendarRule, raw_next: RawNext, fits: Callable[[datetime], bool],
                       instant: datetime, tz: ZoneInfo) -> datetime | None:
    # A moved tick lands before its raw tick, so only ticks after `instant` can land after it. Target days
    # never go backwards as raw days go forwards: once a tick's target passes the best's day, stop.
    cursor = instant
    best: datetime | None = None
    for _ in range(MAX_STEPS):
        tick = raw_next(cursor)
        if tick is None:
            break
        day = utc_to_wall(tick, tz).date()
        target = rule.target_day(day)
        if best is not None and target is not None and target > utc_to_wall(best, tz).date():
            break
        if target == day:
            best = tick if best is None else min(best, tick)
            cursor = max(_day_end(day, tz), tick)
            continue
        moved, cursor = _candidate(rule, tick, instant, tz)
        if moved is not None and fits(moved):
            best = moved if best is None else min(best, moved)
    return best
