"""Waiting for PostgreSQL transactions to queue on row locks: how a test lines real transactions up behind a row it
holds from a connection of its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from flask import Flask
from sqlalchemy import Connection, text

from recur_server.infra.extensions import db

T = TypeVar("T")


def waiting_on_locks() -> int:
    """Backends of this database waiting on a lock now."""
    with db.engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )).scalar_one())


def until_waiting(count: int = 1, seconds: float = 10.0) -> None:
    """Return once `count` transactions wait on a lock; fail the test if they do not within `seconds`."""
    deadline = time.monotonic() + seconds
    while waiting_on_locks() < count:
        assert time.monotonic() < deadline, f"fewer than {count} transactions ever waited on a lock"
        time.sleep(0.02)


def behind_held_rows(app: Flask, hold: Callable[[Connection], object], work: Callable[[], T]) -> list[T]:
    """Run `work` in a thread (in an app context) while a connection of its own holds rows: `hold` runs on it,
    uncommitted; once `work` waits on a lock, that connection commits. Returns what `work` returned, as a list of
    one (empty if it raised or never ended within 30 s)."""
    done: list[T] = []
    holder = db.engine.connect()
    hold(holder)

    def run() -> None:
        with app.app_context():
            try:
                done.append(work())
            finally:
                db.session.remove()

    thread = threading.Thread(target=run, daemon=True)
    try:
        thread.start()
        until_waiting()
    finally:
        holder.commit()
        holder.close()
    thread.join(30)
    return done
