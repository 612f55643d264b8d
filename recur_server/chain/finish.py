"""Finishing a run: record its outcome and move its schedule on, in one transaction guarded by
compare-and-set on the run; and the write-off of a run whose process is gone.

Returns the schedule as committed, for the caller to hand off its next link *after* the commit (commit,
then enqueue).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from recur_server import metrics
from recur_server.auth import audit
from recur_server.chain import finish_events, gaps, invalid, lean_claim, lean_finish, outcome, rows
from recur_server.chain import follow as followers
from recur_server.chain.capture import Captured
from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.models import Run, RunStatus, RunTrigger, Schedule, ScheduleStatus
from recur_server.policies import Gap

# The schedule locked, whether its workflow has a breaker and anything follows it, and the run's nominal tick,
# start, trigger and upstream run.
_Locked = tuple[Schedule, bool, bool, tuple[Any, ...]]


def finish_run(run_id: str, status: RunStatus, error: str | None, now: datetime,
               schedule_id: str | None = None, captured: Captured | None = None,
               snapshot: lean_claim.Snapshot | None = None) -> Schedule | None:
    """Record the outcome of a claimed run and advance the schedule by the success/retry/skip rules.

    Compare-and-set on the run: only the first to finish a run (the link itself, the worker that saw
    its horse die, or the reconciler that found it lost) applies the outcome; the others get None.
    Returns the schedule as committed, detached from the session (a snapshot to hand off from).
    A caller that knows the run's schedule passes `schedule_id`: the run's UPDATE, the schedule's locked
    read (with its workflow's breaker setting and whether any schedule follows it) then go in one round
    trip (pipelined, on PostgreSQL), in the same order as one after another (the run's row, then the
    schedule's). A run the lean claim took passes its `snapshot`: the finish then plans from it and reads
    nothing first (recur_server.chain.lean_finish), unless the rows are no longer as it says. What the task left
    behind (`captured`) is written in the same transaction, by the finish that wins the compare-and-set only.
    """
    rows.end_session_transaction()
    if snapshot is not None and not snapshot.has_followers:
        try:
            return _finish(run_id, status, error, now, schedule_id, captured, snapshot)
        except Exception as exc:
            if not lean_finish.missed(exc):
                raise
    return _finish(run_id, status, error, now, schedule_id, captured, None)


def _finish(run_id: str, status: RunStatus, error: str | None, now: datetime, schedule_id: str | None,
            captured: Captured | None, snapshot: lean_claim.Snapshot | None) -> Schedule | None:
    with rawsql.transaction(db.engine, pipelined=True) as tx:  # commits at the end, rolls back on an exception
        locked = _lock(tx, run_id, status, error, now, schedule_id, snapshot)
        if locked is None:
            return None
        schedule, has_breaker, has_followers, (nominal, started, trigger, triggered_by) = locked
        schedule_id = schedule.id
        if captured is not None:
            tx.send(rows.RECORD_OUTPUT, {"p_run_id": run_id, **{f"p_{k}": v for k, v in captured.as_dict().items()}})
        tx.after_commit.append(lambda: metrics.run_finished(status.value, trigger, started, now))
        before = schedule.status
        finish_events.after_run(tx, schedule, run_id, nominal, trigger, status, error, now, has_breaker,
                                triggered_by=triggered_by)
        followers.after_run(tx, schedule, run_id, trigger, status, now, has_followers)  # same commit
        if schedule.running_run_id != run_id:
            # A run outside the chain (manual, backfill, a detached tick), or a chain run already written
            # off (whose record was finished first, so it never gets here).
            outside = _finish_outside(tx, schedule, status, error, trigger, now)
            finish_events.status_changed(tx, schedule, before, error, now)
            return outside
        paused = False
        not_run: list[tuple[str, Gap]] = []
        tick = nominal
        if schedule.current_retry > 0:  # a retry: the tick itself came due at its first attempt's time
            first = tx.execute(rows.TICK_NOMINAL, {"p_id": schedule_id, "p_repeat": schedule.current_repeat})
            tick = first[0][0] if first else nominal
        try:
            paused = outcome.apply(schedule, status, error, nominal, now, not_run, tick=tick)
        except Exception as exc:  # its next tick cannot be planned: the run keeps its outcome, the chain stops
            invalid.invalidate(schedule, exc)
        tx.execute(rows.SAVE_CHAIN_STATE,
                   {"p_id": schedule_id, "p_run_id": run_id, **rows.values_of(schedule, rows.CHAIN_COLUMNS)})
        if not_run:
            gaps.record_gaps(tx, schedule_id, not_run, now)
        if paused:
            _save_pause(tx, schedule, now)
        finish_events.status_changed(tx, schedule, before, error, now)
    return schedule


def _lock(tx: rawsql.Transaction, run_id: str, status: RunStatus, error: str | None, now: datetime,
          schedule_id: str | None, snapshot: lean_claim.Snapshot | None) -> _Locked | None:
    """The run's outcome written (compare-and-set) and the schedule's row locked, in that order: the schedule as
    it is, whether its workflow has a breaker and anything follows it, and the run's tick, start, trigger and
    upstream run. None when the run was finished already, or its schedule is gone (nothing else to do)."""
    if snapshot is not None:  # lean: checked with the COMMIT, which the checks abort when the rows are not so
        schedule = snapshot.schedule()
        lean_finish.send_locks(tx, run_id, status, error, now, schedule.id, snapshot.version)
        return schedule, False, False, (snapshot.nominal, snapshot.started, snapshot.trigger, None)
    sent = tx.send(rows.FINISH_RUN, {"p_run_id": run_id, "p_status": status.value, "p_finished_at": now,
                                     "p_error": error})
    loaded = tx.send(rows.LOAD_FINISHING, {"p_id": schedule_id}) if schedule_id is not None else None
    finished = sent.first()
    if finished is None:
        tx.rollback()
        return None
    if loaded is None or finished[0] != schedule_id:
        loaded = tx.send(rows.LOAD_FINISHING, {"p_id": finished[0]})
    row = loaded.first()
    if row is None:  # deleted: keep the run's record, touch nothing else
        return None
    return (*rows.finishing_of(row), tuple(finished[1:]))


def _finish_outside(tx: rawsql.Transaction, schedule: Schedule, status: RunStatus, error: str | None,
                    trigger: str, now: datetime) -> Schedule | None:
    """The outcome of a run that does not hold the chain. A manual, backfill or triggered run changes nothing of its
    schedule (it does not count against total_repeats); a detached tick counts (outcome.apply_outside).
    Returns the row only when it stopped (the caller then withdraws its link)."""
    if trigger in (RunTrigger.MANUAL.value, RunTrigger.BACKFILL.value, RunTrigger.AFTER.value):
        return None
    if schedule.status != ScheduleStatus.ACTIVE.value:
        return None
    paused = outcome.apply_outside(schedule, status, error, now)
    tx.execute(rows.SAVE_OUTSIDE, {"p_id": schedule.id, **rows.values_of(schedule, rows.OUTSIDE_COLUMNS)})
    if paused:
        _save_pause(tx, schedule, now)
    return schedule if schedule.status != ScheduleStatus.ACTIVE.value else None


def _save_pause(tx: rawsql.Transaction, schedule: Schedule, now: datetime) -> None:
    """Pause by on_exhausted: the note and time, and the event saying the system did it (same commit)."""
    tx.execute(rows.SAVE_PAUSE, {"p_id": schedule.id, "p_pause_note": schedule.pause_note, "p_paused_at": now})
    audit.record_system(tx, schedule.id, schedule.owner_id, "pause", now, {"pause_note": schedule.pause_note})


def finished_as(run_id: str) -> tuple[str, str | None] | None:
    """A run's status and error as its row holds them (after a finish of it found it finished already), or None
    when the row is gone: its schedule was deleted, with its run history."""
    found = db.session.execute(select(Run.status, Run.error).where(Run.id == run_id)).first()
    db.session.rollback()
    return None if found is None else (found[0], found[1])


def write_off(schedule_id: str, repeat: int, retry: int, reason: str, now: datetime,
              worker: str | None = None) -> Schedule | None:
    """Fail the running attempt of tick (repeat, retry) because the process running it is gone; with
    `worker`, only if that worker claimed it (a copy of the link that lost the fence claimed nothing)."""
    schedule = db.session.get(Schedule, schedule_id, populate_existing=True)
    run_id = schedule.running_run_id if schedule else None
    db.session.rollback()
    if run_id is None:
        return None
    run = db.session.get(Run, run_id)
    matches = (run is not None and run.repeat_number == repeat and run.retry_number == retry
               and (worker is None or run.worker == worker))
    db.session.rollback()
    if not matches:
        return None
    return finish_run(run_id, RunStatus.FAILED, reason, now)
