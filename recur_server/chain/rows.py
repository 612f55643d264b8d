"""The schedule and run rows as a link's claim and finish read and write them: the hot path's statements,
built once; a schedule row as a snapshot detached from the session; and warm_up.

The hot path (claim, finish) runs Core statements, built once, each in its own short transaction on the
database driver (recur_server.infra.rawsql), not through the ORM session: SQLAlchemy's machinery cost more per run than
the rest of a link.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Text, bindparam, cast, exists, insert, literal_column, select, update
from sqlalchemy.exc import IntegrityError

from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.models import Run, RunOutput, RunStatus, RunTrigger, Schedule, ScheduleStatus, UTCDateTime, Workflow

SCHEDULES = Schedule.__table__
RUNS = Run.__table__


def end_session_transaction() -> None:
    """Transitions run in a transaction of their own: a read the caller left open on the ORM session
    would, on SQLite, hold the write lock that transaction waits for."""
    if db.session.registry.has() and db.session().in_transaction():
        db.session.rollback()


def _expects(schedule_id: Any, revision: Any, repeat: Any, retry: Any) -> Any:
    """The WHERE clause of the fence: active, same revision, same tick, nothing running."""
    columns = SCHEDULES.c
    return (
        (columns.id == schedule_id)
        & (columns.status == ScheduleStatus.ACTIVE.value)
        & (columns.revision == revision)
        & (columns.current_repeat == repeat)
        & (columns.current_retry == retry)
        & (columns.running_run_id.is_(None))
    )


def fence() -> Any:
    """The fence on bound parameters p_id, p_revision, p_repeat, p_retry."""
    return _expects(bindparam("p_id"), bindparam("p_revision"), bindparam("p_repeat"), bindparam("p_retry"))


# The claim: the compare-and-set UPDATE hands back what the run needs (RETURNING), so a claim is one
# UPDATE, one INSERT and a commit.
CLAIM = rawsql.Statement(
    update(SCHEDULES)
    .where(fence())
    .values(
        running_run_id=bindparam("p_run_id"),
        last_run_at=bindparam("p_now", type_=UTCDateTime()),
        updated_at=bindparam("p_now", type_=UTCDateTime()),
        waiting_note=None,
    )
    .returning(
        SCHEDULES.c.name,
        SCHEDULES.c.trigger_payload,
        SCHEDULES.c.timeout_seconds,
        select(Workflow.task).where(Workflow.id == SCHEDULES.c.workflow_id).scalar_subquery(),
        SCHEDULES.c.overlap,
        SCHEDULES.c.run_through,
        SCHEDULES.c.backlog,
        SCHEDULES.c.workflow_id,
        select(Workflow.max_concurrent_runs).where(Workflow.id == SCHEDULES.c.workflow_id).scalar_subquery(),
        select(Workflow.concurrency_policy).where(Workflow.id == SCHEDULES.c.workflow_id).scalar_subquery(),
        select(Workflow.breaker_threshold).where(Workflow.id == SCHEDULES.c.workflow_id).scalar_subquery(),
    )
)
RECORD_RUN = rawsql.Statement(insert(RUNS).values(
    id=bindparam("p_run_id"), schedule_id=bindparam("p_id"), repeat_number=bindparam("p_repeat"),
    retry_number=bindparam("p_retry"), scheduled_for=bindparam("p_scheduled_for", type_=UTCDateTime()),
    started_at=bindparam("p_now", type_=UTCDateTime()), status=RunStatus.RUNNING.value,
    worker=bindparam("p_worker"), trigger=bindparam("p_trigger"),
))
SAVE_BACKLOG = rawsql.Statement(
    update(SCHEDULES).where(SCHEDULES.c.id == bindparam("p_id"))
    .values(run_through=bindparam("p_run_through", type_=UTCDateTime()), backlog=bindparam("p_backlog"))
)
# Compare-and-set on the run; hands back what the schedule's update needs.
FINISH_RUN = rawsql.Statement(
    update(RUNS)
    .where((RUNS.c.id == bindparam("p_run_id")) & (RUNS.c.status == RunStatus.RUNNING.value))
    .values(status=bindparam("p_status"), finished_at=bindparam("p_finished_at", type_=UTCDateTime()),
            error=bindparam("p_error"))
    .returning(RUNS.c.schedule_id, RUNS.c.scheduled_for, RUNS.c.started_at, RUNS.c.trigger,
               RUNS.c.triggered_by_run_id)
)
# A tick's own nominal time, from its first attempt (a retry's run is stamped with the retry's time): the
# chain goes on from it, so that the ticks that came due while the tick was retried are the overlap policy's.
TICK_NOMINAL = rawsql.Statement(
    select(RUNS.c.scheduled_for)
    .where((RUNS.c.schedule_id == bindparam("p_id")) & (RUNS.c.repeat_number == bindparam("p_repeat"))
           & (RUNS.c.retry_number == 0))
)
# What the task left behind, beside the run it finished (only when it left something).
RECORD_OUTPUT = rawsql.Statement(insert(RunOutput.__table__).values(
    run_id=bindparam("p_run_id"), traceback=bindparam("p_traceback"), output=bindparam("p_output"),
    logs=bindparam("p_logs"), result=bindparam("p_result"),
))
# The locked read of a schedule brings its workflow's breaker setting along (the last column): whether a
# finish's outcome counts for a breaker costs no statement of its own. The row lock is the schedule's alone.
LOAD_SCHEDULE = rawsql.Statement(
    select(SCHEDULES, select(Workflow.breaker_threshold).where(Workflow.id == SCHEDULES.c.workflow_id)
           .scalar_subquery().label("workflow_breaker_threshold"))
    .where(SCHEDULES.c.id == bindparam("p_id")).with_for_update(of=SCHEDULES)
)
# A finish's locked read: LOAD_SCHEDULE's, and whether any schedule follows this one (recur_server.chain.follow), so
# a finish of a schedule nothing follows reads no followers (the index on after_schedule_id answers it).
_FOLLOWER = SCHEDULES.alias("follower")


def has_followers() -> Any:
    """Whether any schedule follows the schedule of the row at hand."""
    return exists().where(_FOLLOWER.c.after_schedule_id == SCHEDULES.c.id)


def row_version() -> Any:
    """PostgreSQL's version of the row at hand (its xmin, as text): every write of the row changes it, a row lock
    does not. What the lean finish checks the lean claim's snapshot by (recur_server.chain.lean_finish)."""
    return cast(literal_column("xmin"), Text)


