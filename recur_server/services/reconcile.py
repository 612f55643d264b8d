"""Reconcile Redis with the database: re-create missing links, write off runs whose worker is gone.

Idempotent and safe to run anywhere, any time, by several processes at once: a link is only ever
(re)put under the ID the committed row expects, replacing any pending copy, and every link is fenced.

A pass is a full sweep (every active schedule) or, with a horizon, reads only the active schedules due
before now + horizon or not planned yet (ix_scheduled_jobs_due): the links that must be in Redis before
they come due, and the runs in flight (a running link's tick is due already). Its cost follows the work
due, not the number of schedules; the workers sweep in full when Redis lost its data and once per
RECUR_RECONCILE_SWEEP_SECONDS, a worker's start included (recur_server.workers.background).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import select, tuple_

from recur_server.chain import invalid, planning
from recur_server.chain.finish import finish_run
from recur_server.chain.handoff import hand_off, hand_off_plans
from recur_server.chain.ids import link_id
from recur_server.chain.leases import EPOCH_KEY, holders, pulse
from recur_server.chain.link_lookup import QueuedIds, pending_revisions
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.infra.reads import read_alone
from recur_server.models import Run, RunStatus, Schedule, ScheduleStatus
from recur_server.services.outside_runs import follow as triggered
from recur_server.services.outside_runs.backfills import resume_backfills
from recur_server.services.outside_runs.queueing import forget_lost_jobs
from recur_server.services.outside_runs.reconcile import reap

log = logging.getLogger(__name__)

BATCH = 1000


@dataclass
class Report:
    sweep: bool = True  # every active schedule read; False: those due within the horizon
    checked: int = 0
    links_repaired: list[str] = field(default_factory=list)
    runs_written_off: list[str] = field(default_factory=list)
    schedules_invalidated: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "sweep": self.sweep,
            "checked": self.checked,
            "links_repaired": len(self.links_repaired),
            "runs_written_off": len(self.runs_written_off),
            "schedules_invalidated": len(self.schedules_invalidated),
        }


_COLUMNS = (Schedule.id, Schedule.revision, Schedule.current_repeat, Schedule.current_retry, Schedule.running_run_id,
            Schedule.next_run_at, Schedule.jitter_seconds, Schedule.timeout_seconds, Schedule.queue)
_ACTIVE = Schedule.status == ScheduleStatus.ACTIVE.value


def reconcile(now: datetime, between_batches: Callable[[], None] | None = None,
              horizon: timedelta | None = None) -> Report:
    """One pass: over every active schedule, or, with `horizon`, over those due before now + horizon (and
    those not planned yet). `between_batches` runs after each batch (the background loop renews its lock
    there, and raises to abandon the pass if the lock was lost)."""
    redis = get_redis()
    queue = get_queue()
    lease_seconds = current_app.config["RECUR_LEASE_SECONDS"]
    # A missing lease means a lost worker unless Redis was emptied (the epoch key gone: live runs re-create
    # their leases within a quarter lease) or stalled lately (recur_server.chain.leases.pulse).
    leases_tell = pulse(redis, lease_seconds, current_app.config["RECUR_REDIS_TIMEOUT_SECONDS"])
    emptied = bool(redis.set(EPOCH_KEY, now.isoformat(), nx=True))
    leases_tell = not emptied and leases_tell
    if emptied:  # every link may be gone, not only those due soon
        horizon = None
    report = Report(sweep=horizon is None)
    lease_grace = timedelta(seconds=lease_seconds)
    queued = QueuedIds(redis, queue)  # read at most once per pass, whatever the number of batches
    batches = _every_active() if horizon is None else _due_before(now + horizon)
    for rows in batches:
        if between_batches is not None and report.checked:
            between_batches()
        report.checked += len(rows)

        idle = [r for r in rows if r.running_run_id is None]
        ids = [link_id(r.id, r.current_repeat, r.current_retry) for r in idle]
        revisions = pending_revisions(redis, queue, ids, now.timestamp(), queued, [r.queue for r in idle])
        missing = [row for row, pending in zip(idle, revisions, strict=True) if pending != row.revision]
        if missing:
            missing = _really_missing(redis, queue, missing, now, queued)
        if missing:
            _repair_links(missing, now, report)

        running = [r for r in rows if r.running_run_id is not None and leases_tell]
        for row, lease in zip(running, holders(redis, [r.id for r in running]), strict=True):
            if lease is None:
                _write_off_if_lost(row.running_run_id, row.timeout_seconds, now, lease_grace, report)
    report.runs_written_off += reap(now, lease_grace, leases_tell)
    forget_lost_jobs()
    resume_backfills(now)
    triggered.resume_queued(now)  # runs that follow other runs, lost on their way
    return report


def _read(statement: Any) -> list[Any]:
    return read_alone(lambda: list(db.session.execute(statement.limit(BATCH)).all()))


def _every_active() -> Iterator[list[Any]]:
    """Every active schedule, BATCH rows at a time, by id (ix_scheduled_jobs_status_id)."""
    return _by_id(_ACTIVE)


def _by_id(chosen: Any) -> Iterator[list[Any]]:
    """The schedules `chosen` picks, BATCH rows at a time, in the order of their ids."""
    last_id = ""
    while rows := _read(select(*_COLUMNS).where(chosen & (Schedule.id > last_id)).order_by(Schedule.id)):
        yield rows
        last_id = rows[-1].id


def _due_before(until: datetime) -> Iterator[list[Any]]:
    """The active schedules not planned yet, those running a link whose next tick is later (an edit re-planned
    it mid-run), then those due before `until`, soonest first; BATCH rows at a time, each through an index
    (ix_scheduled_jobs_due: status, next_run_at, id; ix_runs_running). A schedule that a link
    moves on during the pass may be read twice or not at all: the first is harmless, and a schedule it moved
    past the position read is due after it and is read by a later pass."""
    running = select(Run.schedule_id).where(Run.status == RunStatus.RUNNING.value)
    yield from _by_id(_ACTIVE & Schedule.next_run_at.is_(None))
    yield from _by_id(_ACTIVE & (Schedule.next_run_at > until) & Schedule.running_run_id.is_not(None)
                      & Schedule.id.in_(running))
    after: tuple[datetime, str] | None = None
    while True:
        due = _ACTIVE & (Schedule.next_run_at <= until)
        if after is not None:
            due &= tuple_(Schedule.next_run_at, Schedule.id) > tuple_(*after)
        rows = _read(select(*_COLUMNS).where(due).order_by(Schedule.next_run_at, Schedule.id))
        if not rows:
            return
        yield rows
        after = (rows[-1].next_run_at, rows[-1].id)


def _really_missing(redis: Any, queue: Any, rows: list[Any], now: datetime, queued: QueuedIds) -> list[Any]:
    """Of idle rows whose link looked missing, those whose link is missing while the chain stands still.

    Two moves of a live chain look like a missing link to a pass. A run commits its outcome, then in one
    pipeline releases its lease and puts its successor: until then its row expects a link not there yet,
    and its lease is still held (if its worker died there, the lease lapses and the next pass repairs).
    And the rows this pass read may be old: the link they expect may have run since (its row then
    expects another). So rows whose lease is held are left, the others' links are looked for again (a
    hand-off that landed meanwhile is seen), and what is still missing is only repaired if its row,
    read again, still expects that very link. Costs nothing unless something looks missing.
    """
    leases = holders(redis, [row.id for row in rows])
    unheld = [row for row, lease in zip(rows, leases, strict=True) if lease is None]
    ids = [link_id(row.id, row.current_repeat, row.current_retry) for row in unheld]
    revisions = pending_revisions(redis, queue, ids, now.timestamp(), queued, [row.queue for row in unheld])
    candidates = [row for row, pending in zip(unheld, revisions, strict=True) if pending != row.revision]
    if not candidates:
        return []
    current = {
        row.id: row
        for row in db.session.execute(
            select(
                Schedule.id, Schedule.status, Schedule.revision, Schedule.current_repeat,
                Schedule.current_retry, Schedule.running_run_id,
            ).where(Schedule.id.in_([row.id for row in candidates]))
        ).all()
    }
    db.session.rollback()
    return [row for row in candidates if _expects_same_link(current.get(row.id), row)]


def _expects_same_link(now_row: Any, then_row: Any) -> bool:
    return (
        now_row is not None
        and now_row.status == ScheduleStatus.ACTIVE.value
        and now_row.running_run_id is None
        and (now_row.revision, now_row.current_repeat, now_row.current_retry)
        == (then_row.revision, then_row.current_repeat, then_row.current_retry)
    )


def _repair_links(rows: list[Any], now: datetime, report: Report) -> None:
    """Re-create the links these just-read committed rows expect, one script per 500 links. Only a row
    with a jitter to draw (the timing spec is needed) or no planned tick is loaded whole."""
    plans, to_load = [], []
    bad: list[tuple[str, int, Exception]] = []
    for row in rows:
        if row.next_run_at is None or planning.draws_jitter(row.jitter_seconds, row.current_retry):
            to_load.append(row.id)
        else:
            plans.append(planning.plain_link_plan(
                row.id, row.revision, row.current_repeat, row.current_retry, row.next_run_at, row.timeout_seconds,
                queue=row.queue,
            ))
    unplanned = []
    if to_load:
        for schedule in db.session.scalars(select(Schedule).where(Schedule.id.in_(to_load))).all():
            if schedule.status != ScheduleStatus.ACTIVE.value or schedule.running_run_id:
                continue
            if schedule.next_run_at is None:
                unplanned.append(schedule.id)
            else:
                try:
                    plans.append(planning.link_plan(schedule))
                except Exception as exc:  # its timing no longer builds: this row only, the batch goes on
                    bad.append((schedule.id, schedule.revision, exc))
        db.session.rollback()
    for schedule_id, revision, error in bad:
        _invalidate(schedule_id, revision, error, now, report)
    for schedule_id in unplanned:  # rare: plans the first tick, commits, hands off
        _repair_link(schedule_id, now, report)
    # A plan whose schedule moved on since the rows were read (a hand-off, a re-plan) is refused.
    repaired = hand_off_plans(plans)
    report.links_repaired.extend(repaired)
    if repaired:
        shown = ", ".join(repaired[:3]) + (" ..." if len(repaired) > 3 else "")
        log.warning("recovery: re-created %d missing link(s): %s", len(repaired), shown)


def _repair_link(schedule_id: str, now: datetime, report: Report) -> None:
    schedule = db.session.get(Schedule, schedule_id, populate_existing=True)
    if schedule is None or schedule.status != ScheduleStatus.ACTIVE.value or schedule.running_run_id:
        db.session.rollback()
        return
    if schedule.next_run_at is None:
        try:
            first = planning.first_nominal(schedule, now)
        except Exception as exc:  # its timing no longer builds
            revision = schedule.revision
            db.session.rollback()
            _invalidate(schedule_id, revision, exc, now, report)
            return
        schedule.next_run_at = first
        if schedule.next_run_at is None:
            schedule.status = ScheduleStatus.DONE.value
        db.session.commit()
    job_id = hand_off(schedule)
    db.session.rollback()
    if job_id:
        report.links_repaired.append(job_id)
        log.warning("recovery: re-created missing link %s", job_id)


def _invalidate(schedule_id: str, revision: int, exc: Exception, now: datetime, report: Report) -> None:
    if invalid.mark_invalid(schedule_id, revision, exc, now):
        report.schedules_invalidated.append(schedule_id)


def _write_off_if_lost(run_id: str, timeout_seconds: int, now: datetime, grace: timedelta, report: Report) -> None:
    run = db.session.get(Run, run_id, populate_existing=True)
    maybe_alive = run is None or run.status != RunStatus.RUNNING.value or now - run.started_at < grace
    started_at = run.started_at if run is not None else now
    db.session.rollback()
    if maybe_alive:
        return
    # A lease also lapses on purpose: its run is past its timeout plus the grace, with a task that would
    # not stop (in a simple worker, nothing can kill it). Past that deadline the run timed out either way.
    overran = now - started_at > timedelta(seconds=timeout_seconds + current_app.config["RECUR_TIMEOUT_GRACE_SECONDS"])
    if overran:
        status = RunStatus.TIMED_OUT
        reason = (f"timed out after {timeout_seconds}s; no outcome by its deadline and its lease lapsed "
                  "(the task did not stop, or its worker is gone)")
    else:
        status, reason = RunStatus.FAILED, "worker_lost: its worker stopped renewing the lease"
    schedule = finish_run(run_id, status, reason, now)
    report.runs_written_off.append(run_id)
    log.warning("recovery: run %s lost its worker or overran its deadline; counted as %s", run_id, status.value)
    if schedule is not None:
        hand_off(schedule)
        db.session.rollback()
