"""The workers' dequeue (recur_server.workers.dequeue.OneTripQueue), on a real redis-server: what it takes and in what
order is RQ's own dequeue's, in one round trip where RQ's takes two; with nothing waiting, RQ's blocking dequeue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis import Redis
from rq import Queue
from rq.exceptions import DequeueTimeout
from rq.job import Job

from harness.servers import RedisServer
from recur_server.workers.dequeue import OneTripQueue


@pytest.fixture
def redis(redis_server: RedisServer) -> Iterator[Redis]:
    client = Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.flushall()


def _enqueued(queue: Queue, *names: str) -> list[str]:
    return [queue.enqueue("builtins.print", name, job_id=f"job-{queue.name}-{name}").id for name in names]


def _both(queues: list[Queue], redis: Redis, timeout: int | None = None) -> tuple[Job, Queue] | None:
    return OneTripQueue.dequeue_any(queues, timeout, connection=redis)


def test_it_takes_what_rqs_dequeue_takes_in_the_same_order_and_reads_the_job_as_rq_does(redis: Redis) -> None:
    high, low = Queue("high", connection=redis), Queue("low", connection=redis)
    _enqueued(low, "l1")
    _enqueued(high, "h1", "h2")
    taken = []
    while (result := _both([high, low], redis)) is not None:
        job, queue = result
        assert isinstance(queue, OneTripQueue) and queue.name == job.origin
        assert job.to_dict() == Job.fetch(job.id, connection=redis).to_dict()  # every field, as RQ reads it
        taken.append(job.id)
    assert taken == ["job-high-h1", "job-high-h2", "job-low-l1"]
    # Several queues: LPOP, as RQ does (no intermediate list).
    assert redis.keys("*:intermediate") == []


def test_from_one_queue_the_id_goes_to_its_intermediate_list_as_rqs_does(redis: Redis) -> None:
    queue = Queue("one", connection=redis)
    _enqueued(queue, "a", "b")
    taken = _both([queue], redis)
    assert taken is not None and taken[0].id == "job-one-a"
    assert redis.lrange(f"{queue.key}:intermediate", 0, -1) == [b"job-one-a"]
    assert redis.lrange(queue.key, 0, -1) == [b"job-one-b"]


def test_an_id_whose_job_is_gone_is_passed_by(redis: Redis) -> None:
    queue = Queue("gone", connection=redis)
    first, second = _enqueued(queue, "a", "b")
    redis.delete(Job.key_for(first))
    taken = _both([queue], redis)
    assert taken is not None and taken[0].id == second


def test_with_nothing_waiting_rqs_own_dequeue_answers(redis: Redis) -> None:
    queue = Queue("empty", connection=redis)
    assert _both([queue], redis) is None  # burst: nothing, at once
    with pytest.raises(DequeueTimeout):
        _both([queue], redis, timeout=1)  # blocking: RQ's BLMOVE, for its timeout
