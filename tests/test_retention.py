"""Retention: what a pruning pass deletes and what it keeps, with literal times, on both databases (runs,
backfills, events and deliveries, the audit trail, breaker history, idempotency keys); the pure cutoffs; a
schedule's own keep_runs_days through the API. How passes run (batches, indexes, the background pass):
tests/test_pruning_passes.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from harness.retention_rows import (
    NOW,
    add_delivery,
    add_event,
    add_runs,
    add_schedule,
    add_workflow,
    ago,
    row_count,
    runs_left,
)
from recur_server.auth.models import ApiToken, ConsoleSession, OwnerEvent, ScheduleEvent
from recur_server.infra.extensions import db
from recur_server.models import Backfill, BreakerTransition, Schedule, TriggerRequest
from recur_server.notify.models import Delivery, DeliveryAttempt, Event
from recur_server.policies.retention import Retention, cutoff, runs_boundary, runs_cutoff
from recur_server.services.retention import prune

# --- the pure decisions -------------------------------------------------------------------------

def test_a_schedules_cutoff_is_its_own_keep_runs_days_else_the_default() -> None:
    retention = Retention(runs_days=30)
    assert runs_cutoff(NOW, retention, None) == datetime(2026, 5, 2, 12, 0, 0, tzinfo=UTC)
    assert runs_cutoff(NOW, retention, 90) == datetime(2026, 3, 3, 12, 0, 0, tzinfo=UTC)
    assert runs_cutoff(NOW, retention, 1) == datetime(2026, 5, 31, 12, 0, 0, tzinfo=UTC)
    assert runs_cutoff(NOW, Retention(runs_days=0), None) is None  # 0: kept for ever
    assert cutoff(NOW, 365) == datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def test_the_boundary_keeps_the_newest_runs_whatever_the_cutoff() -> None:
    month_ago = datetime(2026, 5, 2, 12, 0, 0, tzinfo=UTC)
    # The 100th newest run started a year ago: the cutoff decides.
    assert runs_boundary(month_ago, datetime(2025, 6, 1, tzinfo=UTC)) == datetime(2025, 6, 1, tzinfo=UTC)
    # The 100th newest started yesterday (a busy schedule): the cutoff decides.
    assert runs_boundary(month_ago, datetime(2026, 5, 31, tzinfo=UTC)) == month_ago
    # Fewer runs than the minimum, or kept for ever: nothing goes.
    assert runs_boundary(month_ago, None) is None
    assert runs_boundary(None, datetime(2025, 6, 1, tzinfo=UTC)) is None


def test_retention_refuses_settings_that_would_delete_a_schedules_newest_run() -> None:
    with pytest.raises(ValueError, match="runs_min"):
        Retention(runs_min=0)
    with pytest.raises(ValueError, match="audit_days"):
        Retention(audit_days=-1)


# --- what a pass deletes and what it keeps, rows inserted with literal times ----------------------

def test_runs_past_retention_go_and_the_newest_running_and_needed_ones_stay(app) -> None:
    workflow_id = add_workflow()
    # Old and new runs: the old ones go, the newest 3 stay (35 days old is among them), a running run
    # that started long ago stays.
    add_schedule(workflow_id, "s-mixed")
    add_runs("s-mixed", 60, 50, 45, 40, 35, 10, 1)
    add_runs("s-mixed", 90, status="running")
    # Every run old: the newest stays however old.
    add_schedule(workflow_id, "s-old")
    add_runs("s-old", 400, 300, 200)
    # Keeps its runs 100 days, longer than the default 30; another 1 day, shorter.
    add_schedule(workflow_id, "s-long", keep_runs_days=100)
    add_runs("s-long", 120, 90, 60, 45, 40, 35)
    add_schedule(workflow_id, "s-short", keep_runs_days=1)
    add_runs("s-short", 5, 3, 2, 0.5)
    # The run the schedule's running_run_id names stays, whatever its row says.
    held = add_schedule(workflow_id, "s-held")
    add_runs("s-held", 80, 70, 2)
    held.running_run_id = "s-held-80"
    # A running backfill's runs stay; a finished one's go, and so does the backfill itself.
    add_schedule(workflow_id, "s-backfill")
    db.session.add_all([
        Backfill(id="b-running", schedule_id="s-backfill", start_at=ago(200), end_at=ago(190), times=[], total=9,
                 started=3, status="running", created_at=ago(50)),
        Backfill(id="b-done", schedule_id="s-backfill", start_at=ago(200), end_at=ago(190), times=[], total=2,
                 started=2, status="done", created_at=ago(60), finished_at=ago(59)),
        Backfill(id="b-cancelled", schedule_id="s-backfill", start_at=ago(200), end_at=ago(190), times=[], total=2,
                 started=1, status="cancelled", created_at=ago(20), finished_at=ago(10)),
    ])
    db.session.flush()
    add_runs("s-backfill", 200, 199, backfill_id="b-running")
    add_runs("s-backfill", 198, 197, backfill_id="b-done")
    add_runs("s-backfill", 5, 1, 0.5)
    db.session.commit()

    report = prune(NOW, Retention(runs_days=30, runs_min=3), batch=500, max_batches=10)

    assert runs_left("s-mixed") == {"s-mixed-35", "s-mixed-10", "s-mixed-1", "s-mixed-90"}
    assert runs_left("s-old") == {"s-old-400", "s-old-300", "s-old-200"}  # fewer than 3: all stay
    assert runs_left("s-long") == {"s-long-90", "s-long-60", "s-long-45", "s-long-40", "s-long-35"}
    assert runs_left("s-short") == {"s-short-3", "s-short-2", "s-short-0.5"}  # the newest 3 stay all the same
    assert runs_left("s-held") == {"s-held-80", "s-held-70", "s-held-2"}
    assert runs_left("s-backfill") == {"s-backfill-200", "s-backfill-199", "s-backfill-5", "s-backfill-1",
                                   "s-backfill-0.5"}
    assert set(db.session.scalars(select(Backfill.id))) == {"b-running", "b-cancelled"}
    assert report.rows["runs"] == 4 + 0 + 1 + 1 + 0 + 2
    assert report.rows["backfills"] == 1
    assert report.cursor is None  # the walk over schedules came to its end

    # With a minimum of 1, the newest run alone stays, however old; a second pass finds nothing more.
    report = prune(NOW, Retention(runs_days=30, runs_min=1), batch=500, max_batches=10)
    assert runs_left("s-old") == {"s-old-200"}
    assert runs_left("s-short") == {"s-short-0.5"}
    assert runs_left("s-held") == {"s-held-80", "s-held-2"}  # 70 goes, 80 is the schedule's running run
    assert runs_left("s-mixed") == {"s-mixed-10", "s-mixed-1", "s-mixed-90"}
    assert prune(NOW, Retention(runs_days=30, runs_min=1), batch=500, max_batches=10).rows["runs"] == 0


def test_events_and_deliveries_go_when_no_pending_delivery_needs_them(app) -> None:
    add_event("evt_delivered", 10)
    add_delivery("evt_delivered", 1, "delivered", 10, attempts=2)
    add_event("evt_pending", 10)
    pending = add_delivery("evt_pending", 1, "pending", 10, attempts=3)  # still retried: stays, with its event
    add_event("evt_half", 10)
    failed = add_delivery("evt_half", 1, "failed", 10, attempts=4)
    pending_too = add_delivery("evt_half", 2, "pending", 0.1, attempts=1)
    add_event("evt_dropped", 9)
    add_delivery("evt_dropped", 3, "dropped", 9, attempts=0)
    add_event("evt_recent", 2)
    recent = add_delivery("evt_recent", 1, "delivered", 2, attempts=1)
    add_event("evt_unsent", 8)  # no webhook wanted it
    db.session.commit()

    report = prune(NOW, Retention(events_days=7), batch=500, max_batches=10)

    assert set(db.session.scalars(select(Event.id))) == {"evt_pending", "evt_half", "evt_recent"}
    assert set(db.session.scalars(select(Delivery.id))) == {pending, pending_too, recent}
    assert failed not in set(db.session.scalars(select(DeliveryAttempt.delivery_id)))
    assert row_count(DeliveryAttempt) == 3 + 1 + 1
    assert report.rows["events"] == 3
    assert report.rows["deliveries"] == 3
    assert report.rows["delivery_attempts"] == 2 + 4


def test_audit_rows_go_after_a_year_and_expired_console_sessions_go(app) -> None:
    for days in (400, 366, 300):
        db.session.add(ScheduleEvent(schedule_id="s", owner_id=1, actor_id=1, actor_name="admin", action="update",
                                     at=ago(days), changes={}))
        db.session.add(OwnerEvent(owner_id=7, owner_name="gone", actor_id=1, actor_name="admin",
                                  action="owner.deleted", at=ago(days)))
    token = ApiToken(owner_id=1, name="t", prefix="recur_x", digest="d" * 64, created_at=ago(30))
    db.session.add(token)
    db.session.flush()
    db.session.add_all([ConsoleSession(token_id=token.id, digest="a" * 64, created_at=ago(3), expires_at=ago(2)),
                        ConsoleSession(token_id=token.id, digest="b" * 64, created_at=ago(0.5),
                                       expires_at=ago(-0.5))])
    db.session.commit()

    report = prune(NOW, Retention(audit_days=365), batch=500, max_batches=10)

    assert sorted(row.at for row in db.session.scalars(select(ScheduleEvent))) == [ago(300)]
    # owner_events keeps what the migrations wrote (the first admin's creation, made now) beside ago(300).
    assert ago(300) in {row.at for row in db.session.scalars(select(OwnerEvent))}
    assert not any(row.at < ago(365) for row in db.session.scalars(select(OwnerEvent)))
    assert [row.digest for row in db.session.scalars(select(ConsoleSession))] == ["b" * 64]
    assert report.rows["schedule_events"] == 2 and report.rows["owner_events"] == 2
    assert report.rows["console_sessions"] == 1


def test_breaker_history_goes_with_the_audit_trail_and_idempotency_keys_with_the_runs(app) -> None:
    workflow_id = add_workflow()
    add_schedule(workflow_id, "s-keys")
    for days in (400, 366, 300):
        db.session.add(BreakerTransition(workflow_id=workflow_id, from_state="closed", to_state="open", at=ago(days),
                                         reason="5 failures", by="system"))
    for days in (45, 31, 29):
        db.session.add(TriggerRequest(owner_id=1, idempotency_key=f"deploy-{days}", schedule_id="s-keys",
                                      run_id=f"run-{days}", scheduled_for=ago(days), created_at=ago(days)))
    db.session.commit()

    report = prune(NOW, Retention(runs_days=30, audit_days=365), batch=500, max_batches=10)

    assert [row.at for row in db.session.scalars(select(BreakerTransition))] == [ago(300)]
    assert [row.idempotency_key for row in db.session.scalars(select(TriggerRequest))] == ["deploy-29"]
    assert report.rows["breaker_transitions"] == 2 and report.rows["trigger_requests"] == 2
    kept_for_ever = prune(NOW, Retention(runs_days=0, audit_days=0), batch=500, max_batches=10)
    assert kept_for_ever.rows["breaker_transitions"] == kept_for_ever.rows["trigger_requests"] == 0


# --- a schedule's own keep_runs_days through the API ----------------------------------------------

def test_a_schedule_keeps_its_runs_for_the_days_it_names_from_1_to_3650(app, client) -> None:
    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    body = {"name": "s", "workflow_id": workflow, "interval_seconds": 60}
    plain = client.post("/api/v1/schedules/", json=body)
    assert plain.status_code == 201 and plain.json["keep_runs_days"] is None  # the default applies
    made = client.post("/api/v1/schedules/", json={**body, "keep_runs_days": 90})
    assert made.status_code == 201 and made.json["keep_runs_days"] == 90
    url = f"/api/v1/schedules/{made.json['id']}/"
    for bad in (0, 3651, "30", 1.5):
        refused = client.patch(url, json={"keep_runs_days": bad})
        assert refused.status_code == 422 and "keep_runs_days" in refused.json["errors"], refused.json
    assert client.patch(url, json={"keep_runs_days": 3650}).json["keep_runs_days"] == 3650
    assert client.get(url).json["keep_runs_days"] == 3650
    assert db.session.get(Schedule, made.json["id"], populate_existing=True).keep_runs_days == 3650
    db.session.rollback()
    assert client.patch(url, json={"keep_runs_days": None}).json["keep_runs_days"] is None

    schemas = client.get("/api/openapi.json").get_json()["components"]["schemas"]
    declared = schemas["ScheduleIn"]["properties"]["keep_runs_days"]
    assert (declared["minimum"], declared["maximum"]) == (1, 3650)
    assert "keep_runs_days" in schemas["ScheduleOut"]["required"]
