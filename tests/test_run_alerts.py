"""Alerts on long and late runs and on failure streaks: the pure decisions with literal datetimes, then each
alert carried out by the chain or the watch on a real database, emitted once and recorded on its row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from harness.chain_driver import fresh, make_schedule, step
from recur_server.infra.extensions import db
from recur_server.models import Run
from recur_server.notify import long_runs, outbox
from recur_server.notify.models import Event, Webhook
from recur_server.policies.alerts import expected_tick
from recur_server.policies.run_alerts import Streak, StreakStep, is_late_start, is_long, record_outcome

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_a_run_is_late_past_late_after_and_only_a_tick_of_the_timing() -> None:
    assert not is_late_start(T0, T0 + timedelta(seconds=30), 30, "schedule")
    assert is_late_start(T0, T0 + timedelta(seconds=30.001), 30, "schedule")
    assert is_late_start(T0, T0 + timedelta(seconds=31), 30, "retry")
    assert is_late_start(T0, T0 + timedelta(seconds=31), 30, "catch_up")
    for trigger in ("manual", "backfill", "after"):  # nominal times that are not ticks of the timing
        assert not is_late_start(T0, T0 + timedelta(hours=5), 30, trigger)
    assert not is_late_start(T0, T0 + timedelta(days=9), None, "schedule")


def test_a_run_is_long_past_long_after() -> None:
    assert not is_long(T0, 60, T0 + timedelta(seconds=60))
    assert is_long(T0, 60, T0 + timedelta(seconds=60.5))
    assert not is_long(T0, None, T0 + timedelta(days=1))


def test_a_streak_raises_failing_once_and_a_success_ends_it() -> None:
    streak = Streak(0, None)
    steps = []
    for n, status in enumerate(["failed", "timed_out", "skipped", "failed", "failed", "cancelled", "failed"]):
        step_ = record_outcome(streak, 3, status, T0 + timedelta(minutes=n))
        steps.append(step_)
        streak = step_.streak
    assert [s.failing for s in steps] == [False, False, False, True, False, False, False]
    assert streak == Streak(5, T0 + timedelta(minutes=3))  # skipped and cancelled runs neither count nor break it
    ended = record_outcome(streak, 3, "succeeded", T0 + timedelta(minutes=9))
    assert ended == StreakStep(Streak(0, None), recovered=True)
    assert record_outcome(Streak(2, None), 3, "succeeded", T0) == StreakStep(Streak(0, None))


def test_a_streak_without_failing_after_costs_nothing_but_an_alert_raised_still_ends() -> None:
    assert record_outcome(Streak(0, None), None, "failed", T0) == StreakStep(Streak(0, None))
    assert record_outcome(Streak(0, None), None, "succeeded", T0) == StreakStep(Streak(0, None))
    raised = Streak(4, T0)
    assert record_outcome(raised, None, "failed", T0).streak == Streak(5, T0)  # failing_after cleared meanwhile
    assert record_outcome(raised, None, "succeeded", T0).recovered
    assert record_outcome(Streak(0, None), 1, "failed", T0) == StreakStep(Streak(1, T0), failing=True)


def test_the_missed_run_alert_waits_on_the_older_of_next_run_at_and_a_detached_tick() -> None:
    assert expected_tick(T0, None) == T0
    assert expected_tick(T0 + timedelta(minutes=5), T0) == T0
    assert expected_tick(None, T0) == T0
    assert expected_tick(None, None) is None


def _subscribe(*types: str) -> None:
    db.session.add(Webhook(owner_id=1, url="https://hooks.example.com/recur", event_types=list(types),
                           secret="whsec_cmVjdXItZXhhbXBsZS1zZWNyZXQtMjRi", created_at=T0))
    db.session.commit()
    outbox.forget(1)


def _events(event_type: str) -> list[Event]:
    found = list(db.session.scalars(select(Event).where(Event.type == event_type).order_by(Event.occurred_at)))
    db.session.rollback()
    return found


def test_a_link_claimed_late_emits_run_late_once_recorded_on_its_run(app, fake_clock) -> None:
    _subscribe("run.late")
    schedule = make_schedule(fake_clock.now, interval_seconds=60, late_after_seconds=5)
    step(app, fake_clock, extra_seconds=3)  # 3 s late: no alert
    due = step(app, fake_clock, extra_seconds=8)  # 8 s late
    assert due is not None
    late = _events("run.late")
    assert len(late) == 1
    run = db.session.scalars(select(Run).where(Run.id == late[0].data["run_id"])).one()
    assert (run.scheduled_for, run.late_alerted_at) == (due, due + timedelta(seconds=8))
    assert late[0].data["late_seconds"] == 8.0 and late[0].data["schedule_id"] == schedule.id


def test_failing_after_three_failures_emits_schedule_failing_once_then_recovered(app, fake_clock) -> None:
    _subscribe("schedule.failing", "schedule.recovered")
    schedule = make_schedule(fake_clock.now, task="builtin.fail", interval_seconds=10, max_retries=0,
                             on_exhausted="continue", failing_after=3)
    for _ in range(5):
        step(app, fake_clock, extra_seconds=0.2)
    failing = _events("schedule.failing")
    assert len(failing) == 1 and failing[0].data["failures"] == 3
    row = fresh(schedule.id)
    assert row.failing_streak == 5 and row.failing_since == failing[0].occurred_at
    db.session.rollback()
    # The task is made to succeed: the next run ends the alert.
    workflow_id = row.workflow_id
    from recur_server.models import Workflow

    db.session.get(Workflow, workflow_id).task = "builtin.noop"
    db.session.commit()
    step(app, fake_clock, extra_seconds=0.2)
    recovered = _events("schedule.recovered")
    assert len(recovered) == 1 and recovered[0].data["failures"] == 5
    assert recovered[0].data["failing_since"] is not None and recovered[0].data["late_since"] is None
    row = fresh(schedule.id)
    assert (row.failing_streak, row.failing_since) == (0, None)


def test_a_run_going_past_long_after_emits_run_long_once_whoever_checks(app, fake_clock) -> None:
    _subscribe("run.long")
    schedule = make_schedule(fake_clock.now, interval_seconds=3600, long_after_seconds=60)
    db.session.add(Run(id="r-long", schedule_id=schedule.id, repeat_number=None, retry_number=0, scheduled_for=T0,
                       started_at=T0, status="running", trigger="manual"))
    db.session.add(Run(id="r-done", schedule_id=schedule.id, repeat_number=None, retry_number=0, scheduled_for=T0,
                       started_at=T0, finished_at=T0 + timedelta(seconds=90), status="succeeded", trigger="manual"))
    db.session.commit()
    assert long_runs.check(T0 + timedelta(seconds=60)) == []
    assert long_runs.check(T0 + timedelta(seconds=61)) == ["r-long"]
    assert long_runs.check(T0 + timedelta(seconds=120)) == []  # once: the first check recorded it
    (event,) = _events("run.long")
    assert (event.data["run_id"], event.data["running_seconds"]) == ("r-long", 61.0)
    assert db.session.get(Run, "r-long").long_alerted_at == T0 + timedelta(seconds=61)
