"""Scenarios 2 and 3: how late runs start under a steady load, and how long a herd due in one second
takes to drain; Recur beside RQ's enqueue_at (stock scheduler) and rq-scheduler."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from rq import Queue
from rq_scheduler import Scheduler

from bench.stack import BASELINE_QUEUE, Bench, start_rq_scheduler, start_rq_workers, stop_all, utc
from bench.stats import lateness_summary
from bench.tasks import read_probes, rq_chain, rqs_probe
from harness.servers import wait_for

SETUP_SECONDS = 3  # from "load created" to the first due second; the setup takes well under this


def steady_due(count: int, interval: int, start: int) -> Callable[[int], float]:
    """Schedule i is due first at start + i × interval / count, to the millisecond: the load arrives
    evenly, as it does from schedules created at arbitrary moments (1,000 @ 20 s: one every 20 ms)."""
    return lambda index: start + round(index * interval / count, 3)


def whole_second_due(count: int, interval: int, start: int) -> Callable[[int], int]:
    """The same load for the baselines, whose schedules are whole seconds (RQ's scores, rq-scheduler's
    times): each due time rounded up, so the same number fall due each second, in one burst."""
    due = steady_due(count, interval, start)
    return lambda index: math.ceil(due(index))


def _window(pairs: list[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    return [(nominal, started) for nominal, started in pairs if start <= nominal < end]


def _expected(due: Callable[[int], float], count: int, interval: int, end: int) -> int:
    return sum(math.ceil((end - due(i)) / interval) for i in range(count))


# --- Recur -------------------------------------------------------------------------------------------


def recur_steady(bench: Bench, schedules: int, interval: int, seconds: int, workers: int,
                 mode: str = "default") -> dict[str, Any]:
    env = bench.recur("lateness")
    try:
        workflow = env.workflow()
        env.start_workers(workers, mode)
        start = math.ceil(time.time()) + SETUP_SECONDS
        due = steady_due(schedules, interval, start)
        env.insert_schedules(workflow, schedules, interval, lambda i: utc(due(i)))
        env.reconcile()
        setup_overran = time.time() > start
        end = start + seconds
        time.sleep(max(0.0, end - time.time()) + 2.0)
        wait_for(lambda: all(s != "running" for *_, s in env.runs()), 30, interval=0.25, what="runs to finish")
        runs = env.runs()
    finally:
        env.stop()
    pairs = _window([(nominal, started) for nominal, started, _ in runs], start, end)
    return {**lateness_summary(pairs), "expected": _expected(due, schedules, interval, end),
            "setup_overran": setup_overran}


def recur_herd(bench: Bench, count: int, workers: int, mode: str = "default") -> dict[str, Any]:
    env = bench.recur("herd")
    try:
        workflow = env.workflow()
        env.start_workers(workers, mode)
        due = math.ceil(time.time()) + SETUP_SECONDS
        env.insert_schedules(workflow, count, 3600, lambda _: utc(due))
        env.reconcile()
        setup_overran = time.time() > due
        wait_for(lambda: env.finished_runs() >= count, 60 + count / 5, interval=0.25, what="the herd")
        runs = env.runs()
    finally:
        env.stop()
    return _herd_summary([(nominal, started) for nominal, started, _ in runs], due, setup_overran)


def _herd_summary(pairs: list[tuple[float, float]], due: float, setup_overran: bool) -> dict[str, Any]:
    return {**lateness_summary(pairs), "drain_seconds": round(max(s for _, s in pairs) - due, 3),
            "setup_overran": setup_overran}


# --- RQ's enqueue_at with its stock scheduler -------------------------------------------------------------


def rq_steady(bench: Bench, schedules: int, interval: int, seconds: int, workers: int) -> dict[str, Any]:
    redis = bench.fresh_redis()
    processes = start_rq_workers(bench, workers, simple=True, scheduler=True)
    try:
        start = math.ceil(time.time()) + SETUP_SECONDS
        end = start + seconds
        due = whole_second_due(schedules, interval, start)
        _rq_schedule(redis, [(due(i), interval, end) for i in range(schedules)])
        setup_overran = time.time() > start
        time.sleep(max(0.0, end - time.time()) + 3.0)
        pairs = _window(read_probes(redis), start, end)
    finally:
        stop_all(processes)
    return {**lateness_summary(pairs), "expected": _expected(due, schedules, interval, end),
            "setup_overran": setup_overran}


def rq_herd(bench: Bench, count: int, workers: int) -> dict[str, Any]:
    redis = bench.fresh_redis()
    processes = start_rq_workers(bench, workers, simple=True, scheduler=True)
    try:
        due = math.ceil(time.time()) + SETUP_SECONDS
        _rq_schedule(redis, [(due, 0, 0)] * count)
        setup_overran = time.time() > due
        wait_for(lambda: redis.llen("bench:probe") >= count, 60 + count / 5, interval=0.25, what="the RQ herd")
        pairs = read_probes(redis)
    finally:
        stop_all(processes)
    return _herd_summary(pairs, due, setup_overran)


def _rq_schedule(redis: Any, chains: list[tuple[int, int, int]]) -> None:
    queue = Queue(BASELINE_QUEUE, connection=redis)
    for offset in range(0, len(chains), 500):
        with redis.pipeline() as pipe:
            for nominal, interval, until in chains[offset:offset + 500]:
                job = queue.create_job(rq_chain, args=(nominal, interval, until), result_ttl=300)
                queue.schedule_job(job, utc(nominal), pipeline=pipe)
            pipe.execute()


# --- rq-scheduler ---------------------------------------------------------------------------------------


def rqs_steady(bench: Bench, schedules: int, interval: int, seconds: int, workers: int,
               poll: float) -> dict[str, Any]:
    redis = bench.fresh_redis()
    processes = start_rq_workers(bench, workers, simple=True)
    try:
        scheduler = Scheduler(queue_name=BASELINE_QUEUE, connection=redis)
        start = math.ceil(time.time()) + SETUP_SECONDS
        end = start + seconds
        due = whole_second_due(schedules, interval, start)
        for index in range(schedules):
            scheduler.schedule(utc(due(index)).replace(tzinfo=None), rqs_probe, interval=interval, result_ttl=300)
        setup_overran = time.time() > start
        processes.append(start_rq_scheduler(bench, poll))
        time.sleep(max(0.0, end - time.time()) + 3.0)
        pairs = _window(read_probes(redis), start, end)
    finally:
        stop_all(processes)
    # rq-scheduler re-plans an interval job from the moment it moved it, so its nominal times drift
    # with every late move; "expected" counts the slots a fixed-rate schedule would have had.
    return {**lateness_summary(pairs), "expected": _expected(due, schedules, interval, end),
            "setup_overran": setup_overran}


def rqs_herd(bench: Bench, count: int, workers: int, poll: float) -> dict[str, Any]:
    redis = bench.fresh_redis()
    processes = start_rq_workers(bench, workers, simple=True)
    try:
        scheduler = Scheduler(queue_name=BASELINE_QUEUE, connection=redis)
        due = math.ceil(time.time()) + SETUP_SECONDS
        for _ in range(count):
            scheduler.enqueue_at(utc(due).replace(tzinfo=None), rqs_probe, job_result_ttl=300)
        setup_overran = time.time() > due
        processes.append(start_rq_scheduler(bench, poll))
        wait_for(lambda: redis.llen("bench:probe") >= count, 60 + count / 5, interval=0.25,
                 what="the rq-scheduler herd")
        pairs = read_probes(redis)
    finally:
        stop_all(processes)
    return _herd_summary(pairs, due, setup_overran)
