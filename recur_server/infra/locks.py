"""Locks that one process at a time holds across the cluster (the watch, the waiting runs' and the follow
dispatcher's passes, reconciling, pruning, the declarations sync): redis-py's Lock, a key set NX with an owner
token and an expiry, which only its owner may renew (back to its full TTL) or delete.

A holder slower than the TTL has lost the lock: renewing it then raises LockLost, and releasing it leaves the
key alone (another process may hold it by then). A lock's token belongs to the object, not to the thread that
took it (thread_local=False): each pass makes its own, and may renew it from whichever thread its work runs in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from redis import Redis
from redis.exceptions import LockNotOwnedError
from redis.lock import Lock


class LockLost(Exception):
    """The lock lapsed mid-work, and another process may hold it now: the holder stops where it is."""


class ClusterLock(Lock):
    """The lock `name`, held for `ttl_ms` from its taking and from each renewal."""

    def __init__(self, redis: Redis, name: str, ttl_ms: int) -> None:
        super().__init__(redis, name, timeout=ttl_ms / 1000, thread_local=False)

    def renew(self) -> None:
        """Back to the full TTL, or LockLost if the lock is no longer ours."""
        try:
            self.reacquire()
        except LockNotOwnedError:
            raise LockLost(f"the lock {self.name} lapsed and another process may hold it") from None

    def keep_for(self, seconds: float) -> None:
        """Hold the lock `seconds` more from now instead of letting it go (a pass done once a period, whichever
        process comes first); a lock that lapsed is left to whoever holds it now."""
        with contextlib.suppress(LockNotOwnedError):
            self.extend(seconds, replace_ttl=True)

    def release_if_ours(self) -> None:
        """Delete the key if it still holds our token; a lock that lapsed is left to whoever holds it now."""
        with contextlib.suppress(LockNotOwnedError):
            self.release()


@contextlib.contextmanager
def hold_if_free(redis: Redis, name: str, ttl_ms: int) -> Iterator[ClusterLock | None]:
    """Try once to take `name`: the block gets the lock, or None when another process holds it. On the way
    out the lock is released if it is still ours."""
    lock = ClusterLock(redis, name, ttl_ms)
    if not lock.acquire(blocking=False):
        yield None
        return
    try:
        yield lock
    finally:
        lock.release_if_ours()
