"""POST /apply/: many changes to the caller's workflows, webhooks, calendars and schedules, applied whole or not
at all (what `recur apply` and the importers send). Each kind's creates take the body its own create takes; an
update names the object and gives the fields that change, as its PATCH does."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, pre_load, validate, validates_schema

from recur_server.schemas.calendars import CalendarIn
from recur_server.schemas.fields import out, whole
from recur_server.schemas.schedules import ScheduleIn, key_field
from recur_server.schemas.webhooks import WebhookEditIn, WebhookIn
from recur_server.schemas.workflows import WorkflowIn
from recur_server.services.apply import MAX_CHANGES, MAX_FILE_ENTRIES
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


# Relative to the moment it is applied (a second apply would always see a change), or ids that differ between
# servers: a file names instead.
NOT_IN_FILES = {"after_seconds": "give `at` (an instant) instead: after_seconds would move on every apply",
                "workflow_id": "name the workflow with `workflow: NAME` (ids differ between servers)",
                "calendar_id": "name the calendar with `calendar: NAME` (ids differ between servers)"}


class _NotInFiles:
    """Fields a file must not give, each refused with the reason (`refused`) rather than as unknown."""

    refused: dict[str, str] = {}

    @pre_load
    def _not_in_files(self, data: Any, **_: Any) -> Any:
        if isinstance(data, dict):
            refused = {name: [reason] for name, reason in self.refused.items() if name in data}
            if refused:
                raise ValidationError(refused)
        return data


class FileScheduleIn(_NotInFiles, ScheduleIn):
    """A schedule of a file: its key, its workflow and calendar by name, and any field the API takes; a field
    left out keeps its value on the server (a new schedule gets the default)."""

    class Meta:
        unknown = RAISE
        exclude = tuple(NOT_IN_FILES)

    refused = NOT_IN_FILES

    key = key_field(required=True, metadata={"description": "your own unique name for it: apply matches by it"})
    name = fields.String(validate=validate.Length(min=1, max=200), metadata={"description": "default: its key"})
    workflow = fields.String(required=True, **_NAME, metadata={
        "description": "the workflow by name: one of the file's, else the only one of yours so named"})
    calendar = fields.String(allow_none=True, **_NAME, metadata={
        "description": "a calendar by name: one of the file's, else one of yours; null: none"})


class FileWebhookIn(_NotInFiles, WebhookIn):
    """A webhook of a file, matched by its URL. No secret: a file is committed, copied and shown in reviews;
    the server makes the secret when it creates the webhook and shows it that once."""

    class Meta:
        unknown = RAISE
        exclude = ("secret",)

    refused = {"secret": "no secret in a file: the server makes one when apply creates the webhook, and apply "
                         "prints it that once"}


def _entries(schema: Schema | type[Schema], what: str) -> fields.List[Any]:
    return fields.List(fields.Nested(schema), validate=validate.Length(max=MAX_FILE_ENTRIES),
                       metadata={"description": f"at most {MAX_FILE_ENTRIES} {what}"})


class FileIn(Schema):
    """What `recur apply` reads from YAML: workflows matched by name, webhooks by url, calendars by name,
    schedules by key. Only a file with `webhooks` (or `calendars`), even an empty list, speaks for all of the
    owner's: `prune` deletes those it does not list."""

    class Meta:
        unknown = RAISE

    workflows = _entries(WorkflowIn, "workflows")
    schedules = _entries(FileScheduleIn, "schedules")
    webhooks = _entries(FileWebhookIn, "webhooks")
    calendars = _entries(CalendarIn, "calendars")

    @validates_schema
    def _once_each(self, data: dict[str, Any], **_: Any) -> None:
        for kind, name in (("workflows", "name"), ("schedules", "key"), ("webhooks", "url"), ("calendars", "name")):
            seen: set[str] = set()
            for index, item in enumerate(data.get(kind) or []):
                if item[name] in seen:
                    raise ValidationError({index: {name: [f"{item[name]!r} is listed more than once"]}},
                                          field_name=kind)
                seen.add(item[name])


class ApplyFileIn(Schema):
    class Meta:
        unknown = RAISE

    file = fields.Nested(FileIn, required=True)
    prune = fields.Boolean(load_default=False, metadata={
        "description": "also delete your keyed schedules the file does not list (and webhooks and calendars, "
                       "when it has those entries), and put the policies a listed workflow leaves out back to "
                       "their defaults"})
    dry_run = fields.Boolean(load_default=False, metadata={
        "description": "plan and carry every change out, with every check, then roll it all back"})


class Change(Schema):
    # Each side as the API answers with it; a timing compared by kind is {kind: value}.
    from_value = fields.Raw(data_key="from", allow_none=True)
    to_value = fields.Raw(data_key="to", allow_none=True)


class StepOut(Schema):
    kind = out(fields.String(validate=validate.OneOf(["workflow", "webhook", "calendar", "schedule"])))
    name = out(fields.String(metadata={"description": "a workflow's or calendar's name, a webhook's url, a "
                                                      "schedule's key"}))
    action = out(fields.String(validate=validate.OneOf(["create", "update", "delete", "unchanged"])))
    id = fields.Raw(allow_none=True, metadata={"description": "what it changed; null for a create in a dry run"})
    changes = fields.Dict(keys=fields.String(), values=fields.Raw(), metadata={
        "description": "an update's fields: {field: {from, to}}"})
    fields_ = fields.Dict(data_key="fields", attribute="fields", metadata={"description": "a create's fields"})
    secret = fields.String(metadata={"description": "a created webhook's signing secret: shown this once"})


class ApplyFileOut(Schema):
    dry_run = out(fields.Boolean())
    steps = out(fields.List(fields.Nested(StepOut), metadata={
        "description": "workflows, webhooks, calendars, schedules (an upstream before its followers), calendars "
                       "deleted: the order they were carried out in"}))
    warnings = out(fields.List(fields.String()))
