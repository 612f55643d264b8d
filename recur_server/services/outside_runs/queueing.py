"""A run outside the chain on its way: its RQ job enqueued and listed (QUEUED_KEY) until it starts, the
Redis keys that say where each run is (queued, started, parked), and the reconciler's look at them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import current_app
from redis.client import Pipeline
from rq.job import Job

from recur_server.chain.ids import outside_job_id
from recur_server.chain.redis_links import queue_named
from recur_server.chain.running import OUTSIDE_KEY
from recur_server.infra.extensions import get_queue, get_redis

QUEUED_KEY = "recur:outside-queued"  # hash: run ID -> "schedule_id job_id" from its enqueue until it starts
WAITING_KEY = "recur:outside-waiting"  # sorted set: run ID, scored by when it began to wait (epoch seconds)
WAITING_ARGS_KEY = "recur:outside-waiting-args"  # hash: run ID -> what its next job needs (JSON)
# The name the jobs carry (queued jobs name it: it stays importable, recur_server/chain/outside.py).
OUTSIDE_FUNC = "recur_server.chain.outside.run_outside"
PENDING_JOB = {b"queued", b"scheduled", b"started", b"deferred"}


def enqueue(schedule_id: str, run_id: str, scheduled_for: datetime, trigger: str, overlap: str | None,
            timeout_seconds: int, backfill_id: str | None = None, attempt: int = 0,
            waiting_since: float | None = None, pipeline: Pipeline | None = None, queue_name: str | None = None) -> str:
    """Put the job of an outside run on its schedule's queue (`queue_name`: the schedule's `queue`, its
    workflow's) and list it in QUEUED_KEY; returns its job ID. With `pipeline`, only adds to it (the caller
    executes it)."""
    queue = queue_named(get_queue(), queue_name)
    kwargs = {"schedule_id": schedule_id, "run_id": run_id, "scheduled_for": scheduled_for.isoformat(),
              "trigger": trigger, "overlap": overlap, "backfill_id": backfill_id, "attempt": attempt,
              "waiting_since": waiting_since}
    job = outside_job_id(run_id, attempt)
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
        if status not in PENDING_JOB:
            forgotten += int(redis.eval(_FORGET_IF_SAME, 1, QUEUED_KEY, run_id, entry))
    return forgotten


def on_its_way(redis: Any, run_ids: list[str]) -> list[bool]:
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
        pending = bool(entry) and next(statuses) in PENDING_JOB
        out.append(pending or bool(found[3 * i + 1]) or found[3 * i + 2] is not None)
    return out
