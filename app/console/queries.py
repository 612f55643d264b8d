"""What the console's pages read, every query limited to the signed-in owner by app.auth.scope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select

from app.auth.scope import get_owned, scoped
from app.extensions import db
from app.models import Run, ScheduledJob, Workflow

STRIP = 20  # runs in each row's strip


@dataclass
class ScheduleFilter:
    status: str | None = None
    workflow_id: int | None = None
    text: str | None = None


def schedule_page(filters: ScheduleFilter, limit: int, offset: int) -> tuple[list[ScheduledJob], int]:
    statement = scoped(select(ScheduledJob), ScheduledJob)
    where = []
    if filters.status:
        where.append(ScheduledJob.status == filters.status)
    if filters.workflow_id:
        where.append(ScheduledJob.workflow_id == filters.workflow_id)
    if filters.text:
        pattern = "%" + filters.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(or_(ScheduledJob.name.ilike(pattern, escape="\\"), ScheduledJob.key.ilike(pattern, escape="\\")))
    total = db.session.scalar(scoped(select(func.count()).select_from(ScheduledJob), ScheduledJob).where(*where))
    rows = db.session.scalars(statement.where(*where).order_by(ScheduledJob.created_at.desc(), ScheduledJob.id)
                              .limit(limit).offset(offset)).all()
    return list(rows), int(total or 0)


def recent_runs(schedule_ids: list[str], per_schedule: int = STRIP) -> dict[str, list[Run]]:
    """The newest runs of each schedule (oldest first), in one query. The ids come from a scoped query."""
    if not schedule_ids:
        return {}
    number = func.row_number().over(partition_by=Run.schedule_id,
                                     order_by=(Run.started_at.desc(), Run.repeat_number.desc(),
                                               Run.retry_number.desc())).label("n")
    inner = select(Run.id, number).where(Run.schedule_id.in_(schedule_ids)).subquery()
    runs = db.session.scalars(select(Run).join(inner, inner.c.id == Run.id).where(inner.c.n <= per_schedule)
                              .order_by(Run.started_at, Run.repeat_number, Run.retry_number)).all()
    out: dict[str, list[Run]] = {i: [] for i in schedule_ids}
    for run in runs:
        out[run.schedule_id].append(run)
    return out


def run_page(schedule_id: str, limit: int, offset: int) -> tuple[list[Run], int]:
    """Runs of a schedule the caller owns (the caller checked it with get_owned)."""
    total = db.session.scalar(select(func.count()).select_from(Run).where(Run.schedule_id == schedule_id))
    rows = db.session.scalars(select(Run).where(Run.schedule_id == schedule_id)
                              .order_by(Run.started_at.desc(), Run.repeat_number.desc(), Run.retry_number.desc())
                              .limit(limit).offset(offset)).all()
    return list(rows), int(total or 0)


def owned_schedule(schedule_id: str) -> ScheduledJob | None:
    if len(schedule_id) != 36:
        return None
    return get_owned(ScheduledJob, schedule_id)


def workflows() -> list[Workflow]:
    return list(db.session.scalars(scoped(select(Workflow), Workflow).order_by(Workflow.name, Workflow.id)).all())


def schedules_per_workflow() -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {}
    statement: Any = select(ScheduledJob.workflow_id, ScheduledJob.status, func.count())
    for workflow_id, status, count in db.session.execute(
        scoped(statement, ScheduledJob).group_by(ScheduledJob.workflow_id, ScheduledJob.status)
    ).all():
        counts.setdefault(workflow_id, {})[status] = count
    return counts


def status_counts() -> dict[str, Any]:
    statement: Any = select(ScheduledJob.status, func.count())
    return {status: count for status, count in db.session.execute(
        scoped(statement, ScheduledJob).group_by(ScheduledJob.status)).all()}
