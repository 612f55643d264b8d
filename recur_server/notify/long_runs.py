"""run.long: a run still going long_after_seconds after it started, once per run. Checked by whichever Recur
process holds the watch lock (recur_server.notify.watch), as the missed-run alert is; the run's long_alerted_at is set
by
a compare-and-set in the transaction that writes the event, so no host or process emits it twice."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select, text, update

from recur_server.infra.extensions import db
from recur_server.infra.reads import read_alone
from recur_server.models import Run, Schedule
from recur_server.notify.alerts import counted
from recur_server.notify.events import payload
from recur_server.notify.outbox import EventType, emit
from recur_server.policies.run_alerts import is_long

log = logging.getLogger(__name__)

# Runs going at once are a handful per worker; a pass reads at most this many (the rest wait for the next pass).
BATCH = 1000
# The partial index ix_runs_running's own condition, as text: a bound parameter would not match it on SQLite.
_RUNNING = text("runs.status = 'running'")


def check(now: datetime) -> list[str]:
    """Emit run.long for every run that became long; returns their ids."""
    found = read_alone(lambda: db.session.execute(
        select(Run.id, Run.started_at, Run.scheduled_for, Run.trigger, Schedule.id, Schedule.owner_id,
               Schedule.name, Schedule.long_after_seconds)
        .join(Schedule, Schedule.id == Run.schedule_id)
        .where(_RUNNING & Run.long_alerted_at.is_(None) & Schedule.long_after_seconds.is_not(None))
        .limit(BATCH)
    ).all())
    alerted = []
    for run_id, started_at, scheduled_for, trigger, schedule_id, owner_id, name, long_after in found:
        if not is_long(started_at, long_after, now):
            continue
        changed: Any = db.session.execute(
            update(Run).where((Run.id == run_id) & (Run.status == "running") & Run.long_alerted_at.is_(None))
            .values(long_alerted_at=now))
        if changed.rowcount == 1:
            emit(db.session, owner_id, EventType.RUN_LONG.value, payload(
                EventType.RUN_LONG, schedule_id=schedule_id, schedule_name=name, run_id=run_id,
                scheduled_for=scheduled_for, started_at=started_at, running_seconds=(now - started_at).total_seconds(),
                long_after_seconds=long_after, trigger=trigger), now)
            alerted.append(run_id)
            log.warning("run %s of schedule %s has been going longer than %ss", run_id, schedule_id, long_after)
        db.session.commit()
        if changed.rowcount == 1:
            counted(EventType.RUN_LONG.value)
    return alerted
