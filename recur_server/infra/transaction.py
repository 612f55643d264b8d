"""Where the services end their writes: one commit per operation, or one for many (`whole`).

Each operation of recur_server.services writes its rows, calls `commit()`, then hands its links to Redis through
`after_commit()`. Inside `whole()`, `commit()` only flushes (the rows get their ids, the constraints are
checked) and the work after it waits: the block's operations are committed together when it ends, and only
then is anything handed to Redis. An exception anywhere in the block rolls every one of them back and drops
the work that waited, so Redis never holds a link of a row that was not committed. `whole(dry_run=True)`
carries the operations out the same way, checks included, and rolls them back at the end: what a dry run
answers is what a real one would have met.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from recur_server.infra.extensions import db

log = logging.getLogger(__name__)

_WAITING = "recur.after_commit"  # the session's work waiting for a whole() block's commit


def commit() -> None:
    """The operation's writes: committed now, or, inside whole(), flushed into the block's transaction."""
    if _WAITING in db.session.info:
        db.session.flush()
    else:
        db.session.commit()


def after_commit(work: Callable[[], object]) -> None:
    """Work that must follow the commit of what the operation wrote (a hand-off to Redis): now, or when the
    whole() block around it commits; never if that block rolls back."""
    waiting = db.session.info.get(_WAITING)
    if waiting is None:
        work()
    else:
        waiting.append(work)


@contextmanager
def whole(dry_run: bool = False) -> Iterator[None]:
    """The operations inside commit together at the end, or none of them (an exception, or `dry_run`)."""
    if _WAITING in db.session.info:
        raise RuntimeError("whole() blocks do not nest")
    waiting: list[Callable[[], object]] = []
    db.session.info[_WAITING] = waiting
    try:
        yield
        if dry_run:
            db.session.rollback()
        else:
            db.session.commit()
    except BaseException:
        db.session.rollback()
        raise
    finally:
        db.session.info.pop(_WAITING, None)
    if not dry_run:
        for work in waiting:  # committed: what follows is tidiness and hand-offs the reconciler would redo
            try:
                work()
            except Exception:
                log.exception("work after a whole() commit failed; the reconciler repairs what it left")
