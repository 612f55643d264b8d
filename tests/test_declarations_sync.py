"""`flask declarations sync` against the database (SQLite and PostgreSQL): its plan, its dry run, that a
second sync changes nothing, that a changed declaration changes only its fields, that a removed one is
paused (deleted with prune), that schedules made through the API are left alone, and its lock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select, update

from app import clock, schedules
from app.auth.models import ScheduleEvent
from app.extensions import db, get_redis
from app.models import ScheduledJob, Workflow
from app.sync import run as sync_run
from app.sync.lock import SYNC_LOCK
from app.sync.marks import DeclaredKey
from app.sync.plan import REMOVED_NOTE, SCHEDULE_DEFAULTS, WORKFLOW_DEFAULTS
from app.sync.run import SyncError, sync
from app.tasks import declarations
from tests import declared_tasks
from tests.tokens import new_owner_token


@pytest.fixture(autouse=True)
def no_declarations() -> Iterator[None]:
    declarations.forget()
    yield
    declarations.forget()


def declare_both(cron: str = "0 9 * * *") -> None:
    declarations.declare(declared_tasks.tick, {"cron": cron, "tz": "Europe/Paris", "retries": 2,
                                               "payload": {"from": "cron"}}, key="tick-cron")
    declarations.declare(declared_tasks.send_report, {"every": "15m", "timeout": 30}, key="reports-42",
                         args=[42], kwargs={"dry_run": True})


def by_key() -> dict[str, ScheduledJob]:
    db.session.expire_all()
    rows = {s.key: s for s in db.session.scalars(select(ScheduledJob)) if s.key is not None}
    for row in rows.values():
        db.session.expunge(row)
    db.session.rollback()  # end the read: on SQLite every transaction takes the write lock, and sync writes
    return rows


def events() -> list[tuple[str, str, str]]:
    keys = {s.id: s.key for s in db.session.scalars(select(ScheduledJob))}
    found = [(keys.get(e.schedule_id, e.schedule_id), e.action, e.actor_name)
             for e in db.session.scalars(select(ScheduleEvent).order_by(ScheduleEvent.id))]
    db.session.rollback()
    return found


def test_dry_run_prints_the_plan_and_changes_nothing(app):
    declare_both()
    outcome = sync(app, dry_run=True)
    assert outcome.plan is not None
    assert [(s.key, s.action) for s in outcome.plan.steps] == [("reports-42", "create"), ("tick-cron", "create")]
    assert outcome.lines()[-1] == "plan: 2 create (dry run: nothing was changed)"
    assert by_key() == {} and db.session.scalars(select(DeclaredKey)).all() == []
    db.session.rollback()


def test_sync_creates_then_changes_nothing_the_second_time(app):
    declare_both()
    first = sync(app)
    assert first.plan is not None and first.plan.count("create") == 2
    rows = by_key()
    assert rows["tick-cron"].cron == "0 9 * * *" and rows["tick-cron"].timezone == "Europe/Paris"
    assert rows["tick-cron"].max_retries == 2 and rows["tick-cron"].trigger_payload == {"from": "cron"}
    assert rows["reports-42"].interval_seconds == 900 and rows["reports-42"].timeout_seconds == 30
    assert rows["reports-42"].trigger_payload == {"args": [42], "kwargs": {"dry_run": True}}
    flows = {w.id: w.task for w in db.session.scalars(select(Workflow))}
    db.session.rollback()
    assert flows[rows["reports-42"].workflow_id] == "tests.declared_tasks.send_report"
    assert flows[rows["tick-cron"].workflow_id] == "tests.declared.tick"
    # Recorded under the sync's owner (the first admin), not as "system".
    assert sorted(events()) == [("reports-42", "create", "admin (declarations sync)"),
                                ("tick-cron", "create", "admin (declarations sync)")]
    revisions = {key: (s.revision, s.current_repeat, s.next_run_at) for key, s in rows.items()}

    second = sync(app)
    assert second.plan is not None and [s.action for s in second.plan.steps] == ["unchanged", "unchanged"]
    assert len(events()) == 2
    assert {key: (s.revision, s.current_repeat, s.next_run_at) for key, s in by_key().items()} == revisions


def test_a_changed_cron_is_one_patch_and_the_counters_stay(app):
    declare_both()
    sync(app)
    db.session.execute(update(ScheduledJob).values(run_count=7, error_count=2))
    db.session.commit()
    declarations.forget()
    declare_both(cron="30 9 * * *")
    outcome = sync(app)
    assert outcome.plan is not None
    changed = [s for s in outcome.plan.steps if s.action == "update"]
    assert [(s.key, list(s.changes)) for s in changed] == [("tick-cron", ["cron"])]
    assert [e for e in events() if e[1] == "update"] == [("tick-cron", "update", "admin (declarations sync)")]
    update_event = db.session.scalars(select(ScheduleEvent).where(ScheduleEvent.action == "update")).one()
    assert update_event.changes == {"cron": "30 9 * * *"}
    db.session.rollback()
    rows = by_key()
    assert rows["tick-cron"].cron == "30 9 * * *" and rows["tick-cron"].revision == 1
    assert (rows["tick-cron"].run_count, rows["tick-cron"].error_count) == (7, 2)
    assert rows["reports-42"].revision == 0  # the other schedule is not touched


def test_a_field_left_out_goes_back_to_the_apis_default(app):
    declare_both()
    sync(app)
    declarations.forget()
    declarations.declare(declared_tasks.tick, {"cron": "0 9 * * *", "tz": "Europe/Paris",
                                               "payload": {"from": "cron"}}, key="tick-cron")
    declarations.declare(declared_tasks.send_report, {"every": "15m", "timeout": 30}, key="reports-42",
                         args=[42], kwargs={"dry_run": True})
    outcome = sync(app)
    assert outcome.plan is not None
    assert {s.key: s.changes for s in outcome.plan.steps if s.changes} == {"tick-cron": {"max_retries": (2, 3)}}


def test_a_removed_declaration_is_paused_then_resumed_when_it_returns_and_deleted_with_prune(app):
    declare_both()
    sync(app)
    declarations.forget(["reports-42"])
    outcome = sync(app)
    assert outcome.plan is not None
    assert [(s.key, s.action) for s in outcome.plan.steps] == [("tick-cron", "unchanged"), ("reports-42", "pause")]
    report = by_key()["reports-42"]
    assert (report.status, report.pause_note) == ("paused", REMOVED_NOTE)
    again = sync(app)
    assert again.plan is not None and [s.action for s in again.plan.steps] == ["unchanged", "unchanged"]

    declare_both()
    back = sync(app)
    assert back.plan is not None and {s.key: s.action for s in back.plan.steps} == {
        "reports-42": "resume", "tick-cron": "unchanged"}
    assert by_key()["reports-42"].status == "active"

    declarations.forget(["reports-42"])
    pruned = sync(app, prune=True)
    assert pruned.plan is not None and {s.key: s.action for s in pruned.plan.steps} == {
        "reports-42": "delete", "tick-cron": "unchanged"}
    assert set(by_key()) == {"tick-cron"}
    assert [m.key for m in db.session.scalars(select(DeclaredKey))] == ["tick-cron"]
    assert len(db.session.scalars(select(Workflow)).all()) == 1
    db.session.rollback()


def test_a_schedule_paused_by_a_person_stays_paused(app):
    declare_both()
    sync(app)
    schedules.pause(by_key()["tick-cron"].id, clock.utcnow(), "holiday")
    db.session.rollback()
    outcome = sync(app)
    assert outcome.plan is not None and [s.action for s in outcome.plan.steps] == ["unchanged", "unchanged"]
    assert by_key()["tick-cron"].status == "paused"


def test_schedules_made_through_the_api_are_left_alone(app, client):
    workflow = client.post("/api/v1/workflows/", json={"name": "by hand", "task": "builtin.noop"}).get_json()
    for key in ("tick-cron", "hand-made"):
        assert client.post("/api/v1/schedules/", json={"name": key, "key": key, "workflow_id": workflow["id"],
                                                       "cron": "0 1 * * *"}).status_code == 201
    declare_both()
    outcome = sync(app, prune=True)
    assert outcome.plan is not None
    assert {s.key: s.action for s in outcome.plan.steps} == {"reports-42": "create", "tick-cron": "conflict"}
    rows = by_key()
    assert rows["tick-cron"].cron == "0 1 * * *" and rows["hand-made"].status == "active"


def test_sync_owner_is_the_setting_or_the_first_admin(app):
    new_owner_token(app, "deployer")
    app.config["RECUR_SYNC_OWNER"] = "deployer"
    declare_both()
    sync(app)
    assert {s.owner_id for s in by_key().values()} != {1}
    assert {e[2] for e in events()} == {"deployer (declarations sync)"}
    app.config["RECUR_SYNC_OWNER"] = "nobody"
    with pytest.raises(SyncError, match="nobody"):
        sync(app)


def test_the_defaults_sync_assumes_are_a_real_creates(app):
    """A declaration leaving a field out means the API's default: these must be what a create leaves."""
    workflow = Workflow(name="w", task="builtin.noop", owner_id=1, created_at=clock.utcnow())
    db.session.add(workflow)
    db.session.commit()
    created = schedules.create({"name": "plain", "workflow_id": workflow.id, "owner_id": 1, "every": "5m"},
                               clock.utcnow())
    for name, default in SCHEDULE_DEFAULTS.items():
        held = (created.anchor_at if created.anchor_explicit else None) if name == "anchor_date" else \
            getattr(created, name)
        assert held == default, name
    db.session.refresh(workflow)
    for name, default in WORKFLOW_DEFAULTS.items():
        assert getattr(workflow, name) == default, name
    db.session.rollback()


