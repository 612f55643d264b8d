"""A stored schedule whose timing no longer builds (a zone tzdata dropped, a row an older version wrote)
becomes `invalid` with its reason, and stops nothing else: not the reconciler's pass, not the background
loop, not a worker running its link."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import text

from harness.chain_driver import fresh, make_schedule, next_due, runs_of, scheduled_ids, step
from harness.servers import wait_for
from harness.tokens import authorized_client, token_for_app
from recur_server.chain.ids import link_id
from recur_server.infra.extensions import db, get_queue, get_redis
from recur_server.models import RunStatus, ScheduleStatus
from recur_server.services.reconcile import reconcile
from recur_server.workers import background
from recur_server.workers.background import run_background


def _corrupt(schedule_id: str, **columns: Any) -> None:
    """Write columns straight into the table, as an older version or a tzdata upgrade leaves them."""
    assignments = ", ".join(f"{name} = :{name}" for name in columns)
    db.session.execute(text(f"UPDATE scheduled_jobs SET {assignments} WHERE id = :id"), {"id": schedule_id, **columns})
    db.session.commit()


def _bad_rows(now: Any) -> tuple[list[str], list[str]]:
    """Two good schedules around two bad ones, none with a pending link. Returns (good ids, bad ids)."""
    made = [make_schedule(now, name=f"s{i}", interval_seconds=10) for i in range(2)]
    made += [make_schedule(now, name="zone", cron="*/5 * * * *", timezone="Europe/Paris"),
             make_schedule(now, name="cron", cron="*/5 * * * *", jitter_seconds=3)]
    good, bad = [s.id for s in made[:2]], [s.id for s in made[2:]]
    # Unplanned (the reconciler must plan its first tick) in a zone that no longer exists ...
    _corrupt(bad[0], timezone="Mars/Olympus", next_run_at=None)
    # ... and planned, with a jitter to draw (the reconciler needs its spec), in a cron that no longer parses.
    _corrupt(bad[1], cron="61 * * * *")
    get_redis().flushall()
    return good, bad


def test_a_reconcile_pass_marks_bad_rows_invalid_and_repairs_the_others(chain_app, fake_clock):
    good, bad = _bad_rows(fake_clock.now)
    revisions = {i: fresh(i).revision for i in bad}

    report = reconcile(fake_clock.now)

    assert sorted(report.links_repaired) == sorted(link_id(i, 0, 0) for i in good)
    assert sorted(scheduled_ids(chain_app)) == sorted(link_id(i, 0, 0) for i in good)
    assert sorted(report.schedules_invalidated) == sorted(bad)
    zone, cron = fresh(bad[0]), fresh(bad[1])
    assert zone.status == cron.status == ScheduleStatus.INVALID.value
    assert "timezone" in zone.last_error and "Mars/Olympus" in zone.last_error
    assert "cron" in cron.last_error
    # Fenced: the revision moved on, so any link planned before does nothing; nothing is planned.
    assert (zone.revision, cron.revision) == (revisions[bad[0]] + 1, revisions[bad[1]] + 1)
    assert zone.next_run_at is None and cron.next_run_at is None
    # Invalid schedules are not walked again.
    assert reconcile(fake_clock.now).checked == 2


@pytest.mark.parametrize("task", ["builtin.noop", "builtin.fail"])
def test_a_link_of_a_bad_row_records_its_run_and_marks_the_schedule_invalid(chain_app, fake_clock, task):
    schedule = make_schedule(fake_clock.now, task=task, cron="* * * * *", timezone="Europe/Paris")
    _corrupt(schedule.id, timezone="Mars/Olympus")  # its first link is already pending

    step(chain_app, fake_clock)

    [run] = runs_of(schedule.id)
    expected = RunStatus.SUCCEEDED if task == "builtin.noop" else RunStatus.FAILED
    assert run.status == expected.value and run.finished_at is not None
    after = fresh(schedule.id)
    assert (after.status, after.running_run_id, after.next_run_at) == ("invalid", None, None)
    assert "Mars/Olympus" in after.last_error
    assert (after.run_count, after.error_count) == ((1, 0) if task == "builtin.noop" else (0, 1))
    assert scheduled_ids(chain_app) == [] and get_queue(chain_app).count == 0


def _run_loop_until(app: Any, condition: Any) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=run_background, args=(app, stop), daemon=True)
    thread.start()
    try:
        wait_for(condition, timeout=15, what="the background loop to move the good links")
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(timeout=10)


def test_the_background_loop_keeps_moving_links_after_a_bad_row(real_app, fake_clock):
    good, bad = _bad_rows(fake_clock.now)
    fake_clock.advance(seconds=60)  # the good links are due as soon as they are re-created
    queued = {link_id(i, 0, 0) for i in good}

    _run_loop_until(real_app, lambda: set(get_queue(real_app).job_ids) == queued)

    assert {fresh(i).status for i in bad} == {"invalid"}


def test_the_background_loop_survives_any_exception(real_app, fake_clock, monkeypatch, caplog):
    schedule = make_schedule(fake_clock.now, interval_seconds=10)
    fake_clock.set(next_due(real_app))
    failures = []

    def broken_once(app: Any, every: float | None = None) -> None:
        if not failures:
            failures.append(1)
            raise ZeroDivisionError("a fault nobody foresaw")
        return None

    monkeypatch.setattr(background, "reconcile_once", broken_once)
    _run_loop_until(real_app, lambda: get_queue(real_app).job_ids == [link_id(schedule.id, 0, 0)])
    assert failures == [1]
    # logged with its traceback
    assert any(r.exc_info and "a fault nobody foresaw" in str(r.exc_info[1]) for r in caplog.records)


def test_health_counts_invalid_schedules(chain_app, fake_clock):
    _bad_rows(fake_clock.now)
    client = authorized_client(chain_app, token_for_app(chain_app))
    assert client.get("/api/v1/health/").get_json()["schedules"]["invalid"] == 0
    reconcile(fake_clock.now)
    counts = client.get("/api/v1/health/").get_json()["schedules"]
    assert (counts["active"], counts["invalid"], counts["paused"]) == (2, 2, 0)


def test_a_patch_with_a_timing_that_builds_makes_an_invalid_schedule_active_again(chain_app, fake_clock):
    _, bad = _bad_rows(fake_clock.now)
    reconcile(fake_clock.now)
    client = authorized_client(chain_app, token_for_app(chain_app))
    revision = fresh(bad[0]).revision

    # Its reason is visible, and an edit that leaves the timing broken is refused.
    listed = client.get("/api/v1/schedules/?status=invalid").get_json()["items"]
    assert {item["id"] for item in listed} == set(bad)
    assert "Mars/Olympus" in next(item["last_error"] for item in listed if item["id"] == bad[0])
    shown = client.get(f"/api/v1/schedules/{bad[0]}/")
    assert shown.status_code == 200 and shown.get_json()["status"] == "invalid"
    assert "Mars/Olympus" in shown.get_json()["last_error"] and shown.get_json()["next_runs"] == []
    refused = client.patch(f"/api/v1/schedules/{bad[0]}/", json={"name": "renamed"})
    assert refused.status_code == 422 and "timezone" in refused.get_json()["errors"]
    assert fresh(bad[0]).status == "invalid"

    fixed = client.patch(f"/api/v1/schedules/{bad[0]}/", json={"timezone": "Europe/Paris"})
    assert fixed.status_code == 200, fixed.get_json()
    after = fresh(bad[0])
    assert after.status == "active" and after.revision > revision and after.next_run_at is not None
    assert link_id(bad[0], after.current_repeat, 0) in scheduled_ids(chain_app)
