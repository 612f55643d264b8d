"""Runs that follow other runs, the finish's part: in the transaction that records a run's outcome, a
trigger row for each schedule that follows this one and wants this outcome (recur_server.policies.follow), and, for a
run that was itself triggered, its trigger closed or set up for its next attempt. The dispatcher
(recur_server.services.outside_runs.follow) enqueues what is pending; a trigger written here is never lost (it commits
with
the outcome) and never doubled (unique on follower and upstream run; the finish itself is a compare-and-set).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update

from recur_server.infra import rawsql
from recur_server.models import FollowTrigger, Run, RunStatus, RunTrigger, Schedule, UTCDateTime
from recur_server.policies import follow

# Followers one upstream schedule may have (recur_server.services.follow refuses more): a finish reads at most this
# many.
MAX_FOLLOWERS = 20

_SCHEDULES = Schedule.__table__
_TRIGGERS = FollowTrigger.__table__
_RUNS = Run.__table__

# rawsql renders no expanding IN: the two open states spelled out.
_OPEN = (_TRIGGERS.c.status == "pending") | (_TRIGGERS.c.status == "queued")
_FOLLOWERS = rawsql.Statement(
    select(_SCHEDULES.c.id, _SCHEDULES.c.status, _SCHEDULES.c.after_on, _SCHEDULES.c.after_delay_seconds,
           _SCHEDULES.c.after_within, _SCHEDULES.c.timezone)
    .where(_SCHEDULES.c.after_schedule_id == bindparam("p_id")).order_by(_SCHEDULES.c.id).limit(MAX_FOLLOWERS))
_INSERT_TRIGGER = rawsql.Statement(insert(_TRIGGERS).values(
    downstream_id=bindparam("p_downstream_id"), upstream_schedule_id=bindparam("p_upstream_schedule_id"),
    upstream_run_id=bindparam("p_upstream_run_id"), upstream_status=bindparam("p_upstream_status"),
    due_at=bindparam("p_due_at", type_=UTCDateTime()), status=bindparam("p_status"), attempt=0,
    run_id=bindparam("p_run_id"), reason=bindparam("p_reason"), created_at=bindparam("p_now", type_=UTCDateTime()),
))
_TRIGGER_OF_RUN = rawsql.Statement(
    select(_TRIGGERS.c.id, _TRIGGERS.c.attempt, _TRIGGERS.c.upstream_run_id)
    .where((_TRIGGERS.c.run_id == bindparam("p_run_id")) & (_OPEN)))
_RETRY_TRIGGER = rawsql.Statement(
    update(_TRIGGERS).where((_TRIGGERS.c.id == bindparam("p_id")) & (_TRIGGERS.c.run_id == bindparam("p_old_run_id")))
    .values(status="pending", attempt=bindparam("p_attempt"), run_id=bindparam("p_run_id"),
            due_at=bindparam("p_due_at", type_=UTCDateTime())))
END_TRIGGER = rawsql.Statement(
    update(_TRIGGERS).where((_TRIGGERS.c.id == bindparam("p_id")) & (_TRIGGERS.c.run_id == bindparam("p_run_id"))
                            & (_OPEN))
    .values(status=bindparam("p_status"), reason=bindparam("p_reason")))
INSERT_SKIPPED_RUN = rawsql.Statement(insert(_RUNS).values(
    id=bindparam("p_run_id"), schedule_id=bindparam("p_schedule_id"), repeat_number=None, retry_number=0,
    scheduled_for=bindparam("p_due_at", type_=UTCDateTime()), started_at=bindparam("p_now", type_=UTCDateTime()),
    finished_at=bindparam("p_now", type_=UTCDateTime()), status=RunStatus.SKIPPED.value,
    error=bindparam("p_error"), trigger=RunTrigger.AFTER.value, reason=bindparam("p_reason"), ticks=1,
    triggered_by_run_id=bindparam("p_upstream_run_id"),
))
UPSTREAM_OF_RUN = rawsql.Statement(
    select(_TRIGGERS.c.upstream_run_id).where(_TRIGGERS.c.run_id == bindparam("p_run_id")))

SKIP_TEXT = {
    "paused": "trigger skipped: the schedule was not active when its upstream run ended",
    "outside_window": "trigger skipped: its due time was outside the schedule's after.within window",
}


def follow_run_id(downstream_id: str, upstream_run_id: str, attempt: int) -> str:
    """The run a trigger starts, per attempt: the same whoever enqueues it, however often."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"recur-after:{downstream_id}:{upstream_run_id}:{attempt}"))


def after_run(tx: rawsql.Transaction, schedule: Schedule, run_id: str, trigger: str | None,
              status: RunStatus, now: datetime, has_followers: bool = True) -> None:
    """In the finish's transaction: close (or retry) this run's own trigger, then trigger its followers
    (`has_followers`: whether any schedule follows this one, read with its row; False reads none)."""
    if trigger == RunTrigger.AFTER.value:
        _end_or_retry(tx, schedule, run_id, status, now)
    if not has_followers or not follow.fires(follow.FollowOn.ENDED, status.value):
        return
    found = tx.execute(_FOLLOWERS, {"p_id": schedule.id})
    for follower_id, follower_status, on, delay, within, timezone in found:
        if not follow.fires(on, status.value):
            continue
        decision = follow.decide_trigger(now, delay, follower_status, within, timezone)
        values: dict[str, Any] = {
            "p_downstream_id": follower_id, "p_upstream_schedule_id": schedule.id, "p_upstream_run_id": run_id,
            "p_upstream_status": status.value, "p_due_at": decision.due_at, "p_now": now,
            "p_run_id": follow_run_id(follower_id, run_id, 0), "p_reason": decision.skipped_reason,
            "p_status": "pending" if decision.skipped_reason is None else "skipped",
        }
        tx.execute(_INSERT_TRIGGER, values)
        if decision.skipped_reason is not None:
            record_skipped(tx, follower_id, values["p_run_id"], run_id, decision.due_at, decision.skipped_reason, now)


def record_skipped(tx: rawsql.Transaction, follower_id: str, run_id: str, upstream_run_id: str, due_at: datetime,
                   reason: str, now: datetime) -> None:
    """The follower's history shows the trigger it did not run, as a skipped run naming the upstream run."""
    tx.execute(INSERT_SKIPPED_RUN, {
        "p_run_id": run_id, "p_schedule_id": follower_id, "p_due_at": due_at, "p_now": now,
        "p_error": SKIP_TEXT[reason], "p_reason": reason, "p_upstream_run_id": upstream_run_id,
    })


def _end_or_retry(tx: rawsql.Transaction, schedule: Schedule, run_id: str, status: RunStatus,
                  now: datetime) -> None:
    row = tx.first(_TRIGGER_OF_RUN, {"p_run_id": run_id})
    if row is None:
        return
    trigger_id, attempt, upstream_run_id = row
    again = None
    if status in (RunStatus.FAILED, RunStatus.TIMED_OUT):
        again = follow.retry_at(now, attempt, schedule.max_retries)
    if again is not None:
        tx.execute(_RETRY_TRIGGER, {
            "p_id": trigger_id, "p_old_run_id": run_id, "p_attempt": attempt + 1, "p_due_at": again,
            "p_run_id": follow_run_id(schedule.id, upstream_run_id, attempt + 1),
        })
        return
    tx.execute(END_TRIGGER, {"p_id": trigger_id, "p_run_id": run_id, "p_status": "done", "p_reason": status.value})
