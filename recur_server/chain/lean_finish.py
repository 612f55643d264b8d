"""The lean finish (PostgreSQL): the finish of a run the lean claim took, in one round trip.

The full finish locks the run's row and the schedule's, reads the schedule, and only then, in Python, plans what
comes next: two round trips. The lean claim returned the schedule's row as it left it and that row's version
(PostgreSQL's xmin, which every write of the row changes, and a lock does not). The lean finish plans from that
snapshot and sends, in the one round trip that ends with the COMMIT: the run's outcome (compare-and-set on the
run, as the full finish's), the schedule's row locked if it is still that version, still names this run as
running, its workflow has no circuit breaker and nothing follows it, then what the plan writes. The two locks are
taken in the full finish's order, the run's row then the schedule's (docs/reliability.md, lock order).

When either lock finds its row not as expected, that statement divides by zero: the error aborts the transaction,
nothing is written, and the full finish decides from the rows as they are (the run finished by another, the
schedule edited, paused or deleted mid-run, a follower or breaker added).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, exists, func, literal, select, update
from sqlalchemy.exc import DBAPIError

from recur_server.chain import rows
from recur_server.infra import rawsql
from recur_server.models import RunStatus, UTCDateTime, Workflow

_S = rows.SCHEDULES.c
_W = Workflow.__table__.c
_R = rows.RUNS.c

_DIVISION_BY_ZERO = "22012"  # SQLSTATE: what the statements below raise when their row is not as expected


def _or_abort(cte: Any) -> rawsql.Statement:
    """A statement that returns 1 when the CTE matched one row, and raises (division by zero) otherwise."""
    return rawsql.Statement(select(literal(1) // select(func.count()).select_from(cte).scalar_subquery()))


FINISH = _or_abort(
    update(rows.RUNS)
    .where((_R.id == bindparam("p_run_id")) & (_R.status == RunStatus.RUNNING.value))
    .values(status=bindparam("p_status"), finished_at=bindparam("p_finished_at", type_=UTCDateTime()),
            error=bindparam("p_error"))
    .returning(_R.id)
    .cte("finished"))

LOCK_UNCHANGED = _or_abort(
    select(_S.id)
    .where((_S.id == bindparam("p_id")) & (_S.running_run_id == bindparam("p_run_id"))
           & (rows.row_version() == bindparam("p_version"))
           & ~exists().where((_W.id == _S.workflow_id) & _W.breaker_threshold.is_not(None))
           & ~rows.has_followers())
    .with_for_update(of=rows.SCHEDULES)
    .cte("unchanged"))


def send_locks(tx: rawsql.Transaction, run_id: str, status: RunStatus, error: str | None, now: datetime,
               schedule_id: str, version: str) -> None:
    """Send the run's outcome and the schedule's lock; their answers come with the COMMIT (or the first read)."""
    tx.send(FINISH, {"p_run_id": run_id, "p_status": status.value, "p_error": error, "p_finished_at": now})
    tx.send(LOCK_UNCHANGED, {"p_id": schedule_id, "p_run_id": run_id, "p_version": version})


def missed(exc: BaseException) -> bool:
    """Whether the lean finish failed because a row was not as its snapshot said (nothing was written)."""
    return isinstance(exc, DBAPIError) and getattr(exc.orig, "sqlstate", None) == _DIVISION_BY_ZERO
