"""A schedule: its body (timing, policies), its answers (the row, its detail, what its history adds up to),
its list's filters, and the preview of a timing."""

from __future__ import annotations

import json
import re
from datetime import UTC
from typing import Any
from zoneinfo import available_timezones

from flask import current_app
from marshmallow import RAISE, Schema, ValidationError, fields, pre_dump, validate, validates_schema

from recur_server import timing
from recur_server.infra import clock
from recur_server.models import KEY_MAX, KEY_PATTERN, PAUSE_NOTE_MAX, OnExhausted, Schedule, ScheduleStatus
from recur_server.policies import CatchUpPolicy, OverlapPolicy
from recur_server.policies.catch_up import MAX_LIMIT as MAX_CATCH_UP_LIMIT
from recur_server.policies.retention import MAX_KEEP_RUNS_DAYS
from recur_server.schemas.common import Cursor, OwnedPageIn, page_of
from recur_server.schemas.fields import INT_MAX, Instant, Iso, Joined, defaulted, instant, out, whole
from recur_server.schemas.follows import AFTER_DOC, AfterIn, after_of
from recur_server.schemas.runs import RunBriefOut
from recur_server.services.overdue import overdue_seconds
from recur_server.services.queries import SCHEDULES

MAX_TIMEOUT_SECONDS = 7 * 86400  # a week: far below signal.alarm's and RQ's limits
MAX_RETRIES = 1000
MAX_AFTER_SECONDS = timing.MAX_INTERVAL_SECONDS  # ten years, like the longest interval
MAX_ALERT_AFTER_SECONDS = 366 * 86400
MAX_FAILING_AFTER = 1000  # failed runs in a row before schedule.failing


def _payload_size(value: Any) -> None:
    """trigger_payload is stored in the schedule's row and handed to every run: keep it small."""
    limit = current_app.config["RECUR_MAX_PAYLOAD_BYTES"]
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    if size > limit:
        raise ValidationError(f"is {size} bytes as JSON; at most {limit} bytes allowed (RECUR_MAX_PAYLOAD_BYTES)")


# The kinds of timing, with their JSON types: a new schedule (and a preview) gives exactly one of them.
KINDS = {"interval_seconds": "integer", "every": "string", "cron": "string", "rrule": "string", "at": "string",
         "after_seconds": "integer"}
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


