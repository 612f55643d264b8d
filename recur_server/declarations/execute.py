"""Carrying out a sync's plan through the same operations the API performs (recur_server.services.schedules,
recur_server.services.workflows), each recorded in the audit trail under the sync's owner."""

from __future__ import annotations

import contextlib
import itertools
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
from recur_server.infra.in_lists import in_batches
from recur_server.models import Schedule, Workflow
from recur_server.services import schedules, workflows
from recur_server.services.create_many import create_many, taken_keys
from recur_server.services.refusals import CHANGE_REFUSED
from recur_server.tasks.declarations import DeclarationError
from recur_server.timing.work import WorkExceeded

CREATE_BATCH = 1000  # schedules made together; the sync's lock is renewed between batches


def current_state(owner_id: int, keys: list[str]) -> dict[str, Current]:
    """The owner's declared keys and the `keys` wanted, with the schedule and workflow each names now."""
    declared = set(db.session.scalars(select(DeclaredKey.key).where(DeclaredKey.owner_id == owner_id)))
    wanted = set(keys)
    rows: dict[str, Schedule] = {}
    names = sorted(declared | wanted)
    for batch in in_batches(names):
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
    for batch in in_batches(sorted(refs)):
        match = Schedule.id.in_(batch) | Schedule.key.in_(batch) if by_key else Schedule.id.in_(batch)
        yield from db.session.execute(select(Schedule.id, Schedule.key).where(  # rows are tuples
            (Schedule.owner_id == owner_id) & match))


def execute(plan: Plan, owner: Owner, now: datetime, after_step: Callable[[], None] = lambda: None,
            dry_run: bool = False) -> None:
    """Carry out the steps in order, whole: one transaction for all of them, handed off to Redis after its
    commit; `after_step` runs between them (the lock's renewal). A step refused raises DeclarationError
    naming its key, and nothing of the sync is kept. `dry_run`: every step is carried out, with every check
    the real sync makes, and rolled back."""
    with audit.acting_as(owner.id, f"{owner.name} (declarations sync)"), transaction.whole(dry_run):
        steps, done = plan.steps, 0
        # Read before the first batch is written (see create_many.taken_keys); each batch adds its own.
        creating = {step.name for step in steps if step.action == CREATE}
        taken, marked = taken_keys(owner.id, creating), _marked(owner.id, creating)
        while done < len(steps):
            creates = list(itertools.takewhile(lambda s: s.action == CREATE, steps[done:done + CREATE_BATCH]))
            if creates:  # made together (recur_server.services.create_many)
                _create_each(creates, owner.id, now, taken, marked)
                done += len(creates)
            else:
                try:
                    _carry_out(steps[done], owner, now)
                except CHANGE_REFUSED as exc:  # the sync names the step and stops
                    raise DeclarationError(steps[done].name, _errors(exc)) from exc
                done += 1
            after_step()


def _errors(exc: Exception) -> dict[str, list[str]]:
    errors = getattr(exc, "errors", None)
    if isinstance(exc, WorkExceeded):
        return {exc.field: [exc.message]}
    return dict(errors) if isinstance(errors, dict) and errors else {"refused": [str(exc)]}


def _carry_out(step: Step, owner: Owner, now: datetime) -> None:
    if step.action in (UPDATE, RESUME):
        _update(step, now)
    elif step.action == PAUSE:
        assert step.target is not None
        schedules.pause(step.target, now, REMOVED_NOTE)
    elif step.action == DELETE:
        _delete(step, owner.id, now)


def _marked(owner_id: int, keys: set[str]) -> set[str]:
    """Of these keys, those the owner's declarations have marked."""
    return {key for batch in in_batches(sorted(keys)) for key in db.session.scalars(
        select(DeclaredKey.key).where((DeclaredKey.owner_id == owner_id) & DeclaredKey.key.in_(batch)))}


def _create_each(steps: list[Step], owner_id: int, now: datetime, taken: set[str], marked: set[str]) -> None:
    """Each step's workflow, schedule and key's mark, in the sync's transaction: a schedule sync made is never
    left without its mark. A refusal names its step. `taken`, `marked`: the owner's schedule keys and marks,
    read before the sync's first batch, and added to by each."""
    flows = [Workflow(owner_id=owner_id, created_at=now, **step.workflow_body) for step in steps]
    db.session.add_all(flows)  # one INSERT each on SQLite (its RETURNING of many rows is not known to keep order)
    names = [step.name for step in steps]
    db.session.add_all(DeclaredKey(owner_id=owner_id, key=name, created_at=now) for name in names if name not in marked)
    marked.update(names)
    db.session.flush()

    @contextlib.contextmanager
    def named(index: int) -> Iterator[None]:
        try:
            yield
        except CHANGE_REFUSED as exc:  # the sync names the step and stops
            raise DeclarationError(steps[index].name, _errors(exc)) from exc

    made = create_many(owner_id, [{**step.body, "key": step.name, "workflow_id": flow.id}
                                  for step, flow in zip(steps, flows, strict=True)], now, named, taken=taken)
    for step, schedule, flow in zip(steps, made, flows, strict=True):
        step.target, step.workflow_id = schedule.id, flow.id


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
