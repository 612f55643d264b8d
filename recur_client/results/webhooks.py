"""Webhooks, their deliveries and the delivery log."""

from __future__ import annotations

from typing import TypedDict

from recur_client.pages import Page


class Webhook(TypedDict):
    id: int
    owner_id: int
    url: str
    event_types: list[str]
    created_at: str


class CreatedWebhook(Webhook):
    """A new webhook with its signing secret, `secret`: the only answer that ever shows it."""

    secret: str


class DeliveryAttempt(TypedDict):
    """One attempt to send an event to a webhook (the delivery log); `requested_by` names who asked for a
    redelivery."""

    delivery_id: int
    event_id: str
    event_type: str
    attempt: int
    at: str
    status_code: int | None
    duration_ms: int
    error: str | None
    requested_by: str | None


class DeliveryAttemptPage(Page[DeliveryAttempt]):
    """A page of the delivery log; `pending` counts the deliveries not yet sent."""

    pending: int


class Delivery(TypedDict):
    id: int
    webhook_id: int
    event_id: str
    status: str
    attempts: int
    next_attempt_at: str
    redelivered_at: str | None
