"""On SQLite a transaction that waits for the write lock takes it as soon as the holder lets go, not after one
of SQLite's own backoff sleeps (recur_server/infra/write_lock.py); a lock held past the timeout still fails
with "database is locked", as before; and the pages a background pass reads take no write lock at all."""

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

# SQLite's own handler, with the lock let go after 130 ms, tries at 128 ms and then sleeps 50 ms: the waiter
# takes the lock 45-50 ms after its release. Trying every 2 ms takes it within a few ms of it; a loaded
# machine only adds to either, so the best of three tries is what is compared.
HOLD_SECONDS = 0.13
AFTER_RELEASE_SECONDS = 0.025


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
        self.released = 0.0

    def run(self) -> None:
        connection = sqlite3.connect(self.path, isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            self.holding.set()
            time.sleep(self.seconds)
            connection.execute("COMMIT")
            self.released = time.monotonic()
        finally:
            connection.close()


def _taken_after_release(app: Flask, path: str) -> float:
    holder = Holder(path, HOLD_SECONDS)
    holder.start()
    assert holder.holding.wait(5)
    with app.app_context(), db.engine.connect() as connection:
        connection.begin()  # BEGIN IMMEDIATE, through the engine's own begin
        taken = time.monotonic()
        connection.rollback()
    holder.join(5)
    assert holder.released, "the holder never let go"
    assert taken >= holder.released, "the lock was taken while another connection held it"
    return taken - holder.released


def test_a_waiting_transaction_takes_the_lock_as_soon_as_it_is_free(app: Flask, sqlite_path: str) -> None:
    after = min(_taken_after_release(app, sqlite_path) for _ in range(3))
    assert after < AFTER_RELEASE_SECONDS, f"taken {after * 1000:.0f} ms after the holder let go"


def test_a_lock_held_past_the_timeout_fails_as_locked(app: Flask, sqlite_path: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write_lock, "BUSY_TIMEOUT_MS", 200)
    holder = Holder(sqlite_path, 1.0)
    holder.start()
    assert holder.holding.wait(5)
    with app.app_context(), db.engine.connect() as connection:
        started = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"):
            connection.begin()
        assert time.monotonic() - started >= 0.2
        # SQLite's handler is on again for every other statement
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 200
    holder.join(5)


def test_only_a_busy_database_is_tried_again(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sent: list[str] = []

    def execute(sql: str) -> None:
        sent.append(sql)
        if sql == write_lock.BEGIN:
            raise sqlite3.OperationalError("disk I/O error")

    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        write_lock.begin_immediate(execute)
    assert sent == ["PRAGMA busy_timeout=0", write_lock.BEGIN, f"PRAGMA busy_timeout={write_lock.BUSY_TIMEOUT_MS}"]


@pytest.fixture
def lock_held(app: Flask, sqlite_path: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Another connection holds the write lock throughout; a transaction that wants it gives up after 0.2 s."""
    monkeypatch.setattr(write_lock, "BUSY_TIMEOUT_MS", 200)
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