class TimingIn(Schema):
    """The timing fields of a schedule. Exactly one kind of timing is checked by recur_server.services.schedules
    and recur_server.timing."""

    class Meta:
        unknown = RAISE

    @staticmethod
    def openapi_rules(partial: bool) -> dict[str, Any]:
        """What the document says beyond the fields (recur_server.api.document): a create gives exactly one kind."""
        if partial:
            return {}
        return {"oneOf": [{"required": [kind], "properties": {kind: {"type": json_type}}}  # given, and not null
                          for kind, json_type in KINDS.items()]}

    # null for a kind means "not given" when creating; a PATCH refuses it (recur_server.services.schedules.update)
    interval_seconds = whole(1, timing.MAX_INTERVAL_SECONDS, allow_none=True)
    every = fields.String(allow_none=True, validate=validate.Length(min=1, max=64), metadata={
        "pattern": r"^\s*([0-9]+\s*[smhdwSMHDW]|[Ss]econdly|[Mm]inutely|[Hh]ourly|[Dd]aily|[Ww]eekly)\s*$",
        "example": "15m"})
    cron = fields.String(allow_none=True, validate=validate.Length(min=1, max=200), metadata={"example": "0 3 * * *"})
    day_or = defaulted(fields.Boolean(), True)
    rrule = fields.String(allow_none=True, validate=validate.Length(min=1, max=6500), metadata={
        "example": "FREQ=WEEKLY;BYDAY=MO,WE,FR;BYHOUR=9;BYMINUTE=0"})
    at = Instant(default_timezone=UTC, allow_none=True, metadata={"example": "2030-01-01T09:00:00Z"})
    after_seconds = whole(1, MAX_AFTER_SECONDS, allow_none=True)
    anchor_date = defaulted(instant("2026-01-01T00:00:00Z", allow_none=True), None)
    timezone = defaulted(fields.String(validate=validate.Length(min=1, max=64), metadata={
        "enum": sorted(available_timezones()), "example": "Europe/Berlin"}), "UTC")
    start_at = defaulted(instant("2026-01-01T00:00:00Z", allow_none=True), None)
    end_at = defaulted(instant("2036-01-01T00:00:00Z", allow_none=True), None)
    # its column's width
    only_between = defaulted(fields.String(allow_none=True, validate=validate.Length(max=32), metadata={
        "pattern": r"^\s*([01]?[0-9]|2[0-3]):[0-5][0-9]\s*-\s*([01]?[0-9]|2[0-3]):[0-5][0-9]\s*$",
        "example": "09:00-17:00"}), None)
    not_on = defaulted(fields.List(
        fields.Raw(metadata={"anyOf": [{"type": "integer", "minimum": 0, "maximum": 7},
                                       {"type": "string", "enum": list(WEEKDAYS)}]}),
        allow_none=True, validate=validate.Length(max=14), metadata={"example": ["sat", "sun"]}), None)
    jitter_seconds = defaulted(whole(0, timing.MAX_JITTER_SECONDS), 0)
    calendar_id = defaulted(whole(1, INT_MAX, allow_none=True, metadata={
        "description": "a calendar of yours (GET /calendars/) whose days the ticks skip or shift off; null: none"}),
        None)
    on_calendar = defaulted(fields.String(allow_none=True, validate=validate.OneOf(timing.ON_CALENDAR), metadata={
        "description": "a tick on a calendar day: skip (default), or shift_next / shift_previous to the same "
                       "wall-clock time on the next / previous day neither in the calendar nor in not_on"}), None)

    @validates_schema
    def _window(self, data: dict[str, Any], **_: Any) -> None:
        start, end = data.get("start_at"), data.get("end_at")
        if start and end and end <= start:
            raise ValidationError("end_at must be after start_at.", field_name="end_at")



def _whole_key(value: str) -> None:
    """The pattern's `$` lets a final newline through; the whole value must match."""
    if re.fullmatch(KEY_PATTERN, value) is None:
        raise ValidationError("letters, digits and _ . : / @ + - only, not starting with a sign")


def key_field(**kwargs: Any) -> fields.String:
    return fields.String(validate=[validate.Length(min=1, max=KEY_MAX), validate.Regexp(f"^{KEY_PATTERN}$"),
                                   _whole_key], **kwargs)


class ScheduleIn(TimingIn):
    """Create body; PATCH loads it with partial=True."""

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    key = key_field(allow_none=True)
    description = defaulted(fields.String(allow_none=True, validate=validate.Length(max=10_000)), None)
    workflow_id = whole(1, INT_MAX, required=True, metadata={"example": 1})
    trigger_node_id = defaulted(fields.String(allow_none=True, validate=validate.Length(max=200)), None)
    total_repeats = defaulted(whole(0, INT_MAX), 0)  # 0: no limit
    max_retries = defaulted(whole(0, MAX_RETRIES), 3)
    timeout_seconds = defaulted(whole(1, MAX_TIMEOUT_SECONDS), 600)
    trigger_payload = defaulted(fields.Raw(allow_none=True, validate=_payload_size), None)
    on_exhausted = defaulted(fields.String(validate=validate.OneOf([p.value for p in OnExhausted])),
                             OnExhausted.DEAD.value)
    catch_up = defaulted(fields.String(validate=validate.OneOf([p.value for p in CatchUpPolicy])),
                         CatchUpPolicy.LATEST.value)
    catch_up_window_seconds = defaulted(whole(1, INT_MAX, allow_none=True), None)  # null: no window
    catch_up_limit = defaulted(whole(1, MAX_CATCH_UP_LIMIT), 100)
    overlap = defaulted(fields.String(validate=validate.OneOf([p.value for p in OverlapPolicy])),
                        OverlapPolicy.SKIP.value)
    # null: no missed-run alert
    alert_after_seconds = defaulted(whole(1, MAX_ALERT_AFTER_SECONDS, allow_none=True), None)
    keep_runs_days = defaulted(whole(1, MAX_KEEP_RUNS_DAYS, allow_none=True), None)  # null: RECUR_KEEP_RUNS_DAYS
    # Alerts on runs (docs/notifications.md; null: none): run.long, run.late, schedule.failing.
    long_after_seconds = defaulted(whole(1, MAX_ALERT_AFTER_SECONDS, allow_none=True), None)
    late_after_seconds = defaulted(whole(1, MAX_ALERT_AFTER_SECONDS, allow_none=True), None)
    failing_after = defaulted(whole(1, MAX_FAILING_AFTER, allow_none=True), None)
    after = defaulted(fields.Nested(AfterIn, allow_none=True), None)  # runs that follow another's (null: none)


