"""From a schedule row to the next nominal time and the pending link. Pure apart from reading the row."""

from __future__ import annotations

from datetime import datetime, timedelta

from app import timing
from app.chain.links import LinkPlan
from app.clock import ceil_second
from app.models import ScheduledJob


def spec_of(schedule: ScheduledJob) -> timing.Spec:
    return timing.build_spec(schedule.timing_fields())


def first_nominal(schedule: ScheduledJob, now: datetime) -> datetime | None:
    """The first tick of a new or resumed schedule: never at once.

    An interval without an explicit anchor is anchored on the (whole-second) creation or resume
    instant, so its first tick is exactly one interval later.
    """
    spec = spec_of(schedule)
    if schedule.interval_seconds and not schedule.anchor_explicit and schedule.anchor_at is not None:
        return spec.next_after(max(now, schedule.anchor_at))
    return spec.next_after(now)


def next_nominal(schedule: ScheduledJob, after_nominal: datetime, now: datetime) -> datetime | None:
    """Fixed rate: the next grid slot after the tick just run; slots already past are skipped, not run late."""
    return spec_of(schedule).next_after(max(now, after_nominal))


def backoff_base_seconds(schedule: ScheduledJob, nominal: datetime) -> int:
    """The interval that retries back off from: the schedule's interval, or for calendar kinds the
    gap between this tick and the one after it (at least one second)."""
    if schedule.interval_seconds:
        return schedule.interval_seconds
    following = spec_of(schedule).next_after(nominal)
    if following is None:
        return 60
    return max(1, int((following - nominal).total_seconds()))


def retry_at(schedule: ScheduledJob, nominal: datetime, now: datetime) -> datetime:
    delay = timing.retry_delay(backoff_base_seconds(schedule, nominal), schedule.current_retry)
    return ceil_second(now + timedelta(seconds=delay))


def link_plan(schedule: ScheduledJob) -> LinkPlan:
    """The link that should be pending for this schedule's current state."""
    assert schedule.next_run_at is not None
    nominal = schedule.next_run_at
    delay = 0
    if schedule.jitter_seconds and schedule.current_retry == 0:
        delay = timing.jitter_delay(
            schedule.id, nominal, schedule.jitter_seconds, spec_of(schedule).next_after(nominal)
        )
    return LinkPlan(
        schedule_id=schedule.id,
        revision=schedule.revision,
        repeat=schedule.current_repeat,
        retry=schedule.current_retry,
        scheduled_for=nominal,
        due_at=nominal + timedelta(seconds=delay),
        timeout_seconds=schedule.timeout_seconds,
    )

