"""Reads in a transaction of their own, for what background passes read before they write, if they write at all:
the pages the reconciler and pruning read one after another, and the looks that come back every few seconds (the
watch's, due webhooks, due followers). Each read's transaction ends at once, so no snapshot or lock is held
between reads, and on SQLite it takes no write lock (recur_server.infra.write_lock), so a pass never holds up a
link's claim or finish."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from recur_server.infra.extensions import db
from recur_server.infra.write_lock import READ_ONLY

T = TypeVar("T")


def read_alone(query: Callable[[], T]) -> T:
    """What `query` returns, read in a transaction that only reads and is rolled back at once. Inside a
    transaction already begun (which it ends, as it always did), the read is that transaction's."""
    if not db.session().in_transaction():
        db.session.connection(execution_options={READ_ONLY: True})
    try:
        return query()
    finally:
        db.session.rollback()
