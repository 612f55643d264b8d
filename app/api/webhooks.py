"""/webhooks/: where an owner's events are POSTed, and the log of every delivery attempt."""

from __future__ import annotations

from flask import Response, current_app, jsonify
from sqlalchemy import delete, func, select

from app import clock
from app.api.contract import documented
from app.api.errors import not_found, validation_error
from app.api.schemas import (
    INT_MAX,
    DeliveryAttemptOut,
    DeliveryAttemptPage,
    PageIn,
    WebhookCreatedOut,
    WebhookIn,
    WebhookOut,
    WebhookPage,
    dump,
)
from app.api.views import _body, _created, _query, _schema, api
from app.auth import quotas
from app.auth.scope import caller, get_owned, scoped
from app.extensions import db
from app.notify import guard, outbox, signing
from app.notify.models import Delivery, DeliveryAttempt, Webhook


@api.post("/webhooks/")
@documented(summary="Create a webhook (its signing secret is shown in this answer only)", ok=201,
            answer=WebhookCreatedOut, body=WebhookIn)
def create_webhook() -> tuple[Response, int]:
    """A URL that resolves to a loopback, private, link-local or metadata address is refused (422 naming
    `url`) unless its host is in RECUR_WEBHOOK_ALLOW_HOSTS; only http and https."""
    data = _body(_schema(WebhookIn))
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
    return _created(dump(WebhookCreatedOut, webhook))


@api.get("/webhooks/")
@documented(summary="List webhooks", answer=WebhookPage, query=PageIn)
def list_webhooks() -> Response:
    page = _query(_schema(PageIn))
    total = db.session.scalar(scoped(select(func.count()).select_from(Webhook), Webhook))
    rows = db.session.scalars(scoped(select(Webhook), Webhook).order_by(Webhook.id)
                              .limit(page["limit"]).offset(page["offset"]))
    return jsonify({"items": [dump(WebhookOut, w) for w in rows], "total": total})


def _webhook_or_404(webhook_id: int) -> Webhook:
    webhook = get_owned(Webhook, webhook_id) if webhook_id <= INT_MAX else None
    if webhook is None:
        raise not_found("webhook", webhook_id)
    return webhook


@api.get("/webhooks/<int:webhook_id>/")
@documented(summary="Get a webhook", answer=WebhookOut, errors=[404])
def get_webhook(webhook_id: int) -> Response:
    return jsonify(dump(WebhookOut, _webhook_or_404(webhook_id)))


@api.delete("/webhooks/<int:webhook_id>/")
@documented(summary="Delete a webhook: nothing more is sent to it", ok=204, errors=[404])
def delete_webhook(webhook_id: int) -> tuple[str, int]:
    webhook = _webhook_or_404(webhook_id)
    owner_id = webhook.owner_id
    db.session.execute(delete(Delivery).where(Delivery.webhook_id == webhook.id))
    db.session.execute(delete(DeliveryAttempt).where(DeliveryAttempt.webhook_id == webhook.id))
    db.session.delete(webhook)
    db.session.commit()
    outbox.forget(owner_id)
    return "", 204


@api.get("/webhooks/<int:webhook_id>/deliveries/")
@documented(summary="A webhook's delivery attempts, newest first", answer=DeliveryAttemptPage, query=PageIn,
            errors=[404])
def list_deliveries(webhook_id: int) -> Response:
    """Each attempt: the event, its number, when, the answer's status code (null when none came), how long
    it took and the error. `pending` counts events not delivered yet (being retried)."""
    webhook = _webhook_or_404(webhook_id)
    page = _query(_schema(PageIn))
    total = db.session.scalar(select(func.count()).select_from(DeliveryAttempt)
                              .where(DeliveryAttempt.webhook_id == webhook.id))
    pending = db.session.scalar(select(func.count()).select_from(Delivery)
                                .where((Delivery.webhook_id == webhook.id) & (Delivery.status == "pending")))
    rows = db.session.scalars(select(DeliveryAttempt).where(DeliveryAttempt.webhook_id == webhook.id)
                              .order_by(DeliveryAttempt.id.desc()).limit(page["limit"]).offset(page["offset"]))
    return jsonify({"items": [dump_attempt(a) for a in rows], "total": total, "pending": pending})


def dump_attempt(attempt: DeliveryAttempt) -> dict[str, object]:
    return dump(DeliveryAttemptOut, attempt)
