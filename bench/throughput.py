"""Scenario 1: fires per second per worker through the whole chain, beside bare RQ no-op jobs and bare RQ
jobs that record their own run durably."""

from __future__ import annotations

import time
from datetime import UTC
from typing import Any

from rq import Queue
from rq.registry import FinishedJobRegistry
from rq.utils import utcparse

from bench import durable
from bench.stack import BASELINE_QUEUE, Bench, start_rq_workers, stop_all, utc
from bench.stats import rate
from bench.tasks import noop
from harness.servers import Process, wait_for


def recur(bench: Bench, workers: int, mode: str, count: int) -> dict[str, Any]:
    """`count` schedules all due at once, drained by `workers` Recur workers of `mode` (a key of
    bench.stack.WORKER_MODES): claim, run record, task, commit, successor (the successors land an hour
    later)."""
    env = bench.recur("throughput")
    try:
        workflow = env.workflow()
        env.start_workers(workers, mode)
        due = time.time() + 1.0
        env.insert_schedules(workflow, count, 3600, lambda _: utc(int(due)))
        env.reconcile()
        wait_for(lambda: env.finished_runs() >= count, 60 + count / 5, interval=0.5, what="the chain backlog")
        runs = env.runs()
    finally:
        env.stop()
    starts = [started for _, started, _ in runs]
    per_second = rate(starts)
    return {
        "fires": len(runs), "succeeded": sum(1 for *_, status in runs if status == "succeeded"),
        "per_second": round(per_second, 1), "per_worker": round(per_second / workers, 1),
    }


def bare_rq(bench: Bench, workers: int, simple: bool, count: int) -> dict[str, Any]:
    """The same number of no-op jobs through bare RQ workers of the same class on the same Redis."""
    bench.fresh_redis()
    processes = start_rq_workers(bench, workers, simple)
    jobs = [Queue.prepare_data(noop, result_ttl=300) for _ in range(count)]
    starts = _drain(bench, processes, jobs)
    per_second = rate(starts)
    return {"jobs": len(starts), "per_second": round(per_second, 1), "per_worker": round(per_second / workers, 1)}


def durable_rq(bench: Bench, workers: int, count: int) -> dict[str, Any]:
    """The same number of no-op jobs through bare RQ SimpleWorkers, each recording its own run in a fresh
    database of the run's kind (bench.durable): the least a scheduler with a durable history does."""
    url = bench.scratch_database("durable-rq")
    durable.create_table(url)
    bench.fresh_redis()
    processes = start_rq_workers(bench, workers, True, durable=url)
    jobs = [Queue.prepare_data(durable.recorded_noop, args=(url,), result_ttl=300) for _ in range(count)]
    starts = _drain(bench, processes, jobs)
    recorded = durable.recorded(url)
    if recorded != count:
        raise RuntimeError(f"{recorded} of {count} jobs recorded a finished run")
    per_second = rate(starts)
    return {"jobs": len(starts), "recorded": recorded, "per_second": round(per_second, 1),
            "per_worker": round(per_second / workers, 1)}


def _drain(bench: Bench, processes: list[Process], jobs: list[Any]) -> list[float]:
    """Enqueue `jobs` for the started bare workers, wait until all finished, stop the workers: each job's
    start (epoch seconds, as RQ stamped it)."""
    redis = bench.redis
    try:
        queue = Queue(BASELINE_QUEUE, connection=redis)
        ids = [job.id for job in queue.enqueue_many(jobs)]
        finished = FinishedJobRegistry(queue=queue)
        wait_for(lambda: finished.count >= len(ids), 60 + len(ids) / 5, interval=0.5, what="the RQ backlog")
        with redis.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hget(f"rq:job:{job_id}", "started_at")
            return [epoch_of(started.decode()) for started in pipe.execute()]
    finally:
        stop_all(processes)


def epoch_of(rq_timestamp: str) -> float:
    parsed = utcparse(rq_timestamp)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def best(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest of several rounds (other load on a shared machine only ever slows a round down),
    with every round's figure kept beside it."""
    good = [sample for sample in samples if "error" not in sample]
    if not good:
        return samples[-1]
    top = max(good, key=lambda sample: sample["per_second"])
    return {**top, "rounds_per_second": [sample.get("per_second") for sample in samples]}
