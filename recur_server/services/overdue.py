"""Whether a schedule is overdue now (recur_server.policies.overdue), with the default grace this app is configured with
(RECUR_OVERDUE_AFTER_SECONDS): the one reading the API's answers and the console's pages share."""

from __future__ import annotations

from datetime import datetime

from flask import current_app

from recur_server.models import Schedule, ScheduleStatus
from recur_server.policies.overdue import grace_seconds
from recur_server.policies.overdue import overdue_seconds as past_grace


def overdue_seconds(schedule: Schedule, now: datetime) -> float | None:
    """How long past its next run the schedule is, when that is more than its grace; None: not overdue."""
    grace = grace_seconds(schedule.alert_after_seconds, current_app.config["RECUR_OVERDUE_AFTER_SECONDS"])
    return past_grace(schedule.status == ScheduleStatus.ACTIVE.value, schedule.next_run_at, grace, now)
