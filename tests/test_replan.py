"""A re-plan (PATCH of the timing, resume) never loses the new link, and a reconciler pass racing a hand-off
or a re-plan never leaves a second pending link. Each test on fakeredis and on a real redis-server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from flask import Flask
from rq import Queue, SimpleWorker

from harness.chain_driver import fresh, make_schedule, next_due, run_due, runs_of, step
from recur_server.chain.ids import link_id
from recur_server.chain.link_lookup import pending_revisions
from recur_server.chain.mover import Mover
from recur_server.infra.extensions import get_queue, get_redis
from recur_server.models import RunStatus
from recur_server.services import reconcile, schedules


def _take(app: Flask, started: bool) -> Callable[[], object]:
    """Take the first queued link as an RQ worker does, and stop before its claim: popped into RQ's
    intermediate queue with its hash still 'queued' (where the forking worker claims), or also marked
    'started' (where a SimpleWorker claims, and where a link that started early waits). Returns the rest
    of RQ's execution: the link's claim, then RQ's finishing write to the job's hash."""
    queue, redis = get_queue(app), get_redis(app)
    worker = SimpleWorker([queue], connection=redis)
    taken = Queue.dequeue_any([queue], None, connection=redis)
    assert taken is not None
    job, queue = taken
    execution = worker.prepare_execution(job)
    if started:
        worker.prepare_job_execution(job, remove_from_intermediate_queue=True)
        assert job.get_status(refresh=True) == "started"
    else:
        assert job.get_status(refresh=True) == "queued" and not redis.lpos(queue.key, job.id)
    return lambda: worker.perform_job(job, queue, execution)


def _pending(app: Flask, schedule_id: str) -> list[str]:
    """The IDs of the schedule's links that are pending: in RQ's scheduled registry or on the queue."""
    queue, redis = get_queue(app), get_redis(app)
    members = redis.zrange(f"rq:scheduled:{queue.name}", 0, -1) + redis.lrange(queue.key, 0, -1)
    return [m.decode() for m in members if m.decode().startswith(f"sched-{schedule_id}-")]


def _pause_and_resume(schedule_id: str, now) -> None:  # type: ignore[no-untyped-def]
    schedules.pause(schedule_id, now)
    schedules.resume(schedule_id, now)


REPLANS = {
    "patch": lambda schedule_id, now: schedules.update(schedule_id, {"interval_seconds": 20}, now),
    "resume": _pause_and_resume,
}


@pytest.mark.parametrize("started", [False, True], ids=["in-hand", "started"])
@pytest.mark.parametrize("replan", sorted(REPLANS))
def test_a_replan_while_the_old_link_is_taken_keeps_the_new_link(chain_app, fake_clock, replan, started):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    due = next_due(chain_app)
    fake_clock.set(due)
    Mover(get_redis(chain_app), get_queue(chain_app)).move_due(due)
    finish_taken_link = _take(chain_app, started)

    REPLANS[replan](schedule.id, fake_clock.now)
    assert finish_taken_link() is True  # the old link's claim is fenced out, and RQ writes its end
    row = fresh(schedule.id)
    repeat, revision, nominal = row.current_repeat, row.revision, row.next_run_at
    assert (repeat, row.current_retry) == (1, 0)  # the re-plan started a new tick: a new link ID
    expected = link_id(schedule.id, repeat, 0)
    # The link the re-plan put is still the pending one, carrying the new revision...
    assert _pending(chain_app, schedule.id) == [expected]
    queue = get_queue(chain_app)
    assert pending_revisions(get_redis(chain_app), queue, [expected], due.timestamp()) == [revision]
    # ...and it runs at its time, without a reconciler pass.
    assert runs_of(schedule.id) == []
    assert step(chain_app, fake_clock) == nominal
    [run] = runs_of(schedule.id)
    assert (run.status, run.scheduled_for, run.repeat_number) == (RunStatus.SUCCEEDED.value, nominal, repeat)
    assert _pending(chain_app, schedule.id) == [link_id(schedule.id, repeat + 1, 0)]


def test_a_replan_while_a_run_is_in_flight_keeps_the_tick(chain_app, fake_clock):
    """The running link hands off its own successor (under a new ID): the re-plan does not advance it."""
    from recur_server.chain.claim import claim_tick
    from recur_server.chain.finish import finish_run

    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    due = next_due(chain_app)
    fake_clock.set(due)
    claim = claim_tick(schedule.id, 0, 0, 0, due, due, "w")
    assert claim is not None
    schedules.update(schedule.id, {"interval_seconds": 20}, fake_clock.now)
    assert (fresh(schedule.id).current_repeat, fresh(schedule.id).revision) == (0, 1)
    finished = finish_run(claim.run_id, RunStatus.SUCCEEDED, None, fake_clock.now)
    assert finished is not None and finished.current_repeat == 1


def _meanwhile(monkeypatch: pytest.MonkeyPatch, act: Callable[[], object]) -> None:
    """Run `act` inside the next reconciler pass, after it read the rows and before it looks at Redis."""
    real = reconcile.pending_revisions

    def act_then_look(*args, **kwargs):  # type: ignore[no-untyped-def]
        act()
        return real(*args, **kwargs)

    monkeypatch.setattr(reconcile, "pending_revisions", act_then_look)


def test_a_pass_that_read_the_row_before_a_hand_off_leaves_one_pending_link(chain_app, fake_clock, monkeypatch):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    due = next_due(chain_app)
    fake_clock.set(due + timedelta(seconds=1))
    # The pass reads n0 as the expected link; n0 then runs and hands off n1 before the pass looks at Redis,
    # so n0 is no longer pending there and the pass puts it again.
    _meanwhile(monkeypatch, lambda: run_due(chain_app, fake_clock.now))
    report = reconcile.reconcile(fake_clock.now)
    assert _pending(chain_app, schedule.id) == [link_id(schedule.id, 1, 0)]
    assert report.links_repaired == []
    assert [r.status for r in runs_of(schedule.id)] == [RunStatus.SUCCEEDED.value]


def test_a_pass_that_read_the_row_before_a_replan_leaves_the_new_link(chain_app, fake_clock, monkeypatch):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    _meanwhile(monkeypatch, lambda: schedules.update(schedule.id, {"interval_seconds": 20}, fake_clock.now))
    report = reconcile.reconcile(fake_clock.now)
    row = fresh(schedule.id)
    expected = link_id(schedule.id, row.current_repeat, row.current_retry)
    assert _pending(chain_app, schedule.id) == [expected]
    redis, queue = get_redis(chain_app), get_queue(chain_app)
    assert pending_revisions(redis, queue, [expected], fake_clock.now.timestamp()) == [row.revision]
    assert report.links_repaired == []
