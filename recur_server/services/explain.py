"""Gathering the facts that answer "why did (or didn't) this schedule run at this time?" for
recur_server.policies.explain:
what the timing makes of the time, and a few rows around it from the run history, the audit trail and the
breaker's history. Each read is one bounded range of an index: the runs (schedule_id, started_at, id), the
audit trail (schedule_id, at, id), the breaker's transitions (workflow_id, at); never the whole history.

The caller hands in a schedule already scoped to its owner (recur_server.services.queries.owned_schedule).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import select

from recur_server import timing
from recur_server.auth.models import ScheduleEvent
from recur_server.chain import planning
from recur_server.infra.extensions import db
from recur_server.models import BreakerTransition, Run, Schedule, Workflow
from recur_server.policies.explain import (
    BreakerFact,
    Explanation,
    PauseFact,
    RunFact,
    ScheduleFacts,
    TickFacts,
    explain,
)
from recur_server.timing.nearest import nearest_tick, tick_at_or_after
from recur_server.timing.ruled_out import ruled_out

# How far back the nearest tick of the timing is looked for, and how many rows of each history are read.
HORIZON = timedelta(days=400)
RUNS_AFTER = 50  # runs recorded at or after the tick: its attempts, and a gap row written when it was passed
RUNS_BEFORE = 10  # runs started before it: the one that held a skipped tick
AUDIT_ROWS = 50
_PAUSING = ("pause", "resume", "create")
_TIMING = frozenset({"interval_seconds", "every", "cron", "rrule", "at", "after_seconds", "anchor_date", "timezone",
                     "day_or", "start_at", "end_at", "only_between", "not_on", "calendar_id", "on_calendar"})
_MS = timedelta(milliseconds=1)


def explain_at(schedule: Schedule, at: datetime, now: datetime) -> Explanation:
    """The answer for `at` (aware): the tick at it or the nearest one to it. Raises TimingError when the
    schedule's stored timing no longer builds (status invalid)."""
    spec = planning.spec_of(schedule)
    tick = tick_facts(spec, at)
    nominal = tick.nominal or at
    after, before = _runs_around(schedule.id, nominal)
    facts = ScheduleFacts(
        status=schedule.status, created_at=schedule.created_at, next_run_at=schedule.next_run_at,
        pause_note=schedule.pause_note, paused_at=schedule.paused_at,
        runs_kept_since=_kept_since(schedule, now), timing_changed_at=_timing_changed_after(schedule.id, nominal))
    answer = explain(tick, facts, after, before, _pause_at(schedule.id, nominal),
                     _breaker_at(schedule.workflow_id, nominal), now)
    db.session.rollback()
    return answer


def tick_facts(spec: timing.Spec, at: datetime) -> TickFacts:
    """The tick explained: `at` when the spec fires then; else the timing's nearest tick to it, with what
    passes over it if the spec does not keep it."""
    if tick_at_or_after(spec.next_after, at) == at:
        return TickFacts(at, at, next_tick=at)
    raw = nearest_tick(spec.timing.next_after, at, HORIZON)
    if raw is None:
        return TickFacts(at, None, next_tick=spec.next_after(at))
    passed = ruled_out(spec, raw)
    following = tick_at_or_after(spec.next_after, raw)
    if passed is None:
        return TickFacts(at, raw, next_tick=following)
    return TickFacts(at, raw, passed.reason, passed.moved_to, following)


def _fact(run: Run) -> RunFact:
    return RunFact(run.id, run.status, run.scheduled_for, run.started_at, run.finished_at, run.trigger,
                   run.repeat_number, run.retry_number, run.reason, run.ticks, run.error)


def _runs_around(schedule_id: str, nominal: datetime) -> tuple[list[RunFact], list[RunFact]]:
    mine = select(Run).where(Run.schedule_id == schedule_id)
    after = db.session.scalars(mine.where(Run.started_at >= nominal - _MS)
                               .order_by(Run.started_at, Run.id).limit(RUNS_AFTER)).all()
    before = db.session.scalars(mine.where(Run.started_at < nominal - _MS)
                                .order_by(Run.started_at.desc(), Run.id.desc()).limit(RUNS_BEFORE)).all()
    return [_fact(r) for r in after], [_fact(r) for r in before]


def _pause_at(schedule_id: str, nominal: datetime) -> PauseFact | None:
    """The newest pause, resume or create at or before the tick, within AUDIT_ROWS of it."""
    rows = db.session.scalars(
        select(ScheduleEvent).where((ScheduleEvent.schedule_id == schedule_id) & (ScheduleEvent.at <= nominal))
        .order_by(ScheduleEvent.at.desc(), ScheduleEvent.id.desc()).limit(AUDIT_ROWS)).all()
    for event in rows:
        if event.action in _PAUSING:
            note = (event.changes or {}).get("pause_note") if isinstance(event.changes, dict) else None
            return PauseFact(event.action == "pause", event.at, event.actor_name, note)
    return None


def _timing_changed_after(schedule_id: str, nominal: datetime) -> datetime | None:
    """When the timing was first edited after the tick (within AUDIT_ROWS of it), if it was."""
    rows = db.session.scalars(
        select(ScheduleEvent).where((ScheduleEvent.schedule_id == schedule_id) & (ScheduleEvent.at > nominal)
                                    & (ScheduleEvent.action == "update"))
        .order_by(ScheduleEvent.at, ScheduleEvent.id).limit(AUDIT_ROWS)).all()
    for event in rows:
        changes: Any = event.changes
        if isinstance(changes, dict) and _TIMING & set(changes):
            return event.at
    return None


def _breaker_at(workflow_id: int, nominal: datetime) -> BreakerFact | None:
    workflow = db.session.get(Workflow, workflow_id)
    if workflow is None or workflow.breaker_threshold is None:
        return None
    transitions = BreakerTransition
    row = db.session.scalars(
        select(transitions).where((transitions.workflow_id == workflow_id) & (transitions.at <= nominal))
        .order_by(transitions.at.desc(), transitions.id.desc()).limit(1)).first()
    return None if row is None else BreakerFact(row.to_state, row.at, row.reason)


def _kept_since(schedule: Schedule, now: datetime) -> datetime | None:
    days = schedule.keep_runs_days or int(current_app.config["RECUR_KEEP_RUNS_DAYS"])
    return now - timedelta(days=days) if days else None
