"""Writing events: in the caller's transaction, for the owner's webhooks that want that type.

An event is written only when one of its owner's webhooks subscribes to its type (a run's success, on
the hot path, then costs nothing for owners who do not want it); with it, one delivery row per such
webhook. The subscriptions are read from a per-process cache that lives SUBSCRIPTIONS_TTL seconds.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import bindparam, delete, insert, select
from sqlalchemy.orm import Session, scoped_session

from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.models import UTCDateTime
from recur_server.notify import events
from recur_server.notify.models import Delivery, DeliveryAttempt, Event, Webhook


class EventType(StrEnum):
    RUN_FAILED = "run.failed"
    RUN_TIMED_OUT = "run.timed_out"
    RUN_SUCCEEDED = "run.succeeded"
    SCHEDULE_DEAD = "schedule.dead"
    SCHEDULE_PAUSED = "schedule.paused"
    SCHEDULE_DONE = "schedule.done"
    SCHEDULE_MISSED = "schedule.missed"
    SCHEDULE_RECOVERED = "schedule.recovered"
    BREAKER_OPENED = "breaker.opened"
    BREAKER_CLOSED = "breaker.closed"
    RUN_LONG = "run.long"
    RUN_LATE = "run.late"
    SCHEDULE_FAILING = "schedule.failing"
    WORKERS_GONE = "workers.gone"
    WORKERS_BACK = "workers.back"


SUBSCRIPTIONS_TTL = 2.0
_cache: dict[int, tuple[float, list[tuple[int, frozenset[str]]]]] = {}
_lock = threading.Lock()

_WEBHOOKS_OF = rawsql.Statement(
    select(Webhook.id, Webhook.event_types).where(Webhook.owner_id == bindparam("p_owner_id")))
_INSERT_EVENT = rawsql.Statement(insert(Event.__table__).values(
    id=bindparam("p_id"), owner_id=bindparam("p_owner_id"), type=bindparam("p_type"),
    occurred_at=bindparam("p_at", type_=UTCDateTime()), data=bindparam("p_data", type_=Event.__table__.c.data.type)))
_INSERT_DELIVERY = rawsql.Statement(insert(Delivery.__table__).values(
    webhook_id=bindparam("p_webhook_id"), owner_id=bindparam("p_owner_id"), event_id=bindparam("p_event_id"),
    status="pending", attempts=0,
    next_attempt_at=bindparam("p_at", type_=UTCDateTime()), created_at=bindparam("p_at", type_=UTCDateTime())))


def forget(owner_id: int) -> None:
    """A webhook of this owner was made or deleted here: read its subscriptions again."""
    with _lock:
        _cache.pop(owner_id, None)


def remove_owner(owner_id: int) -> None:
    """Delete every webhook, event, delivery and attempt of an owner being deleted (in the caller's
    transaction), and forget its subscriptions here."""
    deliveries = select(Delivery.id).where(Delivery.owner_id == owner_id)
    db.session.execute(delete(DeliveryAttempt).where(DeliveryAttempt.delivery_id.in_(deliveries)))
    db.session.execute(delete(Delivery).where(Delivery.owner_id == owner_id))
    db.session.execute(delete(Event).where(Event.owner_id == owner_id))
    db.session.execute(delete(Webhook).where(Webhook.owner_id == owner_id))
    forget(owner_id)


def _subscribers(read: Callable[[], list[tuple[Any, ...]]], owner_id: int, event_type: str) -> list[int]:
    now = time.monotonic()
    with _lock:
        cached = _cache.get(owner_id)
    if cached is None or cached[0] < now:
        rows = read()
        hooks = [(int(hook_id), frozenset(types or [])) for hook_id, types in rows]
        with _lock:
            _cache[owner_id] = (now + SUBSCRIPTIONS_TTL, hooks)
    else:
        hooks = cached[1]
    return [hook_id for hook_id, types in hooks if event_type in types]


# Where an event is written: a chain transaction (recur_server.infra.rawsql), or the ORM session (db.session: the API's
# changes and the watch's alerts), whose commit then carries it.
Into = rawsql.Transaction | Session | scoped_session[Any]


def emit(into: Into, owner_id: int | None, event_type: str, data: dict[str, Any], at: datetime) -> None:
    """Write the event, and a delivery for each of its owner's webhooks that wants its type, in `into`. `data`:
    what recur_server.notify.events.payload() builds; events.InvalidEvent, written or not, when it is not what the
    type's schema declares."""
    events.check(event_type, data)
    if owner_id is None:
        return
    hooks = _subscribers(lambda: _run(into, _WEBHOOKS_OF, {"p_owner_id": owner_id}), owner_id, event_type)
    if not hooks:
        return
    events.validate_written(event_type, data)
    event_id = new_event_id()
    _run(into, _INSERT_EVENT, {"p_id": event_id, "p_owner_id": owner_id, "p_type": event_type, "p_at": at,
                               "p_data": data})
    for hook_id in hooks:
        _run(into, _INSERT_DELIVERY, {"p_webhook_id": hook_id, "p_owner_id": owner_id, "p_event_id": event_id,
                                      "p_at": at})


def _run(into: Into, statement: rawsql.Statement, values: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One statement in `into`: on the driver in a chain transaction, through SQLAlchemy in the session."""
    if isinstance(into, rawsql.Transaction):
        return into.execute(statement, values)
    result: Any = into.execute(statement.statement, values)
    return [tuple(row) for row in result] if statement.columns else []


def new_event_id() -> str:
    return f"evt_{uuid.uuid4().hex}"
