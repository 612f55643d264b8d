"""Making, changing and deleting calendars. A change to a calendar's days re-plans, in the same transaction,
every active schedule that uses it (its pending link is handed off again after the commit), as a timing
PATCH re-plans one schedule."""

from __future__ import annotations

import secrets
from datetime import date, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from recur_server.calendars.expansion import CalendarInvalid, Source, expand
from recur_server.calendars.models import MAX_CALENDARS, Calendar
from recur_server.chain.handoff import hand_off_or_leave_to_recovery
from recur_server.infra import transaction
from recur_server.infra.extensions import db, get_redis
from recur_server.models import Schedule, ScheduleStatus
from recur_server.services import schedules

MAX_DAYS_LISTED = 400  # days one GET .../days/ may span (a year and some)
# The schedules one edit re-plans, and one 409 names: a schedule quota's worth is re-planned, the names cut.
NAMES_SHOWN = 20


class Conflict(Exception):
    """A calendar name taken, the owner's calendars at their limit, or a calendar in use (a 409)."""

    def __init__(self, message: str, errors: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or {}


def _source(calendar: Calendar) -> Source:
    return Source(calendar.country, calendar.subdivision, calendar.first_year, calendar.last_year,
                  list(calendar.dates or []), list(calendar.removed or []))


def _fill(calendar: Calendar, data: dict[str, Any]) -> bool:
    """Set the fields given and expand the days again: whether the days changed."""
    for name in ("name", "country", "subdivision", "first_year", "last_year", "dates", "removed"):
        if name in data:
            value = data[name]
            if name in ("country", "subdivision") and isinstance(value, str):
                value = value.strip().upper() if name == "country" else value.strip()
            if name in ("dates", "removed"):
                value = list(value or [])
            setattr(calendar, name, value)
    days = expand(_source(calendar))
    changed = days != (calendar.days or {})
    calendar.days = days
    if changed:
        calendar.version = secrets.randbits(31)
    return changed


def create(owner_id: int, data: dict[str, Any], now: datetime) -> Calendar:
    """A new calendar (first_year defaults to now's year, last_year to first_year + 2)."""
    first_year = data.get("first_year") or now.year
    calendar = Calendar(owner_id=owner_id, name=data["name"], first_year=first_year,
                        last_year=data.get("last_year") or first_year + 2, dates=[], removed=[], days={},
                        created_at=now, updated_at=now)
    _fill(calendar, {k: v for k, v in data.items() if k not in ("first_year", "last_year")})
    count = db.session.scalar(select(func.count()).select_from(Calendar).where(Calendar.owner_id == owner_id))
    if (count or 0) >= MAX_CALENDARS:
        raise Conflict(f"an owner holds at most {MAX_CALENDARS} calendars")
    _require_free_name(owner_id, calendar.name, None)
    db.session.add(calendar)
    _flush(calendar.name)
    transaction.commit()
    return calendar


def update(calendar: Calendar, data: dict[str, Any], now: datetime) -> list[Schedule]:
    """Change a calendar (the caller's, locked); returns the schedules re-planned, handed off after the commit."""
    if data.get("name") is not None and data["name"] != calendar.name:
        _require_free_name(calendar.owner_id, data["name"], calendar.id)
    changed = _fill(calendar, data)
    calendar.updated_at = now
    replanned: list[Schedule] = []
    if changed:
        users = db.session.scalars(select(Schedule).where(
            (Schedule.calendar_id == calendar.id) & (Schedule.status == ScheduleStatus.ACTIVE.value))
            .order_by(Schedule.id).with_for_update()).all()
        note = {"calendar_id": calendar.id, "calendar": calendar.name}
        replanned = [s for s in users if schedules.replan_for_calendar(s, now, note)]
        if replanned:
            get_redis().ping()  # refuse before writing anything if the links could not be handed off
    _flush(calendar.name)
    transaction.commit()

    def hand_off_all() -> None:
        for schedule in replanned:
            hand_off_or_leave_to_recovery(schedule)

    transaction.after_commit(hand_off_all)
    return replanned


def users_of(calendar_id: int) -> list[str]:
    """Names of (at most NAMES_SHOWN) schedules that use the calendar."""
    return list(db.session.scalars(select(Schedule.name).where(Schedule.calendar_id == calendar_id)
                                   .order_by(Schedule.name).limit(NAMES_SHOWN)))


def remove(calendar: Calendar) -> None:
    """Delete a calendar no schedule uses (Conflict naming some that do)."""
    using = users_of(calendar.id)
    if using:
        raise Conflict(f"calendar {calendar.name!r} is used by schedules {', '.join(using)}; point them at "
                       "another calendar (or none) first")
    db.session.delete(calendar)
    try:
        transaction.commit()
    except IntegrityError as exc:  # a schedule took it up meanwhile: the foreign key refuses the delete
        db.session.rollback()
        raise Conflict(f"calendar {calendar.name!r} is used by a schedule") from exc


def days_between(calendar: Calendar, first: date, last: date) -> list[tuple[str, str]]:
    """The calendar's (ISO date, name) pairs in [first, last]; the caller bounds the span."""
    low, high = first.isoformat(), last.isoformat()
    return [(day, name) for day, name in sorted((calendar.days or {}).items()) if low <= day <= high]


def _require_free_name(owner_id: int, name: str, other_than: int | None) -> None:
    taken = db.session.scalar(select(Calendar.id).where(
        (Calendar.owner_id == owner_id) & (Calendar.name == name) & (Calendar.id != (other_than or 0))))
    if taken is not None:
        raise Conflict(f"a calendar named {name!r} exists already", {"name": ["is taken"]})


def _flush(name: str) -> None:
    """Flush; a name taken by a concurrent request meanwhile is the unique constraint's refusal, a 409 too."""
    try:
        db.session.flush()
    except IntegrityError as exc:
        if "uq_calendars_owner_name" not in str(exc.orig) and "calendars.name" not in str(exc.orig):
            raise
        raise Conflict(f"a calendar named {name!r} exists already", {"name": ["is taken"]}) from exc


__all__ = ["MAX_CALENDARS", "MAX_DAYS_LISTED", "CalendarInvalid", "Conflict", "create", "days_between", "remove",
           "update", "users_of"]
