"""The chain, driven through real RQ machinery (SimpleWorker in burst mode), each test on fakeredis (with
Lua) and on a real redis-server."""

from __future__ import annotations

from datetime import timedelta

from rq.job import Job

from harness.chain_driver import fresh, make_schedule, next_due, run_due, runs_of, scheduled_ids, step
from recur_server.chain.ids import link_id
from recur_server.chain.leases import lease_key
from recur_server.chain.mover import Mover
from recur_server.chain.redis_links import LINK_FUNC, LinkPlan, put_links
from recur_server.infra.extensions import get_queue, get_redis
from recur_server.models import RunStatus, ScheduleStatus
from recur_server.services.reconcile import reconcile


def test_interval_schedule_runs_to_done_with_fixed_rate(chain_app, fake_clock):
    created = fake_clock.now
    schedule = make_schedule(created, interval_seconds=10, total_repeats=3)
    first = next_due(chain_app)
    # The first run is one interval after creation, to the millisecond (the anchor keeps them).
    assert first == created.replace(microsecond=created.microsecond // 1000 * 1000) + timedelta(seconds=10)
    for _ in range(3):
        step(chain_app, fake_clock, extra_seconds=0.4)
    assert step(chain_app, fake_clock) is None
    schedule = fresh(schedule.id)
    assert schedule.status == ScheduleStatus.DONE.value
    assert (schedule.run_count, schedule.current_repeat, schedule.error_count) == (3, 3, 0)
    assert schedule.next_run_at is None
    runs = runs_of(schedule.id)
    assert [r.status for r in runs] == ["succeeded"] * 3
    assert [r.repeat_number for r in runs] == [0, 1, 2]
    # Fixed rate: nominal times step by exactly the interval, whatever the execution delay.
    assert [r.scheduled_for for r in runs] == [first + timedelta(seconds=10 * i) for i in range(3)]


def test_past_slots_are_caught_up_by_the_latest_and_recorded_missed(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    due = next_due(chain_app)
    fake_clock.set(due + timedelta(seconds=35))  # ran 35 s late: slots +10, +20, +30 are past
    run_due(chain_app, fake_clock.now)
    assert fresh(schedule.id).next_run_at == due + timedelta(seconds=40)
    # catch_up=latest (the default): one run, for the most recent missed tick, with its own nominal time;
    # the three before it are one `missed` row, so the history has no hole.
    ran = {r.status: r for r in runs_of(schedule.id)}
    assert set(ran) == {"succeeded", "missed"}
    assert (ran["succeeded"].scheduled_for, ran["succeeded"].trigger) == (due + timedelta(seconds=30), "catch_up")
    assert (ran["missed"].scheduled_for, ran["missed"].ticks, ran["missed"].reason) == (due, 3, "catch_up_skip")


def test_failures_back_off_then_die(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, task="builtin.fail", interval_seconds=10, max_retries=2,
                             trigger_payload={"message": "boom"})
    attempts = [step(chain_app, fake_clock) for _ in range(3)]
    assert step(chain_app, fake_clock) is None
    schedule = fresh(schedule.id)
    assert schedule.status == ScheduleStatus.DEAD.value
    assert (schedule.error_count, schedule.run_count) == (3, 0)
    assert schedule.last_error == "RuntimeError: boom"
    runs = runs_of(schedule.id)
    assert [(r.repeat_number, r.retry_number, r.status) for r in runs] == [(0, 0, "failed"), (0, 1, "failed"),
                                                                          (0, 2, "failed")]
    # Backoff min(interval * 2**(retry-1), interval * 10): 10 s, then 20 s.
    assert [(b - a).total_seconds() for a, b in zip(attempts, attempts[1:], strict=False)] == [10, 20]


def test_flaky_task_recovers_and_resets_retry(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, task="builtin.flaky", interval_seconds=5, total_repeats=2,
                             trigger_payload={"failures": 2})
    for _ in range(10):
        if step(chain_app, fake_clock) is None:
            break
    schedule = fresh(schedule.id)
    assert schedule.status == ScheduleStatus.DONE.value
    runs = runs_of(schedule.id)
    statuses = [(r.repeat_number, r.retry_number, r.status) for r in runs if r.reason is None]
    assert statuses == [(0, 0, "failed"), (0, 1, "failed"), (0, 2, "succeeded"),
                        (1, 0, "failed"), (1, 1, "failed"), (1, 2, "succeeded")]
    # The ticks that came due while n0 was retried (5 s and 10 s later, then 15 s, when rc2 ran) are the
    # overlap policy's, skip: one row for the three; n1 is the tick after. (Before, they had no row at all.)
    [gap] = [(r.reason, r.ticks, r.scheduled_for - runs[0].scheduled_for) for r in runs if r.reason is not None]
    assert gap == ("overlap", 3, timedelta(seconds=5))
    assert [r.scheduled_for - runs[0].scheduled_for for r in runs if r.retry_number == 0 and r.reason is None] == [
        timedelta(0), timedelta(seconds=20)]
    assert (schedule.run_count, schedule.error_count, schedule.current_retry, schedule.last_error) == (2, 4, 0, None)


def test_timeout_counts_as_failure_and_chain_goes_on(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, task="builtin.sleep", interval_seconds=5, timeout_seconds=1,
                             max_retries=1, trigger_payload={"seconds": 5})
    step(chain_app, fake_clock)
    schedule = fresh(schedule.id)
    [run] = runs_of(schedule.id)
    assert run.status == RunStatus.TIMED_OUT.value
    assert (schedule.status, schedule.current_retry, schedule.error_count) == ("active", 1, 1)
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 0, 1)]


