"""Scenario 1's durable baseline: a bare RQ no-op job that records its own run in the database, an INSERT
committed when it starts and an UPDATE committed when it ends, the least any scheduler with a durable history
does. Same database as the Recur rows, same driver and the same connection settings as Recur's engine
(recur_server/infra/extensions.py): the stdlib sqlite3 through a SQLAlchemy pool (WAL, synchronous=NORMAL, a busy
timeout, the write lock up front as recur_server/infra/write_lock.py takes it) or psycopg 3 through a SQLAlchemy
pool; the statements go straight to the driver's cursor, as Recur's link does (recur_server/infra/rawsql.py).
Recur's pre-ping of every pooled PostgreSQL connection is left out: it is Recur's resilience, not the least a
durable record needs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rq import get_current_job
from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, create_engine, event, func, select
from sqlalchemy.engine import Engine

from recur_server.infra import write_lock

RUNS = Table(
    "bench_runs", MetaData(),
    Column("id", Integer, primary_key=True),
    Column("job_id", String(36), nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
)

# One engine per worker process and database, made on first use (or by warm_up before the worker starts).
_engines: dict[str, Engine] = {}


def create_table(url: str) -> None:
    """The baseline's table in a fresh database (the bench makes it before the workers start; on SQLite this
    also puts the file in WAL mode, as Recur's schema step does)."""
    engine = _engine(url)
    RUNS.create(engine)
    engine.dispose()


def recorded(url: str) -> int:
    """How many runs the jobs recorded as finished."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            query = select(func.count()).select_from(RUNS).where(RUNS.c.status == "succeeded",
                                                                 RUNS.c.finished_at.is_not(None))
            return int(connection.execute(query).scalar_one())
    finally:
        engine.dispose()


def engine_for(url: str) -> Engine:
    """This process's engine for `url`."""
    engine = _engines.get(url)
    if engine is None:
        engine = _engines[url] = _engine(url)
    return engine


def _engine(url: str) -> Engine:
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_settings)
    return engine


def warm_up(url: str) -> None:
    """Open the pool's connection before the first job, as Recur's worker has its own open when it starts."""
    engine_for(url).raw_connection().close()


def recorded_noop(url: str) -> None:
    """The job: record the start (committed), do nothing, record the end (committed)."""
    job = get_current_job()
    job_id = job.id if job is not None else "-"
    engine = engine_for(url)
    sqlite = engine.dialect.name == "sqlite"
    mark = "?" if sqlite else "%s"
    connection = engine.raw_connection()
    try:
        cursor = connection.cursor()
        _begin(cursor, sqlite)
        cursor.execute(f"INSERT INTO bench_runs (job_id, status, started_at) VALUES ({mark}, 'running', {mark}) "
                       "RETURNING id", (job_id, _stamp(sqlite)))
        ((run_id,),) = cursor.fetchall()  # read to the end: SQLite applies as it steps
        connection.commit()
        _begin(cursor, sqlite)
        cursor.execute(f"UPDATE bench_runs SET status = 'succeeded', finished_at = {mark} WHERE id = {mark}",
                       (_stamp(sqlite), run_id))
        connection.commit()
        cursor.close()
    finally:
        connection.close()


def _begin(cursor: Any, sqlite: bool) -> None:
    # SQLite: the write lock up front, as Recur's transactions take it; psycopg begins by itself.
    if sqlite:
        cursor.execute(write_lock.BEGIN)


def _stamp(sqlite: bool) -> Any:
    # What SQLAlchemy's DateTime stores on SQLite (naive UTC text); psycopg adapts a datetime itself.
    now = datetime.now(UTC)
    return now.replace(tzinfo=None).isoformat(sep=" ") if sqlite else now


def _sqlite_settings(dbapi_connection: Any, _record: Any) -> None:
    """Recur's SQLite settings (recur_server/infra/extensions.py): transactions opened explicitly, WAL, busy timeout."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in write_lock.pragmas():
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()
