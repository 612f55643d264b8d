"""Pre-parsing RRULE text: size/DTSTART/COUNT checks, UTC UNTIL handling, and the parts for describe()."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from .errors import TimingError
from .instants import UTC
from .wallclock import utc_to_wall

MAX_RRULE_CHARS = 6500
MAX_COUNT = 10000


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
        parts.append((key, value))
    keys = {key for key, _ in parts}
    if "COUNT" in keys and "UNTIL" in keys:
        raise TimingError("rrule", "COUNT and UNTIL must not both be given (RFC 5545)")
    if "FREQ" not in keys:
        raise TimingError("rrule", "FREQ is required (e.g. FREQ=DAILY)")
    return RRuleParts(tuple(parts), until_utc)
