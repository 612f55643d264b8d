"""Delivering the outbox: claim due deliveries, POST each, log the attempt, retry with backoff for a day.

Any number of processes may run it: a delivery is claimed by a compare-and-set on its row (its next
attempt pushed CLAIM_SECONDS ahead), so two processes never send one attempt at once, and a process that
dies mid-send leaves a claim that lapses. Delivery is at least once: a receiver may see an event again
(after a timeout whose answer was lost, say) and deduplicates on `webhook-id`, the event's stable id.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import select, update

from app.extensions import db
from app.notify import send
from app.notify.guard import allowed_hosts
from app.notify.models import Delivery, DeliveryAttempt, Event, Webhook

log = logging.getLogger(__name__)

CLAIM_SECONDS = 60
GIVE_UP_AFTER = timedelta(days=1)


def backoff_seconds(attempts: int, base: float, cap: float) -> float:
    """Before attempt attempts + 1: base, 2 × base, 4 × base, ... capped."""
    return float(min(cap, base * 2 ** max(0, attempts - 1)))


def deliver_due(now: datetime, limit: int = 20) -> int:
    """Send every delivery due now (at most `limit`); returns how many were attempted."""
    config = current_app.config
    due = db.session.execute(
        select(Delivery.id, Delivery.next_attempt_at)
        .where((Delivery.status == "pending") & (Delivery.next_attempt_at <= now))
        .order_by(Delivery.next_attempt_at, Delivery.id).limit(limit)
    ).all()
    db.session.rollback()
    attempted = 0
    for delivery_id, seen in due:
        claimed: Any = db.session.execute(
            update(Delivery)
            .where((Delivery.id == delivery_id) & (Delivery.status == "pending") & (Delivery.next_attempt_at == seen))
            .values(next_attempt_at=now + timedelta(seconds=CLAIM_SECONDS), attempts=Delivery.attempts + 1)
        )
        db.session.commit()
        if claimed.rowcount != 1:
            continue  # another process has it
        attempted += 1
        _attempt(delivery_id, now, config)
    return attempted


def _attempt(delivery_id: int, now: datetime, config: Any) -> None:
    delivery = db.session.get(Delivery, delivery_id)
    assert delivery is not None
    webhook = db.session.get(Webhook, delivery.webhook_id)
    event = db.session.get(Event, delivery.event_id)
    if webhook is None or event is None:
        delivery.status = "dropped"
        db.session.commit()
        return
    payload = {"id": event.id, "type": event.type, "occurred_at": _iso(event.occurred_at), "data": event.data}
    url, secret, attempt = webhook.url, webhook.secret, delivery.attempts
    db.session.rollback()  # no transaction held open while the receiver answers
    answer = send.post(url, secret, event.id, int(now.timestamp()), payload,
                       allowed_hosts(config.get("RECUR_WEBHOOK_ALLOW_HOSTS")),
                       float(config.get("RECUR_WEBHOOK_TIMEOUT_SECONDS", 10)))
    delivery = db.session.get(Delivery, delivery_id)
    if delivery is None:
        return
    db.session.add(DeliveryAttempt(delivery_id=delivery_id, webhook_id=webhook.id, event_id=event.id,
                                   event_type=event.type, attempt=attempt, at=now, status_code=answer.status_code,
                                   duration_ms=answer.duration_ms, error=answer.error))
    if answer.ok:
        delivery.status = "delivered"
        delivery.delivered_at = now
    elif now - delivery.created_at >= GIVE_UP_AFTER:
        delivery.status = "failed"
    else:
        wait = backoff_seconds(attempt, float(config.get("RECUR_WEBHOOK_BACKOFF_SECONDS", 5)),
                               float(config.get("RECUR_WEBHOOK_BACKOFF_MAX_SECONDS", 3600)))
        delivery.next_attempt_at = now + timedelta(seconds=wait)
    db.session.commit()
    if not answer.ok:
        log.info("webhook %s: event %s attempt %s failed: %s", webhook.id, event.id, attempt, answer.error)


def _iso(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")
