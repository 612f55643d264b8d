"""Retention: how long each kind of history is kept, and from which instant a row may go.

Pure decisions of (settings, a schedule's override, now); recur_server.services.retention carries them out in small
batches.
A number of days of 0 keeps that history for ever (its cutoff is None).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

# A schedule's own keep_runs_days (the API accepts 1 to this; NULL: the default).
MAX_KEEP_RUNS_DAYS = 3650


@dataclass(frozen=True)
class Retention:
    """Days each history is kept. Runs: at least the newest `runs_min` of each schedule whatever their age."""

    runs_days: int = 30
    runs_min: int = 100
    events_days: int = 7  # events, and finished deliveries with their attempts
    audit_days: int = 365  # schedule_events and owner_events
    backfills_days: int = 30  # finished (done or cancelled) backfills, from when they finished

    def __post_init__(self) -> None:
        for name in ("runs_days", "events_days", "audit_days", "backfills_days"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (keep for ever) or more, got {getattr(self, name)}")
        if self.runs_min < 1:
            raise ValueError(f"runs_min must be at least 1 (a schedule's newest run is always kept), "
                             f"got {self.runs_min}")


def cutoff(now: datetime, days: int) -> datetime | None:
    """Rows older than this may go; None: kept for ever (days 0)."""
    return None if days <= 0 else now - timedelta(days=days)


def runs_cutoff(now: datetime, retention: Retention, keep_runs_days: int | None) -> datetime | None:
    """A schedule's runs that started before this may go: its own keep_runs_days, else the default."""
    return cutoff(now, retention.runs_days if keep_runs_days is None else keep_runs_days)


def runs_boundary(run_cutoff: datetime | None, newest_kept_started: datetime | None) -> datetime | None:
    """Runs that started strictly before the returned instant may go (running ones never do).

    `newest_kept_started`: when the schedule's `runs_min`-th newest run started (None: it has fewer runs,
    so all are kept). Runs that started at or after it are the newest runs_min (ties kept too), so the
    boundary is the earlier of that and the cutoff."""
    if run_cutoff is None or newest_kept_started is None:
        return None
    return min(run_cutoff, newest_kept_started)
