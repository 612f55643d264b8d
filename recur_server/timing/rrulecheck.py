"""Guards around dateutil.rrule: reject rules that can never fire, bound every search, rebase DTSTART.

dateutil walks period by period until year 9999 when every period is filtered out (e.g. 30 February),
which takes seconds; we detect such rules up front on a cheap YEARLY proxy of the rule's date filters.
What the proxy cannot see (INTERVAL steps that never land on an allowed day: FREQ=DAILY;INTERVAL=7;BYDAY=MO
from a Tuesday) the step budget of `bounded` cuts short.
Reads dateutil's normalised (underscore) attributes, which already include the defaults from DTSTART.
"""
from __future__ import annotations

import math
from collections import Counter
from datetime import date, datetime, timedelta
from typing import Any

from dateutil.rrule import DAILY, HOURLY, MINUTELY, MONTHLY, SECONDLY, WEEKLY, YEARLY, rrule, weekday

from .errors import TimingError
from .rruleparts import RRuleParts

_CYCLE_YEARS = 28  # the calendar (weekday of each date) repeats every 28 years within a century
_PERIODS = {WEEKLY: timedelta(weeks=1), DAILY: timedelta(days=1), HOURLY: timedelta(hours=1),
            MINUTELY: timedelta(minutes=1), SECONDLY: timedelta(seconds=1)}


# What dateutil raises on a rule it accepted but cannot iterate (FREQ=MINUTELY;INTERVAL=1440;BYHOUR=5 from
# noon: "Invalid combination of interval and byhour"), or at the edge of the calendar.
DATEUTIL_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError)

_WEEK = 7 * 86400
_UNIT_SECONDS = {DAILY: 86400, HOURLY: 3600, MINUTELY: 60, SECONDLY: 1}


def first_occurrence(rule: rrule, start: datetime) -> datetime | None:
    """The rule's first occurrence at or after `start` (None if it has none, e.g. UNTIL passed).

    TimingError("rrule") when dateutil fails while iterating: a request that validates a rule never answers
    500 for it. A rule that could walk to the year 9999 without a match is refused before this, by
    check_satisfiable (its date filters) and check_reachable (its INTERVAL against its filters).
    """
    try:
        return next(rule.xafter(start, inc=True), None)
    except DATEUTIL_ERRORS as error:
        raise TimingError("rrule", f"the rule cannot be evaluated ({error}); it may never match") from None


