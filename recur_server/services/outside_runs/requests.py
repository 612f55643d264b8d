"""Runs a caller asks for outside the chain: trigger now, and backfill a range of nominal times.

The service behind the API's and the console's trigger and backfill (recur_server.chain.outside carries them out).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from redis.exceptions import RedisError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from recur_server.chain import planning
from recur_server.infra.extensions import db, get_redis
from recur_server.models import Backfill, Run, RunStatus, RunTrigger, Schedule, TriggerRequest
from recur_server.policies import ticks_between
from recur_server.services.outside_runs import backfills
from recur_server.services.outside_runs.queueing import enqueue

log = logging.getLogger(__name__)

MAX_BACKFILL_TIMES = 1000


class KeyReused(Exception):
    """An Idempotency-Key this owner already used for another schedule."""


class TooMany(Exception):
    """A backfill range with more nominal times than MAX_BACKFILL_TIMES."""


@dataclass(frozen=True)
class Triggered:
    run_id: str
    scheduled_for: datetime


def trigger(schedule: Schedule, owner_id: int, now: datetime, overlap: str | None = None,
            key: str | None = None) -> Triggered:
    """Start one manual run now. With `key`, a repeat of the request gets the first answer and starts
    nothing more; the run's ID is in the key's row, so a first answer whose process died before enqueueing
    is enqueued again (a second start of one run ID is a no-op). A key pruned after RECUR_KEEP_RUNS_DAYS
    is a new request: a new run, with a new ID."""
    run_id = str(uuid.uuid4())
    if key is not None:
        first = _first(owner_id, key, schedule, now)
        if first is not None:
            return first
        get_redis().ping()  # refuse before writing anything if the run could not be enqueued
        db.session.add(TriggerRequest(owner_id=owner_id, idempotency_key=key, schedule_id=schedule.id,
                                      run_id=run_id, scheduled_for=now, created_at=now))
        try:
            db.session.commit()
        except IntegrityError:  # the same key, at the same moment, from another request: its answer stands
            db.session.rollback()
            first = _first(owner_id, key, schedule, now)
            if first is None:
                raise
            return first
    # Its place in line, should it have to wait, is when it was asked for: not when a worker's slot first
    # took its job, which several slots do in any order.
    enqueue(schedule.id, run_id, now, RunTrigger.MANUAL.value, overlap, schedule.timeout_seconds,
            waiting_since=now.timestamp(), queue_name=schedule.queue)
    return Triggered(run_id, now)


# A keyed run with no row this soon after its request was never started (its process died before the
# enqueue, or it waits in the queue): a retry enqueues it again. Later, no row means the run was pruned
# (a schedule keeps its runs at least a day), and it must not run again.
REENQUEUE_WITHIN = timedelta(days=1)


def _first(owner_id: int, key: str, schedule: Schedule, now: datetime) -> Triggered | None:
    first = db.session.scalar(select(TriggerRequest).where(
        (TriggerRequest.owner_id == owner_id) & (TriggerRequest.idempotency_key == key)))
    if first is None:
        return None
    if first.schedule_id != schedule.id:
        raise KeyReused(key)
    if now - first.created_at < REENQUEUE_WITHIN and db.session.get(Run, first.run_id) is None:
        enqueue(schedule.id, first.run_id, first.scheduled_for, RunTrigger.MANUAL.value, None,
                schedule.timeout_seconds, waiting_since=first.created_at.timestamp(), queue_name=schedule.queue)
    return Triggered(first.run_id, first.scheduled_for)


def backfill_times(schedule: Schedule, start: datetime, end: datetime) -> list[datetime]:
    """Every nominal time of the schedule's timing in [start, end), in order. Raises TooMany past
    MAX_BACKFILL_TIMES, and the timing's own error if it no longer builds."""
    spec = planning.spec_of(schedule)
    first = spec.next_after(start - timedelta(microseconds=1))
    if first is None or first >= end:
        return []
    times = [first, *ticks_between(spec.next_after, first, end, limit=MAX_BACKFILL_TIMES, inclusive_end=False)]
    if len(times) > MAX_BACKFILL_TIMES:
        raise TooMany(len(times))
    return times


def start_backfill(schedule: Schedule, start: datetime, end: datetime, times: list[datetime],
                   overlap: str | None, now: datetime) -> Backfill:
    """Record the backfill, then enqueue its first run. With Redis away it is refused before anything is
    written (the API's 503 says nothing was changed); if Redis goes away after the commit, or this process
    dies there, the reconciler starts it (recur_server.services.outside_runs.backfills.resume_backfills)."""
    get_redis().ping()
    backfill = Backfill(schedule_id=schedule.id, start_at=start, end_at=end, overlap=overlap,
                        times=[t.isoformat() for t in times], total=len(times), started=0, status="running",
                        created_at=now)
    db.session.add(backfill)
    db.session.commit()
    try:
        backfills.start_backfill(backfill.id)
    except RedisError as exc:
        log.warning("backfill %s recorded; its first run is left to the reconciler (%s)", backfill.id, exc)
    return backfill


def backfill_done(backfill: Backfill) -> int:
    """How many of its runs have ended (or were skipped)."""
    return int(db.session.scalar(select(func.count()).select_from(Run).where(
        (Run.backfill_id == backfill.id) & (Run.status != RunStatus.RUNNING.value))) or 0)


def cancel_backfill(backfill: Backfill, now: datetime) -> None:
    if backfill.status == "running":
        backfill.status = "cancelled"
        backfill.finished_at = now
        db.session.commit()
