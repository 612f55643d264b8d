"""Runs outside the chain: a manual trigger and the runs of a backfill.

Each is its own RQ job (ID `recur-run-{run_id}-w{attempt}`), never a link: it takes no tick of the
chain, does not count against total_repeats and leaves next_run_at alone. Its Run row, keyed by the
run's own ID, is inserted when it starts, so a job that runs twice (a retried request, a copy) starts
one run. The overlap policy (the schedule's, or the one the request gave) and the workflow's
concurrency limit apply as they do to a tick; a run that must wait comes back a second later as its
next attempt. Runs that have started are listed in Redis (OUTSIDE_KEY) with their job IDs, so that
cancel_other can stop them and the reconciler can write off one whose worker died.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app, has_app_context
from rq import get_current_job
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from app import clock, logs, metrics
from app.chain import breaker, collisions, driver, state
from app.chain.leases import Lease
from app.extensions import db, get_queue, get_redis
from app.models import Backfill, ConcurrencyPolicy, Run, RunStatus, RunTrigger, ScheduledJob, UTCDateTime, Workflow
from app.policies import Gap, OverlapPolicy
from app.policies.overlap import waits_for_running
from app.tasks import TaskEvent

log = logging.getLogger(__name__)

OUTSIDE_KEY = "recur:outside-runs"  # hash: run ID -> "schedule_id job_id listed-at-epoch-seconds"
OUTSIDE_FUNC = "app.chain.outside.run_outside"
WAIT_SECONDS = 1  # RQ's scheduled registry counts whole seconds

_RUNS = Run.__table__
_SCHEDULES = ScheduledJob.__table__
_BACKFILLS = Backfill.__table__

_LOAD = driver.Statement(
    select(_SCHEDULES.c.name, _SCHEDULES.c.trigger_payload, _SCHEDULES.c.timeout_seconds, _SCHEDULES.c.overlap,
           _SCHEDULES.c.workflow_id, Workflow.task, Workflow.max_concurrent_runs, Workflow.concurrency_policy,
           Workflow.breaker_threshold)
    .select_from(_SCHEDULES.join(Workflow.__table__, Workflow.id == _SCHEDULES.c.workflow_id))
    .where(_SCHEDULES.c.id == bindparam("p_id"))
    .with_for_update(of=_SCHEDULES)
)
_INSERT_RUN = driver.Statement(insert(_RUNS).values(
    id=bindparam("p_run_id"), schedule_id=bindparam("p_id"), repeat_number=None, retry_number=0,
    scheduled_for=bindparam("p_scheduled_for", type_=UTCDateTime()), started_at=bindparam("p_now", type_=UTCDateTime()),
    finished_at=bindparam("p_finished_at", type_=UTCDateTime()), status=bindparam("p_status"),
    error=bindparam("p_error"), worker=bindparam("p_worker"), trigger=bindparam("p_trigger"),
    reason=bindparam("p_reason"), ticks=bindparam("p_ticks"), backfill_id=bindparam("p_backfill_id"),
))
_BACKFILL_STATUS = driver.Statement(select(_BACKFILLS.c.status).where(_BACKFILLS.c.id == bindparam("p_id")))


def job_id(run_id: str, attempt: int) -> str:
    return f"{collisions.outside_job_id(run_id)}-w{attempt}"


def enqueue(schedule_id: str, run_id: str, scheduled_for: datetime, trigger: str, overlap: str | None,
            timeout_seconds: int, backfill_id: str | None = None, attempt: int = 0,
            at: datetime | None = None) -> str:
    """Put the job of an outside run on the queue (now, or at `at`); returns its job ID."""
    queue = get_queue()
    kwargs = {"schedule_id": schedule_id, "run_id": run_id, "scheduled_for": scheduled_for.isoformat(),
              "trigger": trigger, "overlap": overlap, "backfill_id": backfill_id, "attempt": attempt}
    options: dict[str, Any] = {
        "job_id": job_id(run_id, attempt), "job_timeout": timeout_seconds + 60,
        "result_ttl": current_app.config["RECUR_LINK_RESULT_TTL"],
        "description": f"recur {trigger} run {run_id} of {schedule_id} for {scheduled_for.isoformat()}",
    }
    if at is None:
        queue.enqueue(OUTSIDE_FUNC, kwargs=kwargs, **options)
    else:
        queue.enqueue_at(at, OUTSIDE_FUNC, kwargs=kwargs, **options)
    return str(options["job_id"])


@dataclass(frozen=True)
class Started:
    task: str
    name: str
    payload: Any
    timeout_seconds: int
    to_stop: tuple[str, ...]


def run_outside(schedule_id: str, run_id: str, scheduled_for: str, trigger: str, overlap: str | None,
                backfill_id: str | None, attempt: int) -> str:
    """Entry point of the RQ job."""
    if has_app_context():
        return _run(schedule_id, run_id, datetime.fromisoformat(scheduled_for), trigger, overlap, backfill_id, attempt)
    from app.chain.link import _app

    with _app().app_context():
        return _run(schedule_id, run_id, datetime.fromisoformat(scheduled_for), trigger, overlap, backfill_id, attempt)


def _run(schedule_id: str, run_id: str, nominal: datetime, trigger: str, overlap: str | None,
         backfill_id: str | None, attempt: int) -> str:
    job = get_current_job()
    worker = job.worker_name if job is not None else None
    this_job = job.id if job is not None else job_id(run_id, attempt)
    logs.bind(schedule_id=schedule_id, run_id=run_id, repeat=None, retry=None, worker=worker)
    try:
        now = clock.utcnow()
        list_running(schedule_id, run_id, this_job, now)  # before the row exists: see reap()
        started = _start(schedule_id, run_id, nominal, trigger, overlap, backfill_id, now, worker)
        if isinstance(started, str):
            get_redis().hdel(OUTSIDE_KEY, run_id)
            if started == "wait":
                timeout = _timeout_of(schedule_id)
                if timeout is not None:
                    enqueue(schedule_id, run_id, nominal, trigger, overlap, timeout, backfill_id, attempt + 1,
                            at=now + timedelta(seconds=WAIT_SECONDS))
                return "waiting"
            if started == RunStatus.SKIPPED.value and backfill_id:
                continue_backfill(backfill_id, now)
            return started
        if started.to_stop:
            collisions.stop_jobs(list(started.to_stop))
        return _execute(schedule_id, run_id, nominal, trigger, backfill_id, started)
    finally:
        logs.clear()
        db.session.remove()


def _execute(schedule_id: str, run_id: str, nominal: datetime, trigger: str, backfill_id: str | None,
             started: Started) -> str:
    from app.chain.link import execute_task

    config = current_app.config
    deadline = clock.monotonic() + started.timeout_seconds + config["RECUR_TIMEOUT_GRACE_SECONDS"]
    lease = Lease(get_redis(), schedule_id, run_id, config["RECUR_LEASE_SECONDS"], deadline, per_run=True)
    lease.acquire()
    with lease:
        event: TaskEvent = {
            "scheduled_job_id": schedule_id, "scheduled_job_name": started.name, "repeat_number": -1,
            "retry_number": 0, "scheduled_for": nominal.isoformat(),
            "payload": started.payload if started.payload is not None else {},
            "idempotency_key": f"{schedule_id}:{trigger}:{run_id}",
        }
        status, error = execute_task(started.task, event, started.timeout_seconds)
        state.finish_run(run_id, status, error, clock.utcnow())
    get_redis().hdel(OUTSIDE_KEY, run_id)
    if backfill_id:
        continue_backfill(backfill_id, clock.utcnow())
    log.info("%s run %s %s", trigger, run_id, status.value)
    return status.value


def _timeout_of(schedule_id: str) -> int | None:
    timeout = db.session.scalar(select(ScheduledJob.timeout_seconds).where(ScheduledJob.id == schedule_id))
    db.session.rollback()
    return timeout


def _start(schedule_id: str, run_id: str, nominal: datetime, trigger: str, overlap: str | None,
           backfill_id: str | None, now: datetime, worker: str | None) -> Started | str:
    """One transaction: the overlap policy and the concurrency limit, then the run's row. Returns the run
    to execute, or what happened instead: "gone", "wait", or "skipped" (recorded)."""
    values: dict[str, Any] = {
        "p_id": schedule_id, "p_run_id": run_id, "p_scheduled_for": nominal, "p_now": now, "p_worker": worker,
        "p_trigger": trigger, "p_backfill_id": backfill_id, "p_finished_at": None, "p_error": None,
        "p_reason": None, "p_ticks": None, "p_status": RunStatus.RUNNING.value,
    }
    state.end_session_transaction()
    try:
        with driver.transaction(db.engine) as tx:
            row = tx.first(_LOAD, {"p_id": schedule_id})
            if row is None or (backfill_id and _backfill_status(tx, backfill_id) != "running"):
                tx.rollback()
                return "gone"
            name, payload, timeout_seconds, own_overlap, workflow_id, task, limit, concurrency, threshold = row
            policy = overlap or own_overlap
            to_stop: list[str] = []
            if collisions.another_is_running(tx, schedule_id):
                if policy == OverlapPolicy.CANCEL_OTHER:
                    to_stop = collisions.cancel_others(tx, schedule_id, nominal, now)
                elif waits_for_running(policy):
                    tx.rollback()
                    return "wait"
                elif policy != OverlapPolicy.ALLOW_ALL:
                    return _record_skipped(tx, values, "overlap", f"a run of the schedule was going ({trigger})")
            if limit is not None:
                waits = concurrency != ConcurrencyPolicy.SKIP.value
                if collisions.workflow_is_full(tx, workflow_id, limit, schedule_id, nominal, in_order=False):
                    if waits:
                        tx.rollback()
                        return "wait"
                    return _record_skipped(tx, values, "concurrency", f"its workflow had {limit} runs going")
                values["p_now"] = max(now, clock.utcnow())  # the slot is ours from here (see state.claim_tick)
            if threshold is not None:
                why = breaker.admit(tx, workflow_id, run_id, now)
                if why is not None:
                    return _record_skipped(tx, values, "breaker", why)
            tx.execute(_INSERT_RUN, values)
    except IntegrityError:  # this run has started before (a copy of its job): nothing more to do
        return "gone"
    return Started(task, name, payload, timeout_seconds, tuple(to_stop))


def _record_skipped(tx: driver.Transaction, values: dict[str, Any], reason: str, why: str) -> str:
    gap = Gap(values["p_scheduled_for"], values["p_scheduled_for"], 1)
    tx.after_commit.append(lambda: metrics.ticks_not_run(RunStatus.SKIPPED.value, reason, 1))
    tx.execute(_INSERT_RUN, {**values, "p_status": RunStatus.SKIPPED.value, "p_finished_at": values["p_now"],
                             "p_error": f"{collisions.gap_text(reason, gap)}: {why}", "p_reason": reason,
                             "p_ticks": 1})
    return RunStatus.SKIPPED.value


def _backfill_status(tx: driver.Transaction, backfill_id: str) -> str | None:
    row = tx.first(_BACKFILL_STATUS, {"p_id": backfill_id})
    return row[0] if row else None


_ADVANCE_BACKFILL = driver.Statement(
    update(_BACKFILLS)
    .where((_BACKFILLS.c.id == bindparam("p_id")) & (_BACKFILLS.c.status == "running")
           & (_BACKFILLS.c.started == bindparam("p_started")))
    .values(started=bindparam("p_started") + 1)
    .returning(_BACKFILLS.c.schedule_id, _BACKFILLS.c.times, _BACKFILLS.c.total, _BACKFILLS.c.overlap)
)
_FINISH_BACKFILL = driver.Statement(
    update(_BACKFILLS)
    .where((_BACKFILLS.c.id == bindparam("p_id")) & (_BACKFILLS.c.status == "running"))
    .values(status="done", finished_at=bindparam("p_now", type_=UTCDateTime()))
)


def start_backfill(backfill_id: str) -> None:
    """Start a backfill's first run (or, with overlap allow_all, all of them at once)."""
    backfill = db.session.get(Backfill, backfill_id)
    if backfill is None:
        return
    timeout = _timeout_of(backfill.schedule_id) or 600
    times = [datetime.fromisoformat(t) for t in backfill.times]
    at_once = backfill.overlap == OverlapPolicy.ALLOW_ALL
    db.session.rollback()
    for index, nominal in enumerate(times if at_once else times[:1]):
        enqueue(backfill.schedule_id, backfill_run_id(backfill_id, index), nominal, RunTrigger.BACKFILL.value,
                backfill.overlap or OverlapPolicy.BUFFER_ALL.value, timeout, backfill_id)


