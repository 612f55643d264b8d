"""Pooled connections to PostgreSQL (recur_server.infra.pool_check), on the PostgreSQL pass's real server: each
checkout is checked with a ping, except the chain's of a connection given back a moment ago; a connection
whose server end died is replaced before a request uses it, and one the chain took unchecked fails as the
database being away and is discarded."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from harness.servers import wait_for
from recur_server.infra import pool_check, rawsql
from recur_server.infra.extensions import db

BACKEND_PID = rawsql.Statement(select(func.pg_backend_pid()))


@pytest.fixture
def engine(real_app: Any, database_url: str) -> Any:
    if database_url.startswith("sqlite"):
        pytest.skip("SQLite has no server to lose a connection to")
    return db.engine


def _pings(monkeypatch: pytest.MonkeyPatch, engine: Any) -> list[int]:
    """Every ping of a pooled connection from here on (SQLAlchemy's pre-ping calls the same do_ping)."""
    pings: list[int] = []
    ping = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> Any:
        pings.append(1)
        return ping(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return pings


def _terminate(database_url: str, pid: int) -> None:
    """End that backend from another connection, and wait until it is gone."""
    other = create_engine(database_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with other.connect() as connection:
            assert connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
            gone = text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid")
            wait_for(lambda: connection.execute(gone, {"pid": pid}).scalar() == 0, 10, what="the backend to end")
    finally:
        other.dispose()


def test_the_chain_takes_a_connection_given_back_a_moment_ago_without_a_ping(engine, monkeypatch):
    """A link's claim and finish check a connection out milliseconds apart: no ping for either (before: one
    each, SQLAlchemy's pre-ping on every checkout). Any other checkout, or one after the window, pings."""
    with rawsql.transaction(engine) as tx:
        tx.execute(BACKEND_PID)
    pings = _pings(monkeypatch, engine)
    for _ in range(5):
        with rawsql.transaction(engine, pipelined=True) as tx:
            tx.execute(BACKEND_PID)
    assert pings == []
    with engine.connect() as connection:  # a request's, the reconciler's: the ORM and Core
        connection.execute(text("SELECT 1"))
    assert len(pings) == 1
    time.sleep(pool_check.BYPASS_SECONDS + 0.1)
    with rawsql.transaction(engine) as tx:
        tx.execute(BACKEND_PID)
    assert len(pings) == 2


def test_a_dead_pooled_connection_is_replaced_before_a_request_uses_it(engine, database_url):
    with engine.connect() as connection:
        pid = connection.execute(text("SELECT pg_backend_pid()")).scalar()
    _terminate(database_url, pid)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT pg_backend_pid()")).scalar() not in (None, pid)


def test_a_dead_connection_the_chain_took_unchecked_fails_as_the_database_away_and_is_discarded(engine,
                                                                                               database_url):
    with rawsql.transaction(engine) as tx:
        [(pid,)] = tx.execute(BACKEND_PID)
    _terminate(database_url, pid)
    with pytest.raises(OperationalError) as raised, rawsql.transaction(engine) as tx:  # within the window
        tx.execute(BACKEND_PID)
    assert rawsql.unavailable(raised.value, engine)
    with rawsql.transaction(engine) as tx:
        [(new,)] = tx.execute(BACKEND_PID)
    assert new != pid


def test_after_one_dead_connection_the_chain_pings_the_rest_of_the_pool(engine, database_url):
    """A restart kills every pooled connection: the first the chain takes unchecked fails, and the others,
    given back before that, are pinged and replaced (before: each failed a link of its own in turn)."""
    with rawsql.transaction(engine) as first, rawsql.transaction(engine) as second:
        pids = [first.execute(BACKEND_PID)[0][0], second.execute(BACKEND_PID)[0][0]]
    for pid in pids:
        _terminate(database_url, pid)
    with pytest.raises(OperationalError), rawsql.transaction(engine) as tx:
        tx.execute(BACKEND_PID)
    for _ in range(2):
        with rawsql.transaction(engine) as tx:
            assert tx.execute(BACKEND_PID)[0][0] not in pids