def test_stale_link_with_old_id_changes_nothing(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    step(chain_app, fake_clock)
    before = fresh(schedule.id)
    state_before = (before.current_repeat, before.run_count, before.next_run_at, before.revision)
    # A stray copy of the link that already ran (n0-rc0), queued by RQ's own enqueue (a put refuses it:
    # the schedule's last put is n1).
    stale = LinkPlan(schedule.id, before.revision, 0, 0, fake_clock.now, fake_clock.now, 60)
    assert put_links(get_queue(chain_app), [stale]) == []
    kwargs = {"schedule_id": schedule.id, "revision": before.revision, "repeat": 0, "retry": 0,
              "scheduled_for": fake_clock.now.isoformat()}
    stray = get_queue(chain_app).enqueue_call(LINK_FUNC, kwargs=kwargs, job_id=stale.job_id)
    run_due(chain_app, fake_clock.now)
    assert stray.return_value(refresh=True) == "stale"  # it ran, and the fence made it do nothing
    after = fresh(schedule.id)
    assert (after.current_repeat, after.run_count, after.next_run_at, after.revision) == state_before
    assert len(runs_of(schedule.id)) == 1
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 1, 0)]
    # the lease a fenced-out link took while its claim was in flight was given back
    assert not get_redis(chain_app).exists(lease_key(schedule.id))


def test_two_copies_of_one_link_give_one_run(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    job_id = link_id(schedule.id, 0, 0)
    due = next_due(chain_app)
    fake_clock.set(due)
    Mover(get_redis(chain_app), get_queue(chain_app)).move_due(due)
    get_queue(chain_app).push_job_id(job_id)  # the same link queued twice, as a re-enqueue under an existing ID does
    run_due(chain_app, due)
    runs = runs_of(schedule.id)
    assert [(r.repeat_number, r.retry_number) for r in runs] == [(0, 0)]
    assert fresh(schedule.id).run_count == 1
    assert not get_redis(chain_app).exists(lease_key(schedule.id))


def test_overlapping_run_is_skipped_and_chain_continues(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    get_redis(chain_app).set(lease_key(schedule.id), "another-run", px=60_000)
    step(chain_app, fake_clock)
    [run] = runs_of(schedule.id)
    assert run.status == RunStatus.SKIPPED.value
    after = fresh(schedule.id)
    assert (after.current_repeat, after.run_count, after.status) == (1, 0, "active")
    # The successor has a new ID: reusing the running link's ID would end the chain.
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 1, 0)]


