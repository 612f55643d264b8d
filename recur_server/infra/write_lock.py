"""SQLite's write lock, which every transaction that may write takes up front (BEGIN IMMEDIATE), waiting in
SQLite's own busy handler (PRAGMA busy_timeout) while another connection holds it, for up to BUSY_TIMEOUT_MS;
then the driver's "database is locked" error is raised.

The handler sleeps ever longer between tries (1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, then 100 ms), so one
waiter can sleep past the moment the lock is free. Trying again every 0.5-2 ms instead was measured and taken
back (docs/benchmarks.md, scenario 10): with two workers on two cores the waiters' tries took CPU from the
process holding the lock, and links were later and cost more (`--estate 100000:300:120`, both orders: p99
1,780 and 4,753 ms polling against 460 and 1,961 with the handler; 5.5-5.7 ms of worker CPU a link against
5.2-5.3).

A transaction that only reads, begun with the READ_ONLY execution option (recur_server.infra.reads), takes no
write lock at all: in WAL mode a reader neither waits for a writer nor holds one up. A background pass's pages
of reads (the reconciler's, pruning's walk of every schedule) held the lock for each page's read: under the
same links, a probe waited 100-830 ms again and again while a pruning pass walked the schedules.
"""

from __future__ import annotations

BUSY_TIMEOUT_MS = 30_000  # how long a transaction waits for the write lock, and anything else for a busy database
BEGIN = "BEGIN IMMEDIATE"  # on a connection that set pragmas(): waits in SQLite's busy handler
READ_ONLY = "recur_read_only"  # a Connection's execution option: its transaction only reads


def pragmas() -> tuple[str, ...]:
    """What every SQLite connection Recur makes sets first (and the bench's durable baseline, which takes
    Recur's settings)."""
    return ("journal_mode=WAL", f"busy_timeout={BUSY_TIMEOUT_MS}", "synchronous=NORMAL", "foreign_keys=ON")
