"""The sync's lock: one process syncs at a time across the cluster (a Redis key set NX with a token and an
expiry, renewed between steps, released only by its holder), and the digest of the declarations last
synced, so that workers starting together after one deploy sync once."""

from __future__ import annotations

import time
import uuid

from redis import Redis

SYNC_LOCK = "recur:declarations-sync-lock"
SYNC_LOCK_MS = 30_000  # renewed after each step: a holder killed mid-sync blocks the others this long at most
SYNCED_KEY = "recur:declarations-synced"  # the digest of what the last sync brought in, for SYNCED_SECONDS
SYNCED_SECONDS = 600
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
_RENEW = ("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end "
          "return 0")


class LockLost(Exception):
    """The lock lapsed mid-sync and another process holds it now."""


class SyncLock:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.token = uuid.uuid4().hex

    def acquire(self, wait_seconds: float) -> bool:
        """Take the lock, waiting up to `wait_seconds` for a holder to let go."""
        deadline = time.monotonic() + wait_seconds
        while not self.redis.set(SYNC_LOCK, self.token, nx=True, px=SYNC_LOCK_MS):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def renew(self) -> None:
        if not self.redis.eval(_RENEW, 1, SYNC_LOCK, self.token, SYNC_LOCK_MS):
            raise LockLost("the declarations sync lock lapsed and another process took it")

    def release(self) -> None:
        self.redis.eval(_RELEASE, 1, SYNC_LOCK, self.token)

    def synced_already(self, digest: str) -> bool:
        value = self.redis.get(SYNCED_KEY)
        return value is not None and (value.decode() if isinstance(value, bytes) else value) == digest

    def mark_synced(self, digest: str) -> None:
        self.redis.set(SYNCED_KEY, digest, ex=SYNCED_SECONDS)
