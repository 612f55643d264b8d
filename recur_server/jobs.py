"""The RQ job functions: what a worker calls for a link and for a run outside the chain.

An entry point, like worker.py and wsgi.py: a job runs inside the app of the worker that took it
(worker.py), or, under a bare `rq worker`, inside one built here. Jobs queued in Redis carry the names
recur_server.chain.link.run_link and recur_server.chain.outside.run_outside, which stay importable and lead here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime

from flask import Flask, has_app_context
from rq import get_current_job

from recur_server import create_app
from recur_server.chain.redis_links import link_kwargs
from recur_server.chain.run import complete, execute, prepare
from recur_server.infra.extensions import db
from recur_server.services.outside_runs.job import record_death, run_job
from recur_server.services.outside_runs.queueing import OUTSIDE_FUNC

_fallback_app: Flask | None = None


def run_link(schedule_id: str | None = None, revision: int | None = None, repeat: int | None = None,
             retry: int | None = None, scheduled_for: str | None = None) -> str:
    """A link's job, run whole (prepared, executed, completed) where no worker prepared it: under a bare `rq
    worker` or the simple worker, or when the claim could not be made before the fork. A link that Recur's
    forking or pool worker prepared is run by the executor it attached to the job (recur_server.workers.horse), not
    here. A link the mover made carries no arguments: they are read from its job's ID and description (a link
    an older version put carries them). Returns what happened, for `rq info` and the logs."""
    if schedule_id is None or revision is None or repeat is None or retry is None or scheduled_for is None:
        job = get_current_job()
        if job is None:
            raise TypeError("run_link without arguments runs only as a link's RQ job")
        kwargs = link_kwargs(job)
        schedule_id, revision, repeat, retry, scheduled_for = (
            kwargs["schedule_id"], kwargs["revision"], kwargs["repeat"], kwargs["retry"], kwargs["scheduled_for"])
    with _in_app():
        try:
            return _run_link(schedule_id, revision, repeat, retry, datetime.fromisoformat(scheduled_for))
        finally:
            # An in-process worker keeps its session between links: leave no transaction (on SQLite, a
            # write lock that every other process would wait for) open behind this one.
            db.session.remove()


def _run_link(schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime) -> str:
    job = get_current_job()
    prepared = prepare(schedule_id, revision, repeat, retry, scheduled_for, job.worker_name if job else None)
    if isinstance(prepared, str):
        return prepared
    with prepared.lease:
        return complete(prepared, *execute(prepared))


def run_outside(schedule_id: str, run_id: str, scheduled_for: str, trigger: str, overlap: str | None,
                backfill_id: str | None, attempt: int, waiting_since: float | None = None) -> str:
    """The job of a run outside the chain (manual, backfill)."""
    with _in_app():
        return run_job(schedule_id, run_id, datetime.fromisoformat(scheduled_for), trigger, overlap, backfill_id,
                       attempt, waiting_since)


@contextlib.contextmanager
def _in_app() -> Iterator[None]:
    """The worker's app context if there is one; else (a bare `rq worker`) one of an app built once here."""
    global _fallback_app
    if has_app_context():
        yield
        return
    if _fallback_app is None:
        _fallback_app = create_app()
    with _fallback_app.app_context():
        yield


def work_process_died(job: object, worker: str, reason: str, now: datetime) -> None:
    """What a worker calls when the work process running a job that is not a link dies (recur_server.workers.worker):
    a run outside the chain is recorded failed with the cause at once
    (recur_server.services.outside_runs.job.record_death)."""
    if getattr(job, "func_name", None) == OUTSIDE_FUNC:
        record_death(job.kwargs, worker, reason, now)  # type: ignore[attr-defined]
