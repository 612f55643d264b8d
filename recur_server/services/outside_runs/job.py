"""A run outside the chain as its RQ job: start it in one transaction (the overlap policy, the workflow's
concurrency limit and circuit breaker, then its row), run its task under a lease of its own, record the
outcome; or park it, or record it skipped."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import current_app
from redis.exceptions import RedisError
from rq import get_current_job
from sqlalchemy import bindparam, insert, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from recur_server import metrics
from recur_server.chain import breaker as workflow_breaker
from recur_server.chain import concurrency, gaps, rows, running
from recur_server.chain import follow as followers
from recur_server.chain.attempt import execute_task
from recur_server.chain.finish import finish_run
from recur_server.chain.ids import outside_job_id
from recur_server.chain.leases import Lease
from recur_server.chain.running import list_running
from recur_server.infra import clock, logs, rawsql
from recur_server.infra.extensions import db, get_redis
from recur_server.models import Backfill, ConcurrencyPolicy, Run, RunStatus, RunTrigger, Schedule, UTCDateTime, Workflow
from recur_server.policies import Gap, OverlapPolicy
from recur_server.policies.overlap import waits_for_running
from recur_server.services.outside_runs.backfills import continue_backfill
from recur_server.services.outside_runs.queueing import QUEUED_KEY
from recur_server.services.outside_runs.waiting import Parked, park, start_waiting
from recur_server.tasks import TaskEvent

log = logging.getLogger(__name__)

_RUNS = Run.__table__
_SCHEDULES = Schedule.__table__
_BACKFILLS = Backfill.__table__

_LOAD = rawsql.Statement(
    select(_SCHEDULES.c.name, _SCHEDULES.c.trigger_payload, _SCHEDULES.c.timeout_seconds, _SCHEDULES.c.overlap,
           _SCHEDULES.c.workflow_id, Workflow.task, Workflow.max_concurrent_runs, Workflow.concurrency_policy,
           Workflow.breaker_threshold)
    .select_from(_SCHEDULES.join(Workflow.__table__, Workflow.id == _SCHEDULES.c.workflow_id))
    .where(_SCHEDULES.c.id == bindparam("p_id"))
    .with_for_update(of=_SCHEDULES)
)
_INSERT_RUN = rawsql.Statement(insert(_RUNS).values(
    id=bindparam("p_run_id"), schedule_id=bindparam("p_id"), repeat_number=None, retry_number=0,
    scheduled_for=bindparam("p_scheduled_for", type_=UTCDateTime()), started_at=bindparam("p_now", type_=UTCDateTime()),
    finished_at=bindparam("p_finished_at", type_=UTCDateTime()), status=bindparam("p_status"),
    error=bindparam("p_error"), worker=bindparam("p_worker"), trigger=bindparam("p_trigger"),
    reason=bindparam("p_reason"), ticks=bindparam("p_ticks"), backfill_id=bindparam("p_backfill_id"),
    triggered_by_run_id=bindparam("p_triggered_by"),
))
# After the schedule's row is locked, in a statement of its own (its snapshot is taken once it holds the lock): a
# copy of this run's job that started it first has committed its row by then. Whatever holds a schedule's row
# must not wait on a run's, which a finish locks before its schedule's: an INSERT of an id whose row a finish is
# updating would wait on that finish, and the finish on this transaction.
_STARTED_BEFORE = rawsql.Statement(select(_RUNS.c.id).where(_RUNS.c.id == bindparam("p_run_id")))
_BACKFILL_STATUS = rawsql.Statement(select(_BACKFILLS.c.status).where(_BACKFILLS.c.id == bindparam("p_id")))


@dataclass(frozen=True)
class Started:
    task: str
    name: str
    payload: Any
    timeout_seconds: int
    to_stop: tuple[str, ...]


def run_job(schedule_id: str, run_id: str, nominal: datetime, trigger: str, overlap: str | None,
            backfill_id: str | None, attempt: int, waiting_since: float | None) -> str:
    """The run's job (recur_server.jobs.run_outside): list it as running, start it, run its task; or park it."""
    job = get_current_job()
    worker = job.worker_name if job is not None else None
    this_job = job.id if job is not None else outside_job_id(run_id, attempt)
    logs.bind(schedule_id=schedule_id, run_id=run_id, repeat=None, retry=None, worker=worker)
    try:
        now = clock.utcnow()
        with get_redis().pipeline() as pipe:  # listed before the row exists: see reaper.reap()
            list_running(schedule_id, run_id, this_job, now, pipe)
            pipe.hdel(QUEUED_KEY, run_id)
            pipe.execute()
        started = _start(schedule_id, run_id, nominal, trigger, overlap, backfill_id, now, worker)
        if isinstance(started, str):
            if started == "wait":
                since = waiting_since if waiting_since is not None else now.timestamp()
                park(Parked(run_id, schedule_id, nominal.isoformat(), trigger, overlap, backfill_id, attempt,
                            since))
                return "waiting"
            running.unlist(run_id)
            if started == RunStatus.SKIPPED.value and backfill_id:
                continue_backfill(backfill_id, run_id, now)
            return started
        if started.to_stop:
            running.stop_jobs(list(started.to_stop))
        return _execute(schedule_id, run_id, nominal, trigger, backfill_id, started)
    finally:
        logs.clear()
        db.session.remove()


