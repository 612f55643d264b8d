"""Filters on nominal fire times (start_at, end_at, only_between, not_on): they pass over, never move.

`next_possible` lets the search jump past whole excluded stretches instead of testing slot by slot.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from .instants import iso
from .wallclock import utc_to_wall, wall_to_utc
from .weekdays import cron_weekday, describe_weekdays
from .window import Window

_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)


@dataclass(frozen=True)
class Constraints:
    """All filters of one spec; local-time ones (window, weekdays) are read in `tz`."""

    tz: ZoneInfo
    start_at: datetime | None = None
    end_at: datetime | None = None
    window: Window | None = None
    not_on: frozenset[int] = frozenset()

    def allows(self, instant: datetime) -> bool:
        """Whether a nominal UTC instant may fire. not_on reads the local date of the instant itself."""
        if self.start_at is not None and instant < self.start_at:
            return False
        if self.end_at is not None and instant > self.end_at:
            return False
        if self.window is None and not self.not_on:
            return True
        return self._wall_allowed(utc_to_wall(instant, self.tz))

    def past_end(self, instant: datetime) -> bool:
        """True once `instant` lies after end_at: nothing later can fire either."""
        return self.end_at is not None and instant > self.end_at

    def _wall_allowed(self, wall: datetime) -> bool:
        """Whether a local wall time passes the window and weekday filters."""
        if cron_weekday(wall.weekday()) in self.not_on:
            return False
        return self.window is None or self.window.contains(wall.time())

    def next_possible(self, rejected: datetime) -> datetime | None:
        """An instant > `rejected` before which no instant is allowed; None when nothing later is.

        Only valid for an instant that `allows` rejected. It is a lower bound for the next allowed
        instant, used to skip excluded stretches (whole days, the hours outside the window).
        """
        if self.past_end(rejected):
            return None
        if self.start_at is not None and rejected < self.start_at:
            # Past `rejected` in any case: the search goes on a second before the jump, and a slot of a
            # sub-second grid (an interval anchored at its creation instant) can lie in that second.
            return max(self.start_at, rejected + _SECOND)
        wall = utc_to_wall(rejected, self.tz)
        start = self._next_allowed_wall(wall)
        if start is None:
            return rejected + _SECOND
        return max(wall_to_utc(start, self.tz), rejected + _SECOND)

    def _next_allowed_wall(self, wall: datetime) -> datetime | None:
        """Earliest local wall time >= `wall` on an allowed weekday inside the window (8 days ahead)."""
        day = wall.replace(hour=0, minute=0, second=0, microsecond=0)
        for _ in range(9):
            if cron_weekday(day.weekday()) not in self.not_on:
                for lo, hi in self._day_ranges():
                    begin = day.replace(hour=lo.hour, minute=lo.minute)
                    end = day + _DAY if hi is None else day.replace(hour=hi.hour, minute=hi.minute)
                    if end > wall:
                        return max(begin, wall)
            day += _DAY
        return None

    def _day_ranges(self) -> list[tuple[time, time | None]]:
        """The allowed [start, end) clock ranges within one day; end None means midnight."""
        if self.window is None:
            return [(time(0, 0), None)]
        if self.window.overnight:
            return [(time(0, 0), self.window.end), (self.window.start, None)]
        return [(self.window.start, self.window.end)]

    def describe(self) -> list[str]:
        """Phrases for the active filters, in a stable order."""
        parts: list[str] = []
        if self.window is not None:
            parts.append(self.window.describe())
        if self.not_on:
            parts.append(describe_weekdays(self.not_on))
        if self.start_at is not None:
            parts.append(f"starting {iso(self.start_at, 'seconds')}")
        if self.end_at is not None:
            parts.append(f"until {iso(self.end_at, 'seconds')}")
        return parts
