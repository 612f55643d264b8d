"""The one way a link gets into Redis: from a committed schedule row, never ahead of the database.

Every path that puts a link comes here: the API (create, re-plan, resume), a link handing off its
successor, a worker or the reconciler writing off a lost run, and the reconciler's repairs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from redis.client import Pipeline
from redis.exceptions import RedisError
from rq import Queue

from recur_server.chain.ids import link_id
from recur_server.chain.planning import link_plan
from recur_server.chain.redis_links import LinkPlan, cancel_link, put_link, put_links
from recur_server.infra.extensions import get_queue
from recur_server.models import Schedule, ScheduleStatus

log = logging.getLogger(__name__)


def hand_off(schedule: Schedule, queue: Queue | None = None, pipeline: Pipeline | None = None) -> str | None:
    """Make the link this committed row expects the pending one; returns its ID, or None if none is due
    (or a later tick of the schedule was put already: this row was read before it moved on).

    Nothing is enqueued while a run of the schedule is going: that run hands off its own successor,
    and a link under the running one's ID would be overwritten by RQ's finishing write. A row that
    expects no link (paused, done, dead) leaves none pending, and Redis forgets its schedule.
    With `pipeline`, the writes join it, the caller executes it, and the ID is returned as put.
    """
    queue = queue or get_queue()
    if schedule.status != ScheduleStatus.ACTIVE.value:
        cancel_link(queue, link_id(schedule.id, schedule.current_repeat, schedule.current_retry), pipeline)
        return None
    if schedule.running_run_id is not None or schedule.next_run_at is None:
        return None
    plan = link_plan(schedule)
    put = put_link(queue, plan, pipeline=pipeline)
    return plan.job_id if put is not False else None


def hand_off_plans(plans: list[LinkPlan], queue: Queue | None = None) -> list[str]:
    """hand_off in bulk, for the reconciler (each plan made from an active, idle row it just read), and for
    a deferred tick (its plan made from the row its deferral just committed). Returns the IDs put (a plan
    older than its schedule's last put is refused)."""
    return put_links(queue or get_queue(), plans)


def withdraw(schedule: Schedule, queue: Queue | None = None) -> None:
    """Take the schedule's expected pending link out of Redis (pause, delete), if Redis can be reached.

    Only tidiness depends on it: the committed row already fences that link, which would do nothing.
    """
    job_id = link_id(schedule.id, schedule.current_repeat, schedule.current_retry)
    try:
        cancel_link(queue or get_queue(), job_id)
    except RedisError as exc:
        log.warning("could not remove link %s from Redis (%s); it is fenced and will do nothing", job_id, exc)


def withdraw_each(schedules: Iterable[Schedule]) -> None:
    """withdraw, of each schedule (a batch deleted)."""
    for schedule in schedules:
        withdraw(schedule)


def hand_off_or_leave_to_recovery(schedule: Schedule) -> None:
    """Hand off after a commit; if Redis failed in between, the next reconciliation re-creates the link."""
    try:
        hand_off(schedule)
    except RedisError as exc:
        log.warning("could not hand off schedule %s (%s); recovery will re-create its link", schedule.id, exc)
