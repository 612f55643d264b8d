"""Recur's RQ worker on a real redis-server: a task that kills its work process fails its attempt only."""

from __future__ import annotations

from datetime import UTC, datetime

from app.chain.ids import link_id
from app.chain.mover import Mover
from app.chain.worker import RecurWorker
from app.extensions import get_queue, get_redis
from tests.chain_driver import fresh, make_schedule, next_due, runs_of, scheduled_ids


def test_task_that_kills_its_process_does_not_kill_the_chain(real_app, fake_clock):
    fake_clock.set(datetime.now(UTC))
    schedule = make_schedule(fake_clock.now, task="tests.die", interval_seconds=1, max_retries=1)
    due = next_due(real_app)
    fake_clock.set(due)
    assert Mover(get_redis(real_app), get_queue(real_app)).move_due(due) == 1
    worker = RecurWorker([get_queue(real_app)], connection=get_redis(real_app))
    worker.work(burst=True, with_scheduler=False)
    [run] = runs_of(schedule.id)
    assert run.status == "failed"
    assert "work process died" in run.error and "exit status" in run.error
    after = fresh(schedule.id)
    assert (after.status, after.current_retry, after.error_count, after.running_run_id) == ("active", 1, 1, None)
    assert scheduled_ids(real_app) == [link_id(schedule.id, 0, 1)]
