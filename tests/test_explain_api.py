"""GET /schedules/{id}/explain/ on a real database, runs made by the chain on a stepped clock: a tick that ran,
one a weekday passes over, one while the schedule was paused (and by whom), one that lies ahead; the owner
scope, and a bad `at` refused naming the field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.chain_driver import make_schedule, runs_of, step


def _iso(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def _explain(client, schedule_id: str, at: datetime) -> dict:  # type: ignore[no-untyped-def]
    response = client.get(f"/api/v1/schedules/{schedule_id}/explain/", query_string={"at": _iso(at)})
    assert response.status_code == 200, response.json
    return response.json


def test_a_tick_that_ran_late_and_the_nearest_tick_to_a_time(client, app, fake_clock) -> None:
    schedule = make_schedule(fake_clock.now, interval_seconds=60)
    due = step(app, fake_clock, extra_seconds=2.5)
    assert due is not None
    (run,) = runs_of(schedule.id)
    answer = _explain(client, schedule.id, due)
    assert (answer["kind"], answer["run"]["id"], answer["late_seconds"], answer["attempts"]) == ("ran", run.id, 2.5, 1)
    assert answer["nominal"] == answer["asked"] == _iso(due) and answer["notes"] == []
    near = _explain(client, schedule.id, due + timedelta(seconds=20))
    assert (near["kind"], near["nominal"]) == ("ran", _iso(due)) and "nearest" in near["notes"][0]
    ahead = _explain(client, schedule.id, due + timedelta(minutes=5))
    assert (ahead["kind"], ahead["next_tick"]) == ("will_run", _iso(due + timedelta(minutes=5)))
    fake_clock.set(due + timedelta(seconds=65))  # the next tick is due and no worker took it
    waiting = _explain(client, schedule.id, due + timedelta(seconds=60))
    assert waiting["kind"] == "waiting"


def test_a_weekday_the_schedule_leaves_out_is_not_a_tick(client, fake_clock) -> None:
    schedule = make_schedule(fake_clock.now, cron="0 9 * * *", not_on=["sat", "sun"])
    saturday = datetime(2026, 3, 7, 9, 0, tzinfo=UTC)
    answer = _explain(client, schedule.id, saturday + timedelta(minutes=3))
    assert (answer["kind"], answer["reason"], answer["nominal"]) == ("not_a_tick", "excluded_weekday", _iso(saturday))
    assert answer["next_tick"] == _iso(datetime(2026, 3, 9, 9, 0, tzinfo=UTC))


def test_a_tick_while_paused_names_who_paused_it(client, fake_clock) -> None:
    schedule = make_schedule(fake_clock.now, interval_seconds=60)
    paused = client.post(f"/api/v1/schedules/{schedule.id}/pause/", json={"note": "vendor outage"})
    assert paused.status_code == 200
    fake_clock.set(fake_clock.now + timedelta(minutes=10))
    tick = schedule.next_run_at + timedelta(minutes=3)
    answer = _explain(client, schedule.id, tick)
    assert (answer["kind"], answer["pause_note"], answer["paused_by"]) == ("paused", "vendor outage", "admin")


def test_another_owners_schedule_is_absent_and_a_bad_at_names_the_field(client, fake_clock) -> None:
    schedule = make_schedule(fake_clock.now, interval_seconds=60)
    bad = client.get(f"/api/v1/schedules/{schedule.id}/explain/", query_string={"at": "yesterday"})
    assert bad.status_code == 422 and "at" in bad.json["errors"]
    missing = client.get("/api/v1/schedules/4b1d2c3e-0000-4000-8000-000000000000/explain/")
    assert missing.status_code == 404
    now = client.get(f"/api/v1/schedules/{schedule.id}/explain/").json  # at: now, its creation's instant
    assert (now["kind"], now["asked"]) == ("before_created", _iso(fake_clock.now))
