"""Request validation (marshmallow) and response shapes.

Every integer has a maximum that the databases (INTEGER: 2^31-1), signal.alarm and the time arithmetic
accept; every instant lies in the supported range of app.timing ([1970-01-01, 3000-01-01) UTC).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from flask import current_app
from marshmallow import RAISE, Schema, ValidationError, fields, pre_dump, validate, validates_schema

from app import timing
from app.auth import quotas
from app.models import PAUSE_NOTE_MAX, ConcurrencyPolicy, OnExhausted, Run, ScheduledJob, ScheduleStatus, Workflow
from app.policies import CatchUpPolicy, OverlapPolicy
from app.policies.catch_up import MAX_LIMIT as MAX_CATCH_UP_LIMIT
from app.policies.retention import MAX_KEEP_RUNS_DAYS

# The documented maxima (README). INT_MAX is PostgreSQL's INTEGER, the type of every integer column.
INT_MAX = 2**31 - 1
MAX_TIMEOUT_SECONDS = 7 * 86400  # a week: far below signal.alarm's and RQ's limits
MAX_RETRIES = 1000
MAX_AFTER_SECONDS = timing.MAX_INTERVAL_SECONDS  # ten years, like the longest interval
MAX_OFFSET = INT_MAX
MAX_CONCURRENT_RUNS = 10_000
MAX_BREAKER_THRESHOLD = 1000
MAX_BREAKER_RESET_SECONDS = 7 * 86400
MAX_ALERT_AFTER_SECONDS = 366 * 86400



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
    """Create body; PATCH loads it with partial=True."""

    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    task = fields.String(required=True, validate=validate.Length(min=1, max=200))
    max_concurrent_runs = _int(1, MAX_CONCURRENT_RUNS, allow_none=True)  # null: no limit
    concurrency_policy = fields.String(validate=validate.OneOf([p.value for p in ConcurrencyPolicy]))
    breaker_threshold = _int(1, MAX_BREAKER_THRESHOLD, allow_none=True)  # null: no breaker
    breaker_reset_seconds = _int(1, MAX_BREAKER_RESET_SECONDS)


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


# A schedule's key: the owner's own name for it (recur apply), a path-like word: no spaces or controls.
KEY_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.:/@+-]*"


def _whole_key(value: str) -> None:
    """The pattern's `$` lets a final newline through; the whole value must match."""
    if re.fullmatch(KEY_PATTERN, value) is None:
        raise ValidationError("letters, digits and _ . : / @ + - only, not starting with a sign")


def _key_field(**kwargs: Any) -> fields.String:
    return fields.String(validate=[validate.Length(min=1, max=200), validate.Regexp(f"^{KEY_PATTERN}$"),
                                   _whole_key], **kwargs)


class ScheduleIn(TimingIn):
    """Create body; PATCH loads it with partial=True."""

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    key = _key_field(allow_none=True)
    description = fields.String(allow_none=True, validate=validate.Length(max=10_000))
    workflow_id = _int(1, INT_MAX, required=True)
    trigger_node_id = fields.String(allow_none=True, validate=validate.Length(max=200))
    total_repeats = _int(0, INT_MAX)  # 0: no limit
    max_retries = _int(0, MAX_RETRIES)
    timeout_seconds = _int(1, MAX_TIMEOUT_SECONDS)
    trigger_payload = fields.Raw(allow_none=True, validate=_payload_size)
    on_exhausted = fields.String(validate=validate.OneOf([p.value for p in OnExhausted]))
    catch_up = fields.String(validate=validate.OneOf([p.value for p in CatchUpPolicy]))
    catch_up_window_seconds = _int(1, INT_MAX, allow_none=True)  # null: no window
    catch_up_limit = _int(1, MAX_CATCH_UP_LIMIT)
    overlap = fields.String(validate=validate.OneOf([p.value for p in OverlapPolicy]))
    alert_after_seconds = _int(1, MAX_ALERT_AFTER_SECONDS, allow_none=True)  # null: no missed-run alert
    keep_runs_days = _int(1, MAX_KEEP_RUNS_DAYS, allow_none=True)  # null: RECUR_KEEP_RUNS_DAYS


