"""The Redis side of a chain: put a schedule's pending link into RQ, take it out, look for it.

Links are ordinary RQ jobs in RQ's ScheduledJobRegistry and queue, visible to `rq info`.
Functions that write accept an optional pipeline and only execute a pipeline they created.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from redis import Redis
from redis.client import Pipeline
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry
from rq.utils import now, utcformat, utcparse

from app.chain.ids import link_id
from app.clock import HOST_SKEW_ALLOWANCE_SECONDS

LINK_FUNC = "app.chain.link.run_link"
# RQ kills the work horse this long after the task's own timeout, if the task ignores it.
HORSE_GRACE_SECONDS = 60


@dataclass(frozen=True)
class LinkPlan:
    """Everything a pending link carries: which tick of which revision, and when it may run."""

    schedule_id: str
    revision: int
    repeat: int
    retry: int
    scheduled_for: datetime  # nominal time (UTC, to the millisecond)
    due_at: datetime  # nominal + jitter: when it may start (UTC); its registry score, to the millisecond
    timeout_seconds: int

    @property
    def job_id(self) -> str:
        return link_id(self.schedule_id, self.repeat, self.retry)

    @property
    def description(self) -> str:
        # Kept in the job hash as plain text so that recovery can read the revision without unpickling.
        return (
            f"recur link {self.schedule_id} n{self.repeat} rc{self.retry} r{self.revision} "
            f"for {self.scheduled_for.isoformat()}"
        )


def revision_of(description: str | None) -> int | None:
    if not description or not description.startswith("recur link "):
        return None
    for word in description.split():
        if word.startswith("r") and word[1:].isdigit():
            return int(word[1:])
    return None


def scheduled_key(queue: Queue) -> str:
    """The key of RQ's ScheduledJobRegistry for `queue`, where pending links wait until due."""
    key: str = ScheduledJobRegistry(queue=queue).key  # type: ignore[no-untyped-call]
    return key


def put_link(queue: Queue, plan: LinkPlan, result_ttl: int, pipeline: Pipeline | None = None) -> None:
    """Schedule `plan` as the pending link, replacing any copy under the same ID that has not started."""
    put_links(queue, [plan], result_ttl, pipeline)


