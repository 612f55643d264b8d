"""The lean claim (recur_server.chain.lean_claim): on PostgreSQL an on-time link of a plain schedule claims its tick
and records its run in one statement, one round trip; every other link, and every link on SQLite, takes the full
path, which decides as it always did. The full path is counted here (it still runs): a test of the lean claim
must see it not taken, a test of a fallback must see it taken once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select, text, update

from harness.chain_driver import fresh, make_schedule
from harness.row_locks import behind_held_rows
from recur_server.chain import claim, lean_claim
from recur_server.infra.extensions import db
from recur_server.models import Run, Schedule, Workflow

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def full_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The schedules whose link took the full path, in order."""
    taken: list[str] = []
    real = claim._claim_full

    def counted(values: dict[str, Any], schedule_id: str, *rest: Any) -> Any:
        taken.append(schedule_id)
        return real(values, schedule_id, *rest)

    monkeypatch.setattr(claim, "_claim_full", counted)
    lean_claim._full_path.clear()
    yield taken
    lean_claim._full_path.clear()


def _postgres() -> bool:
    return db.engine.dialect.name == "postgresql"


def _link(schedule: Schedule, late: float = 0.0, retry: int = 0, revision: int | None = None) -> Any:
    due = schedule.next_run_at
    assert due is not None
    return claim.claim_tick(schedule.id, schedule.revision if revision is None else revision,
                            schedule.current_repeat, retry, due, due + timedelta(seconds=late), "w1")


def _run(run_id: str) -> Run:
    found = db.session.scalars(select(Run).where(Run.id == run_id)).one()
    db.session.rollback()
    return found


def _workflow(schedule: Schedule, **settings: Any) -> None:
    db.session.execute(update(Workflow).where(Workflow.id == schedule.workflow_id).values(**settings))
    db.session.commit()


def test_an_on_time_link_of_a_plain_schedule_claims_as_the_full_path_does(app: Flask, full_path: list[str]) -> None:
    lean, full = make_schedule(NOW, interval_seconds=60, name="lean"), make_schedule(NOW, interval_seconds=60)
    claimed = _link(lean)
    assert full_path == ([] if _postgres() else [lean.id])  # one statement on PostgreSQL; SQLite has no round trips
    assert isinstance(claimed, claim.Claim)
    assert (claimed.task, claimed.name, claimed.trigger, claimed.nominal, claimed.detached) == (
        "builtin.noop", "lean", "schedule", lean.next_run_at, False)
    by_full = claim._claim_full({"p_id": full.id, "p_revision": full.revision, "p_repeat": full.current_repeat,
                                 "p_retry": 0, "p_run_id": "full-run", "p_now": full.next_run_at, "p_worker": "w1"},
                                full.id, 0, full.next_run_at, full.next_run_at)
    assert isinstance(by_full, claim.Claim)

    def written(schedule_id: str, run_id: str) -> tuple[Any, ...]:
        run, row = _run(run_id), fresh(schedule_id)
        return (run.status, run.trigger, run.worker, run.repeat_number, run.retry_number, run.scheduled_for,
                run.started_at, run.finished_at, row.running_run_id == run_id, row.last_run_at, row.waiting_note,
                row.current_repeat, row.run_count)

    assert written(lean.id, claimed.run_id) == written(full.id, "full-run")
    assert written(lean.id, claimed.run_id)[:3] == ("running", "schedule", "w1")


def test_a_retry_claims_lean_as_a_retry(app: Flask, full_path: list[str]) -> None:
    schedule = make_schedule(NOW, interval_seconds=60)
    db.session.execute(update(Schedule).where(Schedule.id == schedule.id).values(current_retry=1))
    db.session.commit()
    claimed = _link(schedule, retry=1)
    assert isinstance(claimed, claim.Claim) and claimed.trigger == "retry"
    assert _run(claimed.run_id).trigger == "retry" and full_path == ([] if _postgres() else [schedule.id])


def _limited(schedule: Schedule) -> None:
    _workflow(schedule, max_concurrent_runs=2)


