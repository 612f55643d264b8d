"""A stale or duplicate copy of a link, run at the same time as the real link, never changes the real
run's outcome: the copy loses the fence and touches nothing else (each test on fakeredis and a real
redis-server, on SQLite and, with RECUR_TEST_POSTGRES, PostgreSQL)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from flask import Flask
from sqlalchemy import text

from harness.chain_driver import fresh, make_schedule, runs_of, step
from harness.servers import wait_for
from recur_server.chain import link
from recur_server.chain.leases import lease_key
from recur_server.infra.extensions import db, get_redis
from recur_server.models import RunStatus, Schedule


def _inside(thread: threading.Thread, function: str) -> bool:
    """Whether `function` is on the thread's stack right now."""
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


class _Link(threading.Thread):
    """Runs one link (the RQ job's own entry point) in a thread with the test's app context."""

    def __init__(self, app: Flask, run: Callable[[], str]) -> None:
        super().__init__(daemon=True)
        self._app, self._run = app, run
        self.outcome: str | BaseException | None = None

    def run(self) -> None:
        with self._app.app_context():
            try:
                self.outcome = self._run()
            except BaseException as exc:  # shown by the assertion on the outcome
                self.outcome = exc


def _run_link(schedule_id: str, revision: int, repeat: int, scheduled_for: Any) -> Callable[[], str]:
    return lambda: link.run_link(schedule_id, revision, repeat, 0, scheduled_for.isoformat())


def test_a_stale_copy_running_beside_the_real_link_leaves_its_run_alone(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    first_nominal = step(chain_app, fake_clock)  # tick n0 runs; the schedule now expects n1
    second = fresh(schedule.id)
    revision, repeat, nominal = second.revision, second.current_repeat, second.next_run_at
    db.session.rollback()  # end the read (on SQLite, a write lock)
    assert repeat == 1
    fake_clock.set(nominal)

    # Both links reach their claim while another transaction holds the schedules' table, so that each
    # has done whatever it does before the claim when the claims go through, the stale copy first.
    blocker = db.engine.connect()
    blocker.begin()  # on SQLite, BEGIN IMMEDIATE: the database's write lock
    if db.engine.dialect.name == "postgresql":  # every UPDATE of a schedule waits, whichever row it matches
        blocker.execute(text(f"LOCK TABLE {Schedule.__tablename__} IN EXCLUSIVE MODE"))
    try:
        stale = _Link(chain_app, _run_link(schedule.id, revision, 0, first_nominal))
        stale.start()
        wait_for(lambda: _inside(stale, "claim_tick"), what="the stale copy to reach its claim")
        real = _Link(chain_app, _run_link(schedule.id, revision, 1, nominal))
        real.start()
        wait_for(lambda: _inside(real, "claim_tick"), what="the real link to reach its claim")
    finally:
        blocker.rollback()
        blocker.close()
    stale.join(30)
    real.join(30)

    runs = runs_of(schedule.id)
    assert [(r.repeat_number, r.status, r.error) for r in runs] == [(0, "succeeded", None), (1, "succeeded", None)]
    assert (stale.outcome, real.outcome) == ("stale", RunStatus.SUCCEEDED.value)
    after = fresh(schedule.id)
    assert (after.current_repeat, after.run_count, after.running_run_id) == (2, 2, None)
    assert not get_redis(chain_app).exists(lease_key(schedule.id))