class PauseIn(Schema):
    """Pause body (optional): a note saying why, shown until the schedule is resumed."""

    class Meta:
        unknown = RAISE

    note = fields.String(allow_none=True, validate=validate.Length(max=PAUSE_NOTE_MAX))


class PreviewIn(TimingIn):
    count = fields.Integer(strict=True, validate=validate.Range(min=1, max=100), load_default=5)


class PreviewTimeOut(Schema):
    utc = out(fields.String())
    local = out(fields.String())


class PreviewOut(Schema):
    description = out(fields.String())
    timezone = out(fields.String())
    next_runs = out(fields.List(fields.Nested(PreviewTimeOut)))


class BatchDeleteOut(Schema):
    deleted = out(fields.List(fields.String()))
    not_found = out(fields.List(fields.String()))


class BatchDeleteIn(Schema):
    class Meta:
        unknown = RAISE

    schedule_ids = fields.List(fields.String(), required=True, validate=validate.Length(min=1, max=1000))


class ScheduleListIn(OwnedPageIn):
    cursor = Cursor(SCHEDULES)
    status = fields.String(validate=validate.OneOf([s.value for s in ScheduleStatus]))
    key = key_field()
    workflow_id = fields.Integer(validate=validate.Range(min=1, max=INT_MAX))


