"""Queues left without a live worker (recur_server.infra.worker_beats): a queue that has active schedules and no
worker whose
beat is fresher than RECUR_WORKER_GRACE_SECONDS is `unserved` (health says degraded). Checked by whichever Recur
process holds the watch lock (recur_server.notify.watch), web processes included, since they are what is left when every
worker is gone: once per outage, each owner with active schedules on the queue gets workers.gone, and once a worker
beats again, the same owners get workers.back. The record of the outage is kept in Redis (worker_beats.UNSERVED_KEY),
where the console's banner and /metrics read it."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from flask import current_app
from sqlalchemy import exists, select

from recur_server.infra import worker_beats
from recur_server.infra.extensions import db, get_redis, queue_names
from recur_server.infra.reads import read_alone
from recur_server.models import Schedule, ScheduleStatus
from recur_server.notify.outbox import EventType, emit
from recur_server.timing import iso, iso_or_none

log = logging.getLogger(__name__)


def _on_queue(queue: str) -> Any:
    """Active schedules whose links go through `queue` (a NULL queue is the default, RECUR_QUEUE)."""
    active = Schedule.status == ScheduleStatus.ACTIVE.value
    if queue == current_app.config["RECUR_QUEUE"]:
        return active & (Schedule.queue.is_(None) | (Schedule.queue == queue))
    return active & (Schedule.queue == queue)


def _used(queue: str) -> bool:
    """Whether an active schedule's links go through `queue`: a process that does not serve a queue (its
    RECUR_QUEUES older or newer than another's, in a rolling change) leaves that queue's outage alone while
    schedules wait on it."""
    return read_alone(partial(_any_on, queue))


def _any_on(queue: str) -> bool:
    return bool(db.session.scalar(select(exists().where(_on_queue(queue)))))


@dataclass(frozen=True)
class Liveness:
    """The cluster's workers as their beats tell at one instant: live worker processes per queue, and the queues
    that have active schedules and none (the database is asked only about queues without a live worker)."""

    beats: list[worker_beats.Beat]
    live: dict[str, int]
    unserved: list[str]
    grace: float
    now: float

    def alive(self, beat: worker_beats.Beat) -> bool:
        return beat.alive(self.now, self.grace)


def _owners(queue: str) -> tuple[int, ...]:
    return tuple(db.session.scalars(select(Schedule.owner_id).where(_on_queue(queue)).distinct()).all())


def liveness(now: datetime) -> Liveness:
    grace = float(current_app.config["RECUR_WORKER_GRACE_SECONDS"])
    beats = worker_beats.read(get_redis())
    queues = queue_names()
    live = worker_beats.live_per_queue(beats, queues, now.timestamp(), grace)
    unserved = read_alone(lambda: [q for q in queues if not live[q] and _any_on(q)])
    return Liveness(beats, live, unserved, grace, now.timestamp())


def check(now: datetime) -> dict[str, list[str]]:
    """Record each queue that became unserved (workers.gone to its owners) or served again (workers.back to the
    owners told it was gone); drop beats gone long ago. Returns the queues of each."""
    redis = get_redis()
    seen = liveness(now)
    worker_beats.forget_gone(redis, seen.beats, seen.now)
    record = worker_beats.unserved(redis)
    changed: dict[str, list[str]] = {"gone": [], "back": []}
    for queue, outage in record.items():
        if seen.live.get(queue):
            _tell(outage.owners, EventType.WORKERS_BACK, {
                "queue": queue, "live_workers": seen.live[queue],
                "gone_since": iso(datetime.fromtimestamp(outage.since, UTC))}, now)
            worker_beats.served(redis, queue)
            changed["back"].append(queue)
            log.warning("queue %s has a live worker again", queue)
        elif queue not in seen.live and not _used(queue):  # no queue of this process's, and no schedule's
            worker_beats.served(redis, queue)
    for queue in seen.unserved:
        if queue in record:
            continue
        last = worker_beats.last_seen(seen.beats, queue)
        owners = read_alone(partial(_owners, queue))
        _tell(owners, EventType.WORKERS_GONE, {
            "queue": queue, "live_workers": 0, "grace_seconds": seen.grace,
            "last_seen_at": iso_or_none(None if last is None else datetime.fromtimestamp(last, UTC))}, now)
        worker_beats.mark_unserved(redis, worker_beats.Unserved(queue, now.timestamp(), owners))
        changed["gone"].append(queue)
        log.warning("queue %s has active schedules and no live worker (none beat within %ss)", queue, seen.grace)
    return changed


def _tell(owners: tuple[int, ...], event_type: EventType, data: dict[str, Any], now: datetime) -> None:
    """One event to each owner, in one transaction; committed before the record in Redis changes, so a process
    that dies in between sends it again on the next pass rather than never."""
    for owner_id in owners:
        emit(db.session, owner_id, event_type.value, data, now)
    db.session.commit()
