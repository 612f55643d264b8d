"""A backfill's runs, one after another (or all at once with overlap allow_all): starting its first,
going on to its next as each ends, and the reconciler's repair of a backfill whose next run was lost."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update

from recur_server.chain import rows
from recur_server.infra import rawsql
from recur_server.infra.extensions import db, get_redis
from recur_server.models import Backfill, Run, RunStatus, RunTrigger, Schedule, UTCDateTime
from recur_server.policies import OverlapPolicy
from recur_server.services.outside_runs.queueing import enqueue, on_its_way

log = logging.getLogger(__name__)

_RUNS = Run.__table__
_SCHEDULES = Schedule.__table__
_BACKFILLS = Backfill.__table__


def timeout_and_queue_of(schedule_id: str) -> tuple[int, str | None]:
    """What a run's job needs of its schedule: its timeout (600 if it is gone) and queue."""
    row = db.session.execute(select(Schedule.timeout_seconds, Schedule.queue)
                             .where(Schedule.id == schedule_id)).first()
    db.session.rollback()
    return (row[0] or 600, row[1]) if row is not None else (600, None)


_ADVANCE_BACKFILL = rawsql.Statement(
    update(_BACKFILLS)
    .where((_BACKFILLS.c.id == bindparam("p_id")) & (_BACKFILLS.c.status == "running")
           & (_BACKFILLS.c.started == bindparam("p_started")))
    .values(started=bindparam("p_started") + 1)
    .returning(_BACKFILLS.c.schedule_id, _BACKFILLS.c.times, _BACKFILLS.c.total, _BACKFILLS.c.overlap)
)
_FINISH_BACKFILL = rawsql.Statement(
    update(_BACKFILLS)
    .where((_BACKFILLS.c.id == bindparam("p_id")) & (_BACKFILLS.c.status == "running"))
    .values(status="done", finished_at=bindparam("p_now", type_=UTCDateTime()))
)


def start_backfill(backfill_id: str) -> None:
    """Start a backfill's first run (or, with overlap allow_all, all of them at once)."""
    backfill = db.session.get(Backfill, backfill_id)
    if backfill is None:
        return
    timeout, queue = timeout_and_queue_of(backfill.schedule_id)
    times = [datetime.fromisoformat(t) for t in backfill.times]
    at_once = backfill.overlap == OverlapPolicy.ALLOW_ALL
    db.session.rollback()
    for index, nominal in enumerate(times if at_once else times[:1]):
        enqueue(backfill.schedule_id, backfill_run_id(backfill_id, index), nominal, RunTrigger.BACKFILL.value,
                backfill.overlap or OverlapPolicy.BUFFER_ALL.value, timeout, backfill_id, queue_name=queue)


