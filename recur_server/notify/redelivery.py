"""A delivery sent again by hand. A failed (given up), dropped or delivered delivery goes back to pending, due
now, with a day of attempts from now, and the delivery log gets an entry naming who asked. A pending one
waiting for its next retry is sent at once, in the request: one attempt, claimed as the sender claims, its
entry in the log naming who asked."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from recur_server.infra.extensions import db
from recur_server.notify import delivery as sending
from recur_server.notify.models import Delivery, DeliveryAttempt, Event


class EventGone(Exception):
    """The delivery's event was pruned (RECUR_KEEP_EVENTS_DAYS): there is nothing left to send."""


def redeliver(delivery: Delivery, by: str, now: datetime) -> Delivery:
    """Send `delivery` (locked by the caller) again. One request, one redelivery: a pending delivery waiting
    for its next retry is sent once now; one due already (asked for again, the sender takes it within a
    second) or with an attempt under way is left as it is."""
    if delivery.status == "pending":
        return _send_now(delivery, by, now)
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


def _send_now(delivery: Delivery, by: str, now: datetime) -> Delivery:
    """One attempt of the pending `delivery` now if it is waiting for its next retry: not due yet and no
    attempt under way. The claim is a compare-and-set on the next attempt's time, as the sender's, so a retry
    coming due at the same moment is sent once, by whichever claims it first."""
    delivery_id, seen = delivery.id, delivery.next_attempt_at
    if seen <= now or _under_way(delivery):
        db.session.rollback()
        return delivery
    sending.attempt_now(delivery_id, seen, now, by)
    db.session.expire_all()
    return db.session.get(Delivery, delivery_id) or delivery


def _under_way(delivery: Delivery) -> bool:
    """A sender holds a claim on it: each claim counts an attempt, recorded when its answer comes (a claim of a
    process that died lapses when its next attempt comes due)."""
    if delivery.attempts == 0:
        return False
    recorded = db.session.scalar(select(DeliveryAttempt.id).where(
        (DeliveryAttempt.delivery_id == delivery.id) & (DeliveryAttempt.attempt == delivery.attempts)).limit(1))
    return recorded is None
