"""The schedule page's "Why didn't it run?" section: a time typed in the page's zone, answered by the API's own
schema (ExplainIn) and service (recur_server.services.explain), as GET /schedules/{id}/explain/ answers it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from flask import request
from marshmallow import ValidationError

from recur_server import timing
from recur_server.infra import clock
from recur_server.models import Schedule
from recur_server.policies.explain import Explanation
from recur_server.schemas.explain import ExplainIn
from recur_server.services.explain import explain_at

_EXPLAIN_IN = ExplainIn()


@dataclass(frozen=True)
class Explained:
    typed: str  # what was typed, shown back in the form
    answer: Explanation | None
    error: str | None = None


def explained(schedule: Schedule, zone: str) -> Explained | None:
    """The answer for `?explain_at=` (a local time in `zone`, as a datetime-local field sends it, or an ISO
    8601 instant with its offset); None when the page was not asked."""
    typed = request.args.get("explain_at")
    if typed is None:
        return None
    try:
        at = _load(typed.strip(), zone)
        return Explained(typed, explain_at(schedule, at, clock.utcnow()))
    except ValueError as exc:
        return Explained(typed, None, str(exc))
    except timing.TimingError as exc:
        return Explained(typed, None, f"the schedule's timing does not build: {exc}")


def _load(typed: str, zone: str) -> datetime:
    """Through the API's schema: a time without an offset is read in the page's zone first."""
    try:
        given = datetime.fromisoformat(typed)
    except ValueError:
        raise ValueError(f"not a time: {typed!r} (e.g. 2026-03-09T09:00)") from None
    if given.tzinfo is None:
        given = given.replace(tzinfo=UTC if zone == "UTC" else ZoneInfo(zone))
    try:
        loaded: datetime = _EXPLAIN_IN.load({"at": given.isoformat()})["at"]
    except ValidationError as exc:
        messages: Any = exc.messages
        said = messages.get("at", ["invalid"]) if isinstance(messages, dict) else [messages]
        raise ValueError(" ".join(str(m) for m in said)) from None
    return loaded