def test_recovery_recreates_lost_link_once_and_overdue_fires_promptly(chain_app, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    due = next_due(chain_app)
    get_redis(chain_app).flushall()
    fake_clock.set(due + timedelta(seconds=95))  # nine slots missed while Redis was empty
    assert reconcile(fake_clock.now).links_repaired == [link_id(schedule.id, 0, 0)]
    assert reconcile(fake_clock.now).links_repaired == []  # idempotent
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 0, 0)]
    assert next_due(chain_app) <= fake_clock.now  # overdue: due at once, not one interval later
    run_due(chain_app, fake_clock.now)
    assert len([r for r in runs_of(schedule.id) if r.status != "missed"]) == 1  # once, not once per missed slot
    assert fresh(schedule.id).next_run_at == due + timedelta(seconds=100)


def test_lost_run_is_written_off_and_retried(chain_app, fake_clock):
    from recur_server.chain.claim import claim_tick

    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    due = next_due(chain_app)
    fake_clock.set(due)
    # A worker takes the link off the queue, claims the tick, and is killed before it finishes.
    Mover(get_redis(chain_app), get_queue(chain_app)).move_due(due)
    get_redis(chain_app).delete(get_queue(chain_app).key, Job.key_for(link_id(schedule.id, 0, 0)))
    claim = claim_tick(schedule.id, 0, 0, 0, due, fake_clock.now, "gone-worker")
    assert reconcile(fake_clock.now).runs_written_off == []  # within the lease grace: maybe still alive
    fake_clock.advance(seconds=30)
    assert reconcile(fake_clock.now).runs_written_off == [claim.run_id]
    [run] = runs_of(schedule.id)
    assert run.status == "failed" and run.error.startswith("worker_lost")
    assert scheduled_ids(chain_app) == [link_id(schedule.id, 0, 1)]
    step(chain_app, fake_clock)
    assert fresh(schedule.id).run_count == 1


def test_a_finish_is_three_statements_and_still_counts_for_its_workflows_breaker(chain_app, fake_clock,
                                                                              monkeypatch):
    """A run's finish is the run's UPDATE, its schedule's locked read, which also brings the workflow's breaker
    setting, and the schedule's UPDATE: no statement of its own to ask whether there is a breaker. A workflow
    with a breaker adds the breaker's own read and writes, and the failure still counts (threshold 1: it opens).
    Counted on the chain's driver; the outbox's lookup of webhooks, which it caches, is left out."""
    from sqlalchemy import update

    from recur_server.chain.claim import Claim, claim_tick
    from recur_server.chain.finish import finish_run
    from recur_server.infra import rawsql
    from recur_server.infra.extensions import db
    from recur_server.models import Workflow

    sent: list[str] = []
    send = rawsql.Transaction._send

    def counted(self, cursor, rendered, params):  # type: ignore[no-untyped-def]
        if "FROM webhooks" not in rendered.sql:
            sent.append(" ".join(rendered.sql.split()[:2]))
        return send(self, cursor, rendered, params)

    monkeypatch.setattr(rawsql.Transaction, "_send", counted)
    for threshold, expected in ((None, 3), (1, 6)):
        schedule = make_schedule(fake_clock.now, task="builtin.fail", interval_seconds=10, max_retries=0)
        db.session.execute(update(Workflow).where(Workflow.id == schedule.workflow_id)
                           .values(breaker_threshold=threshold))
        db.session.commit()
        claim = claim_tick(schedule.id, schedule.revision, 0, 0, schedule.next_run_at, fake_clock.now, "w")
        assert isinstance(claim, Claim)
        sent.clear()
        assert finish_run(claim.run_id, RunStatus.FAILED, "boom", fake_clock.now, schedule.id) is not None
        assert len(sent) == expected, sent
        workflow = db.session.get(Workflow, schedule.workflow_id, populate_existing=True)
        assert workflow.breaker_state == ("open" if threshold else "closed")
        db.session.rollback()


