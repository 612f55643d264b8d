"""A pooled connection to a database server is checked before use; the chain's, unless it answered a moment ago.

SQLAlchemy's pre-ping sends a round trip on every checkout, so that after a server restart or a failover
a process reconnects instead of failing a request or a link on a dead connection. A link checks a
connection out twice, for its claim and for its finish, milliseconds apart: on a busy worker that was two
of its six round trips to PostgreSQL, for a connection that had just answered. As HikariCP does
(aliveBypassWindowMs, 500 ms by default), the chain's transactions (recur_server.infra.rawsql, inside
trusting_recent()) take a connection given back less than BYPASS_SECONDS ago unchecked. Every other
checkout, and one of a connection idle for longer, pings it with the dialect's own ping and, when that
shows it dead, replaces it (a DisconnectionError raised at checkout makes the pool discard it and connect
again): a request never meets a dead connection that a ping would have found.

A connection of the chain's that died within the window (a server restarted in less than that, a backend
terminated) fails its first statement as it would have failed a moment later: the error says the
database is away, the connection is discarded and every other one given back before it is pinged at its
next checkout (rawsql, found_dead), a finish is retried with its lease held, and a claim that could not be
made in the worker is made again by the link's own job.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError

BYPASS_SECONDS = 0.5
_GIVEN_BACK = "recur_given_back"  # the connection record's info key: time.monotonic() at its last checkin
_FRESH = "recur_fresh"  # set as the record connects, taken off at its first checkout
_TRUSTING = ContextVar("recur_pool_trusting_recent", default=False)
_last_dead = float("-inf")  # time.monotonic() when this process last found a pooled connection dead


@contextlib.contextmanager
def trusting_recent() -> Iterator[None]:
    """Checkouts inside take a connection given back less than BYPASS_SECONDS ago without a ping."""
    token = _TRUSTING.set(True)
    try:
        yield
    finally:
        _TRUSTING.reset(token)


def found_dead() -> None:
    """A connection turned out dead (the server restarted, or ended it): every connection given back before
    now is pinged at its next checkout, as SQLAlchemy invalidates a pool after a disconnect, so an outage
    costs the chain one failed statement a process, not one for each pooled connection."""
    global _last_dead
    _last_dead = time.monotonic()


def check_before_use(engine: Engine) -> None:
    """Install the check on `engine`'s pool (made without pool_pre_ping)."""
    dialect = engine.dialect

    def connected(_dbapi_connection: Any, record: Any) -> None:
        record.info[_FRESH] = True

    def given_back(_dbapi_connection: Any, record: Any) -> None:
        record.info[_GIVEN_BACK] = time.monotonic()

    def taken(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        given = record.info.pop(_GIVEN_BACK, None)
        if record.info.pop(_FRESH, False):  # connected for this checkout: it has just answered
            return
        if _TRUSTING.get() and given is not None and given > _last_dead and time.monotonic() - given < BYPASS_SECONDS:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                raise DisconnectionError(f"a pooled connection is dead: {exc}") from exc
            raise

    event.listen(engine, "connect", connected)
    event.listen(engine, "checkin", given_back)
    event.listen(engine, "checkout", taken)
