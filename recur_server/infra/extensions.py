"""Extension objects and connection factories. Nothing connects at import time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from flask_sqlalchemy import SQLAlchemy
from redis import Redis
from redis.backoff import ExponentialBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry
from redis.sentinel import Sentinel
from rq import Queue
from rq.registry import ScheduledJobRegistry
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase

from recur_server.infra import pool_check, redis_url, write_lock
from recur_server.infra.config import DEFAULT_REDIS_TIMEOUT_SECONDS


class Base(DeclarativeBase):
    pass


# expire_on_commit=False: what a request committed is what it answers with and hands off from. With
# expiry, the first read after a commit reloaded the row in a new transaction, which on SQLite
# (BEGIN IMMEDIATE) held the write lock through the hand-off to Redis and the response.
db = SQLAlchemy(model_class=Base, session_options={"expire_on_commit": False})

MIGRATIONS_DIR = str(Path(__file__).resolve().parents[1] / "migrations")  # in the package: a wheel carries them


# libpq waits for ever, by default, for a server that accepted the connection but does not answer (a stalled
# or vanished host): a new connection gives up after this many seconds, unless the URL says connect_timeout=.
PG_CONNECT_TIMEOUT_SECONDS = 5


def init_app(app: Flask) -> None:
    app.config["SQLALCHEMY_ENGINE_OPTIONS"] = engine_options(app.config["SQLALCHEMY_DATABASE_URI"],
                                                             app.config.get("SQLALCHEMY_ENGINE_OPTIONS"))
    db.init_app(app)
    with app.app_context():
        engine = db.engine
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
            event.listen(engine, "begin", _sqlite_begin)
        elif not app.config["SQLALCHEMY_ENGINE_OPTIONS"].get("pool_pre_ping"):  # unless asked for SQLAlchemy's own
            pool_check.check_before_use(engine)
        # A forked RQ work horse must not share pooled connections with its parent.
        os.register_at_fork(after_in_child=lambda: engine.dispose(close=False))
    app.extensions["recur.redis"] = connect_redis(app.config["REDIS_URL"], app.config["RECUR_REDIS_TIMEOUT_SECONDS"])


# Retried, briefly: a connection that broke (a Redis restart or failover closed it) is replaced at once. Not
# retried: a timeout, which only says Redis does not answer; a retry would multiply the caller's wait.
_RETRIED = (RedisConnectionError,)


def connect_redis(url: str, timeout: float = DEFAULT_REDIS_TIMEOUT_SECONDS) -> Redis:
    """A client that gives up quickly: when Redis is down, the API answers 503 in well under a second
    instead of redis-py's default seconds of retries, and the workers' loops retry on their own. When Redis
    accepts connections but does not answer (stalled, overloaded, a half-open connection), every connect and
    every reply has `timeout` seconds (RECUR_REDIS_TIMEOUT_SECONDS), once: a timeout is not retried.

    The driver info (sent with CLIENT SETINFO) is resolved once here: left to redis-py, every new
    connection looks its version up in the installed package metadata, ~6 ms that each forked work
    horse (which opens a connection of its own) would pay again.

    A redis+sentinel:// URL (recur_server/infra/redis_url.py) gives a client of the Sentinels' current master: each new
    connection asks the Sentinels where the master is, and a connection to a demoted server is dropped, so
    every process follows a failover without restarting. rediss:// (TLS) is redis-py's own; rediss+sentinel://
    speaks TLS to the Sentinels and the master alike (Redis's own Sentinels, with tls-replication, speak TLS to
    each other and to the servers), checking both against the same CA.
    """
    timeouts = dict(socket_connect_timeout=timeout, socket_timeout=timeout)
    options = dict(retry=Retry(ExponentialBackoff(cap=0.25, base=0.025), retries=2, supported_errors=_RETRIED),
                   driver_info=DriverInfo(), **timeouts)
    target = redis_url.parse(url)
    if target is None:
        return Redis.from_url(url, **options)
    tls: dict[str, Any] = dict(ssl=True, **target.tls_options) if target.ssl else {}  # the Sentinels' and master's
    sentinel = Sentinel(list(target.sentinels), sentinel_kwargs={**timeouts, **tls}, **timeouts)  # type: ignore[no-untyped-call]
    master: Redis = sentinel.master_for(  # type: ignore[no-untyped-call]
        target.service, db=target.db, username=target.username, password=target.password, **tls, **options)
    return master


def engine_options(uri: str, given: dict[str, Any] | None = None) -> dict[str, Any]:
    """SQLAlchemy engine options for a server database: a connection attempt has a deadline, and a pooled
    connection is checked when it is taken from the pool (by recur_server.infra.pool_check, installed by
    init_app, unless it answered a moment ago), so after a server restart or failover a process reconnects
    instead of failing a request or a link on a dead connection. SQLite (a file, no server to lose) keeps
    SQLAlchemy's defaults."""
    options = dict(given or {})
    if uri.startswith("sqlite"):
        return options
    options.setdefault("pool_pre_ping", False)
    if "connect_timeout=" not in uri:
        options["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT_SECONDS, **options.get("connect_args", {})}
    return options


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    # Let SQLAlchemy, not the driver, open transactions, so that each one takes the write lock
    # up front (BEGIN IMMEDIATE): a read-then-write transaction can then wait for the lock
    # instead of failing with "database is locked" when another process wrote in between
    # (recur_server.infra.write_lock takes it).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in write_lock.pragmas():
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _sqlite_begin(conn) -> None:  # type: ignore[no-untyped-def]
    if conn.get_execution_options().get(write_lock.READ_ONLY):
        conn.exec_driver_sql("BEGIN")  # reads only: no write lock (WAL: a reader never waits for a writer)
        return
    conn.exec_driver_sql(write_lock.BEGIN)  # waits for the lock in SQLite's busy handler


def get_redis(app: Flask | None = None) -> Redis:
    redis: Redis = (app or current_app).extensions["recur.redis"]
    return redis


def get_queue(app: Flask | None = None) -> Queue:
    """The default queue (RECUR_QUEUE): links and runs of workflows that name none."""
    app = app or current_app
    return Queue(app.config["RECUR_QUEUE"], connection=get_redis(app))


@dataclass(frozen=True)
class QueueDepth:
    name: str
    queued: int  # links and runs on the queue, waiting for a worker
    scheduled: int  # links in its scheduled registry, waiting for their time


def queue_depths(app: Flask | None = None) -> list[QueueDepth]:
    """Each of the cluster's queues (queue_names), read from Redis: what /metrics and the console show."""
    redis = get_redis(app)
    depths = []
    for name in queue_names(app):
        queue = Queue(name, connection=redis)
        depths.append(QueueDepth(name, queue.count, ScheduledJobRegistry(queue=queue).count))  # type: ignore[no-untyped-call]
    return depths


def queue_names(app: Flask | None = None) -> list[str]:
    """Every queue of the cluster: the default first, then RECUR_QUEUES (the ones a workflow may name)."""
    app = app or current_app
    extra = [name.strip() for name in str(app.config["RECUR_QUEUES"]).split(",") if name.strip()]
    return list(dict.fromkeys([app.config["RECUR_QUEUE"], *extra]))


def engine_of(app: Flask | None = None) -> Engine:
    with (app or current_app).app_context():
        return db.engine
