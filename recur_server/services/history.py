"""What a schedule's recent run history adds up to (Temporal's describe): counts by trigger, status and reason
over its newest STATS_WINDOW rows, what runs now, what is buffered, and the most recent runs. Read-only, and
bounded whatever the history: each query reads at most a window of runs through an index. The whole
history's counters are the schedule's own (run_count, error_count), kept by the chain."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, literal_column, select

from recur_server.chain import planning
from recur_server.infra.extensions import db
from recur_server.models import Run, RunStatus, Schedule
from recur_server.policies import ticks_between

_NOT_RUN = (RunStatus.MISSED.value, RunStatus.SKIPPED.value)
STATS_WINDOW = 1_000  # the newest rows `stats` counts: a read of a thousand index entries at most


def stats(schedule: Schedule) -> dict[str, Any]:
    """Counts over the newest STATS_WINDOW rows (ix_runs_schedule_started read backwards); `running` over all
    of them through ix_runs_running (a handful of rows)."""
    newest = (select(Run.status, Run.trigger, Run.reason, Run.ticks).where(Run.schedule_id == schedule.id)
              .order_by(Run.started_at.desc(), Run.id.desc()).limit(STATS_WINDOW).subquery())
    rows = db.session.execute(
        select(newest.c.status, newest.c.trigger, newest.c.reason, func.count(), func.sum(newest.c.ticks))
        .group_by(newest.c.status, newest.c.trigger, newest.c.reason)
    ).all()
    by_trigger: dict[str, int] = {}
    by_status: dict[str, int] = {}
    missed: dict[str, int] = {}
    skipped: dict[str, int] = {}
    runs = 0
    for status, trigger, reason, count, ticks in rows:
        if status == RunStatus.MISSED.value:
            missed[reason or "unknown"] = missed.get(reason or "unknown", 0) + int(ticks or count)
        elif status == RunStatus.SKIPPED.value and reason is not None:
            skipped[reason] = skipped.get(reason, 0) + int(ticks or count)
        else:  # taken: it started (a skip recorded by an older release has no reason: counted here)
            runs += count
            by_trigger[trigger] = by_trigger.get(trigger, 0) + count
        by_status[status] = by_status.get(status, 0) + count
    counted = sum(by_status.values())
    return {
        "runs": runs, "runs_by_trigger": by_trigger, "runs_by_status": by_status, "ticks_missed": missed,
        "ticks_skipped": skipped, "running": _running(schedule), "buffered": _buffered(schedule),
        "window": STATS_WINDOW, "window_full": counted >= STATS_WINDOW,
    }


def _running(schedule: Schedule) -> int:
    """The schedule's runs running now, however old: the status is written inline so that SQLite reads the
    partial index ix_runs_running (a bound parameter cannot be matched to its WHERE)."""
    return int(db.session.scalar(select(func.count()).select_from(Run).where(
        Run.schedule_id == schedule.id, Run.status == literal_column(f"'{RunStatus.RUNNING.value}'"))) or 0)


def _buffered(schedule: Schedule) -> int:
    """Ticks of a backlog (catch_up=all, overlap=buffer_*) waiting to run: from next_run_at to run_through."""
    if schedule.run_through is None or schedule.next_run_at is None or schedule.next_run_at > schedule.run_through:
        return 0
    try:
        spec = planning.spec_of(schedule)
        return 1 + len(ticks_between(spec.next_after, schedule.next_run_at, schedule.run_through, limit=10_000))
    except Exception:  # a timing that no longer builds, or a backlog too long to count within a request
        return 0


def recent(schedule: Schedule, count: int = 10) -> list[Run]:
    return list(db.session.scalars(
        select(Run).where(Run.schedule_id == schedule.id).order_by(Run.started_at.desc(), Run.id.desc())
        .limit(count)))
