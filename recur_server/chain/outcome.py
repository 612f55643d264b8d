"""The outcome rules: how a run's outcome moves its schedule on, in memory (the caller writes the row).

Success counts and plans the next tick, a failure retries until max_retries and then on_exhausted decides,
a skipped tick is consumed; ticks that came due while the run was going are the overlap policy's.
"""

from __future__ import annotations

from datetime import datetime

from recur_server import policies
from recur_server.chain import planning
from recur_server.models import PAUSE_NOTE_MAX, OnExhausted, RunStatus, RunTrigger, Schedule, ScheduleStatus
from recur_server.policies import CatchUpPolicy, Gap, OverlapPolicy


def apply(schedule: Schedule, status: RunStatus, error: str | None, nominal: datetime,
          now: datetime, gaps: list[tuple[str, Gap]], tick: datetime | None = None) -> bool:
    """Advance the schedule (in memory) by the outcome; True when on_exhausted=pause paused it. `nominal` is
    the run's own time (a retry's: when it was due); `tick` the tick's (its first attempt's), from which the
    chain goes on: ticks that came due while the tick was retried are the overlap policy's."""
    tick = nominal if tick is None else tick
    schedule.running_run_id = None
    schedule.updated_at = now
    if status is RunStatus.SKIPPED:
        # Another run of the schedule was still alive: this tick is consumed without running, and the
        # chain moves on to the next tick (current_repeat counts ticks; run_count counts successes).
        next_tick(schedule, tick, now, gaps)
    elif status is RunStatus.SUCCEEDED:
        schedule.run_count += 1
        schedule.last_error = None
        if schedule.total_repeats and schedule.run_count >= schedule.total_repeats:
            schedule.current_repeat += 1
            schedule.current_retry = 0
            end(schedule, ScheduleStatus.DONE)
        else:
            next_tick(schedule, tick, now, gaps)
    else:
        schedule.error_count += 1
        schedule.last_error = error
        schedule.current_retry += 1
        if schedule.current_retry > schedule.max_retries:
            return exhausted(schedule, error, tick, now, gaps)
        if schedule.status == ScheduleStatus.ACTIVE.value:
            schedule.next_run_at = planning.retry_at(schedule, nominal, now)
    return False


def exhausted(schedule: Schedule, error: str | None, nominal: datetime, now: datetime,
              gaps: list[tuple[str, Gap]] | None = None) -> bool:
    """The tick failed with no retry left: the schedule's on_exhausted decides. True when it paused."""
    policy = schedule.on_exhausted
    if policy == OnExhausted.CONTINUE.value:
        # The tick is given up (its last run stays failed): on to the next tick, as a skipped one goes.
        next_tick(schedule, nominal, now, gaps if gaps is not None else [])
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
    end(schedule, ScheduleStatus.DEAD)
    return False


def next_tick(schedule: Schedule, after_nominal: datetime, now: datetime, gaps: list[tuple[str, Gap]]) -> None:
    """The tick is over (run, skipped or given up): the chain goes on to the next one."""
    schedule.current_repeat += 1
    schedule.current_retry = 0
    advance(schedule, after_nominal, now, gaps)


def advance(schedule: Schedule, after_nominal: datetime, now: datetime, gaps: list[tuple[str, Gap]]) -> None:
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
        end(schedule, ScheduleStatus.DONE)
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
        end(schedule, ScheduleStatus.DONE)
    else:
        schedule.next_run_at = upcoming


def end(schedule: Schedule, status: ScheduleStatus) -> None:
    """The chain stops: done or dead."""
    schedule.status = status.value
    schedule.next_run_at = None


def apply_outside(schedule: Schedule, status: RunStatus, error: str | None, now: datetime) -> bool:
    """The outcome of a tick run detached by overlap allow_all or cancel_other, in memory: it counts as a
    tick does, and with no retry (the chain has moved on) a failure is the tick's last: on_exhausted
    decides. True when it paused the schedule."""
    schedule.updated_at = now
    if status is RunStatus.SUCCEEDED:
        schedule.run_count += 1
        schedule.last_error = None
        if schedule.total_repeats and schedule.run_count >= schedule.total_repeats:
            end(schedule, ScheduleStatus.DONE)
    elif status is not RunStatus.SKIPPED:
        schedule.error_count += 1
        schedule.last_error = error
        if schedule.on_exhausted != OnExhausted.CONTINUE.value:
            return exhausted(schedule, error, schedule.next_run_at or now, now)
    return False
