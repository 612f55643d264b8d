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

from recur_server.chain.redis_links import HEADS_KEY, head_lua, job_data, scheduled_key, template
from recur_server.infra.config import Settings

# A link put by an older version is its whole hash already (status scheduled): it is marked queued. A small
# one (redis_links) becomes its hash here, if its schedule's head still names it through this queue: the
# fields every link shares, its own (description, timeout) from the head, and the times it was made and
# queued, which are now on the cluster clock (recovery's in-hand grace reads enqueued_at).
_MOVE_DUE = head_lua() + """
local unpack = unpack or table.unpack
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local prefix, stamp, queue_name, data = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local shared = {}
for i = 7, #ARGV do shared[#shared + 1] = ARGV[i] end
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[1], id)
  local key = prefix .. id
  local status = redis.call('HGET', key, 'status')
  if status == 'scheduled' then
    redis.call('HSET', key, 'status', 'queued', 'enqueued_at', stamp)
    redis.call('RPUSH', KEYS[2], id)
  else
    local schedule = link_schedule(id)
    local head = schedule and head_of(KEYS[4], schedule)
    if head and head[3] == id and head[6] == queue_name then
      redis.call('DEL', key)
      redis.call('HSET', key, 'created_at', stamp, 'enqueued_at', stamp, 'status', 'queued', 'data', data,
                 'description', link_description(schedule, head), 'timeout', head[5], unpack(shared))
      redis.call('RPUSH', KEYS[2], id)
    end
  end
end
redis.call('SADD', KEYS[3], KEYS[2])
return #ids
"""


class Mover:
    def __init__(self, redis: Redis, queue: Queue, batch: int = 500,
                 result_ttl: int = Settings.RECUR_LINK_RESULT_TTL) -> None:
        self._redis = redis
        self._queue = queue
        self._registry_key = scheduled_key(queue)
        self._batch = batch
        self._script = redis.register_script(_MOVE_DUE)
        self._fields = [job_data(queue), *template(queue, result_ttl)]

    def move_due(self, now: datetime) -> int:
        """Move every link due at or before `now`; returns how many were moved.

        `now` is the cluster clock (clock.utcnow()): whichever host moves a link, it is never moved early,
        and the enqueued_at stamped here, which recovery's in-hand grace reads, is on the cluster clock too.
        """
        moved = 0
        while True:
            count = int(
                self._script(
                    keys=[self._registry_key, self._queue.key, Queue.redis_queues_keys, HEADS_KEY],
                    args=[now.timestamp(), self._batch, Job.redis_job_namespace_prefix, utcformat(now),
                          self._queue.name, *self._fields],
                )
            )
            moved += count
            if count < self._batch:
                return moved

    def next_due(self) -> float | None:
        """Epoch seconds of the earliest scheduled link, or None when none is scheduled."""
        head = self._redis.zrange(self._registry_key, 0, 0, withscores=True)
        return float(head[0][1]) if head else None
