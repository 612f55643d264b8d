"""Many changes to one owner's workflows, webhooks, calendars and schedules, whole or not at all: each change is
the operation its own endpoint performs (the same service, the same checks), all of them in one transaction
(recur_server.infra.transaction.whole), handed off to Redis only after its commit. The first change refused rolls back
every one before it and is answered naming the change; a dry run carries them all out and rolls back.

Order: workflows (created, then changed), webhooks (created, changed, deleted), calendars (created, changed),
schedules (created, changed, deleted), calendars deleted last (once the schedules that used them are gone or
moved). A schedule names its workflow (and calendar) by id or by name: one created earlier in the same apply,
else the only one of the owner's so named.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select

from recur_server.calendars.models import Calendar
from recur_server.infra import transaction
from recur_server.infra.extensions import db
from recur_server.models import Schedule, Workflow
from recur_server.notify.models import Webhook
from recur_server.services import calendars, known_tasks, schedules, webhooks, workflows
from recur_server.services.create_many import create_many, taken_keys
from recur_server.services.queries import owned, owned_schedule, schedule_named
from recur_server.services.refusals import CHANGE_REFUSED

M = TypeVar("M", Workflow, Webhook, Calendar)
MAX_CHANGES = 100_000  # changes in one apply: a bounded request whatever the file
MAX_FILE_ENTRIES = 100_000  # of each kind in an apply file (the body's size, RECUR_MAX_APPLY_BODY_BYTES, bounds it too)
CREATE_CHUNK = 5_000  # schedules made together, then let go of: an apply's memory does not grow with its size


class StepRefused(Exception):  # noqa: N818 - named for what happened to the step
    """One change refused: `where` (e.g. schedules.create.2), the name it goes by, and the service's refusal."""

    def __init__(self, where: str, name: str, cause: Exception, label: str | None = None) -> None:
        self.label = label or f"{where} ({name})"  # how the answer's message names it
        super().__init__(f"{self.label}: {cause}")
        self.where, self.name, self.cause = where, name, cause


@dataclass
class Made:
    name: str
    id: Any
    secret: str | None = None


