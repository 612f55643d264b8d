"""Whether a live worker can run a schedule's task. Each worker lists the tasks it can run in its beat
(recur_server.infra.worker_beats); a schedule whose task no live worker of its queue knows is answered with a warning,
not refused: the workers may be deployed after the schedule (a new module synced before the workers restart)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import current_app
from redis.exceptions import RedisError
from sqlalchemy import select

from recur_server.infra import worker_beats
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.in_lists import in_batches
from recur_server.models import Schedule, Workflow


def warnings_for(schedule: Schedule, now: datetime) -> list[str]:
    """What to tell whoever made or changed `schedule` about the workers that would run it (none: all is well,
    or Redis could not be asked)."""
    return Warnings(now).of(schedule)


class Warnings:
    """warnings_for, of many schedules (an apply, a sync): the workers' beats read once, each queue and workflow
    asked once."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self._beats: list[worker_beats.Beat] | None = None
        self._asked: dict[tuple[str | None, int], list[str]] = {}
        self._tasks: dict[int, str] = {}

    def of_each(self, schedules: list[Schedule]) -> list[list[str]]:
        """`of` each schedule, their workflows' tasks read in one query per IN_BATCH (infra.in_lists)."""
        for batch in in_batches(sorted({s.workflow_id for s in schedules} - set(self._tasks))):
            self._tasks.update(_read(select(Workflow.id, Workflow.task).where(Workflow.id.in_(batch))))
        return [self.of(schedule) for schedule in schedules]

    def of(self, schedule: Schedule) -> list[str]:
        asked = (schedule.queue, schedule.workflow_id)
        if asked not in self._asked:
            self._asked[asked] = self._said(schedule)
        return self._asked[asked]

    def _said(self, schedule: Schedule) -> list[str]:
        task = self._tasks.get(schedule.workflow_id) or _task_of(schedule.workflow_id)
        if task is None:
            return []
        queue = schedule.queue or current_app.config["RECUR_QUEUE"]
        if self._beats is None:
            try:
                self._beats = worker_beats.read(get_redis())
            except RedisError:
                return []
        live, knowing = worker_beats.knowing(self._beats, queue, task, self.now.timestamp(),
                                             float(current_app.config["RECUR_WORKER_GRACE_SECONDS"]))
        if knowing:
            return []
        if not live:
            return [f"no live worker listens on queue {queue!r}: this schedule's runs wait until one starts"]
        return [f"no live worker of queue {queue!r} knows task {task!r} ({live} live without it): deploy "
                "its module (RECUR_TASK_MODULES) to them: its runs wait until a worker that knows it takes them"]


def _task_of(workflow_id: int) -> str | None:
    """The workflow's task: read in the session's transaction when one is open, else in a read of its own,
    ended at once (an answer written after its commit leaves no transaction open: on SQLite each one holds
    the write lock)."""
    rows = _read(select(Workflow.task).where(Workflow.id == workflow_id))
    return rows[0][0] if rows else None


def _read(statement: Any) -> list[Any]:
    """The rows of `statement`, read as _task_of says."""
    if db.session().in_transaction():
        return list(db.session.execute(statement))
    with db.engine.connect() as connection:
        return list(connection.execute(statement))
