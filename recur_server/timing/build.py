"""build_spec: validate a mapping of schedule fields and assemble an immutable Spec."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from .base import Timing
from .calendar_days import CalendarRule, parse_on_calendar
from .constraints import Constraints
from .cron import CronTiming
from .errors import TimingError
from .instants import iso, load_zone, to_utc
from .interval import IntervalTiming, validate_interval
from .oneshot import AtTiming
from .recurrence import RRuleTiming
from .spec import Spec
from .weekdays import parse_weekdays
from .window import parse_window

KINDS = ("interval_seconds", "cron", "rrule", "at")
MAX_JITTER_SECONDS = 7 * 86400


def _instant(fields: Mapping[str, Any], name: str) -> datetime | None:
    """Optional aware datetime field as UTC, to the millisecond."""
    value = fields.get(name)
    return None if value is None else to_utc(value, name)


def _one_kind(fields: Mapping[str, Any]) -> str:
    """The single timing kind given, or TimingError("timing") listing what was given."""
    given = [name for name in KINDS if fields.get(name) is not None]
    if len(given) == 1:
        return given[0]
    got = ", ".join(given[:-1]) + " and " + given[-1] if given else "none"
    raise TimingError("timing", f"give exactly one of {', '.join(KINDS)}; got {got}")


def _jitter(value: object) -> int:
    """Validate jitter_seconds (None means no jitter)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TimingError("jitter_seconds", f"expected a whole number of seconds, got {value!r}")
    if not 0 <= value <= MAX_JITTER_SECONDS:
        raise TimingError("jitter_seconds", f"must be from 0 to {MAX_JITTER_SECONDS} seconds, got {value}")
    return value


def _day_or(value: object) -> bool:
    """Validate day_or (None means the classic cron OR)."""
    if value is None:
        return True
    if not isinstance(value, bool):
        raise TimingError("day_or", f"expected true or false, got {value!r}")
    return value


def _timing(kind: str, fields: Mapping[str, Any], tz: ZoneInfo, start_at: datetime | None) -> Timing:
    """Build the kind-specific timing object."""
    if kind == "at":
        at = to_utc(fields["at"], "at")
        return AtTiming(at)
    if kind == "interval_seconds":
        seconds = validate_interval(fields["interval_seconds"])
        anchor = _instant(fields, "anchor_at")
        if anchor is None:
            raise TimingError("anchor_at", "an interval schedule needs an anchor instant for its grid")
        return IntervalTiming(seconds, anchor, tz)
    if kind == "cron":
        return CronTiming.parse(fields["cron"], tz, _day_or(fields.get("day_or")))
    anchor = _instant(fields, "anchor_at") or start_at
    if anchor is None:
        raise TimingError("anchor_at", "an rrule schedule needs anchor_at (its DTSTART), e.g. creation time")
    return RRuleTiming.parse(fields["rrule"], tz, anchor, start_is_run=fields.get("anchor_explicit") is not False)


def build_spec(fields: Mapping[str, Any]) -> Spec:
    """Validate `fields` (see the package docstring for the keys) and return an immutable Spec."""
    kind = _one_kind(fields)
    tz = load_zone(fields.get("timezone"))
    start_at = _instant(fields, "start_at")
    end_at = _instant(fields, "end_at")
    if start_at is not None and end_at is not None and end_at < start_at:
        raise TimingError("end_at", f"end_at {iso(end_at, 'seconds')} is before start_at {iso(start_at, 'seconds')}")
    window_text = fields.get("only_between")
    not_on = fields.get("not_on")
    constraints = Constraints(
        tz=tz,
        start_at=start_at,
        end_at=end_at,
        window=None if window_text is None else parse_window(window_text),
        not_on=frozenset() if not_on is None else parse_weekdays(not_on),
    )
    jitter = _jitter(fields.get("jitter_seconds"))
    return Spec(_timing(kind, fields, tz, start_at), constraints, jitter, _calendar(fields, constraints.not_on))


def _calendar(fields: Mapping[str, Any], not_on: frozenset[int]) -> CalendarRule | None:
    """The calendar rule: `calendar_days` (a collection of dates; None: no calendar) and `on_calendar`."""
    mode = parse_on_calendar(fields.get("on_calendar"))
    days = fields.get("calendar_days")
    if days is None:
        return None
    if not isinstance(days, frozenset):
        days = frozenset(days)
    if not all(isinstance(day, date) and not isinstance(day, datetime) for day in days):
        raise TimingError("calendar_days", "expected dates")
    return CalendarRule(days, mode, not_on)