def backfill_run_id(backfill_id: str, index: int) -> str:
    """Each nominal time of a backfill has one run ID, whoever enqueues it, however often."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"recur-backfill:{backfill_id}:{index}"))


def continue_backfill(backfill_id: str, now: datetime) -> None:
    """After one of a backfill's runs ended: start the next (one at a time), or mark the backfill done."""
    state.end_session_transaction()
    backfill = db.session.get(Backfill, backfill_id, populate_existing=True)
    if backfill is None or backfill.status != "running":
        db.session.rollback()
        return
    started = backfill.started
    db.session.rollback()
    with driver.transaction(db.engine) as tx:
        row = tx.first(_ADVANCE_BACKFILL, {"p_id": backfill_id, "p_started": started})
        if row is None:
            tx.rollback()
            return
        schedule_id, times, total, overlap = row
        if started + 1 >= total:
            tx.execute(_FINISH_BACKFILL, {"p_id": backfill_id, "p_now": now})
    if started + 1 < total and overlap != OverlapPolicy.ALLOW_ALL:
        timeout = _timeout_of(schedule_id) or 600
        index = started + 1
        enqueue(schedule_id, backfill_run_id(backfill_id, index), datetime.fromisoformat(times[index]),
                RunTrigger.BACKFILL.value, overlap or OverlapPolicy.BUFFER_ALL.value, timeout, backfill_id)


