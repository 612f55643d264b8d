"""Many schedules of one owner made in the caller's transaction (an apply, a sync): each the row
recur_server.services.schedules.create makes, after the same checks with the same refusals, but with the
database read and written per batch, not per schedule. Their workflows, calendars and keys are read in one
query per IN_BATCH (recur_server.infra.in_lists), the owner's quota once, the rows and their events written in
one flush, and their links put together after the commit (one Lua call per thousand). A schedule that follows
another (`after`) reads what it follows on its own, as `create` does.

`step(index)` is the frame around each schedule's checks: the caller's way of naming the schedule a refusal
is about (an apply answers `schedules.create.N`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from redis.exceptions import RedisError
from sqlalchemy import select

from recur_server.auth import audit
from recur_server.calendars.models import Calendar
from recur_server.chain.handoff import hand_off_plans
from recur_server.chain.planning import link_plan
from recur_server.chain.redis_links import LinkPlan
from recur_server.infra import transaction
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.in_lists import in_batches
from recur_server.models import Schedule, Workflow
from recur_server.services import quotas, schedules

log = logging.getLogger(__name__)

Step = Callable[[int], AbstractContextManager[None]]


def create_many(owner_id: int, bodies: list[dict[str, Any]], now: datetime, step: Step,
                named: Callable[[dict[str, Any]], dict[str, Any]] = dict,
                taken: set[str] | None = None) -> list[Schedule]:
    """Make a schedule of each body (as `create` takes it, workflow and calendar by id, once `named`
    has read it) for the owner, in the caller's transaction; returns them in order. The first refused is
    raised inside its `step`. `taken`: the keys the owner's schedules have, as taken_keys read them before
    the caller's first create_many; each call adds the keys it makes. Without it they are read here."""
    if not bodies:
        return []
    made: list[Schedule] = []
    refused: dict[int, schedules.Invalid] = {}  # raised in order among the refusals below
    for index, body in enumerate(bodies):
        try:
            made.append(schedules.built({**named(body), "owner_id": owner_id}, now))
        except schedules.Invalid as exc:
            refused[index] = exc
            made.append(Schedule())
    get_redis().ping()  # refuse before writing anything if the links could not be handed off
    queues = dict(_owned(Workflow.id, Workflow.queue, owner_id, {s.workflow_id for s in made} - {None}))
    calendars = {ident for ident, _ in _owned(Calendar.id, Calendar.id, owner_id,
                                              {s.calendar_id for s in made} - {None})}
    if taken is None:
        taken = taken_keys(owner_id, {s.key for s in made if s.key is not None})
    try:
        quotas.require_room(owner_id, "schedules", now, adding=len(made))
        beyond: quotas.QuotaExceeded | None = None
    except quotas.QuotaExceeded as exc:
        beyond = exc  # refused at the first schedule past the quota, in its order among the refusals
    written = 0
    for index, (schedule, body) in enumerate(zip(made, bodies, strict=True)):
        with step(index):
            if index in refused:
                raise refused[index]
            if schedule.workflow_id not in queues:
                raise schedules.Invalid({"workflow_id": [f"workflow {schedule.workflow_id} does not exist"]})
            schedule.queue = queues[schedule.workflow_id]
            if schedule.calendar_id is not None and schedule.calendar_id not in calendars:
                raise schedules.Invalid({"calendar_id": [f"calendar {schedule.calendar_id} does not exist"]})
            if "after" in body:  # it may follow one made before it here: those are written first
                written = _write(made, written, index)
                schedules.set_after(schedule, body, None)
            if schedule.key:
                if schedule.key in taken:  # the owner's, or one made earlier here
                    raise schedules.DuplicateKey(schedule.key)
                taken.add(schedule.key)
            if beyond is not None and index == beyond.room:
                raise beyond
    _write(made, written, len(made))
    audit.record_each([schedule.id for schedule in made], owner_id, "create", now)
    transaction.commit()
    plans = [link_plan(schedule) for schedule in made if schedule.next_run_at is not None]
    transaction.after_commit(lambda: _hand_off(plans))  # the plans, not the rows: a caller may let those go
    return made


def _write(made: list[Schedule], written: int, upto: int) -> int:
    """Add made[written:upto] to the session and flush (their ids); returns upto."""
    if upto > written:
        db.session.add_all(made[written:upto])
        schedules.flush_keyed(None, keyed=any(schedule.key for schedule in made[written:upto]))
    return upto


def taken_keys(owner_id: int, keys: set[str]) -> set[str]:
    """Of these keys, those the owner's schedules have. Read before a bulk create writes its first row: on
    PostgreSQL a table filled by the transaction that reads it has no statistics of those rows, and the
    read (a 500-key IN list) became a scan of the table, 0.2 s a query after 30,000 rows."""
    return {key for key, _ in _owned(Schedule.key, Schedule.key, owner_id, keys)}


def _owned(column: Any, value: Any, owner_id: int, wanted: Iterable[Any]) -> list[tuple[Any, Any]]:
    """(column, value) of the owner's rows whose `column` is among `wanted`, IN_BATCH at a time."""
    model = column.class_
    return [tuple(row) for batch in in_batches(sorted(wanted)) for row in db.session.execute(
        select(column, value).where((model.owner_id == owner_id) & column.in_(batch)))]


def _hand_off(plans: list[LinkPlan]) -> None:
    """Each new schedule's first link, put in bulk; if Redis failed since the commit, recovery puts them."""
    try:
        hand_off_plans(plans)
    except RedisError as exc:
        log.warning("could not hand off %d new schedules (%s); recovery will re-create their links", len(plans), exc)
