"""Calendar schedules through the API and the chain: cron, rrule, one-shot, windows, preview, re-planning."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from harness.chain_driver import fresh, make_schedule, next_due, runs_of, scheduled_ids, step
from recur_server.chain.ids import link_id


def _workflow(client):
    return client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]


def _preview(client, **body):
    response = client.post("/api/v1/schedules/preview/", json=body)
    assert response.status_code == 200, response.json
    return response.json


def test_preview_weekdays_at_nine_in_berlin(client, fake_clock):
    fake_clock.set(datetime(2026, 3, 27, 14, 0, tzinfo=UTC))  # a Friday; DST starts Sunday 29 March
    body = _preview(client, cron="0 9 * * MON-FRI", timezone="Europe/Berlin", count=3)
    assert "09:00" in body["description"] and "Monday through Friday" in body["description"]
    # Monday 30 March is after the change: still 09:00 local, now 07:00Z instead of 08:00Z.
    assert [r["utc"] for r in body["next_runs"]] == [
        "2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z", "2026-04-01T07:00:00Z"]
    assert body["next_runs"][0]["local"] == "2026-03-30T09:00:00+02:00"


def test_preview_last_weekday_of_month_rrule(client, fake_clock):
    fake_clock.set(datetime(2026, 11, 1, 0, 0, tzinfo=UTC))
    body = _preview(client, rrule="FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
                    anchor_date="2026-11-01T18:00:00Z", count=3)
    assert [r["utc"][:10] for r in body["next_runs"]] == ["2026-11-30", "2026-12-31", "2027-01-29"]


def test_preview_one_shot_and_hourly_window(client, fake_clock):
    fake_clock.set(datetime(2026, 11, 20, 17, 30, tzinfo=UTC))  # Friday 17:30 UTC
    assert [r["utc"] for r in _preview(client, at="2026-12-01T08:00:00Z")["next_runs"]] == ["2026-12-01T08:00:00Z"]
    body = _preview(client, cron="0 * * * *", only_between="08:00-18:00", not_on=["sat", "sun"], count=3)
    # Friday 18:00 is outside the window (end exclusive), the weekend is skipped: Monday 08:00, 09:00, 10:00.
    assert [r["utc"] for r in body["next_runs"]] == [
        "2026-11-23T08:00:00Z", "2026-11-23T09:00:00Z", "2026-11-23T10:00:00Z"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "60 0 * * * *"}, "cron"),  # six fields read the second first: 60 is out of range
        ({"rrule": "FREQ=SOMETIMES"}, "rrule"),
        ({"rrule": "FREQ=DAILY;COUNT=100000"}, "rrule"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus_Mons"}, "timezone"),
        ({"cron": "* * * * *", "rrule": "FREQ=DAILY"}, "timing"),
        ({"cron": "* * * * *", "only_between": "8-18"}, "only_between"),
        ({"at": "2020-01-01T00:00:00Z"}, "at"),
        ({"every": "fortnightly"}, "every"),
        ({"cron": "* * * * *", "not_on": ["funday"]}, "not_on"),
    ],
)
def test_bad_timing_is_422_naming_the_field(client, body, field):
    for url, extra in (("/api/v1/schedules/preview/", {}),
                       ("/api/v1/schedules/", {"name": "x", "workflow_id": _workflow(client)})):
        response = client.post(url, json={**extra, **body})
        assert response.status_code == 422, (url, response.json)
        assert field in response.json["errors"], response.json


def test_every_and_after_seconds_shorthands(client, fake_clock):
    workflow_id = _workflow(client)
    every = client.post("/api/v1/schedules/", json={"name": "e", "workflow_id": workflow_id, "every": "5m"}).json
    assert every["interval_seconds"] == 300
    after = client.post("/api/v1/schedules/", json={"name": "a", "workflow_id": workflow_id, "after_seconds": 30})
    assert after.json["at"] == (fake_clock.now.replace(microsecond=0) + timedelta(seconds=31)).isoformat().replace(
        "+00:00", "Z")
    assert after.json["next_runs"] == [after.json["at"]]


def test_new_calendar_schedule_never_fires_at_once(app, fake_clock):
    fake_clock.set(datetime(2026, 6, 1, 14, 0, 0, tzinfo=UTC))
    schedule = make_schedule(fake_clock.now, cron="0 9 * * *", timezone="UTC")
    assert next_due(app) == datetime(2026, 6, 2, 9, 0, tzinfo=UTC)
    assert fresh(schedule.id).next_run_at == datetime(2026, 6, 2, 9, 0, tzinfo=UTC)


def test_one_shot_runs_once_then_done(app, fake_clock):
    schedule = make_schedule(fake_clock.now, after_seconds=3)
    step(app, fake_clock, extra_seconds=0.1)
    assert step(app, fake_clock) is None
    assert fresh(schedule.id).status == "done"
    assert [r.status for r in runs_of(schedule.id)] == ["succeeded"]


def test_window_that_excludes_now_produces_no_run_now(app, fake_clock):
    fake_clock.set(datetime(2026, 6, 1, 20, 0, 0, tzinfo=UTC))
    schedule = make_schedule(fake_clock.now, cron="* * * * *", only_between="08:00-09:00")
    assert next_due(app) == datetime(2026, 6, 2, 8, 0, tzinfo=UTC)
    assert runs_of(schedule.id) == []


def test_patch_to_yearly_cron_leaves_no_run_next_minute(app, client, fake_clock):
    fake_clock.set(datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC))
    schedule = make_schedule(fake_clock.now, cron="*/1 * * * *")
    assert next_due(app) == datetime(2026, 6, 1, 12, 1, tzinfo=UTC)
    response = client.patch(f"/api/v1/schedules/{schedule.id}/", json={"cron": "0 0 1 1 *"})
    assert response.status_code == 200, response.json
    assert response.json["next_run_at"] == "2027-01-01T00:00:00Z"
    assert scheduled_ids(app) == [link_id(schedule.id, 1, 0)]  # a re-plan starts a new tick
    assert next_due(app) == datetime(2027, 1, 1, tzinfo=UTC)
    # Nothing runs at 12:01, even if the old link had already reached a worker's hands.
    fake_clock.set(datetime(2026, 6, 1, 12, 1, 0, 500000, tzinfo=UTC))
    from harness.chain_driver import run_due

    run_due(app, fake_clock.now)
    assert runs_of(schedule.id) == []


def test_switching_timing_kind_by_patch(app, client, fake_clock):
    schedule = make_schedule(fake_clock.now, interval_seconds=60)
    body = {"cron": "30 6 * * *", "timezone": "Asia/Kolkata"}
    response = client.patch(f"/api/v1/schedules/{schedule.id}/", json=body)
    assert response.status_code == 200, response.json
    assert (response.json["interval_seconds"], response.json["cron"]) == (None, "30 6 * * *")
    assert response.json["next_run_at"].endswith("01:00:00Z")  # 06:30 IST = 01:00 UTC


def test_cron_ticks_run_on_their_minutes(app, fake_clock):
    fake_clock.set(datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC))
    schedule = make_schedule(fake_clock.now, cron="*/1 * * * *", total_repeats=3)
    for _ in range(3):
        step(app, fake_clock, extra_seconds=0.2)
    assert [r.scheduled_for for r in runs_of(schedule.id)] == [
        datetime(2026, 6, 1, 12, m, tzinfo=UTC) for m in (1, 2, 3)]
    assert fresh(schedule.id).status == "done"


def test_jitter_delays_the_link_but_the_run_keeps_its_nominal_time(app, fake_clock):
    from recur_server import timing

    fake_clock.set(datetime(2026, 6, 1, 12, 0, 30, tzinfo=UTC))
    schedule = make_schedule(fake_clock.now, cron="*/5 * * * *", jitter_seconds=120)
    nominal = datetime(2026, 6, 1, 12, 5, tzinfo=UTC)
    expected = timing.jitter_delay(schedule.id, nominal, 120, nominal + timedelta(minutes=5))
    assert next_due(app) == nominal + timedelta(seconds=expected)
    step(app, fake_clock)
    [run] = runs_of(schedule.id)
    assert run.scheduled_for == nominal and run.started_at == nominal + timedelta(seconds=expected)
