"""The Spec: one kind of timing plus its constraints, and the bounded search for the next fire time."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from zoneinfo import ZoneInfo

from . import work
from .base import Timing
from .calendar_days import CalendarRule
from .constraints import Constraints
from .instants import LATEST, to_utc

# The search has no time horizon: a valid timing whose next run is years away runs then, up to the end of
# the supported range (LATEST). What it bounds is work: the constraints (only_between, not_on) repeat every
# week, so a timing whose fire times they rule out this many times in a row (at least years of daily
# candidates) is taken never to match, e.g. a daily cron at 03:00 with only_between 08:00-18:00. Each
# ruled-out candidate costs one step of the timing (up to ~0.3 ms for cron), so this also bounds the time
# such a search takes (about half a second; a search that finds a run takes a few steps).
MAX_RULED_OUT = 2_000
_SECOND = timedelta(seconds=1)
# The field a timing's kind is given by: what a WorkExceeded names.
_FIELDS = {"interval": "interval_seconds", "cron": "cron", "rrule": "rrule", "at": "at"}


@dataclass(frozen=True)
class Spec:
    """Immutable, stateless schedule timing. All instants in and out are aware UTC, to the millisecond
    (calendar kinds fire on whole seconds; an interval grid keeps its anchor's milliseconds)."""

    timing: Timing
    constraints: Constraints
    jitter_seconds: int = 0
    calendar: CalendarRule | None = None  # the days its ticks skip or move off (recur_server.timing.calendar_days)

    @property
    def kind(self) -> str:
        """"interval", "cron", "rrule" or "at"."""
        return self.timing.kind

    @property
    def tz(self) -> ZoneInfo:
        """The zone local-time rules (cron, rrule, whole-day intervals, window, weekdays) use."""
        return self.constraints.tz

    @property
    def is_one_shot(self) -> bool:
        """True for "at" timings, which fire at most once."""
        return self.timing.is_one_shot

    def next_after(self, instant: datetime) -> datetime | None:
        """First nominal fire time strictly after `instant` that every constraint allows, else None.

        Ruled-out nominal times are passed over, never moved. None when the timing has no further run
        (a one-shot passed, COUNT or UNTIL used up, end_at passed), when the next run would fall at or
        after LATEST, or after MAX_RULED_OUT candidates in a row were ruled out by the constraints.
        """
        cursor = to_utc(instant, "instant")
        try:
            if self.calendar is not None:
                return self.calendar.next_after(self._search, self._fits, cursor, self.tz)
            return self._search(cursor)
        except OverflowError:  # only instants far outside the supported range get here: no run there
            return None

    def _fits(self, moved: datetime) -> bool:
        """Whether a tick the calendar moved may still fire where it lands."""
        return moved < LATEST and self.constraints.allows(moved)

    def _search(self, cursor: datetime) -> datetime | None:
        if self._outside_window:
            return None  # decided at once: otherwise MAX_RULED_OUT candidates, seconds of dateutil for a rule
        begin = self.constraints.start_at
        if begin is not None and cursor < begin - _SECOND:
            cursor = begin - _SECOND  # nothing before start_at can fire: start looking there
        for _ in range(MAX_RULED_OUT + 1):
            work.spend(1, _FIELDS.get(self.kind, "timing"))  # each candidate (a request's budget, if any)
            if cursor >= LATEST:
                return None
            candidate = self.timing.next_after(cursor)
            if candidate is None or candidate >= LATEST or self.constraints.past_end(candidate):
                return None
            if self.constraints.allows(candidate):
                return candidate
            jump = self.constraints.next_possible(candidate)
            if jump is None:
                return None
            cursor = jump - _SECOND
        return None

    @cached_property
    def _outside_window(self) -> bool:
        """Whether every run the timing can make falls outside the window (its times of day, where the timing
        knows them: a cron's, a daily or coarser rule's). Once per Spec: planning.spec_of keeps them."""
        window = self.constraints.window
        if window is None:
            return False
        minutes = self.timing.minutes_of_day()
        return minutes is not None and window.never_reached(minutes)

    def describe(self) -> str:
        """Human-readable summary, e.g. "At 09:00, Monday through Friday (Europe/Berlin)"."""
        parts = [self.timing.describe(), *self.constraints.describe()]
        if self.calendar is not None:
            parts.append(self.calendar.describe())
        if self.jitter_seconds:
            parts.append(f"with up to {self.jitter_seconds} s of jitter")
        text = ", ".join(parts)
        if self._uses_local_time():
            text += f" ({self.tz.key})"
        return text

    def _uses_local_time(self) -> bool:
        """Whether the zone matters to the reader (it does not for plain elapsed-time schedules)."""
        if self.constraints.window is not None or self.constraints.not_on or self.calendar is not None:
            return True
        if self.kind in ("cron", "rrule"):
            return True
        return self.kind == "interval" and bool(getattr(self.timing, "whole_days", 0))


def preview(spec: Spec, now: datetime, count: int, partial: bool = False) -> list[datetime]:
    """The next `count` nominal fire times after `now` (fewer if the schedule runs out). With `partial`, the
    times found before the request's budget of work ran out (work.WorkExceeded otherwise): for pages that
    show upcoming runs, where fewer is better than none."""
    times: list[datetime] = []
    cursor: datetime | None = to_utc(now, "now")
    while cursor is not None and len(times) < count:
        try:
            cursor = spec.next_after(cursor)
        except work.WorkExceeded:
            if partial:
                return times
            raise
        if cursor is not None:
            times.append(cursor)
    return times
