"""RFC 5545 RRULE timing: dateutil generates naive LOCAL wall times from DTSTART = anchor's wall time,
wallclock maps them to UTC with the gap/fold rules (same as cron).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from dateutil.rrule import rrule, rrulestr

from .errors import TimingError
from .instants import LATEST
from .rrulecheck import (
    DATEUTIL_ERRORS,
    check_reachable,
    check_satisfiable,
    first_occurrence,
    rebased_start,
)
from .rruledescribe import describe_rrule
from .rruleparts import RRuleParts, split_rrule
from .subdaily import UNITS, SubDaily
from .wallclock import utc_to_wall, wall_to_utc

# Occurrences are looked for up to the end of the supported range (in wall time, a day of slack for the
# zone's offset); the Spec refuses anything at or after LATEST itself.
_STOP = LATEST.replace(tzinfo=None) + timedelta(days=1)
_SECOND = timedelta(seconds=1)


@dataclass(frozen=True)
class RRuleTiming:
    """A validated recurrence rule anchored at `anchor` (UTC), evaluated in wall-clock time of `tz`."""

    parts: RRuleParts
    anchor: datetime
    tz: ZoneInfo
    rule: rrule = field(compare=False, repr=False)
    start_is_run: bool = True
    # HOURLY, MINUTELY and SECONDLY rules are searched a day at a time (subdaily), not by dateutil's walk.
    subdaily: SubDaily | None = field(default=None, compare=False, repr=False)
    kind: str = "rrule"
    is_one_shot: bool = False

    @classmethod
    def parse(cls, text: str, tz: ZoneInfo, anchor: datetime, start_is_run: bool = True) -> RRuleTiming:
        """Validate the rule (TimingError("rrule", reason)) with DTSTART = anchor as local wall time.

        With start_is_run False the anchor is a default DTSTART (the creation instant), which is never
        itself a run: a new schedule never fires at once. COUNT then counts the runs, the ones after it.
        A rule that may never match is refused here, where every create, PATCH and preview builds its timing
        (rrulecheck: its date filters, its INTERVAL against its filters, and what dateutil cannot iterate).
        """
        parts = split_rrule(text)
        start = utc_to_wall(anchor, tz)
        try:
            rule = rrulestr(parts.text_for(tz), dtstart=start)
        except (ValueError, TypeError, KeyError, IndexError, OverflowError) as error:
            raise TimingError("rrule", str(error) or type(error).__name__) from None
        if not isinstance(rule, rrule):  # pragma: no cover - a single RRULE value always gives an rrule
            raise TimingError("rrule", "expected a single recurrence rule")
        check_satisfiable(rule, parts)
        check_reachable(rule)
        subdaily = SubDaily(rule, _STOP) if rule._freq in UNITS else None
        first = first_occurrence(rule, start) if subdaily is None else subdaily.next_after(start - _SECOND)
        count = parts.get("COUNT")
        if not start_is_run and count is not None and first == start:
            rule = rule.replace(count=int(count) + 1)  # DTSTART is an occurrence, and not a run
            subdaily = SubDaily(rule, _STOP) if subdaily is not None else None
        return cls(parts, anchor, tz, rule, start_is_run, subdaily=subdaily)

    def next_after(self, instant: datetime) -> datetime | None:
        """First occurrence strictly after `instant` (UNTIL and COUNT honoured), or None.

        A rule that matched once matches again (or ends by UNTIL or COUNT), however far away: the search is
        not cut short, which would end a schedule whose next run is merely far off.
        """
        if not self.start_is_run and instant < self.anchor:
            instant = self.anchor
        wall = utc_to_wall(instant, self.tz)
        if self.subdaily is not None:  # outside the try: its WorkExceeded is a ValueError dateutil's are not
            return self._first_past(self.subdaily.after(wall), instant)
        rule = self.rule
        try:
            if self.parts.get("COUNT") is None:
                start = rebased_start(rule, wall)
                if start is not None:
                    rule = rule.replace(dtstart=start)
            return self._first_past(rule.xafter(wall, inc=False), instant)
        except DATEUTIL_ERRORS as error:  # a rule that parse() could iterate: not expected, but never a crash
            raise TimingError("rrule", f"the rule cannot be evaluated ({error})") from None

    def _first_past(self, occurrences: Iterator[datetime], instant: datetime) -> datetime | None:
        """The first of these wall-time occurrences that falls after `instant` in UTC (a wall time in a fold
        can map to before it), or None past the supported range or UNTIL."""
        for occurrence in occurrences:
            if occurrence > _STOP:
                return None
            candidate = wall_to_utc(occurrence, self.tz)
            if self.parts.until_utc is not None and candidate > self.parts.until_utc:
                return None
            if candidate > instant:
                return candidate
        return None

    def minutes_of_day(self) -> frozenset[int] | None:
        """The local minutes of the day its runs can have; None for a rule of HOURLY or finer (any)."""
        hours, minutes = self.rule._byhour, self.rule._byminute
        if self.subdaily is not None or not hours or not minutes:
            return None
        return frozenset(h * 60 + m for h in hours for m in minutes)

    def describe(self) -> str:
        """A sentence built from FREQ/INTERVAL/BYxxx, e.g. "Every month on the last Monday through Friday"."""
        return describe_rrule(self.parts, utc_to_wall(self.anchor, self.tz))
