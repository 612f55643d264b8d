"""The RQ job behind every link: fence, claim, run the task, record, commit, hand off the successor.

In-process (SimpleWorker, or any RQ worker) run_link does all of it. The forking RecurWorker splits it:
prepare() and complete() run in the worker process around the fork, and the work horse only executes.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from flask import Flask, current_app, has_app_context
from redis.client import Pipeline
from rq import get_current_job
from rq.timeouts import JobTimeoutException

from app import clock, logs, rawsql
from app.chain import claim as claims
from app.chain import concurrency, running
from app.chain.finish import finish_run
from app.chain.handoff import hand_off, hand_off_plans
from app.chain.ids import link_id
from app.chain.leases import Lease
from app.chain.links import LinkPlan
from app.chain.timeouts import TaskTimer
from app.extensions import db, get_redis
from app.models import RunStatus, ScheduledJob
from app.tasks import TaskEvent, execution_log, get_task, idempotency_key

log = logging.getLogger(__name__)

# A link that arrives earlier than this (by the cluster clock) is logged: Recur's mover never moves one early.
EARLY_WARNING_SECONDS = 2.0
# A finish the database refused is tried again after this, doubling up to the max, until the run's deadline.
FINISH_RETRY_FIRST_SECONDS = 0.1
FINISH_RETRY_MAX_SECONDS = 2.0

_fallback_app: Flask | None = None


def run_link(schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: str) -> str:
    """Entry point of the RQ job. Returns what happened, for `rq info` and the logs."""
    if has_app_context():
        return _run_closed(schedule_id, revision, repeat, retry, datetime.fromisoformat(scheduled_for))
    with _app().app_context():
        return _run_closed(schedule_id, revision, repeat, retry, datetime.fromisoformat(scheduled_for))


def _run_closed(schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime) -> str:
    try:
        return _run(schedule_id, revision, repeat, retry, scheduled_for)
    finally:
        # An in-process worker keeps its session between links: leave no transaction (on SQLite, a
        # write lock that every other process would wait for) open behind this one.
        db.session.remove()


def _app() -> Flask:
    """Workers started by worker.py run links inside its app; a bare `rq worker` gets one built here."""
    global _fallback_app
    if _fallback_app is None:
        from app import create_app

        _fallback_app = create_app()
    return _fallback_app


@dataclass
class Prepared:
    """A claimed tick whose lease is held: what is left is to run the task and complete the run."""

    claim: claims.Claim
    lease: Lease
    event: TaskEvent
    # On clock.monotonic(): the task's timeout plus the grace after the claim. Past it, a forking worker
    # kills the work horse, and the lease is no longer renewed (so a task that cannot be killed, in a
    # simple worker, gets its run written off by the reconciler).
    deadline: float


def prepare(schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime,
            worker_name: str | None, along: Callable[[Pipeline], object] | None = None) -> Prepared | str:
    """Wait for the nominal time if early, claim the tick, then take the schedule's lease.

    Returns the claimed tick, or the outcome when there is nothing to run ("stale", "skipped"). Once the
    tick is claimed, `along` adds the caller's Redis writes to the lease's round trip (the worker's RQ
    bookkeeping); it is not called when there is nothing to run, unless the link had to wait for its time
    (then they are written before the wait).
    """
    logs.bind(schedule_id=schedule_id, repeat=repeat, retry=retry, worker=worker_name, run_id=None)
    now = clock.utcnow()  # the cluster clock: the claim's time is the run's started_at and plans the next tick
    early = (scheduled_for - now).total_seconds()
    if early > 0:
        if along is not None:  # the caller's writes do not wait: an RQ worker's must precede a long wait
            with get_redis().pipeline() as pipe:
                along(pipe)
                pipe.execute()
            along = None
        now = _wait_until(scheduled_for, early, f"{schedule_id} n{repeat} rc{retry}")

    # The fence first, then the lease: a copy of the link that loses the fence never touches the lease, so
    # it cannot make the real link's run look like an overlap. (One round trip after the claim's commit.)
    claim = claims.claim_tick(schedule_id, revision, repeat, retry, scheduled_for, now, worker_name)
    if claim is None:
        logs.clear()
        return "stale"
    if not isinstance(claim, claims.Claim):
        logs.clear()
        return _not_run(claim, schedule_id, revision, repeat, retry, scheduled_for, now)
    if claim.detached:  # listed like an outside run: cancel_other can stop it, the reconciler reap it
        running.list_running(schedule_id, claim.run_id, link_id(schedule_id, repeat, retry), now)
    if claim.successor is not None:
        hand_off(claim.successor)
    if claim.to_stop:
        running.stop_jobs(list(claim.to_stop))
    logs.bind(run_id=claim.run_id)
    config = current_app.config
    deadline = clock.monotonic() + claim.timeout_seconds + config["RECUR_TIMEOUT_GRACE_SECONDS"]
    lease = Lease(get_redis(), schedule_id, claim.run_id, config["RECUR_LEASE_SECONDS"], deadline,
                  per_run=claim.detached)
    other = lease.acquire(along)
    if other is not None:
        # A run of this schedule that was written off is still alive: record this tick as skipped.
        skipped = finish_run(claim.run_id, RunStatus.SKIPPED, f"overlap: run {other} still running", now)
        if skipped is not None:
            hand_off(skipped)
        logs.clear()
        return RunStatus.SKIPPED.value

    event: TaskEvent = {
        "scheduled_job_id": schedule_id,
        "scheduled_job_name": claim.name,
        "repeat_number": repeat,
        "retry_number": retry,
        "scheduled_for": (claim.nominal or scheduled_for).isoformat(),
        "payload": claim.payload if claim.payload is not None else {},
        "idempotency_key": idempotency_key(schedule_id, repeat),
    }
    return Prepared(claim, lease, event, deadline)


def _not_run(outcome: claims.Passed | claims.Wait, schedule_id: str, revision: int, repeat: int, retry: int,
             scheduled_for: datetime, now: datetime) -> str:
    """A tick the policies did not let run: passed by (recorded, the chain moved on), or deferred (the same
    tick comes back under the next repeat number, DEFER_SECONDS later)."""
    if isinstance(outcome, claims.Passed):
        if outcome.schedule is not None:
            hand_off(outcome.schedule)
        return outcome.outcome
    deferred = concurrency.defer_tick(schedule_id, revision, repeat, retry, now, outcome.why)
    if deferred is None:
        return "stale"
    hand_off_plans([LinkPlan(schedule_id, revision, deferred.repeat, retry, scheduled_for, concurrency.later(now),
                             deferred.timeout_seconds)])
    return "deferred"


def _wait_until(scheduled_for: datetime, early: float, name: str) -> datetime:
    """Wait until the nominal time by the cluster clock; returns the time to claim with.

    Moved by Recur's mover, a link is not early: only another mover (RQ's own scheduler, a requeue by hand)
    or a jump of the cluster clock (a Redis failover) brings one early. It waits rather than being dropped:
    put back under its own ID, it would be marked finished and expired by RQ once this job returns.
    """
    if early > EARLY_WARNING_SECONDS:
        log.warning("link %s arrived %.1fs early by the cluster clock; it waits for its time", name, early)
    time.sleep(early)
    # The cluster clock runs on the monotonic clock between reads: unless a re-read moved it back, the time
    # has come. If it did, the reading taken before the wait, carried forward, decides.
    return max(clock.utcnow(), scheduled_for)


def execute(prepared: Prepared) -> tuple[RunStatus, str | None]:
    return execute_task(prepared.claim.task, prepared.event, prepared.claim.timeout_seconds)


def complete(prepared: Prepared, status: RunStatus, error: str | None,
             along: Callable[[Pipeline], object] | None = None) -> str:
    """Record the outcome and commit, then in one round trip release the lease and hand off the successor
    (each is one atomic script; they need not be atomic together, so no MULTI/EXEC around them). `along`
    adds the caller's own writes to that round trip (the worker's return to idle)."""
    with prepared.lease:  # released even if recording fails past the deadline (then the run is written off)
        schedule = _record_outcome(prepared, status, error)
        with get_redis().pipeline(transaction=False) as pipe:
            prepared.lease.release(pipe)
            if schedule is not None:
                hand_off(schedule, pipeline=pipe)
            if prepared.claim.detached:
                running.unlist(prepared.claim.run_id, pipe)
            if along is not None:
                along(pipe)
            pipe.execute()
    log.info("run %s %s", prepared.claim.run_id, status.value)
    logs.clear()
    return status.value


def _record_outcome(prepared: Prepared, status: RunStatus, error: str | None) -> ScheduledJob | None:
    """Commit the run's outcome, retrying while the database is away (a restart, a failover, a stall) with
    the lease still held and renewed, until the run's deadline: a task that succeeded is never recorded
    as failed, nor run again, because the database blinked as it ended (DESIGN 15). Past the deadline
    the error goes up; the lease is then released and the reconciler writes the run off.

    A commit whose answer was lost may have landed: the retry then finds the run finished already and
    hands off nothing, and the reconciler puts back the successor link within a pass."""
    finished_at = clock.utcnow()
    wait = FINISH_RETRY_FIRST_SECONDS
    while True:
        try:
            return finish_run(prepared.claim.run_id, status, error, finished_at, prepared.claim.schedule_id)
        except Exception as exc:
            if not rawsql.unavailable(exc, db.engine) or clock.monotonic() + wait >= prepared.deadline:
                raise
            log.warning("run %s ended %s but its outcome could not be recorded (%s); retrying in %.1fs with its "
                        "lease held", prepared.claim.run_id, status.value, type(exc).__name__, wait)
            time.sleep(wait)
            wait = min(wait * 2, FINISH_RETRY_MAX_SECONDS)


def _run(schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime) -> str:
    handed = _handed
    job = get_current_job()
    if handed is not None and job is not None and handed.job_id == job.id:
        return handed.run_in_horse()
    prepared = prepare(schedule_id, revision, repeat, retry, scheduled_for, job.worker_name if job else None)
    if isinstance(prepared, str):
        return prepared
    with prepared.lease:
        status, error = execute(prepared)
        return complete(prepared, status, error)


class Handed:
    """A link the forking worker prepared (claimed, lease taken) before forking its work horse.

    The horse only runs the task and reports the outcome through a pipe; the worker, whose database and
    Redis connections are warm, records it and hands off. A horse forked from a parent that died on the
    way keeps the lease renewed and completes the run itself.
    """

    def __init__(self, job_id: str, prepared: Prepared | str, forks: bool = True) -> None:
        self.job_id = job_id
        self.prepared = prepared
        self.parent_pid = os.getpid()
        # The horse reports through a pipe; the pool worker runs run_in_horse itself and keeps the outcome.
        self._read, self._write = os.pipe() if forks else (-1, -1)
        if forks:
            os.set_blocking(self._read, False)
        self._outcome: tuple[RunStatus, str | None] | None = None
        self.overran = False  # the worker killed the horse at the deadline
        self.death: str | None = None  # how the horse died, when it did

    @property
    def deadline(self) -> float | None:
        return self.prepared.deadline if isinstance(self.prepared, Prepared) else None

    def run_in_horse(self) -> str:
        prepared = self.prepared
        if isinstance(prepared, str):
            return prepared
        if os.getpid() == self.parent_pid:  # the pool worker: the worker runs this, its work process the task
            assert _pool_executor is not None
            status, error = _pool_executor(prepared)
            self._outcome = (status, error)
            return status.value
        prepared.lease.renew_here()  # so that a horse whose worker died is not written off while it runs
        with prepared.lease:
            status, error = execute(prepared)
            if os.getppid() != self.parent_pid:
                log.warning("worker %s is gone; run %s completes in its work horse", self.parent_pid,
                            prepared.claim.run_id)
                return complete(prepared, status, error)
            os.write(self._write, json.dumps([status.value, error]).encode())
            prepared.lease.forget()  # the worker releases it once the outcome is recorded
        return status.value

    def final_outcome(self) -> tuple[RunStatus, str | None]:
        """In the worker, once the horse has exited: what it reported, or else how it ended."""
        reported = self.outcome()
        if reported is not None:
            return reported
        if self.overran and isinstance(self.prepared, Prepared):
            stopped = "the task did not stop, so its work process was killed"
            return RunStatus.TIMED_OUT, f"timed out after {self.prepared.claim.timeout_seconds}s; {stopped}"
        return RunStatus.FAILED, self.death or "work process ended without reporting an outcome"

    def outcome(self) -> tuple[RunStatus, str | None] | None:
        """In the worker, once the horse has exited: what it reported, or None if it reported nothing."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
            chunks = []
            try:  # non-blocking: a process the task forked may still hold the write end
                while chunk := os.read(self._read, 65536):
                    chunks.append(chunk)
            except BlockingIOError:
                pass
            if chunks:
                status, error = json.loads(b"".join(chunks))
                self._outcome = (RunStatus(status), error)
        return self._outcome

    def close(self) -> None:
        for fd in (self._read, self._write):
            if fd >= 0:
                os.close(fd)
        self._read = self._write = -1


