"""The sync's lock: one process syncs at a time across the cluster (recur_server.infra.locks: a Redis key set NX with
a token and an expiry, renewed between steps, released only by its holder), and the digest of the declarations
last synced, so that workers starting together after one deploy sync once."""

from __future__ import annotations

from redis import Redis

from recur_server.infra.locks import ClusterLock

SYNC_LOCK = "recur:declarations-sync-lock"
SYNC_LOCK_MS = 30_000  # renewed after each step: a holder killed mid-sync blocks the others this long at most
SYNCED_KEY = "recur:declarations-synced"  # the digest of what the last sync brought in, for SYNCED_SECONDS
SYNCED_SECONDS = 600


class SyncLock:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.lock = ClusterLock(redis, SYNC_LOCK, SYNC_LOCK_MS)

    def acquire(self, wait_seconds: float) -> bool:
        """Take the lock, waiting up to `wait_seconds` for a holder to let go."""
        return bool(self.lock.acquire(blocking_timeout=wait_seconds))

    def renew(self) -> None:
        """Back to the full TTL; LockLost (recur_server.infra.locks) if it lapsed and another process may hold it."""
        self.lock.renew()

    def release(self) -> None:
        self.lock.release_if_ours()

    def synced_already(self, digest: str) -> bool:
        value = self.redis.get(SYNCED_KEY)
        return value is not None and (value.decode() if isinstance(value, bytes) else value) == digest

    def mark_synced(self, digest: str) -> None:
        self.redis.set(SYNCED_KEY, digest, ex=SYNCED_SECONDS)
