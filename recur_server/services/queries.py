"""The reads the API and the console share: a page of workflows, schedules or runs, and one owned row by
its id. Every query is limited to the caller's rows by recur_server.auth.scope, the one place that knows how."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Boolean, ColumnElement, Select, String, TextualSelect, and_, case, func, or_, select, text
from sqlalchemy.types import TypeDecorator

from recur_server import timing
from recur_server.auth.models import ApiToken, Owner, OwnerEvent, ScheduleEvent
from recur_server.auth.scope import caller, get_owned, scoped
from recur_server.calendars.models import MAX_CALENDARS, Calendar
from recur_server.chain import planning
from recur_server.infra import cursors
from recur_server.infra.extensions import db
from recur_server.models import KEY_MAX, KEY_PATTERN, Backfill, Run, RunOutput, Schedule, ScheduleStatus, Workflow
from recur_server.notify.models import DeliveryAttempt, Webhook

M = TypeVar("M")
# Every list: `total` counts at most TOTAL_CAP rows (through the index of its order) and says when it stopped
# there; an offset goes at most MAX_OFFSET rows deep. Deeper pages follow the cursor of the page before.
TOTAL_CAP = 10_000
MAX_OFFSET = 10_000
MAX_RUN_OFFSET = MAX_OFFSET
INT_MAX = 2**31 - 1  # PostgreSQL's INTEGER: a larger id names no row, and the databases refuse to compare it
# Schedule ids are lower-case UUIDs; anything else (a NUL, 5,000 characters) names no schedule, and is never
# sent to the database, which may refuse it (PostgreSQL refuses NUL in text).
_KEY = re.compile(f"(?={KEY_PATTERN}\\Z).{{1,{KEY_MAX}}}")
_SCHEDULE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Page:
    """A page of rows and how many rows all the pages hold (at least `total` when `total_capped`), with the
    cursor of the page after it (None: no row follows)."""

    items: list[Any]
    total: int
    total_capped: bool = False
    next: str | None = None


@dataclass(frozen=True)
class Order:
    """A list's order: the columns of its sort key, the last one unique, all read one way. An index holds
    them, after the columns the list's rows share (schedule_id, owner_id), so a page is one range of it."""

    columns: tuple[Any, ...]
    descending: bool = True

    @property
    def shape(self) -> cursors.Shape:
        """The types of the key's parts, to read a cursor of this list."""
        return tuple(_stored(column.type).python_type for column in self.columns)

    def by(self) -> list[Any]:
        return [column.desc() if self.descending else column.asc() for column in self.columns]

    def key_of(self, row: Any) -> cursors.Key:
        return tuple(getattr(row, column.key) for column in self.columns)

    def after(self, key: cursors.Key) -> Any:
        """The rows that follow `key` in this order. Written as k1 <= v1 AND (k1 < v1 OR ...) rather than a
        row comparison, so that both databases bound the index range by the first column."""

        def following(columns: tuple[Any, ...], values: cursors.Key) -> Any:
            column, value = columns[0], values[0]
            beyond = column < value if self.descending else column > value
            if len(columns) == 1:
                return beyond
            reached = column <= value if self.descending else column >= value
            return and_(reached, or_(beyond, following(columns[1:], values[1:])))

        return following(self.columns, key)


def _stored(kind: Any) -> Any:
    """The database type under a decorated one (UTCDateTime is a DateTime)."""
    return _stored(kind.impl_instance) if isinstance(kind, TypeDecorator) else kind


RUNS = Order((Run.started_at, Run.id))
SCHEDULES = Order((Schedule.created_at, Schedule.id))
WORKFLOWS = Order((Workflow.id,), descending=False)
BACKFILLS = Order((Backfill.created_at, Backfill.id))
SCHEDULE_EVENTS = Order((ScheduleEvent.at, ScheduleEvent.id))
OWNER_EVENTS = Order((OwnerEvent.id,))
DELIVERY_ATTEMPTS = Order((DeliveryAttempt.id,))
OWNERS = Order((Owner.id,), descending=False)
TOKENS = Order((ApiToken.id,), descending=False)
WEBHOOKS = Order((Webhook.id,), descending=False)
CALENDARS = Order((Calendar.id,), descending=False)


