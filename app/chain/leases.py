"""A lease says "a run of this schedule is alive". A run whose lease lapsed lost its worker."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import RedisError

T = TypeVar("T")


def lease_key(schedule_id: str) -> str:
    return f"recur:lease:{schedule_id}"


def holders(redis: Redis, schedule_ids: list[str]) -> list[str | None]:
    if not schedule_ids:
        return []
    values: list[bytes | None] = redis.mget([lease_key(s) for s in schedule_ids])  # type: ignore[assignment]
    return [v.decode() if v else None for v in values]


class Lease:
    """Held by the process running a link, renewed every quarter-lease until released.

    Renewal re-creates the key if it vanished (a Redis flush), so a live run is not written off.
    """

    def __init__(self, redis: Redis, schedule_id: str, run_id: str, ttl_seconds: float) -> None:
        self._redis = redis
        self._key = lease_key(schedule_id)
        self._run_id = run_id
        self._ttl_ms = max(1000, int(ttl_seconds * 1000))
        self._held = False
        self._lock = threading.Lock()  # a renewal never lands after the release

    @property
    def period(self) -> float:
        return self._ttl_ms / 4000

    def acquire(self) -> str | None:
        """Take the lease, unless another run holds it: then take nothing and return that run's ID.

        One round trip: the overlap check and the taking are one script.
        """
        return self._taken_unless(self._redis.eval(_ACQUIRE, 1, self._key, self._run_id, self._ttl_ms))

    def acquire_during(self, work: Callable[[], T]) -> tuple[T, str | None]:
        """acquire(), with its round trip overlapping `work` (the claim's transaction): the script is sent,
        `work` runs, then the answer is read. Returns work's result and the other holder, if any.

        If `work` raises, a lease taken meanwhile is released. Taking the lease a moment before the run
        it names exists is harmless: the reconciler only writes off runs whose lease is missing.
        """
        pool = self._redis.connection_pool
        connection: Any = pool.get_connection()
        try:
            connection.send_command("EVAL", _ACQUIRE, 1, self._key, self._run_id, self._ttl_ms)
        except RedisError:
            connection.disconnect()
            pool.release(connection)
            result = work()
            return result, self.acquire()  # with the client's own retries
        try:
            try:
                result = work()
            finally:
                other = connection.read_response()
        except BaseException:
            connection.disconnect()  # its state is unknown: never hand it back half-read
            pool.release(connection)
            if not other:
                with contextlib.suppress(RedisError):
                    self._redis.eval(_RELEASE, 1, self._key, self._run_id)
            raise
        pool.release(connection)
        return result, self._taken_unless(other)

    def _taken_unless(self, other: object) -> str | None:
        """From _ACQUIRE's answer: the other holder's run ID, or None after starting to renew ours."""
        if other:
            return other.decode() if isinstance(other, bytes) else str(other)
        self._held = True
        _renewer().add(self)
        return None

    def __enter__(self) -> Lease:
        """Renewed until the block ends (acquire() first, or entering takes the lease unconditionally)."""
        if not self._held:
            self._held = True
            self._renew()
            _renewer().add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release_now()

    def release_now(self) -> None:
        if self._stop_renewing():
            with contextlib.suppress(RedisError):  # if Redis is gone, the lease lapses by itself
                self._redis.eval(_RELEASE, 1, self._key, self._run_id)

    def release(self, pipeline: Pipeline) -> None:
        """Release as part of the caller's pipeline (saves a round trip); no renewal follows."""
        if self._stop_renewing():
            pipeline.eval(_RELEASE, 1, self._key, self._run_id)

    def renew_here(self) -> None:
        """Renew from this process as well (a forked work horse: its parent's renewer thread is not here)."""
        if self._held:
            _renewer().add(self)

    def forget(self) -> None:
        """Stop renewing from this process and leave the key to the process that releases it."""
        self._stop_renewing()

    def _stop_renewing(self) -> bool:
        """Stop renewing; True the first time (the caller then deletes the key)."""
        with self._lock:
            was_held, self._held = self._held, False
        _renewer().discard(self)
        return was_held

    def renew_if_held(self) -> None:
        with self._lock:
            if self._held:
                self._renew()

    def _renew(self) -> None:
        with contextlib.suppress(RedisError):  # a missed renewal is retried a quarter-lease later
            self._redis.set(self._key, self._run_id, px=self._ttl_ms)


class _Renewer:
    """One daemon thread per process renews every lease the process holds. A thread started and joined
    per run cost more than a short task itself."""

    def __init__(self) -> None:
        self._due: dict[int, tuple[Lease, float]] = {}
        self._wake_at: float | None = None  # when the thread wakes next by itself (None: when told)
        self._changed = threading.Condition()
        threading.Thread(target=self._loop, name="recur-lease", daemon=True).start()

    def add(self, lease: Lease) -> None:
        at = time.monotonic() + lease.period
        with self._changed:
            self._due[id(lease)] = (lease, at)
            if self._wake_at is None or at < self._wake_at:  # else it wakes early enough by itself
                self._wake_at = at
                self._changed.notify()

    def discard(self, lease: Lease) -> None:
        with self._changed:
            self._due.pop(id(lease), None)

    def _loop(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                due = [lease for lease, at in self._due.values() if at <= now]
                for lease in due:
                    self._due[id(lease)] = (lease, now + lease.period)
                if not due:
                    self._wake_at = min((at for _, at in self._due.values()), default=None)
                    self._changed.wait(None if self._wake_at is None else self._wake_at - now)
                    continue
            for lease in due:
                lease.renew_if_held()


_renewers: dict[int, _Renewer] = {}


def _renewer() -> _Renewer:
    """This process's renewer (a forked work horse starts its own: threads do not survive a fork)."""
    pid = os.getpid()
    renewer = _renewers.get(pid)
    if renewer is None:
        _renewers.clear()
        renewer = _renewers[pid] = _Renewer()
    return renewer


_ACQUIRE = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then
  return current
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
