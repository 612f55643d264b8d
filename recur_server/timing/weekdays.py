"""Parsing "not_on" weekday lists. Numbers follow cron: 0 = Sunday ... 6 = Saturday (7 = Sunday too)."""
from __future__ import annotations

from collections.abc import Iterable

from .errors import TimingError

# Cron numbering: 0 = Sunday .. 6 = Saturday.
NAMES = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_BY_NAME = {name.lower(): number for number, name in enumerate(NAMES)}
_BY_NAME.update({name[:3].lower(): number for number, name in enumerate(NAMES)})


def cron_weekday(python_weekday: int) -> int:
    """Convert datetime.weekday() (0 = Monday) to cron numbering (0 = Sunday)."""
    return (python_weekday + 1) % 7


def _one(item: object) -> int:
    """One weekday given as a name ("sat", "Saturday", "SAT") or a cron number 0-7."""
    if isinstance(item, bool):
        raise TimingError("not_on", f"expected a weekday name or number 0-6, got {item!r}")
    if isinstance(item, int):
        if not 0 <= item <= 7:
            raise TimingError("not_on", f"weekday number {item} out of range 0-6 (0 and 7 = Sunday)")
        return item % 7
    if isinstance(item, str):
        key = item.strip().lower()
        if key.isdigit():
            return _one(int(key))
        if key in _BY_NAME:
            return _BY_NAME[key]
        raise TimingError("not_on", f"unknown weekday {item!r} (e.g. 'sat', 'Saturday', or 0-6, 0 = Sunday)")
    raise TimingError("not_on", f"expected a weekday name or number 0-6, got {type(item).__name__}")


def parse_weekdays(items: Iterable[object] | str) -> frozenset[int]:
    """Parse a list of weekdays (or a comma-separated string) into a set of cron weekday numbers."""
    if isinstance(items, str):
        items = [part for part in items.split(",") if part.strip()]
    try:
        values = list(items)
    except TypeError:
        raise TimingError("not_on", f"expected a list of weekdays, got {type(items).__name__}") from None
    days = frozenset(_one(item) for item in values)
    if len(days) == 7:
        raise TimingError("not_on", "every day of the week is excluded: the schedule could never run")
    return days


def describe_weekdays(days: frozenset[int]) -> str:
    """E.g. "not on Saturday, Sunday" (listed Monday first)."""
    ordered = sorted(days, key=lambda d: (d + 6) % 7)
    return "not on " + ", ".join(NAMES[d] for d in ordered)
