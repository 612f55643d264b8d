"""The declarations as the API would take them: each one's fields loaded by the API's own schemas (ScheduleIn,
WorkflowIn) and its timing built as a preview builds it, so a declaration is refused exactly as the same
POST would be, with the field named as the code wrote it (`tz`, not `timezone`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from marshmallow import ValidationError

from app import schedules
from app.api.errors import field_errors
from app.api.schemas.schedules import ScheduleIn
from app.api.schemas.workflows import WorkflowIn
from app.sync.plan import KINDS, Wanted
from app.tasks.declarations import Declaration, DeclarationError

TIMING_ARGUMENTS = "every, interval, cron, rrule, at or after"


def wanted(declarations: list[Declaration], now: datetime) -> list[Wanted]:
    """Each declaration checked; raises DeclarationError for the first one the API would refuse. Needs an
    app context (the schemas read its settings: payload size, queues, registered tasks)."""
    return [checked(declaration, now) for declaration in declarations]


def checked(declaration: Declaration, now: datetime) -> Wanted:
    key = declaration.key

    def refuse(errors: dict[str, list[str]]) -> DeclarationError:
        named = {declaration.given_as.get(name, name): messages for name, messages in errors.items()}
        return DeclarationError(key, named, declaration.where)

    body: dict[str, Any] = {"name": key, **declaration.fields, "key": key, "workflow_id": 1}
    payload = declaration.payload()
    if payload is not None:
        body["trigger_payload"] = payload
        declaration.given_as.setdefault("trigger_payload", "args" if declaration.plain else "payload")
    if not any(body.get(kind) is not None for kind in KINDS):
        raise refuse({"timing": [f"give one kind of timing: {TIMING_ARGUMENTS}"]})
    try:
        schedule = ScheduleIn().load(body)
    except ValidationError as exc:
        raise refuse(field_errors(exc.messages)) from None
    try:
        workflow = WorkflowIn().load({"name": key, "task": declaration.task_name, **declaration.workflow})
    except ValidationError as exc:
        raise refuse(field_errors(exc.messages)) from None
    if schedule.get("at") is None:  # a one-shot's instant passes; it is checked when it is created or changed
        try:
            schedules.preview(schedule, now, 1)
        except schedules.Invalid as exc:
            raise refuse(exc.errors) from None
    schedule.pop("workflow_id")
    schedule.pop("key")
    return Wanted(key, schedule, workflow, declaration.where)
