"""One clock decides: on a host whose own wall clock is off, every decision is still made on Redis's clock.

The host's clock is shifted by replacing the `datetime` recur_server.infra.clock reads it through; Redis (a real
redis-server) keeps the true time, as the one clock every process shares.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from flask import Flask
from redis import Redis
from rq import SimpleWorker

from harness.chain_driver import fresh, make_schedule, runs_of, scheduled_ids
from harness.servers import free_port
from harness.tokens import authorized_client, token_for_app
from recur_server.chain.claim import claim_tick
from recur_server.chain.leases import EPOCH_KEY
from recur_server.chain.mover import Mover
from recur_server.infra import clock
from recur_server.infra.extensions import connect_redis, db, get_queue, get_redis
from recur_server.workers.background import reconcile_once


def shift_host_clock(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """This host's wall clock, as recur_server.infra.clock sees it, is `seconds` off (negative: behind)."""
    offset = timedelta(seconds=seconds)

    class ShiftedDatetime(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def,override]
            return datetime.now(tz) + offset

    monkeypatch.setattr(clock, "datetime", ShiftedDatetime)


def redis_now(app: Flask) -> datetime:
    seconds, micros = get_redis(app).time()
    return datetime.fromtimestamp(seconds + micros / 1e6, UTC)


def run_queue(app: Flask) -> None:
    SimpleWorker([get_queue(app)], connection=get_redis(app)).work(burst=True, with_scheduler=False)
    db.session.remove()


def test_utcnow_is_the_cluster_clock_not_the_hosts(real_app, monkeypatch):
    shift_host_clock(monkeypatch, -30)
    assert abs((clock.utcnow() - redis_now(real_app)).total_seconds()) < 0.5
    assert abs((clock.local_now() - redis_now(real_app)).total_seconds() + 30) < 0.5  # for logs only


def test_a_link_early_by_the_host_clock_but_due_by_the_cluster_clock_runs(real_app, monkeypatch):
    """Before: the worker, 4 s behind, judged the due link 3.5 s early and dropped it ("early")."""
    truth = redis_now(real_app)
    # Due 0.5 s ago; its next tick 9.5 s later, so that a loaded machine's slow run does not find it due too.
    schedule = make_schedule(truth - timedelta(seconds=10.5), interval_seconds=10)
    assert Mover(get_redis(real_app), get_queue(real_app)).move_due(truth) == 1  # a mover whose clock is right
    shift_host_clock(monkeypatch, -4)
    run_queue(real_app)
    [run] = runs_of(schedule.id)
    assert (run.repeat_number, run.status) == (0, "succeeded")
    assert run.started_at >= run.scheduled_for
    assert scheduled_ids(real_app) == [f"sched-{schedule.id}-n1-rc0"]


def test_a_link_early_by_the_cluster_clock_too_waits_for_its_time_and_is_not_dropped(real_app):
    """Moved early by something other than Recur's mover (here 2.3 s, beyond the old 2 s wait limit).
    Before: dropped as "early", no run, no pending link until the reconciler noticed."""
    truth = redis_now(real_app)
    schedule = make_schedule(truth - timedelta(seconds=7.7), interval_seconds=10)  # due in 2.3 s, then 10 s later
    assert Mover(get_redis(real_app), get_queue(real_app)).move_due(truth + timedelta(seconds=3)) == 1
    run_queue(real_app)
    [run] = runs_of(schedule.id)
    assert run.status == "succeeded"
    assert run.started_at >= run.scheduled_for and redis_now(real_app) >= run.scheduled_for
    assert scheduled_ids(real_app) == [f"sched-{schedule.id}-n1-rc0"]


def _claim_first_tick(app: Flask, started: datetime) -> str:
    """A run of a new schedule claimed at `started` whose lease is gone (its worker died)."""
    reconcile_once(app)  # the first pass after Redis was emptied writes nothing off; this is not that pass
    assert get_redis(app).exists(EPOCH_KEY)
    schedule = make_schedule(started - timedelta(seconds=1), interval_seconds=1)
    claim = claim_tick(schedule.id, 0, 0, 0, started, started, "w", None)
    assert claim is not None
    return schedule.id


def test_lease_grace_is_judged_on_the_cluster_clock(real_app, monkeypatch):
    """Before: the reconciler, 4 s ahead, took a run that started 2 s ago (lease grace 5 s) for one that
    started 6 s ago and wrote it off as lost."""
    schedule_id = _claim_first_tick(real_app, redis_now(real_app) - timedelta(seconds=2))
    shift_host_clock(monkeypatch, +4)
    report = reconcile_once(real_app)
    assert report is not None and report["runs_written_off"] == 0
    assert fresh(schedule_id).running_run_id is not None
    db.session.rollback()


