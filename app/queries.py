"""The reads the API and the console share: a page of workflows, schedules or runs, and one owned row by
its id. Every query is limited to the caller's rows by app.auth.scope, the one place that knows how."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Select, func, or_, select

from app import cursors, schedules
from app.auth.scope import get_owned, scoped
from app.chain import planning
from app.extensions import db
from app.models import Run, ScheduledJob, Workflow

M = TypeVar("M")
# A schedule's runs: `total` counts at most TOTAL_CAP rows (through the index) and says when it stopped there;
# an offset goes at most MAX_RUN_OFFSET rows deep. Deeper pages follow the cursor of the page before.
TOTAL_CAP = 10_000
MAX_RUN_OFFSET = 10_000
INT_MAX = 2**31 - 1  # PostgreSQL's INTEGER: a larger id names no row, and the databases refuse to compare it
# Schedule ids are lower-case UUIDs; anything else (a NUL, 5,000 characters) names no schedule, and is never
# sent to the database, which may refuse it (PostgreSQL refuses NUL in text).
_SCHEDULE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Page:
    """A page of rows and how many rows all the pages hold (at least `total` when `total_capped`), with the
    cursor of the page after it (None: no row follows) where the list is read through one."""

    items: list[Any]
    total: int
    total_capped: bool = False
    next: str | None = None


def page(statement: Select[Any], limit: int, offset: int) -> Page:
    """The page [offset, offset + limit) of an ordered statement's rows, and their total."""
    total = db.session.scalar(select(func.count()).select_from(statement.order_by(None).subquery()))
    return Page(list(db.session.scalars(statement.limit(limit).offset(offset))), int(total or 0))


def is_schedule_id(text: str) -> bool:
    return _SCHEDULE_ID.fullmatch(text) is not None


def owned_schedule(schedule_id: str) -> ScheduledJob | None:
    """The caller's schedule; another owner's is as absent as one that never was."""
    return get_owned(ScheduledJob, schedule_id) if is_schedule_id(schedule_id) else None


def owned(model: type[M], ident: int, for_update: bool = False) -> M | None:
    """The caller's row of `model` with this integer id, or None."""
    return get_owned(model, ident, for_update) if 0 <= ident <= INT_MAX else None


def workflow_page(limit: int, offset: int, owner_id: int | None = None) -> Page:
    return page(scoped(select(Workflow), Workflow, owner_id).order_by(Workflow.id), limit, offset)


def workflows() -> list[Workflow]:
    """All the caller's workflows, by name (the console's menus)."""
    return list(db.session.scalars(scoped(select(Workflow), Workflow).order_by(Workflow.name, Workflow.id)))


@dataclass(frozen=True)
class ScheduleFilter:
    status: str | None = None
    workflow_id: int | None = None
    key: str | None = None
    text: str | None = None  # in the name or the key
    owner_id: int | None = None  # an admin's narrowing to one owner


def schedule_page(filters: ScheduleFilter, limit: int, offset: int) -> Page:
    """The caller's schedules that pass `filters`, newest first."""
    where = []
    if filters.status:
        where.append(ScheduledJob.status == filters.status)
    if filters.workflow_id:
        where.append(ScheduledJob.workflow_id == filters.workflow_id)
    if filters.key is not None:
        where.append(ScheduledJob.key == filters.key)
    if filters.text:
        pattern = "%" + filters.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(or_(ScheduledJob.name.ilike(pattern, escape="\\"), ScheduledJob.key.ilike(pattern, escape="\\")))
    statement = scoped(select(ScheduledJob), ScheduledJob, filters.owner_id).where(*where)
    return page(statement.order_by(ScheduledJob.created_at.desc(), ScheduledJob.id), limit, offset)


def run_page(schedule: ScheduledJob, limit: int, offset: int = 0, after: cursors.After | None = None) -> Page:
    """Runs of a schedule the caller owns (found with owned_schedule), newest first, from `after` (a cursor)
    on: limit + 1 rows of one range of ix_runs_schedule_started (schedule_id, started_at, id), and a count
    of at most TOTAL_CAP + 1 entries of the same index."""
    statement = select(Run).where(Run.schedule_id == schedule.id)
    if after is not None:  # started_at <= t bounds the index range; the rows at t itself are few
        statement = statement.where(Run.started_at <= after.started_at,
                                    or_(Run.started_at < after.started_at, Run.id < after.id))
    rows = list(db.session.scalars(statement.order_by(Run.started_at.desc(), Run.id.desc())
                                   .offset(offset).limit(limit + 1)))
    following = cursors.encode(rows[limit - 1].started_at, rows[limit - 1].id) if len(rows) > limit else None
    counted = int(db.session.scalar(select(func.count()).select_from(
        select(Run.id).where(Run.schedule_id == schedule.id).limit(TOTAL_CAP + 1).subquery())) or 0)
    return Page(rows[:limit], min(counted, TOTAL_CAP), counted > TOTAL_CAP, following)


def recent_runs(schedule_ids: list[str], per_schedule: int) -> dict[str, list[Run]]:
    """The newest runs of each schedule (oldest first). The ids come from a scoped query (a page of them):
    one lookup per schedule, each `per_schedule` entries of ix_runs_schedule_started read backwards, so a
    page costs the same whatever the histories behind it."""
    out: dict[str, list[Run]] = {}
    for schedule_id in schedule_ids:
        newest = db.session.scalars(select(Run).where(Run.schedule_id == schedule_id)
                                    .order_by(Run.started_at.desc(), Run.id.desc()).limit(per_schedule)).all()
        out[schedule_id] = list(reversed(newest))
    return out


def timing_text(schedule: ScheduledJob) -> str:
    """What a schedule's timing says in words. A row whose timing no longer builds (stored before today's
    checks, or made invalid) says so: a read never fails on it."""
    try:
        return planning.spec_of(schedule).describe()
    except Exception as exc:
        return f"invalid timing: {exc}"


def upcoming(schedule: ScheduledJob, now: datetime, count: int = 10) -> list[datetime]:
    """A schedule's next nominal times; none for a row whose timing no longer builds."""
    try:
        return schedules.next_runs(schedule, now, count)
    except Exception:
        return []


def schedules_per_workflow() -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {}
    statement: Any = select(ScheduledJob.workflow_id, ScheduledJob.status, func.count())
    for workflow_id, status, count in db.session.execute(
        scoped(statement, ScheduledJob).group_by(ScheduledJob.workflow_id, ScheduledJob.status)
    ).all():
        counts.setdefault(workflow_id, {})[status] = count
    return counts


def status_counts() -> dict[str, Any]:
    """The caller's schedules by status."""
    statement: Any = select(ScheduledJob.status, func.count())
    return {status: count for status, count in db.session.execute(
        scoped(statement, ScheduledJob).group_by(ScheduledJob.status)).all()}
