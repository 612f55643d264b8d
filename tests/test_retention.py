"""Retention: what a pruning pass deletes and what it keeps, with literal times, on both databases; the
pure cutoffs; the pass in batches that stops and resumes; the background pass one process at a time."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, func, select

from app.auth.models import ApiToken, ConsoleSession, OwnerEvent, ScheduleEvent
from app.infra.extensions import db, get_redis
from app.models import Backfill, BreakerTransition, Run, Schedule, TriggerRequest, Workflow
from app.notify.models import Delivery, DeliveryAttempt, Event
from app.policies.retention import Retention, cutoff, runs_boundary, runs_cutoff
from app.services.retention import prune
from app.workers.background import PRUNE_LOCK, PRUNED_KEY, prune_once

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


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


# --- rows, inserted with literal times ----------------------------------------------------------

def _workflow() -> int:
    workflow = Workflow(name="w", task="noop", owner_id=1, created_at=ago(400))
    db.session.add(workflow)
    db.session.flush()
    return int(workflow.id)


def _schedule(workflow_id: int, schedule_id: str, keep_runs_days: int | None = None) -> Schedule:
    schedule = Schedule(id=schedule_id, name=schedule_id, workflow_id=workflow_id, owner_id=1,
                            interval_seconds=60, created_at=ago(400), updated_at=ago(400),
                            keep_runs_days=keep_runs_days)
    db.session.add(schedule)
    db.session.flush()
    return schedule


def _runs(schedule_id: str, *days_ago: float, status: str = "succeeded", backfill_id: str | None = None) -> list[str]:
    ids = []
    for days in days_ago:
        run = Run(id=f"{schedule_id}-{days}", schedule_id=schedule_id, repeat_number=None, retry_number=0,
                  scheduled_for=ago(days), started_at=ago(days),
                  finished_at=None if status == "running" else ago(days) + timedelta(seconds=1),
                  status=status, backfill_id=backfill_id)
        db.session.add(run)
        ids.append(run.id)
    db.session.flush()
    return ids


def _left(schedule_id: str) -> set[str]:
    """The schedule's runs; the read's transaction ended (on SQLite it holds the write lock)."""
    left = set(db.session.scalars(select(Run.id).where(Run.schedule_id == schedule_id)))
    db.session.rollback()
    return left


def _count(model: type) -> int:
    count = int(db.session.scalar(select(func.count()).select_from(model)) or 0)
    db.session.rollback()
    return count


def test_runs_past_retention_go_and_the_newest_running_and_needed_ones_stay(app) -> None:
    workflow_id = _workflow()
    # Old and new runs: the old ones go, the newest 3 stay (35 days old is among them), a running run
    # that started long ago stays.
    _schedule(workflow_id, "s-mixed")
    _runs("s-mixed", 60, 50, 45, 40, 35, 10, 1)
    _runs("s-mixed", 90, status="running")
    # Every run old: the newest stays however old.
    _schedule(workflow_id, "s-old")
    _runs("s-old", 400, 300, 200)
    # Keeps its runs 100 days, longer than the default 30; another 1 day, shorter.
    _schedule(workflow_id, "s-long", keep_runs_days=100)
    _runs("s-long", 120, 90, 60, 45, 40, 35)
    _schedule(workflow_id, "s-short", keep_runs_days=1)
    _runs("s-short", 5, 3, 2, 0.5)
    # The run the schedule's running_run_id names stays, whatever its row says.
    held = _schedule(workflow_id, "s-held")
    _runs("s-held", 80, 70, 2)
    held.running_run_id = "s-held-80"
    # A running backfill's runs stay; a finished one's go, and so does the backfill itself.
    _schedule(workflow_id, "s-backfill")
    db.session.add_all([
        Backfill(id="b-running", schedule_id="s-backfill", start_at=ago(200), end_at=ago(190), times=[], total=9,
                 started=3, status="running", created_at=ago(50)),
        Backfill(id="b-done", schedule_id="s-backfill", start_at=ago(200), end_at=ago(190), times=[], total=2,
                 started=2, status="done", created_at=ago(60), finished_at=ago(59)),
        Backfill(id="b-cancelled", schedule_id="s-backfill", start_at=ago(200), end_at=ago(190), times=[], total=2,
                 started=1, status="cancelled", created_at=ago(20), finished_at=ago(10)),
    ])
    db.session.flush()
    _runs("s-backfill", 200, 199, backfill_id="b-running")
    _runs("s-backfill", 198, 197, backfill_id="b-done")
    _runs("s-backfill", 5, 1, 0.5)
    db.session.commit()

    report = prune(NOW, Retention(runs_days=30, runs_min=3), batch=500, max_batches=10)

    assert _left("s-mixed") == {"s-mixed-35", "s-mixed-10", "s-mixed-1", "s-mixed-90"}
    assert _left("s-old") == {"s-old-400", "s-old-300", "s-old-200"}  # fewer than 3: all stay
    assert _left("s-long") == {"s-long-90", "s-long-60", "s-long-45", "s-long-40", "s-long-35"}
    assert _left("s-short") == {"s-short-3", "s-short-2", "s-short-0.5"}  # the newest 3 stay all the same
    assert _left("s-held") == {"s-held-80", "s-held-70", "s-held-2"}
    assert _left("s-backfill") == {"s-backfill-200", "s-backfill-199", "s-backfill-5", "s-backfill-1",
                                   "s-backfill-0.5"}
    assert set(db.session.scalars(select(Backfill.id))) == {"b-running", "b-cancelled"}
    assert report.rows["runs"] == 4 + 0 + 1 + 1 + 0 + 2
    assert report.rows["backfills"] == 1
    assert report.cursor is None  # the walk over schedules came to its end

    # With a minimum of 1, the newest run alone stays, however old; a second pass finds nothing more.
    report = prune(NOW, Retention(runs_days=30, runs_min=1), batch=500, max_batches=10)
    assert _left("s-old") == {"s-old-200"}
    assert _left("s-short") == {"s-short-0.5"}
    assert _left("s-held") == {"s-held-80", "s-held-2"}  # 70 goes, 80 is the schedule's running run
    assert _left("s-mixed") == {"s-mixed-10", "s-mixed-1", "s-mixed-90"}
    assert prune(NOW, Retention(runs_days=30, runs_min=1), batch=500, max_batches=10).rows["runs"] == 0


def _event(event_id: str, days_ago: float) -> None:
    db.session.add(Event(id=event_id, owner_id=1, type="run.failed", occurred_at=ago(days_ago), data={}))
    db.session.flush()


def _delivery(event_id: str, webhook_id: int, status: str, days_ago: float, attempts: int) -> int:
    delivery = Delivery(webhook_id=webhook_id, owner_id=1, event_id=event_id, status=status, attempts=attempts,
                        next_attempt_at=ago(days_ago), created_at=ago(days_ago),
                        delivered_at=ago(days_ago) if status == "delivered" else None)
    db.session.add(delivery)
    db.session.flush()
    for attempt in range(1, attempts + 1):
        db.session.add(DeliveryAttempt(delivery_id=delivery.id, webhook_id=webhook_id, event_id=event_id,
                                       event_type="run.failed", attempt=attempt, at=ago(days_ago), status_code=500,
                                       duration_ms=3))
    db.session.flush()
    return int(delivery.id)


def test_events_and_deliveries_go_when_no_pending_delivery_needs_them(app) -> None:
    _event("evt_delivered", 10)
    _delivery("evt_delivered", 1, "delivered", 10, attempts=2)
    _event("evt_pending", 10)
    pending = _delivery("evt_pending", 1, "pending", 10, attempts=3)  # still retried: stays, with its event
    _event("evt_half", 10)
    failed = _delivery("evt_half", 1, "failed", 10, attempts=4)
    pending_too = _delivery("evt_half", 2, "pending", 0.1, attempts=1)
    _event("evt_dropped", 9)
    _delivery("evt_dropped", 3, "dropped", 9, attempts=0)
    _event("evt_recent", 2)
    recent = _delivery("evt_recent", 1, "delivered", 2, attempts=1)
    _event("evt_unsent", 8)  # no webhook wanted it
    db.session.commit()

    report = prune(NOW, Retention(events_days=7), batch=500, max_batches=10)

    assert set(db.session.scalars(select(Event.id))) == {"evt_pending", "evt_half", "evt_recent"}
    assert set(db.session.scalars(select(Delivery.id))) == {pending, pending_too, recent}
    assert failed not in set(db.session.scalars(select(DeliveryAttempt.delivery_id)))
    assert _count(DeliveryAttempt) == 3 + 1 + 1
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
    workflow_id = _workflow()
    _schedule(workflow_id, "s-keys")
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


def test_a_pass_stops_after_its_batches_and_the_next_resumes_where_it_stopped(app) -> None:
    workflow_id = _workflow()
    for name in ("s-a", "s-b", "s-c"):
        _schedule(workflow_id, name)
        _runs(name, *(100 + day for day in range(9)))  # 9 old runs each: 8 may go, the newest stays
    for number in range(12):
        _event(f"evt_{number:02}", 30 + number)
    db.session.commit()
    retention = Retention(runs_days=30, runs_min=1, events_days=7)

    first = prune(NOW, retention, batch=5, max_batches=2)
    assert first.rows["runs"] == 8  # s-a's 8 in two batches (5, then 3): the pass's limit, s-b waits
    assert first.rows["events"] == 10  # the 10 oldest, in two batches of 5
    assert first.cursor == "s-b"
    assert len(_left("s-a")) == 1 and len(_left("s-b")) == 9 and len(_left("s-c")) == 9
    assert _count(Event) == 2

    second = prune(NOW, retention, batch=5, max_batches=2, cursor=first.cursor)
    assert second.rows["runs"] == 8 and second.rows["events"] == 2 and second.cursor == "s-c"
    assert len(_left("s-b")) == 1 and len(_left("s-c")) == 9
    third = prune(NOW, retention, batch=5, max_batches=2, cursor=second.cursor)
    assert third.rows["runs"] == 8 and third.cursor is None  # the walk reached its end: the next starts over
    assert [len(_left(name)) for name in ("s-a", "s-b", "s-c")] == [1, 1, 1]
    assert _count(Event) == 0


def test_batches_go_on_from_the_newest_start_deleted_and_ties_across_a_batch_are_all_deleted(app) -> None:
    workflow_id = _workflow()
    _schedule(workflow_id, "s-ties")
    old = ago(100)
    for number in range(12):  # twelve runs that started at the same instant: they straddle two batches
        db.session.add(Run(id=f"tie-{number:02}", schedule_id="s-ties", repeat_number=number, retry_number=0,
                           scheduled_for=old, started_at=old, finished_at=old, status="succeeded"))
    _runs("s-ties", 101, 1)  # an older one, and the newest
    db.session.commit()
    statements: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if statement.startswith("DELETE FROM runs"):
            statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        report = prune(NOW, Retention(runs_days=30, runs_min=1), batch=5, max_batches=10)
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    assert report.rows["runs"] == 13 and _left("s-ties") == {"s-ties-1"}
    assert len(statements) == 3  # 5, 5, 3
    assert ">=" not in statements[0] and all(">=" in statement for statement in statements[1:])


def test_every_statement_of_a_pass_reads_through_an_index(app) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's planner picks by table statistics; the indexes themselves are in the migrations")
    workflow_id = _workflow()
    _schedule(workflow_id, "s-plan")
    _runs("s-plan", 90, 80, 70)
    db.session.commit()
    statements: list[tuple[str, object]] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if statement.startswith(("SELECT", "DELETE")):
            statements.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        prune(NOW, Retention(runs_min=1), batch=500, max_batches=2)
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    deletes = [statement for statement, _ in statements if statement.startswith("DELETE")]
    assert {statement.split()[2] for statement in deletes} == {
        "runs", "backfills", "delivery_attempts", "deliveries", "events", "schedule_events", "owner_events",
        "console_sessions", "breaker_transitions", "trigger_requests", "follow_triggers"}
    with db.engine.connect() as connection:
        for statement, parameters in statements:
            plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            # The walk over schedules goes along their primary key's index, a page at a time; nothing else
            # scans a table or sorts.
            scans = [step for step in plan if step.startswith("SCAN") and step != (
                "SCAN scheduled_jobs USING INDEX sqlite_autoindex_scheduled_jobs_1")]
            assert not scans and not any("TEMP B-TREE" in step for step in plan), (statement, plan)


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


# --- the background pass ------------------------------------------------------------------------

def _pruned_metric(client, table: str) -> float:  # type: ignore[no-untyped-def]
    text = client.get("/metrics").get_data(as_text=True)
    match = re.search(rf'^recur_pruned_rows_total\{{table="{table}"\}} (\S+)$', text, re.M)
    return float(match.group(1)) if match else 0.0


def test_the_background_pass_runs_one_process_at_a_time_once_a_period_and_counts_in_metrics(app, fake_clock) -> None:
    fake_clock.set(NOW)
    workflow_id = _workflow()
    _schedule(workflow_id, "s-bg")
    _runs("s-bg", *(200 + day for day in range(150)))  # 150 runs older than the default 30 days
    db.session.commit()
    redis = get_redis(app)
    client = app.test_client()
    before = _pruned_metric(client, "runs")

    # Another process holds the lock: this one prunes nothing and leaves the lock alone.
    redis.set(PRUNE_LOCK, "another-process", px=10_000)
    assert prune_once(app, every=60) is None
    assert redis.get(PRUNE_LOCK) == b"another-process"
    assert len(_left("s-bg")) == 150
    redis.delete(PRUNE_LOCK)

    report = prune_once(app, every=60)
    assert report is not None and report["runs"] == 50  # the default keeps the newest 100
    assert len(_left("s-bg")) == 100
    assert not redis.exists(PRUNE_LOCK)
    assert 59_000 < redis.pttl(PRUNED_KEY) <= 60_000
    # Within the period, another worker's turn is skipped.
    assert prune_once(app, every=60) is None
    assert _pruned_metric(client, "runs") == before + 50


def _behind_seconds(client) -> float:  # type: ignore[no-untyped-def]
    text = client.get("/metrics").get_data(as_text=True)
    match = re.search(r"^recur_pruning_behind_seconds (\S+)$", text, re.M)
    assert match, "recur_pruning_behind_seconds is not exposed"
    return float(match.group(1))


@pytest.mark.parametrize("table", ["runs", "events"])
def test_passes_that_stop_at_their_limit_say_how_long_pruning_has_been_behind_until_one_catches_up(
        chain_app, fake_clock, table) -> None:
    """A history written faster than the passes prune it grows past its retention for ever unless someone
    is told: from the first pass that stops at its limit with rows left until one deletes everything past
    retention, recur_pruning_behind_seconds counts (on the cluster clock); then it is 0 again. On fakeredis
    and on a real redis-server, where the mark lives."""
    app = chain_app
    fake_clock.set(NOW)
    workflow_id = _workflow()
    _schedule(workflow_id, "s-behind")
    if table == "runs":
        _runs("s-behind", *(200 + day for day in range(150)))  # 50 past the newest 100 kept
    else:
        for index in range(50):
            _event(f"e-behind-{index}", 30 + index)  # past the default 7 days
    db.session.commit()
    app.config.update(RECUR_PRUNE_BATCH=10, RECUR_PRUNE_MAX_BATCHES=2)  # 20 rows of each table a pass
    client = app.test_client()
    assert _behind_seconds(client) == 0

    assert prune_once(app)[table] == 20  # stopped at its limit: 30 left
    fake_clock.advance(seconds=60)
    assert _behind_seconds(client) == 60
    assert prune_once(app)[table] == 20  # still behind since the first pass
    fake_clock.advance(seconds=60)
    assert _behind_seconds(client) == 120
    assert prune_once(app)[table] == 10  # the rest: caught up
    fake_clock.advance(seconds=60)
    assert _behind_seconds(client) == 0
