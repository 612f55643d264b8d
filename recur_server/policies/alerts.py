"""Missed-run alerts: a schedule is late when the tick it waits for is older than alert_after_seconds."""

from __future__ import annotations

from datetime import datetime


def is_late(expected: datetime | None, alert_after_seconds: int | None, now: datetime) -> bool:
    """`expected`: the nominal time of the tick the schedule waits to complete (its next_run_at: the
    pending tick, the running one, or the one being retried). None: nothing expected, never late."""
    if expected is None or alert_after_seconds is None:
        return False
    return (now - expected).total_seconds() > alert_after_seconds


def expected_tick(next_run_at: datetime | None, detached_since: datetime | None) -> datetime | None:
    """The tick a schedule waits to see succeed: its chain's next_run_at, or, for overlap allow_all and
    cancel_other, whose runs leave the chain as they start, the oldest tick that left it since the last success
    (detached_since) when that is older."""
    known = [instant for instant in (next_run_at, detached_since) if instant is not None]
    return min(known) if known else None
