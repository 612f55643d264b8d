"""Drive real RQ machinery step by step in-process: move due links with Recur's mover, run them with
an RQ SimpleWorker in burst mode, and step the clock from one due link to the next."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask import Flask
from rq import SimpleWorker
from rq.registry import ScheduledJobRegistry
from sqlalchemy import select

from recur_server.chain.mover import Mover
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import Run, Schedule, Workflow
from recur_server.services import schedules


def make_workflow(task: str = "builtin.noop") -> int:
    workflow = Workflow(name=task, task=task, owner_id=1, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    db.session.add(workflow)
    db.session.commit()
    return workflow.id


def make_schedule(now: datetime, task: str = "builtin.noop", **fields: Any) -> Schedule:
    """Create through the same code path as the API; returns a detached snapshot of the new row."""
    data = {"name": fields.pop("name", "test"), "workflow_id": make_workflow(task), "owner_id": 1, **fields}
    schedule = schedules.create(data, now)
    db.session.refresh(schedule)
    db.session.expunge(schedule)
    db.session.rollback()  # end the read transaction: a forked work horse must see the database as it is
    return schedule


def scheduled_ids(app: Flask) -> list[str]:
    registry = ScheduledJobRegistry(queue=get_queue(app))
    return registry.get_job_ids()


def next_due(app: Flask) -> datetime | None:
    head = Mover(get_redis(app), get_queue(app)).next_due()
    return None if head is None else datetime.fromtimestamp(head, UTC)


def run_due(app: Flask, now: datetime) -> int:
    """Move every link due at `now` onto the queue and run the queue dry; returns links moved."""
    queue = get_queue(app)
    moved = Mover(get_redis(app), queue).move_due(now)
    SimpleWorker([queue], connection=get_redis(app)).work(burst=True, with_scheduler=False)
    db.session.remove()
    return moved


def step(app: Flask, fake_clock: Any, extra_seconds: float = 0.0) -> datetime | None:
    """Jump the clock to the next due link (plus `extra_seconds`) and run it. None when nothing is due."""
    due = next_due(app)
    if due is None:
        return None
    from datetime import timedelta

    fake_clock.set(due + timedelta(seconds=extra_seconds))
    run_due(app, fake_clock.now)
    return due


def runs_of(schedule_id: str) -> list[Run]:
    rows = db.session.scalars(
        select(Run).where(Run.schedule_id == schedule_id).order_by(Run.started_at, Run.repeat_number, Run.retry_number)
    ).all()
    db.session.rollback()
    return list(rows)


def fresh(schedule_id: str) -> Schedule:
    db.session.expire_all()
    schedule = db.session.get(Schedule, schedule_id)
    assert schedule is not None
    return schedule
