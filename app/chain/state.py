"""State transitions of a schedule, each one database transaction guarded by compare-and-set.

These are the only writers of a schedule's chain state (repeat, retry, counters, running run).
Each returns what the caller needs to hand off the next link *after* the commit (commit, then enqueue).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from app import clock, metrics, policies, rawsql
from app.auth import audit
from app.chain import breaker, collisions, invalid, late, notices, planning
from app.extensions import db
from app.models import (
    PAUSE_NOTE_MAX,
    ConcurrencyPolicy,
    OnExhausted,
    Run,
    RunStatus,
    RunTrigger,
    ScheduledJob,
    ScheduleStatus,
    UTCDateTime,
    Workflow,
)
from app.policies import CatchUp, CatchUpPolicy, Gap, OverlapPolicy


@dataclass(frozen=True)
class Claim:
    run_id: str
    task: str
    name: str
    payload: Any
    timeout_seconds: int
    nominal: datetime | None = None  # the tick this run stands for, when catch-up chose another than the link's
    trigger: str = RunTrigger.SCHEDULE.value
    # overlap allow_all / cancel_other: the run left the chain at its start, and its successor (this
    # snapshot) is handed off now; runs it cancelled are stopped by these RQ job IDs.
    detached: bool = False
    successor: ScheduledJob | None = None
    to_stop: tuple[str, ...] = ()
    schedule_id: str | None = None


@dataclass(frozen=True)
class Passed:
    """The tick was not run (recorded skipped or missed) and the chain moved on: hand off `schedule`."""

    schedule: ScheduledJob | None
    outcome: str


@dataclass(frozen=True)
class Wait:
    """The tick may not start yet (its workflow is full, or a run it buffers behind is going)."""

    why: str


# The hot path (claim, finish) runs Core statements, built once, each in its own short transaction on the
# database driver (app.rawsql), not through the ORM session: SQLAlchemy's machinery cost more per
# run than the rest of a link.
_SCHEDULES = ScheduledJob.__table__
_RUNS = Run.__table__


def end_session_transaction() -> None:
    """Transitions run in a transaction of their own: a read the caller left open on the ORM session
    would, on SQLite, hold the write lock that transaction waits for."""
    if db.session.registry.has() and db.session().in_transaction():
        db.session.rollback()


def _expects(schedule_id: Any, revision: Any, repeat: Any, retry: Any) -> Any:
    """The WHERE clause of the fence: active, same revision, same tick, nothing running."""
    columns = _SCHEDULES.c
    return (
        (columns.id == schedule_id)
        & (columns.status == ScheduleStatus.ACTIVE.value)
        & (columns.revision == revision)
        & (columns.current_repeat == repeat)
        & (columns.current_retry == retry)
        & (columns.running_run_id.is_(None))
    )


# The claim: the compare-and-set UPDATE hands back what the run needs (RETURNING), so a claim is one
# UPDATE, one INSERT and a commit.
_CLAIM = rawsql.Statement(
    update(_SCHEDULES)
    .where(_expects(bindparam("p_id"), bindparam("p_revision"), bindparam("p_repeat"), bindparam("p_retry")))
    .values(
        running_run_id=bindparam("p_run_id"),
        last_run_at=bindparam("p_now", type_=UTCDateTime()),
        updated_at=bindparam("p_now", type_=UTCDateTime()),
    )
    .returning(
        _SCHEDULES.c.name,
        _SCHEDULES.c.trigger_payload,
        _SCHEDULES.c.timeout_seconds,
        select(Workflow.task).where(Workflow.id == _SCHEDULES.c.workflow_id).scalar_subquery(),
        _SCHEDULES.c.overlap,
        _SCHEDULES.c.run_through,
        _SCHEDULES.c.backlog,
        _SCHEDULES.c.workflow_id,
        select(Workflow.max_concurrent_runs).where(Workflow.id == _SCHEDULES.c.workflow_id).scalar_subquery(),
        select(Workflow.concurrency_policy).where(Workflow.id == _SCHEDULES.c.workflow_id).scalar_subquery(),
        select(Workflow.breaker_threshold).where(Workflow.id == _SCHEDULES.c.workflow_id).scalar_subquery(),
    )
)
_RECORD_RUN = rawsql.Statement(insert(_RUNS).values(
    id=bindparam("p_run_id"), schedule_id=bindparam("p_id"), repeat_number=bindparam("p_repeat"),
    retry_number=bindparam("p_retry"), scheduled_for=bindparam("p_scheduled_for", type_=UTCDateTime()),
    started_at=bindparam("p_now", type_=UTCDateTime()), status=RunStatus.RUNNING.value,
    worker=bindparam("p_worker"), trigger=bindparam("p_trigger"),
))


def claim_tick(
    schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime, now: datetime,
    worker: str | None, run_id: str | None = None,
) -> Claim | Passed | Wait | None:
    """Claim this tick for one run, or return None if the schedule no longer expects this link.

    One UPDATE ... WHERE is the compare-and-set: two copies of a link cannot both pass it. In the same
    transaction the policies are carried out: catch-up's choice of tick and its missed rows, overlap with
    a run outside the chain, the workflow's concurrency limit; a tick that is not run is Passed (recorded,
    the chain moved on) or told to Wait (nothing written).
    """
    run_id = run_id or str(uuid.uuid4())
    end_session_transaction()
    values = {
        "p_id": schedule_id, "p_revision": revision, "p_repeat": repeat, "p_retry": retry,
        "p_run_id": run_id, "p_now": now, "p_worker": worker,
    }
    # Pipelined (PostgreSQL): the claim and the reads it usually needs go in one round trip, and the run's
    # INSERT with the COMMIT. The reads run after the claim's UPDATE, in its transaction: they see its row.
    with rawsql.transaction(db.engine, pipelined=True) as tx:  # commits at the end, rolls back on an exception
        sent = tx.send(_CLAIM, values)
        running = collisions.send_running_check(tx, schedule_id)
        is_late = late.is_late(scheduled_for, retry, now)
        read = tx.send(_READ_CLAIMED, {"p_id": schedule_id}) if is_late else None
        claimed = sent.first()
        if claimed is None or claimed[3] is None:  # fenced out, or its workflow is gone
            tx.rollback()
            return None
        (name, payload, timeout_seconds, task, overlap, run_through, backlog, workflow_id, limit, policy,
         breaker_threshold) = claimed
        catch_up: CatchUp | None = None
        if read is not None:  # late: later ticks may have come due; the row is ours until the commit
            row = _detached_row(read.first())
            catch_up = late.catch_up_for(row, scheduled_for, now) if row is not None else None
        nominal = catch_up.run if catch_up is not None and catch_up.run is not None else scheduled_for
        values["p_scheduled_for"] = nominal
        if catch_up is not None and catch_up.run is None:  # catch-up runs none of the due ticks
            return _pass(tx, schedule_id, scheduled_for, now, catch_up.missed, "missed")
        detached = policies.is_detached(overlap)
        if not detached and running.first() is not None:  # a run outside the chain is going
            if policies.overlap.waits_for_running(overlap):
                tx.rollback()
                return Wait("a run of the schedule is going")
            gap = [("overlap", Gap(nominal, nominal, 1))]
            return _pass(tx, schedule_id, nominal, now, gap, RunStatus.SKIPPED.value)
        if limit is not None:
            waits = policy != ConcurrencyPolicy.SKIP.value
            if collisions.workflow_is_full(tx, workflow_id, limit, schedule_id, nominal, in_order=waits):
                if waits:
                    tx.rollback()
                    return Wait(f"its workflow has {limit} runs going")
                gap = [("concurrency", Gap(nominal, nominal, 1))]
                return _pass(tx, schedule_id, nominal, now, gap, RunStatus.SKIPPED.value)
            # The slot is ours from here (the workflow's row is locked): the run starts now, not when the
            # link read the clock before waiting for the lock, so no run's recorded span overlaps the end of
            # the run whose slot it took.
            values["p_now"] = now = max(now, clock.utcnow())
        if breaker_threshold is not None:  # locks the workflow's row: one probe across every worker
            why = breaker.admit(tx, workflow_id, run_id, now)
            if why is not None:
                return _pass(tx, schedule_id, nominal, now, [("breaker", Gap(nominal, nominal, 1))],
                             RunStatus.SKIPPED.value)
        cancels = overlap == OverlapPolicy.CANCEL_OTHER
        to_stop = collisions.cancel_others(tx, schedule_id, nominal, now) if cancels else []
        trigger = _trigger_of(retry, scheduled_for, run_through, backlog, catch_up)
        tx.execute(_RECORD_RUN, {**values, "p_trigger": trigger})
        if catch_up is not None:
            collisions.record_gaps(tx, schedule_id, catch_up.missed, now, RunTrigger.CATCH_UP.value)
            if catch_up.run_through is not None:
                tx.execute(_SAVE_BACKLOG, {"p_id": schedule_id, "p_run_through": catch_up.run_through,
                                           "p_backlog": RunTrigger.CATCH_UP.value})
        successor = _detach(tx, schedule_id, nominal, now) if detached else None
        tx.after_commit.append(lambda: metrics.run_claimed(nominal, now))
    return Claim(run_id, task, name, payload, timeout_seconds, nominal, trigger, detached, successor, tuple(to_stop),
                 schedule_id)


def _trigger_of(retry: int, scheduled_for: datetime, run_through: datetime | None, backlog: str | None,
                catch_up: CatchUp | None) -> str:
    if retry:
        return RunTrigger.RETRY.value
    if run_through is not None and scheduled_for <= run_through:
        return RunTrigger.CATCH_UP.value if backlog == RunTrigger.CATCH_UP.value else RunTrigger.SCHEDULE.value
    if catch_up is not None and catch_up.caught_up:
        return RunTrigger.CATCH_UP.value
    return RunTrigger.SCHEDULE.value


_SAVE_BACKLOG = rawsql.Statement(
    update(_SCHEDULES).where(_SCHEDULES.c.id == bindparam("p_id"))
    .values(run_through=bindparam("p_run_through", type_=UTCDateTime()), backlog=bindparam("p_backlog"))
)


def _load_locked(tx: rawsql.Transaction, schedule_id: str) -> ScheduledJob | None:
    row = tx.first(_LOAD_SCHEDULE, {"p_id": schedule_id})
    return _locked_of(row)[0] if row is not None else None


def _locked_of(row: tuple[Any, ...]) -> tuple[ScheduledJob, bool]:
    """A row of _LOAD_SCHEDULE: the schedule, and whether its workflow has a circuit breaker (the last column)."""
    return _schedule_of(row[:-1]), row[-1] is not None


def _detached_row(row: tuple[Any, ...] | None) -> ScheduledJob | None:
    return _schedule_of(row) if row is not None else None


def _schedule_of(row: tuple[Any, ...]) -> ScheduledJob:
    return _detached(dict(zip(_SCHEDULE_COLUMNS, row, strict=True)))


def _save_moved_on(tx: rawsql.Transaction, schedule: ScheduledJob) -> None:
    values = {f"p_{name}": getattr(schedule, name) for name in _CHAIN_COLUMNS}
    tx.execute(_SAVE_MOVED_ON, {"p_id": schedule.id, **values})


def _pass(tx: rawsql.Transaction, schedule_id: str, nominal: datetime, now: datetime,
          gaps: list[tuple[str, Gap]], outcome: str) -> Passed:
    """Inside a claim that won the fence: record the tick (and any gaps) as not run, move the chain on."""
    schedule = _load_locked(tx, schedule_id)
    assert schedule is not None  # the claim's UPDATE just matched it
    later_gaps: list[tuple[str, Gap]] = []
    schedule.running_run_id = None
    schedule.current_repeat += 1
    schedule.current_retry = 0
    schedule.updated_at = now
    schedule.run_through = schedule.backlog = None
    try:
        _advance(schedule, max(nominal, now), now, later_gaps)
    except Exception as exc:
        invalid.invalidate(schedule, exc)
    collisions.record_gaps(tx, schedule_id, gaps + later_gaps, now)
    _save_moved_on(tx, schedule)
    return Passed(schedule, outcome)


def _detach(tx: rawsql.Transaction, schedule_id: str, nominal: datetime, now: datetime) -> ScheduledJob | None:
    """overlap allow_all / cancel_other: the run leaves the chain as it starts; the chain's next tick is
    planned now (a backlog tick, or the next one after now) and its link handed off after the commit."""
    schedule = _load_locked(tx, schedule_id)
    if schedule is None:
        return None
    schedule.running_run_id = None
    schedule.current_repeat += 1
    schedule.current_retry = 0
    schedule.updated_at = now
    gaps: list[tuple[str, Gap]] = []
    try:
        _advance(schedule, nominal, now, gaps)
    except Exception as exc:
        invalid.invalidate(schedule, exc)
    collisions.record_gaps(tx, schedule_id, gaps, now)
    _save_moved_on(tx, schedule)
    return schedule


# Compare-and-set on the run; hands back what the schedule's update needs.
_FINISH_RUN = rawsql.Statement(
    update(_RUNS)
    .where((_RUNS.c.id == bindparam("p_run_id")) & (_RUNS.c.status == RunStatus.RUNNING.value))
    .values(status=bindparam("p_status"), finished_at=bindparam("p_finished_at", type_=UTCDateTime()),
            error=bindparam("p_error"))
    .returning(_RUNS.c.schedule_id, _RUNS.c.scheduled_for, _RUNS.c.started_at, _RUNS.c.trigger)
)
# The locked read of a schedule brings its workflow's breaker setting along (the last column): whether a
# finish's outcome counts for a breaker costs no statement of its own. The row lock is the schedule's alone.
_LOAD_SCHEDULE = rawsql.Statement(
    select(_SCHEDULES, select(Workflow.breaker_threshold).where(Workflow.id == _SCHEDULES.c.workflow_id)
           .scalar_subquery().label("workflow_breaker_threshold"))
    .where(_SCHEDULES.c.id == bindparam("p_id")).with_for_update(of=_SCHEDULES)
)
# In a claim, after its UPDATE: the row is already locked by this transaction, and a read sees the update.
_READ_CLAIMED = rawsql.Statement(select(_SCHEDULES).where(_SCHEDULES.c.id == bindparam("p_id")))
# What finishing a run may change; written only while the row still names this run as running.
_CHAIN_COLUMNS = (
    "status", "current_repeat", "current_retry", "next_run_at", "run_count", "error_count", "last_error",
    "running_run_id", "updated_at", "run_through", "backlog",
)
_SAVE_CHAIN_STATE = rawsql.Statement(
    update(_SCHEDULES)
    .where((_SCHEDULES.c.id == bindparam("p_id")) & (_SCHEDULES.c.running_run_id == bindparam("p_run_id")))
    .values({name: bindparam(f"p_{name}", type_=_SCHEDULES.c[name].type) for name in _CHAIN_COLUMNS})
)
# A claim that passes its tick by, or detaches its run: it holds the row (the claim's UPDATE matched it).
_SAVE_MOVED_ON = rawsql.Statement(
    update(_SCHEDULES)
    .where(_SCHEDULES.c.id == bindparam("p_id"))
    .values({name: bindparam(f"p_{name}", type_=_SCHEDULES.c[name].type) for name in _CHAIN_COLUMNS})
)
# A run outside the chain ended: only the counters and what on_exhausted may change.
_OUTSIDE_COLUMNS = ("status", "next_run_at", "run_count", "error_count", "last_error", "updated_at")
_SAVE_OUTSIDE = rawsql.Statement(
    update(_SCHEDULES)
    .where(_SCHEDULES.c.id == bindparam("p_id"))
    .values({name: bindparam(f"p_{name}", type_=_SCHEDULES.c[name].type) for name in _OUTSIDE_COLUMNS})
)
# Only when on_exhausted=pause pauses the schedule: off the path of every other finish.
_SAVE_PAUSE = rawsql.Statement(
    update(_SCHEDULES)
    .where(_SCHEDULES.c.id == bindparam("p_id"))
    .values(pause_note=bindparam("p_pause_note"), paused_at=bindparam("p_paused_at", type_=UTCDateTime()))
)
# In warm_up's order: the INSERT, which the foreign key refuses, last.
_HOT_PATH = (_CLAIM, _FINISH_RUN, _LOAD_SCHEDULE, _SAVE_CHAIN_STATE, _RECORD_RUN)


_ANY_TIME = datetime(2000, 1, 1, tzinfo=UTC)


def warm_up() -> None:
    """Render the hot-path statements and run each once, in a transaction that changes nothing.

    A forking worker calls this before its first fork: every work horse then inherits the rendered
    statements instead of rendering them again. Each statement runs with parameters that match no row;
    the INSERT is refused by its foreign key, and the transaction is rolled back either way.
    """
    end_session_transaction()
    nobody = str(uuid.uuid4())  # no such schedule or run (and the width of the ID columns)
    values: dict[str, Any] = {f"p_{name}": None for name in _CHAIN_COLUMNS}
    values.update({
        "p_id": nobody, "p_revision": 0, "p_repeat": 0, "p_retry": 0, "p_run_id": nobody, "p_now": _ANY_TIME,
        "p_scheduled_for": _ANY_TIME, "p_worker": None, "p_status": RunStatus.SUCCEEDED.value,
        "p_finished_at": _ANY_TIME, "p_error": None, "p_trigger": RunTrigger.SCHEDULE.value,
    })
    with rawsql.transaction(db.engine) as tx:
        try:
            for statement in _HOT_PATH:
                tx.execute(statement, values)
        except IntegrityError:
            pass
        finally:
            tx.rollback()


_SCHEDULE_COLUMNS = _READ_CLAIMED.columns


def _detached(values: dict[str, Any]) -> ScheduledJob:
    """A schedule from a row's values, never added to the session: reading it after the commit costs no
    query (and opens no transaction). Filled as the ORM fills loaded rows, not through __init__, whose
    38 instrumented assignments cost 85 us against 5."""
    schedule: ScheduledJob = ScheduledJob.__mapper__.class_manager.new_instance()
    schedule.__dict__.update(values)
    return schedule


def finish_run(run_id: str, status: RunStatus, error: str | None, now: datetime,
               schedule_id: str | None = None) -> ScheduledJob | None:
    """Record the outcome of a claimed run and advance the schedule by the success/retry/skip rules.

    Compare-and-set on the run: only the first to finish a run (the link itself, the worker that saw
    its horse die, or the reconciler that found it lost) applies the outcome; the others get None.
    Returns the schedule as committed, detached from the session (a snapshot to hand off from).
    A caller that knows the run's schedule passes `schedule_id`: the run's UPDATE, the schedule's locked
    read (with its workflow's breaker setting) then go in one round trip (pipelined, on PostgreSQL), in the
    same order as one after another (the run's row, then the schedule's).
    """
    end_session_transaction()
    with rawsql.transaction(db.engine, pipelined=True) as tx:  # commits at the end, rolls back on an exception
        sent = tx.send(_FINISH_RUN, {
            "p_run_id": run_id, "p_status": status.value, "p_finished_at": now, "p_error": error,
        })
        known = schedule_id
        loaded = tx.send(_LOAD_SCHEDULE, {"p_id": known}) if known is not None else None
        finished = sent.first()
        if finished is None:
            tx.rollback()
            return None
        schedule_id, nominal, _started, trigger = finished
        tx.after_commit.append(lambda: metrics.run_finished(status.value, trigger, finished[2], now))
        if loaded is None or schedule_id != known:
            loaded = tx.send(_LOAD_SCHEDULE, {"p_id": schedule_id})
        row = loaded.first()
        if row is None:  # deleted: keep the run's record, touch nothing else
            return None
        schedule, has_breaker = _locked_of(row)
        before = schedule.status
        notices.after_run(tx, schedule, run_id, nominal, trigger, status, error, now, has_breaker)
        if schedule.running_run_id != run_id:
            # A run outside the chain (manual, backfill, a detached tick), or a chain run already written
            # off (whose record was finished first, so it never gets here).
            outside = _finish_outside(tx, schedule, status, error, trigger, now)
            notices.status_changed(tx, schedule, before, error, now)
            return outside
        paused = False
        gaps: list[tuple[str, Gap]] = []
        try:
            paused = _apply_outcome(schedule, status, error, nominal, now, gaps)
        except Exception as exc:  # its next tick cannot be planned: the run keeps its outcome, the chain stops
            invalid.invalidate(schedule, exc)
        values = {f"p_{name}": getattr(schedule, name) for name in _CHAIN_COLUMNS}
        tx.execute(_SAVE_CHAIN_STATE, {"p_id": schedule_id, "p_run_id": run_id, **values})
        if gaps:
            collisions.record_gaps(tx, schedule_id, gaps, now)
        if paused:
            _save_pause(tx, schedule, now)
        notices.status_changed(tx, schedule, before, error, now)
    return schedule


def _finish_outside(tx: rawsql.Transaction, schedule: ScheduledJob, status: RunStatus, error: str | None,
                    trigger: str, now: datetime) -> ScheduledJob | None:
    """The outcome of a run that does not hold the chain. A manual or backfill run changes nothing of its
    schedule (it does not count against total_repeats). A tick run detached by overlap allow_all or
    cancel_other counts as a tick does, and with no retry (the chain has moved on) a failure is the tick's
    last: on_exhausted decides. Returns the row only when it stopped (the caller then withdraws its link)."""
    if trigger in (RunTrigger.MANUAL.value, RunTrigger.BACKFILL.value):
        return None
    if schedule.status != ScheduleStatus.ACTIVE.value:
        return None
    schedule.updated_at = now
    paused = False
    if status is RunStatus.SUCCEEDED:
        schedule.run_count += 1
        schedule.last_error = None
        if schedule.total_repeats and schedule.run_count >= schedule.total_repeats:
            _finish(schedule, ScheduleStatus.DONE)
    elif status is not RunStatus.SKIPPED:
        schedule.error_count += 1
        schedule.last_error = error
        if schedule.on_exhausted != OnExhausted.CONTINUE.value:
            paused = _exhausted(schedule, error, schedule.next_run_at or now, now)
    values = {f"p_{name}": getattr(schedule, name) for name in _OUTSIDE_COLUMNS}
    tx.execute(_SAVE_OUTSIDE, {"p_id": schedule.id, **values})
    if paused:
        _save_pause(tx, schedule, now)
    return schedule if schedule.status != ScheduleStatus.ACTIVE.value else None


def _save_pause(tx: rawsql.Transaction, schedule: ScheduledJob, now: datetime) -> None:
    """Pause by on_exhausted: the note and time, and the event saying the system did it (same commit)."""
    tx.execute(_SAVE_PAUSE, {"p_id": schedule.id, "p_pause_note": schedule.pause_note, "p_paused_at": now})
    audit.record_system(tx, schedule.id, schedule.owner_id, "pause", now, {"pause_note": schedule.pause_note})


def _apply_outcome(schedule: ScheduledJob, status: RunStatus, error: str | None, nominal: datetime,
                   now: datetime, gaps: list[tuple[str, Gap]]) -> bool:
    """Advance the schedule (in memory) by the outcome; True when on_exhausted=pause paused it."""
    schedule.running_run_id = None
    schedule.updated_at = now
    if status is RunStatus.SKIPPED:
        # Another run of the schedule was still alive: this tick is consumed without running, and the
        # chain moves on to the next tick (current_repeat counts ticks; run_count counts successes).
        schedule.current_repeat += 1
        schedule.current_retry = 0
        _advance(schedule, nominal, now, gaps)
    elif status is RunStatus.SUCCEEDED:
        schedule.run_count += 1
        schedule.current_repeat += 1
        schedule.current_retry = 0
        schedule.last_error = None
        if schedule.total_repeats and schedule.run_count >= schedule.total_repeats:
            _finish(schedule, ScheduleStatus.DONE)
        else:
            _advance(schedule, nominal, now, gaps)
    else:
        schedule.error_count += 1
        schedule.last_error = error
        schedule.current_retry += 1
        if schedule.current_retry > schedule.max_retries:
            return _exhausted(schedule, error, nominal, now, gaps)
        if schedule.status == ScheduleStatus.ACTIVE.value:
            schedule.next_run_at = planning.retry_at(schedule, nominal, now)
    return False


def _exhausted(schedule: ScheduledJob, error: str | None, nominal: datetime, now: datetime,
               gaps: list[tuple[str, Gap]] | None = None) -> bool:
    """The tick failed with no retry left: the schedule's on_exhausted decides. True when it paused."""
    policy = schedule.on_exhausted
    if policy == OnExhausted.CONTINUE.value:
        # The tick is given up (its last run stays failed): on to the next tick, as a skipped one goes.
        schedule.current_repeat += 1
        schedule.current_retry = 0
        _advance(schedule, nominal, now, gaps if gaps is not None else [])
        return False
    if policy == OnExhausted.PAUSE.value:
        if schedule.status != ScheduleStatus.ACTIVE.value:  # paused by a caller meanwhile: their note stands
            schedule.next_run_at = None
            return False
        schedule.status = ScheduleStatus.PAUSED.value
        schedule.next_run_at = None
        schedule.pause_note = f"paused after retries ran out: {error or 'no error recorded'}"[:PAUSE_NOTE_MAX]
        schedule.paused_at = now
        return True
    _finish(schedule, ScheduleStatus.DEAD)
    return False


def _advance(schedule: ScheduledJob, after_nominal: datetime, now: datetime, gaps: list[tuple[str, Gap]]) -> None:
    """Plan the next tick; a paused schedule keeps no next time, a schedule with no more ticks is done.

    A backlog (catch_up=all, overlap=buffer_*) goes on to its next tick. Otherwise ticks that came due
    while the run was going are the overlap policy's: skipped (recorded in `gaps`) or buffered.
    """
    if schedule.status != ScheduleStatus.ACTIVE.value:
        schedule.next_run_at = None
        return
    spec = planning.spec_of(schedule)
    following = spec.next_after(after_nominal)
    if following is None:
        _finish(schedule, ScheduleStatus.DONE)
        return
    if schedule.run_through is not None and following <= schedule.run_through:
        schedule.next_run_at = following
        return
    # Ticks that came due while catch_up=all worked through a backlog are part of the catch-up.
    catching_up = schedule.backlog == RunTrigger.CATCH_UP.value and schedule.catch_up == CatchUpPolicy.ALL
    schedule.run_through = schedule.backlog = None
    if following > now:  # the common case: nothing came due meanwhile
        schedule.next_run_at = following
        return
    limit = schedule.catch_up_limit or 1
    passed = policies.due_ticks(spec.next_after, following, now, keep=limit)
    decision = policies.decide_after_run(passed, OverlapPolicy.BUFFER_ALL if catching_up else schedule.overlap, limit)
    gaps.extend(("catch_up_limit", gap) if catching_up else (reason, gap) for reason, gap in decision.skipped)
    if decision.next_tick is not None:
        schedule.next_run_at = decision.next_tick
        schedule.run_through = decision.run_through
        schedule.backlog = RunTrigger.CATCH_UP.value if catching_up else "buffer"
        return
    upcoming = spec.next_after(now)
    if upcoming is None:
        _finish(schedule, ScheduleStatus.DONE)
    else:
        schedule.next_run_at = upcoming


def _finish(schedule: ScheduledJob, status: ScheduleStatus) -> None:
    schedule.status = status.value
    schedule.next_run_at = None


def write_off(schedule_id: str, repeat: int, retry: int, reason: str, now: datetime,
              worker: str | None = None) -> ScheduledJob | None:
    """Fail the running attempt of tick (repeat, retry) because the process running it is gone; with
    `worker`, only if that worker claimed it (a copy of the link that lost the fence claimed nothing)."""
    schedule = db.session.get(ScheduledJob, schedule_id, populate_existing=True)
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