def capped_count(statement: Select[Any], order: Order) -> tuple[int, bool]:
    """How many rows `statement` holds, counting at most TOTAL_CAP + 1 entries of its order's index; and
    whether there were more than TOTAL_CAP."""
    counted = int(db.session.scalar(select(func.count()).select_from(
        statement.with_only_columns(order.columns[-1]).order_by(None).limit(TOTAL_CAP + 1).subquery())) or 0)
    return min(counted, TOTAL_CAP), counted > TOTAL_CAP


def keyset_page(statement: Select[Any], order: Order, limit: int, offset: int = 0,
                after: cursors.Key | None = None) -> Page:
    """The page of `statement`'s rows in `order` after the key `after` (from the start without one), `offset`
    rows on: limit + 1 rows of one index range (the one more says whether a page follows), and a capped
    count of the whole list."""
    total, capped = capped_count(statement, order)
    if after is not None:
        statement = statement.where(order.after(after))
    rows = list(db.session.scalars(statement.order_by(*order.by()).offset(offset).limit(limit + 1)))
    following = cursors.encode(*order.key_of(rows[limit - 1])) if len(rows) > limit else None
    return Page(rows[:limit], total, capped, following)


def is_schedule_id(text: str) -> bool:
    return _SCHEDULE_ID.fullmatch(text) is not None


def owned_schedule(schedule_id: str, for_update: bool = False) -> Schedule | None:
    """The caller's schedule with this id, else with this key (locked, for a change, with `for_update`);
    another owner's is as absent as one that never was. Keys are unique per owner only, so a key names one of
    the caller's own schedules, an admin's too."""
    statement = schedule_named(schedule_id)
    if for_update:
        statement = statement.with_for_update()
    return db.session.scalars(statement.execution_options(populate_existing=True)).first()


def schedule_named(ref: str) -> Select[Any]:
    """The statement of owned_schedule, one read: the caller's schedule with the id `ref`, else with the key."""
    if not is_schedule_id(ref):
        return scoped(select(Schedule), Schedule).where(_keyed([ref]))
    return (scoped(select(Schedule), Schedule).where((Schedule.id == ref) | _keyed([ref]))
            .order_by(case((Schedule.id == ref, 0), else_=1)).limit(1))


def owned_schedule_ids(refs: list[str]) -> dict[str, str]:
    """Each of `refs` that names one of the caller's schedules, by its id or else by its key (as
    owned_schedule), mapped to that schedule's id; two queries whatever their number."""
    ids = [ref for ref in refs if is_schedule_id(ref)]
    found = {i: i for i in db.session.scalars(scoped(select(Schedule.id), Schedule).where(Schedule.id.in_(ids)))
             } if ids else {}
    keys = [ref for ref in refs if ref not in found]
    if keys:
        found.update({s.key: s.id for s in db.session.scalars(scoped(select(Schedule), Schedule).where(_keyed(keys)))
                      if s.key is not None})
    return found


def schedule_ref(ref: str) -> str | None:
    """The schedule id `ref` stands for: the caller's schedule's with that id or key, else `ref` itself when it
    has an id's form (a deleted schedule's audit trail is read by its id), else None."""
    return owned_schedule_ids([ref]).get(ref) or (ref if is_schedule_id(ref) else None)


def _keyed(keys: list[str]) -> ColumnElement[bool]:
    """Schedules of the caller's own with one of these keys (a text no key can be, a NUL in it or 5,000
    characters, is never sent to the database: PostgreSQL refuses a NUL in text)."""
    return (Schedule.owner_id == caller().id) & Schedule.key.in_([key for key in keys if _KEY.fullmatch(key)])


