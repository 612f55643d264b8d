"""Webhooks: made, deleted and their deliveries sent again the same way whoever asks (the API, the console).
Their bodies are checked first by the API's WebhookIn; what needs more than the body (the URL's address, the
secret's form, the owner's quota) is checked here."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import current_app
from sqlalchemy import delete, func, select

from recur_server.infra import transaction
from recur_server.infra.extensions import db
from recur_server.notify import guard, outbox, redelivery, signing
from recur_server.notify.models import Delivery, DeliveryAttempt, Webhook
from recur_server.services import quotas
from recur_server.services.queries import INT_MAX, TOTAL_CAP


class WebhookInvalid(Exception):
    """A webhook's body passed the schema but cannot be taken: its URL (refused by the address guard or the egress
    allowlist) or its secret; `errors` names the field ({field: [message]}, a 422)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(m for ms in errors.values() for m in ms))
        self.errors = errors


class EventPruned(redelivery.EventGone):
    """A delivery to send again whose event was pruned (RECUR_KEEP_EVENTS_DAYS): nothing is left to send (a 409)."""

    def __init__(self, delivery_id: int, event_id: str) -> None:
        super().__init__(event_id)
        self.delivery_id = delivery_id


def create(owner_id: int, data: dict[str, Any], now: datetime) -> Webhook:
    """A new webhook of the owner (committed). WebhookInvalid when the URL reaches an internal address (unless
    its host is in RECUR_WEBHOOK_ALLOW_HOSTS) or the secret is not whsec_ + base64 of 16 to 64 bytes;
    quotas.QuotaExceeded at the owner's quota."""
    try:
        _check(data["url"])
    except guard.Refused as exc:
        raise WebhookInvalid({"url": [str(exc)]}) from exc
    secret = data.get("secret") or signing.new_secret()
    if not signing.is_valid_secret(secret):
        raise WebhookInvalid({"secret": ["must be whsec_ followed by base64 of 16 to 64 bytes."]})
    quotas.require_room(owner_id, "webhooks", now)
    webhook = Webhook(owner_id=owner_id, url=data["url"], event_types=sorted(set(data["event_types"])),
                      secret=secret, created_at=now)
    db.session.add(webhook)
    transaction.commit()
    transaction.after_commit(lambda: outbox.forget(owner_id))
    return webhook


def _check(url: str) -> None:
    """guard.Refused unless `url` passes the egress allowlist (RECUR_WEBHOOK_EGRESS) and the address guard."""
    config = current_app.config
    guard.resolve(url, guard.allowed_hosts(config["RECUR_WEBHOOK_ALLOW_HOSTS"]),
                  guard.egress(config["RECUR_WEBHOOK_EGRESS"]))


def update(webhook: Webhook, data: dict[str, Any]) -> Webhook:
    """Change the webhook's URL or event types (committed); its secret and delivery log stay. WebhookInvalid
    when a new URL reaches an internal address, as at create. Each attempt reads the webhook as it is then: a
    queued delivery goes to the new URL, and one of a type no longer subscribed to is dropped."""
    if "url" in data:
        try:
            _check(data["url"])
        except guard.Refused as exc:
            raise WebhookInvalid({"url": [str(exc)]}) from exc
        webhook.url = data["url"]
    if "event_types" in data:
        webhook.event_types = sorted(set(data["event_types"]))
    transaction.commit()
    transaction.after_commit(lambda: outbox.forget(webhook.owner_id))
    return webhook


def remove(webhook: Webhook) -> None:
    """The webhook, its deliveries and their attempts: nothing more is sent to it."""
    owner_id = webhook.owner_id
    db.session.execute(delete(Delivery).where(Delivery.webhook_id == webhook.id))
    db.session.execute(delete(DeliveryAttempt).where(DeliveryAttempt.webhook_id == webhook.id))
    db.session.delete(webhook)
    transaction.commit()
    transaction.after_commit(lambda: outbox.forget(owner_id))


def pending_count(webhook: Webhook) -> int:
    """The webhook's events not delivered yet (being retried), counted up to TOTAL_CAP."""
    counted = db.session.scalar(select(func.count()).select_from(
        select(Delivery.id).where(Delivery.webhook_id == webhook.id, Delivery.status == "pending")
        .limit(TOTAL_CAP).subquery()))
    return int(counted or 0)


def redeliver(webhook: Webhook, delivery_id: int, by: str, now: datetime) -> Delivery | None:
    """Send one of the webhook's deliveries again (recur_server.notify.redelivery); None when the webhook has no such
    delivery. EventPruned when its event was pruned."""
    if not 0 <= delivery_id <= INT_MAX:
        return None
    delivery = db.session.scalars(select(Delivery).where(
        (Delivery.id == delivery_id) & (Delivery.webhook_id == webhook.id)).with_for_update()).first()
    if delivery is None:
        return None
    try:
        return redelivery.redeliver(delivery, by, now)
    except redelivery.EventGone as exc:
        raise EventPruned(delivery_id, str(exc)) from exc  # the rollback expired `delivery`
