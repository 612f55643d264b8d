"""The cluster's locks (recur_server.infra.locks): one holder at a time, renewed and released only by their owner, and
left alone once they lapsed and another process took them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from redis import Redis

from recur_server.infra.locks import ClusterLock, LockLost, hold_if_free

NAME = "recur:test-lock"


@pytest.fixture
def redis(redis_server) -> Iterator[Redis]:  # type: ignore[no-untyped-def]
    client = Redis.from_url(redis_server.url)
    client.flushall()
    yield client
    client.close()


def test_one_holder_at_a_time_and_released_on_the_way_out(redis):
    with hold_if_free(redis, NAME, 10_000) as lock:
        assert lock is not None
        assert 9_000 < redis.pttl(NAME) <= 10_000
        with hold_if_free(redis, NAME, 10_000) as second:
            assert second is None  # held: nothing waits
    assert not redis.exists(NAME)


def test_a_lock_another_process_holds_is_left_alone(redis):
    redis.set(NAME, "another process", px=10_000)
    with hold_if_free(redis, NAME, 10_000) as lock:
        assert lock is None
    assert redis.get(NAME) == b"another process"


def test_renewal_restores_the_ttl_and_a_lapsed_lock_raises_lock_lost(redis):
    with hold_if_free(redis, NAME, 10_000) as lock:
        assert lock is not None
        redis.pexpire(NAME, 500)
        lock.renew()
        assert redis.pttl(NAME) > 9_000
        redis.delete(NAME)  # it lapsed, and another process took it
        redis.set(NAME, "another process", px=5_000)
        with pytest.raises(LockLost, match=NAME):
            lock.renew()
        assert redis.pttl(NAME) <= 5_000  # not ours to extend
    assert redis.get(NAME) == b"another process"  # nor to release


def test_the_token_belongs_to_the_lock_not_the_thread(redis):
    lock = ClusterLock(redis, NAME, 10_000)
    assert lock.acquire(blocking=False)
    renewed: list[bool] = []
    worker = threading.Thread(target=lambda: renewed.append(lock.renew() is None))
    worker.start()
    worker.join()
    assert renewed == [True]
    lock.release_if_ours()
    assert not redis.exists(NAME)
