"""The workers' dequeue: RQ's, with a waiting job taken and read in one round trip.

RQ's Queue.dequeue_any takes a job's ID off the queue (LMOVE into the queue's intermediate list, or LPOP when a
worker listens on several queues) and then reads the job's hash (HGETALL): two round trips for each job. Here one
script does both, the same commands on the same keys in the same order, when a job is waiting; when none is, RQ's
own blocking dequeue waits for the next, as it always did. The workers name this class as their queue_class, RQ's
own option for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from redis import Redis
from redis.commands.core import Script
from rq import Queue
from rq.intermediate_queue import IntermediateQueue
from rq.job import Job, parse_job_id
from rq.utils import as_text, backend_class, get_version

# KEYS: the queues, in the worker's order, then (with one queue, Redis 6.2 or later, as RQ does) that queue's
# intermediate list, into which the ID is moved; with several, the ID is LPOPped. ARGV[1]: the job key's prefix;
# ARGV[2]: 1 when KEYS[2] is that intermediate list.
# Returns the queue's key, the job's ID and its hash's fields and values (none if the hash is gone), or false
# when every queue is empty.
_TAKE = """
local queues = #KEYS
local intermediate = nil
if tonumber(ARGV[2]) == 1 then
  queues, intermediate = 1, KEYS[2]
end
for i = 1, queues do
  local queue = KEYS[i]
  local id
  if intermediate then
    id = redis.call("LMOVE", queue, intermediate, "LEFT", "RIGHT")
  else
    id = redis.call("LPOP", queue)
  end
  if id then
    return {queue, id, redis.call("HGETALL", ARGV[1] .. id)}
  end
end
return false
"""


_take: Script | None = None


def _script(connection: Redis) -> Script:
    """The script, registered once in this process (each call names the connection it runs on)."""
    global _take
    if _take is None:
        _take = connection.register_script(_TAKE)
    return _take


class OneTripQueue(Queue):
    """RQ's Queue; its dequeue takes a waiting job and reads it in one round trip."""

    @classmethod
    def dequeue_any(cls, queues: Iterable[Queue], timeout: int | None, connection: Redis,
                    job_class: type[Job] | None = None, serializer: Any = None,
                    death_penalty_class: Any = None) -> tuple[Job, Queue] | None:
        queues = list(queues)
        keys = [queue.key for queue in queues]
        intermediate = len(keys) == 1 and get_version(connection) >= (6, 2, 0)
        if intermediate:
            keys.append(IntermediateQueue.get_intermediate_queue_key(keys[0]))
        job_cls: type[Job] = backend_class(cls, "job_class", override=job_class)
        args: list[str | int] = [job_cls.redis_job_namespace_prefix, int(intermediate)]
        while True:
            taken = _script(connection)(keys=keys, args=args, client=connection)
            if not taken:  # nothing waits: RQ's own dequeue blocks until something does
                return super().dequeue_any(queues, timeout, connection, job_class=job_class, serializer=serializer,
                                           death_penalty_class=death_penalty_class)
            queue_key, job_id, fields = taken
            if not fields:  # its hash is gone (RQ's dequeue passes such an ID by too)
                continue
            job = job_cls(parse_job_id(as_text(job_id)), connection=connection, serializer=serializer)
            job.restore(dict(zip(fields[::2], fields[1::2], strict=True)))
            queue = cls.from_queue_key(as_text(queue_key), connection=connection, job_class=job_cls,
                                       serializer=serializer, death_penalty_class=death_penalty_class)
            return job, queue
