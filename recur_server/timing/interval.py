"""Fixed-interval timing on a grid anchor + k * interval (k any integer).

Intervals that are whole days keep the local clock time in the zone (stepping local dates, with the
gap/fold rules of wallclock); all other intervals are exact elapsed seconds in UTC.
For whole days the slot wall time is the anchor's wall time; if the anchor itself was the second
occurrence of a repeated wall time, that day's slot is still the first occurrence (fold rule).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from .describing import describe_seconds
from .errors import TimingError
from .wallclock import utc_to_wall, wall_to_utc

DAY_SECONDS = 86400
MAX_INTERVAL_SECONDS = 366 * DAY_SECONDS * 10


def validate_interval(value: object) -> int:
    """Check interval_seconds is a whole number of seconds >= 1 (and at most ten years)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TimingError("interval_seconds", f"expected a whole number of seconds, got {value!r}")
    if value < 1:
        raise TimingError("interval_seconds", f"must be at least 1 second, got {value}")
    if value > MAX_INTERVAL_SECONDS:
        limit = MAX_INTERVAL_SECONDS
        raise TimingError("interval_seconds", f"must be at most {limit} seconds (ten years), got {value}")
    return value


@dataclass(frozen=True)
class IntervalTiming:
    """Every `seconds` seconds on the grid through `anchor` (UTC); whole days follow local wall time."""

    seconds: int
    anchor: datetime
    tz: ZoneInfo
    kind: str = "interval"
    is_one_shot: bool = False

    @property
    def whole_days(self) -> int:
        """Number of days per step when the interval is a whole number of days, else 0."""
        return self.seconds // DAY_SECONDS if self.seconds % DAY_SECONDS == 0 else 0

    def next_after(self, instant: datetime) -> datetime | None:
        """First grid slot strictly after `instant`."""
        if self.whole_days:
            return self._next_local(instant)
        step = timedelta(seconds=self.seconds)
        steps = (instant - self.anchor) // step + 1  # floor division of timedeltas: exact, negative too
        return self.anchor + steps * step

    def minutes_of_day(self) -> None:
        """Not given: a grid of seconds moves through the day; a whole-day one keeps its wall time, but is not
        worked out here (its search stays the full one)."""
        return None

    def _next_local(self, instant: datetime) -> datetime:
        """Whole-day grid: step local dates from the anchor's wall time, map each slot to UTC."""
        days = self.whole_days
        anchor_wall = utc_to_wall(self.anchor, self.tz)
        wall = utc_to_wall(instant, self.tz)
        steps = (wall.date() - anchor_wall.date()).days // days - 1
        while True:
            candidate = wall_to_utc(anchor_wall + timedelta(days=steps * days), self.tz)
            if candidate > instant:
                return candidate
            steps += 1

    def describe(self) -> str:
        """E.g. "Every 30 seconds" or "Every 2 days at 09:00"."""
        text = "Every " + describe_seconds(self.seconds)
        if self.whole_days:
            text += f" at {utc_to_wall(self.anchor, self.tz):%H:%M:%S}".removesuffix(":00")
        return text