class PauseIn(Schema):
    """Pause body (optional): a note saying why, shown until the schedule is resumed."""

    class Meta:
        unknown = RAISE

    note = fields.String(allow_none=True, validate=validate.Length(max=PAUSE_NOTE_MAX))


class TriggerIn(Schema):
    """Trigger body (optional): an overlap policy for this run instead of the schedule's."""

    class Meta:
        unknown = RAISE

    overlap = fields.String(allow_none=True, validate=validate.OneOf([p.value for p in OverlapPolicy]))


class BackfillIn(Schema):
    class Meta:
        unknown = RAISE

    start = _instant(required=True)
    end = _instant(required=True)
    overlap = fields.String(allow_none=True, validate=validate.OneOf([p.value for p in OverlapPolicy]))
    dry_run = fields.Boolean(load_default=False)

    @validates_schema
    def _range(self, data: dict[str, Any], **_: Any) -> None:
        start, end = data.get("start"), data.get("end")
        if start and end and end <= start:
            raise ValidationError("end must be after start.", field_name="end")


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
    key = _key_field()
    workflow_id = fields.Integer(validate=validate.Range(min=1, max=INT_MAX))


def iso(instant: datetime | None) -> str | None:
    return None if instant is None else instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


# --- response shapes ---------------------------------------------------------------------------
# The *Out schemas are the API's answers: the views dump through them and the OpenAPI document
# (app/api/contract.py) is generated from them, so the two cannot disagree.

class Iso(fields.DateTime):
    """An instant as UTC ISO 8601 with a Z."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return iso(value)


def _out(field: fields.Field[Any]) -> fields.Field[Any]:
    field.required = True  # always present in the answer (null where allow_none)
    return field


class ErrorOut(Schema):
    code = _out(fields.String())
    status = _out(fields.Integer())
    message = _out(fields.String())
    errors = _out(fields.Dict(keys=fields.String(), values=fields.List(fields.String())))


class WorkflowOut(Schema):
    id = _out(fields.Integer())
    name = _out(fields.String())
    task = _out(fields.String())
    owner_id = _out(fields.Integer())
    max_concurrent_runs = _out(fields.Integer(allow_none=True))
    concurrency_policy = _out(fields.String())
    breaker_threshold = _out(fields.Integer(allow_none=True))
    breaker_reset_seconds = _out(fields.Integer())
    breaker_state = _out(fields.String())
    created_at = _out(Iso())


class ScheduleOut(Schema):
    id = _out(fields.String())
    name = _out(fields.String())
    key = _out(fields.String(allow_none=True))
    description = _out(fields.String(allow_none=True))
    workflow_id = _out(fields.Integer())
    owner_id = _out(fields.Integer())
    trigger_node_id = _out(fields.String(allow_none=True))
    interval_seconds = _out(fields.Integer(allow_none=True))
    cron = _out(fields.String(allow_none=True))
    day_or = _out(fields.Boolean(allow_none=True))
    rrule = _out(fields.String(allow_none=True))
    at = _out(Iso(allow_none=True))
    anchor_date = _out(fields.Method("_anchor", allow_none=True, metadata={"type": "string", "format": "date-time"}))
    timezone = _out(fields.String(allow_none=True))
    start_at = _out(Iso(allow_none=True))
    end_at = _out(Iso(allow_none=True))
    only_between = _out(fields.String(allow_none=True))
    not_on = _out(fields.List(fields.Raw(), allow_none=True))
    jitter_seconds = _out(fields.Integer(allow_none=True))
    total_repeats = _out(fields.Integer())
    max_retries = _out(fields.Integer())
    timeout_seconds = _out(fields.Integer(allow_none=True))
    trigger_payload = _out(fields.Raw(allow_none=True))
    on_exhausted = _out(fields.String(validate=validate.OneOf([p.value for p in OnExhausted])))
    catch_up = _out(fields.String())
    catch_up_window_seconds = _out(fields.Integer(allow_none=True))
    catch_up_limit = _out(fields.Integer())
    overlap = _out(fields.String())
    alert_after_seconds = _out(fields.Integer(allow_none=True))
    keep_runs_days = _out(fields.Integer(allow_none=True))
    health = _out(fields.String())
    late_since = _out(Iso(allow_none=True))
    status = _out(fields.String(validate=validate.OneOf([s.value for s in ScheduleStatus])))
    pause_note = _out(fields.String(allow_none=True))
    paused_at = _out(Iso(allow_none=True))
    current_repeat = _out(fields.Integer())
    current_retry = _out(fields.Integer())
    last_run_at = _out(Iso(allow_none=True))
    next_run_at = _out(Iso(allow_none=True))
    run_count = _out(fields.Integer())
    error_count = _out(fields.Integer())
    last_error = _out(fields.String(allow_none=True))
    revision = _out(fields.Integer())
    created_at = _out(Iso())
    updated_at = _out(Iso(allow_none=True))

    def _anchor(self, schedule: ScheduledJob) -> str | None:
        return iso(schedule.anchor_at) if schedule.anchor_explicit else None


class RunBriefOut(Schema):
    id = _out(fields.String())
    scheduled_for = _out(Iso(allow_none=True))
    started_at = _out(Iso(allow_none=True))
    status = _out(fields.String())
    trigger = _out(fields.String())


class ScheduleStatsOut(Schema):
    """What the run history says, counted: runs taken by trigger, ticks missed by reason, skips."""

    runs = _out(fields.Integer())
    runs_by_trigger = _out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    runs_by_status = _out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    ticks_missed = _out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    ticks_skipped = _out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    running = _out(fields.Integer())
    buffered = _out(fields.Integer())


class ScheduleDetailOut(ScheduleOut):
    """One schedule: its fields, what its timing says in words, and its next nominal times."""

    timing_description = _out(fields.String())
    next_runs = _out(fields.List(fields.String()))


class ScheduleDescribeOut(ScheduleDetailOut):
    """A schedule's GET: its detail and what its run history adds up to."""

    stats = _out(fields.Nested(ScheduleStatsOut))
    recent_runs = _out(fields.List(fields.Nested(RunBriefOut)))


