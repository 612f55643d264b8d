"""The audit trail of schedules: who did what to which schedule, and when (GET .../events/)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import g, has_request_context

from app.auth.models import ScheduleEvent
from app.extensions import db


def record(schedule_id: str, owner_id: int, action: str, now: datetime,
           changes: dict[str, Any] | None = None) -> None:
    """Add an event to the session: the caller's commit writes it with the change it describes. The actor
    is the request's owner; outside a request (the CLI, the workers) it is "system"."""
    actor = g.get("owner") if has_request_context() else None
    db.session.add(ScheduleEvent(
        schedule_id=schedule_id, owner_id=owner_id, actor_id=actor.id if actor else None,
        actor_name=actor.name if actor else "system", action=action, at=now, changes=changes or None,
    ))


def jsonable(value: Any) -> Any:
    """A changed field's new value as JSON can hold it (datetimes as ISO 8601)."""
    return value.isoformat() if isinstance(value, datetime) else value
