"""The audit trail of schedules: who did what to which schedule, and when (GET .../events/)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import g, has_request_context
from sqlalchemy import JSON, bindparam, insert

from recur_server.auth.models import ScheduleEvent
from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.models import UTCDateTime


@dataclass(frozen=True)
class Actor:
    id: int
    name: str


_ACTING: ContextVar[Actor | None] = ContextVar("recur_audit_actor", default=None)


@contextmanager
def acting_as(actor_id: int, actor_name: str) -> Iterator[None]:
    """Outside a request, record the block's changes as this actor's rather than "system"'s (the
    declarations sync records itself under its owner so)."""
    token = _ACTING.set(Actor(actor_id, actor_name))
    try:
        yield
    finally:
        _ACTING.reset(token)


def record(schedule_id: str, owner_id: int, action: str, now: datetime,
           changes: dict[str, Any] | None = None) -> None:
    """Add an event to the session: the caller's commit writes it with the change it describes. The actor
    is the request's owner; outside a request (the CLI, the workers) it is "system", or whom `acting_as` names."""
    actor = _actor()
    db.session.add(ScheduleEvent(
        schedule_id=schedule_id, owner_id=owner_id, actor_id=actor.id if actor else None,
        actor_name=actor.name if actor else "system", action=action, at=now, changes=changes or None,
    ))


def record_each(schedule_ids: list[str], owner_id: int, action: str, now: datetime) -> None:
    """`record` of the same action on many schedules, written now in the session's transaction in one
    statement (many schedules made at once: an apply)."""
    if not schedule_ids:
        return
    actor = _actor()
    who = {"owner_id": owner_id, "actor_id": actor.id if actor else None,
           "actor_name": actor.name if actor else "system", "action": action, "at": now}
    db.session.execute(insert(ScheduleEvent), [{"schedule_id": ident, **who} for ident in schedule_ids])


def _actor() -> Any:
    return g.get("owner") if has_request_context() else _ACTING.get()


# For changes a worker makes inside a transaction of its own on the driver (recur_server.infra.rawsql), not
# through the ORM session: the same row, actor "system", written in the caller's transaction.
_SYSTEM_EVENT = rawsql.Statement(insert(ScheduleEvent.__table__).values(
    schedule_id=bindparam("e_schedule_id"), owner_id=bindparam("e_owner_id"), actor_id=None,
    actor_name="system", action=bindparam("e_action"), at=bindparam("e_at", type_=UTCDateTime()),
    changes=bindparam("e_changes", type_=JSON()),
))


def record_system(tx: rawsql.Transaction, schedule_id: str, owner_id: int, action: str, now: datetime,
                  changes: dict[str, Any] | None = None) -> None:
    """Write an event by the system (a policy, not a caller) in the driver transaction `tx`."""
    tx.execute(_SYSTEM_EVENT, {"e_schedule_id": schedule_id, "e_owner_id": owner_id, "e_action": action,
                               "e_at": now, "e_changes": changes or None})


def jsonable(value: Any) -> Any:
    """A changed field's new value as JSON can hold it (datetimes as ISO 8601)."""
    return value.isoformat() if isinstance(value, datetime) else value
