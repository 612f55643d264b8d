"""Owners (people or service accounts), their API tokens, and the audit trail of schedule changes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from recur_server.infra.extensions import db
from recur_server.models import UTCDateTime


class Owner(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "owners"
    __table_args__ = {"sqlite_autoincrement": True}  # DESIGN 14: ids are never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Quotas an admin set for this owner alone; NULL: the RECUR_MAX_*_PER_OWNER default (recur_server.services.quotas).
    max_schedules: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_webhooks: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # How many schedules it holds, moved by triggers on scheduled_jobs (migration 0028), never by this code:
    # the quota check reads it instead of counting the owner's schedules. Read it with a query, not from a
    # loaded Owner, which does not see a trigger's change.
    schedules_held: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class ApiToken(db.Model):  # type: ignore[name-defined,misc]
    """A bearer token, kept only as its SHA-256: the token itself is shown once, when it is made."""

    __tablename__ = "api_tokens"
    __table_args__ = {"sqlite_autoincrement": True}  # DESIGN 14: ids are never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    # The first characters of the token ("recur_AbC1"), so that a person can tell their tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class ScheduleEvent(db.Model):  # type: ignore[name-defined,misc]
    """Who changed a schedule, how and when: written in the same transaction as the change. Kept after
    the schedule is deleted (no foreign key to it), so that "who deleted this?" has an answer too."""

    __tablename__ = "schedule_events"
    # A schedule's trail, newest first a page at a time: one range of (schedule_id, at, id).
    __table_args__ = (Index("ix_schedule_events_schedule_at", "schedule_id", "at", "id"),
                      {"sqlite_autoincrement": True})  # DESIGN 14: ids are never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    schedule_id: Mapped[str] = mapped_column(String(36))
    # The schedule's owner, for scoping once the schedule itself is gone. No foreign key: the trail outlives
    # its owner too, readable by admins only (owner ids are never reused, so no one else's scope matches).
    owner_id: Mapped[int] = mapped_column(Integer, index=True)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("owners.id", ondelete="SET NULL"), nullable=True)
    actor_name: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)  # retention: RECUR_KEEP_AUDIT_DAYS
    changes: Mapped[Any] = mapped_column(JSON, nullable=True)


class ConsoleSession(db.Model):  # type: ignore[name-defined,misc]
    """A signed-in console: the cookie carries this row's id and a secret whose SHA-256 is kept here. Signing
    out deletes the row, so a cookie captured before is refused after; revoking or deleting the token (or
    its owner) ends every session made with it."""

    __tablename__ = "console_sessions"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"), index=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)  # expired ones are pruned


class OwnerEvent(db.Model):  # type: ignore[name-defined,misc]
    """Who made or deleted an owner, and when: the admins' record, kept after the owner and all of theirs
    are gone (no foreign keys)."""

    __tablename__ = "owner_events"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(Integer)
    owner_name: Mapped[str] = mapped_column(String(200))
    actor_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    actor_name: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(32))  # owner.created, owner.deleted
    at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    changes: Mapped[Any] = mapped_column(JSON, nullable=True)