def _taken_link(app: Flask, moved_ago: float) -> str:
    """A link the mover moved `moved_ago` seconds ago (by the cluster clock) and a worker then took off
    the queue (RQ moves it to its intermediate queue) but has not claimed yet."""
    truth = redis_now(app)
    schedule = make_schedule(truth - timedelta(seconds=moved_ago + 2), interval_seconds=1)
    redis, queue = get_redis(app), get_queue(app)
    assert Mover(redis, queue).move_due(truth - timedelta(seconds=moved_ago)) == 1
    assert redis.lmove(queue.key, queue.intermediate_queue_key) is not None
    return f"sched-{schedule.id}-n0-rc0"


def test_in_hand_grace_is_judged_on_the_cluster_clock(real_app, monkeypatch):
    """Before: the reconciler, 4 s ahead, took a link moved and taken 8 s ago for one taken 12 s ago (grace
    10 s) and re-created it while its worker held it."""
    _taken_link(real_app, moved_ago=8)
    shift_host_clock(monkeypatch, +4)
    report = reconcile_once(real_app)
    assert report is not None and report["links_repaired"] == 0


def test_rq_started_stamps_from_a_host_whose_clock_is_behind_are_allowed_for(real_app):
    """RQ stamps started_at with the clock of the host that took the link: a worker 4 s behind stamps a
    link it took 8 s ago as taken 12 s ago. Before: re-created while its worker held it."""
    job_id = _taken_link(real_app, moved_ago=8)
    redis = get_redis(real_app)
    from rq.utils import utcformat

    stamp = redis_now(real_app) - timedelta(seconds=12)  # what RQ writes when it starts a job (SimpleWorker)
    redis.hset(f"rq:job:{job_id}", mapping={"status": "started", "started_at": utcformat(stamp)})
    report = reconcile_once(real_app)
    assert report is not None and report["links_repaired"] == 0


def test_the_api_plans_on_the_cluster_clock(real_app, monkeypatch):
    """Before: a web host 30 s behind planned a first tick already 29 s in the past."""
    client = authorized_client(real_app, token_for_app(real_app))
    workflow = client.post("/api/v1/workflows/", json={"name": "noop", "task": "builtin.noop"}).json
    shift_host_clock(monkeypatch, -30)
    before = redis_now(real_app)
    body = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow["id"],
                                                   "interval_seconds": 1}).json
    first = datetime.fromisoformat(body["next_run_at"].replace("Z", "+00:00"))
    assert before < first <= redis_now(real_app) + timedelta(seconds=1)


def test_reading_the_cluster_clock_costs_no_round_trip(redis_server):
    redis: Redis = Redis.from_url(redis_server.url)
    cluster = clock.ClusterClock(lambda: redis)
    redis.config_resetstat()
    for _ in range(1000):
        cluster.now()
    calls = int(redis.info("commandstats").get("cmdstat_time", {}).get("calls", 0))
    assert 1 <= calls <= 3  # one read (three at most, when the round trip was slow), then none


def test_a_failed_read_keeps_the_last_offset(redis_server, monkeypatch):
    redis: Redis = Redis.from_url(redis_server.url)
    source: list[Redis] = [redis]
    cluster = clock.ClusterClock(lambda: source[0], resync_seconds=0.0)  # re-reads Redis at every call
    shift_host_clock(monkeypatch, -30)
    assert abs((cluster.now() - _time_of(redis)).total_seconds()) < 0.5
    source[0] = connect_redis(f"redis://127.0.0.1:{free_port()}/0")  # nobody listens there
    assert abs((cluster.now() - _time_of(redis)).total_seconds()) < 0.5


def test_before_any_read_succeeds_the_hosts_clock_stands_in(monkeypatch):
    shift_host_clock(monkeypatch, -30)
    cluster = clock.ClusterClock(lambda: connect_redis(f"redis://127.0.0.1:{free_port()}/0"))
    assert abs((cluster.now() - datetime.now(UTC)).total_seconds() + 30) < 0.5


def test_a_forked_child_reads_the_clock_even_if_forked_mid_read(redis_server):
    """A child forked while a thread of its parent was reading Redis TIME must not wait for that read."""
    redis: Redis = Redis.from_url(redis_server.url)
    cluster = clock.ClusterClock(lambda: redis, resync_seconds=0.0)
    cluster.now()
    with _held(cluster):
        pid = os.fork()
        if pid == 0:  # the child: a stuck lock would hang here (the parent's timeout then kills it)
            os._exit(0 if abs((cluster.now() - _time_of(redis)).total_seconds()) < 0.5 else 1)
    _wait_child(pid, timeout=10)


def _time_of(redis: Redis) -> datetime:
    seconds, micros = redis.time()
    return datetime.fromtimestamp(seconds + micros / 1e6, UTC)


class _held:
    """Holds the clock's read lock, as a thread of the process caught mid-read would."""

    def __init__(self, cluster: clock.ClusterClock) -> None:
        self._acquire: Callable[[], bool] = cluster._read_lock.acquire
        self._release = cluster._read_lock.release

    def __enter__(self) -> None:
        assert self._acquire()

    def __exit__(self, *exc: object) -> None:
        self._release()


def _wait_child(pid: int, timeout: float) -> None:
    import signal
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child hung reading the clock")
