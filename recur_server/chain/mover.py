"""Moves due links from RQ's scheduled registry onto the queue, as soon as they are due.

RQ's own scheduler passes once a second under a lock that a killed worker leaves behind for a
minute or more. This mover needs no lock: one Lua script takes each due link out of the registry
and pushes it onto the queue atomically, so several movers (one per worker) never move a link twice.
Links stay ordinary RQ jobs in RQ's keys, visible to `rq info`.
"""

from __future__ import annotations

from datetime import datetime

from redis import Redis
from rq import Queue
from rq.job import Job
from rq.utils import utcformat

from recur_server.chain.redis_links import scheduled_key

_MOVE_DUE = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  local key = ARGV[3] .. id
  if redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, 'status', 'queued', 'enqueued_at', ARGV[4])
    redis.call('RPUSH', KEYS[2], id)
  end
end
redis.call('SADD', KEYS[3], KEYS[2])
return #ids
"""


class Mover:
    def __init__(self, redis: Redis, queue: Queue, batch: int = 500) -> None:
        self._redis = redis
        self._queue = queue
        self._registry_key = scheduled_key(queue)
        self._batch = batch
        self._script = redis.register_script(_MOVE_DUE)

    def move_due(self, now: datetime) -> int:
        """Move every link due at or before `now`; returns how many were moved.

        `now` is the cluster clock (clock.utcnow()): whichever host moves a link, it is never moved early,
        and the enqueued_at stamped here, which recovery's in-hand grace reads, is on the cluster clock too.
        """
        moved = 0
        while True:
            count = int(
                self._script(
                    keys=[self._registry_key, self._queue.key, Queue.redis_queues_keys],
                    args=[now.timestamp(), self._batch, Job.redis_job_namespace_prefix, utcformat(now)],
                )
            )
            moved += count
            if count < self._batch:
                return moved

    def next_due(self) -> float | None:
        """Epoch seconds of the earliest scheduled link, or None when none is scheduled."""
        head = self._redis.zrange(self._registry_key, 0, 0, withscores=True)
        return float(head[0][1]) if head else None
