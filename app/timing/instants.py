"""Normalising instants and zones: everything inside the package is aware UTC to the millisecond."""
from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import TimingError

__all__ = ["UTC", "iso", "load_zone", "to_utc"]


def to_utc(value: datetime, field: str = "instant") -> datetime:
    """Return `value` as an aware UTC datetime truncated to the millisecond; naive input is rejected.

    Fire times are whole seconds for calendar kinds and milliseconds for interval grids (whose anchor
    may carry them); truncating below that precision (not rounding) keeps "strictly after t" exact.
    """
    if not isinstance(value, datetime):
        raise TimingError(field, f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise TimingError(field, "datetime must be timezone-aware (naive datetimes are ambiguous)")
    utc = value.astimezone(UTC)
    return utc.replace(microsecond=utc.microsecond - utc.microsecond % 1000)


def iso(instant: datetime) -> str:
    """UTC ISO-8601 text with a Z suffix, e.g. "2026-12-01T08:00:00Z"."""
    return f"{instant.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def load_zone(name: str | None) -> ZoneInfo:
    """Resolve an IANA zone name (default "UTC") to a ZoneInfo, or raise TimingError("timezone")."""
    if name is None:
        name = "UTC"
    if not isinstance(name, str) or not name.strip():
        raise TimingError("timezone", f"time zone must be a non-empty IANA name, got {name!r}")
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise TimingError("timezone", f"unknown time zone {name!r}") from None