# Set by the forking worker around the fork of the work horse for that job (the horse inherits it).
_handed: Handed | None = None
# Set by the pool worker: runs a prepared link's task in its persistent work process.
_pool_executor: Callable[[Prepared], tuple[RunStatus, str | None]] | None = None


def use_pool(executor: Callable[[Prepared], tuple[RunStatus, str | None]] | None) -> None:
    global _pool_executor
    _pool_executor = executor


def hand_to_horse(handed: Handed | None) -> None:
    global _handed
    _handed = handed


def handed_for(job_id: str) -> Handed | None:
    return _handed if _handed is not None and _handed.job_id == job_id else None


def execute_task(task_name: str, event: TaskEvent, timeout_seconds: int) -> tuple[RunStatus, str | None]:
    """Run one attempt under its timeout; every way a task can end becomes an outcome, never an exception.

    A task that ran into its timeout is timed out, even if it caught the exception and returned. Whatever
    else it raises, KeyboardInterrupt, SystemExit or any other BaseException included, fails the attempt
    with that error; the worker goes on to its next job.
    """
    fn = get_task(task_name)
    if fn is None:
        return RunStatus.FAILED, f"unknown task {task_name!r}"
    timer = TaskTimer(timeout_seconds)
    error: str | None = None
    try:
        with timer:
            execution_log.record_start(event)  # a failure to write it fails the attempt before its body
            fn(event)
    except JobTimeoutException:  # RQ's own job timeout, the outer limit
        return RunStatus.TIMED_OUT, f"timed out after {timeout_seconds}s"
    except BaseException as exc:  # a task's own failure, whatever it raised (TaskTimeout: see below)
        error = f"{type(exc).__name__}: {exc}"[:2000]
    if timer.expired:
        return RunStatus.TIMED_OUT, f"timed out after {timeout_seconds}s"
    if error is not None:
        return RunStatus.FAILED, error
    execution_log.record_success(event)
    return RunStatus.SUCCEEDED, None
