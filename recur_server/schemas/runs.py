"""Runs: a schedule's runs as the list shows them, and the runs outside the chain (a trigger now, a backfill
of a range of nominal times)."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from recur_server.policies import OverlapPolicy
from recur_server.schemas.common import Cursor, PageIn, page_of
from recur_server.schemas.fields import Iso, instant, out
from recur_server.services.outside_runs import requests
from recur_server.services.queries import BACKFILLS, RUNS

IDEMPOTENCY_KEY_MAX = 200
_KEY_RULE = f"must be 1 to {IDEMPOTENCY_KEY_MAX} printable characters."


class RunBriefOut(Schema):
    id = out(fields.String())
    scheduled_for = out(Iso(allow_none=True))
    started_at = out(Iso(allow_none=True))
    status = out(fields.String())
    trigger = out(fields.String())


class RunOut(Schema):
    id = out(fields.String())
    schedule_id = out(fields.String())
    repeat_number = out(fields.Integer(allow_none=True, metadata={
        "description": "The tick of the chain this run is; null for a manual or backfill run, and for "
                       "a missed or skipped row."}))
    retry_number = out(fields.Integer())
    scheduled_for = out(Iso(allow_none=True))
    started_at = out(Iso(allow_none=True))
    finished_at = out(Iso(allow_none=True))
    status = out(fields.String())
    error = out(fields.String(allow_none=True))
    worker = out(fields.String(allow_none=True))
    trigger = out(fields.String())
    reason = out(fields.String(allow_none=True))
    ticks = out(fields.Integer(allow_none=True))
    backfill_id = out(fields.String(allow_none=True))
    triggered_by_run_id = out(fields.String(allow_none=True, metadata={
        "description": "For a run of trigger `after`: the upstream run whose end triggered it."}))


class RunDetailOut(RunOut):
    """One run with what its task left behind, each kept within RECUR_RUN_OUTPUT_BYTES as its head and tail
    (null when there was nothing). Lists leave these out."""

    traceback = out(fields.String(allow_none=True, metadata={
        "description": "The traceback of what the task raised (failed, timed_out)."}))
    output = out(fields.String(allow_none=True, metadata={
        "description": "What the task wrote to stdout and stderr, in the order written."}))
    logs = out(fields.String(allow_none=True, metadata={
        "description": "The log lines the task emitted (Python logging, at the worker's level), one a line."}))
    result = out(fields.String(allow_none=True, metadata={
        "description": "The task's return value as JSON text if it serialises, else its repr; null for None."}))


class RunPageIn(PageIn):
    cursor = Cursor(RUNS)


RunPage = page_of(RunOut)


class TriggerIn(Schema):
    """Trigger body (optional): an overlap policy for this run instead of the schedule's."""

    class Meta:
        unknown = RAISE

    overlap = fields.String(allow_none=True, validate=validate.OneOf([p.value for p in OverlapPolicy]))


class IdempotencyIn(Schema):
    """The Idempotency-Key header of a trigger: a retry with the same key gets the first answer."""

    key = fields.String(data_key="Idempotency-Key", validate=[
        validate.Length(min=1, max=IDEMPOTENCY_KEY_MAX, error=_KEY_RULE),
        validate.Predicate("isprintable", error=_KEY_RULE)])


class TriggeredOut(Schema):
    run_id = out(fields.String())
    schedule_id = out(fields.String())
    scheduled_for = out(Iso())
    trigger = out(fields.String())


class BackfillIn(Schema):
    class Meta:
        unknown = RAISE

    start = instant("2026-01-01T00:00:00Z", required=True)
    end = instant("2026-01-02T00:00:00Z", required=True)
    overlap = fields.String(allow_none=True, validate=validate.OneOf([p.value for p in OverlapPolicy]))
    dry_run = fields.Boolean(load_default=False)

    @validates_schema
    def _range(self, data: dict[str, Any], **_: Any) -> None:
        start, end = data.get("start"), data.get("end")
        if start and end and end <= start:
            raise ValidationError("end must be after start.", field_name="end")


class BackfillOut(Schema):
    """A backfill and its progress: how many of its times have run (or been let go)."""

    id = out(fields.String())
    schedule_id = out(fields.String())
    start = out(Iso(attribute="start_at"))
    end = out(Iso(attribute="end_at"))
    overlap = out(fields.String(allow_none=True))
    status = out(fields.String())
    total = out(fields.Integer())
    done = out(fields.Method("_done", metadata={"type": "integer"}))
    times = out(fields.List(fields.String()))
    created_at = out(Iso())
    finished_at = out(Iso(allow_none=True))

    def _done(self, backfill: Any) -> int:
        return requests.backfill_done(backfill)


class BackfillPlanOut(Schema):
    """A dry run: the nominal times a backfill of the range would run, in order."""

    dry_run = out(fields.Boolean())
    total = out(fields.Integer())
    times = out(fields.List(fields.String()))


class BackfillPageIn(PageIn):
    """A page of a schedule's backfills: at most 100 (each lists up to 1,000 times)."""

    limit = fields.Integer(validate=validate.Range(min=1, max=100), load_default=100)
    cursor = Cursor(BACKFILLS)


BackfillPage = page_of(BackfillOut)
