"""State transitions of a schedule, each one database transaction guarded by compare-and-set.

These are the only writers of a schedule's chain state (repeat, retry, counters, running run).
Each returns what the caller needs to hand off the next link *after* the commit (commit, then enqueue).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import update

from app.chain import planning
from app.extensions import db
from app.models import Run, RunStatus, ScheduledJob, ScheduleStatus, Workflow


@dataclass(frozen=True)
class Claim:
    run_id: str
    task: str
    name: str
    payload: Any
    timeout_seconds: int


def _expects(schedule_id: str, revision: int, repeat: int, retry: int) -> Any:
    """The WHERE clause of the fence: active, same revision, same tick, nothing running."""
    return (
        (ScheduledJob.id == schedule_id)
        & (ScheduledJob.status == ScheduleStatus.ACTIVE.value)
        & (ScheduledJob.revision == revision)
        & (ScheduledJob.current_repeat == repeat)
        & (ScheduledJob.current_retry == retry)
        & (ScheduledJob.running_run_id.is_(None))
    )


def claim_tick(
    schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime, now: datetime,
    worker: str | None,
) -> Claim | None:
    """Claim this tick for one run, or return None if the schedule no longer expects this link.

    One UPDATE ... WHERE is the compare-and-set: two copies of a link cannot both pass it.
    """
    run_id = str(uuid.uuid4())
    try:
        claimed = db.session.execute(
            update(ScheduledJob)
            .where(_expects(schedule_id, revision, repeat, retry))
            .values(running_run_id=run_id, last_run_at=now, updated_at=now)
            .execution_options(synchronize_session=False)
        ).rowcount
        if claimed != 1:
            db.session.rollback()
            return None
        schedule = db.session.get(ScheduledJob, schedule_id, populate_existing=True)
        workflow = db.session.get(Workflow, schedule.workflow_id) if schedule else None
        if schedule is None or workflow is None:
            db.session.rollback()
            return None
        db.session.add(
            Run(
                id=run_id, schedule_id=schedule_id, repeat_number=repeat, retry_number=retry,
                scheduled_for=scheduled_for, started_at=now, status=RunStatus.RUNNING.value, worker=worker,
            )
        )
        claim = Claim(run_id, workflow.task, schedule.name, schedule.trigger_payload, schedule.timeout_seconds)
        db.session.commit()
        return claim
    except BaseException:
        db.session.rollback()
        raise


def skip_tick(
    schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime, now: datetime,
    reason: str,
) -> ScheduledJob | None:
    """Record this tick as skipped (another run of the schedule is still going) and move to the next tick."""
    try:
        schedule = db.session.get(ScheduledJob, schedule_id, with_for_update=True, populate_existing=True)
        if schedule is None or not _matches(schedule, revision, repeat, retry):
            db.session.rollback()
            return None
        db.session.add(
            Run(
                schedule_id=schedule_id, repeat_number=repeat, retry_number=retry, scheduled_for=scheduled_for,
                started_at=now, finished_at=now, status=RunStatus.SKIPPED.value, error=reason,
            )
        )
        schedule.current_repeat += 1
        schedule.current_retry = 0
        _advance(schedule, scheduled_for, now)
        db.session.commit()
        return schedule
    except BaseException:
        db.session.rollback()
        raise


def finish_run(run_id: str, status: RunStatus, error: str | None, now: datetime) -> ScheduledJob | None:
    """Record the outcome of a claimed run and advance the schedule by the success/retry rules.

    Compare-and-set on the run: only the first to finish a run (the link itself, the worker that saw
    its horse die, or the reconciler that found it lost) applies the outcome; the others get None.
    """
    try:
        finished = db.session.execute(
            update(Run)
            .where((Run.id == run_id) & (Run.status == RunStatus.RUNNING.value))
            .values(status=status.value, finished_at=now, error=error)
            .execution_options(synchronize_session=False)
        ).rowcount
        if finished != 1:
            db.session.rollback()
            return None
        run = db.session.get(Run, run_id, populate_existing=True)
        schedule = db.session.get(ScheduledJob, run.schedule_id, with_for_update=True, populate_existing=True)
        if schedule is None or schedule.running_run_id != run_id:
            # Deleted, or the run was already written off: keep the run's record, touch nothing else.
            db.session.commit()
            return None
        schedule.running_run_id = None
        schedule.updated_at = now
        if status is RunStatus.SUCCEEDED:
            schedule.run_count += 1
            schedule.current_repeat += 1
            schedule.current_retry = 0
            schedule.last_error = None
            if schedule.total_repeats and schedule.run_count >= schedule.total_repeats:
                _finish(schedule, ScheduleStatus.DONE)
            else:
                _advance(schedule, run.scheduled_for, now)
        else:
            schedule.error_count += 1
            schedule.last_error = error
            schedule.current_retry += 1
            if schedule.current_retry > schedule.max_retries:
                _finish(schedule, ScheduleStatus.DEAD)
            elif schedule.status == ScheduleStatus.ACTIVE.value:
                schedule.next_run_at = planning.retry_at(schedule, run.scheduled_for, now)
        db.session.commit()
        return schedule
    except BaseException:
        db.session.rollback()
        raise


def _matches(schedule: ScheduledJob, revision: int, repeat: int, retry: int) -> bool:
    return (
        schedule.status == ScheduleStatus.ACTIVE.value
        and schedule.revision == revision
        and schedule.current_repeat == repeat
        and schedule.current_retry == retry
        and schedule.running_run_id is None
    )


def _advance(schedule: ScheduledJob, after_nominal: datetime, now: datetime) -> None:
    """Plan the next tick; a paused schedule keeps no next time, a schedule with no more ticks is done."""
    if schedule.status != ScheduleStatus.ACTIVE.value:
        schedule.next_run_at = None
        return
    following = planning.next_nominal(schedule, after_nominal, now)
    if following is None:
        _finish(schedule, ScheduleStatus.DONE)
    else:
        schedule.next_run_at = following


def _finish(schedule: ScheduledJob, status: ScheduleStatus) -> None:
    schedule.status = status.value
    schedule.next_run_at = None


def write_off(schedule_id: str, repeat: int, retry: int, reason: str, now: datetime) -> ScheduledJob | None:
    """Fail the running attempt of tick (repeat, retry) because the process running it is gone."""
    schedule = db.session.get(ScheduledJob, schedule_id, populate_existing=True)
    run_id = schedule.running_run_id if schedule else None
    db.session.rollback()
    if run_id is None:
        return None
    run = db.session.get(Run, run_id)
    matches = run is not None and run.repeat_number == repeat and run.retry_number == retry
    db.session.rollback()
    if not matches:
        return None
    return finish_run(run_id, RunStatus.FAILED, reason, now)
