"""Task functions of the baselines (bare RQ, RQ's enqueue_at, rq-scheduler), importable by their workers.

Each probe records "nominal start" pairs (epoch seconds) in a Redis list, so the bench can compute
lateness exactly as it does for Recur's runs (started_at - scheduled_for).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from rq import Queue, get_current_job

PROBE_KEY = "bench:probe"


def noop() -> None:
    return None


def rq_chain(nominal: float, interval: int, until: float) -> None:
    """RQ's enqueue_at, used the way a chain uses it: record this start, then schedule the successor."""
    started = time.time()
    job = get_current_job()
    assert job is not None
    connection = job.connection
    connection.rpush(PROBE_KEY, f"{nominal} {started}")
    following = nominal + interval
    if interval and following < until:
        Queue(job.origin, connection=connection).enqueue_at(
            datetime.fromtimestamp(following, UTC), rq_chain, following, interval, until, result_ttl=300
        )


def rqs_probe() -> None:
    """rq-scheduler's job: its due time was stamped into meta by the bench's scheduler when it moved it."""
    started = time.time()
    job = get_current_job()
    assert job is not None
    job.connection.rpush(PROBE_KEY, f"{job.meta.get('bench_due')} {started}")


def read_probes(connection) -> list[tuple[float, float]]:  # type: ignore[no-untyped-def]
    out = []
    for raw in connection.lrange(PROBE_KEY, 0, -1):
        nominal, started = raw.decode().split()
        out.append((float(nominal), float(started)))
    return out
