"""Normalising instants and zones: everything inside the package is aware UTC to the millisecond."""
from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import TimingError

__all__ = ["EARLIEST", "LATEST", "UTC", "iso", "iso_or_none", "load_zone", "supported", "to_utc"]

# The instants a schedule may name and run at: [EARLIEST, LATEST). The end leaves headroom below
# datetime's year 9999 for everything the search adds to an instant (a ten-year interval, zone offsets,
# a whole period of a rule), so no arithmetic on a supported instant can overflow; a run that would fall
# at or after LATEST counts as no run. The start keeps timestamps non-negative.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(3000, 1, 1, tzinfo=UTC)


def to_utc(value: datetime, field: str = "instant") -> datetime:
    """Return `value` as an aware UTC datetime truncated to the millisecond; naive input is rejected.

    Fire times are whole seconds for calendar kinds and milliseconds for interval grids (whose anchor
    may carry them); truncating below that precision (not rounding) keeps "strictly after t" exact.
    """
    if not isinstance(value, datetime):
        raise TimingError(field, f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise TimingError(field, "datetime must be timezone-aware (naive datetimes are ambiguous)")
    try:
        utc = value.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00: its UTC instant is before year 1
        raise TimingError(field, f"{value.isoformat()} lies outside the calendar once taken to UTC") from None
    return utc.replace(microsecond=utc.microsecond - utc.microsecond % 1000)


def supported(value: datetime, field: str) -> datetime:
    """`value` as UTC (see to_utc) if it lies in [EARLIEST, LATEST), else TimingError naming `field`."""
    utc = to_utc(value, field)
    if not EARLIEST <= utc < LATEST:
        raise TimingError(field, f"must be from {iso(EARLIEST)} to before {iso(LATEST)}, got {iso(utc, 'seconds')}")
    return utc


def iso(instant: datetime, timespec: str = "auto") -> str:
    """An instant as Recur writes it everywhere (API answers, events, pages, messages): UTC ISO 8601 with a Z,
    e.g. "2026-12-01T08:00:00Z". `timespec` as datetime.isoformat takes it: by default a fraction of a second
    only where there is one; this package's messages say "seconds"."""
    return instant.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")  # isoformat pads the year


def iso_or_none(instant: datetime | None) -> str | None:
    """iso(instant), and None for a time that is not set."""
    return None if instant is None else iso(instant)


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

