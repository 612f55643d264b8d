"""A reconciler pass beside a backlog of queued links: linear in the links it checks."""

from __future__ import annotations

from datetime import timedelta

from redis import Redis

from harness.chain_driver import make_schedule, next_due
from recur_server.chain.ids import link_id
from recur_server.chain.mover import Mover
from recur_server.infra.extensions import get_queue, get_redis
from recur_server.services import reconcile

# Commands that read the queue list element by element (each one O(length of the queue)).
_LIST_SCANS = ("lpos", "lrange", "lindex", "lrem")


def _list_scans(redis: Redis) -> int:
    stats = redis.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in _LIST_SCANS)


def test_a_pass_beside_a_backlog_reads_the_queue_once_not_once_per_link(real_app, fake_clock, monkeypatch):
    monkeypatch.setattr(reconcile, "BATCH", 10)  # several batches in one pass
    made = [make_schedule(fake_clock.now, interval_seconds=60) for _ in range(25)]
    redis, queue = get_redis(real_app), get_queue(real_app)
    due = next_due(real_app) + timedelta(seconds=1)
    assert Mover(redis, queue).move_due(due) == 25  # a backlog: every link queued, none taken yet
    later = due + timedelta(seconds=60)  # queued long ago: only the queue itself says they are pending

    redis.config_resetstat()
    report = reconcile.reconcile(later)
    assert (report.checked, report.links_repaired) == (25, [])
    assert _list_scans(redis) <= 1

    # A queued link that is not on the queue any more (its worker took it and died) is re-created.
    lost = link_id(made[3].id, 0, 0)
    redis.lrem(queue.key, 0, lost)
    assert reconcile.reconcile(later).links_repaired == [lost]
    assert reconcile.reconcile(later).links_repaired == []


def test_a_link_taken_or_queued_moments_ago_is_pending_one_taken_long_ago_is_not(real_app):
    """In hand (popped off the queue, or started) within the grace: pending; past it: lost to its worker.
    RQ's started_at is stamped with the taking host's own clock, so it gets the skew allowance on top."""
    from datetime import UTC, datetime

    from rq.job import Job
    from rq.utils import utcformat

    from recur_server.chain.link_lookup import IN_HAND_GRACE_SECONDS, pending_revisions
    from recur_server.infra.clock import HOST_SKEW_ALLOWANCE_SECONDS

    redis, queue = get_redis(real_app), get_queue(real_app)
    now = datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC)
    ids = []
    for index, (status, field, ago) in enumerate([
        ("started", "started_at", 1.0),
        ("started", "started_at", IN_HAND_GRACE_SECONDS + HOST_SKEW_ALLOWANCE_SECONDS + 0.001),
        ("queued", "enqueued_at", 1.0), ("queued", "enqueued_at", IN_HAND_GRACE_SECONDS + 0.001),
        ("started", "started_at", IN_HAND_GRACE_SECONDS + 0.001),
    ]):
        job_id = link_id(f"00000000-0000-0000-0000-{index:012d}", 0, 0)
        stamp = utcformat(datetime.fromtimestamp(now.timestamp() - ago, UTC))
        redis.hset(Job.key_for(job_id), mapping={"status": status, field: stamp,
                                                 "description": f"recur link x n0 rc0 r{index + 3} for x"})
        ids.append(job_id)
    assert pending_revisions(redis, queue, ids, now.timestamp()) == [3, None, 5, None, 7]
