"""What a run's finish tells the world, in its own transaction: the run's event, the schedule's change of
status, the end of a missed-run alert, the failure streak, and the outcome counted by the workflow's circuit
breaker."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, update

from recur_server.chain import breaker as workflow_breaker
from recur_server.chain import run_alerts
from recur_server.infra import rawsql
from recur_server.models import RunStatus, Schedule, ScheduleStatus, UTCDateTime
from recur_server.notify.events import payload
from recur_server.notify.outbox import EventType, emit

_RUN_EVENTS = {
    RunStatus.FAILED: EventType.RUN_FAILED, RunStatus.TIMED_OUT: EventType.RUN_TIMED_OUT,
    RunStatus.SUCCEEDED: EventType.RUN_SUCCEEDED,
}
_STATUS_EVENTS = {
    ScheduleStatus.DEAD.value: EventType.SCHEDULE_DEAD, ScheduleStatus.DONE.value: EventType.SCHEDULE_DONE,
    ScheduleStatus.PAUSED.value: EventType.SCHEDULE_PAUSED,
}
_SCHEDULES = Schedule.__table__
_RECOVERED = rawsql.Statement(
    update(_SCHEDULES).where((_SCHEDULES.c.id == bindparam("p_id")) & (_SCHEDULES.c.health == bindparam("p_late")))
    .values(health=bindparam("p_ok"), late_since=bindparam("p_none", type_=UTCDateTime()))
    .returning(_SCHEDULES.c.id))


def after_run(tx: rawsql.Transaction, schedule: Schedule, run_id: str, nominal: datetime, trigger: str | None,
              status: RunStatus, error: str | None, now: datetime, has_breaker: bool,
              triggered_by: str | None = None) -> None:
    """`has_breaker`: the workflow has a circuit breaker (read with the schedule's row by the finish);
    `triggered_by`: for a run of trigger `after`, the upstream run whose end triggered it."""
    event = _RUN_EVENTS.get(status)
    if event is None:  # skipped, cancelled: not a run that ran to an outcome
        return
    emit(tx, schedule.owner_id, event.value, payload(
        event, schedule_id=schedule.id, schedule_name=schedule.name, workflow_id=schedule.workflow_id, run_id=run_id,
        scheduled_for=nominal, finished_at=now, status=status.value, trigger=trigger, error=error,
        triggered_by_run_id=triggered_by), now)
    if has_breaker:
        workflow_breaker.record(tx, schedule.workflow_id, run_id, status is RunStatus.SUCCEEDED, now)
    ended = run_alerts.after_finish(tx, schedule, run_id, nominal, trigger, status, now)
    was: Any = None
    if status is RunStatus.SUCCEEDED and schedule.health == "late":
        was = tx.first(_RECOVERED, {"p_id": schedule.id, "p_late": "late", "p_ok": "ok", "p_none": None})
    if was is not None or ended:  # one event for the missed-run alert, the failing alert, or both, ended
        emit(tx, schedule.owner_id, EventType.SCHEDULE_RECOVERED.value, payload(
            EventType.SCHEDULE_RECOVERED, schedule_id=schedule.id, schedule_name=schedule.name, run_id=run_id,
            scheduled_for=nominal, late_since=schedule.late_since if was is not None else None,
            failing_since=ended.get("failing_since"), failures=ended.get("failures")), now)


def status_changed(tx: rawsql.Transaction, schedule: Schedule, before: str, error: str | None,
                   now: datetime) -> None:
    event = _STATUS_EVENTS.get(schedule.status) if schedule.status != before else None
    if event is not None:
        emit(tx, schedule.owner_id, event.value, payload(
            event, schedule_id=schedule.id, schedule_name=schedule.name, status=schedule.status, from_=before,
            last_error=error, pause_note=schedule.pause_note), now)
