"""The lean claim (PostgreSQL): an on-time link of a plain schedule takes its tick and records its run in one
statement, sent with the schedule's row lock and the COMMIT in one round trip.

A plain schedule is one whose link needs no decision in Python: its workflow has no concurrency limit and no
circuit breaker, and this worker knows its task; its overlap policy keeps runs in the chain (not allow_all or
cancel_other); no backlog is being run through; and no run of it outside the chain is going. The statement's
UPDATE carries all of that in its WHERE with the fence, and its run's INSERT takes its row from the UPDATE's
RETURNING: both happen or neither. When it matches nothing, nothing was written and the caller takes the full
path (recur_server.chain.claim), which finds out why. A late link (catch-up may decide), whose lateness the
caller knows, never comes here.

The row lock goes first, as its own statement: the claim's check for a run outside the chain then reads with a
snapshot taken once the lock is held, so it sees a run that a manual or backfill start (which locks the same
row) committed while this link waited, as the full path's separate read does.

What the claim's UPDATE returns is the row it left, with its version (PostgreSQL's xmin, which every write of
the row changes): the finish plans from that snapshot and writes in the same round trip as it locks, if the
row is still that version (recur_server.chain.lean_finish).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, any_, bindparam, exists, insert, literal, select, update
from sqlalchemy.dialects.postgresql import ARRAY

from recur_server.chain import rows
from recur_server.infra import clock, rawsql
from recur_server.infra.extensions import db
from recur_server.models import RunStatus, Schedule, UTCDateTime, Workflow
from recur_server.policies.overlap import DETACHED
from recur_server.tasks import task_names

# A schedule the lean claim missed but the full path claimed (its workflow has a limit or a breaker, say) goes
# the full path for this long in this process: such a link pays the lean round trip once a minute, not each time.
FULL_PATH_SECONDS = 60.0
_FULL_PATH_KEPT = 10_000  # schedules remembered at most; past it the memory starts again

_full_path: dict[str, float] = {}


@dataclass(frozen=True)
class Snapshot:
    """The schedule's row as the lean claim left it (every column, as rows.READ_CLAIMED reads them), its version,
    and what the claim decided: the run's tick, start and trigger."""

    row: tuple[Any, ...]
    version: str
    has_followers: bool
    nominal: datetime
    started: datetime
    trigger: str

    def schedule(self) -> Schedule:
        """A new detached copy each time: a finish changes it in memory, and a finish tried again starts over."""
        schedule = rows.schedule_of(self.row)
        assert schedule is not None
        return schedule

_S = rows.SCHEDULES.c
_W = Workflow.__table__.c
_RUNS = rows.RUNS

LOCK = rawsql.Statement(select(_S.id).where(_S.id == bindparam("p_id")).with_for_update())

_claimed = (
    update(rows.SCHEDULES)
    .where(
        rows.fence()
        & and_(*(_S.overlap != policy.value for policy in DETACHED))
        & (_S.run_through.is_(None) | (_S.run_through < bindparam("p_scheduled_for", type_=UTCDateTime())))
        & exists().where((_W.id == _S.workflow_id) & _W.max_concurrent_runs.is_(None) & _W.breaker_threshold.is_(None)
                         & (_W.task == any_(bindparam("p_tasks", type_=ARRAY(String)))))
        & ~exists().where((_RUNS.c.schedule_id == _S.id) & (_RUNS.c.status == RunStatus.RUNNING.value))
    )
    .values(running_run_id=bindparam("p_run_id"), last_run_at=bindparam("p_now", type_=UTCDateTime()),
            updated_at=bindparam("p_now", type_=UTCDateTime()), waiting_note=None)
    .returning(*rows.SCHEDULES.c,
               select(_W.task).where(_W.id == _S.workflow_id).scalar_subquery().label("task"),
               rows.has_followers().label("has_followers"),
               rows.row_version().label("version"))
    .cte("claimed")
)
_recorded = insert(_RUNS).from_select(
    ["id", "schedule_id", "repeat_number", "retry_number", "scheduled_for", "started_at", "status", "worker",
     "trigger"],
    select(bindparam("p_run_id", type_=String), bindparam("p_id", type_=String), bindparam("p_repeat"),
           bindparam("p_retry"), bindparam("p_scheduled_for", type_=UTCDateTime()),
           bindparam("p_now", type_=UTCDateTime()), literal(RunStatus.RUNNING.value),
           bindparam("p_worker", type_=String), bindparam("p_trigger", type_=String)).select_from(_claimed),
).cte("recorded")
CLAIM = rawsql.Statement(select(*_claimed.c).add_cte(_recorded))
_COLUMNS = len(rows.SCHEDULES.c)


def applies(schedule_id: str, scheduled_for: datetime, now: datetime, late_after: float) -> bool:
    """Whether this link tries the lean claim: PostgreSQL, on time (less than `late_after` late), and its schedule
    not sent the full path lately."""
    if db.engine.dialect.name != "postgresql" or (now - scheduled_for).total_seconds() >= late_after:
        return False
    until = _full_path.get(schedule_id)
    return until is None or until <= clock.monotonic()


def claim(values: dict[str, Any], scheduled_for: datetime, trigger: str) -> tuple[str, Snapshot] | None:
    """Claim the tick and record its run (committed), or change nothing: returns the run's task and the row as
    claimed, or None. `values`: the full claim's bound values (p_id, p_revision, p_repeat, p_retry, p_run_id,
    p_now, p_worker); `trigger`: the run's (schedule, or retry)."""
    with rawsql.transaction(db.engine, pipelined=True) as tx:
        tx.send(LOCK, values)
        claimed = tx.send(CLAIM, {**values, "p_scheduled_for": scheduled_for, "p_trigger": trigger,
                                  "p_tasks": task_names()})
        tx.commit()  # in the same round trip: the claim's rows are read once it is committed
        row = claimed.first()
    if row is None:
        return None
    task, has_followers, version = row[_COLUMNS:]
    return task, Snapshot(row[:_COLUMNS], version, bool(has_followers), scheduled_for, values["p_now"], trigger)


def went_full_path(schedule_id: str) -> None:
    """The lean claim missed a tick the full path then claimed, passed by or deferred: a policy needs Python."""
    if len(_full_path) >= _FULL_PATH_KEPT:
        _full_path.clear()
    _full_path[schedule_id] = clock.monotonic() + FULL_PATH_SECONDS
