"""The Redis side of links: put a schedule's pending link into RQ, take it out, and look for it.

A pending link is small: its ID in RQ's ScheduledJobRegistry (scored by when it is due) and its schedule's
head, one field of one hash that names the tick, its revision, its timeout, its queue and its nominal time.
The mover makes it an ordinary RQ job (the very hash RQ's own enqueue writes) when it comes due, so queued,
started and finished links are RQ jobs like any other, visible to `rq info` and RQ's dashboard. Only
recur_server.chain.handoff puts and cancels: it knows which link a committed row expects. Recovery looks links up
(pending_revisions). Functions that write accept an optional pipeline and only execute a pipeline they
created. (recur_server.chain.mover moves due links onto the queue.)
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
from rq.utils import now

from recur_server.chain.ids import link_id, parse_link_id

LINK_FUNC = "recur_server.chain.link.run_link"
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
    queue: str | None = None  # the RQ queue it goes through (its workflow's); None: the default queue

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


def scheduled_key(queue: Queue) -> str:
    """The key of RQ's ScheduledJobRegistry for `queue`, where pending links wait until due."""
    key: str = ScheduledJobRegistry(queue=queue).key  # type: ignore[no-untyped-call]
    return key


def put_link(queue: Queue, plan: LinkPlan, pipeline: Pipeline | None = None) -> bool | None:
    """put_links for one plan: whether it was put, or None with `pipeline` (the answer comes with its results)."""
    if pipeline is not None:
        _put(pipeline, queue_named(queue, plan.queue), [plan])
        return None
    return bool(put_links(queue, [plan]))


def put_links(queue: Queue, plans: list[LinkPlan]) -> list[str]:
    """Make each plan its schedule's pending link; returns the IDs put.

    A schedule's ticks (repeat, retry) only grow from one put to the next (a re-plan starts a new tick),
    so Redis keeps the last tick put per schedule, its head. A plan older than the head is refused (it
    was planned from a row read before the schedule moved on: a reconciler pass racing a hand-off or a
    re-plan); a newer one takes the head's pending copy out. So a schedule never has two pending links,
    and links planned under different revisions never share an ID, hence never share a job hash (RQ's
    finishing write to a taken link's hash cannot overwrite its successor).

    One Lua script writes each batch: every link's replacement is atomic (a reader never sees the old and
    the new copy at once). A pending link is its ID in RQ's ScheduledJobRegistry and its schedule's head
    (HEADS_KEY), two writes: the mover writes the job's hash, with its result TTL, when it comes due
    (recovery puts a million of them after Redis lost its data).
    """
    put: list[str] = []
    for name, group in _by_queue(plans).items():
        through = queue_named(queue, name)
        for offset in range(0, len(group), PUT_BATCH):
            batch = group[offset:offset + PUT_BATCH]
            flags = _put(queue.connection, through, batch)
            put += [plan.job_id for plan, flag in zip(batch, flags, strict=True) if flag]
    return put


def _by_queue(plans: list[LinkPlan]) -> dict[str | None, list[LinkPlan]]:
    groups: dict[str | None, list[LinkPlan]] = {}
    for plan in plans:
        groups.setdefault(plan.queue, []).append(plan)
    return groups


def queue_named(default: Queue, name: str | None) -> Queue:
    """The RQ queue `name` on the default queue's connection (None: the default queue itself)."""
    if name is None or name == default.name:
        return default
    return Queue(name, connection=default.connection, serializer=default.serializer)