def check_reachable(rule: rrule) -> None:
    """Refuse a DAILY, HOURLY, MINUTELY or SECONDLY rule whose INTERVAL steps never land on a period that its
    BYDAY, BYHOUR, BYMINUTE or BYSECOND filters let through (FREQ=DAILY;INTERVAL=7;BYDAY=MO from a Tuesday:
    every period is a Tuesday). dateutil would walk period by period to the year 9999 looking for one.

    Periods start at DTSTART + n × INTERVAL units (in wall time). Their phases within a week, where all four
    filters repeat, are DTSTART's phase plus the multiples of g = gcd(INTERVAL units, one week); so a filter
    combination is reachable iff its phase differs from DTSTART's by a multiple of g. Whichever is shorter is
    enumerated: the reachable phases or the allowed combinations (at most a week of seconds, 604,800, and far
    fewer for any rule a person writes; a hit ends it)."""
    freq = _attr(rule, "_freq")
    unit = _UNIT_SECONDS.get(freq)
    if unit is None:
        return  # YEARLY, MONTHLY, WEEKLY: their BY parts expand a period instead of filtering it
    step = unit * (_attr(rule, "_interval") or 1)
    g = math.gcd(step, _WEEK)
    if g == 1:
        return  # every phase of the week is reached
    start: datetime = _attr(rule, "_dtstart")
    origin = start.weekday() * 86400 + start.hour * 3600 + start.minute * 60 + start.second
    # A BY part filters periods of this frequency when its unit is at least the frequency's.
    days = _attr(rule, "_byweekday")
    hours = _attr(rule, "_byhour") if freq in (HOURLY, MINUTELY, SECONDLY) else None
    minutes = _attr(rule, "_byminute") if freq in (MINUTELY, SECONDLY) else None
    seconds = _attr(rule, "_bysecond") if freq == SECONDLY else None
    if not (days or hours or minutes or seconds):
        return
    allowed_days = sorted(days) if days else range(7)
    allowed_hours = sorted(hours) if hours else range(24)
    allowed_minutes = sorted(minutes) if minutes else range(60)
    allowed_seconds = sorted(seconds) if seconds else range(60)
    combinations = len(allowed_days) * len(allowed_hours) * len(allowed_minutes) * len(allowed_seconds)
    if combinations <= _WEEK // g:
        for d in allowed_days:
            for h in allowed_hours:
                for m in allowed_minutes:
                    for sec in allowed_seconds:
                        if (d * 86400 + h * 3600 + m * 60 + sec - origin) % g == 0:
                            return
    else:
        day_set, hour_set = set(allowed_days), set(allowed_hours)
        minute_set, second_set = set(allowed_minutes), set(allowed_seconds)
        for k in range(_WEEK // g):
            phase = (origin + k * g) % _WEEK
            rest = phase % 86400
            if (phase // 86400 in day_set and rest // 3600 in hour_set and rest % 3600 // 60 in minute_set
                    and rest % 60 in second_set):
                return
    raise TimingError("rrule", f"its INTERVAL steps never land on a period its BYDAY/BYHOUR/BYMINUTE/BYSECOND "
                               f"allow (every period starts {g:,} s apart within the week from DTSTART's "
                               "phase), so it would never match")


def _attr(rule: rrule, name: str) -> Any:
    """A normalised rrule attribute, or None."""
    return getattr(rule, name, None)


def _proxy(rule: rrule, until: datetime | None) -> rrule:
    """A YEARLY rule with the same date filters at midnight: its days are the days the rule may use."""
    start: datetime = _attr(rule, "_dtstart")
    days = [weekday(w) for w in _attr(rule, "_byweekday") or ()]
    days += [weekday(w, n) for w, n in _attr(rule, "_bynweekday") or ()]
    months = _attr(rule, "_bymonth")
    if _attr(rule, "_freq") == MONTHLY and _attr(rule, "_bynweekday"):
        months = months or tuple(range(1, 13))  # ordinals count within the month
    monthdays = tuple(_attr(rule, "_bymonthday") or ()) + tuple(_attr(rule, "_bynmonthday") or ())
    return rrule(YEARLY, dtstart=start.replace(hour=0, minute=0, second=0, month=1, day=1),
                 bymonth=months or None, bymonthday=monthdays or None,
                 byyearday=_attr(rule, "_byyearday") or None, byweekno=_attr(rule, "_byweekno") or None,
                 byweekday=days or None, byeaster=_attr(rule, "_byeaster") or None, until=until)


def _times_per_day(rule: rrule) -> int:
    """Occurrences per matching day for the rule's time parts."""
    sizes = [len(_attr(rule, name) or ()) or 1 for name in ("_byhour", "_byminute", "_bysecond")]
    return sizes[0] * sizes[1] * sizes[2]


def _period_key(day: date, freq: int, wkst: int) -> tuple[int, ...]:
    """Which period (year, month or week) a day belongs to."""
    if freq == YEARLY:
        return (day.year,)
    if freq == MONTHLY:
        return (day.year, day.month)
    return (day - timedelta(days=(day.weekday() - wkst) % 7)).timetuple()[:3]


def _max_set_size(rule: rrule, days: list[datetime]) -> int:
    """Largest number of candidates in one period, the set BYSETPOS picks from."""
    freq = _attr(rule, "_freq")
    if freq in (YEARLY, MONTHLY, WEEKLY):
        counts = Counter(_period_key(d.date(), freq, _attr(rule, "_wkst") or 0) for d in days)
        return max(counts.values(), default=0) * _times_per_day(rule)
    if freq == DAILY:
        return _times_per_day(rule)
    if freq == HOURLY:
        return len(_attr(rule, "_byminute") or ()) * len(_attr(rule, "_bysecond") or ()) or 1
    if freq == MINUTELY:
        return len(_attr(rule, "_bysecond") or ()) or 1
    return 1


def check_satisfiable(rule: rrule, parts: RRuleParts) -> None:
    """Raise TimingError("rrule") when the rule can never produce an occurrence."""
    start: datetime = _attr(rule, "_dtstart")
    proxy = _proxy(rule, None)
    if proxy.after(start.replace(hour=0, minute=0, second=0), inc=True) is None:
        raise TimingError("rrule", "the rule never matches any date (check BYMONTH, BYMONTHDAY, BYDAY, ...)")
    positions = _attr(rule, "_bysetpos")
    if positions:
        window_end = start.replace(month=1, day=1) + timedelta(days=366 * _CYCLE_YEARS)
        days = list(_proxy(rule, window_end))
        size = _max_set_size(rule, days)
        if all(abs(p) > size for p in positions):
            raise TimingError("rrule", f"BYSETPOS={parts.get('BYSETPOS')} is never reached: "
                                       f"each period has at most {size} candidates")


def rebased_start(rule: rrule, wall: datetime) -> datetime | None:
    """A later DTSTART giving the same occurrences from `wall` on, to skip iterating from an old anchor.

    Shifting by whole multiples of INTERVAL periods keeps every alignment and every default taken from
    DTSTART. Only for rules without COUNT (the caller checks). None when no useful shift exists.
    """
    start: datetime = _attr(rule, "_dtstart")
    freq, interval = _attr(rule, "_freq"), _attr(rule, "_interval") or 1
    if freq in _PERIODS:
        period = _PERIODS[freq] * interval
        steps = (wall - start) // period - 1
        return start + period * steps if steps >= 1 else None
    if start.day > 28:
        return None
    months = interval * (12 if freq == YEARLY else 1)
    elapsed = (wall.year - start.year) * 12 + wall.month - start.month
    steps = elapsed // months - 1
    if steps < 1:
        return None
    total = start.month - 1 + steps * months
    return start.replace(year=start.year + total // 12, month=total % 12 + 1)
