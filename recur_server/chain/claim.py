"""The claim: a link takes its tick in one database transaction guarded by compare-and-set (the fence),
and in the same transaction the policies decide whether it runs (catch-up, overlap, the workflow's
concurrency limit, its circuit breaker).

What it returns says what the caller hands off *after* the commit (commit, then enqueue).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recur_server import metrics, policies
from recur_server.chain import breaker as workflow_breaker
from recur_server.chain import concurrency, gaps, invalid, lean_claim, outcome, planning, rows, run_alerts
from recur_server.infra import clock, rawsql
from recur_server.infra.extensions import db
from recur_server.models import ConcurrencyPolicy, RunStatus, RunTrigger, Schedule
from recur_server.policies import CatchUp, Gap, OverlapPolicy
from recur_server.policies.catch_up import needs_decision
from recur_server.tasks import get_task

# A link later than this may find later ticks of its schedule come due (no two ticks are closer than a
# second): only then does catch-up decide, so an on-time link pays nothing for it.
LATE_CHECK_SECONDS = 0.25

# A tick whose task the worker that took it does not know is put off this long, each time until a worker that
# knows it takes it (a deploy of its module may take minutes; each look is one UPDATE).
TASK_WAIT_SECONDS = 2.0


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
    successor: Schedule | None = None
    to_stop: tuple[str, ...] = ()
    schedule_id: str | None = None
    snapshot: lean_claim.Snapshot | None = None  # claimed by the lean claim: what its finish plans from


@dataclass(frozen=True)
class Passed:
    """The tick was not run (recorded skipped or missed) and the chain moved on: hand off `schedule`."""

    schedule: Schedule | None
    outcome: str


@dataclass(frozen=True)
class Wait:
    """The tick may not start yet (its workflow is full, a run it buffers behind is going, or this worker does
    not know its task): nothing written; it looks again `seconds` later, under the next repeat number."""

    why: str
    seconds: float = concurrency.DEFER_SECONDS


def claim_tick(
    schedule_id: str, revision: int, repeat: int, retry: int, scheduled_for: datetime, now: datetime,
    worker: str | None, run_id: str | None = None,
) -> Claim | Passed | Wait | None:
    """Claim this tick for one run, or return None if the schedule no longer expects this link.

    One UPDATE ... WHERE is the compare-and-set: two copies of a link cannot both pass it. In the same
    transaction the policies are carried out: catch-up's choice of tick and its missed rows, overlap with
    a run outside the chain, the workflow's concurrency limit; a tick that is not run is Passed (recorded,
    the chain moved on) or told to Wait (nothing written). On PostgreSQL an on-time link of a schedule none of
    those policies needs Python for claims in one statement (recur_server.chain.lean_claim).
    """
    run_id = run_id or str(uuid.uuid4())
    rows.end_session_transaction()
    values = {
        "p_id": schedule_id, "p_revision": revision, "p_repeat": repeat, "p_retry": retry,
        "p_run_id": run_id, "p_now": now, "p_worker": worker,
    }
    lean = lean_claim.applies(schedule_id, scheduled_for, now, LATE_CHECK_SECONDS)
    if lean:  # one round trip; when it matches nothing, nothing was written and the full path below decides
        trigger = _trigger_of(retry, scheduled_for, None, None, None)  # no backlog and no catch-up: it matched none
        claimed = lean_claim.claim(values, scheduled_for, trigger)
        if claimed is not None:
            metrics.run_claimed(scheduled_for, now)
            task, snapshot = claimed
            row = snapshot.schedule()
            return Claim(run_id, task, row.name, row.trigger_payload, row.timeout_seconds, scheduled_for, trigger,
                         schedule_id=schedule_id, snapshot=snapshot)
    decided = _claim_full(values, schedule_id, retry, scheduled_for, now)
    if lean and decided is not None:
        lean_claim.went_full_path(schedule_id)
    return decided


def _claim_full(values: dict[str, Any], schedule_id: str, retry: int, scheduled_for: datetime,
                now: datetime) -> Claim | Passed | Wait | None:
    """The claim of any link, whatever its policies need: the lean claim's fallback, and every late link's."""
    run_id = values["p_run_id"]
    # Pipelined (PostgreSQL): the claim and the reads it usually needs go in one round trip, and the run's
    # INSERT with the COMMIT. The reads run after the claim's UPDATE, in its transaction: they see its row.
    with rawsql.transaction(db.engine, pipelined=True) as tx:  # commits at the end, rolls back on an exception
        sent = tx.send(rows.CLAIM, values)
        running = concurrency.send_running_check(tx, schedule_id)
        read = tx.send(rows.READ_CLAIMED, {"p_id": schedule_id}) if is_late(scheduled_for, retry, now) else None
        claimed = sent.first()
        if claimed is None or claimed[3] is None:  # fenced out, or its workflow is gone
            tx.rollback()
            return None
        (name, payload, timeout_seconds, task, overlap, run_through, backlog, workflow_id, limit, policy,
         breaker_threshold) = claimed
        if get_task(task) is None:  # not this worker's to run: it waits for one that knows the task, no retry spent
            tx.rollback()
            return Wait(f"waiting for a worker that knows task {task!r}", TASK_WAIT_SECONDS)
        catch_up: CatchUp | None = None
        row: Schedule | None = None
        if read is not None:  # late: later ticks may have come due; the row is ours until the commit
            row = rows.schedule_of(read.first())
            catch_up = catch_up_for(row, scheduled_for, now) if row is not None else None
        nominal = catch_up.run if catch_up is not None and catch_up.run is not None else scheduled_for
        values["p_scheduled_for"] = nominal
        if catch_up is not None and catch_up.run is None:  # catch-up runs none of the due ticks
            return _pass(tx, schedule_id, scheduled_for, now, catch_up.missed, "missed")
        detached = policies.is_detached(overlap)
        if not detached and running.first() is not None:  # a run outside the chain is going
            if policies.overlap.waits_for_running(overlap):
                tx.rollback()
                return Wait("a run of the schedule is going")
            return _pass(tx, schedule_id, nominal, now, [("overlap", Gap(nominal, nominal, 1))],
                         RunStatus.SKIPPED.value)
        if limit is not None:
            waits = policy != ConcurrencyPolicy.SKIP.value
            if concurrency.workflow_is_full(tx, workflow_id, limit, schedule_id, nominal, in_order=waits):
                if waits:
                    tx.rollback()
                    return Wait(f"its workflow has {limit} runs going")
                return _pass(tx, schedule_id, nominal, now, [("concurrency", Gap(nominal, nominal, 1))],
                             RunStatus.SKIPPED.value)
            # The slot is ours from here (the workflow's row is locked): the run starts now, not when the
            # link read the clock before waiting for the lock, so no run's recorded span overlaps the end of
            # the run whose slot it took.
            values["p_now"] = now = max(now, clock.utcnow())
        if breaker_threshold is not None:  # locks the workflow's row: one probe across every worker
            why = workflow_breaker.admit(tx, workflow_id, run_id, now)
            if why is not None:
                return _pass(tx, schedule_id, nominal, now, [("breaker", Gap(nominal, nominal, 1))],
                             RunStatus.SKIPPED.value)
        cancels = overlap == OverlapPolicy.CANCEL_OTHER
        to_stop = concurrency.cancel_others(tx, schedule_id, nominal, now) if cancels else []
        trigger = _trigger_of(retry, scheduled_for, run_through, backlog, catch_up)
        tx.execute(rows.RECORD_RUN, {**values, "p_trigger": trigger})
        run_alerts.after_claim(tx, row, schedule_id, run_id, nominal, now, trigger)
        if catch_up is not None:
            gaps.record_gaps(tx, schedule_id, catch_up.missed, now, RunTrigger.CATCH_UP.value)
            if catch_up.run_through is not None:
                tx.execute(rows.SAVE_BACKLOG, {"p_id": schedule_id, "p_run_through": catch_up.run_through,
                                               "p_backlog": RunTrigger.CATCH_UP.value})
        # overlap allow_all / cancel_other: the run leaves the chain as it starts; the chain's next tick is
        # planned now (a backlog tick, or the next one after now) and its link handed off after the commit.
        successor = _move_on(tx, schedule_id, nominal, now, [], keep_backlog=True) if detached else None
        if detached:  # its missed-run alert now waits on this tick until a run succeeds (recur_server.policies.alerts)
            tx.execute(run_alerts.MARK_DETACHED, {"p_id": schedule_id, "p_nominal": nominal})
        tx.after_commit.append(lambda: metrics.run_claimed(nominal, now))
    return Claim(run_id, task, name, payload, timeout_seconds, nominal, trigger, detached, successor, tuple(to_stop),
                 schedule_id)


def is_late(scheduled_for: datetime, retry: int, now: datetime) -> bool:
    """Whether a link is late enough that later ticks may have come due (retries are never caught up)."""
    return not retry and (now - scheduled_for).total_seconds() >= LATE_CHECK_SECONDS


def catch_up_for(schedule: Schedule, scheduled_for: datetime, now: datetime) -> CatchUp | None:
    """The catch_up policy's decision for a late link of this (locked) row, or None when it runs its own tick."""
    if schedule.run_through is not None and scheduled_for <= schedule.run_through:
        return None  # a tick of a backlog already decided: it runs
    try:
        spec = planning.spec_of(schedule)
    except Exception:  # an invalid timing: the finish path records that
        return None
    window = schedule.catch_up_window_seconds
    if not needs_decision(scheduled_for, spec.next_after(scheduled_for), now, window):
        return None
    limit = schedule.catch_up_limit or 1
    outside, inside = policies.split_at_window(spec.next_after, scheduled_for, now, window, keep=limit)
    return policies.decide_catch_up(outside, inside, schedule.catch_up, limit)


