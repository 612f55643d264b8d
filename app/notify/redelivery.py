"""A delivery sent again by hand: a failed (given up), dropped or delivered delivery goes back to pending,
due now, with a day of attempts from now, and the delivery log gets an entry naming who asked."""

from __future__ import annotations

from datetime import datetime

from app.infra.extensions import db
from app.notify.models import Delivery, DeliveryAttempt, Event


class EventGone(Exception):
    """The delivery's event was pruned (RECUR_KEEP_EVENTS_DAYS): there is nothing left to send."""


def redeliver(delivery: Delivery, by: str, now: datetime) -> Delivery:
    """Send `delivery` (locked by the caller) again. One request, one redelivery: a delivery that is pending
    already (asked for again, or still being retried) is left as it is."""
    if delivery.status == "pending":
        db.session.rollback()
        return delivery
    event = db.session.get(Event, delivery.event_id)
    if event is None:
        db.session.rollback()
        raise EventGone(delivery.event_id)
    db.session.add(DeliveryAttempt(delivery_id=delivery.id, webhook_id=delivery.webhook_id, event_id=event.id,
                                   event_type=event.type, attempt=delivery.attempts, at=now, status_code=None,
                                   duration_ms=0, error=f"sent again by hand (it was {delivery.status})",
                                   requested_by=by))
    delivery.status, delivery.reason, delivery.delivered_at = "pending", None, None
    delivery.next_attempt_at = delivery.redelivered_at = now
    db.session.commit()
    return delivery
