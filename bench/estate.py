"""Scenario 10, a big estate at work: `schedules` active schedules inserted in bulk (hourly and daily ones, and
enough every-minute ones that `rate` links a second come due in all), every link made by a startup pass, then the
Procfile's workers (one per core) run what comes due for `seconds`, after a `warmup`.

Reported: how late each run in the window started (p50, p99, max; none early; every due run ran), Redis's bytes
per schedule (after the links were made, and at the window's end), the reconciler's passes in the window (how
many, the last one's time, links it had to make again: none, when nothing was lost), and the CPU the workers
(with their slots, work processes and background processes), redis-server and PostgreSQL's server spent in the
window, per link and as a share of one core.

The due times are fixed before the insert: the first tick of each schedule falls `setup` seconds from the start
plus its offset within its period, so nothing is due while the rows go in and the links are made. A setup that
takes longer shifts the window (`setup_overran`); the runs before it are not counted."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import func, select

from bench.cpu import sample
from bench.scale import used_memory
from bench.stack import Bench, RecurEnv, cores, utc
from bench.stats import lateness_summary
from harness.servers import wait_for
from recur_server.infra.extensions import db
from recur_server.models import Run, RunStatus
from recur_server.services.reconcile_stats import read_stats

MINUTE, HOUR, DAY = 60, 3600, 86400


def mix(schedules: int, rate: float) -> dict[int, int]:
    """How many schedules of each interval (s): a fifth of `rate` from every-minute ones (more, in an estate whose
    hourly ones could not bring the rest), the rest from hourly ones, and the remainder daily (each adding its
    own trickle)."""
    minutely = min(schedules, round(max(rate / 5 * MINUTE, (rate - schedules / HOUR) / (1 / MINUTE - 1 / HOUR))))
    hourly = min(schedules - minutely, round((rate - minutely / MINUTE) * HOUR))
    return {MINUTE: minutely, HOUR: hourly, DAY: schedules - minutely - hourly}


def offsets(counts: dict[int, int]) -> Callable[[int], tuple[int, float]]:
    """Schedule i's (interval, first due offset): the schedules of each interval spread evenly over it, to the
    millisecond, as schedules made at arbitrary moments are."""
    ranges = _ranges(counts)

    def of(index: int) -> tuple[int, float]:
        for interval, (low, high) in ranges.items():
            if low <= index < high:
                return interval, _spread(interval, high - low, index - low)
        raise IndexError(index)

    return of


def _spread(interval: int, count: int, index: int) -> float:
    """The offset of the index-th of `count` schedules of one interval, spread evenly over it."""
    return round(index * interval / count, 3)


def due_between(counts: dict[int, int], start: float, end: float, origin: float) -> int:
    """Ticks of every schedule whose nominal time falls in [start, end), the first at origin + offset."""
    of, total = offsets(counts), 0
    for index in range(sum(counts.values())):
        interval, offset = of(index)
        first = origin + offset
        total += max(0, math.ceil((end - first) / interval)) - max(0, math.ceil((start - first) / interval))
    return total


def recur(bench: Bench, spec: dict[str, Any], say: Callable[[str], None]) -> dict[str, Any]:
    count, rate, seconds, warmup = spec["schedules"], spec["rate"], spec["seconds"], spec["warmup"]
    counts = mix(count, rate)
    setup = spec.get("setup") or 30 + count / 3000 + count / 10_000  # the insert, then every link made
    env = bench.recur(f"estate{count}", RECUR_MAX_SCHEDULES_PER_OWNER=str(count + 10))
    redis = bench.redis
    try:
        workflow = env.workflow()
        origin = math.ceil(time.time() + setup)
        say(f"  inserting {count:,} schedules {counts}, first due from {setup:.0f} s on")
        started = time.monotonic()
        insert_mix(env, workflow, counts, origin)
        insert_seconds = time.monotonic() - started
        memory_before = used_memory(redis)
        made = env.reconcile()
        memory_links = used_memory(redis)
        env.start_workers(spec.get("workers") or cores(), "default")
        ready = time.time()
        say(f"  ready after {time.monotonic() - started:.0f} s ({made['links_repaired']:,} links made in "
            f"{made['seconds']:.1f} s)")
        window_start = max(origin, math.ceil(ready)) + warmup
        window_end = window_start + seconds
        time.sleep(max(0.0, window_start - time.time()))
        pids = [worker.popen.pid for worker in env.workers]
        redis_pid = int(redis.info("server")["process_id"])
        cpu_before, stats_before = sample(pids, redis_pid, bench.database, descendants=True), read_stats(redis)
        time.sleep(max(0.0, window_end - time.time()))
        cpu_after, stats_after = sample(pids, redis_pid, bench.database, descendants=True), read_stats(redis)
        memory_end = used_memory(redis)
        expected = due_between(counts, window_start, window_end, origin)
        with contextlib.suppress(AssertionError):  # fewer ran than came due: the figures say so
            wait_for(lambda: _settled(env, window_start, window_end) >= expected, 60, interval=1,
                     what="the window's runs")
        runs = env.runs()
    finally:
        env.stop()
    pairs = [(nominal, started) for nominal, started, _ in runs if window_start <= nominal < window_end]
    ran = len(pairs)
    cpu = {role: round(cpu_after[role] - cpu_before[role], 2) for role in cpu_before}
    return {
        "schedules": count, "mix": {str(k): v for k, v in counts.items()}, "rate_due": round(expected / seconds, 1),
        "seconds": seconds, "insert_seconds": round(insert_seconds, 1),
        "links_made_seconds": round(float(made["seconds"]), 1), "links_made": made["links_repaired"],
        "setup_overran": ready > origin, "due": expected, **lateness_summary(pairs),
        "p99_ms_by_minute": [lateness_summary([pair for pair in pairs if start <= pair[0] < start + MINUTE])["p99_ms"]
                             for start in range(window_start, window_end, MINUTE)],
        "late_100ms_by_10s": _late_by(pairs, window_start, window_end, 10, 0.1),
        "redis_bytes_per_schedule": round((memory_links - memory_before) / count),
        "redis_bytes_per_schedule_at_end": round((memory_end - memory_before) / count),
        "passes": _delta(stats_before, stats_after, "reconcile_passes"),
        "sweeps": _delta(stats_before, stats_after, "reconcile_sweeps"),
        "links_repaired": _delta(stats_before, stats_after, "links_repaired"),
        "last_pass_seconds": float(stats_after.get("last_pass_seconds", "nan")),
        "cpu_seconds": cpu,
        "cpu_ms_per_link": {role: round(value * 1000 / max(1, ran), 3) for role, value in cpu.items()},
        "cpu_cores": {role: round(value / seconds, 3) for role, value in cpu.items()},
    }


def _late_by(pairs: list[tuple[float, float]], start: int, end: int, step: int, late: float) -> list[int]:
    """How many runs started more than `late` s after their nominal time, in each `step` s of the window: where
    the tail of the lateness comes from (a steady share, or stalls)."""
    counts = [0] * math.ceil((end - start) / step)
    for nominal, started in pairs:
        if started - nominal > late:
            counts[int((nominal - start) // step)] += 1
    return counts


def insert_mix(env: RecurEnv, workflow: int, counts: dict[int, int], origin: int) -> None:
    """Insert the schedules of `counts` in bulk, each first due at `origin` plus its offset within its interval."""
    for interval, (low, high) in _ranges(counts).items():
        env.insert_schedules(workflow, high - low, interval, partial(_first_due, origin, interval, high - low))


def _first_due(origin: int, interval: int, count: int, index: int) -> datetime:
    return utc(origin + _spread(interval, count, index))


def _settled(env: Any, start: float, end: float) -> int:
    """Runs of the window that have ended."""
    with env.context():
        found = db.session.execute(
            select(func.count()).select_from(Run)
            .where((Run.scheduled_for >= utc(start)) & (Run.scheduled_for < utc(end))
                   & (Run.status != RunStatus.RUNNING.value))).scalar_one()
        db.session.rollback()
    return int(found)


def _ranges(counts: dict[int, int]) -> dict[int, tuple[int, int]]:
    ranges, start = {}, 0
    for interval, count in counts.items():
        ranges[interval] = (start, start + count)
        start += count
    return {interval: span for interval, span in ranges.items() if span[1] > span[0]}


def _delta(before: dict[str, str], after: dict[str, str], key: str) -> int:
    return int(after.get(key, 0)) - int(before.get(key, 0))
