"""A run history of a given size behind a fixed set of schedules, written in bulk: the schedules' rows from
Python, each group's runs with one INSERT ... SELECT (generate_series on PostgreSQL, a recursive CTE on SQLite),
so no run row travels from Python. The history scenario (bench/history.py) builds a big one and a small one of
the same shape."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import insert, text

from bench.stack import ADMIN_OWNER_ID, RecurEnv
from recur_server.infra.extensions import db
from recur_server.models import Schedule, ScheduleStatus

# Each schedule's runs, one every `spacing` seconds, span about four weeks up to the end of the history.
SPAN_SECONDS = 28 * 86_400
FAILED_EVERY = 50  # one run in 50 failed (error_count counts them)
# Runs per INSERT at most: a group of schedules with the same count is inserted a few schedules at a time.
ROWS_PER_INSERT = 1_000_000


def schedule_id(index: int) -> str:
    return f"{index:08x}-0000-4000-8000-000000000000"


def run_id(index: int, number: int) -> str:
    """Run `number` (1 = the oldest) of schedule `index`: ids grow with both, so the bulk insert appends."""
    return f"{index:08x}-0000-4000-8000-{number:012x}"


@dataclass(frozen=True)
class Group:
    """Schedules first..last-1, each with `runs` runs every `spacing` seconds, the newest at the history's end."""

    first: int
    last: int
    runs: int

    @property
    def spacing(self) -> int:
        return max(1, SPAN_SECONDS // max(1, self.runs))

    def started(self, end: datetime, number: int) -> datetime:
        return end - timedelta(seconds=(self.runs - number) * self.spacing)


@dataclass(frozen=True)
class Shape:
    """`total` runs over `schedules` schedules, `big` of them behind schedule 0, `full` schedules (the last,
    which every list shows first: they were made at the same instant, and the newest id comes first) with
    `full_runs` each, the rest shared evenly."""

    total: int
    schedules: int
    big: int
    full: int = 0
    full_runs: int = 0

    def groups(self) -> list[Group]:
        rest, others = self.total - self.big - self.full * self.full_runs, self.schedules - 1 - self.full
        each, extra = divmod(rest, others)
        last = self.schedules - self.full
        groups = [Group(0, 1, self.big), Group(1, 1 + extra, each + 1), Group(1 + extra, last, each),
                  Group(last, self.schedules, self.full_runs)]
        return [group for group in groups if group.last > group.first]

    def prunable(self, end: datetime, cutoff: datetime, keep_min: int) -> int:
        """Runs a pruning pass with runs started before `cutoff` past retention, and each schedule's newest
        `keep_min` kept, deletes."""
        total = 0
        for group in self.groups():
            older = 0 if cutoff <= group.started(end, 1) else min(
                group.runs, math.ceil((cutoff - group.started(end, 1)).total_seconds() / group.spacing))
            total += (group.last - group.first) * max(0, min(older, group.runs - keep_min))
        return total


def insert_history(env: RecurEnv, workflow_id: int, shape: Shape, end: datetime) -> None:
    """The schedules (active, due next in 30 days, so none fires while the bench measures) and their runs."""
    now = end
    with env.context():
        for group in shape.groups():
            spacing = group.spacing
            anchor = group.started(end, group.runs)
            following = anchor + timedelta(seconds=spacing * math.ceil(30 * 86_400 / spacing))
            db.session.execute(insert(Schedule), [{
                "id": schedule_id(index), "name": f"history-{index}", "workflow_id": workflow_id,
                "owner_id": ADMIN_OWNER_ID, "interval_seconds": spacing, "anchor_at": anchor,
                "anchor_explicit": False, "timezone": "UTC", "day_or": True, "jitter_seconds": 0,
                "total_repeats": 0, "max_retries": 3, "timeout_seconds": 600, "trigger_payload": None,
                "status": ScheduleStatus.ACTIVE.value, "current_repeat": group.runs + 1, "current_retry": 0,
                "next_run_at": following, "run_count": group.runs - group.runs // FAILED_EVERY,
                "error_count": group.runs // FAILED_EVERY, "revision": 0, "created_at": now, "updated_at": now,
            } for index in range(group.first, group.last)])
            db.session.commit()
            if group.runs == 0:
                continue
            step = max(1, ROWS_PER_INSERT // group.runs)
            for first in range(group.first, group.last, step):
                _insert_runs(first, min(group.last, first + step), group, end)


def _insert_runs(first: int, last: int, group: Group, end: datetime) -> None:
    """Runs 1..group.runs of schedules first..last-1 in one statement, schedule by schedule."""
    if db.engine.dialect.name == "postgresql":
        source = ("generate_series(:first, :last - 1) AS s CROSS JOIN LATERAL "
                  "generate_series(1, :runs) AS n")
        moment = "(CAST(:end AS TIMESTAMP) - (:runs - n) * :spacing * INTERVAL '1 second')"
        schedule = "lpad(to_hex(s), 8, '0') || '-0000-4000-8000-000000000000'"
        ident = "lpad(to_hex(s), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(n), 12, '0')"
    else:
        # CROSS JOIN keeps SQLite's loops in this order (schedule outer): every index is appended to.
        source = ("(WITH RECURSIVE sched(s) AS (SELECT :first UNION ALL SELECT s + 1 FROM sched WHERE s < :last - 1) "
                  "SELECT s FROM sched) CROSS JOIN (WITH RECURSIVE numbers(n) AS (SELECT 1 UNION ALL "
                  "SELECT n + 1 FROM numbers WHERE n < :runs) SELECT n FROM numbers)")
        moment = "(strftime('%Y-%m-%d %H:%M:%S', :end, '-' || ((:runs - n) * :spacing) || ' seconds') || '.000000')"
        schedule = "printf('%08x-0000-4000-8000-000000000000', s)"
        ident = "printf('%08x-0000-4000-8000-%012x', s, n)"
    failed = f"n % {FAILED_EVERY} = 0"
    db.session.execute(text(
        "INSERT INTO runs (id, schedule_id, repeat_number, retry_number, scheduled_for, started_at, finished_at, "
        f"status, error, worker, trigger) SELECT {ident}, {schedule}, n, 0, {moment}, {moment}, {moment}, "
        f"CASE WHEN {failed} THEN 'failed' ELSE 'succeeded' END, "
        f"CASE WHEN {failed} THEN 'RuntimeError: the task failed' END, 'bench-history', 'schedule' "
        f"FROM {source}"),
        {"first": first, "last": last, "runs": group.runs, "spacing": group.spacing,
         "end": end.replace(tzinfo=None).isoformat(sep=" ", timespec="seconds")})
    db.session.commit()