def list_running(schedule_id: str, run_id: str, job: str, now: datetime) -> None:
    get_redis().hset(OUTSIDE_KEY, run_id, f"{schedule_id} {job} {now.timestamp():.0f}")


def unlist(run_id: str) -> None:
    get_redis().hdel(OUTSIDE_KEY, run_id)


def reap(now: datetime, grace: timedelta) -> list[str]:
    """The reconciler's part: write off outside runs whose worker died (their lease lapsed), and forget
    entries whose run has ended or never started. Returns the run IDs written off."""
    from app.chain.leases import run_lease_key

    redis = get_redis()
    listed: Any = redis.hgetall(OUTSIDE_KEY)
    entries = {k.decode(): v.decode().split(" ") for k, v in listed.items()}
    written_off: list[str] = []
    for run_id, (schedule_id, _job, listed_at) in entries.items():
        if redis.exists(run_lease_key(schedule_id, run_id)):
            continue
        run = db.session.get(Run, run_id, populate_existing=True)
        status, started_at = (run.status, run.started_at) if run is not None else (None, None)
        backfill_id = run.backfill_id if run is not None else None
        db.session.rollback()
        if status == RunStatus.RUNNING.value and started_at is not None and now - started_at >= grace:
            state.finish_run(run_id, RunStatus.FAILED, "worker_lost: its worker stopped renewing the lease", now)
            written_off.append(run_id)
            redis.hdel(OUTSIDE_KEY, run_id)
            if backfill_id:
                continue_backfill(backfill_id, now)
        elif status not in (None, RunStatus.RUNNING.value) or (
                status is None and now.timestamp() - float(listed_at) > grace.total_seconds() * 4):
            redis.hdel(OUTSIDE_KEY, run_id)  # ended, or its job died before its row was written
    return written_off