def owned(model: type[M], ident: int, for_update: bool = False) -> M | None:
    """The caller's row of `model` with this integer id, or None."""
    return get_owned(model, ident, for_update) if 0 <= ident <= INT_MAX else None


def workflow_page(limit: int, offset: int = 0, after: cursors.Key | None = None, owner_id: int | None = None) -> Page:
    """The caller's workflows, oldest first (ix_workflows_owner: owner_id, id)."""
    return keyset_page(scoped(select(Workflow), Workflow, owner_id), WORKFLOWS, limit, offset, after)


def workflows() -> list[Workflow]:
    """All the caller's workflows, by name (the console's menus)."""
    return list(db.session.scalars(scoped(select(Workflow), Workflow).order_by(Workflow.name, Workflow.id)))


def calendars_of(owner_id: int) -> list[Calendar]:
    """The calendars a schedule of this owner may use, by name (the schedule form's menu): scoped, so a caller
    who is not that owner (nor an admin) gets none. An owner has at most MAX_CALENDARS."""
    return list(db.session.scalars(scoped(select(Calendar), Calendar, owner_id).where(Calendar.owner_id == owner_id)
                                   .order_by(Calendar.name, Calendar.id).limit(MAX_CALENDARS)))


@dataclass(frozen=True)
class ScheduleFilter:
    status: str | None = None
    workflow_id: int | None = None
    key: str | None = None
    text: str | None = None  # in the name or the key
    owner_id: int | None = None  # an admin's narrowing to one owner


def schedule_page(filters: ScheduleFilter, limit: int, offset: int = 0, after: cursors.Key | None = None) -> Page:
    """The caller's schedules that pass `filters`, newest first: one range of ix_scheduled_jobs_owner_created
    (owner_id, created_at, id), or of ix_scheduled_jobs_created (created_at, id) for an admin's whole list;
    the filters are checked on the rows read along it."""
    where = []
    if filters.status:
        where.append(Schedule.status == filters.status)
    if filters.workflow_id:
        where.append(Schedule.workflow_id == filters.workflow_id)
    if filters.key is not None:
        where.append(Schedule.key == filters.key)
    if filters.text:
        pattern = "%" + filters.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(or_(Schedule.name.ilike(pattern, escape="\\"), Schedule.key.ilike(pattern, escape="\\")))
    statement = scoped(select(Schedule), Schedule, filters.owner_id).where(*where)
    return keyset_page(statement, SCHEDULES, limit, offset, after)


def run_page(schedule: Schedule, limit: int, offset: int = 0, after: cursors.Key | None = None) -> Page:
    """Runs of a schedule the caller owns (found with owned_schedule), newest first, from `after` (a cursor)
    on: limit + 1 rows of one range of ix_runs_schedule_started (schedule_id, started_at, id), and a count
    of at most TOTAL_CAP + 1 entries of the same index."""
    return keyset_page(select(Run).where(Run.schedule_id == schedule.id), RUNS, limit, offset, after)


def backfill_page(schedule: Schedule, limit: int, offset: int = 0, after: cursors.Key | None = None) -> Page:
    """A schedule's backfills, newest first: one range of ix_backfills_schedule_created."""
    return keyset_page(select(Backfill).where(Backfill.schedule_id == schedule.id), BACKFILLS, limit, offset, after)


class RunDetail:
    """A run with what its task left behind (its traceback, output, log lines and return value), as the
    run's own GET and console page show it; the run's columns read through."""

    def __init__(self, run: Run, left: RunOutput | None) -> None:
        self.run = run
        self.traceback = left.traceback if left is not None else None
        self.output = left.output if left is not None else None
        self.logs = left.logs if left is not None else None
        self.result = left.result if left is not None else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)


