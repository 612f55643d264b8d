"""The reconciler's part for runs outside the chain: write off a run whose worker died (its lease lapsed),
and forget listings of runs that ended or never started."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from recur_server.chain.finish import finish_run
from recur_server.chain.leases import run_lease_key
from recur_server.chain.running import OUTSIDE_KEY
from recur_server.infra.extensions import db, get_redis
from recur_server.models import Run, RunStatus
from recur_server.services.outside_runs.backfills import continue_backfill


def reap(now: datetime, grace: timedelta, leases_tell: bool = True) -> list[str]:
    """The reconciler's part: write off outside runs whose worker died (their lease lapsed; only when
    `leases_tell`, see recur_server.chain.leases.pulse), and forget entries whose run has ended or never started.
    Returns the run IDs written off."""
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
                continue_backfill(backfill_id, run_id, now)
        elif status not in (None, RunStatus.RUNNING.value) or (
                status is None and now.timestamp() - float(listed_at) > grace.total_seconds() * 4):
            redis.hdel(OUTSIDE_KEY, run_id)  # ended, or its job died before its row was written
    return written_off
