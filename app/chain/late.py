"""A link that arrives after later ticks of its schedule came due: the catch_up policy decides (app.policies).

Checked only for links later than LATE_CHECK_SECONDS (no two ticks are closer than a second), so an
on-time link pays nothing for it.
"""

from __future__ import annotations

from datetime import datetime

from app import policies
from app.chain import planning
from app.models import ScheduledJob
from app.policies import CatchUp
from app.policies.catch_up import needs_decision

LATE_CHECK_SECONDS = 0.25


def is_late(scheduled_for: datetime, retry: int, now: datetime) -> bool:
    """Whether a link is late enough that later ticks may have come due (retries are never caught up)."""
    return not retry and (now - scheduled_for).total_seconds() >= LATE_CHECK_SECONDS


def catch_up_for(schedule: ScheduledJob, scheduled_for: datetime, now: datetime) -> CatchUp | None:
    """The catch-up decision for a late link of this (locked) row, or None when it runs its own tick."""
    if schedule.run_through is not None and scheduled_for <= schedule.run_through:
        return None  # a tick of a backlog already decided: it runs
    try:
        spec = planning.spec_of(schedule)
    except Exception:  # an invalid timing: the finish path records that
        return None
    window = schedule.catch_up_window_seconds
    if not needs_decision(scheduled_for, spec.next_after(scheduled_for), now, window):
        return None
    limit = schedule.catch_up_limit or 1
    outside, inside = policies.split_at_window(spec.next_after, scheduled_for, now, window, keep=limit)
    return policies.decide_catch_up(outside, inside, schedule.catch_up, limit)
