"""The declarations as the API would take them: each one's fields loaded by the API's own schemas (ScheduleIn,
WorkflowIn) and its timing built as a preview builds it, so a declaration is refused exactly as the same
POST would be, with the field named as the code wrote it (`tz`, not `timezone`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from marshmallow import ValidationError

from recur_server.declarations.plan import KINDS, Wanted, upstreams
from recur_server.schemas.errors import field_errors
from recur_server.schemas.schedules import ScheduleIn
from recur_server.schemas.workflows import WorkflowIn
from recur_server.services import schedules
from recur_server.tasks.declarations import Declaration, DeclarationError, key_of
from recur_server.timing import work

TIMING_ARGUMENTS = "every, interval, cron, rrule, at or after"


def wanted(declarations: list[Declaration], now: datetime) -> list[Wanted]:
    """Each declaration checked; raises DeclarationError for the first one the API would refuse. Needs an
    app context (the schemas read its settings: payload size, queues, registered tasks)."""
    loaded = [checked(declaration, now) for declaration in declarations]
    _refuse_cycles(loaded, {d.key: d for d in declarations})
    return loaded


def checked(declaration: Declaration, now: datetime) -> Wanted:
    key = declaration.key

    def refuse(errors: dict[str, list[str]]) -> DeclarationError:
        named = {_as_written(declaration, name): messages for name, messages in errors.items()}
        return DeclarationError(key, named, declaration.where)

    body: dict[str, Any] = {"name": key, **declaration.fields, "key": key, "workflow_id": 1}
    follows = body.get("after")
    if isinstance(follows, dict) and callable(follows.get("schedule")):  # follows=a declared function
        body["after"] = {**follows, "schedule": key_of(follows["schedule"], key)}
    payload = declaration.payload()
    if payload is not None:
        body["trigger_payload"] = payload
        declaration.given_as.setdefault("trigger_payload", "args" if declaration.plain else "payload")
    if not any(body.get(kind) is not None for kind in KINDS):
        raise refuse({"timing": [f"give one kind of timing: {TIMING_ARGUMENTS}"]})
    calendar = body.pop("calendar", None)  # a name, among the sync owner's calendars (declarations.sync)
    if calendar is not None and (not isinstance(calendar, str) or not calendar):
        raise refuse({"calendar": ["the name of one of your calendars"]})
    if calendar is not None and body.get("calendar_id") is not None:
        raise refuse({"calendar_id": ["give calendar (its name) or calendar_id, not both"]})
    try:
        schedule = ScheduleIn().load(body)
    except ValidationError as exc:
        raise refuse(field_errors(exc.messages)) from None
    try:
        workflow = WorkflowIn().load({"name": key, "task": declaration.task_name, **declaration.workflow})
    except ValidationError as exc:
        raise refuse(field_errors(exc.messages)) from None
    if schedule.get("at") is None:  # a one-shot's instant passes; it is checked when it is created or changed
        try:  # the calendar is the owner's, known only at the sync: the timing is checked without it here
            with work.budget():  # as the API would: a rule it refuses as too sparse, sync refuses too
                schedules.preview({**schedule, "calendar_id": None}, now, 1)
        except schedules.Invalid as exc:
            raise refuse(exc.errors) from None
    if calendar is not None:
        schedule["calendar"] = calendar
    schedule.pop("workflow_id")
    schedule.pop("key")
    return Wanted(key, schedule, workflow, declaration.where)


def _as_written(declaration: Declaration, name: str) -> str:
    """The API's field name (`after.on`) as the declaration wrote it (`follows.on`)."""
    head, dot, rest = name.partition(".")
    return declaration.given_as.get(head, head) + dot + rest


def _refuse_cycles(loaded: list[Wanted], declarations: dict[str, Declaration]) -> None:
    """Declarations that follow each other round in a circle: refused here, naming the circle, rather than
    by the API half-way through the sync."""
    upstream = upstreams(loaded)
    for start in sorted(upstream):
        path, key = [start], upstream[start]
        while key in upstream and key not in path:
            path.append(key)
            key = upstream[key]
        if key == start:
            declaration = declarations[start]
            raise DeclarationError(start, {declaration.given_as.get("after", "follows"): [
                "these declarations follow each other in a circle: " + " -> ".join([*path, start])]},
                declaration.where)
