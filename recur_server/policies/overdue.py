"""Overdue: an active schedule whose next run (next_run_at) is past by more than its grace, as every reader
sees it (the API's `overdue`, the console's badge, `recur schedules`), with or without an alert set.

Pure and decided at read time from `now`: nothing is stored, so a schedule stops being overdue the moment its
chain moves on. The grace is the schedule's alert_after_seconds when set (the point from which its missed-run
alert would call it late), else RECUR_OVERDUE_AFTER_SECONDS.
"""

from __future__ import annotations

from datetime import datetime


def grace_seconds(alert_after_seconds: int | None, default_seconds: float) -> float:
    """How far past its next run a schedule may be before it is overdue: its alert_after_seconds, if set."""
    return float(alert_after_seconds) if alert_after_seconds is not None else default_seconds


def overdue_seconds(active: bool, next_run_at: datetime | None, grace: float, now: datetime) -> float | None:
    """How long past its next run an overdue schedule is (seconds from next_run_at to `now`); None when it is
    not overdue: not active (paused, done, dead and invalid schedules wait on nobody), nothing planned, or
    not more than `grace` seconds past (exactly at the grace is not yet overdue)."""
    if not active or next_run_at is None:
        return None
    past = (now - next_run_at).total_seconds()
    return past if past > grace else None