LOAD_FINISHING = rawsql.Statement(
    select(SCHEDULES, select(Workflow.breaker_threshold).where(Workflow.id == SCHEDULES.c.workflow_id)
           .scalar_subquery().label("workflow_breaker_threshold"),
           has_followers().label("has_followers"))
    .where(SCHEDULES.c.id == bindparam("p_id")).with_for_update(of=SCHEDULES)
)
# In a claim, after its UPDATE: the row is already locked by this transaction, and a read sees the update.
READ_CLAIMED = rawsql.Statement(select(SCHEDULES).where(SCHEDULES.c.id == bindparam("p_id")))
# What finishing a run may change; written only while the row still names this run as running.
CHAIN_COLUMNS = (
    "status", "current_repeat", "current_retry", "next_run_at", "run_count", "error_count", "last_error",
    "running_run_id", "updated_at", "run_through", "backlog",
)
SAVE_CHAIN_STATE = rawsql.Statement(
    update(SCHEDULES)
    .where((SCHEDULES.c.id == bindparam("p_id")) & (SCHEDULES.c.running_run_id == bindparam("p_run_id")))
    .values({name: bindparam(f"p_{name}", type_=SCHEDULES.c[name].type) for name in CHAIN_COLUMNS})
)
# A claim that passes its tick by, or detaches its run: it holds the row (the claim's UPDATE matched it).
SAVE_MOVED_ON = rawsql.Statement(
    update(SCHEDULES)
    .where(SCHEDULES.c.id == bindparam("p_id"))
    .values({name: bindparam(f"p_{name}", type_=SCHEDULES.c[name].type) for name in CHAIN_COLUMNS})
)
# A run outside the chain ended: only the counters and what on_exhausted may change.
OUTSIDE_COLUMNS = ("status", "next_run_at", "run_count", "error_count", "last_error", "updated_at")
SAVE_OUTSIDE = rawsql.Statement(
    update(SCHEDULES)
    .where(SCHEDULES.c.id == bindparam("p_id"))
    .values({name: bindparam(f"p_{name}", type_=SCHEDULES.c[name].type) for name in OUTSIDE_COLUMNS})
)
# Only when on_exhausted=pause pauses the schedule: off the path of every other finish.
SAVE_PAUSE = rawsql.Statement(
    update(SCHEDULES)
    .where(SCHEDULES.c.id == bindparam("p_id"))
    .values(pause_note=bindparam("p_pause_note"), paused_at=bindparam("p_paused_at", type_=UTCDateTime()))
)
# In warm_up's order: the INSERT, which the foreign key refuses, last.
HOT_PATH = (CLAIM, FINISH_RUN, LOAD_SCHEDULE, LOAD_FINISHING, SAVE_CHAIN_STATE, RECORD_RUN)