def record_death(kwargs: dict[str, Any], worker: str, reason: str, now: datetime) -> bool:
    """The worker saw the work process of this run's job die (a signal, an exit, the OOM killer): the run it
    started there fails at once, with the cause, rather than when its lease lapses (the reconciler's
    `worker_lost`, seconds later and wrong: the worker is alive). Only a run this worker started and that is
    still running (a copy of the job that found it started, or a run cancelled meanwhile, is left as it is);
    finishing is a compare-and-set, so it is recorded once. True when it recorded the run."""
    run_id = kwargs["run_id"]
    run = db.session.get(Run, run_id, populate_existing=True)
    mine = run is not None and run.status == RunStatus.RUNNING.value and run.worker == worker
    db.session.rollback()
    if not mine or finish_run(run_id, RunStatus.FAILED, reason, now) is None:
        return False
    _ended(run_id, kwargs.get("backfill_id"), now)
    log.warning("%s run %s failed: %s", kwargs.get("trigger"), run_id, reason)
    return True


def _execute(schedule_id: str, run_id: str, nominal: datetime, trigger: str, backfill_id: str | None,
             started: Started) -> str:
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
        status, error, captured = execute_task(started.task, event, started.timeout_seconds)
        finish_run(run_id, status, error, clock.utcnow(), captured=captured)
    _ended(run_id, backfill_id, clock.utcnow())
    log.info("%s run %s %s", trigger, run_id, status.value)
    return status.value


def _ended(run_id: str, backfill_id: str | None, now: datetime) -> None:
    """After a run's outcome is recorded: no longer listed as running, its backfill goes on, and parked runs
    are looked at (a slot may have freed: they need not wait for the next periodic pass)."""
    running.unlist(run_id)
    if backfill_id:
        continue_backfill(backfill_id, run_id, now)
    try:
        start_waiting()
    except (RedisError, SQLAlchemyError) as exc:  # the periodic pass will
        log.warning("could not look for parked runs after run %s: %s", run_id, exc)


def _start(schedule_id: str, run_id: str, nominal: datetime, trigger: str, overlap: str | None,
           backfill_id: str | None, now: datetime, worker: str | None) -> Started | str:
    """One transaction: the overlap policy and the concurrency limit, then the run's row. Returns the run
    to execute, or what happened instead: "gone", "wait", or "skipped" (recorded)."""
    values: dict[str, Any] = {
        "p_id": schedule_id, "p_run_id": run_id, "p_scheduled_for": nominal, "p_now": now, "p_worker": worker,
        "p_trigger": trigger, "p_backfill_id": backfill_id, "p_finished_at": None, "p_error": None,
        "p_reason": None, "p_ticks": None, "p_status": RunStatus.RUNNING.value, "p_triggered_by": None,
    }
    rows.end_session_transaction()
    try:
        with rawsql.transaction(db.engine) as tx:
            row = tx.first(_LOAD, {"p_id": schedule_id})
            if row is None or (backfill_id and _backfill_status(tx, backfill_id) != "running"):
                tx.rollback()
                return "gone"
            if tx.first(_STARTED_BEFORE, {"p_run_id": run_id}) is not None:  # a copy of its job started it
                tx.rollback()
                return "gone"
            name, payload, timeout_seconds, own_overlap, workflow_id, task, limit, limit_policy, threshold = row
            if trigger == RunTrigger.AFTER.value:  # the upstream run that triggered it (recur_server.chain.follow)
                upstream = tx.first(followers.UPSTREAM_OF_RUN, {"p_run_id": run_id})
                values["p_triggered_by"] = upstream[0] if upstream else None
            policy = overlap or own_overlap
            to_stop: list[str] = []
            if concurrency.another_is_running(tx, schedule_id):
                if policy == OverlapPolicy.CANCEL_OTHER:
                    to_stop = concurrency.cancel_others(tx, schedule_id, nominal, now)
                elif waits_for_running(policy):
                    tx.rollback()
                    return "wait"
                elif policy != OverlapPolicy.ALLOW_ALL:
                    return _record_skipped(tx, values, "overlap", f"a run of the schedule was going ({trigger})")
            if limit is not None:
                waits = limit_policy != ConcurrencyPolicy.SKIP.value
                if concurrency.workflow_is_full(tx, workflow_id, limit, schedule_id, nominal, in_order=False):
                    if waits:
                        tx.rollback()
                        return "wait"
                    return _record_skipped(tx, values, "concurrency", f"its workflow had {limit} runs going")
                values["p_now"] = max(now, clock.utcnow())  # the slot is ours from here (see recur_server.chain.claim)
            if threshold is not None:
                why = workflow_breaker.admit(tx, workflow_id, run_id, now)
                if why is not None:
                    return _record_skipped(tx, values, "breaker", why)
            tx.execute(_INSERT_RUN, values)
    except IntegrityError:  # this run has started before (a copy of its job): nothing more to do
        return "gone"
    return Started(task, name, payload, timeout_seconds, tuple(to_stop))


def _record_skipped(tx: rawsql.Transaction, values: dict[str, Any], reason: str, why: str) -> str:
    gap = Gap(values["p_scheduled_for"], values["p_scheduled_for"], 1)
    tx.after_commit.append(lambda: metrics.ticks_not_run(RunStatus.SKIPPED.value, reason, 1))
    tx.execute(_INSERT_RUN, {**values, "p_status": RunStatus.SKIPPED.value, "p_finished_at": values["p_now"],
                             "p_error": f"{gaps.gap_text(reason, gap)}: {why}", "p_reason": reason,
                             "p_ticks": 1})
    return RunStatus.SKIPPED.value


def _backfill_status(tx: rawsql.Transaction, backfill_id: str) -> str | None:
    row = tx.first(_BACKFILL_STATUS, {"p_id": backfill_id})
    return row[0] if row else None
