"""The one place that reads clocks. Everything else takes `now` as an argument.

Whether a link is due or early, whether a lease lapsed, which ticks were missed: several hosts must agree
on these, so they are decided on one clock that every process shares, Redis's (TIME). `utcnow()` is that
cluster clock once `use_cluster_clock` has wired it (create_app does); a host's own wall clock
(`local_now()`) serves logs only.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from redis import Redis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

# How often a process re-reads Redis TIME. Between reads, the cluster clock runs on this host's monotonic
# clock, which NTP slews but never steps: over 30 s it drifts from Redis's by well under a millisecond.
RESYNC_SECONDS = 30.0
# After a failed read: the last offset stays in use, and the next read is tried this much later.
RETRY_SECONDS = 1.0
# A read whose round trip took longer than this is taken again (twice at most): half the round trip is
# how far the offset may be off.
GOOD_ROUND_TRIP_SECONDS = 0.005
# How far a host's own clock may be off for the stamps RQ writes with it (a job's started_at) to be trusted.
HOST_SKEW_ALLOWANCE_SECONDS = 10.0

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ClusterClock:
    """Redis TIME, read once and then carried forward on `time.monotonic()`, re-read every `resync_seconds`.

    Reading it costs no round trip (one every `resync_seconds` per process). When Redis cannot be read,
    the last offset stays in use; before the first read succeeds, the host's own clock stands in.
    """

    def __init__(self, redis: Callable[[], Redis], resync_seconds: float = RESYNC_SECONDS) -> None:
        self._redis = redis  # called at each read, so that the client the app holds then is the one used
        self._resync = resync_seconds
        self._offset: float | None = None  # Redis TIME minus time.monotonic(), in seconds
        self._read_at = -math.inf  # monotonic time of the next read
        self._read_lock = threading.Lock()
        self._failing = False

    def now(self) -> datetime:
        instant = time.monotonic()
        if instant >= self._read_at:
            self._read()
            instant = time.monotonic()
        offset = self._offset
        if offset is None:
            return local_now()
        return _EPOCH + timedelta(seconds=instant + offset)

    def _read(self) -> None:
        # One thread reads; the others go on with the offset they have (or wait for the first one).
        if not self._read_lock.acquire(blocking=self._offset is None):
            return
        try:
            if time.monotonic() < self._read_at:  # another thread read it meanwhile
                return
            try:
                self._offset = self._measure()
                self._read_at = time.monotonic() + self._resync
                self._failing = False
            except (RedisError, OSError) as exc:
                self._read_at = time.monotonic() + RETRY_SECONDS
                if not self._failing:  # once per outage, not once a second
                    self._failing = True
                    kept = "keeping the last offset" if self._offset is not None else "using this host's clock"
                    log.warning("could not read the cluster clock (Redis TIME): %s; %s", exc, kept)
        finally:
            self._read_lock.release()

    def _measure(self) -> float:
        """The offset from this host's monotonic clock to Redis TIME, from the quickest of up to 3 reads."""
        redis = self._redis()
        best: tuple[float, float] | None = None  # (round trip, offset)
        for _ in range(3):
            sent = time.monotonic()
            seconds, micros = redis.time()
            received = time.monotonic()
            sample = (received - sent, seconds + micros / 1e6 - (sent + received) / 2)
            best = sample if best is None or sample < best else best
            if sample[0] <= GOOD_ROUND_TRIP_SECONDS:
                break
        assert best is not None
        return best[1]

    def after_fork_in_child(self) -> None:
        """The offset holds in a forked child (the monotonic clock is the machine's); a read the parent
        had under way does not, and its lock must not stay held."""
        self._read_lock = threading.Lock()


_cluster: ClusterClock | None = None
_fork_hook_installed = False


def use_cluster_clock(redis: Callable[[], Redis] | None) -> None:
    """Make `utcnow()` the cluster clock read from the Redis that `redis()` returns (None: this host's
    clock). One per process; nothing is read until the first `utcnow()`."""
    global _cluster, _fork_hook_installed
    _cluster = ClusterClock(redis) if redis is not None else None
    if not _fork_hook_installed:
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _fork_hook_installed = True


def _after_fork_in_child() -> None:
    if _cluster is not None:
        _cluster.after_fork_in_child()


def utcnow() -> datetime:
    """The current instant, timezone-aware UTC, by the cluster clock (by this host's until it is wired)."""
    cluster = _cluster
    return cluster.now() if cluster is not None else local_now()


def local_now() -> datetime:
    """This host's own wall clock: for logs, never for a decision several hosts must agree on."""
    return datetime.now(UTC)


def monotonic() -> float:
    return time.monotonic()


def ceil_second(instant: datetime) -> datetime:
    """Round up to a whole second (calendar ticks, one-shots and retries are whole seconds; never early)."""
    if instant.microsecond == 0:
        return instant
    return datetime.fromtimestamp(math.ceil(instant.timestamp()), UTC)
