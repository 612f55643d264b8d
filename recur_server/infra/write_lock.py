"""SQLite's write lock, which every transaction takes up front (BEGIN IMMEDIATE), taken by trying it again
every millisecond or two while another connection holds it.

SQLite's own busy handler (PRAGMA busy_timeout) sleeps ever longer between tries: 1, 2, 5, 10, 15, 20, 25, 25,
25, 50, 50, then 100 ms. A writer that finds the lock held a few times in a row sleeps 50-100 ms at a time,
however soon the lock is free, while writers that come later take it first; with several processes writing,
the waiters back off together while the lock stands free. Beside two workers' links (python -m bench --only
estate --estate 100000:200:120) a probe's BEGIN IMMEDIATE waited 79, 104, 129, 229 or 431 ms, SQLite's sums of
those sleeps; eight processes taking the lock as links do waited at most 129 ms with the handler, 12 ms this way
(docs/benchmarks.md, scenario 10).

So the handler is off (busy_timeout 0) for the one statement that takes the lock, and on again for every other
statement (a reader may meet a busy database while another connection recovers the journal).

A transaction that only reads, begun with the READ_ONLY execution option (recur_server.infra.reads), takes no
write lock at all: in WAL mode a reader neither waits for a writer nor holds one up. A background pass's pages
of reads (the reconciler's, pruning's walk of every schedule) held the lock for each page's read: under the
same links, the probe waited 100-830 ms again and again while a pruning pass walked the schedules.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

BUSY_TIMEOUT_MS = 30_000  # how long a transaction waits for the write lock, and anything else for a busy database
FIRST_PAUSE_SECONDS = 0.0005  # between tries: doubling from this to the next, never more
LONGEST_PAUSE_SECONDS = 0.002
BEGIN = "BEGIN IMMEDIATE"
READ_ONLY = "recur_read_only"  # a Connection's execution option: its transaction only reads


def begin_immediate(execute: Callable[[str], object]) -> None:
    """Open a transaction holding the write lock with `execute` (a DB-API connection's or cursor's), trying
    while another connection holds the lock, for up to BUSY_TIMEOUT_MS; then the driver's "database is locked"
    error is raised, as SQLite's own handler would have raised it."""
    execute("PRAGMA busy_timeout=0")
    try:
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        pause = FIRST_PAUSE_SECONDS
        while True:
            try:
                execute(BEGIN)
                return
            except sqlite3.OperationalError as exc:
                if not busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE_SECONDS)
    finally:
        execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")


def busy(exc: sqlite3.Error) -> bool:
    """Whether the driver's error says that another connection holds the lock (SQLITE_BUSY, or an extended
    code of it)."""
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY
