"""The dead man's switch: schedules whose expected tick has not succeeded within alert_after_seconds
become `late`, once, with one schedule.missed event; their next success (recur_server.chain.finish) makes them `ok`
again with schedule.recovered. Checked by whichever Recur process holds the watch lock (recur_server.notify.watch):
web processes included, so it fires when every worker is gone, Redis was emptied or a task hangs."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from flask import current_app
from sqlalchemy import select, text, update

from recur_server.infra.extensions import db
from recur_server.infra.reads import read_alone
from recur_server.models import ALERTED, Schedule, ScheduleStatus
from recur_server.notify.events import payload
from recur_server.notify.outbox import EventType, emit
from recur_server.policies.alerts import expected_tick, is_late

log = logging.getLogger(__name__)


# Candidates one check reads of each kind, the oldest expected tick first. Past it (a backlog of more than this
# many schedules past their tick), a schedule with a short grace may wait for those before it.
BATCH = 10_000


def check(now: datetime) -> list[str]:
    """Mark every late schedule; returns their ids. Reads only the candidates, those whose next_run_at or
    detached_since is past (ix_scheduled_jobs_due, ix_scheduled_jobs_detached), at most BATCH of each: a
    check costs what is overdue, not every schedule with an alert."""
    rows = read_alone(lambda: {row.id: row for column in (Schedule.next_run_at, Schedule.detached_since)
                               for row in db.session.execute(candidates(column, now)).all()})
    marked = []
    for schedule_id, next_run_at, detached_since, alert_after in rows.values():
        expected = expected_tick(next_run_at, detached_since)
        if not is_late(expected, alert_after, now):
            continue
        changed: Any = db.session.execute(
            update(Schedule)
            .where((Schedule.id == schedule_id) & (Schedule.health == "ok")
                   & _unchanged(Schedule.next_run_at, next_run_at) & _unchanged(Schedule.detached_since,
                                                                                    detached_since)
                   & (Schedule.status == ScheduleStatus.ACTIVE.value))
            .values(health="late", late_since=now)
        )
        if changed.rowcount == 1:
            schedule = db.session.get(Schedule, schedule_id)
            assert schedule is not None
            emit(db.session, schedule.owner_id, EventType.SCHEDULE_MISSED.value, payload(
                EventType.SCHEDULE_MISSED, schedule_id=schedule.id, schedule_name=schedule.name,
                expected_at=expected, alert_after_seconds=alert_after, status=schedule.status), now)
            marked.append(schedule_id)
            log.warning("schedule %s is late: its tick of %s has not succeeded within %ss", schedule_id,
                        expected, alert_after)
        db.session.commit()
        if changed.rowcount == 1:
            counted(EventType.SCHEDULE_MISSED.value)
    return marked


def candidates(column: Any, now: datetime) -> Any:
    """The schedules that may be late because `column` (next_run_at, detached_since) is past: one index range."""
    return (select(Schedule.id, Schedule.next_run_at, Schedule.detached_since, Schedule.alert_after_seconds)
            .where(text(ALERTED) & (column <= now)).order_by(column).limit(BATCH))


def counted(event_type: str) -> None:
    """Count an emitted alert in /metrics (recur_server.metrics puts its counter here when the app is made)."""
    count = current_app.extensions.get("recur.on_alert")
    if count is not None:
        count(event_type)


def _unchanged(column: Any, value: datetime | None) -> Any:
    """The column still holds what the check read (a compare-and-set on a nullable time)."""
    return column.is_(None) if value is None else column == value