def _trigger_of(retry: int, scheduled_for: datetime, run_through: datetime | None, backlog: str | None,
                catch_up: CatchUp | None) -> str:
    if retry:
        return RunTrigger.RETRY.value
    if run_through is not None and scheduled_for <= run_through:
        return RunTrigger.CATCH_UP.value if backlog == RunTrigger.CATCH_UP.value else RunTrigger.SCHEDULE.value
    if catch_up is not None and catch_up.caught_up:
        return RunTrigger.CATCH_UP.value
    return RunTrigger.SCHEDULE.value


def _pass(tx: rawsql.Transaction, schedule_id: str, nominal: datetime, now: datetime,
          not_run: list[tuple[str, Gap]], result: str) -> Passed:
    """Inside a claim that won the fence: record the tick (and any gaps) as not run, move the chain on."""
    schedule = _move_on(tx, schedule_id, max(nominal, now), now, not_run, keep_backlog=False)
    assert schedule is not None  # the claim's UPDATE just matched it
    return Passed(schedule, result)


def _move_on(tx: rawsql.Transaction, schedule_id: str, after_nominal: datetime, now: datetime,
             not_run: list[tuple[str, Gap]], keep_backlog: bool) -> Schedule | None:
    """Inside a claim that won the fence: the chain goes on to its next tick after `after_nominal` (its
    row locked, written, and returned to hand off from); `not_run` and any ticks skipped on the way are
    recorded. A tick passed by ends its backlog; a detached run's keeps it (the next tick is its next)."""
    schedule = rows.load_locked(tx, schedule_id)
    if schedule is None:
        return None
    schedule.running_run_id = None
    schedule.updated_at = now
    if not keep_backlog:
        schedule.run_through = schedule.backlog = None
    later: list[tuple[str, Gap]] = []
    try:
        outcome.next_tick(schedule, after_nominal, now, later)
    except Exception as exc:
        invalid.invalidate(schedule, exc)
    gaps.record_gaps(tx, schedule_id, not_run + later, now)
    tx.execute(rows.SAVE_MOVED_ON, {"p_id": schedule.id, **rows.values_of(schedule, rows.CHAIN_COLUMNS)})
    return schedule
