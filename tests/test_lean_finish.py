"""The lean finish (recur_server.chain.lean_finish): on PostgreSQL a run the lean claim took finishes in one round
trip, planned from the claim's snapshot of the row, and writes only if the rows are still as that snapshot says;
otherwise nothing of it is written and the full finish decides from the rows as they are. On SQLite no claim has a
snapshot: every finish is the full one. Which finish ran is counted here (both still run)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select, text, update

from harness.chain_driver import fresh, make_schedule
from harness.row_locks import behind_held_rows
from recur_server.chain import claim, finish, lean_claim
from recur_server.infra.extensions import db
from recur_server.models import FollowTrigger, Run, RunStatus, Schedule, Workflow

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture
def finishes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each finish tried, in order: "lean" (from a snapshot) or "full"."""
    tried: list[str] = []
    real = finish._finish

    def counted(*args: Any) -> Any:
        tried.append("full" if args[-1] is None else "lean")
        return real(*args)

    monkeypatch.setattr(finish, "_finish", counted)
    lean_claim._full_path.clear()
    yield tried
    lean_claim._full_path.clear()


def _postgres() -> bool:
    return db.engine.dialect.name == "postgresql"


def _claimed(schedule: Schedule) -> claim.Claim:
    due = schedule.next_run_at
    assert due is not None
    claimed = claim.claim_tick(schedule.id, schedule.revision, schedule.current_repeat, schedule.current_retry, due,
                               due, "w1")
    assert isinstance(claimed, claim.Claim)
    assert (claimed.snapshot is not None) == _postgres()
    return claimed


def _finish(claimed: claim.Claim, status: RunStatus, error: str | None = None, lean: bool = True) -> Any:
    at = (claimed.nominal or NOW) + timedelta(seconds=1)
    return finish.finish_run(claimed.run_id, status, error, at, claimed.schedule_id, None,
                             claimed.snapshot if lean else None)


def _change(schedule_id: str, **values: Any) -> None:
    db.session.execute(update(Schedule).where(Schedule.id == schedule_id).values(**values))
    db.session.commit()


def _state(schedule_id: str, run_id: str) -> tuple[Any, ...]:
    row = fresh(schedule_id)
    run = db.session.scalars(select(Run).where(Run.id == run_id)).one()
    state = (row.status, row.current_repeat, row.current_retry, row.next_run_at, row.run_count, row.error_count,
             row.last_error, row.running_run_id, run.status, run.error, run.finished_at)
    db.session.rollback()
    return state


@pytest.mark.parametrize(("fields", "status", "error"), [
    ({}, RunStatus.SUCCEEDED, None),
    ({"max_retries": 2, "retry_delay_seconds": 5}, RunStatus.FAILED, "boom"),
    ({"max_retries": 0}, RunStatus.TIMED_OUT, "timed out"),
    ({"total_repeats": 1}, RunStatus.SUCCEEDED, None),
], ids=["succeeded", "failed-retried", "timed-out", "last-repeat-done"])
def test_a_lean_run_finishes_in_one_try_as_the_full_finish_does(
        app: Flask, finishes: list[str], fields: dict[str, Any], status: RunStatus, error: str | None) -> None:
    lean, full = (make_schedule(NOW, interval_seconds=60, **fields) for _ in range(2))
    by_lean, by_full = _claimed(lean), _claimed(full)
    done_lean, done_full = _finish(by_lean, status, error), _finish(by_full, status, error, lean=False)
    assert finishes == (["lean", "full"] if _postgres() else ["full", "full"])
    assert _state(lean.id, by_lean.run_id) == _state(full.id, by_full.run_id)
    assert done_lean is not None and done_full is not None
    assert (done_lean.status, done_lean.current_repeat, done_lean.current_retry, done_lean.next_run_at) == (
        done_full.status, done_full.current_repeat, done_full.current_retry, done_full.next_run_at)


