"""The declarations sync's lock: workers starting together sync once, a held lock waits then gives up, and a
sync waiting for the lock holds no database transaction (on SQLite, the write lock its holder needs)."""

from __future__ import annotations

import sqlite3

import pytest

from harness.declaring import declare_both, no_declarations  # noqa: F401  (no_declarations: autouse here)
from recur_server.declarations import sync as sync_run
from recur_server.declarations.lock import SYNC_LOCK
from recur_server.declarations.sync import SyncError, sync
from recur_server.infra.extensions import db, get_redis


def test_workers_starting_together_sync_once_and_a_held_lock_waits(app, monkeypatch):
    declare_both()
    first = sync(app, once=True)
    assert first.plan is not None and first.plan.count("create") == 2
    later = sync(app, once=True)
    assert later.plan is None and "already" in later.skipped
    assert sync(app).plan is not None  # the command always plans
    get_redis().set(SYNC_LOCK, "someone else", px=60_000)
    monkeypatch.setattr(sync_run, "LOCK_WAIT_SECONDS", 0.3)
    with pytest.raises(SyncError, match="lock"):
        sync(app)
    assert get_redis().get(SYNC_LOCK) == b"someone else"  # not ours to release


def test_a_sync_waiting_for_the_lock_holds_no_transaction(app, monkeypatch):
    """Workers starting together: one syncs, the others wait for the lock. A waiter must hold no database
    transaction, which on SQLite (BEGIN IMMEDIATE) is the write lock the holder needs to sync: the two then
    waited on each other until SQLite's busy timeout (a clean-clone CI run: a worker that never started)."""
    declare_both()
    seen: list[tuple[bool, str]] = []
    real_acquire = sync_run.SyncLock.acquire

    def acquire_and_look(lock: sync_run.SyncLock, wait_seconds: float) -> bool:
        written = "not sqlite"
        if db.engine.dialect.name == "sqlite":  # what the holder would do meanwhile: take the write lock
            other = sqlite3.connect(db.engine.url.database, timeout=0.5, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                written = "written"
            except sqlite3.OperationalError as exc:
                written = str(exc)
            finally:
                other.close()
        seen.append((db.session().in_transaction(), written))
        return real_acquire(lock, wait_seconds)

    monkeypatch.setattr(sync_run.SyncLock, "acquire", acquire_and_look)
    outcome = sync(app, once=True)
    assert outcome.plan is not None and outcome.plan.count("create") == 2
    assert seen == [(False, "not sqlite" if db.engine.dialect.name != "sqlite" else "written")]
