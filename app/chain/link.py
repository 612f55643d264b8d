"""The RQ job behind every link: fence, claim, run the task, record, commit, hand off the successor."""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime
from typing import Any

from flask import Flask, current_app, has_app_context
from rq import get_current_job
from rq.timeouts import JobTimeoutException, TimerDeathPenalty, UnixSignalDeathPenalty

from app import clock
from app.chain import state
from app.chain.handoff import hand_off
from app.chain.leases import Lease
from app.extensions import db, get_redis
from app.models import RunStatus
from app.tasks import TaskEvent, get_task

log = logging.getLogger(__name__)

# A link that a worker starts a little before its time (clock skew between hosts) waits this long at most.
EARLY_WAIT_LIMIT_SECONDS = 2.0

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


def _run(schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime) -> str:
    now = clock.utcnow()
    early = (scheduled_for - now).total_seconds()
    if early > EARLY_WAIT_LIMIT_SECONDS:
        log.warning("link %s n%s rc%s started %.1fs early; left to its pending copy", schedule_id, repeat, retry, early)
        return "early"
    if early > 0:
        time.sleep(early)
        now = clock.utcnow()

    job = get_current_job()
    claim = state.claim_tick(
        schedule_id, revision, repeat, retry, scheduled_for, now, job.worker_name if job else None
    )
    if claim is None:
        return "stale"

    redis = get_redis()
    lease = Lease(redis, schedule_id, claim.run_id, current_app.config["RECUR_LEASE_SECONDS"])
    other = lease.acquire()
    if other is not None:
        # A run of this schedule that was written off is still alive: record this tick as skipped.
        skipped = state.finish_run(claim.run_id, RunStatus.SKIPPED, f"overlap: run {other} still running", now)
        if skipped is not None:
            hand_off(skipped)
        return RunStatus.SKIPPED.value

    event: TaskEvent = {
        "scheduled_job_id": schedule_id,
        "scheduled_job_name": claim.name,
        "repeat_number": repeat,
        "retry_number": retry,
        "scheduled_for": scheduled_for.isoformat(),
        "payload": claim.payload if claim.payload is not None else {},
    }
    with lease:
        status, error = execute_task(claim.task, event, claim.timeout_seconds)
        schedule = state.finish_run(claim.run_id, status, error, clock.utcnow())
        # After the commit, one round trip: the lease goes and the successor arrives (each is one atomic
        # script; they need not be atomic together, so no MULTI/EXEC around them).
        with redis.pipeline(transaction=False) as pipe:
            lease.release(pipe)
            if schedule is not None:
                hand_off(schedule, pipeline=pipe)
            pipe.execute()
    return status.value


def execute_task(task_name: str, event: TaskEvent, timeout_seconds: int) -> tuple[RunStatus, str | None]:
    """Run one attempt under its timeout; every way a task can fail becomes an outcome, never an exception."""
    fn = get_task(task_name)
    if fn is None:
        return RunStatus.FAILED, f"unknown task {task_name!r}"
    in_main_thread = threading.current_thread() is threading.main_thread()
    penalty: Any = UnixSignalDeathPenalty if in_main_thread else TimerDeathPenalty
    try:
        with penalty(timeout_seconds, JobTimeoutException):
            fn(event)
    except JobTimeoutException:
        return RunStatus.TIMED_OUT, f"timed out after {timeout_seconds}s"
    except (Exception, SystemExit) as exc:  # a task's own failure, whatever it raised
        return RunStatus.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
    return RunStatus.SUCCEEDED, None
