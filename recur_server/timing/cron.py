"""Cron timing: croniter iterates naive LOCAL wall-clock times, wallclock maps each to UTC.

croniter never sees a zone, so DST is handled entirely here: a tick in a spring-forward gap runs at
the first instant after the gap (several such ticks collapse into one run), a tick in a fall-back
overlap runs once at its first occurrence.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from cron_descriptor import ExpressionDescriptor, Options
from croniter import CroniterBadDateError, croniter

from .cronfields import CronFields, parse_cron
from .wallclock import utc_to_wall, wall_to_utc

# croniter's bound for expressions that match rarely (day_or=False). parse_cron refuses dates that never
# occur, and every date that does occur falls on each weekday within 40 years (29 February on a Monday:
# 2044, 2072, 2112), so a longer gap means no run at all; the Spec stops at LATEST anyway.
_MAX_YEARS_BETWEEN_MATCHES = 100


@functools.lru_cache(maxsize=4096)
def _parsed(expression: str, day_or: bool) -> croniter:
    """croniter's parse of an expression, made once and copied for each use (set to its start time there):
    the parse was most of a cron schedule's create, and of a link's planning of its next tick. A copy shares
    the parse's lists, which croniter copies before it changes them; the parse itself is never iterated."""
    return croniter(expression, datetime(2000, 1, 1), day_or=day_or,
                    max_years_between_matches=_MAX_YEARS_BETWEEN_MATCHES)


@dataclass(frozen=True)
class CronTiming:
    """A validated 5-field cron expression evaluated in wall-clock time of `tz`."""

    fields: CronFields
    tz: ZoneInfo
    day_or: bool = True
    kind: str = "cron"
    is_one_shot: bool = False

    @classmethod
    def parse(cls, expression: str, tz: ZoneInfo, day_or: bool = True) -> CronTiming:
        """Validate `expression` (TimingError("cron") naming field, value and range) and build."""
        return cls(parse_cron(expression, day_or), tz, day_or)

    def next_after(self, instant: datetime) -> datetime | None:
        """First run strictly after `instant`.

        Wall-to-UTC is monotonic, so ticks before the wall time of `instant` cannot qualify; ticks at or
        after it may still map to <= instant (inside a fall-back overlap) and are skipped.
        """
        ticks = copy.copy(_parsed(self.fields.canonical(), self.day_or))
        ticks.set_current(utc_to_wall(instant, self.tz), force=True)
        while True:
            try:
                wall = ticks.get_next(datetime)
            except CroniterBadDateError:
                return None
            candidate = wall_to_utc(wall, self.tz)
            if candidate > instant:
                return candidate

    def minutes_of_day(self) -> frozenset[int]:
        """The local minutes of the day (hour * 60 + minute) its runs can have."""
        return frozenset(h * 60 + m for h in self.fields.hours for m in self.fields.minutes)

    def describe(self) -> str:
        """cron_descriptor's sentence in 24-hour format, e.g. "At 09:00, Monday through Friday"."""
        options = Options()
        options.use_24hour_time_format = True
        try:
            text = str(ExpressionDescriptor(self.fields.text.upper(), options).get_description())
        except Exception:  # cron_descriptor rejects some valid forms (e.g. '?'); fall back to the text
            text = f"Cron '{self.fields.text}'"
        if not self.day_or and not self.fields.days_star and not self.fields.weekdays_star:
            # cron_descriptor assumes the classic OR ("..., or on Friday"; 1.x: "..., only on Friday")
            for joint in (", or on ", ", only on "):
                if joint in text:
                    text = text.replace(joint, ", and only on ", 1)
                    break
            else:
                text += " (only when both the day of month and the day of week match)"
        return text