_SCHEDULE_COLUMNS = READ_CLAIMED.columns


def values_of(schedule: Schedule, columns: tuple[str, ...]) -> dict[str, Any]:
    """The bound values of a save statement for these columns, from the schedule as changed in memory."""
    return {f"p_{name}": getattr(schedule, name) for name in columns}


def schedule_of(row: tuple[Any, ...] | None) -> Schedule | None:
    """A schedule from a row of READ_CLAIMED (every column of the table), detached from the session."""
    return _detached(dict(zip(_SCHEDULE_COLUMNS, row, strict=True))) if row is not None else None


def locked_of(row: tuple[Any, ...]) -> tuple[Schedule, bool]:
    """A row of LOAD_SCHEDULE: the schedule, and whether its workflow has a circuit breaker (the last column)."""
    return _detached(dict(zip(_SCHEDULE_COLUMNS, row[:-1], strict=True))), row[-1] is not None


def finishing_of(row: tuple[Any, ...]) -> tuple[Schedule, bool, bool]:
    """A row of LOAD_FINISHING: the schedule, whether its workflow has a breaker, whether anything follows it."""
    schedule, has_breaker = locked_of(row[:-1])
    return schedule, has_breaker, bool(row[-1])


def load_locked(tx: rawsql.Transaction, schedule_id: str) -> Schedule | None:
    row = tx.first(LOAD_SCHEDULE, {"p_id": schedule_id})
    return locked_of(row)[0] if row is not None else None


def _detached(values: dict[str, Any]) -> Schedule:
    """A schedule from a row's values, never added to the session: reading it after the commit costs no
    query (and opens no transaction). Filled as the ORM fills loaded rows, not through __init__, whose
    38 instrumented assignments cost 85 us against 5."""
    schedule: Schedule = Schedule.__mapper__.class_manager.new_instance()
    schedule.__dict__.update(values)
    return schedule


_ANY_TIME = datetime(2000, 1, 1, tzinfo=UTC)


def warm_up() -> None:
    """Render the hot-path statements and run each once, in a transaction that changes nothing.

    A forking worker calls this before its first fork: every work horse then inherits the rendered
    statements instead of rendering them again. Each statement runs with parameters that match no row;
    the INSERT is refused by its foreign key, and the transaction is rolled back either way.
    """
    end_session_transaction()
    nobody = str(uuid.uuid4())  # no such schedule or run (and the width of the ID columns)
    values: dict[str, Any] = {f"p_{name}": None for name in CHAIN_COLUMNS}
    values.update({
        "p_id": nobody, "p_revision": 0, "p_repeat": 0, "p_retry": 0, "p_run_id": nobody, "p_now": _ANY_TIME,
        "p_scheduled_for": _ANY_TIME, "p_worker": None, "p_status": RunStatus.SUCCEEDED.value,
        "p_finished_at": _ANY_TIME, "p_error": None, "p_trigger": RunTrigger.SCHEDULE.value,
    })
    with rawsql.transaction(db.engine) as tx:
        try:
            for statement in HOT_PATH:
                tx.execute(statement, values)
        except IntegrityError:
            pass
        finally:
            tx.rollback()
