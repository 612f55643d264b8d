"""`flask declarations sync` against the database (SQLite and PostgreSQL): its plan, its dry run, that a
second sync changes nothing, that a changed declaration changes only its fields, that a removed one is
paused (deleted with prune), that schedules made through the API are left alone. Its lock:
tests/test_declarations_lock.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from harness import declared_tasks
from harness.declaring import declare_both, no_declarations  # noqa: F401  (no_declarations: autouse here)
from harness.tokens import new_owner_token
from recur_server.auth.models import ScheduleEvent
from recur_server.declarations.marks import DeclaredKey
from recur_server.declarations.plan import REMOVED_NOTE, schedule_defaults, workflow_defaults
from recur_server.declarations.sync import SyncError, sync
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.models import Schedule, Workflow
from recur_server.services import schedules
from recur_server.tasks import declarations


def by_key() -> dict[str, Schedule]:
    db.session.expire_all()
    rows = {s.name: s for s in db.session.scalars(select(Schedule)) if s.name is not None}
    for row in rows.values():
        db.session.expunge(row)
    db.session.rollback()  # end the read: on SQLite every transaction takes the write lock, and sync writes
    return rows


def events() -> list[tuple[str, str, str]]:
    keys = {s.id: s.name for s in db.session.scalars(select(Schedule))}
    found = [(keys.get(e.schedule_id, e.schedule_id), e.action, e.actor_name)
             for e in db.session.scalars(select(ScheduleEvent).order_by(ScheduleEvent.id))]
    db.session.rollback()
    return found


def test_dry_run_prints_the_plan_and_changes_nothing(app):
    declare_both()
    outcome = sync(app, dry_run=True)
    assert outcome.plan is not None
    assert [(s.name, s.action) for s in outcome.plan.steps] == [("reports-42", "create"), ("tick-cron", "create")]
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
    assert flows[rows["reports-42"].workflow_id] == "harness.declared_tasks.send_report"
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
    db.session.execute(update(Schedule).values(run_count=7, error_count=2))
    db.session.commit()
    declarations.forget()
    declare_both(cron="30 9 * * *")
    outcome = sync(app)
    assert outcome.plan is not None
    changed = [s for s in outcome.plan.steps if s.action == "update"]
    assert [(s.name, list(s.changes)) for s in changed] == [("tick-cron", ["cron"])]
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
    assert {s.name: s.changes for s in outcome.plan.steps if s.changes} == {"tick-cron": {"max_retries": (2, 3)}}


def test_a_removed_declaration_is_paused_then_resumed_when_it_returns_and_deleted_with_prune(app):
    declare_both()
    sync(app)
    declarations.forget(["reports-42"])
    outcome = sync(app)
    assert outcome.plan is not None
    assert [(s.name, s.action) for s in outcome.plan.steps] == [("tick-cron", "unchanged"), ("reports-42", "pause")]
    report = by_key()["reports-42"]
    assert (report.status, report.pause_note) == ("paused", REMOVED_NOTE)
    again = sync(app)
    assert again.plan is not None and [s.action for s in again.plan.steps] == ["unchanged", "unchanged"]

    declare_both()
    back = sync(app)
    assert back.plan is not None and {s.name: s.action for s in back.plan.steps} == {
        "reports-42": "resume", "tick-cron": "unchanged"}
    assert by_key()["reports-42"].status == "active"

    declarations.forget(["reports-42"])
    pruned = sync(app, prune=True)
    assert pruned.plan is not None and {s.name: s.action for s in pruned.plan.steps} == {
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
    assert {s.name: s.action for s in outcome.plan.steps} == {"reports-42": "create", "tick-cron": "conflict"}
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
    for name, default in schedule_defaults().items():
        held = {"anchor_date": created.anchor_at if created.anchor_explicit else None,
                "after": created.after_schedule_id}.get(name, getattr(created, name, None))
        assert held == default, name
    db.session.refresh(workflow)
    for name, default in workflow_defaults().items():
        assert getattr(workflow, name) == default, name
    db.session.rollback()


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


def test_a_declaration_follows_another_made_first_whatever_its_key_then_changes_only_its_after(app):
    """`follows=` a declared function: its key is found at sync, and the upstream is created before the
    follower ("archive" sorts first; made first, it would name a schedule that does not exist yet)."""
    declarations.declare(declared_tasks.no_arguments, {"every": "3650d", "follows": declared_tasks.send_report},
                         key="archive")
    declarations.declare(declared_tasks.send_report, {"every": "15m"}, key="zz-report", args=[1])
    first = sync(app)
    assert first.plan is not None
    assert [(s.name, s.action) for s in first.plan.steps] == [("zz-report", "create"), ("archive", "create")]
    rows = by_key()
    upstream = rows["zz-report"].id
    assert (rows["archive"].after_schedule_id, rows["archive"].after_on, rows["archive"].after_delay_seconds,
            rows["archive"].after_within) == (upstream, "succeeded", 0, None)
    second = sync(app)
    assert second.plan is not None and [s.action for s in second.plan.steps] == ["unchanged", "unchanged"]

    declarations.forget(["archive"])  # the upstream named by its id, as the API answers it: the same
    declarations.declare(declared_tasks.no_arguments, {"every": "3650d", "follows": upstream}, key="archive")
    named_by_id = sync(app)
    assert named_by_id.plan is not None and {s.action for s in named_by_id.plan.steps} == {"unchanged"}

    declarations.forget(["archive"])
    declarations.declare(declared_tasks.no_arguments, {"every": "3650d", "follows": {
        "schedule": "zz-report", "on": "failed", "delay_seconds": timedelta(minutes=1), "within": "06:00-22:00"}},
        key="archive")
    changed = sync(app)
    assert changed.plan is not None
    assert {s.name: s.changes for s in changed.plan.steps if s.changes} == {"archive": {"after": (
        {"schedule": "zz-report", "on": "succeeded", "delay_seconds": 0, "within": None},
        {"schedule": "zz-report", "on": "failed", "delay_seconds": 60, "within": "06:00-22:00"})}}
    archive = by_key()["archive"]
    assert (archive.after_schedule_id, archive.after_on, archive.after_delay_seconds, archive.after_within) == (
        upstream, "failed", 60, "06:00-22:00")
    assert archive.revision == 0  # a trigger beside the timing: the chain is not re-planned

    declarations.forget(["archive"])
    declarations.declare(declared_tasks.no_arguments, {"every": "3650d"}, key="archive")
    dropped = sync(app)
    assert dropped.plan is not None and [s.name for s in dropped.plan.steps if s.changes] == ["archive"]
    assert by_key()["archive"].after_schedule_id is None


def test_follows_a_schedule_made_through_the_api_by_its_key(app, client):
    workflow = client.post("/api/v1/workflows/", json={"name": "by hand", "task": "builtin.noop"}).get_json()
    made = client.post("/api/v1/schedules/", json={"name": "export", "key": "export", "workflow_id": workflow["id"],
                                                   "cron": "0 1 * * *"}).get_json()
    declarations.declare(declared_tasks.no_arguments, {"every": "3650d", "follows": "export"}, key="load")
    sync(app)
    assert by_key()["load"].after_schedule_id == made["id"]
    again = sync(app)
    assert again.plan is not None and [s.action for s in again.plan.steps] == ["unchanged"]


def test_what_follows_refuses_before_anything_is_done(app):
    # A key that names no schedule of the owner: refused at the dry run, naming follows.
    declarations.declare(declared_tasks.no_arguments, {"every": "1h", "follows": "nowhere"}, key="load")
    with pytest.raises(declarations.DeclarationError, match="follows: no schedule with id or key 'nowhere'"):
        sync(app, dry_run=True)
    declarations.forget()
    # A function that is not declared, and one declared twice.
    declarations.declare(declared_tasks.no_arguments, {"every": "1h", "follows": declared_tasks.send_report},
                         key="load")
    with pytest.raises(declarations.DeclarationError, match="send_report is not declared as a schedule"):
        sync(app, dry_run=True)
    for key in ("report-1", "report-2"):
        declarations.declare(declared_tasks.send_report, {"every": "1h"}, key=key, args=[1])
    with pytest.raises(declarations.DeclarationError, match=r"declared 2 times \(report-1, report-2\)"):
        sync(app, dry_run=True)
    declarations.forget()
    # Declarations in a circle.
    declarations.declare(declared_tasks.no_arguments, {"every": "1h", "follows": "b"}, key="a")
    declarations.declare(declared_tasks.send_report, {"every": "1h", "follows": "a"}, key="b", args=[1])
    with pytest.raises(declarations.DeclarationError, match="circle: a -> b -> a"):
        sync(app)
    assert by_key() == {}
    # after= is the one-shot delay: given a schedule, it says which option follows.
    with pytest.raises(declarations.DeclarationError, match="give follows="):
        declarations.declare(declared_tasks.no_arguments, {"after": "b"}, key="c")
    # The API's own checks name the option as the code wrote it.
    declarations.forget()
    declarations.declare(declared_tasks.no_arguments, {"every": "1h", "follows": {"schedule": "x", "on": "done"}},
                         key="d")
    with pytest.raises(declarations.DeclarationError, match="follows.on: Must be one of"):
        sync(app, dry_run=True)


def _calendar(name: str, dates: list[str], owner_id: int = 1) -> int:
    from recur_server.services.calendars import create as create_calendar
    made = create_calendar(owner_id, {"name": name, "dates": dates}, clock.utcnow())
    db.session.commit()
    return int(made.id)


def test_a_declaration_puts_its_schedule_on_a_calendar_by_name_and_follows_changes_of_it(app):
    office = _calendar("office", ["2030-12-24"])
    plant = _calendar("plant", ["2030-12-25"])
    declarations.declare(declared_tasks.no_arguments, {"cron": "0 9 * * *", "calendar": "office"}, key="daily")
    first = sync(app)
    assert first.plan is not None and [s.action for s in first.plan.steps] == ["create"]
    assert (by_key()["daily"].calendar_id, by_key()["daily"].on_calendar) == (office, None)
    again = sync(app)
    assert again.plan is not None and [s.action for s in again.plan.steps] == ["unchanged"]

    declarations.forget()
    declarations.declare(declared_tasks.no_arguments, {"cron": "0 9 * * *", "calendar_id": plant,  # the API's name
                                                       "on_calendar": "shift_next"}, key="daily")
    moved = sync(app)
    assert moved.plan is not None
    assert {s.name: s.changes for s in moved.plan.steps} == {"daily": {"calendar_id": (office, plant),
                                                                      "on_calendar": (None, "shift_next")}}
    assert (by_key()["daily"].calendar_id, by_key()["daily"].on_calendar) == (plant, "shift_next")

    declarations.forget()  # left out: off the calendar, as the API's default
    declarations.declare(declared_tasks.no_arguments, {"cron": "0 9 * * *"}, key="daily")
    sync(app)
    assert (by_key()["daily"].calendar_id, by_key()["daily"].on_calendar) == (None, None)


def test_a_calendar_the_owner_does_not_have_is_refused_naming_calendar(app):
    other = new_owner_token(app, "other")
    assert other
    from recur_server.auth.models import Owner
    theirs = db.session.scalar(select(Owner.id).where(Owner.name == "other"))
    db.session.rollback()
    _calendar("theirs", ["2030-12-24"], owner_id=theirs)
    declarations.declare(declared_tasks.no_arguments, {"cron": "0 9 * * *", "calendar": "theirs"}, key="daily")
    with pytest.raises(declarations.DeclarationError, match="calendar: no calendar named 'theirs'"):
        sync(app, dry_run=True)
    declarations.forget()
    declarations.declare(declared_tasks.no_arguments, {"cron": "0 9 * * *", "calendar": "x", "calendar_id": 1},
                         key="daily")
    with pytest.raises(declarations.DeclarationError, match="calendar_id"):
        sync(app, dry_run=True)


class _Died(BaseException):
    """A process that dies at a line (nothing after it runs, nothing catches it)."""


def test_a_prune_that_dies_after_the_delete_leaves_no_mark_nor_empty_workflow(app, monkeypatch):
    declare_both()
    sync(app)
    declarations.forget()
    declarations.declare(declared_tasks.tick, {"cron": "0 9 * * *", "tz": "Europe/Paris", "retries": 2,
                                               "payload": {"from": "cron"}}, key="tick-cron")
    report = by_key()["reports-42"]

    def die(*_: object) -> None:  # the first thing after the delete's commit
        raise _Died()

    monkeypatch.setattr(schedules, "withdraw_each", die)
    with pytest.raises(_Died):
        sync(app, prune=True)
    db.session.rollback()
    assert "reports-42" not in by_key()
    assert db.session.get(DeclaredKey, (1, "reports-42")) is None
    assert db.session.get(Workflow, report.workflow_id) is None
    db.session.rollback()

