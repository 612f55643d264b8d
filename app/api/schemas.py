"""Request validation (marshmallow) and response shapes.

Every integer has a maximum that the databases (INTEGER: 2^31-1), signal.alarm and the time arithmetic
accept; every instant lies in the supported range of app.timing ([1970-01-01, 3000-01-01) UTC).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from flask import current_app
from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from app import timing
from app.models import PAUSE_NOTE_MAX, OnExhausted, Run, ScheduledJob, ScheduleStatus, Workflow

# The documented maxima (README). INT_MAX is PostgreSQL's INTEGER, the type of every integer column.
INT_MAX = 2**31 - 1
MAX_TIMEOUT_SECONDS = 7 * 86400  # a week: far below signal.alarm's and RQ's limits
MAX_RETRIES = 1000
MAX_AFTER_SECONDS = timing.MAX_INTERVAL_SECONDS  # ten years, like the longest interval
MAX_OFFSET = INT_MAX


def _int(minimum: int, maximum: int, **kwargs: Any) -> fields.Integer:
    return fields.Integer(strict=True, validate=validate.Range(min=minimum, max=maximum), **kwargs)


class Instant(fields.AwareDateTime):
    """An ISO 8601 date-time (UTC when it has no offset) inside the supported range, checked in UTC so
    that an offset cannot push it out of the calendar (0001-01-01T00:00+01:00, 9999-12-31T23:00-14:00)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> datetime:
        parsed: datetime = super()._deserialize(value, attr, data, **kwargs)
        try:
            timing.supported(parsed, attr or "instant")
        except timing.TimingError as exc:
            raise ValidationError(exc.message) from None
        return parsed  # as given: callers round up to whole seconds (never early), not down to milliseconds


def _instant(**kwargs: Any) -> Instant:
    return Instant(default_timezone=UTC, **kwargs)


def _payload_size(value: Any) -> None:
    """trigger_payload is stored in the schedule's row and handed to every run: keep it small."""
    limit = current_app.config["RECUR_MAX_PAYLOAD_BYTES"]
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    if size > limit:
        raise ValidationError(f"is {size} bytes as JSON; at most {limit} bytes allowed (RECUR_MAX_PAYLOAD_BYTES)")


