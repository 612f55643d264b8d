"""The chain's driver transactions, pipelined or not, on the suite's database (SQLite, or PostgreSQL in
the second pass, where `pipelined=True` is psycopg's pipeline mode): reads sent together come back
right, a statement that fails while queued fails the transaction, and nothing of it is written."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from flask import Flask
from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from recur_server.infra import rawsql
from recur_server.infra.extensions import db
from recur_server.models import Run, UTCDateTime, Workflow

_WORKFLOWS = Workflow.__table__
_NAME_OF = rawsql.Statement(select(_WORKFLOWS.c.name).where(_WORKFLOWS.c.id == bindparam("p_id")))
_RENAME = rawsql.Statement(
    update(_WORKFLOWS).where(_WORKFLOWS.c.id == bindparam("p_id")).values(name=bindparam("p_name")))
_RUN_WITHOUT_SCHEDULE = rawsql.Statement(insert(Run.__table__).values(
    id=bindparam("p_id"), schedule_id=bindparam("p_schedule_id"), repeat_number=bindparam("p_repeat"),
    retry_number=bindparam("p_repeat"), scheduled_for=bindparam("p_at", type_=UTCDateTime()),
    status=bindparam("p_status"),
))


def _workflows(count: int) -> list[int]:
    ids = []
    for number in range(count):
        workflow = Workflow(name=f"w{number}", task="builtin.noop", owner_id=1,
                            created_at=datetime(2026, 1, 1, tzinfo=UTC))
        db.session.add(workflow)
        db.session.flush()
        ids.append(workflow.id)
    db.session.commit()
    return ids


def _names(ids: list[int]) -> list[str]:
    db.session.rollback()
    names = [db.session.get(Workflow, workflow_id, populate_existing=True).name for workflow_id in ids]
    db.session.rollback()  # leave no read open behind (on SQLite it would hold off the next write)
    return names


@pytest.mark.parametrize("pipelined", [False, True])
def test_reads_sent_together_each_get_their_own_rows_and_see_the_writes_before_them(
        app: Flask, pipelined: bool) -> None:
    with app.app_context():
        ids = _workflows(3)
        with rawsql.transaction(db.engine, pipelined=pipelined) as tx:
            tx.execute(_RENAME, {"p_id": ids[0], "p_name": "renamed"})  # no rows: queued when pipelined
            sent = [tx.send(_NAME_OF, {"p_id": workflow_id}) for workflow_id in reversed(ids)]
            nobody = tx.send(_NAME_OF, {"p_id": -1})
            assert [pending.first() for pending in sent] == [("w2",), ("w1",), ("renamed",)]
            assert nobody.first() is None and nobody.rows() == []
            tx.execute(_RENAME, {"p_id": ids[1], "p_name": "also renamed"})  # goes with the COMMIT
        assert _names(ids) == ["renamed", "also renamed", "w2"]


@pytest.mark.parametrize("pipelined", [False, True])
def test_a_queued_statement_that_fails_fails_the_transaction_and_nothing_of_it_is_written(
        app: Flask, pipelined: bool) -> None:
    with app.app_context():
        ids = _workflows(1)
        ran_after_commit = []
        with pytest.raises(IntegrityError), rawsql.transaction(db.engine, pipelined=pipelined) as tx:
            tx.after_commit.append(lambda: ran_after_commit.append(True))
            tx.execute(_RENAME, {"p_id": ids[0], "p_name": "renamed"})
            tx.execute(_RUN_WITHOUT_SCHEDULE, {
                "p_id": "r1", "p_schedule_id": "no-such-schedule", "p_repeat": 0, "p_status": "running",
                "p_at": datetime(2026, 1, 1, tzinfo=UTC)})  # the foreign key
            tx.execute(_RENAME, {"p_id": ids[0], "p_name": "renamed again"})
        assert _names(ids) == ["w0"]
        assert ran_after_commit == []
        # The connection went back to the pool usable: the next transaction works.
        with rawsql.transaction(db.engine, pipelined=pipelined) as tx:
            tx.execute(_RENAME, {"p_id": ids[0], "p_name": "after"})
        assert _names(ids) == ["after"]


@pytest.mark.parametrize("pipelined", [False, True])
def test_rollback_in_the_block_writes_nothing_sent_before_it(app: Flask, pipelined: bool) -> None:
    with app.app_context():
        ids = _workflows(1)
        with rawsql.transaction(db.engine, pipelined=pipelined) as tx:
            tx.execute(_RENAME, {"p_id": ids[0], "p_name": "renamed"})
            assert tx.send(_NAME_OF, {"p_id": ids[0]}).first() == ("renamed",)
            tx.rollback()
        assert _names(ids) == ["w0"]
