"""Occurrences of an HOURLY, MINUTELY or SECONDLY rule, found a day at a time.

dateutil walks such a rule period by period, and on a day its date filters leave out it still steps through
the day's hours, minutes or seconds until its BYHOUR/BYMINUTE/BYSECOND match: FREQ=SECONDLY;BYMONTH=2;
BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59 took 2-4 s of CPU to find the next leap day, and a SECONDLY
rule for December 31 at 23:59 fifteen seconds from January. The occurrences are the points of the rule's grid
(DTSTART + k x INTERVAL units, in wall time, k >= 0) on the days the date filters allow, at the times the
time filters allow (dateutil's own normalised attributes, defaults from DTSTART included). So this finds the
next allowed day (a DAILY rule of the same date filters, which dateutil walks a day per step) and, within
it, the first allowed time on the grid: by walking the day's grid points or its allowed times, whichever are
fewer. Every day passed over and every time tried is a step of the request's budget (recur_server.timing.work).

BYSETPOS, which selects within one hour, minute or second, is refused with these frequencies (rruleparts).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta

from dateutil.rrule import DAILY, HOURLY, MINUTELY, SECONDLY, rrule

from . import work

UNITS = {HOURLY: 3600, MINUTELY: 60, SECONDLY: 1}
_DAY = 86400
_ONE_DAY = timedelta(days=1)
_SECOND = timedelta(seconds=1)


class SubDaily:
    """The occurrences of a sub-daily rrule (whose normalised attributes it reads once)."""

    def __init__(self, rule: rrule, stop: datetime) -> None:
        self.start: datetime = rule._dtstart
        self.unit = UNITS[rule._freq]
        self.step = self.unit * (rule._interval or 1)
        self.hours = sorted(rule._byhour) if rule._byhour else list(range(24))
        self.minutes = sorted(rule._byminute) if rule._byminute else list(range(60))
        self.seconds = sorted(rule._bysecond) if rule._bysecond else list(range(60))
        self._hour_set, self._minute_set = set(self.hours), set(self.minutes)
        self._second_set = set(self.seconds)
        self.until: datetime | None = rule._until
        self.count: int | None = rule._count
        self.stop = stop
        self._filters = _date_filters(rule)
        self._counted: list[datetime] | None = None
        self._start_tod = self.start.hour * 3600 + self.start.minute * 60 + self.start.second

    def next_after(self, wall: datetime) -> datetime | None:
        """The first occurrence strictly after `wall` (naive wall time), or None."""
        lower = (wall + _SECOND).replace(microsecond=0)  # occurrences fall on whole seconds
        if self.count is not None:
            counted = self._all_counted()
            i = bisect_right(counted, wall)
            return counted[i] if i < len(counted) else None
        return self._scan(max(lower, self.start))

    def after(self, wall: datetime) -> Iterator[datetime]:
        """Its occurrences strictly after `wall`, in order (each found when asked for)."""
        occurrence = self.next_after(wall)
        while occurrence is not None:
            yield occurrence
            occurrence = self.next_after(occurrence)

    def _all_counted(self) -> list[datetime]:
        """A rule with COUNT: all its occurrences (at most rruleparts.MAX_COUNT), found once."""
        if self._counted is None:
            found: list[datetime] = []
            cursor: datetime | None = self.start
            while cursor is not None and len(found) < (self.count or 0):
                cursor = self._scan(cursor)
                if cursor is not None:
                    found.append(cursor)
                    cursor += _SECOND
            self._counted = found
        return self._counted

    def _scan(self, lower: datetime) -> datetime | None:
        """The first occurrence at or after `lower` (a whole second, at or after DTSTART)."""
        day, earliest = lower.date(), lower.hour * 3600 + lower.minute * 60 + lower.second
        while True:
            work.spend(1, "rrule")
            allowed = self._allowed_day(day)
            if allowed is None:
                return None
            if allowed != day:
                day, earliest = allowed, 0
            found = self._in_day(day, earliest)
            if found is not None:
                if self.until is not None and found > self.until:
                    return None
                return found
            day, earliest = day + _ONE_DAY, 0

    def _allowed_day(self, day: date) -> date | None:
        """The first day on or after `day` the date filters allow, before the stop and UNTIL; None if none."""
        midnight = datetime.combine(day, time())
        if midnight > self.stop or (self.until is not None and midnight > self.until):
            return None
        if self._filters is None:
            return day
        left = work.left()
        end = self.stop if left is None else min(self.stop, midnight + timedelta(days=left))
        if self.until is not None:
            end = min(end, self.until)
        found = rrule(DAILY, dtstart=midnight, until=end, cache=False, **self._filters).after(midnight, inc=True)
        if found is None and left is not None and end < self.stop and (self.until is None or end < self.until):
            work.spend(left + 1, "rrule")  # the budget ended the look, not the rule: WorkExceeded
        work.spend(((found or end) - midnight).days, "rrule")  # the days dateutil passed over
        return None if found is None else found.date()

    def _in_day(self, day: date, earliest: int) -> datetime | None:
        """The first occurrence of `day` at or after `earliest` seconds into it. The grid is one of periods
        (hours, minutes or seconds, as FREQ says): a period on it whose hour, minute or second its BY parts
        allow yields the times the finer BY parts list within it (dateutil's expansion)."""
        offset = (day - self.start.date()).days * _DAY  # the day's midnight, in seconds after DTSTART's
        if offset == 0:
            earliest = max(earliest, self._start_tod)
        base = self._start_tod - self._start_tod % self.unit  # DTSTART's period, seconds into its day
        first = (base - offset) % self.step  # the day's first period on the grid
        if first + self.unit <= earliest:  # periods over before `earliest` are passed
            first += -(-(earliest - self.unit + 1 - first) // self.step) * self.step
        if first >= _DAY:
            return None
        periods = (_DAY - 1 - first) // self.step + 1
        if periods <= len(self.hours) * len(self.minutes) * len(self.seconds):
            for period in range(first, _DAY, self.step):
                work.spend(1, "rrule")
                for tod in self._within(period):
                    if tod >= earliest:
                        return _at(day, tod)
            return None
        for hour in self.hours:
            if (hour + 1) * 3600 <= earliest:
                continue
            for minute in self.minutes:
                if hour * 3600 + (minute + 1) * 60 <= earliest:
                    continue
                for second in self.seconds:
                    tod = hour * 3600 + minute * 60 + second
                    work.spend(1, "rrule")
                    if tod >= earliest and (tod - tod % self.unit - first) % self.step == 0:
                        return _at(day, tod)
        return None

    def _within(self, period: int) -> list[int]:
        """The times (seconds into the day) a period of the grid yields, in order: none when its own hour,
        minute or second is filtered out."""
        hour, minute = period // 3600, period // 60 % 60
        if hour not in self._hour_set:
            return []
        if self.unit == 3600:
            return [period + m * 60 + s for m in self.minutes for s in self.seconds]
        if minute not in self._minute_set:
            return []
        if self.unit == 60:
            return [period + s for s in self.seconds]
        return [period] if period % 60 in self._second_set else []


def _at(day: date, tod: int) -> datetime:
    return datetime.combine(day, time(tod // 3600, tod // 60 % 60, tod % 60))


def _date_filters(rule: rrule) -> dict[str, object] | None:
    """The rule's date filters as a DAILY rule's arguments; None when every day is allowed."""
    weekdays = rule._byweekday
    monthdays = tuple(rule._bymonthday or ()) + tuple(rule._bynmonthday or ())
    filters = {"bymonth": rule._bymonth, "bymonthday": monthdays or None,
               "byyearday": rule._byyearday, "byweekno": rule._byweekno,
               "byweekday": weekdays, "byeaster": rule._byeaster}
    given = {name: value for name, value in filters.items() if value}
    if not given:
        return None
    return {**given, "wkst": rule._wkst}
