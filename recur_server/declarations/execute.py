"""Carrying out a sync's plan through the same operations the API performs (recur_server.services.schedules,
recur_server.services.workflows), each recorded in the audit trail under the sync's owner."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

from sqlalchemy import delete, func, select

from recur_server.auth import audit
from recur_server.auth.models import Owner
from recur_server.calendars.models import MAX_CALENDARS, Calendar
from recur_server.declarations.marks import DeclaredKey
from recur_server.declarations.plan import CREATE, DELETE, PAUSE, REMOVED_NOTE, RESUME, UPDATE, Current, Plan, Step
from recur_server.infra import transaction
from recur_server.infra.extensions import db
from recur_server.models import Schedule, Workflow
from recur_server.services import schedules, workflows
from recur_server.services.refusals import CHANGE_REFUSED
from recur_server.tasks.declarations import DeclarationError
from recur_server.timing.work import WorkExceeded

IN_BATCH = 500  # names in one IN list


def current_state(owner_id: int, keys: list[str]) -> dict[str, Current]:
    """The owner's declared keys and the `keys` wanted, with the schedule and workflow each names now."""
    declared = set(db.session.scalars(select(DeclaredKey.key).where(DeclaredKey.owner_id == owner_id)))
    wanted = set(keys)
    rows: dict[str, Schedule] = {}
    names = sorted(declared | wanted)
    for batch in _batches(names):
        rows.update((s.key, s) for s in db.session.scalars(select(Schedule).where(
            (Schedule.owner_id == owner_id) & Schedule.key.in_(batch))) if s.key is not None)
    flows = {w.id: w for w in db.session.scalars(select(Workflow).where(
        Workflow.id.in_({s.workflow_id for s in rows.values()})))} if rows else {}
    upstreams = keys_of(owner_id, {s.after_schedule_id for s in rows.values() if s.after_schedule_id is not None})
    return {key: Current(rows.get(key), flows.get(rows[key].workflow_id) if key in rows else None, key in declared,
                         upstreams.get(rows[key].after_schedule_id or "") if key in rows else None)
            for key in names}


def keys_of(owner_id: int, ids: set[str]) -> dict[str, str]:
    """The owner's schedules with these ids: each one's key, else its id."""
    return {id_: key or id_ for id_, key in _ids_and_keys(owner_id, ids, by_key=False)}


def owner_calendars(owner_id: int) -> dict[str, int]:
    """The owner's calendars (at most MAX_CALENDARS): name -> id."""
    return {name: id_ for id_, name in db.session.execute(select(Calendar.id, Calendar.name).where(
        Calendar.owner_id == owner_id).limit(MAX_CALENDARS))}


def missing_upstreams(owner_id: int, refs: set[str]) -> set[str]:
    """Of these ids or keys, the ones no schedule of the owner has."""
    found = {name for pair in _ids_and_keys(owner_id, refs, by_key=True) for name in pair if name is not None}
    return refs - found


def _ids_and_keys(owner_id: int, refs: set[str], by_key: bool) -> Iterator[tuple[str, str | None]]:
    """(id, key) of the owner's schedules whose id (or, `by_key`, key) is one of `refs`."""
    for batch in _batches(sorted(refs)):
        match = Schedule.id.in_(batch) | Schedule.key.in_(batch) if by_key else Schedule.id.in_(batch)
        yield from db.session.execute(select(Schedule.id, Schedule.key).where(  # rows are tuples
            (Schedule.owner_id == owner_id) & match))


def _batches(names: list[str]) -> Iterator[list[str]]:
    """`names` IN_BATCH at a time: an IN list a database takes whatever the count."""
    for start in range(0, len(names), IN_BATCH):
        yield names[start:start + IN_BATCH]


def execute(plan: Plan, owner: Owner, now: datetime, after_step: Callable[[], None] = lambda: None,
            dry_run: bool = False) -> None:
    """Carry out the steps in order, whole: one transaction for all of them, handed off to Redis after its
    commit; `after_step` runs between them (the lock's renewal). A step refused raises DeclarationError
    naming its key, and nothing of the sync is kept. `dry_run`: every step is carried out, with every check
    the real sync makes, and rolled back."""
    with audit.acting_as(owner.id, f"{owner.name} (declarations sync)"), transaction.whole(dry_run):
        for step in plan.steps:
            try:
                _carry_out(step, owner, now)
            except CHANGE_REFUSED as exc:  # the sync names the step and stops
                raise DeclarationError(step.name, _errors(exc)) from exc
            after_step()


def _errors(exc: Exception) -> dict[str, list[str]]:
    errors = getattr(exc, "errors", None)
    if isinstance(exc, WorkExceeded):
        return {exc.field: [exc.message]}
    return dict(errors) if isinstance(errors, dict) and errors else {"refused": [str(exc)]}


def _carry_out(step: Step, owner: Owner, now: datetime) -> None:
    if step.action == CREATE:
        _create(step, owner.id, now)
    elif step.action in (UPDATE, RESUME):
        _update(step, now)
    elif step.action == PAUSE:
        assert step.target is not None
        schedules.pause(step.target, now, REMOVED_NOTE)
    elif step.action == DELETE:
        _delete(step, owner.id, now)


def _create(step: Step, owner_id: int, now: datetime) -> None:
    """The workflow, the schedule and the key's mark, in the sync's transaction: a schedule sync made is never
    left without its mark."""
    workflow = Workflow(owner_id=owner_id, created_at=now, **step.workflow_body)
    db.session.add(workflow)
    if db.session.get(DeclaredKey, (owner_id, step.name)) is None:
        db.session.add(DeclaredKey(owner_id=owner_id, key=step.name, created_at=now))
    db.session.flush()
    created = schedules.create({**step.body, "key": step.name, "owner_id": owner_id,
                                "workflow_id": workflow.id}, now)
    step.target, step.workflow_id = created.id, workflow.id


def _update(step: Step, now: datetime) -> None:
    assert step.target is not None
    if step.workflow_body:
        workflow = db.session.get(Workflow, step.workflow_id)
        if workflow is not None:
            workflows.update(workflow, step.workflow_body)
    if step.body:
        schedules.update(step.target, step.body, now)
    if step.action == RESUME:
        schedules.resume(step.target, now)


def _delete(step: Step, owner_id: int, now: datetime) -> None:
    """The schedule, its key's mark and its workflow (when no other schedule uses it) in one transaction: a
    sync that dies half-way leaves no mark of a schedule that is gone, nor an empty workflow."""
    assert step.target is not None

    def and_the_mark_and_workflow() -> None:
        db.session.execute(delete(DeclaredKey).where((DeclaredKey.owner_id == owner_id)
                                                     & (DeclaredKey.key == step.name)))
        if step.workflow_id is not None:
            others = db.session.scalar(select(func.count()).select_from(Schedule)
                                       .where(Schedule.workflow_id == step.workflow_id))
            workflow = db.session.get(Workflow, step.workflow_id)
            if not others and workflow is not None:
                db.session.delete(workflow)

    schedules.remove([step.target], now, along=and_the_mark_and_workflow)
