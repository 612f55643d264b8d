"""The one way a link gets into Redis: from a committed schedule row, never ahead of the database."""

from __future__ import annotations

import logging

from flask import current_app
from redis.client import Pipeline
from redis.exceptions import RedisError
from rq import Queue

from app.chain.ids import link_id
from app.chain.links import cancel_link, put_link
from app.chain.planning import link_plan
from app.extensions import get_queue
from app.models import ScheduledJob, ScheduleStatus

log = logging.getLogger(__name__)


def hand_off(schedule: ScheduledJob, queue: Queue | None = None, pipeline: Pipeline | None = None) -> str | None:
    """Make the link this committed row expects the pending one; returns its ID, or None if none is due.

    Nothing is enqueued while a run of the schedule is going: that run hands off its own successor,
    and a link under the running one's ID would be overwritten by RQ's finishing write.
    With `pipeline`, the writes join it and the caller executes it.
    """
    if (
        schedule.status != ScheduleStatus.ACTIVE.value
        or schedule.running_run_id is not None
        or schedule.next_run_at is None
    ):
        return None
    plan = link_plan(schedule)
    put_link(queue or get_queue(), plan, current_app.config["RECUR_LINK_RESULT_TTL"], pipeline=pipeline)
    return plan.job_id


def withdraw(schedule: ScheduledJob, queue: Queue | None = None) -> None:
    """Take the schedule's expected pending link out of Redis (pause, delete), if Redis can be reached.

    Only tidiness depends on it: the committed row already fences that link, which would do nothing.
    """
    job_id = link_id(schedule.id, schedule.current_repeat, schedule.current_retry)
    try:
        cancel_link(queue or get_queue(), job_id)
    except RedisError as exc:
        log.warning("could not remove link %s from Redis (%s); it is fenced and will do nothing", job_id, exc)


def hand_off_or_leave_to_recovery(schedule: ScheduledJob) -> None:
    """Hand off after a commit; if Redis failed in between, the next reconciliation re-creates the link."""
    try:
        hand_off(schedule)
    except RedisError as exc:
        log.warning("could not hand off schedule %s (%s); recovery will re-create its link", schedule.id, exc)