class RunOut(Schema):
    id = _out(fields.String())
    schedule_id = _out(fields.String())
    repeat_number = _out(fields.Integer(allow_none=True, metadata={
        "description": "The tick of the chain this run is; null for a manual or backfill run, and for "
                       "a missed or skipped row."}))
    retry_number = _out(fields.Integer())
    scheduled_for = _out(Iso(allow_none=True))
    started_at = _out(Iso(allow_none=True))
    finished_at = _out(Iso(allow_none=True))
    status = _out(fields.String())
    error = _out(fields.String(allow_none=True))
    worker = _out(fields.String(allow_none=True))
    trigger = _out(fields.String())
    reason = _out(fields.String(allow_none=True))
    ticks = _out(fields.Integer(allow_none=True))
    backfill_id = _out(fields.String(allow_none=True))


class TriggeredOut(Schema):
    run_id = _out(fields.String())
    schedule_id = _out(fields.String())
    scheduled_for = _out(Iso())
    trigger = _out(fields.String())


class BackfillOut(Schema):
    id = _out(fields.String())
    schedule_id = _out(fields.String())
    start = _out(Iso())
    end = _out(Iso())
    overlap = _out(fields.String(allow_none=True))
    status = _out(fields.String())
    total = _out(fields.Integer())
    done = _out(fields.Integer())
    times = _out(fields.List(fields.String()))
    created_at = _out(Iso())
    finished_at = _out(Iso(allow_none=True))


class BackfillPlanOut(Schema):
    """A dry run: the nominal times a backfill of the range would run, in order."""

    dry_run = _out(fields.Boolean())
    total = _out(fields.Integer())
    times = _out(fields.List(fields.String()))


class BackfillPage(Schema):
    items = _out(fields.List(fields.Nested(BackfillOut)))


