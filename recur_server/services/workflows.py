"""Workflows: made, edited and deleted the same way whoever asks (the API, the console). Their fields are
checked before they get here, by the API's WorkflowIn (the console's form is loaded by it too)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError
from sqlalchemy import select
from sqlalchemy import update as update_

from recur_server.chain import planning
from recur_server.chain.handoff import hand_off_plans
from recur_server.infra import transaction
from recur_server.infra.extensions import db
from recur_server.models import Schedule, ScheduleStatus, Workflow
from recur_server.services import schedules

log = logging.getLogger(__name__)


def create(owner_id: int, data: dict[str, Any], now: datetime) -> Workflow:
    workflow = Workflow(owner_id=owner_id, created_at=now, **data)
    db.session.add(workflow)
    transaction.commit()
    return workflow


def update(workflow: Workflow, data: dict[str, Any]) -> Workflow:
    """A changed task or limit applies to the next run that starts; runs going on are left alone. A changed
    queue moves the workflow's schedules: see move_links."""
    moved = "queue" in data and data["queue"] != workflow.queue
    for name, value in data.items():
        setattr(workflow, name, value)
    if moved:
        db.session.execute(update_(Schedule).where(Schedule.workflow_id == workflow.id)
                           .values(queue=workflow.queue))
    transaction.commit()
    if moved:
        transaction.after_commit(lambda: move_links(workflow.id))
    return workflow


MOVE_BATCH = 500


def move_links(workflow_id: int) -> int:
    """After a workflow's queue changed (committed): each of its schedules' pending link is put again, the
    same link (same ID, same tick) through the new queue, which takes its copy out of the old one in the
    same script, so no tick is lost or doubled. A link already taken runs where it is, and its successor
    goes through the new queue. If Redis fails on the way, the reconciler finds each link left in the old
    queue and puts it where its row says. Returns the links put."""
    put, last = 0, ""
    while True:
        batch = list(db.session.scalars(
            select(Schedule).where((Schedule.workflow_id == workflow_id) & (Schedule.id > last)
                                       & (Schedule.status == ScheduleStatus.ACTIVE.value)
                                       & Schedule.running_run_id.is_(None)
                                       & Schedule.next_run_at.is_not(None))
            .order_by(Schedule.id).limit(MOVE_BATCH)))
        if not batch:
            return put
        last = batch[-1].id
        plans = []
        for schedule in batch:
            try:
                plans.append(planning.link_plan(schedule))
            except Exception:  # its timing no longer builds: the reconciler invalidates it
                continue
        db.session.rollback()
        try:
            put += len(hand_off_plans(plans))
        except RedisError as exc:
            log.warning("could not move workflow %s's links (%s); the reconciler will", workflow_id, exc)
            return put


def delete(workflow: Workflow, now: datetime) -> None:
    """The workflow and its schedules, with their runs and pending links."""
    schedule_ids = list(db.session.scalars(select(Schedule.id).where(Schedule.workflow_id == workflow.id)))
    schedules.remove(schedule_ids, now)
    db.session.delete(db.session.get(Workflow, workflow.id))
    transaction.commit()