def test_a_lean_retry_finishes_lean_as_the_full_finish_does(app: Flask, finishes: list[str]) -> None:
    """A retry's finish reads its tick's first attempt (the chain goes on from that tick): a read the lean finish
    sends after its locks, in the same transaction."""
    lean, full = (make_schedule(NOW, interval_seconds=60, max_retries=2) for _ in range(2))
    for schedule, by_lean in ((lean, True), (full, False)):
        assert _finish(_claimed(schedule), RunStatus.FAILED, "boom", lean=by_lean) is not None
        retry = _claimed(fresh(schedule.id))
        assert retry.trigger == "retry"
        _finish(retry, RunStatus.SUCCEEDED, lean=by_lean)
    assert finishes == (["lean", "lean", "full", "full"] if _postgres() else ["full"] * 4)
    assert _state(lean.id, retry.run_id)[:8] == _state(full.id, retry.run_id)[:8]


def _paused(schedule: Schedule, claimed: claim.Claim) -> None:
    _change(schedule.id, status="paused", revision=schedule.revision + 1)


def _counted_elsewhere(schedule: Schedule, claimed: claim.Claim) -> None:
    _change(schedule.id, run_count=5, error_count=2)


def _followed(schedule: Schedule, claimed: claim.Claim) -> None:
    make_schedule(NOW, name="follower", interval_seconds=86400, after={"schedule": schedule.id})


def _breaker(schedule: Schedule, claimed: claim.Claim) -> None:
    db.session.execute(update(Workflow).where(Workflow.id == schedule.workflow_id).values(breaker_threshold=3))
    db.session.commit()


def _written_off(schedule: Schedule, claimed: claim.Claim) -> None:
    assert finish.finish_run(claimed.run_id, RunStatus.FAILED, "worker_lost", NOW + timedelta(seconds=1)) is not None


@pytest.mark.parametrize(("change", "status", "expected"), [
    (_paused, RunStatus.SUCCEEDED, lambda s, r: (s.status, s.run_count) == ("paused", 1)),
    (_counted_elsewhere, RunStatus.FAILED, lambda s, r: (s.run_count, s.error_count) == (5, 3)),
    (_followed, RunStatus.SUCCEEDED, lambda s, r: db.session.scalars(
        select(FollowTrigger.upstream_run_id)).all() == [r.id]),
    (_breaker, RunStatus.FAILED, lambda s, r: db.session.scalar(
        select(Workflow.breaker_failures).where(Workflow.id == s.workflow_id)) == 1),
    (_written_off, RunStatus.SUCCEEDED, lambda s, r: (r.status, r.error, s.running_run_id) == (
        "failed", "worker_lost", None)),
], ids=["paused", "counted-elsewhere", "follower-added", "breaker-added", "written-off"])
def test_rows_changed_mid_run_make_the_lean_finish_write_nothing_and_the_full_finish_decide(
        app: Flask, finishes: list[str], change: Any, status: RunStatus, expected: Any) -> None:
    schedule = make_schedule(NOW, interval_seconds=60, max_retries=0)
    claimed = _claimed(schedule)
    change(schedule, claimed)
    finishes.clear()  # the change's own finish (written off) is not the one under test
    _finish(claimed, status, None if status is RunStatus.SUCCEEDED else "boom")
    assert finishes == (["lean", "full"] if _postgres() else ["full"])
    row = fresh(schedule.id)
    run = db.session.scalars(select(Run).where(Run.id == claimed.run_id)).one()
    assert expected(row, run), (row.status, row.run_count, row.error_count, run.status, run.error)


def test_a_change_committed_while_the_lean_finish_waits_for_the_row_is_not_overwritten(
        app: Flask, finishes: list[str]) -> None:
    """The schedule's row is locked by an edit (a pause) when the run ends: the lean finish waits for it, then finds
    the row of another version, writes nothing, and the full finish keeps the pause."""
    if not _postgres():
        pytest.skip("row locks: PostgreSQL")
    schedule = make_schedule(NOW, interval_seconds=60)
    claimed = _claimed(schedule)
    pause = text("UPDATE scheduled_jobs SET status = 'paused', revision = revision + 1 WHERE id = :id")
    done = behind_held_rows(app, lambda blocker: blocker.execute(pause, {"id": schedule.id}),
                            lambda: _finish(claimed, RunStatus.SUCCEEDED))
    assert finishes == ["lean", "full"] and len(done) == 1
    row = fresh(schedule.id)
    assert (row.status, row.run_count, row.running_run_id) == ("paused", 1, None)

