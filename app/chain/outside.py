"""Runs outside the chain: a manual trigger and the runs of a backfill.

Each is its own RQ job (ID `recur-run-{run_id}-w{attempt}`), never a link: it takes no tick of the
chain, does not count against total_repeats and leaves next_run_at alone. Its Run row, keyed by the
run's own ID, is inserted when it starts, so a job that runs twice (a retried request, a copy) starts
one run. The overlap policy (the schedule's, or the one the request gave) and the workflow's
concurrency limit apply as they do to a tick. A run that must wait is parked (WAITING_KEY, oldest first)
and its job ends: parked runs cost Redis nothing while they wait, and one pass at a time (start_waiting:
the background loop's, once a second, and one after each outside run ends) starts those that now may,
in order, each as its next attempt. So waiting costs a bounded number of Redis commands a second however
many runs wait. Runs that have started are listed in Redis (OUTSIDE_KEY) with their job IDs, so that
cancel_other can stop them and the reconciler can write off one whose worker died; runs whose job is
queued but not started yet are listed in QUEUED_KEY, so that the reconciler can tell a backfill whose
next run is on its way from one whose next run was lost.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app, has_app_context
from redis.client import Pipeline
from redis.exceptions import RedisError
from rq import get_current_job
from rq.job import Job
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from app import clock, logs, metrics, rawsql
from app.chain import concurrency, gaps, rows, running, workflow_breaker
from app.chain.finish import finish_run
from app.chain.ids import outside_job_id
from app.chain.leases import Lease
from app.chain.running import OUTSIDE_KEY, list_running
from app.extensions import db, get_queue, get_redis
from app.models import Backfill, ConcurrencyPolicy, Run, RunStatus, RunTrigger, ScheduledJob, UTCDateTime, Workflow
from app.policies import Gap, OverlapPolicy
from app.policies.overlap import waits_for_running
from app.tasks import TaskEvent

log = logging.getLogger(__name__)

QUEUED_KEY = "recur:outside-queued"  # hash: run ID -> "schedule_id job_id" from its enqueue until it starts
WAITING_KEY = "recur:outside-waiting"  # sorted set: run ID, scored by when it began to wait (epoch seconds)
WAITING_ARGS_KEY = "recur:outside-waiting-args"  # hash: run ID -> what its next job needs (JSON)
WAITING_LOCK = "recur:outside-waiting-lock"
WAITING_PASS_SECONDS = 1.0  # how often the background loop looks for parked runs that may start
WAITING_BATCH = 200  # the oldest parked runs one pass considers
OUTSIDE_FUNC = "app.chain.outside.run_outside"
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_RUNS = Run.__table__
_SCHEDULES = ScheduledJob.__table__
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
))
_BACKFILL_STATUS = rawsql.Statement(select(_BACKFILLS.c.status).where(_BACKFILLS.c.id == bindparam("p_id")))


def job_id(run_id: str, attempt: int) -> str:
    return outside_job_id(run_id, attempt)


def enqueue(schedule_id: str, run_id: str, scheduled_for: datetime, trigger: str, overlap: str | None,
            timeout_seconds: int, backfill_id: str | None = None, attempt: int = 0,
            waiting_since: float | None = None, pipeline: Pipeline | None = None) -> str:
    """Put the job of an outside run on the queue and list it in QUEUED_KEY; returns its job ID. With
    `pipeline`, only adds to it (the caller executes it)."""
    queue = get_queue()
    kwargs = {"schedule_id": schedule_id, "run_id": run_id, "scheduled_for": scheduled_for.isoformat(),
              "trigger": trigger, "overlap": overlap, "backfill_id": backfill_id, "attempt": attempt,
              "waiting_since": waiting_since}
    job = job_id(run_id, attempt)
    options: dict[str, Any] = {
        "job_id": job, "job_timeout": timeout_seconds + 60,
        "result_ttl": current_app.config["RECUR_LINK_RESULT_TTL"],
        "description": f"recur {trigger} run {run_id} of {schedule_id} for {scheduled_for.isoformat()}",
    }
    pipe = pipeline if pipeline is not None else get_redis().pipeline()
    queue.enqueue(OUTSIDE_FUNC, kwargs=kwargs, pipeline=pipe, **options)
    pipe.hset(QUEUED_KEY, run_id, f"{schedule_id} {job}")
    if pipeline is None:
        pipe.execute()
    return job


@dataclass(frozen=True)
class Started:
    task: str
    name: str
    payload: Any
    timeout_seconds: int
    to_stop: tuple[str, ...]


def run_outside(schedule_id: str, run_id: str, scheduled_for: str, trigger: str, overlap: str | None,
                backfill_id: str | None, attempt: int, waiting_since: float | None = None) -> str:
    """Entry point of the RQ job."""
    nominal = datetime.fromisoformat(scheduled_for)
    if has_app_context():
        return _run(schedule_id, run_id, nominal, trigger, overlap, backfill_id, attempt, waiting_since)
    from app.chain.link import _app

    with _app().app_context():
        return _run(schedule_id, run_id, nominal, trigger, overlap, backfill_id, attempt, waiting_since)


def _run(schedule_id: str, run_id: str, nominal: datetime, trigger: str, overlap: str | None,
         backfill_id: str | None, attempt: int, waiting_since: float | None) -> str:
    job = get_current_job()
    worker = job.worker_name if job is not None else None
    this_job = job.id if job is not None else job_id(run_id, attempt)
    logs.bind(schedule_id=schedule_id, run_id=run_id, repeat=None, retry=None, worker=worker)
    try:
        now = clock.utcnow()
        with get_redis().pipeline() as pipe:  # listed before the row exists: see reap()
            list_running(schedule_id, run_id, this_job, now, pipe)
            pipe.hdel(QUEUED_KEY, run_id)
            pipe.execute()
        started = _start(schedule_id, run_id, nominal, trigger, overlap, backfill_id, now, worker)
        if isinstance(started, str):
            if started == "wait":
                since = waiting_since if waiting_since is not None else now.timestamp()
                _park(_Parked(run_id, schedule_id, nominal.isoformat(), trigger, overlap, backfill_id, attempt,
                              since))
                return "waiting"
            get_redis().hdel(OUTSIDE_KEY, run_id)
            if started == RunStatus.SKIPPED.value and backfill_id:
                continue_backfill(backfill_id, now)
            return started
        if started.to_stop:
            running.stop_jobs(list(started.to_stop))
        return _execute(schedule_id, run_id, nominal, trigger, backfill_id, started)
    finally:
        logs.clear()
        db.session.remove()


@dataclass(frozen=True)
class _Parked:
    """A run that must wait, as WAITING_ARGS_KEY keeps it: what its next job needs."""

    run_id: str
    schedule_id: str
    scheduled_for: str
    trigger: str
    overlap: str | None
    backfill_id: str | None
    attempt: int
    since: float  # when it first had to wait: its place in the line, kept across attempts

    def dumps(self) -> str:
        return json.dumps({k: v for k, v in self.__dict__.items() if k != "run_id"})

    @classmethod
    def loads(cls, run_id: str, raw: bytes) -> _Parked:
        return cls(run_id=run_id, **json.loads(raw))


def _park(parked: _Parked) -> None:
    """One transaction: in the line (a copy of a run already there keeps the first place), its arguments,
    and no longer listed as starting. The job that parked it then ends."""
    with get_redis().pipeline() as pipe:
        pipe.zadd(WAITING_KEY, {parked.run_id: parked.since}, nx=True)
        pipe.hset(WAITING_ARGS_KEY, parked.run_id, parked.dumps())
        pipe.hdel(OUTSIDE_KEY, parked.run_id)
        pipe.execute()


def start_waiting() -> list[str]:
    """Start the parked runs that may start now, oldest first; returns their run IDs.

    One process at a time (WAITING_LOCK); a process that finds the line empty or the lock held does
    nothing more. The decision is read from the database without locking anything: the started job
    decides again in its own transaction (_start), and a run that still must wait goes back to its place.
    Redis commands: one to look at the line; with runs parked, four more and one pipeline of the starts.
    """
    redis = get_redis()
    heads: list[bytes] = redis.zrange(WAITING_KEY, 0, WAITING_BATCH - 1)  # type: ignore[assignment]
    if not heads:
        return []
    token = uuid.uuid4().hex
    if not redis.set(WAITING_LOCK, token, nx=True, px=10_000):
        return []
    try:
        run_ids = [head.decode() for head in heads]
        raw: list[bytes | None] = redis.hmget(WAITING_ARGS_KEY, run_ids)  # type: ignore[assignment]
        parked = [_Parked.loads(run_id, args) for run_id, args in zip(run_ids, raw, strict=True) if args]
        to_start, timeouts, gone = _may_start(parked, _in_flight(redis))
        with redis.pipeline() as pipe:
            for run in to_start:
                enqueue(run.schedule_id, run.run_id, datetime.fromisoformat(run.scheduled_for), run.trigger,
                        run.overlap, timeouts[run.schedule_id], run.backfill_id, run.attempt + 1, run.since, pipe)
            done = [run.run_id for run in to_start] + gone + [r for r, args in zip(run_ids, raw, strict=True)
                                                                if not args]
            if done:
                pipe.zrem(WAITING_KEY, *done)
                pipe.hdel(WAITING_ARGS_KEY, *done)
            pipe.execute()
        return [run.run_id for run in to_start]
    finally:
        redis.eval(_RELEASE, 1, WAITING_LOCK, token)


def _in_flight(redis: Any) -> dict[str, str]:
    """Outside runs on their way to a row (queued, or starting), by run ID: their schedule IDs. A pass
    counts them as running: a run it started a moment ago may have no row yet."""
    listed: dict[bytes, bytes] = {**redis.hgetall(QUEUED_KEY), **redis.hgetall(OUTSIDE_KEY)}
    return {run_id.decode(): entry.decode().split(" ", 1)[0] for run_id, entry in listed.items()}


def _may_start(parked: list[_Parked], in_flight: dict[str, str]) -> tuple[list[_Parked], dict[str, int], list[str]]:
    """Of parked runs (oldest first), those that may start now by the overlap policy and the concurrency
    limit, each schedule's and each workflow's in order; the timeouts of their schedules; and the run IDs
    to forget (schedule deleted, backfill no longer running). Runs `in_flight` count as running."""
    schedule_ids = sorted({run.schedule_id for run in parked} | set(in_flight.values()))
    backfill_ids = sorted({run.backfill_id for run in parked if run.backfill_id})
    schedules = {row.id: row for row in db.session.execute(
        select(_SCHEDULES.c.id, _SCHEDULES.c.overlap, _SCHEDULES.c.timeout_seconds, _SCHEDULES.c.workflow_id,
               Workflow.max_concurrent_runs, Workflow.concurrency_policy)
        .select_from(_SCHEDULES.join(Workflow.__table__, Workflow.id == _SCHEDULES.c.workflow_id))
        .where(_SCHEDULES.c.id.in_(schedule_ids)))}
    running_backfills = set(db.session.scalars(
        select(_BACKFILLS.c.id).where(_BACKFILLS.c.id.in_(backfill_ids) & (_BACKFILLS.c.status == "running"))))
    workflow_ids = sorted({row.workflow_id for row in schedules.values() if row.max_concurrent_runs is not None})
    # Each running run once, whether the database or Redis (or both) shows it: (run ID, schedule, workflow).
    going = {(run_id, sid, schedules[sid].workflow_id) for run_id, sid in in_flight.items() if sid in schedules}
    going |= {tuple(row) for row in db.session.execute(
        select(_RUNS.c.id, _RUNS.c.schedule_id, _SCHEDULES.c.workflow_id)
        .select_from(_RUNS.join(_SCHEDULES, _RUNS.c.schedule_id == _SCHEDULES.c.id))
        .where((_RUNS.c.schedule_id.in_(schedule_ids) | _SCHEDULES.c.workflow_id.in_(workflow_ids))
               & (_RUNS.c.status == RunStatus.RUNNING.value)))}
    db.session.rollback()
    running = Counter[str](sid for _, sid, _ in going)
    in_workflow = Counter[int](wid for _, _, wid in going)

    to_start: list[_Parked] = []
    gone: list[str] = []
    held_schedules: set[str] = set()
    held_workflows: set[int] = set()
    for run in parked:
        row = schedules.get(run.schedule_id)
        if row is None or (run.backfill_id and run.backfill_id not in running_backfills):
            gone.append(run.run_id)
            continue
        if run.schedule_id in held_schedules or row.workflow_id in held_workflows:
            continue
        policy = run.overlap or row.overlap
        if waits_for_running(policy) and running[run.schedule_id]:
            held_schedules.add(run.schedule_id)
            continue
        limited = row.max_concurrent_runs is not None and row.concurrency_policy != ConcurrencyPolicy.SKIP.value
        if limited and in_workflow[row.workflow_id] >= row.max_concurrent_runs:
            held_workflows.add(row.workflow_id)
            continue
        to_start.append(run)
        running[run.schedule_id] += 1
        in_workflow[row.workflow_id] += 1
    return to_start, {row.id: row.timeout_seconds for row in schedules.values()}, gone


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
        finish_run(run_id, status, error, clock.utcnow())
    get_redis().hdel(OUTSIDE_KEY, run_id)
    if backfill_id:
        continue_backfill(backfill_id, clock.utcnow())
    try:  # a slot may have freed: parked runs need not wait for the next periodic pass
        start_waiting()
    except (RedisError, SQLAlchemyError) as exc:  # the periodic pass will
        log.warning("could not look for parked runs after run %s: %s", run_id, exc)
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
    rows.end_session_transaction()
    try:
        with rawsql.transaction(db.engine) as tx:
            row = tx.first(_LOAD, {"p_id": schedule_id})
            if row is None or (backfill_id and _backfill_status(tx, backfill_id) != "running"):
                tx.rollback()
                return "gone"
            name, payload, timeout_seconds, own_overlap, workflow_id, task, limit, limit_policy, threshold = row
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
                values["p_now"] = max(now, clock.utcnow())  # the slot is ours from here (see app.chain.claim)
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
    rows.end_session_transaction()
    backfill = db.session.get(Backfill, backfill_id, populate_existing=True)
    if backfill is None or backfill.status != "running":
        db.session.rollback()
        return
    started = backfill.started
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
        timeout = _timeout_of(schedule_id) or 600
        index = started + 1
        enqueue(schedule_id, backfill_run_id(backfill_id, index), datetime.fromisoformat(times[index]),
                RunTrigger.BACKFILL.value, overlap or OverlapPolicy.BUFFER_ALL.value, timeout, backfill_id)


_PENDING_JOB = {b"queued", b"scheduled", b"started", b"deferred"}
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
    to_continue = {backfill.id for run_id, (backfill, _) in due.items()
                   if ended.get(run_id) and backfill.overlap != OverlapPolicy.ALLOW_ALL}
    for backfill in backfills:  # allow_all: ends when all its runs ended
        at_once = backfill.overlap == OverlapPolicy.ALLOW_ALL
        if at_once and all(ended.get(backfill_run_id(backfill.id, i)) for i in range(backfill.total)):
            with rawsql.transaction(db.engine) as tx:
                tx.execute(_FINISH_BACKFILL, {"p_id": backfill.id, "p_now": now})
    for backfill_id in to_continue:
        continue_backfill(backfill_id, now)
    rowless = [run_id for run_id in due if run_id not in ended]
    lost = [run_id for run_id, on_its_way in zip(rowless, _on_its_way(redis, rowless), strict=True) if not on_its_way]
    lost_of = {due[run_id][0].schedule_id for run_id in lost}
    timeouts = {sid: timeout for sid, timeout in db.session.execute(
        select(_SCHEDULES.c.id, _SCHEDULES.c.timeout_seconds).where(_SCHEDULES.c.id.in_(lost_of)))} if lost else {}
    db.session.rollback()
    for run_id in lost:
        backfill, index = due[run_id]
        if backfill.schedule_id not in timeouts:
            continue
        enqueue(backfill.schedule_id, run_id, datetime.fromisoformat(backfill.times[index]),
                RunTrigger.BACKFILL.value, backfill.overlap or OverlapPolicy.BUFFER_ALL.value,
                timeouts[backfill.schedule_id], backfill.id, attempt=int(now.timestamp()))
        log.warning("recovery: backfill %s had lost its run %s (time %d of %d); enqueued it again",
                    backfill.id, run_id, index + 1, backfill.total)
    return lost


_FORGET_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""


def forget_lost_jobs() -> int:
    """The reconciler's part: forget QUEUED_KEY entries whose job is gone or ended without starting its
    run (deleted from the queue, or its worker died before it began). Otherwise start_waiting would count
    them as running for ever. Returns how many were forgotten."""
    redis = get_redis()
    listed: dict[bytes, bytes] = redis.hgetall(QUEUED_KEY)  # type: ignore[assignment]
    if not listed:
        return 0
    entries = list(listed.items())
    with redis.pipeline(transaction=False) as pipe:
        for _, entry in entries:
            pipe.hget(f"{Job.redis_job_namespace_prefix}{entry.decode().split(' ')[1]}", "status")
        statuses = pipe.execute()
    forgotten = 0
    for (run_id, entry), status in zip(entries, statuses, strict=True):
        if status not in _PENDING_JOB:
            forgotten += int(redis.eval(_FORGET_IF_SAME, 1, QUEUED_KEY, run_id, entry))
    return forgotten


def _on_its_way(redis: Any, run_ids: list[str]) -> list[bool]:
    """For each run ID without a row: whether a job carries it (queued, scheduled or started), it is
    starting, or it is parked."""
    if not run_ids:
        return []
    with redis.pipeline(transaction=False) as pipe:
        for run_id in run_ids:
            pipe.hget(QUEUED_KEY, run_id)
            pipe.hexists(OUTSIDE_KEY, run_id)
            pipe.zscore(WAITING_KEY, run_id)
        found = pipe.execute()
    queued = [found[3 * i] for i in range(len(run_ids))]
    jobs = [entry.decode().split(" ")[1] for entry in queued if entry]
    with redis.pipeline(transaction=False) as pipe:
        for job in jobs:
            pipe.hget(f"{Job.redis_job_namespace_prefix}{job}", "status")
        statuses = iter(pipe.execute())
    out = []
    for i, entry in enumerate(queued):
        pending = bool(entry) and next(statuses) in _PENDING_JOB
        out.append(pending or bool(found[3 * i + 1]) or found[3 * i + 2] is not None)
    return out


def reap(now: datetime, grace: timedelta, leases_tell: bool = True) -> list[str]:
    """The reconciler's part: write off outside runs whose worker died (their lease lapsed; only when
    `leases_tell`, see app.chain.leases.pulse), and forget entries whose run has ended or never started.
    Returns the run IDs written off."""
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
            if not leases_tell:
                continue
            finish_run(run_id, RunStatus.FAILED, "worker_lost: its worker stopped renewing the lease", now)
            written_off.append(run_id)
            redis.hdel(OUTSIDE_KEY, run_id)
            if backfill_id:
                continue_backfill(backfill_id, now)
        elif status not in (None, RunStatus.RUNNING.value) or (
                status is None and now.timestamp() - float(listed_at) > grace.total_seconds() * 4):
            redis.hdel(OUTSIDE_KEY, run_id)  # ended, or its job died before its row was written
    return written_off
