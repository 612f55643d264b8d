"""Why a tick of a timing is not a tick of its spec: which of the spec's constraints passes over it.

The timing (cron, interval, rrule, at) makes raw ticks; start_at, end_at, only_between, not_on and a calendar
pass over some of them (a calendar may move one to another day instead). This names the first that does, in
the order an operator reads a schedule: its bounds, its weekdays, its window, its calendar.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .spec import Spec
from .wallclock import utc_to_wall
from .weekdays import cron_weekday

BEFORE_START = "before_start"
AFTER_END = "after_end"
EXCLUDED_WEEKDAY = "excluded_weekday"
OUTSIDE_WINDOW = "outside_window"
CALENDAR_DAY = "calendar_day"


@dataclass(frozen=True)
class RuledOut:
    """`reason`: one of the names above; `moved_to`: where a calendar shifts the tick (None: dropped)."""

    reason: str
    moved_to: datetime | None = None


def ruled_out(spec: Spec, tick: datetime) -> RuledOut | None:
    """For a raw tick of `spec.timing` (aware UTC): what passes over it, or None when the spec keeps it."""
    rules = spec.constraints
    if rules.start_at is not None and tick < rules.start_at:
        return RuledOut(BEFORE_START)
    if rules.end_at is not None and tick > rules.end_at:
        return RuledOut(AFTER_END)
    wall = utc_to_wall(tick, rules.tz)
    if cron_weekday(wall.weekday()) in rules.not_on:
        return RuledOut(EXCLUDED_WEEKDAY)
    if rules.window is not None and not rules.window.contains(wall.time()):
        return RuledOut(OUTSIDE_WINDOW)
    if spec.calendar is not None and wall.date() in spec.calendar.days:
        return RuledOut(CALENDAR_DAY, spec.calendar.moved(tick, rules.tz))
    return None
