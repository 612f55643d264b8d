"""/webhooks/: where an owner's events are POSTed, and the log of every delivery attempt."""

from __future__ import annotations

from typing import Any

from flask import current_app, g
from flask.views import MethodView
from sqlalchemy import delete, func, select

from app import clock
from app.api.blueprint import api
from app.api.errors import ApiError, not_found, validation_error
from app.api.schemas.fields import Joined
from app.api.schemas.webhooks import (
    DeliveryAttemptPage,
    DeliveryAttemptPageIn,
    DeliveryOut,
    WebhookCreatedOut,
    WebhookIn,
    WebhookOut,
    WebhookPage,
    WebhookPageIn,
)
from app.auth import quotas
from app.auth.scope import caller, scoped
from app.extensions import db
from app.notify import guard, outbox, redelivery, signing
from app.notify.models import Delivery, DeliveryAttempt, Webhook
from app.queries import DELIVERY_ATTEMPTS, TOTAL_CAP, WEBHOOKS, Page, keyset_page, owned


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
        `url`) unless its host is in RECUR_WEBHOOK_ALLOW_HOSTS; only http and https.
        """
        try:
            guard.resolve(data["url"], guard.allowed_hosts(current_app.config["RECUR_WEBHOOK_ALLOW_HOSTS"]))
        except guard.Refused as exc:
            raise validation_error({"url": [str(exc)]}) from exc
        secret = data.get("secret") or signing.new_secret()
        if not signing.is_valid_secret(secret):
            raise validation_error({"secret": ["must be whsec_ followed by base64 of 16 to 64 bytes."]})
        owner = caller()
        quotas.require_room(owner.id, "webhooks", clock.utcnow())
        webhook = Webhook(owner_id=owner.id, url=data["url"], event_types=sorted(set(data["event_types"])),
                          secret=secret, created_at=clock.utcnow())
        db.session.add(webhook)
        db.session.commit()
        outbox.forget(owner.id)
        return webhook


@api.route("/webhooks/<int:webhook_id>/", endpoint="webhook")
class WebhookItem(MethodView):
    @api.response(200, WebhookOut)
    @api.errors(404)
    def get(self, webhook_id: int) -> Webhook:
        """Get a webhook"""
        return webhook_or_404(webhook_id)

    @api.response(204)
    @api.errors(404)
    def delete(self, webhook_id: int) -> None:
        """Delete a webhook: nothing more is sent to it"""
        webhook = webhook_or_404(webhook_id)
        owner_id = webhook.owner_id
        db.session.execute(delete(Delivery).where(Delivery.webhook_id == webhook.id))
        db.session.execute(delete(DeliveryAttempt).where(DeliveryAttempt.webhook_id == webhook.id))
        db.session.delete(webhook)
        db.session.commit()
        outbox.forget(owner_id)


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
        pending = db.session.scalar(select(func.count()).select_from(
            select(Delivery.id).where(Delivery.webhook_id == webhook.id, Delivery.status == "pending")
            .limit(TOTAL_CAP).subquery()))
        return Joined(attempts, pending=int(pending or 0))


@api.route("/webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/redeliver/", endpoint="webhook_redeliver")
class WebhookRedeliver(MethodView):
    @api.response(202, DeliveryOut)
    @api.errors(404, 409)
    def post(self, webhook_id: int, delivery_id: int) -> Delivery:
        """Send a delivery again: one that failed (gave up after a day), was dropped or was delivered

        It goes back to pending, due now, with a day of attempts from now; the delivery log gets an entry
        naming who asked (`requested_by`). A delivery that is pending already (asked for again, or still
        being retried) is left as it is, so a repeat of the request sends it once. 409 when its event was
        pruned (RECUR_KEEP_EVENTS_DAYS).
        """
        webhook = webhook_or_404(webhook_id)
        delivery = db.session.scalars(select(Delivery).where(
            (Delivery.id == delivery_id) & (Delivery.webhook_id == webhook.id)).with_for_update()).first()
        if delivery is None:
            raise not_found("delivery", delivery_id)
        by = f"{g.owner.name} (token {g.token.name})" if g.get("token") is not None else g.owner.name
        try:
            return redelivery.redeliver(delivery, by, clock.utcnow())
        except redelivery.EventGone as exc:
            raise ApiError(409, "conflict", f"Delivery {delivery_id}'s event {exc} was pruned; nothing is left "
                           "to send.") from exc
