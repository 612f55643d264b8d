"""Count what one link costs in round trips: `python -m bench.roundtrips [N] [--db postgres] [--simple] [--trace]
[--on-time] [--wal]`.

N schedules due now are drained in this process by the Procfile's worker class (RecurPoolWorker, its work
process forked once; `--simple`: RecurSimpleWorker), on a fresh database and the bench's own redis-server.
Prints, per link: Redis round trips (a pipeline is one), SQL statements, commits, and on PostgreSQL the
round trips to the server (psycopg's pipeline mode sends several statements in one; SQLite runs in this
process and has none). `--trace` says where each Redis round trip and
each statement comes from. Rates here are one process's and say little; the bench measures speed.

The links are drained from a backlog, so each is late, and a late link's claim is the full one (catch-up may
decide). `--on-time` counts what a link that arrives on time costs: the claim's lateness check is raised past the
drain's length (each schedule here is hourly and runs once, so catch-up has nothing to decide either way).
`--wal` (SQLite) also counts the pages a link writes to SQLite's log: its automatic checkpoints are off for the
drain, so the log keeps one frame for each page each transaction wrote.
"""

from __future__ import annotations

import collections
import logging
import sqlite3
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

counts: collections.Counter[str] = collections.Counter()
where: collections.Counter[str] = collections.Counter()
TRACE = "--trace" in sys.argv


def _caller(skip: str) -> str:
    frames = [f for f in traceback.extract_stack(limit=16)[:-2] if skip not in f.filename]
    return " <- ".join(f"{Path(f.filename).name}:{f.name}" for f in reversed(frames[-4:]))


def _count_redis() -> None:
    import redis.connection

    send = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        counts["Redis round trips"] += 1
        if TRACE:
            where["redis  " + _caller("/redis/")] += 1
        send(self, command, check_health)  # type: ignore[no-untyped-call]

    redis.connection.AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]


def _count_driver() -> None:
    """The chain's statements run on the driver (recur_server.infra.rawsql): count them there. On PostgreSQL a
    statement not pipelined waits for its answer; pipelined ones wait once, at the first read of rows after
    them (or the COMMIT). SQLite runs in this process: no round trips."""
    from recur_server.infra import rawsql

    send, fetch, call = rawsql.Transaction._send, rawsql.Transaction._fetch, rawsql.Transaction._call
    queued: set[int] = set()

    def remote(tx: Any) -> bool:
        return bool(tx._dialect.name != "sqlite")

    def counted_send(self: Any, cursor: Any, rendered: Any, params: Any) -> None:
        counts["SQL statements"] += 1
        if TRACE:
            where["sql    " + " ".join(rendered.sql.split()[:4])] += 1
        if remote(self):
            if self.pipelined:
                queued.add(id(self))
            else:
                counts["database round trips"] += 1
        send(self, cursor, rendered, params)

    def counted_fetch(self: Any, cursor: Any, rendered: Any, params: Any) -> Any:
        if remote(self) and rendered.columns and id(self) in queued:
            queued.discard(id(self))
            counts["database round trips"] += 1
        return fetch(self, cursor, rendered, params)

    def counted_call(self: Any, method: Any, sql: str) -> None:
        counts[f"{sql}s"] += 1
        if remote(self):
            queued.discard(id(self))
            counts["database round trips"] += 1
        call(self, method, sql)

    rawsql.Transaction._send = counted_send  # type: ignore[method-assign]
    rawsql.Transaction._fetch = counted_fetch  # type: ignore[method-assign]
    rawsql.Transaction._call = counted_call  # type: ignore[method-assign]


def main() -> None:
    from sqlalchemy import event

    from bench.stack import Bench, utc
    from recur_server.chain.mover import Mover
    from recur_server.infra import clock
    from recur_server.infra.extensions import db, get_queue, get_redis
    from recur_server.workers.pool import Limits
    from recur_server.workers.pool_worker import RecurPoolWorker
    from recur_server.workers.worker import RecurSimpleWorker

    logging.disable(logging.WARNING)
    database = sys.argv[sys.argv.index("--db") + 1] if "--db" in sys.argv else "sqlite"
    args = [a for a in sys.argv[1:] if not a.startswith("-") and a != database]
    count = int(args[0]) if args else 1000
    _count_redis()
    _count_driver()
    if "--on-time" in sys.argv:
        from recur_server.chain import claim

        claim.LATE_CHECK_SECONDS = 3600.0
    wal = "--wal" in sys.argv and database == "sqlite"
    if wal:
        from recur_server.infra import write_lock

        pragmas = write_lock.pragmas
        write_lock.pragmas = lambda: (*pragmas(), "wal_autocheckpoint=0")
    bench = Bench(Path(tempfile.mkdtemp(prefix="recur-roundtrips-")), database)
    try:
        env = bench.recur("roundtrips")
        workflow = env.workflow()
        env.insert_schedules(workflow, count, 3600, lambda _: utc(int(time.time())))
        env.reconcile()
        with env.app.app_context():
            @event.listens_for(db.engine, "before_cursor_execute")
            def _statement(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:  # outside the driver
                counts["SQL statements"] += 1
                if conn.dialect.name != "sqlite":
                    counts["database round trips"] += 1
                if TRACE:
                    where["sql    " + " ".join(statement.split()[:4])] += 1

            queue = get_queue()
            Mover(get_redis(), queue).move_due(clock.utcnow())
            log = env.db_path.with_name(env.db_path.name + "-wal")
            logged = 0
            if wal:  # the log emptied first: what the drain leaves in it, the links wrote
                checkpoint = sqlite3.connect(env.db_path, isolation_level=None)
                checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                checkpoint.close()
                logged = log.stat().st_size
            counts.clear()
            where.clear()
            if "--simple" in sys.argv:
                worker: Any = RecurSimpleWorker([queue], connection=get_redis())
            else:
                worker = RecurPoolWorker([queue], connection=get_redis(), limits=Limits())
            started = time.monotonic()
            worker.work(burst=True, with_scheduler=False, logging_level="WARNING")
            seconds = time.monotonic() - started
            if wal:
                page = int(env.query("PRAGMA page_size")[0][0])
                counts["SQLite log pages written"] = (log.stat().st_size - logged) // (page + 24)  # a frame's header
            db.session.remove()
        print(f"{count} links in {seconds:.2f} s ({database}, {type(worker).__name__}); per link:")
        for name, value in sorted(counts.items()):
            print(f"  {value / count:6.2f}  {name}")
        for name, value in where.most_common(40):
            if value / count >= 0.05:
                print(f"  {value / count:6.2f}  {name}")
        env.stop()
    finally:
        bench.stop()


if __name__ == "__main__":
    main()
