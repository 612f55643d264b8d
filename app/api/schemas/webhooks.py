"""Webhooks: where an owner's events are POSTed, and the log of every delivery attempt."""

from __future__ import annotations

from marshmallow import RAISE, Schema, fields, validate

from app.api.schemas.common import page_of
from app.api.schemas.fields import Iso, out

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
    id = out(fields.Integer())
    owner_id = out(fields.Integer())
    url = out(fields.String())
    event_types = out(fields.List(fields.String()))
    created_at = out(Iso())


class WebhookCreatedOut(WebhookOut):
    """The answer that made a webhook: the only one that shows its signing secret."""

    secret = out(fields.String())


WebhookPage = page_of(WebhookOut)


class DeliveryAttemptOut(Schema):
    event_id = out(fields.String())
    event_type = out(fields.String())
    attempt = out(fields.Integer())
    at = out(Iso())
    status_code = out(fields.Integer(allow_none=True))
    duration_ms = out(fields.Integer())
    error = out(fields.String(allow_none=True))


DeliveryAttemptPage = page_of(DeliveryAttemptOut, pending=out(fields.Integer(metadata={
    "description": "events not delivered yet (being retried)"})))