class PreviewTimeOut(Schema):
    utc = _out(fields.String())
    local = _out(fields.String())


class PreviewOut(Schema):
    description = _out(fields.String())
    timezone = _out(fields.String())
    next_runs = _out(fields.List(fields.Nested(PreviewTimeOut)))


class BatchDeleteOut(Schema):
    deleted = _out(fields.List(fields.String()))
    not_found = _out(fields.List(fields.String()))


class HealthOut(Schema):
    database = _out(fields.String())
    redis = _out(fields.String())
    schedules = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "schedules by status (admins only)"})
    reconciler = fields.Dict(metadata={"description": "the reconciler's running totals (admins only)"})


_SCHEMAS: dict[type[Schema], Schema] = {}


def dump(schema: type[Schema], obj: Any) -> dict[str, Any]:
    """obj shaped by a response schema (one instance per class: building one costs more than a dump)."""
    instance = _SCHEMAS.get(schema)
    if instance is None:
        instance = _SCHEMAS[schema] = schema()
    body: dict[str, Any] = instance.dump(obj)
    return body


def workflow_out(workflow: Workflow) -> dict[str, Any]:
    return dump(WorkflowOut, workflow)


def schedule_out(schedule: ScheduledJob, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    body = dump(ScheduleOut, schedule)
    if extra:
        body.update(extra)
    return body


def run_out(run: Run) -> dict[str, Any]:
    return dump(RunOut, run)


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


class QuotaOut(Schema):
    limit = _out(fields.Integer(metadata={"description": "how many the owner may hold"}))
    override = _out(fields.Integer(allow_none=True, metadata={
        "description": "the limit an admin set for this owner; null: the RECUR_MAX_*_PER_OWNER default"}))


class QuotasOut(Schema):
    schedules = _out(fields.Nested(QuotaOut))
    webhooks = _out(fields.Nested(QuotaOut))
    tokens = _out(fields.Nested(QuotaOut, metadata={"description": "active tokens: neither revoked nor expired"}))


class QuotasIn(Schema):
    """One owner's quotas, set by an admin: a number replaces the default, null goes back to it."""

    class Meta:
        unknown = RAISE

    schedules = _int(0, INT_MAX, allow_none=True)
    webhooks = _int(0, INT_MAX, allow_none=True)
    tokens = _int(0, INT_MAX, allow_none=True)


class OwnerPatchIn(Schema):
    class Meta:
        unknown = RAISE

    quotas = fields.Nested(QuotasIn, required=True)


class OwnerOut(Schema):
    id = _out(fields.Integer())
    name = _out(fields.String())
    is_admin = _out(fields.Boolean())
    created_at = _out(Iso())
    quotas = _out(fields.Nested(QuotasOut))

    @pre_dump
    def _with_quotas(self, owner: Any, **_: Any) -> dict[str, Any]:
        """The quotas in force for the owner: its overrides, else the settings (app.auth.quotas)."""
        return {"id": owner.id, "name": owner.name, "is_admin": owner.is_admin, "created_at": owner.created_at,
                "quotas": quotas.table(owner)}


class TokenOut(Schema):
    """A token as the API shows it: never its secret, except once (`token`), in the answer that made it."""

    id = _out(fields.Integer())
    name = _out(fields.String())
    prefix = _out(fields.String())
    owner_id = _out(fields.Integer())
    created_at = _out(Iso())
    last_used_at = _out(Iso(allow_none=True))
    expires_at = _out(Iso(allow_none=True))
    revoked_at = _out(Iso(allow_none=True))
    token = fields.String(metadata={"description": "the secret, shown only in the answer that made it"})


class OwnerCreatedOut(OwnerOut):
    token = _out(fields.Nested(TokenOut))


class EventOut(Schema):
    id = _out(fields.Integer())
    schedule_id = _out(fields.String())
    actor_id = _out(fields.Integer(allow_none=True))
    actor = _out(fields.String(attribute="actor_name", allow_none=True))
    action = _out(fields.String())
    at = _out(Iso())
    changes = _out(fields.Raw(allow_none=True))


def _page_of(item: type[Schema]) -> type[Schema]:
    return Schema.from_dict({"items": _out(fields.List(fields.Nested(item))), "total": _out(fields.Integer())},
                            name=f"{item.__name__.removesuffix('Out')}Page")


WorkflowPage = _page_of(WorkflowOut)
SchedulePage = _page_of(ScheduleOut)
RunPage = _page_of(RunOut)
OwnerPage = _page_of(OwnerOut)
TokenPage = _page_of(TokenOut)
EventPage = _page_of(EventOut)


def owner_out(owner: Any) -> dict[str, Any]:
    return dump(OwnerOut, owner)


def token_out(token: Any, secret: str | None = None) -> dict[str, Any]:
    body = dump(TokenOut, token)
    if secret is not None:
        body["token"] = secret
    return body


def event_out(event: Any) -> dict[str, Any]:
    return dump(EventOut, event)


class BreakerTransitionOut(Schema):
    from_state = _out(fields.String(data_key="from"))
    to_state = _out(fields.String(data_key="to"))
    at = _out(Iso())
    reason = _out(fields.String())
    by = _out(fields.String())


class BreakerOut(Schema):
    workflow_id = _out(fields.Integer())
    enabled = _out(fields.Boolean())
    threshold = _out(fields.Integer(allow_none=True))
    reset_seconds = _out(fields.Integer())
    state = _out(fields.String())
    consecutive_failures = _out(fields.Integer())
    opened_at = _out(Iso(allow_none=True))
    probe_run_id = _out(fields.String(allow_none=True))
    history = _out(fields.List(fields.Nested(BreakerTransitionOut)))


EVENT_TYPES = [
    "run.failed", "run.timed_out", "run.succeeded", "schedule.dead", "schedule.paused", "schedule.done",
    "schedule.missed", "schedule.recovered", "breaker.opened", "breaker.closed",
]


class WebhookIn(Schema):
    class Meta:
        unknown = RAISE

    url = fields.String(required=True, validate=validate.Length(min=1, max=2000))
    event_types = fields.List(fields.String(validate=validate.OneOf(EVENT_TYPES)), required=True,
                              validate=validate.Length(min=1, max=len(EVENT_TYPES)))
    secret = fields.String(allow_none=True, validate=validate.Length(min=10, max=200),
                           metadata={"description": "whsec_ + base64 of 16 to 64 bytes; made for you if left out"})


class WebhookOut(Schema):
    id = _out(fields.Integer())
    owner_id = _out(fields.Integer())
    url = _out(fields.String())
    event_types = _out(fields.List(fields.String()))
    created_at = _out(Iso())


class WebhookCreatedOut(WebhookOut):
    """The answer that made a webhook: the only one that shows its signing secret."""

    secret = _out(fields.String())


class WebhookPage(Schema):
    items = _out(fields.List(fields.Nested(WebhookOut)))
    total = _out(fields.Integer())


class DeliveryAttemptOut(Schema):
    event_id = _out(fields.String())
    event_type = _out(fields.String())
    attempt = _out(fields.Integer())
    at = _out(Iso())
    status_code = _out(fields.Integer(allow_none=True))
    duration_ms = _out(fields.Integer())
    error = _out(fields.String(allow_none=True))


class DeliveryAttemptPage(Schema):
    items = _out(fields.List(fields.Nested(DeliveryAttemptOut)))
    total = _out(fields.Integer())
    pending = _out(fields.Integer())


class OwnerEventOut(Schema):
    """The admins' record of an owner made or deleted, kept after the owner is gone."""

    id = _out(fields.Integer())
    owner_id = _out(fields.Integer())
    owner_name = _out(fields.String())
    actor_id = _out(fields.Integer(allow_none=True))
    actor = _out(fields.String(attribute="actor_name"))
    action = _out(fields.String())
    at = _out(Iso())
    changes = _out(fields.Raw(allow_none=True))


OwnerEventPage = _page_of(OwnerEventOut)
