"""Parsing and querying the "only_between" daily local-time window ("08:00-18:00", "22:00-06:00")."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import time

from .errors import TimingError

# A local time that does not exist (a clock change skips it) runs at a later one: at most this much later in
# any zone's rules (most changes are an hour; a few were two or three).
CLOCK_CHANGE_MINUTES = 240
_PATTERN = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def _clock(hour: str, minute: str, text: str) -> time:
    """Build a time from HH and MM strings, with range errors that quote the whole input."""
    h, m = int(hour), int(minute)
    if h > 23:
        raise TimingError("only_between", f"hour {h} out of range 0-23 in {text!r}")
    if m > 59:
        raise TimingError("only_between", f"minute {m} out of range 0-59 in {text!r}")
    return time(h, m)


@dataclass(frozen=True)
class Window:
    """A local-time window, start inclusive and end exclusive; overnight when end < start."""

    start: time
    end: time

    @property
    def overnight(self) -> bool:
        """True when the window wraps past midnight (e.g. 22:00-06:00)."""
        return self.end < self.start

    def contains(self, clock: time) -> bool:
        """Whether a local clock time lies inside the window."""
        if self.overnight:
            return clock >= self.start or clock < self.end
        return self.start <= clock < self.end

    def never_reached(self, minutes_of_day: Iterable[int]) -> bool:
        """Whether no run at these local minutes of the day (0-1439) can fall inside the window, nor one a
        clock change moves up to CLOCK_CHANGE_MINUTES later (a local time that does not exist that day)."""
        start = self.start.hour * 60 + self.start.minute
        return not any(self.contains(time(m // 60, m % 60)) or (start - m) % 1440 <= CLOCK_CHANGE_MINUTES
                       for m in minutes_of_day)

    def describe(self) -> str:
        """E.g. "only between 08:00 and 18:00"."""
        return f"only between {self.start:%H:%M} and {self.end:%H:%M}"


def parse_window(text: str) -> Window:
    """Parse "HH:MM-HH:MM"; equal start and end (including "00:00-00:00") is rejected as meaningless."""
    if not isinstance(text, str):
        raise TimingError("only_between", f"expected a string like '08:00-18:00', got {type(text).__name__}")
    match = _PATTERN.match(text)
    if match is None:
        raise TimingError("only_between", f"expected 'HH:MM-HH:MM' (e.g. '08:00-18:00'), got {text!r}")
    start = _clock(match.group(1), match.group(2), text)
    end = _clock(match.group(3), match.group(4), text)
    if start == end:
        raise TimingError("only_between", f"start and end are equal in {text!r}: the window would be empty")
    return Window(start, end)
