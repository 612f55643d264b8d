"""What a schedule's run history adds up to (Temporal's describe): counts by trigger, status and reason,
what runs now, what is buffered, and the most recent runs. Read-only; the queries use the runs' indexes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from app.chain import planning
from app.extensions import db
from app.models import Run, RunStatus, ScheduledJob
from app.policies import ticks_between

_NOT_RUN = (RunStatus.MISSED.value, RunStatus.SKIPPED.value)


def stats(schedule: ScheduledJob) -> dict[str, Any]:
    rows = db.session.execute(
        select(Run.status, Run.trigger, Run.reason, func.count(), func.sum(Run.ticks))
        .where(Run.schedule_id == schedule.id)
        .group_by(Run.status, Run.trigger, Run.reason)
    ).all()
    by_trigger: dict[str, int] = {}
    by_status: dict[str, int] = {}
    missed: dict[str, int] = {}
    skipped: dict[str, int] = {}
    runs = 0
    for status, trigger, reason, count, ticks in rows:
        if status == RunStatus.MISSED.value:
            missed[reason or "unknown"] = missed.get(reason or "unknown", 0) + int(ticks or count)
        elif status == RunStatus.SKIPPED.value and reason is not None:
            skipped[reason] = skipped.get(reason, 0) + int(ticks or count)
        else:  # taken: it started (a skip recorded by an older release has no reason: counted here)
            runs += count
            by_trigger[trigger] = by_trigger.get(trigger, 0) + count
        by_status[status] = by_status.get(status, 0) + count
    running = by_status.get(RunStatus.RUNNING.value, 0)
    return {
        "runs": runs, "runs_by_trigger": by_trigger, "runs_by_status": by_status, "ticks_missed": missed,
        "ticks_skipped": skipped, "running": running, "buffered": _buffered(schedule),
    }


def _buffered(schedule: ScheduledJob) -> int:
    """Ticks of a backlog (catch_up=all, overlap=buffer_*) waiting to run: from next_run_at to run_through."""
    if schedule.run_through is None or schedule.next_run_at is None or schedule.next_run_at > schedule.run_through:
        return 0
    try:
        spec = planning.spec_of(schedule)
    except Exception:
        return 0
    return 1 + len(ticks_between(spec.next_after, schedule.next_run_at, schedule.run_through, limit=10_000))


def recent(schedule: ScheduledJob, count: int = 10) -> list[Run]:
    return list(db.session.scalars(
        select(Run).where(Run.schedule_id == schedule.id).order_by(Run.started_at.desc()).limit(count)))
