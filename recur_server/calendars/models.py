"""The Calendar row, and a calendar's days as the timing math takes them (a frozenset of dates)."""

from __future__ import annotations

import threading
from datetime import date, datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, UniqueConstraint, bindparam, select
from sqlalchemy.orm import Mapped, mapped_column

from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.models import UTCDateTime

MAX_CALENDARS = 100  # an owner's, at most (recur_server.services.calendars refuses the next)


class Calendar(db.Model):  # type: ignore[name-defined,misc]
    """A named set of dates of one owner. `days` is what the calendar expands to ({ISO date: name}), computed
    when it is written (recur_server.calendars.expansion), so a read or a plan never calls the holidays package."""

    __tablename__ = "calendars"
    # An owner's calendars a page at a time, in id order: one range of (owner_id, id). A name names one
    # calendar of its owner (recur apply matches by it).
    __table_args__ = (Index("ix_calendars_owner", "owner_id", "id"),
                      UniqueConstraint("owner_id", "name", name="uq_calendars_owner_name"),
                      {"sqlite_autoincrement": True})  # DESIGN 14: ids are never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(
        ForeignKey("owners.id", ondelete="CASCADE", name="fk_calendars_owner_id"))
    name: Mapped[str] = mapped_column(String(200))
    country: Mapped[str | None] = mapped_column(String(8), nullable=True)  # ISO 3166 code, for `holidays`
    subdivision: Mapped[str | None] = mapped_column(String(64), nullable=True)  # e.g. NY, BY
    first_year: Mapped[int] = mapped_column(Integer)  # the country's holidays of these years, both included
    last_year: Mapped[int] = mapped_column(Integer)
    dates: Mapped[Any] = mapped_column(JSON)  # listed by hand: "YYYY-MM-DD" or "YYYY-MM-DD/YYYY-MM-DD"
    removed: Mapped[Any] = mapped_column(JSON)  # taken out again, same forms
    days: Mapped[Any] = mapped_column(JSON)  # the expansion: {"YYYY-MM-DD": name}
    # A new random number at every edit (never a rolled-back edit's number again, as a counter could be): with
    # the id, the planning cache's key for `days` (calendar_days).
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


_READ = rawsql.Statement(select(Calendar.__table__.c.version, Calendar.__table__.c.days)
                         .where(Calendar.__table__.c.id == bindparam("p_id")))
_days_cache: dict[tuple[int, int], frozenset[date]] = {}
_days_lock = threading.Lock()
_DAYS_CACHED = 512


def calendar_days(calendar_id: int) -> frozenset[date] | None:
    """The dates of a calendar, the same frozenset object while its version stands (so a spec built from it
    hashes it once); None when there is no such calendar."""
    found = _read(calendar_id)
    if found is None:
        return None
    key = (calendar_id, found[0])
    with _days_lock:
        cached = _days_cache.get(key)
    if cached is not None:
        return cached
    days = frozenset(date.fromisoformat(day) for day in found[1] or {})
    with _days_lock:
        if len(_days_cache) >= _DAYS_CACHED:
            _days_cache.clear()
        return _days_cache.setdefault(key, days)


def _read(calendar_id: int) -> tuple[int, Any] | None:
    """(version, days) of a calendar. Inside a session's transaction (an edit re-planning its schedules) the
    transaction's own row; otherwise a plain read on a connection of its own that opens no transaction, so it
    never waits on the write lock a link's transaction holds on SQLite (which plans its successor meanwhile)."""
    if db.session().in_transaction():
        calendar = db.session.get(Calendar, calendar_id)
        return None if calendar is None else (calendar.version, calendar.days)
    connection = db.engine.raw_connection()
    try:
        tx = rawsql.Transaction(connection, db.engine.dialect)
        row = tx.first(_READ, {"p_id": calendar_id})
        tx.rollback()  # PostgreSQL's driver began a transaction for the read: end it
    finally:
        connection.close()
    return None if row is None else (row[0], row[1])
