"""The protocol every kind of timing implements: raw nominal times, before any constraint."""
from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Timing(Protocol):
    """One kind of timing (interval, cron, rrule, at) without constraints."""

    @property
    def kind(self) -> str:
        """"interval", "cron", "rrule" or "at"."""
        ...

    @property
    def is_one_shot(self) -> bool:
        """True when the timing fires at most once."""
        ...

    def next_after(self, instant: datetime) -> datetime | None:
        """First nominal UTC instant strictly after the UTC `instant`, or None if there is none."""
        ...

    def minutes_of_day(self) -> frozenset[int] | None:
        """The local minutes of the day (hour * 60 + minute) its runs can have; None when not fixed."""
        ...

    def describe(self) -> str:
        """Human-readable sentence for the timing alone."""
        ...