def backfill_run_id(backfill_id: str, index: int) -> str:
    """Each nominal time of a backfill has one run ID, whoever enqueues it, however often."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"recur-backfill:{backfill_id}:{index}"))


def continue_backfill(backfill_id: str, ended_run_id: str, now: datetime) -> None:
    """After the backfill's run `ended_run_id` ended: start the next (one at a time), or mark the backfill
    done. Only from its current run: the run's own job and a reconciler pass may both see the same run end,
    and the second must not go on from the run the first started (that skipped a run)."""
    rows.end_session_transaction()
    backfill = db.session.get(Backfill, backfill_id, populate_existing=True)
    if backfill is None or backfill.status != "running":
        db.session.rollback()
        return
    started = backfill.started
    at_once = backfill.overlap == OverlapPolicy.ALLOW_ALL
    if not at_once and backfill_run_id(backfill_id, started) != ended_run_id:
        db.session.rollback()
        return
    db.session.rollback()
    with rawsql.transaction(db.engine) as tx:
        row = tx.first(_ADVANCE_BACKFILL, {"p_id": backfill_id, "p_started": started})
        if row is None:
            tx.rollback()
            return
        schedule_id, times, total, overlap = row
        if started + 1 >= total:
            tx.execute(_FINISH_BACKFILL, {"p_id": backfill_id, "p_now": now})
    if started + 1 < total and overlap != OverlapPolicy.ALLOW_ALL:
        timeout, queue = timeout_and_queue_of(schedule_id)
        index = started + 1
        enqueue(schedule_id, backfill_run_id(backfill_id, index), datetime.fromisoformat(times[index]),
                RunTrigger.BACKFILL.value, overlap or OverlapPolicy.BUFFER_ALL.value, timeout, backfill_id,
                queue_name=queue)


RESUME_BATCH = 1000  # running backfills one reconciler pass looks at


def resume_backfills(now: datetime) -> list[str]:
    """The reconciler's part: a running backfill whose next run has neither a row nor a job on its way
    (queued, starting or parked) lost it, to a process that died between its commit and its enqueue, or
    to Redis: that run is enqueued again (a copy of a run that did start is a no-op: its row is keyed by
    its run ID). A backfill whose current run ended without the next being started goes on. Returns the
    run IDs enqueued again."""
    redis = get_redis()
    backfills = db.session.execute(
        select(_BACKFILLS.c.id, _BACKFILLS.c.schedule_id, _BACKFILLS.c.times, _BACKFILLS.c.total,
               _BACKFILLS.c.started, _BACKFILLS.c.overlap)
        .where(_BACKFILLS.c.status == "running").order_by(_BACKFILLS.c.created_at).limit(RESUME_BATCH)).all()
    db.session.rollback()
    # The run each should have on its way: its current one (allow_all: every one), by run ID.
    due: dict[str, tuple[Any, int]] = {}
    for backfill in backfills:
        at_once = backfill.overlap == OverlapPolicy.ALLOW_ALL
        for index in range(backfill.total) if at_once else [backfill.started]:
            due[backfill_run_id(backfill.id, index)] = (backfill, index)
    if not due:
        return []
    ended: dict[str, bool] = {}
    for run_id, status in db.session.execute(select(_RUNS.c.id, _RUNS.c.status).where(_RUNS.c.id.in_(list(due)))):
        ended[run_id] = status != RunStatus.RUNNING.value
    db.session.rollback()
    to_continue = {backfill.id: run_id for run_id, (backfill, _) in due.items()
                   if ended.get(run_id) and backfill.overlap != OverlapPolicy.ALLOW_ALL}
    for backfill in backfills:  # allow_all: ends when all its runs ended
        at_once = backfill.overlap == OverlapPolicy.ALLOW_ALL
        if at_once and all(ended.get(backfill_run_id(backfill.id, i)) for i in range(backfill.total)):
            with rawsql.transaction(db.engine) as tx:
                tx.execute(_FINISH_BACKFILL, {"p_id": backfill.id, "p_now": now})
    for backfill_id, run_id in to_continue.items():
        continue_backfill(backfill_id, run_id, now)
    rowless = [run_id for run_id in due if run_id not in ended]
    lost = [run_id for run_id, on_its_way in zip(rowless, on_its_way(redis, rowless), strict=True) if not on_its_way]
    lost_of = {due[run_id][0].schedule_id for run_id in lost}
    timeouts = {sid: (timeout, queue) for sid, timeout, queue in db.session.execute(
        select(_SCHEDULES.c.id, _SCHEDULES.c.timeout_seconds, _SCHEDULES.c.queue)
        .where(_SCHEDULES.c.id.in_(lost_of)))} if lost else {}
    db.session.rollback()
    for run_id in lost:
        backfill, index = due[run_id]
        if backfill.schedule_id not in timeouts:
            continue
        timeout, queue = timeouts[backfill.schedule_id]
        enqueue(backfill.schedule_id, run_id, datetime.fromisoformat(backfill.times[index]),
                RunTrigger.BACKFILL.value, backfill.overlap or OverlapPolicy.BUFFER_ALL.value,
                timeout, backfill.id, attempt=int(now.timestamp()), queue_name=queue)
        log.warning("recovery: backfill %s had lost its run %s (time %d of %d); enqueued it again",
                    backfill.id, run_id, index + 1, backfill.total)
    return lost
