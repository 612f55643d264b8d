"""Recur's timing rules: pure functions and immutable specs turning schedule fields into fire times.

Public interface:
    build_spec(fields) -> Spec       validate a mapping of schedule fields (TimingError naming the field)
    Spec.next_after(instant)         first nominal fire time strictly after `instant` (or None)
    Spec.describe(), .kind, .tz, .is_one_shot, .jitter_seconds
    preview(spec, now, count)        the next `count` nominal times after `now`
    retry_delay(interval, retry)     back-off in seconds
    to_utc(instant)                  aware UTC to the millisecond, the package's precision
    supported(instant, field)        to_utc, refusing instants outside [EARLIEST, LATEST) (1970 to 3000)
    iso(instant), iso_or_none(...)   an instant as Recur writes it: UTC ISO 8601 with a Z (recur_server/ has no other)
    jitter_delay(id, nominal, jitter_seconds, next_nominal)  stable per-tick delay in seconds
    parse_every("5m")                shorthand intervals in seconds
    validate_not_past(at, now)       one-shot time must be in the future

Fields of build_spec (missing key == None): interval_seconds, anchor_at, cron, day_or (default True),
rrule, at, timezone (IANA, default "UTC"), start_at, end_at, only_between ("HH:MM-HH:MM", local),
not_on (weekday names or cron numbers 0 = Sunday .. 6 = Saturday, 7 = Sunday), jitter_seconds,
anchor_explicit (False: anchor_at is a default DTSTART, the creation instant, which is never itself a run).
calendar_days (a collection of local dates; None: no calendar) and on_calendar ("skip", "shift_next",
"shift_previous"; default skip): see calendar_days.py. is_calendar_day(days, day) answers for one date.
No run is planned at or after LATEST (year 3000); the search has no shorter horizon.
Instants in and out are timezone-aware; outputs are UTC, to the millisecond
(whole seconds for calendar kinds). "now" is always an argument.
"""
from __future__ import annotations

from .build import MAX_JITTER_SECONDS, build_spec
from .calendar_days import ON_CALENDAR, CalendarRule, is_calendar_day
from .delays import jitter_delay, retry_delay
from .errors import TimingError
from .every import parse_every
from .instants import EARLIEST, LATEST, iso, iso_or_none, supported, to_utc
from .interval import MAX_INTERVAL_SECONDS
from .oneshot import validate_not_past
from .spec import MAX_RULED_OUT, Spec, preview

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_INTERVAL_SECONDS",
    "MAX_JITTER_SECONDS",
    "MAX_RULED_OUT",
    "ON_CALENDAR",
    "CalendarRule",
    "Spec",
    "TimingError",
    "build_spec",
    "is_calendar_day",
    "iso",
    "iso_or_none",
    "jitter_delay",
    "parse_every",
    "preview",
    "retry_delay",
    "supported",
    "to_utc",
    "validate_not_past",
]
