"""Persistent state: workflows, schedules and the run history. The database is the source of truth."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from recur_server.infra.extensions import db


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
    # Its stored timing no longer builds (see recur_server.chain.invalid); last_error says why. The column is a
    # plain String(16) with no constraint on its values, so this state needs no migration.
    INVALID = "invalid"


class OnExhausted(StrEnum):
    """What a schedule does when a tick has failed and has no retry left."""

    DEAD = "dead"  # the schedule stops for good (status dead)
    PAUSE = "pause"  # the schedule is paused with a note saying why; resume starts it again
    CONTINUE = "continue"  # the tick is given up (its last run stays failed) and the chain goes on


# A pause note is shown back as given; long enough for a sentence and an error message.
PAUSE_NOTE_MAX = 1000
# A schedule's key: the owner's own name for it (recur apply), a path-like word: no spaces or controls.
KEY_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_.:/@+-]*"
KEY_MAX = 200


class RunStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    SKIPPED = "skipped"  # not run: another run was going (overlap), the workflow was full, a breaker
    MISSED = "missed"  # not run: ticks given up by catch-up (one row stands for a gap of them: `ticks`)
    CANCELLED = "cancelled"  # stopped by overlap cancel_other, or a backfill's run cancelled before it ran


class RunTrigger(StrEnum):
    """Why a run happened."""

    SCHEDULE = "schedule"  # the chain's own tick, on time (or buffered by overlap)
    RETRY = "retry"  # a retry of a tick that failed
    CATCH_UP = "catch_up"  # a tick missed while nothing ran it, run by the catch_up policy
    MANUAL = "manual"  # POST /schedules/{id}/trigger/
    BACKFILL = "backfill"  # POST /schedules/{id}/backfill/
    AFTER = "after"  # another schedule's run ended (the schedule's `after`; recur_server.chain.follow)


class ConcurrencyPolicy(StrEnum):
    """What a run does when its workflow already has max_concurrent_runs running."""

    WAIT = "wait"  # it waits for a slot, in order of nominal time
    SKIP = "skip"  # it is recorded skipped


def _uuid() -> str:
    return str(uuid.uuid4())


class Workflow(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "workflows"
    # An owner's workflows a page at a time, in id order: one range of (owner_id, id).
    __table_args__ = (Index("ix_workflows_owner", "owner_id", "id"),
                      {"sqlite_autoincrement": True})  # DESIGN 14: ids are never reused

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    task: Mapped[str] = mapped_column(String(200))
    owner_id: Mapped[int] = mapped_column(
        ForeignKey("owners.id", ondelete="CASCADE", name="fk_workflows_owner_id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Runs of this workflow's schedules at once, across every worker (NULL: no limit).
    max_concurrent_runs: Mapped[int | None] = mapped_column(Integer, nullable=True)
    concurrency_policy: Mapped[str] = mapped_column(String(16), default=ConcurrencyPolicy.WAIT.value,
                                                    server_default=ConcurrencyPolicy.WAIT.value)
    # Circuit breaker (recur_server.policies.breaker): off while breaker_threshold is NULL.
    breaker_threshold: Mapped[int | None] = mapped_column(Integer, nullable=True)
    breaker_reset_seconds: Mapped[int] = mapped_column(Integer, default=300, server_default="300")
    breaker_state: Mapped[str] = mapped_column(String(16), default="closed", server_default="closed")
    breaker_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    breaker_opened_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    breaker_probe_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # The RQ queue its schedules' links and runs go through (NULL: RECUR_QUEUE); one of extensions.queue_names().
    queue: Mapped[str | None] = mapped_column(String(64), nullable=True)


# The schedules a missed-run check may mark late (recur_server.notify.alerts), and the partial index's condition,
# as SQL text: the words a query says for SQLite to use the index.
ALERTED = "status = 'active' AND health = 'ok' AND alert_after_seconds IS NOT NULL"
DETACHED = "detached_since IS NOT NULL"


class Schedule(db.Model):  # type: ignore[name-defined,misc]
    __tablename__ = "scheduled_jobs"
    # status_id: the reconciler's sweep, a batch of active schedules at a time, each one index range (status
    # alone had SQLite sort every active row per batch: 8.8 s a pass over 100,000). The list, newest first:
    # owner_created (an owner's), created (an admin's). late, failing: counted by each /metrics scrape.
    # due: the reconciler's periodic pass (not partial: SQLite would sort); it makes a link's UPDATE not HOT
    # on PostgreSQL (docs/benchmarks.md); with detached, the missed-run check (each second) reads only its
    # candidates. A key names a schedule for its owner; NULLs are distinct, so unkeyed ones are free.
    __table_args__ = (Index("ix_scheduled_jobs_status_id", "status", "id"),
                      Index("ix_scheduled_jobs_owner_created", "owner_id", "created_at", "id"),
                      Index("ix_scheduled_jobs_created", "created_at", "id"),
                      Index("ix_scheduled_jobs_late", "id", postgresql_where=text("health = 'late'"),
                            sqlite_where=text("health = 'late'")),
                      Index("ix_scheduled_jobs_failing", "id", postgresql_where=text("failing_since IS NOT NULL"),
                            sqlite_where=text("failing_since IS NOT NULL")),
                      Index("ix_scheduled_jobs_due", "status", "next_run_at", "id"),
                      Index("ix_scheduled_jobs_detached", "status", "detached_since",
                            postgresql_where=text(DETACHED), sqlite_where=text(DETACHED)),
                      UniqueConstraint("owner_id", "key", name="uq_scheduled_jobs_owner_key"))

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=_uuid)
    name: Mapped[str] = mapped_column(String(200))
    key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    description: Mapped[str | None] = mapped_column(Text, nullable=True)
    workflow_id: Mapped[int] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"), index=True)
    # Its workflow's queue, copied (services.workflows.update keeps it so): the row a link is put from has it.
    queue: Mapped[str | None] = mapped_column(String(64), nullable=True)
    owner_id: Mapped[int] = mapped_column(
        ForeignKey("owners.id", ondelete="CASCADE", name="fk_scheduled_jobs_owner_id"))
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

    # Calendar timing (see recur_server.timing); exactly one of interval_seconds / cron / rrule / at is set.
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
    # Missed-run alerts (recur_server.notify.alerts): `late` once the expected tick has not succeeded within
    # alert_after_seconds (NULL: no alert), `ok` again at the next success.
    alert_after_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    health: Mapped[str] = mapped_column(String(8), default="ok", server_default="ok")
    late_since: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # overlap allow_all / cancel_other: the nominal time of the oldest tick whose run left the chain since the
    # schedule's last success (the chain's next_run_at has moved on past it); NULL: none. The missed-run
    # alert waits on it as on next_run_at (recur_server.policies.alerts.expected_tick).
    detached_since: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Alerts on long and late runs and on failure streaks (recur_server.policies.run_alerts; NULL: no alert):
    # run.long once per run going after long_after_seconds, run.late once per run started more than
    # late_after_seconds after its nominal time, schedule.failing once when failing_streak reaches
    # failing_after (failing_since set until the next success, which emits schedule.recovered).
    long_after_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    late_after_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    failing_after: Mapped[int | None] = mapped_column(Integer, nullable=True)
    failing_streak: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    failing_since: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Why and when the schedule was paused (by a caller, or by on_exhausted=pause); cleared on resume.
    pause_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    paused_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Why its due tick waits instead of running (chain.claim.Wait), set each time it is put off; cleared on a claim.
    waiting_note: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Days this schedule's runs are kept (recur_server.policies.retention); NULL: RECUR_KEEP_RUNS_DAYS.
    keep_runs_days: Mapped[int | None] = mapped_column(Integer, nullable=True)

    # When runs and time collide (recur_server.policies): catch-up after an outage, a tick due during a run.
    catch_up: Mapped[str] = mapped_column(String(16), default="latest", server_default="latest")
    catch_up_window_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    catch_up_limit: Mapped[int] = mapped_column(Integer, default=100, server_default="100")
    overlap: Mapped[str] = mapped_column(String(16), default="skip", server_default="skip")
    # A backlog decided by catch_up=all or overlap=buffer_*: every tick up to run_through runs in order
    # before planning goes back to "the next tick after now"; backlog says which (its runs' trigger).
    run_through: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    backlog: Mapped[str | None] = mapped_column(String(16), nullable=True)

    # A named calendar (recur_server.calendars) whose days the ticks skip or shift off (on_calendar: skip, shift_next,
    # shift_previous; NULL with a calendar: skip). Editing the calendar re-plans the schedule.
    calendar_id: Mapped[int | None] = mapped_column(
        ForeignKey("calendars.id", name="fk_scheduled_jobs_calendar_id"), nullable=True, index=True)
    on_calendar: Mapped[str | None] = mapped_column(String(16), nullable=True)

    # Runs that follow another schedule's runs (services.follow, chain.follow): the upstream schedule (same owner;
    # no foreign key, so deleting it leaves this schedule simply never triggered), which of its outcomes
    # trigger (succeeded, failed, ended), after how many seconds, and only_between's window for the trigger.
    after_schedule_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    after_on: Mapped[str | None] = mapped_column(String(16), nullable=True)
    after_delay_seconds: Mapped[int | None] = mapped_column(Integer, nullable=True)
    after_within: Mapped[str | None] = mapped_column(String(32), nullable=True)

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
        # A schedule's runs newest first, in a total order: a page after a cursor is one index range.
        Index("ix_runs_schedule_started", "schedule_id", "started_at", "id"),
        # One attempt per tick, enforced by the database too: the run history is the proof of exactly-once.
        UniqueConstraint("schedule_id", "repeat_number", "retry_number", name="uq_runs_tick"),
        # What runs now, per schedule: a handful of rows, so its upkeep is small. Overlap, concurrency
        # limits and the write-off of lost runs outside the chain read it.
        Index("ix_runs_running", "schedule_id", postgresql_where=text("status = 'running'"),
              sqlite_where=text("status = 'running'")),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=_uuid)
    schedule_id: Mapped[str] = mapped_column(ForeignKey("scheduled_jobs.id", ondelete="CASCADE"))
    # NULL for runs outside the chain (manual, backfill) and for rows that record a gap (missed, skipped).
    repeat_number: Mapped[int | None] = mapped_column(Integer, nullable=True)
    retry_number: Mapped[int] = mapped_column(Integer)
    scheduled_for: Mapped[datetime] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # Not indexed: no query looks runs up by status, and each run changes it once, so an index
    # only cost every claim and every finish its upkeep.
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    trigger: Mapped[str] = mapped_column(String(16), default=RunTrigger.SCHEDULE.value,
                                         server_default=RunTrigger.SCHEDULE.value)
    # For missed and skipped rows: the policy's reason code, and how many ticks the row stands for
    # (scheduled_for is the first of them; the error text names the last).
    reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    ticks: Mapped[int | None] = mapped_column(Integer, nullable=True)
    backfill_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # A run triggered by another schedule's run (trigger `after`): that upstream run's id.
    triggered_by_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True)
    # When run.late / run.long was emitted for this run (in the same transaction): each at most once.
    late_alerted_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    long_alerted_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class RunOutput(db.Model):  # type: ignore[name-defined,misc]
    """What a run's task left behind: its error's traceback, its captured stdout and stderr, its log lines and
    its return value, each bounded (recur_server.chain.capture). Written with the run's outcome, in the same
    transaction, only when there is something to keep; deleted with its run (the foreign key cascades). A
    table of its own so that the runs table, which every claim, finish and list reads, stays narrow."""

    __tablename__ = "run_outputs"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    traceback: Mapped[str | None] = mapped_column(Text, nullable=True)
    output: Mapped[str | None] = mapped_column(Text, nullable=True)  # stdout and stderr, as they came
    logs: Mapped[str | None] = mapped_column(Text, nullable=True)
    result: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON if it serialises, else its repr


class BreakerTransition(db.Model):  # type: ignore[name-defined,misc]
    """The append-only history of a workflow's circuit breaker."""

    __tablename__ = "breaker_transitions"
    # A workflow's breaker as it stood at a time (recur_server.services.explain): one range of (workflow_id, at).
    __table_args__ = (Index("ix_breaker_transitions_workflow_at", "workflow_id", "at"),
                      {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workflow_id: Mapped[int] = mapped_column(ForeignKey("workflows.id", ondelete="CASCADE"), index=True)
    from_state: Mapped[str] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)  # retention: with the audit trail
    reason: Mapped[str] = mapped_column(Text)
    by: Mapped[str] = mapped_column(String(200))  # "system", or the owner (and token) who reset it


class Backfill(db.Model):  # type: ignore[name-defined,misc]
    """A run of a schedule's nominal times over a range, one after another, outside the chain."""

    __tablename__ = "backfills"
    # A schedule's backfills, newest first a page at a time: one range of (schedule_id, created_at, id).
    __table_args__ = (Index("ix_backfills_schedule_created", "schedule_id", "created_at", "id"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=_uuid)
    schedule_id: Mapped[str] = mapped_column(ForeignKey("scheduled_jobs.id", ondelete="CASCADE"))
    start_at: Mapped[datetime] = mapped_column(UTCDateTime())
    end_at: Mapped[datetime] = mapped_column(UTCDateTime())
    overlap: Mapped[str | None] = mapped_column(String(16), nullable=True)
    times: Mapped[Any] = mapped_column(JSON)  # the nominal times, ISO strings, in order
    total: Mapped[int] = mapped_column(Integer)
    started: Mapped[int] = mapped_column(Integer, default=0)  # how many of `times` have been started
    status: Mapped[str] = mapped_column(String(16), default="running")  # running, done, cancelled
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Indexed for retention: finished backfills go RECUR_KEEP_BACKFILLS_DAYS after this.
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True, index=True)


class TriggerRequest(db.Model):  # type: ignore[name-defined,misc]
    """The first answer to a trigger request with an Idempotency-Key, replayed to its retries."""

    __tablename__ = "trigger_requests"
    __table_args__ = (UniqueConstraint("owner_id", "idempotency_key", name="uq_trigger_requests_key"),
                      {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id", ondelete="CASCADE"))
    idempotency_key: Mapped[str] = mapped_column(String(200))
    schedule_id: Mapped[str] = mapped_column(ForeignKey("scheduled_jobs.id", ondelete="CASCADE"))
    run_id: Mapped[str] = mapped_column(String(36))
    scheduled_for: Mapped[datetime] = mapped_column(UTCDateTime())
    # Retention: a key is remembered as long as runs are kept (RECUR_KEEP_RUNS_DAYS).
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


class FollowTrigger(db.Model):  # type: ignore[name-defined,misc]
    """An upstream run's end that triggers a run of a schedule following it (recur_server.chain.follow), written in
    the transaction that records the upstream outcome. Unique on (downstream, upstream run): never doubled.
    pending until its run (attempt `attempt`, id `run_id`) ends, then done, or pending again for a retry;
    skipped when the follower was paused, the time outside its window, or the run skipped by overlap."""

    __tablename__ = "follow_triggers"
    __table_args__ = (UniqueConstraint("downstream_id", "upstream_run_id", name="uq_follow_triggers_run"),
                      # The dispatcher's page: pending triggers in order of due time, one index range.
                      Index("ix_follow_triggers_pending", "status", "due_at"),
                      {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    downstream_id: Mapped[str] = mapped_column(ForeignKey("scheduled_jobs.id", ondelete="CASCADE"), index=True)
    upstream_schedule_id: Mapped[str] = mapped_column(String(36))
    upstream_run_id: Mapped[str] = mapped_column(String(36))
    upstream_status: Mapped[str] = mapped_column(String(16))
    due_at: Mapped[datetime] = mapped_column(UTCDateTime())
    status: Mapped[str] = mapped_column(String(16))  # pending, done, skipped
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[str] = mapped_column(String(36), index=True)  # the current attempt's run
    reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)  # retention: with the runs
