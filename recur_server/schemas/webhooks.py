"""Webhooks: where an owner's events are POSTed, and the log of every delivery attempt."""

from __future__ import annotations

from marshmallow import RAISE, Schema, fields, validate

from recur_server.notify.outbox import EventType
from recur_server.schemas.common import Cursor, PageIn, page_of
from recur_server.schemas.fields import Iso, out
from recur_server.services.queries import DELIVERY_ATTEMPTS, TOTAL_CAP, WEBHOOKS

EVENT_TYPES = [event.value for event in EventType]  # what a webhook may subscribe to: every type Recur emits


class WebhookIn(Schema):
    class Meta:
        unknown = RAISE

    url = fields.String(required=True, validate=validate.Length(min=1, max=2000), metadata={
        "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://", "example": "https://hooks.example.com/recur-events",
        "description": "http or https; a host that resolves to a loopback, private, link-local or metadata "
                       "address is refused unless it is in RECUR_WEBHOOK_ALLOW_HOSTS; when "
                       "RECUR_WEBHOOK_EGRESS is set, a destination outside it is refused"})
    event_types = fields.List(fields.String(validate=validate.OneOf(EVENT_TYPES)), required=True,
                              metadata={"example": ["run.failed", "schedule.dead"]},
                              validate=validate.Length(min=1, max=len(EVENT_TYPES)))
    secret = fields.String(allow_none=True, validate=validate.Length(min=10, max=200),
                           metadata={"description": "whsec_ + base64 of 16 to 64 bytes; made for you if left out",
                                     "pattern": "^whsec_[A-Za-z0-9+/]+={0,2}$",
                                     "example": "whsec_cmVjdXItZXhhbXBsZS1zZWNyZXQtMjRi"})


class WebhookEditIn(WebhookIn):
    """PATCH body (loaded partial): a new URL or event types. The secret stays; a new one is a new webhook."""

    class Meta:
        unknown = RAISE
        exclude = ("secret",)


class WebhookOut(Schema):
    id = out(fields.Integer())
    owner_id = out(fields.Integer())
    url = out(fields.String())
    event_types = out(fields.List(fields.String()))
    created_at = out(Iso())


class WebhookCreatedOut(WebhookOut):
    """The answer that made a webhook: the only one that shows its signing secret."""

    secret = out(fields.String())


class WebhookPageIn(PageIn):
    cursor = Cursor(WEBHOOKS)


WebhookPage = page_of(WebhookOut)


class DeliveryAttemptOut(Schema):
    delivery_id = out(fields.Integer())
    event_id = out(fields.String())
    event_type = out(fields.String())
    attempt = out(fields.Integer())
    at = out(Iso())
    status_code = out(fields.Integer(allow_none=True))
    duration_ms = out(fields.Integer())
    error = out(fields.String(allow_none=True))
    requested_by = out(fields.String(allow_none=True, metadata={
        "description": "who asked, on an entry made by a request to send the delivery again: with no "
                       "status_code and duration_ms 0 it put the delivery back to pending and sent nothing; "
                       "otherwise it is the attempt the request sent at once (a delivery waiting for its retry)"}))


class DeliveryOut(Schema):
    id = out(fields.Integer())
    webhook_id = out(fields.Integer())
    event_id = out(fields.String())
    status = out(fields.String(metadata={"description": "pending, delivered, failed (given up) or dropped"}))
    attempts = out(fields.Integer())
    next_attempt_at = out(Iso())
    redelivered_at = out(Iso(allow_none=True))


class DeliveryAttemptPageIn(PageIn):
    cursor = Cursor(DELIVERY_ATTEMPTS)


DeliveryAttemptPage = page_of(DeliveryAttemptOut, pending=out(fields.Integer(metadata={
    "description": f"events not delivered yet (being retried), counted up to {TOTAL_CAP:,}"})))
