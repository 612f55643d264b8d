"""Pruning: deletes the history recur_server.policies.retention says may go, in small batches.

Each statement deletes at most `batch` rows, oldest first, through an index, and commits at once: on SQLite
every write transaction holds the one write lock, and on PostgreSQL a batch's row locks, so a link waiting
for either waits for one short batch, not for the pass. Each table gets at most `max_batches` statements per
pass; what is left waits for the next pass (the walk over schedules resumes at the returned cursor).

Never deleted: a running run, the run a schedule's running_run_id names, a schedule's newest
RECUR_KEEP_RUNS_MIN runs, a running backfill or its runs, a pending delivery or its event and attempts.
A workflow's breaker history goes with the audit trail; a trigger's Idempotency-Key after RECUR_KEEP_RUNS_DAYS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Delete, Select, delete, exists, func, select

from recur_server.auth.models import ConsoleSession, OwnerEvent, ScheduleEvent
from recur_server.infra.extensions import db
from recur_server.infra.reads import read_alone
from recur_server.models import Backfill, BreakerTransition, FollowTrigger, Run, RunStatus, Schedule, TriggerRequest
from recur_server.notify.models import Delivery, DeliveryAttempt, Event
from recur_server.policies import retention as policy
from recur_server.policies.retention import Retention

# The tables a pass deletes from: the `table` label of recur_pruned_rows_total (a fixed, bounded set).
TABLES = ("runs", "backfills", "delivery_attempts", "deliveries", "events", "schedule_events", "owner_events",
          "console_sessions", "breaker_transitions", "trigger_requests", "follow_triggers")
FINISHED_DELIVERIES = ("delivered", "failed", "dropped")


def retention_from(config: Mapping[str, Any]) -> Retention:
    return Retention(runs_days=int(config["RECUR_KEEP_RUNS_DAYS"]), runs_min=int(config["RECUR_KEEP_RUNS_MIN"]),
                     events_days=int(config["RECUR_KEEP_EVENTS_DAYS"]),
                     audit_days=int(config["RECUR_KEEP_AUDIT_DAYS"]),
                     backfills_days=int(config["RECUR_KEEP_BACKFILLS_DAYS"]))


@dataclass
class PruneReport:
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    # The schedule the next pass's walk over runs starts at (None: from the first): set when this pass
    # stopped at its limit before the walk's end.
    cursor: str | None = None
    # The tables this pass stopped deleting from at its limit (max_batches full statements), rows left behind
    # for the next pass: the history is written faster than the passes prune it, or a long one is caught up.
    behind: list[str] = field(default_factory=list)


def prune(now: datetime, retention: Retention, batch: int, max_batches: int, cursor: str | None = None,
          between_batches: Callable[[], None] | None = None) -> PruneReport:
    """One pruning pass. `between_batches` is called before each statement (the background pass renews its
    lock there, and raises to abandon the pass if the lock was lost)."""
    renew = between_batches or (lambda: None)
    report = PruneReport()
    report.rows["runs"], report.cursor, runs_behind = _prune_runs(now, retention, batch, max_batches, cursor, renew)

    finished_backfills = policy.cutoff(now, retention.backfills_days)
    if finished_backfills is not None:
        # ix_backfills_finished_at (0013): a running backfill has no finished_at, and is never deleted.
        report.rows["backfills"] = _in_batches(Backfill, select(Backfill.id).where(
            (Backfill.finished_at < finished_backfills) & (Backfill.status != "running"))
            .order_by(Backfill.finished_at), batch, max_batches, renew)

    events = policy.cutoff(now, retention.events_days)
    if events is not None:
        # Finished deliveries past retention, by when their last attempt was (next_attempt_at, set at each
        # claim): ix_deliveries_due (status, next_attempt_at), then each one's attempts through
        # ix_delivery_attempts_delivery_id. Attempts first, so that a delivery never takes more than a batch
        # with it; a pending delivery and its attempts stay.
        old_finished = Delivery.status.in_(FINISHED_DELIVERIES) & (Delivery.next_attempt_at < events)
        report.rows["delivery_attempts"] = _in_batches(DeliveryAttempt, select(DeliveryAttempt.id).join(
            Delivery, Delivery.id == DeliveryAttempt.delivery_id).where(old_finished), batch, max_batches, renew)
        no_attempts = ~exists().where(DeliveryAttempt.delivery_id == Delivery.id)
        report.rows["deliveries"] = _in_batches(Delivery, select(Delivery.id).where(old_finished & no_attempts),
                                                batch, max_batches, renew)
        # Events past retention that no delivery needs any more: ix_events_occurred_at oldest first, and
        # ix_deliveries_event_id (0013) for "no delivery of it left" (so an event with a pending delivery stays).
        no_delivery = ~exists().where(Delivery.event_id == Event.id)
        report.rows["events"] = _in_batches(Event, select(Event.id).where((Event.occurred_at < events) & no_delivery)
                                            .order_by(Event.occurred_at), batch, max_batches, renew)

    audit = policy.cutoff(now, retention.audit_days)
    if audit is not None:
        # ix_schedule_events_at (0013) and ix_owner_events_at (0010).
        report.rows["schedule_events"] = _in_batches(ScheduleEvent, select(ScheduleEvent.id).where(
            ScheduleEvent.at < audit).order_by(ScheduleEvent.at), batch, max_batches, renew)
        report.rows["owner_events"] = _in_batches(OwnerEvent, select(OwnerEvent.id).where(
            OwnerEvent.at < audit).order_by(OwnerEvent.at), batch, max_batches, renew)
        # A workflow's breaker history is audit too (its state is on the workflow): ix_breaker_transitions_at.
        report.rows["breaker_transitions"] = _in_batches(BreakerTransition, select(BreakerTransition.id).where(
            BreakerTransition.at < audit).order_by(BreakerTransition.at), batch, max_batches, renew)

    # An Idempotency-Key is remembered as long as runs are kept by default: a retry after that starts a new
    # run (the one it would replay may be gone). ix_trigger_requests_created_at.
    keys = policy.cutoff(now, retention.runs_days)
    if keys is not None:
        report.rows["trigger_requests"] = _in_batches(TriggerRequest, select(TriggerRequest.id).where(
            TriggerRequest.created_at < keys).order_by(TriggerRequest.created_at), batch, max_batches, renew)
        # Runs that follow runs: a closed trigger goes with the runs of its time (ix_follow_triggers_created_at);
        # one still pending or queued stays until its run ends.
        report.rows["follow_triggers"] = _in_batches(FollowTrigger, select(FollowTrigger.id).where(
            (FollowTrigger.created_at < keys) & FollowTrigger.status.not_in(("pending", "queued")))
            .order_by(FollowTrigger.created_at), batch, max_batches, renew)

    # ix_console_sessions_expires_at (0013): a session past its expiry can never be used again.
    report.rows["console_sessions"] = _in_batches(ConsoleSession, select(ConsoleSession.id).where(
        ConsoleSession.expires_at <= now).order_by(ConsoleSession.expires_at), batch, max_batches, renew)
    # Every other table's statements all deleted a full batch only where the pass stopped at its limit.
    report.behind = [table for table in TABLES if (runs_behind if table == "runs"
                                                   else report.rows[table] >= batch * max_batches)]
    return report


def _in_batches(model: Any, doomed: Select[Any], batch: int, max_batches: int, renew: Callable[[], None]) -> int:
    """Delete the rows `doomed` selects (their ids), `batch` at a time, each batch its own transaction."""
    deleted = 0
    for _ in range(max_batches):
        renew()
        count = _delete(delete(model).where(model.id.in_(doomed.limit(batch))))
        deleted += count
        if count < batch:
            break
    return deleted


def _delete(statement: Delete) -> int:
    try:
        result: Any = db.session.execute(statement)
        db.session.commit()
    except BaseException:
        db.session.rollback()
        raise
    return int(result.rowcount)


def _prune_runs(now: datetime, retention: Retention, batch: int, max_batches: int, cursor: str | None,
                renew: Callable[[], None]) -> tuple[int, str | None, bool]:
    """Walk schedules in id order from `cursor`, `batch` at a time, deleting each one's runs past its
    boundary. Returns the rows deleted, where the next pass starts (None: the walk reached its end) and
    whether the pass stopped at its limit of statements with runs past retention left (behind)."""
    deleted = batches = 0
    # Each schedule's oldest run: one seek into ix_runs_schedule_started per schedule, so a page of schedules
    # with nothing to prune costs one read.
    oldest = (select(Run.started_at).where(Run.schedule_id == Schedule.id).order_by(Run.started_at).limit(1)
              .correlate(Schedule).scalar_subquery())
    page_query = select(Schedule.id, Schedule.keep_runs_days, oldest).order_by(Schedule.id).limit(batch)
    query = page_query if cursor is None else page_query.where(Schedule.id >= cursor)
    last = cursor
    for _ in range(max_batches):
        page = read_alone(partial(_all, query))
        for schedule_id, keep_runs_days, oldest_started in page:
            run_cutoff = policy.runs_cutoff(now, retention, keep_runs_days)
            if run_cutoff is None or oldest_started is None or oldest_started >= run_cutoff:
                continue
            boundary = policy.runs_boundary(run_cutoff, _newest_kept_started(schedule_id, retention.runs_min))
            if boundary is None or oldest_started >= boundary:
                continue
            floor: datetime | None = None  # the newest start a batch of this schedule deleted
            while True:
                if batches >= max_batches:
                    return deleted, schedule_id, True
                renew()
                starts = _delete_returning(_delete_runs(schedule_id, boundary, batch, floor))
                batches += 1
                deleted += len(starts)
                if len(starts) < batch:
                    break
                floor = max(starts)
        if len(page) < batch:
            return deleted, None, False
        last = page[-1][0]
        query = page_query.where(Schedule.id > last)
    # The pass read its limit of pages: the next one starts at the schedule after the last read.
    following: str | None = read_alone(lambda: db.session.scalar(
        select(Schedule.id).where(Schedule.id > last).order_by(Schedule.id).limit(1)))
    return deleted, following, False


def _all(query: Any) -> list[Any]:
    return list(db.session.execute(query).all())


def _newest_kept_started(schedule_id: str, runs_min: int) -> datetime | None:
    """When the schedule's runs_min-th newest run started (None: it has fewer): ix_runs_schedule_started,
    read backwards, runs_min entries."""
    started: datetime | None = read_alone(lambda: db.session.scalar(
        select(Run.started_at).where(Run.schedule_id == schedule_id).order_by(Run.started_at.desc())
        .offset(runs_min - 1).limit(1)))
    return started


def _delete_returning(statement: Any) -> list[datetime]:
    """Run a DELETE ... RETURNING started_at in a transaction of its own; the starts of the rows it deleted."""
    try:
        starts = [row[0] for row in db.session.execute(statement)]
        db.session.commit()
    except BaseException:
        db.session.rollback()
        raise
    return starts


def _delete_runs(schedule_id: str, boundary: datetime, batch: int, floor: datetime | None = None) -> Any:
    """The schedule's oldest `batch` runs that started before `boundary`, through ix_runs_schedule_started
    (schedule_id, started_at): never a running run, the run running_run_id names, or a run of a running
    backfill (it counts them: recur_server.services.outside_runs.requests.backfill_done).
    From `floor` on (the newest start the previous
    batch deleted, ties included): each batch seeks past the index entries the batches before it deleted,
    which on PostgreSQL stay in the index, dead, until vacuum (read again by every batch from the oldest,
    they slowed a prune of two million runs of one schedule from 20,000 rows a second to 5,000)."""
    running_run = (select(Schedule.running_run_id).where(Schedule.id == schedule_id)
                   .scalar_subquery())
    running_backfills = select(Backfill.id).where((Backfill.schedule_id == schedule_id)
                                                  & (Backfill.status == "running"))
    doomed = (select(Run.id)
              .where((Run.schedule_id == schedule_id) & (Run.started_at < boundary)
                     & (Run.status != RunStatus.RUNNING.value) & (Run.id != func.coalesce(running_run, ""))
                     & (Run.backfill_id.is_(None) | Run.backfill_id.not_in(running_backfills)))
              .order_by(Run.started_at).limit(batch))
    if floor is not None:
        doomed = doomed.where(Run.started_at >= floor)
    return delete(Run).where(Run.id.in_(doomed)).returning(Run.started_at)
