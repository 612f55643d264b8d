"""State transitions of a schedule, each one database transaction guarded by compare-and-set.

These are the only writers of a schedule's chain state (repeat, retry, counters, running run).
Each returns what the caller needs to hand off the next link *after* the commit (commit, then enqueue).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from app.chain import planning
from app.extensions import db
from app.models import Run, RunStatus, ScheduledJob, ScheduleStatus, UTCDateTime, Workflow


@dataclass(frozen=True)
class Claim:
    run_id: str
    task: str
    name: str
    payload: Any
    timeout_seconds: int


# The hot path (claim, finish) runs Core statements, built once, on the session's connection: the
# ORM's unit of work cost more per run than everything else a link does.
_SCHEDULES = ScheduledJob.__table__
_RUNS = Run.__table__


def _expects(schedule_id: Any, revision: Any, repeat: Any, retry: Any) -> Any:
    """The WHERE clause of the fence: active, same revision, same tick, nothing running."""
    columns = _SCHEDULES.c
    return (
        (columns.id == schedule_id)
        & (columns.status == ScheduleStatus.ACTIVE.value)
        & (columns.revision == revision)
        & (columns.current_repeat == repeat)
        & (columns.current_retry == retry)
        & (columns.running_run_id.is_(None))
    )


# The claim, built once: the compare-and-set UPDATE hands back what the run needs (RETURNING), so a
# claim is one UPDATE, one INSERT and a commit.
_CLAIM = (
    update(_SCHEDULES)
    .where(_expects(bindparam("p_id"), bindparam("p_revision"), bindparam("p_repeat"), bindparam("p_retry")))
    .values(
        running_run_id=bindparam("p_run_id"),
        last_run_at=bindparam("p_now", type_=UTCDateTime()),
        updated_at=bindparam("p_now", type_=UTCDateTime()),
    )
    .returning(
        _SCHEDULES.c.name,
        _SCHEDULES.c.trigger_payload,
        _SCHEDULES.c.timeout_seconds,
        select(Workflow.task).where(Workflow.id == _SCHEDULES.c.workflow_id).scalar_subquery(),
    )
)
_RECORD_RUN = insert(_RUNS)


def claim_tick(
    schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime, now: datetime,
    worker: str | None,
) -> Claim | None:
    """Claim this tick for one run, or return None if the schedule no longer expects this link.

    One UPDATE ... WHERE is the compare-and-set: two copies of a link cannot both pass it.
    """
    run_id = str(uuid.uuid4())
    try:
        connection = db.session.connection()
        claimed = connection.execute(_CLAIM, {
            "p_id": schedule_id, "p_revision": revision, "p_repeat": repeat, "p_retry": retry,
            "p_run_id": run_id, "p_now": now,
        }).first()
        if claimed is None or claimed[3] is None:  # fenced out, or its workflow is gone
            db.session.rollback()
            return None
        name, payload, timeout_seconds, task = claimed
        connection.execute(_RECORD_RUN, [{
            "id": run_id, "schedule_id": schedule_id, "repeat_number": repeat, "retry_number": retry,
            "scheduled_for": scheduled_for, "started_at": now, "status": RunStatus.RUNNING.value, "worker": worker,
        }])
        db.session.commit()
        return Claim(run_id, task, name, payload, timeout_seconds)
    except BaseException:
        db.session.rollback()
        raise


def _commit_keeping(schedule: ScheduledJob) -> ScheduledJob:
    """Commit, and keep the row's values as written instead of expiring them.

    The caller hands off the next link from exactly these values; reloading them would cost a query,
    and would open a transaction (a write lock, on SQLite) that an in-process worker keeps until its next job.
    """
    session = db.session()
    session.expire_on_commit = False
    try:
        session.commit()
    finally:
        session.expire_on_commit = True
    return schedule


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
        return _commit_keeping(schedule)
    except BaseException:
        db.session.rollback()
        raise


# Compare-and-set on the run; hands back what the schedule's update needs.
_FINISH_RUN = (
    update(_RUNS)
    .where((_RUNS.c.id == bindparam("p_run_id")) & (_RUNS.c.status == RunStatus.RUNNING.value))
    .values(status=bindparam("p_status"), finished_at=bindparam("p_finished_at", type_=UTCDateTime()),
            error=bindparam("p_error"))
    .returning(_RUNS.c.schedule_id, _RUNS.c.scheduled_for)
)
_LOAD_SCHEDULE = select(_SCHEDULES).where(_SCHEDULES.c.id == bindparam("p_id")).with_for_update()
# What finishing a run may change; written only while the row still names this run as running.
_CHAIN_COLUMNS = (
    "status", "current_repeat", "current_retry", "next_run_at", "run_count", "error_count", "last_error",
    "running_run_id", "updated_at",
)
_SAVE_CHAIN_STATE = (
    update(_SCHEDULES)
    .where((_SCHEDULES.c.id == bindparam("p_id")) & (_SCHEDULES.c.running_run_id == bindparam("p_run_id")))
    .values({name: bindparam(f"p_{name}", type_=_SCHEDULES.c[name].type) for name in _CHAIN_COLUMNS})
)


def finish_run(run_id: str, status: RunStatus, error: str | None, now: datetime) -> ScheduledJob | None:
    """Record the outcome of a claimed run and advance the schedule by the success/retry rules.

    Compare-and-set on the run: only the first to finish a run (the link itself, the worker that saw
    its horse die, or the reconciler that found it lost) applies the outcome; the others get None.
    Returns the schedule as committed, detached from the session (a snapshot to hand off from).
    """
    try:
        connection = db.session.connection()
        finished = connection.execute(_FINISH_RUN, {
            "p_run_id": run_id, "p_status": status.value, "p_finished_at": now, "p_error": error,
        }).first()
        if finished is None:
            db.session.rollback()
            return None
        schedule_id, nominal = finished
        row = connection.execute(_LOAD_SCHEDULE, {"p_id": schedule_id}).first()
        if row is None or row.running_run_id != run_id:
            # Deleted, or the run was already written off: keep the run's record, touch nothing else.
            db.session.commit()
            return None
        schedule = ScheduledJob(**row._mapping)  # a snapshot, never added to the session
        _apply_outcome(schedule, status, error, nominal, now)
        values = {f"p_{name}": getattr(schedule, name) for name in _CHAIN_COLUMNS}
        connection.execute(_SAVE_CHAIN_STATE, {"p_id": schedule_id, "p_run_id": run_id, **values})
        db.session.commit()
        return schedule
    except BaseException:
        db.session.rollback()
        raise


def _apply_outcome(schedule: ScheduledJob, status: RunStatus, error: str | None, nominal: datetime,
                   now: datetime) -> None:
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
            _advance(schedule, nominal, now)
    else:
        schedule.error_count += 1
        schedule.last_error = error
        schedule.current_retry += 1
        if schedule.current_retry > schedule.max_retries:
            _finish(schedule, ScheduleStatus.DEAD)
        elif schedule.status == ScheduleStatus.ACTIVE.value:
            schedule.next_run_at = planning.retry_at(schedule, nominal, now)


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
