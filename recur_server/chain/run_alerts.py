"""What a claim and a finish record for the alerts on runs (recur_server.policies.run_alerts,
recur_server.policies.alerts), in
their own transactions: run.late at the claim that starts a run late, the failure streak and schedule.failing at
a finish, the end of either alert (schedule.recovered), and the tick an allow_all or cancel_other schedule's
missed-run alert waits on. Each alert is recorded on its row in the transaction that emits its event, by a
compare-and-set, so no host or process sends it twice."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, update

from recur_server import metrics
from recur_server.chain import rows
from recur_server.infra import rawsql
from recur_server.models import Run, RunStatus, Schedule, UTCDateTime
from recur_server.notify.events import payload
from recur_server.notify.outbox import EventType, emit
from recur_server.policies import run_alerts
from recur_server.policies.run_alerts import Streak

_SCHEDULES = Schedule.__table__
_RUNS = Run.__table__
# The least late_after_seconds the API takes: a run started within it of its tick needs no look at the row.
LEAST_LATE_AFTER = 1

# A detached run's tick, unless an older one is already waited on.
MARK_DETACHED = rawsql.Statement(
    update(_SCHEDULES).where((_SCHEDULES.c.id == bindparam("p_id")) & _SCHEDULES.c.detached_since.is_(None))
    .values(detached_since=bindparam("p_nominal", type_=UTCDateTime())))
_MARK_LATE = rawsql.Statement(
    update(_RUNS).where((_RUNS.c.id == bindparam("p_run_id")) & _RUNS.c.late_alerted_at.is_(None))
    .values(late_alerted_at=bindparam("p_at", type_=UTCDateTime())).returning(_RUNS.c.id))
_SAVE_STREAK = rawsql.Statement(
    update(_SCHEDULES).where((_SCHEDULES.c.id == bindparam("p_id"))
                             & (_SCHEDULES.c.failing_streak == bindparam("p_was")))
    .values(failing_streak=bindparam("p_failures"), failing_since=bindparam("p_since", type_=UTCDateTime()))
    .returning(_SCHEDULES.c.id))
_SETTLED = rawsql.Statement(
    update(_SCHEDULES).where((_SCHEDULES.c.id == bindparam("p_id"))
                             & (_SCHEDULES.c.detached_since <= bindparam("p_nominal", type_=UTCDateTime())))
    .values(detached_since=bindparam("p_none", type_=UTCDateTime())))


def after_claim(tx: rawsql.Transaction, schedule: Schedule | None, schedule_id: str, run_id: str,
                nominal: datetime, started: datetime, trigger: str) -> None:
    """In the claim that recorded run `run_id`: run.late if it started late enough. `schedule`: the row, when the
    claim read it already; a run within LEAST_LATE_AFTER of its tick costs nothing more."""
    if run_alerts.lateness_seconds(nominal, started) <= LEAST_LATE_AFTER or trigger not in run_alerts.TICK_TRIGGERS:
        return
    if schedule is None:
        schedule = rows.schedule_of(tx.first(rows.READ_CLAIMED, {"p_id": schedule_id}))
    if schedule is None or not run_alerts.is_late_start(nominal, started, schedule.late_after_seconds, trigger):
        return
    if tx.first(_MARK_LATE, {"p_run_id": run_id, "p_at": started}) is None:
        return
    emit(tx, schedule.owner_id, EventType.RUN_LATE.value, payload(
        EventType.RUN_LATE, schedule_id=schedule.id, schedule_name=schedule.name, run_id=run_id, scheduled_for=nominal,
        started_at=started, late_seconds=run_alerts.lateness_seconds(nominal, started),
        late_after_seconds=schedule.late_after_seconds, trigger=trigger), started)
    tx.after_commit.append(functools.partial(metrics.alerted, EventType.RUN_LATE.value))


def after_finish(tx: rawsql.Transaction, schedule: Schedule, run_id: str, nominal: datetime, trigger: str | None,
                 status: RunStatus, now: datetime) -> dict[str, Any]:
    """In a finish, with the schedule's row locked: the failure streak moves (schedule.failing when it reaches
    failing_after), and a success settles a detached tick. Returns what a success ended, for schedule.recovered:
    {"failing_since", "failures"} or {}."""
    if (status is RunStatus.SUCCEEDED and schedule.detached_since is not None
            and (trigger or "schedule") in run_alerts.TICK_TRIGGERS):
        tx.execute(_SETTLED, {"p_id": schedule.id, "p_nominal": nominal, "p_none": None})
    was = Streak(schedule.failing_streak or 0, schedule.failing_since)
    step = run_alerts.record_outcome(was, schedule.failing_after, status.value, now)
    if step.streak == was:
        return {}
    saved = tx.first(_SAVE_STREAK, {"p_id": schedule.id, "p_was": was.failures, "p_failures": step.streak.failures,
                                    "p_since": step.streak.failing_since})
    if saved is None:
        return {}
    if step.failing:
        emit(tx, schedule.owner_id, EventType.SCHEDULE_FAILING.value, payload(
            EventType.SCHEDULE_FAILING, schedule_id=schedule.id, schedule_name=schedule.name, run_id=run_id,
            scheduled_for=nominal, failures=step.streak.failures, failing_after=schedule.failing_after,
            status=status.value), now)
        tx.after_commit.append(functools.partial(metrics.alerted, EventType.SCHEDULE_FAILING.value))
    if step.recovered:
        return {"failing_since": was.failing_since, "failures": was.failures}
    return {}
