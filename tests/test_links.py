"""Links are ordinary RQ jobs: the hash Recur's one-script put writes is the one RQ's own scheduling writes."""

from __future__ import annotations

from datetime import UTC, datetime

from rq.job import Job
from rq.registry import ScheduledJobRegistry

from recur_server.chain.link_lookup import pending_revisions
from recur_server.chain.mover import Mover
from recur_server.chain.redis_links import (
    HEADS_KEY,
    HORSE_GRACE_SECONDS,
    LINK_FUNC,
    LinkPlan,
    cancel_link,
    link_kwargs,
    put_link,
    put_links,
)
from recur_server.infra.extensions import get_queue, get_redis


def _plan(schedule_id: str = "0b7c2a64-3d2e-4f0e-9a55-3f1d2c3b4a59", revision: int = 2) -> LinkPlan:
    return LinkPlan(schedule_id, revision, 5, 1, datetime(2026, 3, 2, 12, 0, 10, tzinfo=UTC),
                    datetime(2026, 3, 2, 12, 0, 13, tzinfo=UTC), 30)


def test_a_pending_link_is_small_and_becomes_the_hash_rq_enqueue_writes_when_due(real_app):
    queue, redis = get_queue(real_app), get_redis(real_app)
    registry = ScheduledJobRegistry(queue=queue)
    plan = _plan()
    put_link(queue, plan)
    # Pending: its ID in the registry, scored by when it is due, and its schedule's head; no job hash yet.
    assert not redis.exists(Job.key_for(plan.job_id))
    assert redis.zscore(registry.key, plan.job_id) == plan.due_at.timestamp()
    assert redis.hget(HEADS_KEY, plan.schedule_id) == (
        f"5:1\n2\n{30 + HORSE_GRACE_SECONDS}\n{queue.name}\n{plan.scheduled_for.isoformat()}".encode())
    assert Mover(redis, queue, result_ttl=300).move_due(plan.due_at) == 1
    ours = redis.hgetall(Job.key_for(plan.job_id))
    our_sets = redis.smembers("rq:queues")
    redis.flushall()

    job = queue.create_job(
        LINK_FUNC, job_id=plan.job_id, timeout=plan.timeout_seconds + HORSE_GRACE_SECONDS, result_ttl=300,
        failure_ttl=86400, description=plan.description,
    )
    queue.enqueue_job(job)
    theirs = redis.hgetall(job.key)
    for fields in (ours, theirs):
        assert fields.pop(b"created_at") and fields.pop(b"enqueued_at")
    assert ours == theirs
    assert our_sets == redis.smembers("rq:queues")


def test_a_link_put_whole_by_an_older_version_is_still_moved(real_app):
    queue, redis = get_queue(real_app), get_redis(real_app)
    plan = _plan()
    job = queue.create_job(LINK_FUNC, job_id=plan.job_id, timeout=90, description=plan.description,
                           kwargs={"schedule_id": plan.schedule_id, "revision": 2, "repeat": 5, "retry": 1,
                                   "scheduled_for": plan.scheduled_for.isoformat()})
    queue.schedule_job(job, plan.due_at)
    redis.hset(HEADS_KEY, plan.schedule_id, "5:1")  # an older version's head
    assert pending_revisions(redis, queue, [plan.job_id], plan.due_at.timestamp()) == [2]
    assert Mover(redis, queue).move_due(plan.due_at) == 1
    assert queue.get_job_ids() == [plan.job_id]
    moved = Job.fetch(plan.job_id, connection=redis)
    assert link_kwargs(moved) == {"schedule_id": plan.schedule_id, "revision": 2, "repeat": 5, "retry": 1,
                                  "scheduled_for": plan.scheduled_for.isoformat()}


def test_put_links_replaces_pending_copies_and_rq_reads_them_back(real_app):
    queue, redis = get_queue(real_app), get_redis(real_app)
    plans = [_plan(f"00000000-0000-0000-0000-{i:012d}") for i in range(1203)]
    put_links(queue, plans)
    put_links(queue, [_plan(plans[0].schedule_id, revision=3)])  # re-planned: replaces the pending copy
    assert ScheduledJobRegistry(queue=queue).count == len(plans)
    revisions = pending_revisions(redis, queue, [plans[0].job_id, plans[1].job_id], plans[0].due_at.timestamp())
    assert revisions == [3, 2]
    assert Mover(redis, queue).move_due(plans[0].due_at) == len(plans)
    fetched = Job.fetch(plans[7].job_id, connection=redis)
    assert (fetched.func_name, fetched.kwargs, fetched.get_status()) == (LINK_FUNC, {}, "queued")
    assert link_kwargs(fetched) == {"schedule_id": plans[7].schedule_id, "revision": 2, "repeat": 5, "retry": 1,
                                    "scheduled_for": plans[7].scheduled_for.isoformat()}
    assert link_kwargs(Job.fetch(plans[0].job_id, connection=redis))["revision"] == 3
    revisions = pending_revisions(redis, queue, [plans[0].job_id, plans[1].job_id], plans[0].due_at.timestamp())
    assert revisions == [3, 2]


def test_a_queued_copy_leaves_the_queue_when_its_link_is_put_again_or_cancelled(real_app):
    queue, redis = get_queue(real_app), get_redis(real_app)
    replanned, cancelled, other = (_plan(f"00000000-0000-0000-0000-{i:012d}") for i in range(3))
    put_links(queue, [replanned, cancelled, other])
    assert Mover(redis, queue).move_due(replanned.due_at) == 3
    assert queue.get_job_ids() == [replanned.job_id, cancelled.job_id, other.job_id]

    put_link(queue, _plan(replanned.schedule_id, revision=3))
    cancel_link(queue, cancelled.job_id)
    new = _plan("00000000-0000-0000-0000-000000000009")
    put_link(queue, new)  # a link with no copy yet: the queue is left as it is

    assert queue.get_job_ids() == [other.job_id]
    assert not redis.exists(Job.key_for(cancelled.job_id))
    registry = ScheduledJobRegistry(queue=queue)
    assert sorted(registry.get_job_ids()) == sorted([replanned.job_id, new.job_id])
    assert pending_revisions(redis, queue, [replanned.job_id], replanned.due_at.timestamp()) == [3]


