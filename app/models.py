"""Persistent state: workflows, schedules and the run history. The database is the source of truth."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, TypeDecorator, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, hands back aware UTC: SQLite keeps no offset, and we never want local time."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


class ScheduleStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    DONE = "done"
    DEAD = "dead"
    # Its stored timing no longer builds (see app.chain.invalid); last_error says why. The column is a
    # plain String(16) with no constraint on its values, so this state needs no migration.
    INVALID = "invalid"


class OnExhausted(StrEnum):
    """What a schedule does when a tick has failed and has no retry left."""

    DEAD = "dead"  # the schedule stops for good (status dead)
    PAUSE = "pause"  # the schedule is paused with a note saying why; resume starts it again
    CONTINUE = "continue"  # the tick is given up (its last run stays failed) and the chain goes on


# A pause note is shown back as given; long enough for a sentence and an error message.
PAUSE_NOTE_MAX = 1000


class RunStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    SKIPPED = "skipped"


def _uuid() -> str:
    return str(uuid.uuid4())


class Workflow(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "workflows"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    task: Mapped[str] = mapped_column(String(200))
    owner_id: Mapped[int] = mapped_column(
        ForeignKey("owners.id", ondelete="CASCADE", name="fk_workflows_owner_id"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class ScheduledJob(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "scheduled_jobs"
    # The reconciler walks active schedules in id order, a batch at a time: with (status, id) each batch is
    # one index range. With status alone, SQLite sorted every active row again for each batch (quadratic:
    # a pass over 100,000 schedules took 8.8 s, over 10,000 0.46 s).
    # A key names a schedule for its owner (recur apply matches by it); NULLs are distinct, so unkeyed
    # schedules are unconstrained on both databases.
    __table_args__ = (Index("ix_scheduled_jobs_status_id", "status", "id"),
                      UniqueConstraint("owner_id", "key", name="uq_scheduled_jobs_owner_key"))

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=_uuid)
    name: Mapped[str] = mapped_column(String(200))
    key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    workflow_id: Mapped[int] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int] = mapped_column(
        ForeignKey("owners.id", ondelete="CASCADE", name="fk_scheduled_jobs_owner_id"), index=True)
    trigger_node_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    interval_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    total_repeats: Mapped[int] = mapped_column(Integer, default=0)
    max_retries: Mapped[int] = mapped_column(Integer, default=3)
    timeout_seconds: Mapped[int] = mapped_column(Integer, default=600)
    trigger_payload: Mapped[Any] = mapped_column(JSON, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=ScheduleStatus.ACTIVE.value)
    current_repeat: Mapped[int] = mapped_column(Integer, default=0)
    current_retry: Mapped[int] = mapped_column(Integer, default=0)
    last_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    next_run_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    run_count: Mapped[int] = mapped_column(Integer, default=0)
    error_count: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    # Calendar timing (see app.timing); exactly one of interval_seconds / cron / rrule / at is set.
    anchor_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    anchor_explicit: Mapped[bool] = mapped_column(default=False)
    cron: Mapped[str | None] = mapped_column(String(200), nullable=True)
    day_or: Mapped[bool] = mapped_column(default=True)
    rrule: Mapped[str | None] = mapped_column(Text, nullable=True)
    at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    timezone: Mapped[str] = mapped_column(String(64), default="UTC")
    start_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    end_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    only_between: Mapped[str | None] = mapped_column(String(32), nullable=True)
    not_on: Mapped[Any] = mapped_column(JSON, nullable=True)
    jitter_seconds: Mapped[int] = mapped_column(Integer, default=0)
    on_exhausted: Mapped[str] = mapped_column(String(16), default=OnExhausted.DEAD.value,
                                              server_default=OnExhausted.DEAD.value)
    # Why and when the schedule was paused (by a caller, or by on_exhausted=pause); cleared on resume.
    pause_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    # Fencing: bumped by every edit that re-plans; a link carries the revision it was planned under.
    revision: Mapped[int] = mapped_column(Integer, default=0)
    # The Run that has claimed the current tick and not yet finished; NULL when nothing runs.
    running_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)

    def timing_fields(self) -> dict[str, Any]:
        return {
            "interval_seconds": self.interval_seconds,
            "anchor_at": self.anchor_at,
            "cron": self.cron,
            "day_or": self.day_or,
            "rrule": self.rrule,
            "at": self.at,
            "timezone": self.timezone,
            "start_at": self.start_at,
            "end_at": self.end_at,
            "only_between": self.only_between,
            "not_on": self.not_on,
            "jitter_seconds": self.jitter_seconds,
        }


class Run(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_schedule_started", "schedule_id", "started_at"),
        # One attempt per tick, enforced by the database too: the run history is the proof of exactly-once.
        UniqueConstraint("schedule_id", "repeat_number", "retry_number", name="uq_runs_tick"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=_uuid)
    schedule_id: Mapped[str] = mapped_column(ForeignKey("scheduled_jobs.id", ondelete="CASCADE"))
    repeat_number: Mapped[int] = mapped_column(Integer)
    retry_number: Mapped[int] = mapped_column(Integer)
    scheduled_for: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Not indexed: no query looks runs up by status, and each run changes it once, so an index
    # only cost every claim and every finish its upkeep.
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