def put_links(queue: Queue, plans: list[LinkPlan], result_ttl: int, pipeline: Pipeline | None = None) -> None:
    """Schedule each plan as its schedule's pending link, replacing any copy under the same ID that has
    not started.

    One Lua script writes each batch: every link's replacement is atomic (a reader never sees the old and
    the new copy at once), and each link is the very hash RQ's own `Queue.schedule_job` writes (same
    fields, same encoding) in RQ's ScheduledJobRegistry: an ordinary RQ job, at a fraction of the cost of
    building an RQ Job object per link (recovery puts 100,000 of them at startup).
    """
    if not plans:
        return
    template = _template(queue, result_ttl)
    created_at = utcformat(now())
    client = pipeline if pipeline is not None else queue.connection
    keys = [scheduled_key(queue), queue.key, Queue.redis_queues_keys]
    for offset in range(0, len(plans), PUT_BATCH):
        args: list[Any] = [Job.redis_job_namespace_prefix, len(template) // 2, *template]
        for plan in plans[offset:offset + PUT_BATCH]:
            args += [
                plan.job_id, _score(plan.due_at), _job_data(queue, plan), plan.description,
                plan.timeout_seconds + HORSE_GRACE_SECONDS, created_at,
            ]
        client.eval(_PUT_LINKS, len(keys), *keys, *args)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _score(due_at: datetime) -> str:
    """The registry score: epoch seconds to the millisecond (RQ's own are whole seconds, which would put
    every link due within one second into one burst). Rounded up, so a link is never moved early."""
    micros = (due_at - _EPOCH) // timedelta(microseconds=1)
    millis = -(-micros // 1000)
    return f"{millis // 1000}.{millis % 1000:03d}"


PUT_BATCH = 500
# Both putting and cancelling take a link's pending copy out the same way: off the registry and the queue,
# and its hash deleted only if not started (a started one keeps its hash so RQ can finish it cleanly).
# The queue is a list, and LREM reads all of it: it is searched only when a copy of the link exists. A
# successor's ID is new (no hash, so on no queue: RQ and the mover push only IDs whose hash they wrote),
# and a hand-off during a backlog of N queued links then costs O(1), not O(N): with every schedule due at
# once (a midnight cron on 100,000 schedules), each hand-off would otherwise scan the whole backlog.
_REMOVE_PENDING_LUA = """
local function remove_pending(registry, queue, key, id)
  redis.call('ZREM', registry, id)
  local status = redis.call('HGET', key, 'status')
  if not status then
    return
  end
  redis.call('LREM', queue, 0, id)
  if status == 'scheduled' or status == 'queued' then
    redis.call('DEL', key)
  end
end
"""
# Per link: id, score, data, description, timeout, created_at; before them the fields all links share.
_PUT_LINKS = _REMOVE_PENDING_LUA + """
local unpack = unpack or table.unpack
local prefix, shared = ARGV[1], tonumber(ARGV[2])
local common = {}
for i = 1, 2 * shared do common[i] = ARGV[2 + i] end
for i = 3 + 2 * shared, #ARGV, 6 do
  local id = ARGV[i]
  local key = prefix .. id
  remove_pending(KEYS[1], KEYS[2], key, id)
  redis.call('HSET', key, 'created_at', ARGV[i + 5], 'data', ARGV[i + 2], 'description', ARGV[i + 3],
             'timeout', ARGV[i + 4], unpack(common))
  redis.call('ZADD', KEYS[1], ARGV[i + 1], id)
end
redis.call('SADD', KEYS[3], KEYS[2])
return 0
"""
# Fields that differ from link to link; every other field of the hash is the same for all links.
_PER_LINK = ("created_at", "data", "description", "timeout")
_templates: dict[tuple[str, int, object], list[Any]] = {}


def _link_kwargs(plan: LinkPlan) -> dict[str, object]:
    return {
        "schedule_id": plan.schedule_id,
        "revision": plan.revision,
        "repeat": plan.repeat,
        "retry": plan.retry,
        "scheduled_for": plan.scheduled_for.isoformat(),
    }


def _job_data(queue: Queue, plan: LinkPlan) -> bytes:
    """The job's `data` field exactly as RQ stores it: (func, instance, args, kwargs), serialized, compressed."""
    return zlib.compress(queue.serializer.dumps((LINK_FUNC, None, (), _link_kwargs(plan))))


def _template(queue: Queue, result_ttl: int) -> list[Any]:
    """The fields every link's hash shares, taken from a job RQ itself builds and marks scheduled."""
    cache_key = (queue.name, result_ttl, queue.serializer)
    template = _templates.get(cache_key)
    if template is None:
        sample = LinkPlan("template", 0, 0, 0, now(), now(), 1)
        job = queue.create_job(
            LINK_FUNC, kwargs=_link_kwargs(sample), job_id=sample.job_id, timeout=1, result_ttl=result_ttl,
            failure_ttl=max(result_ttl, 86400), description=sample.description,
        )
        job.set_status(JobStatus.SCHEDULED, pipeline=queue.connection.pipeline())  # never executed
        job.origin = queue.name
        fields = {k: v for k, v in job.to_dict().items() if k not in _PER_LINK}
        # Encoded once, as the client would encode them at every put (bytes pass through its encoder).
        encoder: Any = queue.connection.get_encoder()
        template = _templates[cache_key] = [encoder.encode(item) for pair in fields.items() for item in pair]
    return template


def cancel_link(queue: Queue, job_id: str, pipeline: Pipeline | None = None) -> None:
    """Take a pending (scheduled or queued) link out of Redis, atomically. A started link keeps running:
    it is fenced."""
    client = pipeline if pipeline is not None else queue.connection
    client.eval(_CANCEL_LINK, 3, scheduled_key(queue), queue.key, Job.key_for(job_id), job_id)


_CANCEL_LINK = _REMOVE_PENDING_LUA + """
remove_pending(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
return 0
"""


# A link popped off the queue (or started) but not claimed within this long lost its worker on the way.
IN_HAND_GRACE_SECONDS = 10.0


def pending_revisions(redis: Redis, queue: Queue, job_ids: list[str], now: float) -> list[int | None]:
    """For each link ID, the revision of its pending copy in Redis, or None when there is none.

    Pending means: scheduled (in the scheduled registry), queued (on the queue list), or taken by a
    worker (RQ's intermediate queue, or started) less than IN_HAND_GRACE_SECONDS ago by the cluster
    clock (`now`; RQ's started_at, stamped with the taking host's own clock, is allowed
    HOST_SKEW_ALLOWANCE_SECONDS more). A link a killed worker took and never claimed is not pending:
    recovery re-creates it (and the fence keeps any stray copy from running the tick twice).
    """
    entries: list[bytes] = []
    for offset in range(0, len(job_ids), CHECK_BATCH):
        chunk = job_ids[offset:offset + CHECK_BATCH]
        entries += redis.eval(_PENDING_STATES, 1, scheduled_key(queue), Job.redis_job_namespace_prefix, *chunk)
    out: list[int | None] = []
    stale_queued: list[int] = []
    descriptions: list[bytes] = []
    for index, entry in enumerate(entries):
        kind, stamp, description = entry.split(b"\n", 2) if entry else (b"", b"", b"")
        descriptions.append(description)
        revision = revision_of(description.decode() if description else None)
        # Q: enqueued_at, stamped by Recur's mover on the cluster clock. T: started_at, stamped by RQ with the
        # clock of the host that took the link, which may be off: allowed for.
        allowance = HOST_SKEW_ALLOWANCE_SECONDS if kind == b"T" else 0.0
        pending = kind == b"S" or (kind in (b"Q", b"T") and _recent(stamp or None, now, allowance))
        out.append(revision if pending else None)
        if kind == b"Q" and not pending:
            stale_queued.append(index)
    if stale_queued:
        # A link queued long ago is still pending if it really is on the queue list (a backlog).
        with redis.pipeline(transaction=False) as pipe:
            for index in stale_queued:
                pipe.lpos(queue.key, job_ids[index])
            positions = pipe.execute()
        for index, position in zip(stale_queued, positions, strict=True):
            if position is not None:
                description = descriptions[index]
                out[index] = revision_of(description.decode() if description else None)
    return out


CHECK_BATCH = 1000
# Per link ID, what recovery needs to know in one string: "" (nothing pending), or a kind (S scheduled and
# in the registry, Q queued, T taken/started), the time it was queued or taken, and its description.
_PENDING_STATES = r"""
local prefix = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local f = redis.call('HMGET', prefix .. id, 'status', 'description', 'enqueued_at', 'started_at')
  local status, description = f[1], f[2] or ''
  local entry = ''
  if status == 'scheduled' then
    if redis.call('ZSCORE', KEYS[1], id) then entry = 'S\n\n' .. description end
  elseif status == 'queued' then
    entry = 'Q\n' .. (f[3] or '') .. '\n' .. description
  elseif status == 'started' then
    entry = 'T\n' .. (f[4] or '') .. '\n' .. description
  end
  out[#out + 1] = entry
end
return out
"""


def _recent(stamp: bytes | None, now: float, allowance: float = 0.0) -> bool:
    if not stamp:
        return False
    try:
        taken = utcparse(stamp.decode()).timestamp()
    except ValueError:
        return False
    return now - taken < IN_HAND_GRACE_SECONDS + allowance