def _tick(repeat: int, retry: int, schedule_id: str = "0b7c2a64-3d2e-4f0e-9a55-3f1d2c3b4a59") -> LinkPlan:
    due = datetime(2026, 3, 2, 12, 0, 10, tzinfo=UTC)
    return LinkPlan(schedule_id, 2, repeat, retry, due, due, 30)


def test_a_put_older_than_the_schedules_last_one_is_refused(real_app):
    queue, redis = get_queue(real_app), get_redis(real_app)
    registry = ScheduledJobRegistry(queue=queue)
    assert put_links(queue, [_tick(5, 1)]) == [_tick(5, 1).job_id]
    # A reconciler that read the row before the tick moved on: its put is refused, whatever its kind.
    assert put_links(queue, [_tick(5, 0), _tick(4, 9)]) == []
    assert registry.get_job_ids() == [_tick(5, 1).job_id]
    assert not redis.exists(Job.key_for(_tick(5, 0).job_id))
    # The same tick again is a repair of the same link: accepted.
    assert put_links(queue, [_tick(5, 1)]) == [_tick(5, 1).job_id]
    assert registry.get_job_ids() == [_tick(5, 1).job_id]


def test_a_newer_put_takes_the_previous_pending_link_out(real_app):
    queue, redis = get_queue(real_app), get_redis(real_app)
    registry = ScheduledJobRegistry(queue=queue)
    other = _tick(0, 0, "00000000-0000-0000-0000-000000000001")
    put_links(queue, [_tick(5, 1), other])
    put_link(queue, _tick(6, 0))  # scheduled copy of n5-rc1: out of the registry, hash deleted
    assert sorted(registry.get_job_ids()) == sorted([_tick(6, 0).job_id, other.job_id])
    assert not redis.exists(Job.key_for(_tick(5, 1).job_id))

    Mover(redis, queue).move_due(_tick(6, 0).due_at)
    put_link(queue, _tick(7, 0))  # queued copy of n6: off the queue, hash deleted
    assert queue.get_job_ids() == [other.job_id]
    assert not redis.exists(Job.key_for(_tick(6, 0).job_id))

    # A started copy (a worker runs it, RQ will write its end) keeps its hash; only its pending entries go.
    redis.hset(Job.key_for(_tick(7, 0).job_id), "status", "started")
    redis.zadd(registry.key, {_tick(7, 0).job_id: 1})
    put_link(queue, _tick(7, 1))
    assert registry.get_job_ids() == [_tick(7, 1).job_id]
    assert redis.hget(Job.key_for(_tick(7, 0).job_id), "status") == b"started"


def test_a_link_a_worker_dequeued_keeps_its_hash_when_its_successor_is_put_before_it_starts(real_app):
    # A detached run (overlap allow_all) hands off its successor right after its claim, before its worker
    # writes RQ's start: its hash still says queued, but it is off the queue. It is running, not pending.
    queue, redis = get_queue(real_app), get_redis(real_app)
    put_link(queue, _tick(8, 0))
    Mover(redis, queue).move_due(_tick(8, 0).due_at)
    job, _ = queue.dequeue_any([queue], None, connection=redis)
    assert (job.id, job.get_status(refresh=True)) == (_tick(8, 0).job_id, "queued")
    put_link(queue, _tick(9, 0))
    fetched = Job.fetch(_tick(8, 0).job_id, connection=redis)  # whole: RQ can read it while the link runs
    assert (fetched.func_name, fetched.description) == (LINK_FUNC, _tick(8, 0).description)


def test_cancel_takes_out_the_pending_link_and_forgets_the_schedule(real_app):
    queue, redis = get_queue(real_app), get_redis(real_app)
    registry = ScheduledJobRegistry(queue=queue)
    put_link(queue, _tick(5, 0))
    # The row expects a later tick than the one put (that hand-off was lost): both go, and Redis holds
    # nothing for the paused or deleted schedule.
    cancel_link(queue, _tick(5, 1).job_id)
    assert registry.get_job_ids() == []
    assert not redis.exists(Job.key_for(_tick(5, 0).job_id))
    assert not redis.hlen(HEADS_KEY)
    # A pause's cancel that arrives after a resume put the next tick leaves that tick alone.
    put_link(queue, _tick(6, 0))
    cancel_link(queue, _tick(5, 0).job_id)
    assert registry.get_job_ids() == [_tick(6, 0).job_id]
    assert put_links(queue, [_tick(5, 0)]) == []


def test_only_the_hand_off_puts_or_cancels_links():
    """Every path that puts a link (API, the link's own hand-off, recovery, write-offs) goes through
    recur_server.chain.handoff, where the rules of what may be put live."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "recur_server"
    writers = {"put_link", "put_links", "cancel_link"}
    offenders = []
    for path in root.rglob("*.py"):
        if path.name in ("links.py", "handoff.py") and path.parent.name == "chain":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = {a.name for a in node.names} if isinstance(node, ast.ImportFrom) else set()
            if isinstance(node, ast.Attribute) and node.attr in writers:
                names.add(node.attr)
            if names & writers:
                offenders.append(f"{path.relative_to(root.parent)}: {sorted(names & writers)}")
    assert offenders == []