def apply(owner_id: int, data: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Carry out `data` (as ApplyIn loads it) for the owner; returns what was created, kind by kind."""
    dry_run = bool(data.get("dry_run"))
    made: dict[str, list[Made]] = {kind: [] for kind in ("workflows", "webhooks", "calendars", "schedules")}
    with transaction.whole(dry_run):
        run = _Run(owner_id, now, made)
        run.workflows(data.get("workflows") or {})
        run.webhooks(data.get("webhooks") or {})
        run.calendars(data.get("calendars") or {})
        run.schedules(data.get("schedules") or {})
        run.calendars_deleted((data.get("calendars") or {}).get("delete") or [])
    if dry_run:  # nothing was kept: no id or secret to show
        made = {kind: [Made(m.name, None) for m in items] for kind, items in made.items()}
    return {"dry_run": dry_run, **made, "warnings": run.warnings}


def _offset_step(step: Callable[[int], Any], offset: int, index: int) -> Any:
    return step(offset + index)


def _missing(what: str, ident: object) -> schedules.Invalid:
    return schedules.Invalid({"id": [f"no {what} of yours with id {ident!r}"]})


def _owned(model: type[M], ident: int) -> M:
    """The caller's row to change (locked), else the change is refused naming its id."""
    row = owned(model, ident, for_update=True)
    if row is None:
        raise _missing(model.__name__.lower(), ident)
    return row


@contextmanager
def _step(where: str, name: object) -> Iterator[None]:
    try:
        yield
    except CHANGE_REFUSED as exc:
        raise StepRefused(where, str(name), exc) from exc


class _Run:
    def __init__(self, owner_id: int, now: datetime, made: dict[str, list[Made]]) -> None:
        self.owner_id, self.now, self.made = owner_id, now, made
        self.workflow_ids: dict[str, int] = {}
        self.calendar_ids: dict[str, int] = {}
        self.warnings: list[str] = []  # "NAME: ...": schedules made or changed (known_tasks)
        self._workers_say = known_tasks.Warnings(now)
        self._found: dict[tuple[type, str], int] = {}  # names of the owner's rows found in the database

    def _each(self, kind: str, action: str, items: list[Any], name: Callable[[Any], object],
              change: Callable[[Any], None]) -> None:
        for index, item in enumerate(items):
            with _step(f"{kind}.{action}.{index}", name(item)):
                change(item)

    def workflows(self, changes: dict[str, list[Any]]) -> None:
        def create(body: dict[str, Any]) -> None:
            made = workflows.create(self.owner_id, body, self.now)
            self.workflow_ids[made.name] = made.id
            self.made["workflows"].append(Made(made.name, made.id))

        def update(edit: dict[str, Any]) -> None:
            workflow = _owned(Workflow, edit["id"])
            workflows.update(workflow, edit["changed"])
            self.workflow_ids[workflow.name] = workflow.id

        self._each("workflows", "create", changes.get("create") or [], lambda b: b["name"], create)
        self._each("workflows", "update", changes.get("update") or [], lambda e: e["id"], update)

    def webhooks(self, changes: dict[str, list[Any]]) -> None:
        def create(body: dict[str, Any]) -> None:
            made = webhooks.create(self.owner_id, body, self.now)
            self.made["webhooks"].append(Made(made.url, made.id, made.secret))

        def update(edit: dict[str, Any]) -> None:
            webhook = _owned(Webhook, edit["id"])
            webhooks.update(webhook, edit["changed"])

        def delete(ident: int) -> None:
            webhook = _owned(Webhook, ident)
            webhooks.remove(webhook)

        self._each("webhooks", "create", changes.get("create") or [], lambda b: b["url"], create)
        self._each("webhooks", "update", changes.get("update") or [], lambda e: e["id"], update)
        self._each("webhooks", "delete", changes.get("delete") or [], lambda i: i, delete)

    def calendars(self, changes: dict[str, list[Any]]) -> None:
        def create(body: dict[str, Any]) -> None:
            made = calendars.create(self.owner_id, body, self.now)
            self.calendar_ids[made.name] = made.id
            self.made["calendars"].append(Made(made.name, made.id))

        def update(edit: dict[str, Any]) -> None:
            calendar = _owned(Calendar, edit["id"])
            calendars.update(calendar, edit["changed"], self.now)
            self.calendar_ids[calendar.name] = calendar.id

        self._each("calendars", "create", changes.get("create") or [], lambda b: b["name"], create)
        self._each("calendars", "update", changes.get("update") or [], lambda e: e["id"], update)

    def calendars_deleted(self, idents: list[int]) -> None:
        def delete(ident: int) -> None:
            calendar = _owned(Calendar, ident)
            calendars.remove(calendar)

        self._each("calendars", "delete", idents, lambda i: i, delete)

    def schedules(self, changes: dict[str, list[Any]]) -> None:
        bodies = changes.get("create") or []

        def step(index: int) -> Any:
            return _step(f"schedules.create.{index}", bodies[index].get("key") or bodies[index]["name"])

        taken = taken_keys(self.owner_id, {body["key"] for body in bodies if body.get("key")})
        for start in range(0, len(bodies), CREATE_CHUNK):
            chunk = create_many(self.owner_id, bodies[start:start + CREATE_CHUNK], self.now,
                                functools.partial(_offset_step, step, start), self._named, taken)
            for made in chunk:
                self.made["schedules"].append(Made(made.key or made.name, made.id))
                self._warn(made)
                db.session.expunge(made)  # written: its row need not stay in memory until the commit

        def update(edit: dict[str, Any]) -> None:
            schedule = owned_schedule(edit["id"], for_update=True)
            if schedule is None:
                raise _missing("schedule", edit["id"])
            self._warn(schedules.update(schedule, self._named(edit["changed"]), self.now))

        def delete(ref: str) -> None:
            if not schedules.remove_selected(schedule_named(ref), self.now):
                raise _missing("schedule", ref)

        self._each("schedules", "update", changes.get("update") or [], lambda e: e["id"], update)
        self._each("schedules", "delete", changes.get("delete") or [], lambda r: r, delete)

    def _warn(self, schedule: Schedule) -> None:
        self.warnings += [f"{schedule.key or schedule.name}: {warning}" for warning in self._workers_say.of(schedule)]

    def _named(self, body: dict[str, Any]) -> dict[str, Any]:
        """A schedule's body with its workflow and calendar named by id."""
        out = {k: v for k, v in body.items() if k not in ("workflow", "calendar")}
        if "workflow" in body:
            out["workflow_id"] = self._id_of(Workflow, body["workflow"], self.workflow_ids, "workflow")
        if "calendar" in body:
            out["calendar_id"] = None if body["calendar"] is None else \
                self._id_of(Calendar, body["calendar"], self.calendar_ids, "calendar")
        return out

    def _id_of(self, model: type[Workflow] | type[Calendar], name: str, made: dict[str, int], field: str) -> int:
        if name in made:
            return made[name]
        if (model, name) in self._found:
            return self._found[model, name]
        found = list(db.session.scalars(select(model.id).where(
            (model.owner_id == self.owner_id) & (model.name == name)).limit(2)))
        if len(found) != 1:
            raise schedules.Invalid({field: [f"no single {field} of yours named {name!r} ({len(found) or 'none'} "
                                             f"found){' : rename all but one' if len(found) > 1 else ''}"]})
        self._found[model, name] = int(found[0])
        return int(found[0])
