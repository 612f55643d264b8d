"""A lease says "a run of this schedule is alive". A run whose lease lapsed lost its worker, or ran past
its deadline with a task that would not stop."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import RedisError

from recur_server.infra import clock
from recur_server.infra.threads import start_daemon

log = logging.getLogger(__name__)


def lease_key(schedule_id: str) -> str:
    return f"recur:lease:{schedule_id}"


def run_lease_key(schedule_id: str, run_id: str) -> str:
    """The lease of a run outside the chain (manual, backfill, a detached tick): several may run at once."""
    return f"recur:lease:{schedule_id}:{run_id}"


def holders(redis: Redis, schedule_ids: list[str]) -> list[str | None]:
    if not schedule_ids:
        return []
    values: list[bytes | None] = redis.mget([lease_key(s) for s in schedule_ids])  # type: ignore[assignment]
    return [v.decode() if v else None for v in values]


# A missing lease means its holder is gone only if Redis has been answering, and keeping time, all along: a
# Redis that stalls longer than a lease (SIGSTOP, a VM paused, a long fork) or that nobody could reach lets
# every lease lapse by its own clock, and each live holder re-creates its own at its next renewal. The pulse
# tells the two apart: every worker's background loop sets it often, for a short while (pulse_every,
# PULSE_TTL_SHARE of a lease). Whoever finds it lapsed while Redis still holds its data opens an unsure
# window (a lease plus the Redis timeout: time for every live holder to renew) in which no run is written
# off for a missing lease. The epoch key is there as long as Redis keeps its data: the reconciler pass that
# finds it missing (Redis flushed, or restarted empty) writes nothing off either (recur_server.services.reconcile).
EPOCH_KEY = "recur:epoch"
PULSE_KEY = "recur:pulse"
UNSURE_KEY = "recur:leases-unsure"
PULSE_TTL_SHARE = 0.5
_PULSE = """
local lapsed = redis.call('EXISTS', KEYS[1]) == 0
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
if lapsed and redis.call('EXISTS', KEYS[3]) == 1 then redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) end
return redis.call('EXISTS', KEYS[2])
"""


def pulse_every(lease_seconds: float) -> float:
    """How often the background loop pulses: four pulses to each pulse's life."""
    return lease_seconds * PULSE_TTL_SHARE / 4


def pulse(redis: Redis, lease_seconds: float, redis_timeout_seconds: float) -> bool:
    """Say Redis answered now. True when a missing lease may be taken to mean its holder is gone: no gap in
    the pulses, or the unsure window after one has passed."""
    ttl_ms = max(1, int(lease_seconds * PULSE_TTL_SHARE * 1000))
    unsure_ms = max(1, int((lease_seconds + redis_timeout_seconds) * 1000))
    return not redis.eval(_PULSE, 3, PULSE_KEY, UNSURE_KEY, EPOCH_KEY, ttl_ms, unsure_ms)


class Lease:
    """Held by the process running a link, renewed every quarter-lease until released or until the run's
    deadline (its timeout plus a grace) has passed: a run whose task will not stop then loses its lease,
    and the reconciler writes it off.

    Every write is conditional on the key holding this run's token: renewal re-creates a vanished key (a
    Redis flush: a live run is not written off) but never takes over another run's, and release deletes
    only its own.
    """

    def __init__(self, redis: Redis, schedule_id: str, run_id: str, ttl_seconds: float,
                 deadline: float | None = None, per_run: bool = False) -> None:
        self._redis = redis
        self._key = run_lease_key(schedule_id, run_id) if per_run else lease_key(schedule_id)
        self._run_id = run_id
        self._ttl_ms = max(1000, int(ttl_seconds * 1000))
        self._deadline = deadline  # on clock.monotonic(); None: renewed until released
        self._held = False  # from taking the key until releasing it (or leaving it to another process)
        self._renewing = True  # until the deadline passes or another run's token is found in the key
        self._lock = threading.Lock()  # a renewal never lands after the release

    @property
    def period(self) -> float:
        return self._ttl_ms / 4000

    def acquire(self, along: Callable[[Pipeline], object] | None = None) -> str | None:
        """Take the lease, unless another run holds it: then take nothing and return that run's ID.

        `along` adds the caller's own commands to the round trip that takes the lease (one MULTI/EXEC;
        they run whether or not the lease is free)."""
        if along is None:
            other = self._take()
        else:
            with self._redis.pipeline() as pipe:
                along(pipe)
                pipe.eval(_TAKE, 1, self._key, self._run_id, self._ttl_ms)
                other = _holder(pipe.execute()[-1])
        if other is None:
            self._held = True
            _renewer().add(self)
        return other

    def __enter__(self) -> Lease:
        """Renewed until the block ends (acquire() first, or entering takes the lease if it is free)."""
        if not self._held:
            self._held = True
            self.renew_if_held()
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
        if self._held and self._renewing:
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
        """One renewal (the renewer thread's, every quarter-lease). Past the deadline, or once another run
        holds the key, renewals stop for good; the release still runs (and deletes only our own key)."""
        with self._lock:
            if not (self._held and self._renewing):
                return
            if self._deadline is not None and clock.monotonic() > self._deadline:
                log.warning("run %s is past its timeout and grace: its lease is left to lapse", self._run_id)
            else:
                try:
                    other = self._take()
                except RedisError:  # a missed renewal is retried a quarter-lease later
                    return
                if other is None:
                    return
                log.warning("run %s was written off and run %s holds its schedule's lease: renewal stops",
                            self._run_id, other)
            self._renewing = False
        _renewer().discard(self)

    def _take(self) -> str | None:
        """The one script that acquires and renews: set the key to our token, for a full lease, if it is
        free or already ours; otherwise leave it and return the run ID it holds."""
        return _holder(self._redis.eval(_TAKE, 1, self._key, self._run_id, self._ttl_ms))


def _holder(taken: object) -> str | None:
    """What _TAKE answered: None when the lease is ours, else the run ID that holds it."""
    if not taken:
        return None
    return taken.decode() if isinstance(taken, bytes) else str(taken)


class _Renewer:
    """One daemon thread per process renews every lease the process holds. A thread started and joined
    per run cost more than a short task itself.

    With no lease due sooner, the thread wakes every IDLE_WAKE_SECONDS by itself, so that taking a lease
    whose first renewal is due later than that does not have to wake it (a wake per link, and the thread
    switch it costs, was a measurable share of a short link)."""

    IDLE_WAKE_SECONDS = 1.0

    def __init__(self) -> None:
        self._due: dict[int, tuple[Lease, float]] = {}
        self._wake_at = time.monotonic() + self.IDLE_WAKE_SECONDS  # when the thread wakes next by itself
        self._changed = threading.Condition()
        start_daemon(self._loop, "recur-lease")

    def add(self, lease: Lease) -> None:
        at = time.monotonic() + lease.period
        with self._changed:
            self._due[id(lease)] = (lease, at)
            if at < self._wake_at:  # else it wakes early enough by itself
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
                    self._wake_at = min((now + self.IDLE_WAKE_SECONDS, *(at for _, at in self._due.values())))
                    self._changed.wait(self._wake_at - now)
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


# Acquiring and renewing are the same step: a run re-takes its lease every quarter-lease, and a key
# that vanished (Redis flushed or restarted empty) is taken again, but another run's never is.
_TAKE = """
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
