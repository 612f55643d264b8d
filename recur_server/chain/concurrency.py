"""Runs that contend for a start: another run of the schedule going, the workflow's concurrency limit
(max_concurrent_runs), cancelling the runs still going (overlap cancel_other), and deferring a tick that
must wait. Each writes inside a transaction its caller holds or opens here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select, update

from recur_server.chain import rows
from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.models import Run, RunStatus, Schedule, ScheduleStatus, UTCDateTime, Workflow

_SCHEDULES = Schedule.__table__
_RUNS = Run.__table__
_WORKFLOWS = Workflow.__table__

# A deferred link (waiting for a slot, or for a run that buffers it) looks again this often.
DEFER_SECONDS = 0.25


_DEFER = rawsql.Statement(
    update(_SCHEDULES)
    .where(rows.fence())
    .values(current_repeat=bindparam("p_repeat") + 1, updated_at=bindparam("p_now", type_=UTCDateTime()),
            waiting_note=bindparam("p_why"))
    .returning(_SCHEDULES.c.timeout_seconds, _SCHEDULES.c.queue)
)


@dataclass(frozen=True)
class Deferred:
    """A tick that must wait: it comes back as repeat + 1 (same nominal time) after DEFER_SECONDS."""

    repeat: int
    timeout_seconds: int
    why: str
    queue: str | None = None


def defer_tick(schedule_id: str, revision: int, repeat: int, retry: int, now: datetime, why: str) -> Deferred | None:
    """Fenced: the link's tick moves to a new repeat number (a new link ID) with the same nominal time, and the
    schedule's waiting_note says why. None when the schedule no longer expects this link."""
    with rawsql.transaction(db.engine) as tx:
        row = tx.first(_DEFER, {"p_id": schedule_id, "p_revision": revision, "p_repeat": repeat,
                                "p_retry": retry, "p_now": now, "p_why": why[:300]})
        if row is None:
            tx.rollback()
            return None
    return Deferred(repeat + 1, row[0], why, row[1])


_RUNNING_IN_WORKFLOW = rawsql.Statement(
    select(func.count())
    .select_from(_RUNS.join(_SCHEDULES, _RUNS.c.schedule_id == _SCHEDULES.c.id))
    .where((_SCHEDULES.c.workflow_id == bindparam("p_workflow_id")) & (_RUNS.c.status == RunStatus.RUNNING.value))
)
_WAITING_BEFORE = rawsql.Statement(
    select(func.count())
    .select_from(_SCHEDULES)
    .where(
        (_SCHEDULES.c.workflow_id == bindparam("p_workflow_id"))
        & (_SCHEDULES.c.status == ScheduleStatus.ACTIVE.value)
        & (_SCHEDULES.c.running_run_id.is_(None))
        & (_SCHEDULES.c.next_run_at < bindparam("p_nominal", type_=UTCDateTime()))
        & (_SCHEDULES.c.id != bindparam("p_id"))
    )
)
_LOCK_WORKFLOW = rawsql.Statement(
    select(_WORKFLOWS.c.id).where(_WORKFLOWS.c.id == bindparam("p_workflow_id")).with_for_update()
)


def workflow_is_full(tx: rawsql.Transaction, workflow_id: int, limit: int, schedule_id: str,
                     nominal: datetime | None, in_order: bool) -> bool:
    """Whether a run may not start now under the workflow's max_concurrent_runs (count excludes the caller's
    own row, which must not be inserted yet). With `in_order`, due ticks of the workflow's other schedules
    with an earlier nominal time go first: a slot goes to the oldest waiting tick.

    The workflow's row is locked first, so on PostgreSQL two claims cannot both see the last free slot
    (SQLite's transactions already hold its one write lock)."""
    tx.execute(_LOCK_WORKFLOW, {"p_workflow_id": workflow_id})
    running = tx.first(_RUNNING_IN_WORKFLOW, {"p_workflow_id": workflow_id})
    free = limit - (running[0] if running else 0)
    if free <= 0:
        return True
    if not in_order or nominal is None:
        return False
    earlier = tx.first(_WAITING_BEFORE, {"p_workflow_id": workflow_id, "p_nominal": nominal, "p_id": schedule_id})
    return (earlier[0] if earlier else 0) >= free


_OTHERS_RUNNING = rawsql.Statement(
    select(_RUNS.c.id)
    .where((_RUNS.c.schedule_id == bindparam("p_schedule_id")) & (_RUNS.c.status == RunStatus.RUNNING.value))
    .limit(1)
)


def another_is_running(tx: rawsql.Transaction, schedule_id: str) -> bool:
    """Whether a run of this schedule is going (the caller's own row not inserted yet)."""
    return send_running_check(tx, schedule_id).first() is not None


def send_running_check(tx: rawsql.Transaction, schedule_id: str) -> rawsql.Pending:
    """another_is_running, sent now and read later (a row: yes)."""
    return tx.send(_OTHERS_RUNNING, {"p_schedule_id": schedule_id})


# SKIP LOCKED (PostgreSQL; SQLite has one writer anyway): a run whose finish holds its row is ending by
# itself, and waiting for it would deadlock (its finish waits for the schedule's row, which the claim holds).
_RUNNING_UNLOCKED = (
    select(_RUNS.c.id)
    .where((_RUNS.c.schedule_id == bindparam("p_schedule_id")) & (_RUNS.c.status == RunStatus.RUNNING.value))
    .with_for_update(skip_locked=True)
)
_CANCEL_OTHERS = rawsql.Statement(
    update(_RUNS)
    .where(_RUNS.c.id.in_(_RUNNING_UNLOCKED) & (_RUNS.c.status == RunStatus.RUNNING.value))
    .values(status=RunStatus.CANCELLED.value, finished_at=bindparam("p_now", type_=UTCDateTime()),
            error=bindparam("p_error"))
    .returning(_RUNS.c.id, _RUNS.c.repeat_number, _RUNS.c.retry_number, _RUNS.c.worker)
)


def cancel_others(tx: rawsql.Transaction, schedule_id: str, by_tick: datetime, now: datetime) -> list[str]:
    """overlap=cancel_other: every run of the schedule still going is recorded cancelled (its outcome,
    when it comes, changes nothing: finishing is a compare-and-set on `running`). Returns what running.stop_jobs
    needs to stop them once this commits. Call it before inserting the caller's own run."""
    cancelled = tx.execute(_CANCEL_OTHERS, {
        "p_schedule_id": schedule_id, "p_now": now,
        "p_error": f"cancelled: the tick of {by_tick.isoformat()} started (overlap cancel_other)",
    })
    return [f"{schedule_id} {run_id} {'-' if repeat is None else repeat} {retry} {worker or '-'}"
            for run_id, repeat, retry, worker in cancelled]


def later(now: datetime, seconds: float = DEFER_SECONDS) -> datetime:
    return now + timedelta(seconds=seconds)