def test_workers_starting_together_sync_once_and_a_held_lock_waits(app, monkeypatch):
    declare_both()
    first = sync(app, once=True)
    assert first.plan is not None and first.plan.count("create") == 2
    later = sync(app, once=True)
    assert later.plan is None and "already" in later.skipped
    assert sync(app).plan is not None  # the command always plans
    get_redis().set(SYNC_LOCK, "someone else", px=60_000)
    monkeypatch.setattr(sync_run, "LOCK_WAIT_SECONDS", 0.3)
    with pytest.raises(SyncError, match="lock"):
        sync(app)
    assert get_redis().get(SYNC_LOCK) == b"someone else"  # not ours to release


def test_the_command_prints_the_plan(app):
    declare_both()
    runner = app.test_cli_runner()
    dry = runner.invoke(args=["declarations", "sync", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "create    reports-42" in dry.output and "dry run" in dry.output
    done = runner.invoke(args=["declarations", "sync", "--json"])
    assert done.exit_code == 0, done.output
    assert '"create": 2' in done.output
    declarations.declare(declared_tasks.no_arguments, {"cron": "99 * * * *"}, key="bad")
    refused = runner.invoke(args=["declarations", "sync"])
    assert refused.exit_code == 1 and "bad" in refused.output and "cron" in refused.output
