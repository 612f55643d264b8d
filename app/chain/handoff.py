"""The one way a link gets into Redis: from a committed schedule row, never ahead of the database."""

from __future__ import annotations

from flask import current_app
from rq import Queue

from app.chain.ids import link_id
from app.chain.links import cancel_link, put_link
from app.chain.planning import link_plan
from app.extensions import get_queue
from app.models import ScheduledJob, ScheduleStatus


def hand_off(schedule: ScheduledJob, queue: Queue | None = None) -> str | None:
    """Make the link this committed row expects the pending one; returns its ID, or None if none is due.

    Nothing is enqueued while a run of the schedule is going: that run hands off its own successor,
    and a link under the running one's ID would be overwritten by RQ's finishing write.
    """
    if (
        schedule.status != ScheduleStatus.ACTIVE.value
        or schedule.running_run_id is not None
        or schedule.next_run_at is None
    ):
        return None
    plan = link_plan(schedule)
    put_link(queue or get_queue(), plan, current_app.config["RECUR_LINK_RESULT_TTL"])
    return plan.job_id


def withdraw(schedule: ScheduledJob, queue: Queue | None = None) -> None:
    """Take the schedule's expected pending link out of Redis (pause, delete)."""
    cancel_link(queue or get_queue(), link_id(schedule.id, schedule.current_repeat, schedule.current_retry))