def _put(client: Redis | Pipeline, queue: Queue, plans: list[LinkPlan]) -> Any:
    keys = [scheduled_key(queue), queue.key, Queue.redis_queues_keys, HEADS_KEY]
    args: list[Any] = [Job.redis_job_namespace_prefix, queue.name]
    for plan in plans:
        args += [plan.job_id, plan.schedule_id, plan.repeat, plan.retry, _score(plan.due_at), plan.revision,
                 plan.timeout_seconds + HORSE_GRACE_SECONDS, plan.scheduled_for.isoformat()]
    return client.eval(_PUT_LINKS, len(keys), *keys, *args)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _score(due_at: datetime) -> str:
    """The registry score: epoch seconds to the millisecond (RQ's own are whole seconds, which would put
    every link due within one second into one burst). Rounded up, so a link is never moved early."""
    micros = (due_at - _EPOCH) // timedelta(microseconds=1)
    millis = -(-micros // 1000)
    return f"{millis // 1000}.{millis % 1000:03d}"


PUT_BATCH = 500
# Field: schedule ID; value: the last link put for it, its head, as "repeat:retry" and, on lines after it,
# the revision, the job's timeout, the queue and the nominal time (ISO 8601) it was put with. One hash field
# per schedule costs far less memory than a key per schedule (a lost head, with a Redis flush, only lets
# recovery put again what the database expects). A head of "repeat:retry" alone was put by an older
# version, with the job's whole hash.
HEADS_KEY = "recur:heads"
# RQ's key names for a queue's list and its ScheduledJobRegistry, before the queue's name.
QUEUE_PREFIX = Queue.redis_queue_namespace_prefix
SCHEDULED_PREFIX = "rq:scheduled:"
# A schedule's head, parsed (nil without one): repeat, retry, its link's ID (in the format of
# recur_server.chain.ids.link_id), and for a small pending link the revision, timeout, queue and nominal time.
# The schedule a link's ID names (link_schedule, as recur_server.chain.ids.parse_link_id reads it), and the
# description of a link (LinkPlan.description) from a parsed head.
_HEAD_LUA = r"""
local function head_of(heads, schedule)
  local head = redis.call('HGET', heads, schedule)
  if not head then
    return nil
  end
  local rep, try, rest = string.match(head, '^(%d+):(%d+)(.*)$')
  if not rep then
    return nil
  end
  local parsed = {tonumber(rep), tonumber(try), 'sched-' .. schedule .. '-n' .. rep .. '-rc' .. try}
  local rev, timeout, queue, nominal = string.match(rest, '^\n(%d+)\n(%d+)\n([^\n]*)\n(.*)$')
  if rev then
    parsed[4], parsed[5], parsed[6], parsed[7] = rev, timeout, queue, nominal
  end
  return parsed
end
local function link_schedule(id)
  return string.match(id, '^sched%-(.+)%-n%d+%-rc%d+$')
end
local function link_description(schedule, head)
  return 'recur link ' .. schedule .. ' n' .. head[1] .. ' rc' .. head[2] .. ' r' .. head[4] .. ' for ' .. head[7]
end
"""
# Both putting and cancelling take a link's pending copy out the same way: off the registry and, if
# queued, off the queue (the queue its hash names as its origin, or for a small pending link its head: a
# workflow moved to another queue leaves no copy behind in the old one), and its hash deleted only if
# pending (a taken one keeps its hash so that RQ can finish it cleanly: started, or dequeued and still
# marked queued, as a detached run is when it hands off its successor). The queue is a list, and LREM
# reads all of it: it is searched only for a link whose hash says queued. A successor's ID is new (no
# hash), and the link it follows was taken (started, or finished by RQ), so a hand-off during a backlog of
# N queued links costs O(1), not O(N): with every schedule due at once (a midnight cron on 100,000
# schedules), each hand-off would otherwise scan the whole backlog.
def head_lua() -> str:
    """The Lua functions head_of and description, for the scripts that read heads (the mover's, recovery's)."""
    return _HEAD_LUA


_REMOVE_PENDING_LUA = _HEAD_LUA + """
local function remove_pending(registry, queue, key, id, head)
  redis.call('ZREM', registry, id)
  local f = redis.call('HMGET', key, 'status', 'origin')
  local status, origin = f[1], f[2]
  if not status and head and head[3] == id and head[6] then
    origin = head[6]  -- a small pending link: its head names its queue
  end
  if origin and '""" + QUEUE_PREFIX + """' .. origin ~= queue then
    -- a copy put through another queue (its workflow moved since): taken out of that queue's keys
    queue = '""" + QUEUE_PREFIX + """' .. origin
    redis.call('ZREM', '""" + SCHEDULED_PREFIX + r"""' .. origin, id)
  end
  if status == 'queued' and redis.call('LREM', queue, 0, id) == 0 then
    return  -- off its queue, not yet marked started: a worker dequeued it, and it runs (a detached run)
  end
  if status == 'scheduled' or status == 'queued' then
    redis.call('DEL', key)
  end
end
"""
# Per link: id, schedule, repeat, retry, score, revision, timeout, nominal time; before them the job keys'
# prefix and the queue's name. Returns 1 per link put, 0 per link refused.
_PUT_LINKS = _REMOVE_PENDING_LUA + """
local prefix, queue_name = ARGV[1], ARGV[2]
local out = {}
for i = 3, #ARGV, 8 do
  local id, schedule, rep, try = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  local head = head_of(KEYS[4], schedule)
  if head and (rep < head[1] or (rep == head[1] and try < head[2])) then
    out[#out + 1] = 0
  else
    if head and head[3] ~= id then
      remove_pending(KEYS[1], KEYS[2], prefix .. head[3], head[3], head)
    end
    remove_pending(KEYS[1], KEYS[2], prefix .. id, id, head)
    redis.call('ZADD', KEYS[1], ARGV[i + 4], id)
    redis.call('HSET', KEYS[4], schedule, ARGV[i + 2] .. ':' .. ARGV[i + 3] .. '\\n' .. ARGV[i + 5] .. '\\n' ..
               ARGV[i + 6] .. '\\n' .. queue_name .. '\\n' .. ARGV[i + 7])
    out[#out + 1] = 1
  end
end
redis.call('SADD', KEYS[3], KEYS[2])
return out
"""
# Fields that differ from link to link; every other field of the hash is the same for all links.
_PER_LINK = ("created_at", "data", "description", "timeout", "enqueued_at", "status")
_templates: dict[tuple[str, int, object], list[Any]] = {}


def link_kwargs(job: Job) -> dict[str, Any]:
    """The arguments of a link's job: its kwargs (a link put by an older version), or read from its ID
    and description (LinkPlan.description), which is all a link made by the mover carries."""
    if job.kwargs:
        return dict(job.kwargs)
    parsed = parse_link_id(job.id)
    words = (job.description or "").split()
    if (parsed is None or len(words) != 8 or words[:2] != ["recur", "link"] or words[6] != "for"
            or not (words[5].startswith("r") and words[5][1:].isdigit())):
        raise ValueError(f"job {job.id} is not a link (description {job.description!r})")
    schedule_id, repeat, retry = parsed
    return {"schedule_id": schedule_id, "revision": int(words[5][1:]), "repeat": repeat, "retry": retry,
            "scheduled_for": words[7]}


def job_data(queue: Queue) -> bytes:
    """Every link's `data` field exactly as RQ stores it, (func, instance, args, kwargs) serialized and
    compressed: the same for all, as a link's job reads its arguments from its ID and description."""
    return zlib.compress(queue.serializer.dumps((LINK_FUNC, None, (), {})))


def template(queue: Queue, result_ttl: int) -> list[Any]:
    """The fields every link's hash shares, taken from a job RQ itself builds and enqueues."""
    cache_key = (queue.name, result_ttl, queue.serializer)
    fields = _templates.get(cache_key)
    if fields is None:
        sample = LinkPlan("template", 0, 0, 0, now(), now(), 1)
        job = queue.create_job(
            LINK_FUNC, job_id=sample.job_id, timeout=1, result_ttl=result_ttl,
            failure_ttl=max(result_ttl, 86400), description=sample.description,
        )
        job.set_status(JobStatus.QUEUED, pipeline=queue.connection.pipeline())  # never executed
        job.origin = queue.name
        shared = {k: v for k, v in job.to_dict().items() if k not in _PER_LINK}
        # Encoded once, as the client would encode them at every write (bytes pass through its encoder).
        encoder: Any = queue.connection.get_encoder()
        fields = _templates[cache_key] = [encoder.encode(item) for pair in shared.items() for item in pair]
    return fields


def cancel_link(queue: Queue, job_id: str, pipeline: Pipeline | None = None) -> None:
    """Take a link's pending copy out of Redis, atomically; if no later tick of its schedule was put
    since (a resume racing this pause), also the last one put, and forget the schedule's head.
    A taken link keeps running: it is fenced."""
    client = pipeline if pipeline is not None else queue.connection
    parsed = parse_link_id(job_id)
    schedule, repeat, retry = parsed if parsed else ("", 0, 0)
    client.eval(_CANCEL_LINK, 3, scheduled_key(queue), queue.key, HEADS_KEY, Job.redis_job_namespace_prefix,
                job_id, schedule, repeat, retry)


_CANCEL_LINK = _REMOVE_PENDING_LUA + """
local prefix, id, schedule, rep, try = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local head = nil
if schedule ~= '' then
  head = head_of(KEYS[3], schedule)
end
remove_pending(KEYS[1], KEYS[2], prefix .. id, id, head)
if head and (head[1] < rep or (head[1] == rep and head[2] <= try)) then
  if head[3] ~= id then
    remove_pending(KEYS[1], KEYS[2], prefix .. head[3], head[3], head)
  end
  redis.call('HDEL', KEYS[3], schedule)
end
return 0
"""
