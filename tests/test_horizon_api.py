"""No horizon surprises through the API and the chain: far-away runs are planned, plain rrules never fire
at once, and a schedule turns done only when its timing truly has no further run."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harness.chain_driver import fresh, make_schedule, next_due, runs_of, step


def _workflow(client):
    return client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]


@pytest.mark.parametrize(("rule", "first"), [
    ("FREQ=YEARLY", datetime(2027, 3, 2, 12, 0, 1, tzinfo=UTC)),
    ("FREQ=DAILY", datetime(2026, 3, 3, 12, 0, 1, tzinfo=UTC)),
    ("FREQ=HOURLY", datetime(2026, 3, 2, 13, 0, 1, tzinfo=UTC)),
])
def test_a_plain_rrule_never_fires_at_once(app, fake_clock, rule, first):
    # fake_clock: 2026-03-02 12:00:00.25 UTC; DTSTART is the creation instant rounded up, 12:00:01.
    schedule = make_schedule(fake_clock.now, rrule=rule)
    assert fresh(schedule.id).next_run_at == first
    assert next_due(app) == first


def test_a_count_without_anchor_date_counts_runs(app, fake_clock):
    schedule = make_schedule(fake_clock.now, rrule="FREQ=DAILY;COUNT=2")
    step(app, fake_clock, extra_seconds=0.1)
    step(app, fake_clock, extra_seconds=0.1)
    assert step(app, fake_clock) is None
    assert [r.scheduled_for.day for r in runs_of(schedule.id)] == [3, 4]
    assert fresh(schedule.id).status == "done"


def test_yearly_every_six_years_keeps_running(app, fake_clock):
    schedule = make_schedule(fake_clock.now, rrule="FREQ=YEARLY;INTERVAL=6")
    assert step(app, fake_clock, extra_seconds=0.1) == datetime(2032, 3, 2, 12, 0, 1, tzinfo=UTC)
    after = fresh(schedule.id)
    assert (after.status, after.run_count) == ("active", 1)
    assert after.next_run_at == datetime(2038, 3, 2, 12, 0, 1, tzinfo=UTC)


@pytest.mark.parametrize("timing", [
    {"at": "2033-01-01T00:00:00Z"},
    {"rrule": "FREQ=YEARLY;INTERVAL=6"},
    {"interval_seconds": 316_224_000},
    {"cron": "0 0 29 2 1", "day_or": False},
])
def test_far_away_runs_are_accepted_by_create_patch_and_preview(client, fake_clock, timing):
    workflow_id = _workflow(client)
    created = client.post("/api/v1/schedules/", json={"name": "far", "workflow_id": workflow_id, **timing})
    assert created.status_code == 201, created.json
    assert created.json["next_run_at"] > "2031"
    plain = client.post("/api/v1/schedules/", json={"name": "p", "workflow_id": workflow_id, "every": "1m"}).json
    patched = client.patch(f"/api/v1/schedules/{plain['id']}/", json=timing)
    assert patched.status_code == 200, patched.json
    assert patched.json["next_run_at"] > "2031"
    preview = client.post("/api/v1/schedules/preview/", json={**timing, "count": 3})
    assert preview.status_code == 200, preview.json
    assert preview.json["next_runs"][0]["utc"] > "2031"


def test_no_further_run_only_when_there_is_none(client, fake_clock):
    workflow_id = _workflow(client)
    for timing in ({"rrule": "FREQ=DAILY;UNTIL=20260101T000000Z"}, {"at": "2026-03-01T00:00:00Z"},
                   {"interval_seconds": 60, "end_at": "2026-03-02T11:00:00Z"},
                   {"cron": "0 3 * * *", "only_between": "08:00-18:00"}):
        response = client.post("/api/v1/schedules/", json={"name": "none", "workflow_id": workflow_id, **timing})
        assert response.status_code == 422, (timing, response.json)
