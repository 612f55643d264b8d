"""What recovery sees of a link in Redis: is a pending copy there, and under which revision.

Read in bulk (one script per 1,000 links), and linear in the links checked: the queue list, which only a
scan can search, is read at most once per reconciler pass, and only if some link needs it. (Putting and
cancelling links is recur_server.chain.redis_links.)
"""

from __future__ import annotations

from datetime import UTC, datetime

from redis import Redis
from rq import Queue
from rq.job import Job
from rq.utils import utcformat, utcparse

from recur_server.chain.redis_links import (
    HEADS_KEY,
    QUEUE_PREFIX,
    SCHEDULED_PREFIX,
    head_lua,
    scheduled_key,
)
from recur_server.infra.clock import HOST_SKEW_ALLOWANCE_SECONDS

# A link popped off the queue (or started) but not claimed within this long lost its worker on the way.
IN_HAND_GRACE_SECONDS = 10.0


class QueuedIds:
    """The IDs on a queue's list, each list read the first time one of its IDs is looked up, then kept for
    the pass.

    Read newest first, LRANGE by LRANGE from the tail: movers push at the tail and workers pop at the
    head, so a push between two reads only makes the next read see some IDs twice, and none is missed.
    A link that needs the list was queued before the pass began (IN_HAND_GRACE_SECONDS before its `now`),
    so a list read later in the same pass still shows it if it is still queued.
    """

    CHUNK = 10_000

    def __init__(self, redis: Redis, queue: Queue) -> None:
        self._redis = redis
        self._default = queue.name
        self._ids: dict[str, set[bytes]] = {}

    def __contains__(self, job_id: str) -> bool:
        return self.on(self._default, job_id)

    def on(self, queue_name: str, job_id: str) -> bool:
        """Whether `job_id` is on the list of the queue named `queue_name`."""
        ids = self._ids.get(queue_name)
        if ids is None:
            ids = self._ids[queue_name] = self._read(QUEUE_PREFIX + queue_name)
        return job_id.encode() in ids

    def _read(self, key: str) -> set[bytes]:
        ids: set[bytes] = set()
        end = -1
        while True:
            chunk: list[bytes] = self._redis.lrange(key, end - self.CHUNK + 1, end)  # type: ignore[assignment]
            ids.update(chunk)
            if len(chunk) < self.CHUNK:
                return ids
            end -= self.CHUNK


def pending_revisions(redis: Redis, queue: Queue, job_ids: list[str], now: float,
                      queued: QueuedIds | None = None, queues: list[str | None] | None = None) -> list[int | None]:
    """For each link ID, the revision of its pending copy in Redis, or None when there is none.

    Pending means: scheduled (in the scheduled registry), queued (on the queue list), or taken by a
    worker (RQ's intermediate queue, or started) less than IN_HAND_GRACE_SECONDS ago by the cluster
    clock (`now`; RQ's started_at, stamped with the taking host's own clock, is allowed
    HOST_SKEW_ALLOWANCE_SECONDS more). A link a killed worker took and never claimed is not pending:
    recovery re-creates it (and the fence keeps any stray copy from running the tick twice).
    `queues`: for each link, the queue its row expects it in (None: `queue`); a copy still waiting in
    another queue (its workflow moved and the re-put did not land) is not pending, so recovery puts it
    where it belongs. A reconciler pass passes one `queued` to all its calls.
    """
    entries: list[bytes] = []
    for offset in range(0, len(job_ids), CHECK_BATCH):
        chunk = job_ids[offset:offset + CHECK_BATCH]
        entries += redis.eval(_PENDING_STATES, 2, scheduled_key(queue), HEADS_KEY, Job.redis_job_namespace_prefix,
                              *chunk)
    # Q: enqueued_at, stamped by Recur's mover on the cluster clock. T: started_at, stamped by RQ with the
    # clock of the host that took the link, which may be off: allowed for.
    cutoffs = {
        b"Q": utcformat(datetime.fromtimestamp(now - IN_HAND_GRACE_SECONDS, UTC)).encode(),
        b"T": utcformat(datetime.fromtimestamp(now - IN_HAND_GRACE_SECONDS - HOST_SKEW_ALLOWANCE_SECONDS,
                                               UTC)).encode(),
    }
    expected = queues if queues is not None else [None] * len(job_ids)
    out: list[int | None] = []
    for job_id, entry, where in zip(job_ids, entries, expected, strict=True):
        kind, stamp, origin_bytes, revision = entry.split(b"\n", 3) if entry else (b"", b"", b"", b"")
        origin = origin_bytes.decode() or queue.name
        pending = kind == b"S" or (kind in cutoffs and _recent(stamp, cutoffs[kind]))
        if kind in (b"S", b"Q") and origin != (where or queue.name):
            pending = False  # waiting in a queue its schedule no longer goes through
        elif kind == b"Q" and not pending:
            # Queued long ago: still pending if it really is on the queue list (a backlog).
            if queued is None:
                queued = QueuedIds(redis, queue)
            pending = queued.on(origin, job_id)
        out.append(int(revision) if pending and revision else None)
    return out


CHECK_BATCH = 1000
# Per link ID, what recovery needs to know in one string: "" (nothing pending), or a kind (S scheduled and
# in the registry, Q queued, T taken/started), the time it was queued or taken, the queue it was put
# through (its origin), and its revision (from its job's description). A small pending link (no hash yet)
# is scheduled if its schedule's head names it and it is in the registry of the head's queue: two reads.
_PENDING_STATES = head_lua() + r"""
local prefix = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local entry = ''
  local schedule = link_schedule(id)
  local head = schedule and head_of(KEYS[2], schedule)
  if head and head[3] == id and head[6]
      and redis.call('ZSCORE', '""" + SCHEDULED_PREFIX + r"""' .. head[6], id) then
    entry = 'S\n\n' .. head[6] .. '\n' .. head[4]
  else
    local f = redis.call('HMGET', prefix .. id, 'status', 'description', 'enqueued_at', 'started_at', 'origin')
    local status, origin = f[1], f[5] or ''
    local revision = string.match(f[2] or '', '^recur link .* r(%d+) for ') or ''
    if status == 'scheduled' then
      local registry = KEYS[1]
      if origin ~= '' then registry = '""" + SCHEDULED_PREFIX + r"""' .. origin end
      if redis.call('ZSCORE', registry, id) then entry = 'S\n\n' .. origin .. '\n' .. revision end
    elseif status == 'queued' then
      entry = 'Q\n' .. (f[3] or '') .. '\n' .. origin .. '\n' .. revision
    elseif status == 'started' then
      entry = 'T\n' .. (f[4] or '') .. '\n' .. origin .. '\n' .. revision
    end
  end
  out[#out + 1] = entry
end
return out
"""


def _recent(stamp: bytes, cutoff: bytes) -> bool:
    """Whether a queued or started time is later than `cutoff`. RQ writes them all in one fixed-width
    format (utcformat), which sorts as the instants do: compared as bytes, not parsed (a pass beside
    100,000 queued links parsed for 1.3 s); any other shape is parsed."""
    if len(stamp) == len(cutoff):
        return stamp > cutoff
    try:
        return utcparse(stamp.decode()) > utcparse(cutoff.decode())
    except ValueError:
        return False
