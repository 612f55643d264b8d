"""What happens when a tick's retries run out (on_exhausted: dead, pause, continue), driven through real
RQ machinery on fakeredis and a real redis-server; and the pause note through the API."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from harness.chain_driver import fresh, make_schedule, runs_of, scheduled_ids, step
from recur_server.auth.models import ScheduleEvent
from recur_server.infra.extensions import db
from recur_server.models import ScheduleStatus
from recur_server.services import schedules


def _failing(now, **fields):
    return make_schedule(now, task="builtin.fail", max_retries=1, trigger_payload={"message": "boom"}, **fields)


def test_continue_gives_up_the_tick_and_runs_the_next_ones(chain_app, fake_clock):
    schedule = _failing(fake_clock.now, interval_seconds=10, on_exhausted="continue")
    for _ in range(5):
        step(chain_app, fake_clock)
    row = fresh(schedule.id)
    assert row.status == ScheduleStatus.ACTIVE.value
    runs = runs_of(schedule.id)
    assert [(r.repeat_number, r.retry_number, r.status) for r in runs if r.reason is None] == [
        (0, 0, "failed"), (0, 1, "failed"), (1, 0, "failed"), (1, 1, "failed"), (2, 0, "failed")]
    # The slot each tick's retry ran at passed during its retries: the overlap policy's, one skipped row each.
    assert [(r.reason, r.ticks, r.status) for r in runs if r.reason is not None] == [("overlap", 1, "skipped")] * 2
    assert (row.current_repeat, row.current_retry, row.run_count, row.error_count) == (2, 1, 0, 5)
    assert row.next_run_at is not None and len(scheduled_ids(chain_app)) == 1


def test_continue_on_a_cron_schedule_goes_on_to_the_next_slot(chain_app, fake_clock):
    schedule = _failing(fake_clock.now, cron="*/5 * * * *", on_exhausted="continue")
    step(chain_app, fake_clock)
    retried = step(chain_app, fake_clock)  # the retry, which fails too: the tick is given up
    row = fresh(schedule.id)
    assert row.status == ScheduleStatus.ACTIVE.value and (row.current_repeat, row.current_retry) == (1, 0)
    # The next cron slot after the retry (fixed rate: a slot already past is not run late).
    assert retried.minute % 5 == 0 and row.next_run_at == retried + timedelta(minutes=5)
    planned = row.next_run_at
    assert step(chain_app, fake_clock) == planned
    runs = runs_of(schedule.id)
    assert [(r.repeat_number, r.retry_number) for r in runs if r.reason is None] == [(0, 0), (0, 1), (1, 0)]
    # The slot the retry ran at passed while the tick was retried: skipped, one row (docs/semantics.md).
    assert [(r.reason, r.ticks, r.scheduled_for) for r in runs if r.reason is not None] == [("overlap", 1, retried)]


def test_continue_with_no_further_tick_is_done(chain_app, fake_clock):
    schedule = _failing(fake_clock.now, at=fake_clock.now + timedelta(seconds=30),
                        on_exhausted="continue")
    step(chain_app, fake_clock)
    step(chain_app, fake_clock)
    assert step(chain_app, fake_clock) is None
    assert fresh(schedule.id).status == ScheduleStatus.DONE.value


def test_pause_pauses_with_a_note_and_resume_starts_it_again(chain_app, fake_clock):
    schedule = _failing(fake_clock.now, interval_seconds=10, on_exhausted="pause")
    step(chain_app, fake_clock)
    last = step(chain_app, fake_clock)
    assert step(chain_app, fake_clock) is None
    row = fresh(schedule.id)
    assert row.status == ScheduleStatus.PAUSED.value and row.next_run_at is None
    assert row.pause_note == "paused after retries ran out: RuntimeError: boom"
    assert row.paused_at is not None and row.paused_at >= last
    assert scheduled_ids(chain_app) == []
    events = db.session.scalars(select(ScheduleEvent).where(ScheduleEvent.schedule_id == schedule.id)
                                .order_by(ScheduleEvent.id)).all()
    assert [(e.action, e.actor_name) for e in events] == [("create", "system"), ("pause", "system")]
    assert events[1].changes == {"pause_note": row.pause_note}
    db.session.rollback()

    schedules.resume(schedule.id, fake_clock.now)
    row = fresh(schedule.id)
    assert row.status == ScheduleStatus.ACTIVE.value and (row.pause_note, row.paused_at) == (None, None)
    assert step(chain_app, fake_clock) is not None
    assert fresh(schedule.id).current_retry == 1  # it runs (and fails) again


def test_dead_is_the_default_and_unchanged(chain_app, fake_clock):
    schedule = _failing(fake_clock.now, interval_seconds=10)
    assert schedule.on_exhausted == "dead"
    step(chain_app, fake_clock)
    step(chain_app, fake_clock)
    assert step(chain_app, fake_clock) is None
    row = fresh(schedule.id)
    assert row.status == ScheduleStatus.DEAD.value and row.pause_note is None and row.paused_at is None


def test_a_dead_schedule_is_revived_from_now_with_its_retries_started_over(chain_app, fake_clock):
    """resume takes a dead schedule: active again, its next tick the first after now, its retries from 0,
    its counters and last error kept, recorded as a revive; and its chain runs again."""
    schedule = _failing(fake_clock.now, interval_seconds=10)
    step(chain_app, fake_clock)
    step(chain_app, fake_clock)
    dead = fresh(schedule.id)
    assert dead.status == ScheduleStatus.DEAD.value and dead.current_retry > 0
    counts = (dead.run_count, dead.error_count)
    fake_clock.advance(minutes=5)  # ticks fall while it is dead: none is run later
    db.session.rollback()

    schedules.resume(schedule.id, fake_clock.now)
    row = fresh(schedule.id)
    assert row.status == ScheduleStatus.ACTIVE.value and row.current_retry == 0
    assert (row.run_count, row.error_count) == counts and row.last_error == "RuntimeError: boom"
    planned = row.next_run_at
    assert planned is not None and planned > fake_clock.now
    events = db.session.scalars(select(ScheduleEvent).where(ScheduleEvent.schedule_id == schedule.id)
                                .order_by(ScheduleEvent.id)).all()
    assert (events[-1].action, events[-1].changes) == ("revive", {"from": "dead", "last_error": "RuntimeError: boom"})
    db.session.rollback()
    assert step(chain_app, fake_clock) == planned
    assert [(r.retry_number, r.status) for r in runs_of(schedule.id)][-1] == (0, "failed")  # it ran again


def test_revive_through_the_api(app, client):
    created = _api_schedule(client)
    row = fresh(created["id"])
    row.status, row.next_run_at, row.current_retry = ScheduleStatus.DEAD.value, None, 3
    db.session.commit()
    revived = client.post(f"/api/v1/schedules/{created['id']}/resume/")
    assert revived.status_code == 200 and revived.json["status"] == "active", revived.json
    assert revived.json["current_retry"] == 0 and revived.json["next_run_at"] is not None
    events = client.get(f"/api/v1/schedules/{created['id']}/events/").json["items"]
    assert events[0]["action"] == "revive" and events[0]["actor"], events[0]
    assert client.post(f"/api/v1/schedules/{created['id']}/resume/").status_code == 409  # active: neither


def _api_schedule(client, **fields):
    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    response = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow,
                                                       "interval_seconds": 60, **fields})
    assert response.status_code == 201, response.json
    return response.json


def _assert_422(response, field):
    assert response.status_code == 422, response.json
    assert field in response.json["errors"], response.json


def test_on_exhausted_through_the_api(client):
    created = _api_schedule(client)
    assert created["on_exhausted"] == "dead"
    assert (created["pause_note"], created["paused_at"]) == (None, None)
    assert _api_schedule(client, on_exhausted="continue")["on_exhausted"] == "continue"
    patched = client.patch(f"/api/v1/schedules/{created['id']}/", json={"on_exhausted": "pause"})
    assert patched.status_code == 200 and patched.json["on_exhausted"] == "pause"
    workflow = created["workflow_id"]
    for bad in ("stop", "", None, 3):
        _assert_422(client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow,
                                                           "interval_seconds": 60, "on_exhausted": bad}),
                    "on_exhausted")


def test_pause_note_is_shown_and_resume_clears_it(client, fake_clock):
    schedule_id = _api_schedule(client)["id"]
    paused = client.post(f"/api/v1/schedules/{schedule_id}/pause/", json={"note": "db migration tonight"})
    assert paused.status_code == 200, paused.json
    assert paused.json["pause_note"] == "db migration tonight"
    assert paused.json["paused_at"] == fake_clock.now.isoformat().replace("+00:00", "Z")
    assert client.get(f"/api/v1/schedules/{schedule_id}/").json["pause_note"] == "db migration tonight"
    events = client.get(f"/api/v1/schedules/{schedule_id}/events/").json["items"]
    assert events[0]["action"] == "pause" and events[0]["changes"] == {"pause_note": "db migration tonight"}
    resumed = client.post(f"/api/v1/schedules/{schedule_id}/resume/")
    assert (resumed.json["pause_note"], resumed.json["paused_at"]) == (None, None)
    # No body, an empty JSON object, or a null note: paused without a note.
    for kwargs in ({}, {"json": {}}, {"json": {"note": None}}):
        paused = client.post(f"/api/v1/schedules/{schedule_id}/pause/", **kwargs)
        assert paused.status_code == 200 and paused.json["pause_note"] is None, paused.json
        assert paused.json["paused_at"] is not None
        client.post(f"/api/v1/schedules/{schedule_id}/resume/")


def test_a_bad_pause_note_is_422_naming_note_and_pauses_nothing(client):
    schedule_id = _api_schedule(client)["id"]
    for bad in ("x" * 1001, 5, ["a"], {"a": 1}):
        _assert_422(client.post(f"/api/v1/schedules/{schedule_id}/pause/", json={"note": bad}), "note")
    _assert_422(client.post(f"/api/v1/schedules/{schedule_id}/pause/", json={"other": 1}), "other")
    assert client.get(f"/api/v1/schedules/{schedule_id}/").json["status"] == "active"


def test_a_pause_by_a_caller_during_the_last_attempt_keeps_its_note(chain_app, fake_clock):
    from recur_server.chain.claim import claim_tick
    from recur_server.chain.finish import finish_run
    from recur_server.models import RunStatus

    schedule = make_schedule(fake_clock.now, task="builtin.fail", interval_seconds=10, max_retries=0,
                             on_exhausted="pause")
    claim = claim_tick(schedule.id, schedule.revision, 0, 0, schedule.next_run_at, fake_clock.now, None)
    assert claim is not None
    schedules.pause(schedule.id, fake_clock.now, "maintenance")
    assert finish_run(claim.run_id, RunStatus.FAILED, "RuntimeError: boom", fake_clock.now) is not None
    row = fresh(schedule.id)
    assert (row.status, row.pause_note, row.last_error) == ("paused", "maintenance", "RuntimeError: boom")
    actions = db.session.scalars(select(ScheduleEvent.action).where(ScheduleEvent.schedule_id == schedule.id)).all()
    assert sorted(actions) == ["create", "pause"]  # no second pause event by the policy
    db.session.rollback()


def test_resuming_a_schedule_whose_timing_is_spent_is_a_409_and_leaves_it_paused(client, fake_clock):
    """The request is fine; the schedule's state (a one-shot whose time passed while it was paused) is not."""
    workflow = client.post("/api/v1/workflows/", json={"name": "w-once", "task": "builtin.noop"}).json["id"]
    at = (fake_clock.now + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    once = client.post("/api/v1/schedules/", json={"name": "once", "workflow_id": workflow, "at": at}).json
    assert client.post(f"/api/v1/schedules/{once['id']}/pause/").status_code == 200
    fake_clock.advance(hours=2)
    refused = client.post(f"/api/v1/schedules/{once['id']}/resume/")
    assert refused.status_code == 409 and refused.json["code"] == "invalid_state", refused.json
    assert "no run after now" in refused.json["message"]
    assert client.get(f"/api/v1/schedules/{once['id']}/").json["status"] == "paused"
