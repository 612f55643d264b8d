"""Guards around dateutil.rrule: reject rules that can never fire, bound every search, rebase DTSTART.

dateutil walks period by period until year 9999 when every period is filtered out (e.g. 30 February),
which takes seconds; we detect such rules up front on a cheap YEARLY proxy of the rule's date filters.
What the proxy cannot see (INTERVAL steps that never land on an allowed day: FREQ=DAILY;INTERVAL=7;BYDAY=MO
from a Tuesday) the step budget of `bounded` cuts short.
Reads dateutil's normalised (underscore) attributes, which already include the defaults from DTSTART.
"""
from __future__ import annotations

import inspect
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from types import FrameType
from typing import Any

from dateutil.rrule import DAILY, HOURLY, MINUTELY, MONTHLY, SECONDLY, WEEKLY, YEARLY, rrule, weekday

from .errors import TimingError
from .rruleparts import RRuleParts

_CYCLE_YEARS = 28  # the calendar (weekday of each date) repeats every 28 years within a century
_PERIODS = {WEEKLY: timedelta(weeks=1), DAILY: timedelta(days=1), HOURLY: timedelta(hours=1),
            MINUTELY: timedelta(minutes=1), SECONDLY: timedelta(seconds=1)}


# The work a search through a rule may do for a request, counted in the calls dateutil's rrule module makes
# to its own (non-generator) functions: one or a few a period (its day and time sets), while a period that
# is filtered out within a day costs none (dateutil skips those in a loop of its own). dateutil offers no
# other way to stop a search: a period with no candidate yields nothing and checks no UNTIL, so a rule whose
# every period is filtered out walks to the year 9999 inside one next() (about a second). A count is
# deterministic for a given rule and dateutil, where a CPU-time deadline would depend on the machine and its
# load. 30,000 are some 30,000 periods, about 0.16 s of CPU with the hook on (measured at this commit); a
# daily rule's next 29 February that is a Monday (28 years away) takes under 10,000. Only requests are
# bounded (a timing's first occurrence, at parse): the chain's own searches run to the end, so a rule that
# matches is never taken for one that does not.
MAX_STEPS = 30_000
_RRULE_MODULE = rrule.__init__.__code__.co_filename
_GENERATOR = inspect.CO_GENERATOR
# What dateutil raises on a rule it accepted but cannot iterate (FREQ=MINUTELY;INTERVAL=1440;BYHOUR=5 from
# noon: "Invalid combination of interval and byhour"), or at the edge of the calendar.
DATEUTIL_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError)


class Undecided(Exception):
    """A search used up its steps without finding an occurrence: the rule may never match."""


def bounded(occurrences: Iterator[datetime], steps: int = MAX_STEPS) -> Iterator[datetime]:
    """The occurrences, giving up with Undecided when dateutil's rrule module makes more than `steps` calls
    of its own functions before the next.

    The count is taken by a profile hook installed only while dateutil runs (sys.setprofile is per thread).
    It counts, and raises in, only frames of dateutil's rrule module that are plain functions: never in a
    generator being resumed, nor in a finalizer that the garbage collector happens to run meanwhile (an
    exception there would be swallowed, and the hook with it). Under a profiler that holds the hook already
    (cProfile, yappi) the search is left unbounded rather than displacing it.
    """
    if sys.getprofile() is not None:
        yield from occurrences
        return
    left = steps

    def spend(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal left
        code = frame.f_code
        if event == "call" and code.co_filename == _RRULE_MODULE and not code.co_flags & _GENERATOR:
            left -= 1
            if left < 0:
                raise Undecided(f"no occurrence within {steps:,} steps")

    while True:
        left = steps
        sys.setprofile(spend)
        try:
            occurrence = next(occurrences, None)
        finally:
            sys.setprofile(None)
        if occurrence is None:
            return
        yield occurrence


def first_occurrence(rule: rrule, start: datetime, *, steps: int = MAX_STEPS) -> datetime | None:
    """The rule's first occurrence at or after `start` (None if it has none, e.g. UNTIL passed).

    TimingError("rrule") when the search cannot decide within `steps`, or dateutil fails while iterating:
    a request that validates a rule then costs a bounded amount of work, and never a 500.
    """
    try:
        return next(bounded(rule.xafter(start, inc=True), steps), None)
    except Undecided:
        raise TimingError("rrule", f"this rule finds no occurrence within {steps:,} steps of the search; it may "
                                   "never match (e.g. INTERVAL steps that never land on an allowed BYDAY, "
                                   "BYMONTHDAY or BYHOUR)") from None
    except DATEUTIL_ERRORS as error:
        raise TimingError("rrule", f"the rule cannot be evaluated ({error}); it may never match") from None


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
