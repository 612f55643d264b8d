"""The chain's side of app.policies: recording gaps, passing a tick by, deferring one, cancelling runs,
and the per-workflow concurrency limit. Each writes inside a transaction its caller holds or opens here.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update

from app import metrics, rawsql
from app.extensions import db
from app.models import Run, RunStatus, RunTrigger, ScheduledJob, ScheduleStatus, UTCDateTime, Workflow
from app.policies import Gap

_SCHEDULES = ScheduledJob.__table__
_RUNS = Run.__table__
_WORKFLOWS = Workflow.__table__

# A deferred link (waiting for a slot, or for a run that buffers it) looks again this often.
DEFER_SECONDS = 0.25

_RECORD_GAP = rawsql.Statement(insert(_RUNS).values(
    id=bindparam("p_id"), schedule_id=bindparam("p_schedule_id"), repeat_number=None, retry_number=0,
    scheduled_for=bindparam("p_first", type_=UTCDateTime()), started_at=bindparam("p_now", type_=UTCDateTime()),
    finished_at=bindparam("p_now", type_=UTCDateTime()), status=bindparam("p_status"), error=bindparam("p_error"),
    worker=None, trigger=bindparam("p_trigger"), reason=bindparam("p_reason"), ticks=bindparam("p_ticks"),
))

_STATUS_OF_REASON = {
    "catch_up_skip": RunStatus.MISSED, "catch_up_window": RunStatus.MISSED, "catch_up_limit": RunStatus.MISSED,
    "overlap": RunStatus.SKIPPED, "overlap_limit": RunStatus.SKIPPED, "concurrency": RunStatus.SKIPPED,
    "breaker": RunStatus.SKIPPED,
}


def gap_text(reason: str, gap: Gap) -> str:
    count = f"{gap.count}" if gap.exact else f"at least {gap.count}"
    ticks = "tick" if gap.count == 1 else "ticks"
    span = gap.first.isoformat() if gap.first == gap.last else f"{gap.first.isoformat()} to {gap.last.isoformat()}"
    return f"{reason}: {count} {ticks} not run ({span})"


def record_gaps(tx: rawsql.Transaction, schedule_id: str, gaps: list[tuple[str, Gap]], now: datetime,
                trigger: str = RunTrigger.SCHEDULE.value) -> None:
    """One run row per gap: status missed or skipped, the reason, how many ticks, the first's time."""
    for reason, gap in gaps:
        status = _STATUS_OF_REASON[reason].value
        tx.after_commit.append(functools.partial(metrics.ticks_not_run, status, reason, gap.count))
        tx.execute(_RECORD_GAP, {
            "p_id": str(uuid.uuid4()), "p_schedule_id": schedule_id, "p_first": gap.first, "p_now": now,
            "p_status": status, "p_error": gap_text(reason, gap), "p_trigger": trigger,
            "p_reason": reason, "p_ticks": gap.count,
        })


def _fence(schedule_id: Any, revision: Any, repeat: Any, retry: Any) -> Any:
    columns = _SCHEDULES.c
    return (
        (columns.id == schedule_id) & (columns.status == ScheduleStatus.ACTIVE.value)
        & (columns.revision == revision) & (columns.current_repeat == repeat) & (columns.current_retry == retry)
        & (columns.running_run_id.is_(None))
    )


_DEFER = rawsql.Statement(
    update(_SCHEDULES)
    .where(_fence(bindparam("p_id"), bindparam("p_revision"), bindparam("p_repeat"), bindparam("p_retry")))
    .values(current_repeat=bindparam("p_repeat") + 1, updated_at=bindparam("p_now", type_=UTCDateTime()))
    .returning(_SCHEDULES.c.timeout_seconds)
)


@dataclass(frozen=True)
class Deferred:
    """A tick that must wait: it comes back as repeat + 1 (same nominal time) after DEFER_SECONDS."""

    repeat: int
    timeout_seconds: int
    why: str


def defer_tick(schedule_id: str, revision: int, repeat: int, retry: int, now: datetime, why: str) -> Deferred | None:
    """Fenced: the link's tick moves to a new repeat number (a new link ID) with the same nominal time.
    None when the schedule no longer expects this link."""
    with rawsql.transaction(db.engine) as tx:
        row = tx.first(_DEFER, {"p_id": schedule_id, "p_revision": revision, "p_repeat": repeat,
                                "p_retry": retry, "p_now": now})
        if row is None:
            tx.rollback()
            return None
    return Deferred(repeat + 1, row[0], why)


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
    when it comes, changes nothing: finishing is a compare-and-set on `running`). Returns what stop_jobs
    needs to stop them once this commits. Call it before inserting the caller's own run."""
    rows = tx.execute(_CANCEL_OTHERS, {
        "p_schedule_id": schedule_id, "p_now": now,
        "p_error": f"cancelled: the tick of {by_tick.isoformat()} started (overlap cancel_other)",
    })
    return [f"{schedule_id} {run_id} {'-' if repeat is None else repeat} {retry} {worker or '-'}"
            for run_id, repeat, retry, worker in rows]


def stop_jobs(cancelled: list[str]) -> None:
    """Ask the workers running these runs' jobs to stop them (a forking or pool worker kills the process
    running the task; an in-process worker cannot, and its run's late outcome is ignored)."""
    from rq.command import send_command

    from app.chain.ids import link_id
    from app.chain.outside import OUTSIDE_KEY
    from app.extensions import get_redis

    redis = get_redis()
    for entry in cancelled:  # the run is recorded cancelled whatever becomes of its process
        schedule_id, run_id, repeat, retry, worker = entry.split(" ", 4)
        listed: Any = redis.hget(OUTSIDE_KEY, run_id)
        job_id = listed.decode().split(" ")[1] if listed else (
            link_id(schedule_id, int(repeat), int(retry)) if repeat != "-" else None)
        if job_id is not None and worker != "-":  # the run's row names the worker that claimed it
            with contextlib.suppress(Exception):
                send_command(redis, worker, "stop-job", job_id=job_id)


def outside_job_id(run_id: str) -> str:
    return f"recur-run-{run_id}"


def later(now: datetime, seconds: float = DEFER_SECONDS) -> datetime:
    return now + timedelta(seconds=seconds)
