"""One emit for both kinds of transaction (recur_server.notify.outbox): in a chain transaction on the driver and in the
ORM session, the same event and deliveries are written, with the transaction and only with it."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.notify import outbox
from recur_server.notify.events import payload
from recur_server.notify.models import Delivery, Event, Webhook
from recur_server.notify.outbox import EventType

T0 = datetime(2026, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)
DATA = payload(EventType.BREAKER_CLOSED, workflow_id=7, workflow_name="nightly", from_="open", to="closed",
               reason="reset by hand", failures=0)
FAILED = payload(EventType.RUN_FAILED, schedule_id="s1", schedule_name="nightly", workflow_id=7, run_id="r1",
                 scheduled_for=T0, finished_at=T0, status="failed", trigger="schedule", error="RuntimeError: boom",
                 triggered_by_run_id=None)


def _subscribe(*types: str) -> int:
    hook = Webhook(owner_id=1, url="https://hooks.example.com/recur", event_types=list(types),
                   secret="whsec_cmVjdXItZXhhbXBsZS1zZWNyZXQtMjRi", created_at=T0)
    db.session.add(hook)
    db.session.commit()
    outbox.forget(1)
    return int(hook.id)


def _written() -> list[tuple[object, ...]]:
    rows = db.session.execute(select(Event.owner_id, Event.type, Event.occurred_at, Event.data, Delivery.webhook_id,
                                     Delivery.status, Delivery.attempts, Delivery.next_attempt_at,
                                     Delivery.created_at).join(Delivery, Delivery.event_id == Event.id)).all()
    db.session.rollback()
    return [tuple(row) for row in rows]


def test_the_session_and_a_chain_transaction_write_the_same_rows(app):
    hook = _subscribe("breaker.closed")
    _subscribe("run.failed")  # another type: no delivery for this one
    expected = [(1, "breaker.closed", T0, DATA, hook, "pending", 0, T0, T0)]

    outbox.emit(db.session, 1, "breaker.closed", DATA, T0)
    db.session.commit()
    in_session = _written()
    assert in_session == expected

    db.session.execute(Delivery.__table__.delete())
    db.session.execute(Event.__table__.delete())
    db.session.commit()
    with rawsql.transaction(db.engine) as tx:
        outbox.emit(tx, 1, "breaker.closed", DATA, T0)
    assert _written() == in_session


def test_nothing_is_written_without_a_subscriber_or_without_the_commit(app):
    _subscribe("run.failed")
    outbox.emit(db.session, 1, "breaker.closed", DATA, T0)
    outbox.emit(db.session, None, "run.failed", FAILED, T0)  # no owner: no event
    db.session.commit()
    assert _written() == []

    outbox.emit(db.session, 1, "run.failed", FAILED, T0)
    db.session.rollback()
    assert _written() == []
