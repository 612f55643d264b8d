"""Delivering the outbox: claim due deliveries fairly across owners, POST each from a small pool of threads,
log the attempt, retry with backoff for a day.

Any number of processes may run it: a delivery is claimed by a compare-and-set on its row (its next
attempt pushed CLAIM_SECONDS ahead), so two processes never send one attempt at once, and a process that
dies mid-send leaves a claim that lapses. A request to send a delivery again that is waiting for its next
retry (recur_server.notify.redelivery) claims it the same way and sends it at once, in the request (attempt_now).
Delivery is at least once: a receiver may see an event again
(after a timeout whose answer was lost, say) and deduplicates on `webhook-id`, the event's stable id.

No receiver can hold up another owner's: each process sends up to RECUR_WEBHOOK_CONCURRENCY deliveries at
once, one owner holds at most half of those slots, and each pass picks owners oldest-due first, so an
owner whose fifty receivers hang until the timeout leaves the other slots to everyone else. No database
transaction is open while a receiver is called (on SQLite an open transaction is the write lock every link
and API call waits for), and whatever the send raises is a failed attempt with its error.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import Flask, current_app
from sqlalchemy import func, select, update

from recur_server.infra.extensions import db
from recur_server.infra.reads import read_alone
from recur_server.notify import send
from recur_server.notify.guard import allowed_hosts, egress
from recur_server.notify.models import Delivery, DeliveryAttempt, Event, Webhook
from recur_server.timing import iso

log = logging.getLogger(__name__)

CLAIM_SECONDS = 60
GIVE_UP_AFTER = timedelta(days=1)
# Owners looked at in one pass (the oldest due first); the rest wait for the next pass, a second later.
OWNERS_PER_PASS = 50


def backoff_seconds(attempts: int, base: float, cap: float) -> float:
    """Before attempt attempts + 1: base, 2 × base, 4 × base, ... capped."""
    return float(min(cap, base * 2 ** max(0, attempts - 1)))


class _Sender:
    """This process's pool of delivery threads and what each owner has in flight in it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pid = os.getpid()
        self.pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="recur-deliver")
        self.lock = threading.Lock()
        self.in_flight: Counter[int] = Counter()
        self.futures: set[Future[None]] = set()

    def free(self) -> int:
        with self.lock:
            return self.size - sum(self.in_flight.values())

    def owner_room(self, owner_id: int) -> int:
        with self.lock:
            return max(0, max(1, self.size // 2) - self.in_flight[owner_id])

    def submit(self, app: Flask, owner_id: int, delivery_id: int, now: datetime) -> None:
        with self.lock:
            self.in_flight[owner_id] += 1
        future = self.pool.submit(_attempt_in_context, app, delivery_id, now)
        with self.lock:
            self.futures.add(future)

        def done(_: Future[None]) -> None:
            with self.lock:
                self.in_flight[owner_id] -= 1
                if self.in_flight[owner_id] <= 0:
                    del self.in_flight[owner_id]
                self.futures.discard(future)

        future.add_done_callback(done)


_sender: _Sender | None = None
_sender_lock = threading.Lock()


def _the_sender(size: int) -> _Sender:
    """One pool per process (a forked child makes its own: threads do not survive a fork)."""
    global _sender
    with _sender_lock:
        if _sender is None or _sender.pid != os.getpid() or _sender.size != size:
            _sender = _Sender(size)
        return _sender


def wait_idle(timeout: float = 60.0) -> None:
    """Wait until every delivery this process started has ended (for tests and a clean stop)."""
    sender = _sender
    if sender is None or sender.pid != os.getpid():
        return
    with sender.lock:
        pending = set(sender.futures)
    wait(pending, timeout=timeout)


def _due_per_owner(sender: _Sender, free: int, now: datetime) -> dict[int, list[tuple[int, datetime]]]:
    """The deliveries due now of the owners longest waiting, as many of each as it has room for."""
    owners = db.session.execute(
        select(Delivery.owner_id).where((Delivery.status == "pending") & (Delivery.next_attempt_at <= now))
        .group_by(Delivery.owner_id).order_by(func.min(Delivery.next_attempt_at)).limit(OWNERS_PER_PASS)
    ).scalars().all()
    queues: dict[int, list[tuple[int, datetime]]] = {}
    for owner_id in owners:
        room = min(sender.owner_room(owner_id), free)
        if room <= 0:
            continue
        queues[owner_id] = [tuple(row) for row in db.session.execute(  # type: ignore[misc]
            select(Delivery.id, Delivery.next_attempt_at)
            .where((Delivery.status == "pending") & (Delivery.owner_id == owner_id) & (Delivery.next_attempt_at <= now))
            .order_by(Delivery.next_attempt_at, Delivery.id).limit(room)).all()]
    return queues


def deliver_due(now: datetime) -> int:
    """Claim deliveries due now, fairly across owners, as many as this process has free slots for, and
    start sending them; returns how many were started. Sending happens in the pool's threads."""
    app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
    sender = _the_sender(int(app.config.get("RECUR_WEBHOOK_CONCURRENCY", 8)))
    free = sender.free()
    if free <= 0:
        return 0
    queues = read_alone(lambda: _due_per_owner(sender, free, now))
    started = 0
    while free > 0 and any(queues.values()):
        for owner_id, queue in queues.items():  # one of each owner's at a time: round robin
            if not queue or free <= 0:
                continue
            delivery_id, seen = queue.pop(0)
            if claim(delivery_id, seen, now):
                sender.submit(app, owner_id, delivery_id, now)
                started += 1
                free -= 1
    return started


def claim(delivery_id: int, seen: datetime, now: datetime) -> bool:
    """Take the pending delivery for one attempt if its next attempt is still `seen` (committed): its next
    attempt pushed CLAIM_SECONDS ahead, its attempts counted. False when another process took it first."""
    claimed: Any = db.session.execute(
        update(Delivery)
        .where((Delivery.id == delivery_id) & (Delivery.status == "pending") & (Delivery.next_attempt_at == seen))
        .values(next_attempt_at=now + timedelta(seconds=CLAIM_SECONDS), attempts=Delivery.attempts + 1)
    )
    db.session.commit()
    return bool(claimed.rowcount == 1)  # otherwise another process has it


@dataclass(frozen=True)
class _Letter:
    """Everything one send needs, read in a transaction that is over before the receiver is called."""

    url: str
    secret: str
    webhook_id: int
    event_id: str
    event_type: str
    payload: dict[str, Any]
    attempt: int


def attempt_now(delivery_id: int, seen: datetime, now: datetime, by: str) -> bool:
    """One attempt of the pending delivery, in this thread, asked for by `by` (its entry in the log says so):
    claimed as deliver_due claims (so the scheduled retry, due at the same moment, is not sent too), then
    sent with no transaction open. False when it could not be claimed (another process has it)."""
    if not claim(delivery_id, seen, now):
        return False
    _attempt(delivery_id, now, current_app.config, by)
    return True


def _attempt_in_context(app: Flask, delivery_id: int, now: datetime) -> None:
    with app.app_context():
        try:
            _attempt(delivery_id, now, app.config)
        except Exception:  # noqa: BLE001 - a bug or the database away: the claim lapses and it is tried again
            log.exception("delivery %s: attempt could not be recorded", delivery_id)
        finally:
            db.session.remove()


def _attempt(delivery_id: int, now: datetime, config: Any, by: str | None = None) -> None:
    letter = _letter(delivery_id, now)
    if letter is None:
        return
    timeout = float(config.get("RECUR_WEBHOOK_TIMEOUT_SECONDS", 10))
    try:
        answer = send.post(letter.url, letter.secret, letter.event_id, int(now.timestamp()), letter.payload,
                           allowed_hosts(config.get("RECUR_WEBHOOK_ALLOW_HOSTS")), timeout,
                           egress(config.get("RECUR_WEBHOOK_EGRESS")))
    except Exception as exc:  # noqa: BLE001 - whatever a send raises is a failed attempt, never a stalled pass
        answer = send.Answer(None, 0, f"{type(exc).__name__}: {exc}"[:500])
    _record(delivery_id, letter, answer, now, config, by)


def _letter(delivery_id: int, now: datetime) -> _Letter | None:
    """What to send for this claimed delivery, or None when it must not be sent: then it is marked dropped
    (its webhook is gone, belongs to another owner or no longer wants the event's type) or failed (a day
    of attempts is over), with the reason. Either way no transaction is left open."""
    try:
        delivery = db.session.get(Delivery, delivery_id)
        if delivery is None:
            return None
        webhook = db.session.get(Webhook, delivery.webhook_id)
        event = db.session.get(Event, delivery.event_id)
        reason = _undeliverable(delivery, webhook, event)
        if reason is not None:
            delivery.status, delivery.reason = "dropped", reason
            db.session.commit()
            log.warning("delivery %s dropped: %s", delivery_id, reason)
            return None
        assert webhook is not None and event is not None
        if now - (delivery.redelivered_at or delivery.created_at) >= GIVE_UP_AFTER:
            delivery.status, delivery.reason = "failed", f"gave up: not delivered within {GIVE_UP_AFTER}"
            db.session.commit()
            return None
        return _Letter(url=webhook.url, secret=webhook.secret, webhook_id=webhook.id, event_id=event.id,
                       event_type=event.type, attempt=delivery.attempts,
                       payload={"id": event.id, "type": event.type, "occurred_at": iso(event.occurred_at),
                                "data": event.data})
    finally:
        db.session.rollback()  # nothing held while the receiver answers


def _undeliverable(delivery: Delivery, webhook: Webhook | None, event: Event | None) -> str | None:
    if event is None:
        return "its event no longer exists"
    if webhook is None:
        return f"webhook {delivery.webhook_id} no longer exists"
    if webhook.owner_id != event.owner_id or delivery.owner_id != event.owner_id:
        return f"webhook {webhook.id} does not belong to the event's owner"
    if event.type not in (webhook.event_types or []):
        return f"webhook {webhook.id} does not subscribe to {event.type}"
    return None


def _record(delivery_id: int, letter: _Letter, answer: send.Answer, now: datetime, config: Any,
            by: str | None) -> None:
    delivery = db.session.get(Delivery, delivery_id)
    if delivery is None or delivery.status != "pending":
        db.session.rollback()
        return
    db.session.add(DeliveryAttempt(delivery_id=delivery_id, webhook_id=letter.webhook_id, event_id=letter.event_id,
                                   event_type=letter.event_type, attempt=letter.attempt, at=now,
                                   status_code=answer.status_code, duration_ms=answer.duration_ms,
                                   error=answer.error, requested_by=by))
    if answer.ok:
        delivery.status = "delivered"
        delivery.delivered_at = now
    else:
        wait_s = backoff_seconds(letter.attempt, float(config.get("RECUR_WEBHOOK_BACKOFF_SECONDS", 5)),
                                 float(config.get("RECUR_WEBHOOK_BACKOFF_MAX_SECONDS", 3600)))
        delivery.next_attempt_at = now + timedelta(seconds=wait_s)
    db.session.commit()
    if not answer.ok:
        log.info("webhook %s: event %s attempt %s failed: %s", letter.webhook_id, letter.event_id, letter.attempt,
                 answer.error)