class ScheduleOut(Schema):
    id = out(fields.String())
    name = out(fields.String())
    key = out(fields.String(allow_none=True))
    description = out(fields.String(allow_none=True))
    workflow_id = out(fields.Integer())
    owner_id = out(fields.Integer())
    trigger_node_id = out(fields.String(allow_none=True))
    interval_seconds = out(fields.Integer(allow_none=True))
    cron = out(fields.String(allow_none=True))
    day_or = out(fields.Boolean(allow_none=True))
    rrule = out(fields.String(allow_none=True))
    at = out(Iso(allow_none=True))
    anchor_date = out(fields.Method("_anchor", allow_none=True, metadata={"type": "string", "format": "date-time"}))
    timezone = out(fields.String(allow_none=True))
    start_at = out(Iso(allow_none=True))
    end_at = out(Iso(allow_none=True))
    only_between = out(fields.String(allow_none=True))
    not_on = out(fields.List(fields.Raw(), allow_none=True))
    jitter_seconds = out(fields.Integer(allow_none=True))
    calendar_id = out(fields.Integer(allow_none=True))
    on_calendar = out(fields.String(allow_none=True))
    total_repeats = out(fields.Integer())
    max_retries = out(fields.Integer())
    timeout_seconds = out(fields.Integer(allow_none=True))
    trigger_payload = out(fields.Raw(allow_none=True))
    on_exhausted = out(fields.String(validate=validate.OneOf([p.value for p in OnExhausted])))
    catch_up = out(fields.String())
    catch_up_window_seconds = out(fields.Integer(allow_none=True))
    catch_up_limit = out(fields.Integer())
    overlap = out(fields.String())
    alert_after_seconds = out(fields.Integer(allow_none=True))
    keep_runs_days = out(fields.Integer(allow_none=True))
    after = out(fields.Function(after_of, allow_none=True, metadata=AFTER_DOC))
    health = out(fields.String())
    late_since = out(Iso(allow_none=True))
    long_after_seconds = out(fields.Integer(allow_none=True))
    late_after_seconds = out(fields.Integer(allow_none=True))
    failing_after = out(fields.Integer(allow_none=True))
    failing_streak = out(fields.Integer())
    failing_since = out(Iso(allow_none=True))
    status = out(fields.String(validate=validate.OneOf([s.value for s in ScheduleStatus])))
    pause_note = out(fields.String(allow_none=True))
    paused_at = out(Iso(allow_none=True))
    waiting = out(fields.String(allow_none=True, attribute="waiting_note", metadata={
        "description": "why its due tick waits instead of running, e.g. \"waiting for a worker that knows "
                       "task 'billing.charge'\" (no retry is spent meanwhile); null: it is not waiting"}))
    current_repeat = out(fields.Integer())
    current_retry = out(fields.Integer())
    last_run_at = out(Iso(allow_none=True))
    next_run_at = out(Iso(allow_none=True))
    overdue = out(fields.Boolean(metadata={
        "description": "true: active, and its next_run_at is past by more than its grace (alert_after_seconds, "
                       "else RECUR_OVERDUE_AFTER_SECONDS): nothing has run it. Decided when the answer is made."}))
    overdue_seconds = out(fields.Float(allow_none=True, metadata={
        "description": "How long past its next_run_at an overdue schedule is; null when not overdue."}))
    run_count = out(fields.Integer())
    error_count = out(fields.Integer())
    last_error = out(fields.String(allow_none=True))
    revision = out(fields.Integer())
    created_at = out(Iso())
    updated_at = out(Iso(allow_none=True))

    def _anchor(self, schedule: Schedule) -> str | None:
        return timing.iso_or_none(schedule.anchor_at) if schedule.anchor_explicit else None

    @pre_dump
    def _with_overdue(self, schedule: Any, **_: Any) -> Joined:
        """Overdue as of now, on the cluster clock (recur_server.policies.overdue): both fields from one reading."""
        past = overdue_seconds(schedule, clock.utcnow())
        return Joined(schedule, overdue=past is not None, overdue_seconds=None if past is None else round(past, 3))


class ScheduleStatsOut(Schema):
    """What the recent run history says, counted over the schedule's newest `window` rows: runs taken by
    trigger, ticks missed by reason, skips. `running` counts every run running now; the whole history's
    counters are the schedule's run_count and error_count."""

    runs = out(fields.Integer())
    runs_by_trigger = out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    runs_by_status = out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    ticks_missed = out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    ticks_skipped = out(fields.Dict(keys=fields.String(), values=fields.Integer()))
    running = out(fields.Integer())
    buffered = out(fields.Integer())
    window = out(fields.Integer(metadata={"description": "The most rows (newest first) the counts cover."}))
    window_full = out(fields.Boolean(metadata={
        "description": "true: the history holds at least `window` rows, and older ones are not counted."}))


class ScheduleDetailOut(ScheduleOut):
    """One schedule: its fields, what its timing says in words, and its next nominal times (dumped from the
    schedule joined with `timing_description` and `next_runs`)."""

    timing_description = out(fields.String())
    next_runs = out(fields.List(fields.String()))
    warnings = out(fields.List(fields.String(), metadata={
        "description": "what would keep it from running as planned and is not an error: no live worker on its "
                       "queue, or none of them knows its task (workers may be deployed after the schedule)"}))


class ScheduleDescribeOut(ScheduleDetailOut):
    """A schedule's GET: its detail and what its run history adds up to (joined: `stats`, `recent_runs`)."""

    stats = out(fields.Nested(ScheduleStatsOut))
    recent_runs = out(fields.List(fields.Nested(RunBriefOut)))


SchedulePage = page_of(ScheduleOut)
