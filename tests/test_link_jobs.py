"""RQ's bookkeeping of a link's job, which the default worker writes in the link's own round trips
(recur_server.workers.link_jobs) instead of RQ's perform_job: Redis ends as RQ itself leaves it, on a real
redis-server, so `rq info`, RQ's registries and job.return_value() see links as they see any job."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from redis import Redis
from rq import Queue
from rq.executions import prepare_execution
from rq.job import Job
from rq.registry import FinishedJobRegistry, StartedJobRegistry
from rq.worker.base import WorkerStatus

from harness.chain_driver import make_schedule, next_due, runs_of
from harness.redis_state import redis_state
from recur_server.chain.ids import link_id
from recur_server.chain.mover import Mover
from recur_server.infra.extensions import get_queue, get_redis
from recur_server.workers import link_jobs
from recur_server.workers.pool import Limits
from recur_server.workers.pool_worker import RecurPoolWorker


def _taken(redis: Redis) -> tuple[RecurPoolWorker, Any, Queue]:
    """A fresh server with one job returning "succeeded", taken by a registered default worker as its loop
    takes a job (onto the queue's intermediate list)."""
    redis.flushall()
    queue = Queue("recur", connection=redis)
    queue.enqueue("builtins.str", "succeeded", job_id="sched-x-n0-rc0", result_ttl=300)
    worker = RecurPoolWorker([queue], connection=redis, name="w1", limits=Limits())
    worker.register_birth()
    job, taken_from = worker.dequeue_job_and_maintain_ttl(None)
    return worker, job, taken_from


def _by_rq(redis: Redis) -> str:
    worker, job, queue = _taken(redis)
    execution = prepare_execution(worker, job)
    assert worker.perform_job(job, queue, execution)
    worker.set_state(WorkerStatus.IDLE)
    return str(execution.id)


def _by_link_jobs(redis: Redis) -> str:
    worker, job, _queue = _taken(redis)
    with redis.pipeline() as pipe:  # the lease's round trip
        execution = worker._record_execution(job, pipe)
        pipe.execute()
    with redis.pipeline() as pipe:  # the hand-off's
        worker.set_state(WorkerStatus.IDLE, pipeline=pipe)
        link_jobs.finished(worker, job, execution, "succeeded", pipe)
        pipe.execute()
    return str(execution.id)


def test_a_links_start_and_end_leave_redis_as_rqs_perform_job_does(redis_server):
    """Every key, field, member and expiry but clocks and random IDs: a new RQ that writes more, or
    otherwise, fails here (link_jobs copies what RQ 3's prepare_job_execution and handle_job_success write,
    and calls Job._handle_success)."""
    redis = Redis.from_url(redis_server.url)
    seen = []
    for way in (_by_rq, _by_link_jobs):
        execution_id = way(redis)
        state = redis_state(redis, execution_id)
        seen.append(state)
        job = Job.fetch("sched-x-n0-rc0", connection=redis)
        assert (job.get_status(), job.return_value()) == ("finished", "succeeded")
    assert seen[1] == seen[0]
    worker = seen[0][b"rq:worker:w1"][1]
    assert (worker[b"state"], worker[b"successful_job_count"]) == (b"idle", b"1")
    redis.flushall()


def test_links_drained_by_the_default_worker_are_finished_jobs_to_rq(real_app, fake_clock):
    """The real loop on real links: each link's job finished with its outcome as its return value, in RQ's
    finished registry, none left started, no execution left, the worker's count of jobs right."""
    now = datetime.now(UTC)
    fake_clock.set(now)
    schedules = [make_schedule(now, interval_seconds=3600) for _ in range(3)]
    fake_clock.set(next_due(real_app))
    redis, queue = get_redis(real_app), get_queue(real_app)
    assert Mover(redis, queue).move_due(fake_clock.now) == 3
    worker = RecurPoolWorker([queue], connection=redis, name="drain", limits=Limits())
    worker.work(burst=True, with_scheduler=False)
    assert [run.status for schedule in schedules for run in runs_of(schedule.id)] == ["succeeded"] * 3
    for schedule in schedules:
        job = Job.fetch(link_id(schedule.id, 0, 0), connection=redis)
        assert (job.get_status(), job.return_value(), job.worker_name) == ("finished", "succeeded", "drain")
        assert job.id in FinishedJobRegistry(queue=queue).get_job_ids()
    assert StartedJobRegistry(queue=queue).get_job_ids() == []
    assert redis.keys("rq:execution:*") == []
    assert int(redis.hget("rq:worker:drain", "successful_job_count") or 0) == 3