def test_warm_up_runs_the_hot_path_and_changes_nothing(chain_app, fake_clock):
    from sqlalchemy import func, select

    from recur_server.chain import rows
    from recur_server.infra.extensions import db
    from recur_server.models import Run, Schedule

    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    before = fresh(schedule.id)
    rows.warm_up()
    rows.warm_up()  # twice: nothing was left behind that the second one would trip on
    # Every statement was rendered (none left for a work horse to render again).
    assert all(db.engine.dialect.name in statement._rendered for statement in rows.HOT_PATH)
    assert db.session.scalar(select(func.count()).select_from(Run)) == 0
    assert db.session.scalar(select(func.count()).select_from(Schedule)) == 1
    after = fresh(schedule.id)
    assert (after.revision, after.current_repeat, after.running_run_id, after.next_run_at) == (
        before.revision, before.current_repeat, before.running_run_id, before.next_run_at)
    assert step(chain_app, fake_clock) is not None  # and the chain still runs
    assert [r.status for r in runs_of(schedule.id)] == [RunStatus.SUCCEEDED.value]


def test_a_claim_that_fails_half_way_leaves_nothing_written(chain_app, fake_clock):
    """The claim's UPDATE passes, its run record is refused (a run of this tick already exists): the
    error is SQLAlchemy's, the UPDATE is rolled back with it, and the connection is fit for the next use."""
    import pytest
    from sqlalchemy.exc import IntegrityError

    from recur_server.chain.claim import claim_tick
    from recur_server.infra.extensions import db
    from recur_server.models import Run

    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    nominal = fresh(schedule.id).next_run_at
    db.session.add(Run(schedule_id=schedule.id, repeat_number=0, retry_number=0, scheduled_for=nominal,
                       started_at=nominal, status=RunStatus.FAILED.value))
    db.session.commit()
    with pytest.raises(IntegrityError):
        claim_tick(schedule.id, 0, 0, 0, nominal, nominal, "w")
    after = fresh(schedule.id)
    assert after.running_run_id is None and after.last_run_at is None
    assert [r.status for r in runs_of(schedule.id)] == [RunStatus.FAILED.value]
    db.session.query(Run).delete()
    db.session.commit()
    assert claim_tick(schedule.id, 0, 0, 0, nominal, nominal, "w") is not None


def test_interval_schedules_keep_their_anchors_milliseconds_and_never_start_early(chain_app, fake_clock):
    """Schedules created within one second fire apart (their anchors keep milliseconds), each on its own
    grid, and the mover does not take a link one millisecond before its time."""
    base = fake_clock.now.replace(microsecond=0)
    made = []
    for offset_ms in (0, 250, 500, 750):
        fake_clock.set(base + timedelta(milliseconds=offset_ms, microseconds=400))
        made.append(make_schedule(fake_clock.now, interval_seconds=2, total_repeats=2))
    expected = [base + timedelta(seconds=2, milliseconds=ms) for ms in (0, 250, 500, 750)]
    assert sorted(fresh(s.id).next_run_at for s in made) == expected

    for due in expected:
        assert run_due(chain_app, due - timedelta(milliseconds=1)) == 0  # not a millisecond early
        assert run_due(chain_app, fake_clock.set(due)) == 1
    for _ in range(4):
        step(chain_app, fake_clock)
    for schedule, first in zip(made, expected, strict=True):
        runs = runs_of(schedule.id)
        assert [r.scheduled_for for r in runs] == [first, first + timedelta(seconds=2)]
        assert all(r.started_at >= r.scheduled_for for r in runs)
        assert fresh(schedule.id).status == ScheduleStatus.DONE.value
