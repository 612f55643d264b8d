"""Runs that follow other runs, the dispatcher's part: a pending trigger (recur_server.chain.follow wrote it with
its upstream run's outcome) is enqueued as an outside run once due, under a run ID and job ID derived from
the trigger (follower, upstream run, attempt), then marked queued; the reconciler's part finds a queued
trigger whose run has neither a row nor a job on its way and enqueues it again, and closes one whose run
ended without a finish (skipped by overlap, cancelled by cancel_other).

A process dying at any line loses nothing (the trigger stays pending or queued) and doubles nothing (a second
job of one run ID starts nothing: the run's row is keyed by it, recur_server.services.outside_runs.job).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update

from recur_server.chain import follow as followers
from recur_server.infra import rawsql
from recur_server.infra.extensions import db, get_redis
from recur_server.infra.locks import hold_if_free
from recur_server.infra.reads import read_alone
from recur_server.models import FollowTrigger, Run, RunStatus, RunTrigger, Schedule, ScheduleStatus, UTCDateTime
from recur_server.services.outside_runs.queueing import enqueue, on_its_way

log = logging.getLogger(__name__)

BATCH = 500  # triggers one pass looks at, oldest due first
DISPATCH_LOCK = "recur:follow-dispatch-lock"
DISPATCH_LOCK_MS = 10_000  # a holder killed mid-pass holds the others off this long at most

_TRIGGERS = FollowTrigger.__table__
_SCHEDULES = Schedule.__table__
_RUNS = Run.__table__

_MARK_QUEUED = rawsql.Statement(
    update(_TRIGGERS).where((_TRIGGERS.c.id == bindparam("p_id")) & (_TRIGGERS.c.run_id == bindparam("p_run_id"))
                            & (_TRIGGERS.c.status == "pending"))
    .values(status="queued"))
_SKIP = rawsql.Statement(
    update(_TRIGGERS).where((_TRIGGERS.c.id == bindparam("p_id")) & (_TRIGGERS.c.run_id == bindparam("p_run_id"))
                            & (_TRIGGERS.c.status == "pending"))
    .values(status="skipped", reason=bindparam("p_reason")).returning(_TRIGGERS.c.id))


def _page(status: str, now: datetime) -> list[Any]:
    return read_alone(lambda: list(db.session.execute(
        select(_TRIGGERS.c.id, _TRIGGERS.c.downstream_id, _TRIGGERS.c.upstream_run_id, _TRIGGERS.c.run_id,
               _TRIGGERS.c.due_at, _SCHEDULES.c.status, _SCHEDULES.c.timeout_seconds, _SCHEDULES.c.queue)
        .select_from(_TRIGGERS.join(_SCHEDULES, _SCHEDULES.c.id == _TRIGGERS.c.downstream_id))
        .where((_TRIGGERS.c.status == status) & (_TRIGGERS.c.due_at <= bindparam("now", type_=UTCDateTime())))
        .order_by(_TRIGGERS.c.due_at).limit(BATCH), {"now": now}).all()))


def dispatch_due(now: datetime) -> list[str]:
    """Enqueue the run of every pending trigger now due (a page of them); returns the run IDs enqueued.
    A follower no longer active when its trigger comes due records the trigger skipped ("paused").
    One process at a time (DISPATCH_LOCK): every worker's loop calls this each second, and two passes at
    once would enqueue one run twice (harmless, but a second job of a run is work for nothing)."""
    with hold_if_free(get_redis(), DISPATCH_LOCK, DISPATCH_LOCK_MS) as lock:
        return [] if lock is None else _dispatch(now)


def _dispatch(now: datetime) -> list[str]:
    started: list[str] = []
    for trigger_id, follower_id, upstream_run_id, run_id, due_at, status, timeout, queue in _page("pending", now):
        if status != ScheduleStatus.ACTIVE.value:
            with rawsql.transaction(db.engine) as tx:
                if tx.first(_SKIP, {"p_id": trigger_id, "p_run_id": run_id, "p_reason": "paused"}) is not None:
                    followers.record_skipped(tx, follower_id, run_id, upstream_run_id, due_at, "paused", now)
            continue
        enqueue(follower_id, run_id, due_at, RunTrigger.AFTER.value, None, timeout, queue_name=queue)
        with rawsql.transaction(db.engine) as tx:  # after the enqueue: a crash before this enqueues it again
            tx.execute(_MARK_QUEUED, {"p_id": trigger_id, "p_run_id": run_id})
        started.append(run_id)
    return started


def resume_queued(now: datetime) -> list[str]:
    """The reconciler's part: a queued trigger whose run ended without closing it is closed (done, with the
    run's status as its reason); one whose run has no row and no job on its way (queued, starting or parked)
    lost it, to Redis or a dead process, and is enqueued again. Returns the run IDs enqueued again."""
    queued = _page("queued", now)
    if not queued:
        return []
    ended: dict[str, str] = dict(db.session.execute(select(_RUNS.c.id, _RUNS.c.status)
                                    .where(_RUNS.c.id.in_([row.run_id for row in queued]))).all())
    db.session.rollback()
    for row in queued:
        status = ended.get(row.run_id)
        if status is not None and status != RunStatus.RUNNING.value:
            with rawsql.transaction(db.engine) as tx:
                tx.execute(followers.END_TRIGGER, {"p_id": row.id, "p_run_id": row.run_id,
                                                    "p_status": "skipped" if status == "skipped" else "done",
                                                    "p_reason": status})
    rowless = [row for row in queued if row.run_id not in ended]
    lost = [row for row, going in zip(rowless, on_its_way(get_redis(), [r.run_id for r in rowless]), strict=True)
            if not going]
    for row in lost:
        enqueue(row.downstream_id, row.run_id, row.due_at, RunTrigger.AFTER.value, None, row.timeout_seconds,
                attempt=int(now.timestamp()), queue_name=row.queue)
        log.warning("recovery: trigger %s had lost its run %s; enqueued it again", row.id, row.run_id)
    return [row.run_id for row in lost]
