"""Pre-parsing RRULE text: size/DTSTART/COUNT checks, UTC UNTIL handling, and the parts for describe()."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from .errors import TimingError
from .instants import UTC
from .wallclock import utc_to_wall

MAX_RRULE_CHARS = 6500
MAX_COUNT = 10000
# INTERVAL at most a leap year of seconds (a rule a person writes is far below; a larger one only overflows
# dateutil's arithmetic): 2**31 or 2**63 is a 422, never a 500.
MAX_INTERVAL = 366 * 86400
# RFC 5545's range of each numeric part (3.3.10): (least, most, whether a negative value counts back).
_RANGES = {"BYSECOND": (0, 59, False), "BYMINUTE": (0, 59, False), "BYHOUR": (0, 23, False),
           "BYMONTH": (1, 12, False), "BYMONTHDAY": (1, 31, True), "BYYEARDAY": (1, 366, True),
           "BYWEEKNO": (1, 53, True), "BYSETPOS": (1, 366, True), "BYEASTER": (0, 366, True)}
_NUMBER = re.compile(r"^[+-]?\d{1,9}$")
_BYDAY = re.compile(r"^([+-]?\d{1,9})?(MO|TU|WE|TH|FR|SA|SU)$")


@dataclass(frozen=True)
class RRuleParts:
    """The rule as NAME=VALUE pairs (upper-cased names), plus UNTIL as a UTC instant when it ended in Z."""

    parts: tuple[tuple[str, str], ...]
    until_utc: datetime | None

    def get(self, name: str) -> str | None:
        """Value of the last NAME=... part, or None."""
        found = None
        for key, value in self.parts:
            if key == name:
                found = value
        return found

    def text_for(self, tz: ZoneInfo) -> str:
        """The rule for dateutil with a naive start: a UTC UNTIL is rewritten as local wall time."""
        pieces = []
        for key, value in self.parts:
            if key == "UNTIL" and self.until_utc is not None:
                value = f"{utc_to_wall(self.until_utc, tz):%Y%m%dT%H%M%S}"
            pieces.append(f"{key}={value}")
        return ";".join(pieces)


def _until(value: str) -> datetime:
    """Parse a UTC UNTIL value (YYYYMMDDTHHMMSSZ)."""
    try:
        return datetime.strptime(value, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise TimingError("rrule", f"UNTIL {value!r} is not a UTC date-time like 20261231T235959Z") from None


def split_rrule(text: str) -> RRuleParts:
    """Validate the surface of an RRULE value (optionally prefixed "RRULE:") and split it into parts."""
    if not isinstance(text, str):
        raise TimingError("rrule", f"expected an RRULE string, got {type(text).__name__}")
    if len(text) > MAX_RRULE_CHARS:
        raise TimingError("rrule", f"rule is {len(text)} characters long; at most {MAX_RRULE_CHARS} allowed")
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[len("RRULE:"):]
    if "DTSTART" in body.upper():
        raise TimingError("rrule", "DTSTART is not allowed in the rule: the start comes from anchor_at")
    if "\n" in body or "\r" in body or ":" in body:
        raise TimingError("rrule", "expected one RRULE value like 'FREQ=DAILY;BYHOUR=9' (no other lines)")
    if not body:
        raise TimingError("rrule", "rule is empty")
    parts: list[tuple[str, str]] = []
    until_utc = None
    for piece in body.split(";"):
        if not piece:
            continue
        key, sep, value = piece.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise TimingError("rrule", f"cannot read {piece!r}: expected NAME=VALUE")
        key, value = key.strip().upper(), value.strip().upper()
        if key == "COUNT" and (not value.isdigit() or not 1 <= int(value) <= MAX_COUNT):
            raise TimingError("rrule", f"COUNT must be a whole number from 1 to {MAX_COUNT}, got {value!r}")
        if key == "UNTIL" and value.endswith("Z"):
            until_utc = _until(value)
        _check_numbers(key, value)
        parts.append((key, value))
    keys = {key for key, _ in parts}
    if "COUNT" in keys and "UNTIL" in keys:
        raise TimingError("rrule", "COUNT and UNTIL must not both be given (RFC 5545)")
    if "FREQ" not in keys:
        raise TimingError("rrule", "FREQ is required (e.g. FREQ=DAILY)")
    freq = dict(parts)["FREQ"]
    for key, value in parts:
        if key == "BYDAY":
            _check_byday(value, freq)
    if "BYSETPOS" in keys and freq in ("HOURLY", "MINUTELY", "SECONDLY"):
        raise TimingError("rrule", "BYSETPOS is not supported with FREQ=HOURLY, MINUTELY or SECONDLY: use "
                                   "FREQ=DAILY with BYHOUR, BYMINUTE and BYSETPOS")
    return RRuleParts(tuple(parts), until_utc)


def _check_numbers(key: str, value: str) -> None:
    """INTERVAL and the numeric BY parts within RFC 5545's ranges (a value dateutil would fail on, or turn
    into a search to the year 9999, is refused here, naming the part)."""
    if key == "INTERVAL":
        if not value.isdigit() or not 1 <= int(value[:12]) <= MAX_INTERVAL:
            raise TimingError("rrule", f"INTERVAL must be a whole number from 1 to {MAX_INTERVAL}, got {value[:40]!r}")
        return
    bounds = _RANGES.get(key)
    if bounds is None:
        return
    least, most, signed = bounds
    for item in value.split(","):
        number = int(item) if _NUMBER.match(item) else None
        if number is None or not (least <= number <= most or (signed and -most <= number <= -least and number)):
            span = f"{least} to {most}" + (f" or -{most} to -{least}" if signed else "")
            raise TimingError("rrule", f"{key} takes whole numbers from {span}, got {item[:40]!r}")


def _check_byday(value: str, freq: str) -> None:
    """BYDAY's days, each with an optional ordinal: 1 to 53 from either end of a year, 1 to 5 of a month, and
    only with FREQ=YEARLY or MONTHLY (RFC 5545)."""
    most = 5 if freq == "MONTHLY" else 53
    for item in value.split(","):
        match = _BYDAY.match(item)
        if match is None:
            raise TimingError("rrule", f"BYDAY takes days like MO, TU or 1MO, -1FR; got {item[:40]!r}")
        if match.group(1) is None:
            continue
        ordinal = int(match.group(1))
        if freq not in ("MONTHLY", "YEARLY"):
            raise TimingError("rrule", f"BYDAY {item!r}: a numbered day needs FREQ=MONTHLY or YEARLY")
        if ordinal == 0 or abs(ordinal) > most:
            raise TimingError("rrule", f"BYDAY {item!r}: the number must be 1 to {most} or -{most} to -1 "
                                       f"with FREQ={freq}")
