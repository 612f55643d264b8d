"""Scenario 4: many active schedules created in bulk. Startup recovery (the pass a worker makes when it
starts, here creating every link), a steady reconciler pass (a full sweep) and a periodic one (the schedules
due within its horizon: a tenth of them, at most 4,500), Redis bytes per schedule, database size,
and a pass beside a backlog: every link on the queue at once (all due at one midnight), none taken yet.

Beside them: RQ's own cost of holding the same number of scheduled jobs (bulk-scheduled through
pipelines of 1,000), and the floor of a pass (read every active row, one pipelined ZSCORE each)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any, cast

from rq import Queue
from rq.registry import ScheduledJobRegistry
from sqlalchemy import select

from bench.stack import BASELINE_QUEUE, Bench, utc
from bench.tasks import noop
from recur_server.chain.ids import link_id
from recur_server.chain.mover import Mover
from recur_server.infra.extensions import db
from recur_server.models import Schedule, ScheduleStatus
from recur_server.workers.background import reconcile_once

DUE_SOON = 4500


def used_memory(redis: Any) -> int:
    return int(redis.info("memory")["used_memory"])


def _redis_cpu_ms(redis: Any) -> float:
    """CPU time Redis's main thread has spent so far (it runs every command), in milliseconds."""
    cpu = redis.info("cpu")
    return 1000 * (float(cpu.get("used_cpu_user_main_thread", cpu["used_cpu_user"]))
                   + float(cpu.get("used_cpu_sys_main_thread", cpu["used_cpu_sys"])))


def recur(bench: Bench, count: int, api_requests: int = 0) -> dict[str, Any]:
    # The owner holds every schedule: its quota is raised, so the API's creates are measured, not refused.
    env = bench.recur(f"scale{count}", RECUR_MAX_SCHEDULES_PER_OWNER=str(2 * count + 10 * api_requests))
    redis = bench.redis
    api: dict[str, Any] = {}
    try:
        workflow = env.workflow()
        base = int(time.time()) + 7200  # nothing else comes due while we measure
        # What a periodic pass reads where 300 links a second come due: its horizon's worth (15 s), due in a
        # moment (no worker runs them here; the pass finds their links pending).
        soon, soon_at = min(DUE_SOON, count // 10), int(time.time()) + 10
        started = time.monotonic()
        env.insert_schedules(workflow, count, 3600, lambda i: utc(soon_at if i < soon else base + i % 3600))
        insert_seconds = time.monotonic() - started
        before = used_memory(redis)
        startup = reconcile_once(env.app)
        after = used_memory(redis)
        cpu = _redis_cpu_ms(redis)
        steady = reconcile_once(env.app)  # a sweep, as `recover` runs it
        steady_cpu = _redis_cpu_ms(redis) - cpu
        cpu = _redis_cpu_ms(redis)
        periodic = reconcile_once(env.app, every=5.0)  # as the workers' loop runs it between sweeps
        periodic_cpu = _redis_cpu_ms(redis) - cpu
        assert startup is not None and steady is not None and periodic is not None and not periodic["sweep"]
        floor_seconds = _pass_floor(env, redis)
        links = redis.zcard(_links_key(redis))
        backlog = _pass_beside_backlog(env, redis, utc(base + 3600))
        if api_requests:
            api = _api(env, workflow, api_requests)
    finally:
        env.stop()
    database_bytes = env.database_bytes()
    return {
        "schedules": count, "links": links, "insert_seconds": round(insert_seconds, 2),
        "startup_recovery_seconds": round(cast(float, startup["seconds"]), 2),
        "links_repaired": startup["links_repaired"],
        "pass_seconds": round(cast(float, steady["seconds"]), 2), "pass_repaired": steady["links_repaired"],
        "pass_floor_seconds": round(floor_seconds, 2), "pass_redis_cpu_ms": round(steady_cpu, 1),
        "periodic_pass_seconds": round(cast(float, periodic["seconds"]), 3),
        "periodic_pass_rows": periodic["checked"], "periodic_pass_redis_cpu_ms": round(periodic_cpu, 1),
        **backlog,
        "redis_bytes_per_schedule": round((after - before) / count), "database_bytes": database_bytes,
        "database_bytes_per_schedule": round(database_bytes / count), **api,
    }


def _api(env: Any, workflow: int, requests: int) -> dict[str, Any]:
    """Scenario 5's requests beside the estate (bench.api: creates of an hourly schedule by the owner of every
    schedule, reads of the list's first page), through gunicorn as the Procfile runs it: p50 and p99 in ms."""
    from bench.api import _measure, serving

    with serving(env) as (_, address, token):
        measured = _measure(address, requests, workflow, token)
    return {f"api_{name}": value for name, value in measured.items() if name != "requests"}


def _pass_beside_backlog(env: Any, redis: Any, after_all_due: Any) -> dict[str, Any]:
    """Every link moved onto the queue, then a pass a minute later: each link is queued long ago (past
    the in-hand grace), so only the queue list itself says it is pending. A pass that searched the list
    once per link would be quadratic here."""
    from recur_server.services.reconcile import reconcile

    queue = Queue("recur", connection=redis)
    queued = Mover(redis, queue).move_due(after_all_due)
    cpu = _redis_cpu_ms(redis)
    started = time.monotonic()
    with env.context():
        report = reconcile(after_all_due + timedelta(seconds=60)).as_dict()
    seconds = time.monotonic() - started
    return {"backlog_queued": queued, "backlog_pass_seconds": round(seconds, 2),
            "backlog_pass_redis_cpu_ms": round(_redis_cpu_ms(redis) - cpu, 1),
            "backlog_pass_repaired": report["links_repaired"]}


def _links_key(redis: Any) -> str:
    """The Redis key of the queue's scheduled registry, where every pending link waits."""
    return str(ScheduledJobRegistry("recur", connection=redis).key)  # type: ignore[no-untyped-call]


def _pass_floor(env: Any, redis: Any) -> float:
    """The least a pass over every active schedule can do: read the rows, one ZSCORE per expected link."""
    key = _links_key(redis)
    started = time.monotonic()
    with env.context():
        rows = db.session.execute(
            select(Schedule.id, Schedule.current_repeat, Schedule.current_retry)
            .where(Schedule.status == ScheduleStatus.ACTIVE.value)
        ).all()
        db.session.rollback()
    for offset in range(0, len(rows), 1000):
        with redis.pipeline(transaction=False) as pipe:
            for row in rows[offset:offset + 1000]:
                pipe.zscore(key, link_id(row.id, row.current_repeat, row.current_retry))
            pipe.execute()
    return time.monotonic() - started


def bare_rq(bench: Bench, count: int) -> dict[str, Any]:
    """RQ holding `count` scheduled no-op jobs: the time to put them in and the Redis bytes they take."""
    redis = bench.fresh_redis()
    queue = Queue(BASELINE_QUEUE, connection=redis)
    base = int(time.time()) + 7200
    before = used_memory(redis)
    started = time.monotonic()
    for offset in range(0, count, 1000):
        with redis.pipeline() as pipe:
            for index in range(offset, min(count, offset + 1000)):
                job = queue.create_job(noop, result_ttl=300, description=f"bench job {index}")
                queue.schedule_job(job, utc(base + index % 3600), pipeline=pipe)
            pipe.execute()
    seconds = time.monotonic() - started
    after = used_memory(redis)
    redis.flushall()
    return {"jobs": count, "schedule_seconds": round(seconds, 2),
            "redis_bytes_per_job": round((after - before) / count)}
