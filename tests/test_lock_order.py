"""The order in which the chain's transactions take row locks, on PostgreSQL (SQLite's transactions hold its one
write lock, so they cannot interleave). A finish locks its run's row, then its schedule's; whatever holds a
schedule's row must never then wait on a run's row, or the two wait on each other until PostgreSQL kills one
("deadlock detected") and a run's outcome is lost with it.

Each test holds a schedule's row from a connection of its own, lines the real transactions up behind it in the
order that closes the cycle, and lets go."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select, text

from harness.chain_driver import make_schedule
from harness.row_locks import until_waiting
from recur_server.chain.finish import finish_run
from recur_server.infra.extensions import db
from recur_server.models import Run, RunStatus, RunTrigger, Workflow
from recur_server.services.outside_runs import job

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


class _InThread:
    """Call `work` in a thread of its own, in an app context; keep what it returned or raised."""

    def __init__(self, app: Flask, work: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            with app.app_context():
                try:
                    self.result = work()
                except BaseException as exc:  # noqa: BLE001 - reported by the test
                    self.error = exc
                finally:
                    db.session.remove()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self) -> Any:
        self.thread.join(30)
        assert not self.thread.is_alive(), "still waiting after 30 s"
        if self.error is not None:
            raise self.error
        return self.result


@pytest.mark.parametrize("overlap", ["allow_all", "skip"])
def test_a_copy_of_a_manual_runs_job_does_not_deadlock_with_that_runs_finish(app: Flask, overlap: str) -> None:
    """Two copies of one manual run's job (RQ may hand a job out again: a worker died holding it, a slot
    re-took it). The first started the run and is finishing it (its run's row locked); the second starts
    meanwhile, takes the schedule's row and must not then wait on the run's row."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    schedule = make_schedule(NOW, cron="0 2 * * *", overlap=overlap)
    flow = db.session.get(Workflow, schedule.workflow_id)
    assert flow is not None
    flow.max_concurrent_runs, flow.breaker_threshold = 2, 3  # the configuration the deadlock first met
    db.session.commit()
    run_id = "manual-run-1"
    manual = RunTrigger.MANUAL.value

    def start() -> Any:
        return job._start(schedule.id, run_id, NOW, manual, None, None, NOW, "w1")

    assert isinstance(start(), job.Started)  # the first copy's start, committed

    blocker = db.engine.connect()
    blocker.execute(text("SELECT id FROM scheduled_jobs WHERE id = :id FOR UPDATE"), {"id": schedule.id})
    try:
        second = _InThread(app, start)  # the second copy: waits for the schedule's row
        until_waiting(1)
        finish = _InThread(app, lambda: finish_run(run_id, RunStatus.SUCCEEDED, None, NOW, schedule_id=schedule.id))
        until_waiting(2)  # the finish holds the run's row and waits for the schedule's, behind the copy
    finally:
        blocker.commit()
        blocker.close()

    assert second.join() == "gone"
    finish.join()  # raised nothing: before the fix, PostgreSQL killed one of the two ("deadlock detected")
    run = db.session.scalars(select(Run).where(Run.id == run_id)).one()
    assert run.status == RunStatus.SUCCEEDED.value
