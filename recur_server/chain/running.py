"""Runs that hold no schedule lease, listed in Redis while they run (manual, backfill, a detached tick),
so that overlap cancel_other can stop them and the reconciler can write off one whose worker died; and
stopping the job of a run recorded cancelled."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from redis.client import Pipeline
from rq.command import send_command

from recur_server.chain.ids import link_id
from recur_server.infra.extensions import get_redis

OUTSIDE_KEY = "recur:outside-runs"  # hash: run ID -> "schedule_id job_id listed-at-epoch-seconds"


def list_running(schedule_id: str, run_id: str, job: str, now: datetime, pipeline: Pipeline | None = None) -> None:
    (pipeline if pipeline is not None else get_redis()).hset(OUTSIDE_KEY, run_id,
                                                             f"{schedule_id} {job} {now.timestamp():.0f}")


def unlist(run_id: str, pipeline: Pipeline | None = None) -> None:
    (pipeline if pipeline is not None else get_redis()).hdel(OUTSIDE_KEY, run_id)


def stop_jobs(cancelled: list[str]) -> None:
    """Ask the workers running these runs' jobs to stop them (a forking or pool worker kills the process
    running the task; an in-process worker cannot, and its run's late outcome is ignored). `cancelled` is
    what recur_server.chain.concurrency.cancel_others returned."""
    redis = get_redis()
    for entry in cancelled:  # the run is recorded cancelled whatever becomes of its process
        schedule_id, run_id, repeat, retry, worker = entry.split(" ", 4)
        listed: Any = redis.hget(OUTSIDE_KEY, run_id)
        job_id = listed.decode().split(" ")[1] if listed else (
            link_id(schedule_id, int(repeat), int(retry)) if repeat != "-" else None)
        if job_id is not None and worker != "-":  # the run's row names the worker that claimed it
            with contextlib.suppress(Exception):
                send_command(redis, worker, "stop-job", job_id=job_id)
