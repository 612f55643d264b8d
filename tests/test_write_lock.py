"""On SQLite a transaction that waits for the write lock takes it once the holder lets go (in SQLite's own busy
handler, recur_server/infra/write_lock.py); a lock held past the timeout fails with "database is locked"; and
what background passes only read takes no write lock at all."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from flask import Flask
from sqlalchemy.exc import OperationalError

from recur_server.infra import write_lock
from recur_server.infra.extensions import db
from recur_server.infra.reads import read_alone
from recur_server.notify import alerts, delivery, long_runs, workers_gone
from recur_server.services import reconcile, retention
from recur_server.services.outside_runs import follow


@pytest.fixture
def sqlite_path(app: Flask) -> Iterator[str]:
    with app.app_context():
        if db.engine.dialect.name != "sqlite":
            pytest.skip("the write lock of a SQLite file")
        path = db.engine.url.database
        assert path
        db.session.execute(db.text("SELECT 1"))  # the schema is there, the file in WAL mode
        db.session.rollback()
        yield path


class Holder(threading.Thread):
    """Another connection holding the write lock for `seconds`, from the moment `holding` is set."""

    def __init__(self, path: str, seconds: float) -> None:
        super().__init__(daemon=True)
        self.path, self.seconds = path, seconds
        self.holding = threading.Event()
        self.releasing = self.released = 0.0  # just before the COMMIT that lets go, and once it has

    def run(self) -> None:
        connection = sqlite3.connect(self.path, isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            self.holding.set()
            time.sleep(self.seconds)
            self.releasing = time.monotonic()
            connection.execute("COMMIT")
            self.released = time.monotonic()
        finally:
            connection.close()


def _short_timeout(app: Flask, monkeypatch: pytest.MonkeyPatch, milliseconds: int) -> None:
    """Connections made from now on wait `milliseconds` for a busy database (the pool's are let go)."""
    monkeypatch.setattr(write_lock, "BUSY_TIMEOUT_MS", milliseconds)
    with app.app_context():
        db.engine.dispose()


def test_a_waiting_transaction_takes_the_lock_once_it_is_free(app: Flask, sqlite_path: str) -> None:
    holder = Holder(sqlite_path, 0.3)
    holder.start()
    assert holder.holding.wait(5)
    with app.app_context(), db.engine.connect() as connection:
        connection.begin()  # BEGIN IMMEDIATE, through the engine's own begin: waits in SQLite's busy handler
        taken = time.monotonic()
        connection.rollback()
    holder.join(5)
    assert holder.released, "the holder never let go"
    assert taken >= holder.releasing, "the lock was taken while another connection held it"


def test_a_lock_held_past_the_timeout_fails_as_locked(app: Flask, sqlite_path: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _short_timeout(app, monkeypatch, 200)
    holder = Holder(sqlite_path, 1.0)
    holder.start()
    assert holder.holding.wait(5)
    with app.app_context(), db.engine.connect() as connection:
        started = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"):
            connection.begin()
        assert time.monotonic() - started >= 0.2
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 200
    holder.join(5)


@pytest.fixture
def lock_held(app: Flask, sqlite_path: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Another connection holds the write lock throughout; a transaction that wants it gives up after 0.2 s."""
    _short_timeout(app, monkeypatch, 200)
    holder = Holder(sqlite_path, 3.0)
    holder.start()
    assert holder.holding.wait(5)
    yield
    holder.join(5)


def test_the_reads_of_background_passes_take_no_write_lock(app: Flask, lock_held: None) -> None:
    now = datetime.now(UTC)
    with app.app_context():
        assert list(reconcile._every_active()) == []
        assert list(reconcile._due_before(now + timedelta(hours=1))) == []
        settings = retention.retention_from(app.config)
        assert retention._prune_runs(now, settings, 500, 50, None, lambda: None) == (0, None, False)
        assert read_alone(lambda: db.session.execute(db.text("SELECT count(*) FROM runs")).scalar()) == 0


def test_a_transaction_after_a_read_alone_takes_the_write_lock(app: Flask, lock_held: None) -> None:
    with app.app_context():
        read_alone(lambda: db.session.execute(db.text("SELECT 1")).scalar())
        with pytest.raises(OperationalError, match="database is locked"):
            db.session.execute(db.text("SELECT 1"))
        db.session.rollback()


def test_the_reads_of_the_watch_and_followers_take_no_write_lock(app: Flask, lock_held: None) -> None:
    """What every process reads once a watch period (due webhooks), the watch's holder reads (late schedules,
    long runs, queues without a worker) and a worker reads each second (due followers) takes no write lock:
    only what it writes does, and with nothing to write here nothing waits for the lock another connection
    holds."""
    now = datetime.now(UTC)
    with app.app_context():
        assert alerts.check(now) == []
        assert long_runs.check(now) == []
        assert workers_gone.liveness(now).unserved == []
        assert workers_gone.check(now) == {"gone": [], "back": []}
        assert delivery.deliver_due(now) == 0
        assert follow.dispatch_due(now) == []  # each second, in one worker
