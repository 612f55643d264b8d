"""A lease says "a run of this schedule is alive". A run whose lease lapsed lost its worker."""

from __future__ import annotations

import contextlib
import threading

from redis import Redis
from redis.exceptions import RedisError


def lease_key(schedule_id: str) -> str:
    return f"recur:lease:{schedule_id}"


def holder(redis: Redis, schedule_id: str) -> str | None:
    value = redis.get(lease_key(schedule_id))
    return value.decode() if value else None


def holders(redis: Redis, schedule_ids: list[str]) -> list[str | None]:
    if not schedule_ids:
        return []
    values = redis.mget([lease_key(s) for s in schedule_ids])
    return [v.decode() if v else None for v in values]


class Lease:
    """Held by the process running a link, renewed from a daemon thread until released.

    Renewal re-creates the key if it vanished (a Redis flush), so a live run is not written off.
    """

    def __init__(self, redis: Redis, schedule_id: str, run_id: str, ttl_seconds: float) -> None:
        self._redis = redis
        self._key = lease_key(schedule_id)
        self._run_id = run_id
        self._ttl_ms = max(1000, int(ttl_seconds * 1000))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Lease:
        self._renew()
        self._thread = threading.Thread(target=self._renew_loop, name="recur-lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        with contextlib.suppress(RedisError):  # if Redis is gone, the lease lapses by itself
            self._redis.eval(_RELEASE, 1, self._key, self._run_id)

    def _renew(self) -> None:
        with contextlib.suppress(RedisError):  # a missed renewal is retried a quarter-lease later
            self._redis.set(self._key, self._run_id, px=self._ttl_ms)

    def _renew_loop(self) -> None:
        while not self._stop.wait(self._ttl_ms / 4000):
            self._renew()


_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