class WorkflowIn(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    task = fields.String(required=True, validate=validate.Length(min=1, max=200))


class TimingIn(Schema):
    """The timing fields of a schedule. Exactly one kind of timing is checked by app.schedules/app.timing."""

    class Meta:
        unknown = RAISE

    # null for a kind means "not given" when creating; a PATCH refuses it (app.schedules.update)
    interval_seconds = _int(1, timing.MAX_INTERVAL_SECONDS, allow_none=True)
    every = fields.String(allow_none=True, validate=validate.Length(min=1, max=64))
    cron = fields.String(allow_none=True, validate=validate.Length(min=1, max=200))
    day_or = fields.Boolean()
    rrule = fields.String(allow_none=True, validate=validate.Length(min=1, max=6500))
    at = _instant(allow_none=True)
    after_seconds = _int(1, MAX_AFTER_SECONDS, allow_none=True)
    anchor_date = _instant(allow_none=True)
    timezone = fields.String(validate=validate.Length(min=1, max=64))
    start_at = _instant(allow_none=True)
    end_at = _instant(allow_none=True)
    only_between = fields.String(allow_none=True, validate=validate.Length(max=32))  # its column's width
    not_on = fields.List(fields.Raw(), allow_none=True, validate=validate.Length(max=14))
    jitter_seconds = _int(0, timing.MAX_JITTER_SECONDS)

    @validates_schema
    def _window(self, data: dict[str, Any], **_: Any) -> None:
        start, end = data.get("start_at"), data.get("end_at")
        if start and end and end <= start:
            raise ValidationError("end_at must be after start_at.", field_name="end_at")


class ScheduleIn(TimingIn):
    """Create body; PATCH loads it with partial=True."""

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    description = fields.String(allow_none=True, validate=validate.Length(max=10_000))
    workflow_id = _int(1, INT_MAX, required=True)
    trigger_node_id = fields.String(allow_none=True, validate=validate.Length(max=200))
    total_repeats = _int(0, INT_MAX)  # 0: no limit
    max_retries = _int(0, MAX_RETRIES)
    timeout_seconds = _int(1, MAX_TIMEOUT_SECONDS)
    trigger_payload = fields.Raw(allow_none=True, validate=_payload_size)
    on_exhausted = fields.String(validate=validate.OneOf([p.value for p in OnExhausted]))


class PauseIn(Schema):
    """Pause body (optional): a note saying why, shown until the schedule is resumed."""

    class Meta:
        unknown = RAISE

    note = fields.String(allow_none=True, validate=validate.Length(max=PAUSE_NOTE_MAX))


class PreviewIn(TimingIn):
    count = fields.Integer(strict=True, validate=validate.Range(min=1, max=100), load_default=5)


class BatchDeleteIn(Schema):
    class Meta:
        unknown = RAISE

    schedule_ids = fields.List(fields.String(), required=True, validate=validate.Length(min=1, max=1000))


class PageIn(Schema):
    class Meta:
        unknown = RAISE

    limit = fields.Integer(validate=validate.Range(min=1, max=1000), load_default=50)
    offset = fields.Integer(validate=validate.Range(min=0, max=MAX_OFFSET), load_default=0)


class OwnedPageIn(PageIn):
    """A page of a list an admin may narrow to one owner's rows (a non-admin sees only their own anyway)."""

    owner_id = fields.Integer(validate=validate.Range(min=1, max=INT_MAX))


class ScheduleListIn(OwnedPageIn):
    status = fields.String(validate=validate.OneOf([s.value for s in ScheduleStatus]))
    workflow_id = fields.Integer(validate=validate.Range(min=1, max=INT_MAX))


def iso(instant: datetime | None) -> str | None:
    return None if instant is None else instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


def workflow_out(workflow: Workflow) -> dict[str, Any]:
    return {"id": workflow.id, "name": workflow.name, "task": workflow.task, "owner_id": workflow.owner_id,
            "created_at": iso(workflow.created_at)}


def schedule_out(schedule: ScheduledJob, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {
        "id": schedule.id,
        "name": schedule.name,
        "description": schedule.description,
        "workflow_id": schedule.workflow_id,
        "owner_id": schedule.owner_id,
        "trigger_node_id": schedule.trigger_node_id,
        "interval_seconds": schedule.interval_seconds,
        "cron": schedule.cron,
        "day_or": schedule.day_or,
        "rrule": schedule.rrule,
        "at": iso(schedule.at),
        "anchor_date": iso(schedule.anchor_at) if schedule.anchor_explicit else None,
        "timezone": schedule.timezone,
        "start_at": iso(schedule.start_at),
        "end_at": iso(schedule.end_at),
        "only_between": schedule.only_between,
        "not_on": schedule.not_on,
        "jitter_seconds": schedule.jitter_seconds,
        "total_repeats": schedule.total_repeats,
        "max_retries": schedule.max_retries,
        "timeout_seconds": schedule.timeout_seconds,
        "trigger_payload": schedule.trigger_payload,
        "on_exhausted": schedule.on_exhausted,
        "status": schedule.status,
        "pause_note": schedule.pause_note,
        "paused_at": iso(schedule.paused_at),
        "current_repeat": schedule.current_repeat,
        "current_retry": schedule.current_retry,
        "last_run_at": iso(schedule.last_run_at),
        "next_run_at": iso(schedule.next_run_at),
        "run_count": schedule.run_count,
        "error_count": schedule.error_count,
        "last_error": schedule.last_error,
        "revision": schedule.revision,
        "created_at": iso(schedule.created_at),
        "updated_at": iso(schedule.updated_at),
    }
    if extra:
        body.update(extra)
    return body


def run_out(run: Run) -> dict[str, Any]:
    return {
        "id": run.id,
        "schedule_id": run.schedule_id,
        "repeat_number": run.repeat_number,
        "retry_number": run.retry_number,
        "scheduled_for": iso(run.scheduled_for),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "status": run.status,
        "error": run.error,
        "worker": run.worker,
    }


class TokenIn(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    expires_at = _instant(allow_none=True)


class OwnerIn(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    is_admin = fields.Boolean(load_default=False)


def owner_out(owner: Any) -> dict[str, Any]:
    return {"id": owner.id, "name": owner.name, "is_admin": owner.is_admin, "created_at": iso(owner.created_at)}


def token_out(token: Any, secret: str | None = None) -> dict[str, Any]:
    """A token as the API shows it: never its secret, except once, in the answer that made it."""
    body = {
        "id": token.id, "name": token.name, "prefix": token.prefix, "owner_id": token.owner_id,
        "created_at": iso(token.created_at), "last_used_at": iso(token.last_used_at),
        "expires_at": iso(token.expires_at), "revoked_at": iso(token.revoked_at),
    }
    if secret is not None:
        body["token"] = secret
    return body


def event_out(event: Any) -> dict[str, Any]:
    return {"id": event.id, "schedule_id": event.schedule_id, "actor_id": event.actor_id,
            "actor": event.actor_name, "action": event.action, "at": iso(event.at), "changes": event.changes}