def _breaker(schedule: Schedule) -> None:
    _workflow(schedule, breaker_threshold=3)


def _unknown_task(schedule: Schedule) -> None:
    _workflow(schedule, task="nobody.knows.this")


def _allow_all(schedule: Schedule) -> None:
    db.session.execute(update(Schedule).where(Schedule.id == schedule.id).values(overlap="allow_all"))
    db.session.commit()


def _backlog(schedule: Schedule) -> None:
    db.session.execute(update(Schedule).where(Schedule.id == schedule.id).values(
        run_through=schedule.next_run_at, backlog="catch_up"))
    db.session.commit()


def _outside_run(schedule: Schedule) -> None:
    _insert_running(db.session, schedule)
    db.session.commit()


def _insert_running(connection: Any, schedule: Schedule) -> None:
    connection.execute(text(
        "INSERT INTO runs (id, schedule_id, retry_number, scheduled_for, started_at, status, trigger) "
        "VALUES ('manual-1', :id, 0, :at, :at, 'running', 'manual')"), {"id": schedule.id, "at": NOW})


@pytest.mark.parametrize(("change", "expected"), [
    (_limited, (claim.Claim, "schedule")),
    (_breaker, (claim.Claim, "schedule")),
    (_allow_all, (claim.Claim, "schedule")),
    (_backlog, (claim.Claim, "catch_up")),
    (_outside_run, (claim.Passed, "skipped")),
    (_unknown_task, (claim.Wait, None)),
], ids=["limited", "breaker", "detached", "backlog", "run-outside-going", "task-unknown"])
def test_a_link_a_policy_must_decide_takes_the_full_path_and_keeps_to_it(
        app: Flask, full_path: list[str], change: Any, expected: tuple[type, str | None]) -> None:
    schedule = make_schedule(NOW, interval_seconds=60)
    change(schedule)
    decided = _link(schedule)
    kind, what = expected
    assert isinstance(decided, kind), decided
    assert (decided.trigger if isinstance(decided, claim.Claim) else getattr(decided, "outcome", None)) == what
    assert full_path == [schedule.id]  # once: the lean statement wrote nothing the full path then had to undo
    assert lean_claim.applies(schedule.id, NOW, NOW, 1.0) is False  # its next links go the full path at once


def test_a_late_link_and_a_fenced_out_copy_go_the_full_path_and_are_not_remembered(
        app: Flask, full_path: list[str]) -> None:
    late, gone = make_schedule(NOW, interval_seconds=60), make_schedule(NOW, interval_seconds=60)
    assert isinstance(_link(late, late=5.0), claim.Claim)
    assert _link(gone, revision=gone.revision + 1) is None  # a copy planned under another revision
    assert full_path == [late.id, gone.id]
    assert lean_claim._full_path == {}


def test_a_run_outside_the_chain_started_while_the_link_waits_for_the_row_is_seen(
        app: Flask, full_path: list[str]) -> None:
    """A manual start locks the schedule's row, records its run and commits; a link that waited on that row must
    see the run (overlap skip: the tick is skipped). The lean statement's check reads with its statement's
    snapshot: taken before the wait, it would miss the run, so the row is locked by a statement before it."""
    if not _postgres():
        pytest.skip("row locks: PostgreSQL")
    schedule = make_schedule(NOW, interval_seconds=60)

    def hold(blocker: Any) -> None:
        blocker.execute(text("SELECT id FROM scheduled_jobs WHERE id = :id FOR UPDATE"), {"id": schedule.id})
        _insert_running(blocker, schedule)

    outcome = behind_held_rows(app, hold, lambda: _link(schedule))
    assert len(outcome) == 1 and isinstance(outcome[0], claim.Passed), outcome
    assert outcome[0].outcome == "skipped"
    statuses = sorted(run.status for run in db.session.scalars(select(Run).where(Run.schedule_id == schedule.id)))
    assert statuses == ["running", "skipped"]  # the manual run, and the tick it made the chain skip

