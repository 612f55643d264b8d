"""The missed-run alert for overlap allow_all and cancel_other: their runs leave the chain as they start, so the
chain's next_run_at is always the coming tick; failing runs must still make the schedule late, once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from harness.chain_driver import fresh, make_schedule, step
from recur_server.infra.extensions import db
from recur_server.models import Workflow
from recur_server.notify import alerts


@pytest.mark.parametrize("overlap", ["allow_all", "cancel_other"])
def test_a_detached_schedule_whose_runs_fail_becomes_late_once(app, fake_clock, overlap):
    schedule = make_schedule(fake_clock.now, task="builtin.fail", interval_seconds=10, overlap=overlap,
                             max_retries=0, on_exhausted="continue", alert_after_seconds=25)
    first = step(app, fake_clock, extra_seconds=0.2)
    assert first is not None
    for _ in range(2):
        step(app, fake_clock, extra_seconds=0.2)
    assert fresh(schedule.id).next_run_at == first + timedelta(seconds=30)  # the chain moved on past the failures
    assert alerts.check(first + timedelta(seconds=25)) == []  # not yet past alert_after
    assert alerts.check(first + timedelta(seconds=25.5)) == [schedule.id]
    assert alerts.check(first + timedelta(seconds=40)) == []  # once
    row = fresh(schedule.id)
    assert (row.health, row.detached_since) == ("late", first)


def test_a_detached_success_settles_the_tick_it_waited_on_and_recovers(app, fake_clock):
    schedule = make_schedule(fake_clock.now, task="builtin.fail", interval_seconds=10, overlap="allow_all",
                             max_retries=0, on_exhausted="continue", alert_after_seconds=15)
    first = step(app, fake_clock, extra_seconds=0.2)
    step(app, fake_clock, extra_seconds=0.2)
    assert first is not None and alerts.check(first + timedelta(seconds=16)) == [schedule.id]
    workflow = db.session.get(Workflow, fresh(schedule.id).workflow_id)
    workflow.task = "builtin.noop"
    db.session.commit()
    step(app, fake_clock, extra_seconds=0.2)
    row = fresh(schedule.id)
    assert (row.health, row.detached_since, row.late_since) == ("ok", None, None)
    step(app, fake_clock, extra_seconds=0.2)
    assert fresh(schedule.id).detached_since is None  # runs that succeed leave nothing to wait on