def run_detail(schedule: Schedule, run_id: str) -> RunDetail | None:
    """One run of a schedule the caller owns (found with owned_schedule): two lookups by primary key."""
    run = db.session.get(Run, run_id) if is_schedule_id(run_id) else None  # run ids are UUIDs too
    if run is None or run.schedule_id != schedule.id:
        return None
    return RunDetail(run, db.session.get(RunOutput, run_id))


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


class Outcome(NamedTuple):
    """What a strip shows of one run: when it was due, how it ended, and whether it ran long."""

    scheduled_for: datetime
    status: str
    long_alerted: bool


def recent_outcomes(schedule_ids: list[str], per_schedule: int) -> dict[str, list[Outcome]]:
    """recent_runs for a list page, as light as it can be: the columns a strip shows, for every schedule of the
    page in one statement (one `per_schedule` read of ix_runs_schedule_started per schedule, glued together),
    with no ORM object made. A page of full strips then costs little more than a page of empty ones."""
    out: dict[str, list[Outcome]] = {schedule_id: [] for schedule_id in schedule_ids}
    if not schedule_ids:
        return out
    params: dict[str, Any] = {f"s{i}": schedule_id for i, schedule_id in enumerate(schedule_ids)}
    for schedule_id, scheduled_for, status, long_alerted in db.session.execute(
            _outcomes_statement(len(schedule_ids)), {**params, "n": per_schedule}):
        out[schedule_id].append(Outcome(scheduled_for, status, bool(long_alerted)))
    for outcomes in out.values():
        outcomes.reverse()  # oldest first, as recent_runs
    return out


@cache
def _outcomes_statement(count: int) -> TextualSelect:
    one = ("SELECT * FROM (SELECT schedule_id, scheduled_for, status, long_alerted_at IS NOT NULL AS long_alerted"
           " FROM runs WHERE schedule_id = :s{i} ORDER BY started_at DESC, id DESC LIMIT :n) AS r{i}")
    return text(" UNION ALL ".join(one.format(i=i) for i in range(count))).columns(
        schedule_id=String(), scheduled_for=Run.__table__.c.scheduled_for.type, status=String(), long_alerted=Boolean())


def timing_text(schedule: Schedule) -> str:
    """What a schedule's timing says in words. A row whose timing no longer builds (stored before today's
    checks, or made invalid) says so: a read never fails on it."""
    try:
        return planning.spec_of(schedule).describe()
    except Exception as exc:
        return f"invalid timing: {exc}"


def upcoming(schedule: Schedule, now: datetime, count: int = 10) -> list[datetime]:
    """A schedule's next nominal times; none for a row whose timing no longer builds."""
    try:
        return _next_runs(schedule, now, count)
    except Exception:
        return []


def _next_runs(schedule: Schedule, now: datetime, count: int) -> list[datetime]:
    """The nominal times of the next runs: the planned one first, then the spec's, within total_repeats."""
    if schedule.status not in (ScheduleStatus.ACTIVE.value, ScheduleStatus.PAUSED.value):
        return []
    if schedule.total_repeats:
        count = max(0, min(count, schedule.total_repeats - schedule.run_count))
    first = schedule.next_run_at or planning.first_nominal(schedule, now)
    if first is None or count == 0:
        return []
    return [first, *timing.preview(planning.spec_of(schedule), first, count - 1, partial=True)]


def schedules_per_workflow() -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {}
    statement: Any = select(Schedule.workflow_id, Schedule.status, func.count())
    for workflow_id, status, count in db.session.execute(
        scoped(statement, Schedule).group_by(Schedule.workflow_id, Schedule.status)
    ).all():
        counts.setdefault(workflow_id, {})[status] = count
    return counts


def status_counts() -> dict[str, Any]:
    """The caller's schedules by status."""
    statement: Any = select(Schedule.status, func.count())
    return {status: count for status, count in db.session.execute(
        scoped(statement, Schedule).group_by(Schedule.status)).all()}
