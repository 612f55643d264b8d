"""Schedules whose stored timing no longer builds leave the chain as `invalid`, with the reason.

A timing accepted once can stop building later: tzdata drops or renames a zone, or an older version
wrote a value this one refuses. Planning such a row raises; its callers (finishing a run, the
reconciler) catch that here, so one bad row stops nothing else. A PATCH of the schedule's timing that
builds again makes it active (recur_server.services.schedules.update).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import CursorResult, update

from recur_server import timing
from recur_server.infra.extensions import db
from recur_server.models import Schedule, ScheduleStatus

log = logging.getLogger(__name__)


def reason(exc: BaseException) -> str:
    """What last_error says: the field and message for a TimingError, the exception's type otherwise."""
    what = str(exc) if isinstance(exc, timing.TimingError) else f"{type(exc).__name__}: {exc}"
    return f"invalid timing: {what}"[:2000]


def invalidate(schedule: Schedule, exc: BaseException) -> None:
    """Set a schedule whose next tick cannot be planned to invalid, in memory: the caller commits it."""
    schedule.status = ScheduleStatus.INVALID.value
    schedule.next_run_at = None
    schedule.last_error = reason(exc)
    log.warning("schedule %s is invalid now: %s", schedule.id, schedule.last_error)


def mark_invalid(schedule_id: str, revision: int, exc: BaseException, now: datetime) -> bool:
    """Commit `invalid` for an idle active schedule still at `revision` (one edited meanwhile, perhaps fixed,
    is left alone). The revision moves on, so a link planned before does nothing. True if it was marked."""
    columns = Schedule.__table__.c
    result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]
        update(Schedule.__table__)
        .where((columns.id == schedule_id) & (columns.status == ScheduleStatus.ACTIVE.value)
               & (columns.revision == revision) & columns.running_run_id.is_(None))
        .values(status=ScheduleStatus.INVALID.value, last_error=reason(exc), next_run_at=None,
                revision=columns.revision + 1, updated_at=now)
    )
    marked = result.rowcount
    db.session.commit()
    if marked:
        log.warning("schedule %s is invalid now: %s", schedule_id, reason(exc))
    return bool(marked)
