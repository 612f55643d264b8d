"""A link's run, around its task: prepare (wait for the nominal time, claim the tick, take the schedule's
lease), execute the task, complete (record the outcome and commit, then release the lease and hand off).

In-process (SimpleWorker, or any RQ worker) the link's job does all of it. The forking and pool workers
split it: prepare() and complete() run in the worker process, and the task in the work horse or the
work process (recur_server.workers.horse).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from flask import current_app
from redis.client import Pipeline

from recur_server.chain import claim as claims
from recur_server.chain import concurrency, running
from recur_server.chain.attempt import Attempted, execute_task
from recur_server.chain.capture import Captured
from recur_server.chain.finish import finish_run, finished_as
from recur_server.chain.handoff import hand_off, hand_off_plans
from recur_server.chain.ids import link_id
from recur_server.chain.leases import Lease
from recur_server.chain.redis_links import LinkPlan
from recur_server.infra import clock, logs, rawsql
from recur_server.infra.extensions import db, get_redis
from recur_server.models import RunStatus, Schedule
from recur_server.tasks import TaskEvent, idempotency_key

log = logging.getLogger(__name__)

# A link that arrives earlier than this (by the cluster clock) is logged: Recur's mover never moves one early.
EARLY_WARNING_SECONDS = 2.0
# A finish the database refused is tried again after this, doubling up to the max, until the run's deadline.
FINISH_RETRY_FIRST_SECONDS = 0.1
FINISH_RETRY_MAX_SECONDS = 2.0


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
    hand_off_plans([LinkPlan(schedule_id, revision, deferred.repeat, retry, scheduled_for,
                             concurrency.later(now, outcome.seconds), deferred.timeout_seconds, deferred.queue)])
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


def execute(prepared: Prepared) -> Attempted:
    return execute_task(prepared.claim.task, prepared.event, prepared.claim.timeout_seconds)


def complete(prepared: Prepared, status: RunStatus, error: str | None, captured: Captured | None = None,
             along: Callable[[Pipeline], object] | None = None) -> str:
    """Record the outcome (with what the task left behind, in the same transaction) and commit, then in one
    round trip release the lease and hand off the successor (each is one atomic script; they need not be
    atomic together, so no MULTI/EXEC around them). `along` adds the caller's own writes to that round trip
    (the worker's return to idle)."""
    with prepared.lease:  # released even if recording fails past the deadline (then the run is written off)
        schedule = _record_outcome(prepared, status, error, captured)
        with get_redis().pipeline(transaction=False) as pipe:
            prepared.lease.release(pipe)
            if schedule is not None:
                hand_off(schedule, pipeline=pipe)
            if prepared.claim.detached:
                running.unlist(prepared.claim.run_id, pipe)
            if along is not None:
                along(pipe)
            pipe.execute()
    event = prepared.event  # a link's one line at INFO (recur_server.infra.logs: RQ's own are at DEBUG)
    where = (event["scheduled_job_id"], event["repeat_number"], event["retry_number"] + 1, event["scheduled_for"])
    lost = schedule is None and not prepared.claim.detached  # the finish lost its compare-and-set
    why = _unrecorded(prepared.claim.run_id, status, error) if lost else None
    if why is not None:  # the record stands as it was, and the line says so
        log.warning("run %s %s, but that outcome was not recorded: %s: schedule %s tick %s attempt %s for %s",
                    prepared.claim.run_id, status.value, why, *where)
    else:
        also = " (recorded: an earlier commit of it landed, or its schedule had moved on)" if lost else ""
        log.info("run %s %s%s: schedule %s tick %s attempt %s for %s", prepared.claim.run_id, status.value, also,
                 *where)
    logs.clear()
    return status.value


def _unrecorded(run_id: str, status: RunStatus, error: str | None) -> str | None:
    """Why a finish of a chain run found it finished already, from its row as it is now; None when the row holds
    this very outcome (an earlier commit of it landed, and its answer was lost)."""
    try:
        found = finished_as(run_id)
    except Exception:  # the database away again: say what it could have been
        return "the run was finished already (written off while it ran, or by an earlier commit), or deleted"
    if found is None:
        return "its schedule was deleted while it ran"
    if found == (status.value, error):
        return None
    recorded, its_error = found
    return f"the run was finished already as {recorded}" + (f" ({its_error})" if its_error else "")


def _record_outcome(prepared: Prepared, status: RunStatus, error: str | None,
                    captured: Captured | None) -> Schedule | None:
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
            return finish_run(prepared.claim.run_id, status, error, finished_at, prepared.claim.schedule_id,
                              captured, prepared.claim.snapshot)
        except Exception as exc:
            if not rawsql.unavailable(exc, db.engine) or clock.monotonic() + wait >= prepared.deadline:
                raise
            log.warning("run %s ended %s but its outcome could not be recorded (%s); retrying in %.1fs with its "
                        "lease held", prepared.claim.run_id, status.value, type(exc).__name__, wait)
            time.sleep(wait)
            wait = min(wait * 2, FINISH_RETRY_MAX_SECONDS)
