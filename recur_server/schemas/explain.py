"""GET /schedules/{id}/explain/: why a schedule did or didn't run at a time (recur_server.policies.explain)."""

from __future__ import annotations

from datetime import UTC

from marshmallow import RAISE, Schema, fields, validate

from recur_server.schemas.fields import Instant, Iso, out

KINDS = ["not_a_tick", "ran", "running", "missed", "skipped", "before_created", "paused", "breaker_open",
         "not_recorded", "waiting", "will_run", "will_not_run"]


class ExplainIn(Schema):
    class Meta:
        unknown = RAISE

    at = Instant(default_timezone=UTC, metadata={
        "description": "The time asked about (UTC when it has no offset; default: now). The answer is for the "
                       "schedule's tick at it, or its timing's nearest tick to it.",
        "example": "2026-03-09T09:00:00Z"})


class ExplainRunOut(Schema):
    """A run or gap row, as much of it as the answer needs (GET /runs/{id}/ has the rest)."""

    id = out(fields.String())
    status = out(fields.String())
    trigger = out(fields.String())
    scheduled_for = out(Iso())
    started_at = out(Iso())
    finished_at = out(Iso(allow_none=True))
    reason = out(fields.String(allow_none=True))
    ticks = out(fields.Integer(allow_none=True))
    error = out(fields.String(allow_none=True))


class ExplainOut(Schema):
    kind = out(fields.String(validate=validate.OneOf(KINDS), metadata={"description": "docs/explain.md"}))
    summary = out(fields.String(metadata={"description": "The answer in a sentence."}))
    asked = out(Iso())
    nominal = out(Iso(allow_none=True, metadata={
        "description": "The tick explained: the asked time, or the timing's nearest tick to it."}))
    run = out(fields.Nested(ExplainRunOut, allow_none=True, metadata={
        "description": "ran, running: the tick's last attempt; missed, skipped: the row that records it."}))
    attempts = out(fields.Integer())
    late_seconds = out(fields.Float(allow_none=True, metadata={
        "description": "From the tick to its first attempt's start."}))
    reason = out(fields.String(allow_none=True, metadata={
        "description": "missed, skipped: the policy's reason; not_a_tick: what passes over the tick; "
                       "breaker_open: the breaker's."}))
    held_by = out(fields.Nested(ExplainRunOut, allow_none=True, metadata={
        "description": "skipped by overlap: the run that was going."}))
    paused_by = out(fields.String(allow_none=True))
    paused_at = out(Iso(allow_none=True))
    pause_note = out(fields.String(allow_none=True))
    breaker_since = out(Iso(allow_none=True))
    moved_to = out(Iso(allow_none=True, metadata={"description": "A calendar's shift of the tick."}))
    next_tick = out(Iso(allow_none=True, metadata={
        "description": "The schedule's first tick at or after the one explained (waiting, will_run: when it runs)."}))
    notes = out(fields.List(fields.String()))
