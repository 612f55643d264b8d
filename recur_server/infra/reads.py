"""Reads in a transaction of their own, for background passes that read page after page (the reconciler's,
pruning's): each page is read and its transaction ended at once, so no snapshot or lock is held between pages,
and on SQLite the transaction takes no write lock (recur_server.infra.write_lock), so a pass never holds up a
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
