"""One-shot timing: a single run at a given instant."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .errors import TimingError
from .instants import iso, to_utc


@dataclass(frozen=True)
class AtTiming:
    """Runs once at `at` (UTC)."""

    at: datetime
    kind: str = "at"
    is_one_shot: bool = True

    def next_after(self, instant: datetime) -> datetime | None:
        """`at` while it is still strictly after `instant`, then None."""
        return self.at if self.at > instant else None

    def minutes_of_day(self) -> None:
        """Not asked: one run, which the search finds in one step."""
        return None

    def describe(self) -> str:
        """E.g. "Once at 2026-12-01T08:00:00Z"."""
        return f"Once at {iso(self.at, 'seconds')}"


def validate_not_past(at: datetime, now: datetime) -> None:
    """Reject a one-shot time that is not in the future (the API calls this with its own now)."""
    at_utc, now_utc = to_utc(at, "at"), to_utc(now, "now")
    if at_utc <= now_utc:
        raise TimingError("at", f"{iso(at_utc, 'seconds')} is not in the future (now is {iso(now_utc, 'seconds')})")
