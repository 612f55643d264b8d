"""/webhooks/: where an owner's events are POSTed, and the log of every delivery attempt."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from sqlalchemy import select

from recur_server.api.blueprint import api
from recur_server.api.errors import not_found
from recur_server.auth.actor import acting
from recur_server.auth.scope import caller, scoped
from recur_server.infra import clock
from recur_server.notify.models import Delivery, DeliveryAttempt, Webhook
from recur_server.schemas.fields import Joined
from recur_server.schemas.webhooks import (
    DeliveryAttemptPage,
    DeliveryAttemptPageIn,
    DeliveryOut,
    WebhookCreatedOut,
    WebhookEditIn,
    WebhookIn,
    WebhookOut,
    WebhookPage,
    WebhookPageIn,
)
from recur_server.services import webhooks
from recur_server.services.queries import DELIVERY_ATTEMPTS, WEBHOOKS, Page, keyset_page, owned


def webhook_or_404(webhook_id: int) -> Webhook:
    webhook = owned(Webhook, webhook_id)
    if webhook is None:
        raise not_found("webhook", webhook_id)
    return webhook


@api.route("/webhooks/", endpoint="webhooks")
class Webhooks(MethodView):
    @api.arguments(WebhookPageIn, location="query")
    @api.response(200, WebhookPage)
    def get(self, query: dict[str, Any]) -> Page:
        """List webhooks, oldest first"""
        return keyset_page(scoped(select(Webhook), Webhook), WEBHOOKS, query["limit"], query["offset"],
                           query.get("cursor"))

    @api.arguments(WebhookIn)
    @api.response(201, WebhookCreatedOut)
    def post(self, data: dict[str, Any]) -> Webhook:
        """Create a webhook (its signing secret is shown in this answer only)

        A URL that resolves to a loopback, private, link-local or metadata address is refused (422 naming
        `url`) unless its host is in RECUR_WEBHOOK_ALLOW_HOSTS; only http and https. When RECUR_WEBHOOK_EGRESS
        is set, a destination outside that allowlist is refused too.
        """
        return webhooks.create(caller().id, data, clock.utcnow())


@api.route("/webhooks/<int:webhook_id>/", endpoint="webhook")
class WebhookItem(MethodView):
    @api.response(200, WebhookOut)
    @api.errors(404)
    def get(self, webhook_id: int) -> Webhook:
        """Get a webhook"""
        return webhook_or_404(webhook_id)

    @api.arguments(WebhookEditIn(partial=True))
    @api.response(200, WebhookOut)
    @api.errors(404)
    def patch(self, data: dict[str, Any], webhook_id: int) -> Webhook:
        """Edit a webhook: its URL or event types

        Its secret and delivery log stay. A new URL is checked as at create (422 naming `url`). Each attempt
        reads the webhook as it is then: a pending delivery goes to the new URL, and one of an event type no
        longer subscribed to is dropped.
        """
        return webhooks.update(webhook_or_404(webhook_id), data)

    @api.response(204)
    @api.errors(404)
    def delete(self, webhook_id: int) -> None:
        """Delete a webhook: nothing more is sent to it"""
        webhooks.remove(webhook_or_404(webhook_id))


@api.route("/webhooks/<int:webhook_id>/deliveries/", endpoint="webhook_deliveries")
class WebhookDeliveries(MethodView):
    @api.arguments(DeliveryAttemptPageIn, location="query")
    @api.response(200, DeliveryAttemptPage)
    @api.errors(404)
    def get(self, query: dict[str, Any], webhook_id: int) -> Joined:
        """A webhook's delivery attempts, newest first

        Each attempt: the event, its number, when, the answer's status code (null when none came), how long
        it took and the error. A page at a time after a cursor (`next`), one range of the index
        (webhook_id, id). `pending` counts events not delivered yet (being retried), up to 10,000.
        """
        webhook = webhook_or_404(webhook_id)
        attempts = keyset_page(select(DeliveryAttempt).where(DeliveryAttempt.webhook_id == webhook.id),
                               DELIVERY_ATTEMPTS, query["limit"], query["offset"], query.get("cursor"))
        return Joined(attempts, pending=webhooks.pending_count(webhook))


@api.route("/webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/redeliver/", endpoint="webhook_redeliver")
class WebhookRedeliver(MethodView):
    @api.response(202, DeliveryOut)
    @api.errors(404, 409)
    def post(self, webhook_id: int, delivery_id: int) -> Delivery:
        """Send a delivery again: one waiting for its retry, one that failed, was dropped or was delivered

        A delivery waiting for its next retry is sent at once, in the request: one attempt, logged with its
        answer and who asked (`requested_by`); the answer is the delivery after it. One that failed, was
        dropped or was delivered goes back to pending, due now, with a day of attempts from now; the delivery
        log gets an entry naming who asked. A pending delivery that is due already (asked for again) or has an
        attempt under way is left as it is, so a repeat of the request sends it once. 409 when its event was
        pruned (RECUR_KEEP_EVENTS_DAYS).
        """
        delivery = webhooks.redeliver(webhook_or_404(webhook_id), delivery_id, acting(), clock.utcnow())
        if delivery is None:
            raise not_found("delivery", delivery_id)
        return delivery
