"""POST /apply/: many changes to the caller's workflows, webhooks, calendars and schedules, applied whole or not
at all (what `recur apply` and the importers send). Each kind's creates take the body its own create takes; an
update names the object and gives the fields that change, as its PATCH does."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from recur_server.schemas.calendars import CalendarIn
from recur_server.schemas.fields import out, whole
from recur_server.schemas.schedules import ScheduleIn
from recur_server.schemas.webhooks import WebhookEditIn, WebhookIn
from recur_server.schemas.workflows import WorkflowIn
from recur_server.services.apply import MAX_CHANGES
from recur_server.services.queries import INT_MAX

_NAME: dict[str, Any] = {"validate": validate.Length(min=1, max=200)}


class ApplyScheduleIn(ScheduleIn):
    """A schedule's create body, where the workflow and the calendar may also be named: one the same apply
    creates, or one of the caller's own."""

    workflow_id = whole(1, INT_MAX, metadata={"description": "give workflow_id or workflow"})
    workflow = fields.String(**_NAME, metadata={
        "description": "the workflow by name: one this apply creates, else the only one of yours so named"})
    calendar = fields.String(allow_none=True, **_NAME, metadata={
        "description": "the calendar by name (one this apply creates, else one of yours); null: none"})

    @validates_schema
    def _one_workflow(self, data: dict[str, Any], partial: Any = None, **_: Any) -> None:
        if "workflow_id" in data and "workflow" in data:
            raise ValidationError("give workflow_id or workflow, not both.", field_name="workflow")
        if not partial and "workflow_id" not in data and "workflow" not in data:
            raise ValidationError("give workflow_id or workflow (its name).", field_name="workflow")
        if "calendar_id" in data and "calendar" in data:
            raise ValidationError("give calendar_id or calendar, not both.", field_name="calendar")


class _Edit(Schema):
    class Meta:
        unknown = RAISE


class WorkflowEditIn(_Edit):
    id = whole(1, INT_MAX, required=True)
    changed = fields.Nested(WorkflowIn(partial=True), required=True, data_key="fields")


class WebhookChangeIn(_Edit):
    id = whole(1, INT_MAX, required=True)
    changed = fields.Nested(WebhookEditIn(partial=True), required=True, data_key="fields")


class CalendarEditIn(_Edit):
    id = whole(1, INT_MAX, required=True)
    changed = fields.Nested(CalendarIn(partial=True), required=True, data_key="fields")


class ScheduleEditIn(_Edit):
    id = fields.String(required=True, **_NAME, metadata={"description": "the schedule's id or key"})
    changed = fields.Nested(ApplyScheduleIn(partial=True), required=True, data_key="fields")


def _changes(name: str, create: Any, update: type[Schema], delete: fields.Field[Any] | None) -> type[Schema]:
    listed: dict[str, Any] = {
        "create": fields.List(fields.Nested(create), load_default=list),
        "update": fields.List(fields.Nested(update), load_default=list),
    }
    if delete is not None:
        listed["delete"] = fields.List(delete, load_default=list)
    return _Edit.from_dict(listed, name=name)  # unknown fields refused, as everywhere


class ApplyIn(Schema):
    """Carried out in this order: workflows, webhooks, calendars (created and changed), schedules (created,
    changed, deleted), calendars deleted."""

    class Meta:
        unknown = RAISE

    dry_run = fields.Boolean(load_default=False, metadata={
        "description": "carry every change out, with every check, then roll it all back"})
    workflows = fields.Nested(_changes("WorkflowChanges", WorkflowIn, WorkflowEditIn, None), load_default=dict)
    webhooks = fields.Nested(_changes("WebhookChanges", WebhookIn, WebhookChangeIn, whole(1, INT_MAX)),
                             load_default=dict)
    calendars = fields.Nested(_changes("CalendarChanges", CalendarIn, CalendarEditIn, whole(1, INT_MAX)),
                              load_default=dict)
    schedules = fields.Nested(_changes("ScheduleChanges", ApplyScheduleIn, ScheduleEditIn,
                                       fields.String(**_NAME)), load_default=dict)

    @validates_schema
    def _bounded(self, data: dict[str, Any], **_: Any) -> None:
        count = sum(len(changes) for kind in ("workflows", "webhooks", "calendars", "schedules")
                    for changes in (data.get(kind) or {}).values())
        if count > MAX_CHANGES:
            raise ValidationError(f"{count} changes; at most {MAX_CHANGES} in one apply.", field_name="_schema")


class Made(Schema):
    name = out(fields.String(metadata={"description": "its name (a webhook: its url; a schedule: its key, else "
                                                      "its name)"}))
    id = out(fields.Raw(allow_none=True, metadata={"description": "null in a dry run"}))
    secret = fields.String(allow_none=True, metadata={
        "description": "a created webhook's signing secret: shown this once (null in a dry run)"})


class ApplyOut(Schema):
    dry_run = out(fields.Boolean())
    workflows = out(fields.List(fields.Nested(Made), metadata={"description": "those created, in order"}))
    webhooks = out(fields.List(fields.Nested(Made)))
    calendars = out(fields.List(fields.Nested(Made)))
    schedules = out(fields.List(fields.Nested(Made)))
    warnings = out(fields.List(fields.String(), metadata={
        "description": "\"KEY: ...\" for each schedule made or changed whose queue has no live worker, or none that "
                       "knows its task (not an error: its runs wait for one)"}))
