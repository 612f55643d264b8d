"""The processes a scenario needs: one redis-server for the whole run, Recur apps on fresh databases (a
SQLite file each, or a database each on one throwaway PostgreSQL server), Recur workers (worker.py), bare
RQ workers, rq-scheduler, gunicorn. All on this machine."""

from __future__ import annotations

import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from redis import Redis
from rq import Worker
from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import Engine, make_url

from harness.servers import Process, RedisServer, free_port, start_web, start_worker, wait_for
from recur_server import create_app
from recur_server.infra.config import Settings
from recur_server.infra.extensions import db
from recur_server.models import Schedule, ScheduleStatus, Workflow
from recur_server.services.schema import ensure_schema
from recur_server.workers.slots import default_concurrency

BASELINE_QUEUE = "bench"
ROOT = Path(__file__).resolve().parent.parent

# worker.py's modes: the Procfile's (no flag: the isolating worker), then the other two.
WORKER_MODES: dict[str, list[str]] = {"default": [], "fork": ["--fork"], "simple": ["--simple"]}
MODE_LABELS = {"default": "default (isolating)", "fork": "--fork", "simple": "--simple"}


def postgres_available() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


def cores() -> int:
    return os.cpu_count() or 1


def ceil_epoch(seconds: float) -> int:
    return math.ceil(seconds)


def utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _epoch(stored: str | datetime) -> float:
    """A timestamp as the database returns it (SQLite: naive-UTC text; PostgreSQL: a datetime), as epoch
    seconds."""
    value = datetime.fromisoformat(stored) if isinstance(stored, str) else stored
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


# The first admin, which the migrations create: the bench's rows belong to it.
ADMIN_OWNER_ID = 1


class Bench:
    """Owns the run's redis-server, its PostgreSQL server (`database="postgres"`) and a scratch directory;
    hands out fresh Recur environments."""

    def __init__(self, workdir: Path, database: str = "sqlite") -> None:
        self.workdir = workdir
        self.database = database
        self.redis_server = RedisServer(workdir)
        self.redis = Redis.from_url(self.redis_server.url)
        self._count = 0
        self._pg_dir: Path | None = None
        self.postgres_url: str | None = None
        if database == "postgres":
            self._pg_dir = Path(tempfile.mkdtemp(prefix="recur-bench-pg."))
            # PostgreSQL's durable defaults (fsync, synchronous_commit), as a production server runs
            durable = {**os.environ, "RECUR_PG_DURABLE": "1"}
            self.postgres_url = subprocess.run([str(ROOT / "scripts" / "pg-throwaway"), "start", str(self._pg_dir)],
                                               check=True, capture_output=True, text=True, env=durable).stdout.strip()

    def new_database(self, name: str) -> str:
        """A fresh database for one environment: its DATABASE_URL."""
        if self.postgres_url is None:
            return f"sqlite:///{self.workdir / name / 'recur.db'}"
        server = make_url(self.postgres_url).set(drivername="postgresql+psycopg")
        admin = create_engine(server, isolation_level="AUTOCOMMIT")
        database = f"bench_{self._count:02d}"
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{database}"'))
        admin.dispose()
        return server.set(database=database).render_as_string(hide_password=False)

    def scratch_database(self, name: str) -> str:
        """A fresh database for a baseline that writes to one (its own SQLite file, or its own database on
        the run's PostgreSQL server): its DATABASE_URL."""
        self._count += 1
        directory = self.workdir / f"{self._count:02d}-{name}"
        directory.mkdir(parents=True, exist_ok=True)
        return self.new_database(directory.name)

    def fresh_redis(self) -> Redis:
        """Our own redis-server (on a free port, never a shared one) emptied. Freed in Redis's background
        thread and waited for: a million links take longer to free than a reply may take."""
        self.redis.flushall(asynchronous=True)
        while int(self.redis.info("memory").get("lazyfree_pending_objects", 0)):
            time.sleep(0.05)
        return self.redis

    def recur(self, name: str, **settings: str) -> RecurEnv:
        self.fresh_redis()
        self._count += 1
        return RecurEnv(self, self.workdir / f"{self._count:02d}-{name}", settings)

    def log(self, name: str) -> Path:
        self._count += 1
        return self.workdir / f"{self._count:02d}-{name}.log"

    def stop(self) -> None:
        self.redis_server.stop()
        if self._pg_dir is not None:
            subprocess.run([str(ROOT / "scripts" / "pg-throwaway"), "stop", str(self._pg_dir)], check=False)


class RecurEnv:
    """A Recur deployment: a fresh database, the bench's Redis, and an in-process app on both."""

    def __init__(self, bench: Bench, directory: Path, settings: dict[str, str]) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.bench = bench
        self.directory = directory
        self.db_path = directory / "recur.db"
        self.database_url = bench.new_database(directory.name)
        self._reader: Engine | None = None
        if not self.database_url.startswith("sqlite"):
            self._reader = create_engine(self.database_url, isolation_level="AUTOCOMMIT", pool_size=1)
        self.env = {
            "DATABASE_URL": self.database_url,
            "REDIS_URL": bench.redis_server.url,
            "RECUR_QUEUE": "recur",
            "RECUR_TASK_MODULES": "",
            # The environment's processes keep their metrics together, apart from any other's.
            "PROMETHEUS_MULTIPROC_DIR": str(directory / "metrics"),
            **settings,
        }
        self.app: Flask = create_app({k: v for k, v in self.env.items() if k != "RECUR_TASK_MODULES"})
        ensure_schema(self.app)
        self.workers: list[Process] = []

    @contextmanager
    def context(self) -> Iterator[Flask]:
        with self.app.app_context():
            try:
                yield self.app
            finally:
                db.session.remove()

    def workflow(self, task: str = "builtin.noop") -> int:
        with self.context():
            workflow = Workflow(name=task, task=task, owner_id=ADMIN_OWNER_ID, created_at=datetime.now(UTC))
            db.session.add(workflow)
            db.session.commit()
            return int(workflow.id)

    def insert_schedules(self, workflow_id: int, count: int, interval: int, due: Callable[[int], datetime],
                         chunk: int = 10_000) -> None:
        """Bulk path: active rows with their next nominal time set and no link yet (recovery makes them)."""
        now = datetime.now(UTC)
        with self.context():
            for start in range(0, count, chunk):
                rows = []
                for index in range(start, min(count, start + chunk)):
                    first = due(index)
                    rows.append({
                        "id": str(uuid.uuid4()), "name": f"bench-{index}", "workflow_id": workflow_id,
                        "owner_id": ADMIN_OWNER_ID,
                        "interval_seconds": interval, "anchor_at": first - timedelta(seconds=interval),
                        "anchor_explicit": False, "timezone": "UTC", "day_or": True, "jitter_seconds": 0,
                        "total_repeats": 0, "max_retries": 3, "timeout_seconds": 600, "trigger_payload": None,
                        "status": ScheduleStatus.ACTIVE.value, "current_repeat": 0, "current_retry": 0,
                        "next_run_at": first, "run_count": 0, "error_count": 0, "revision": 0,
                        "created_at": now, "updated_at": now,
                    })
                db.session.execute(insert(Schedule), rows)
                db.session.commit()
        if self._reader is not None:
            # What autovacuum does within a minute of a bulk insert: the table's statistics. Without them the
            # planner may take the claim's row through the due index's whole active range instead of its key.
            with self._reader.connect() as pg:
                pg.execute(text("ANALYZE scheduled_jobs"))

    def reconcile(self) -> dict[str, Any]:
        from recur_server.infra import clock
        from recur_server.services.reconcile import reconcile

        with self.context():
            started = time.monotonic()
            report = reconcile(clock.utcnow()).as_dict()
            report["seconds"] = time.monotonic() - started
            return report

    def _read(self, sql: str) -> list[tuple[Any, ...]]:
        """Read with a plain read-only connection: in WAL mode it never takes the write lock that
        the app's transactions (BEGIN IMMEDIATE) take, so polling does not slow the workers down.
        (On PostgreSQL: an autocommit connection of the bench's own.)"""
        if self._reader is not None:
            with self._reader.connect() as pg:
                return [tuple(row) for row in pg.execute(text(sql)).all()]
        connection = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        try:
            return connection.execute(sql).fetchall()
        finally:
            connection.close()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of `sql` against this environment's database, read as _read does."""
        return self._read(sql)

    def finished_runs(self) -> int:
        return int(self._read("SELECT count(*) FROM runs WHERE status != 'running'")[0][0])

    def runs(self) -> list[tuple[float, float, str]]:
        """(scheduled_for, started_at, status) of every run, as epoch seconds."""
        return [(_epoch(nominal), _epoch(started), status)
                for nominal, started, status in self._read("SELECT scheduled_for, started_at, status FROM runs")]

    def start_workers(self, count: int, mode: str = "default", *more: str) -> None:
        """`count` worker.py processes in `mode` (a key of WORKER_MODES), with `more` arguments; each registers
        one RQ worker per slot it starts with (slots_in), and all of them are waited for."""
        extra = [*WORKER_MODES[mode], *more]
        for index in range(count):
            log = self.directory / f"worker{len(self.workers)}.log"
            self.workers.append(start_worker(self.env, log, *extra, "--name", f"bench-recur-{index}-{os.getpid()}"))
        wait_workers(self.bench.redis, count * slots_in(extra), self.workers)

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers = []
        with self.app.app_context():
            db.session.remove()
            db.engine.dispose()

    def database_bytes(self) -> int:
        """Size of the SQLite file once its write-ahead log is folded in (call after stop()); on PostgreSQL,
        pg_database_size."""
        if self._reader is not None:
            return int(self._read("SELECT pg_database_size(current_database())")[0][0])
        connection = sqlite3.connect(self.db_path, isolation_level=None, timeout=30)
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
        wal = self.db_path.with_name(self.db_path.name + "-wal")
        return self.db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def slots_in(arguments: list[str]) -> int:
    """The slots a worker.py started with `arguments` starts with (it adds more while they are all busy): its
    --min-slots, or the default, at most its --concurrency (or the default)."""
    settings = Settings.from_env(dict(os.environ))
    setting = (int(arguments[arguments.index("--concurrency") + 1]) if "--concurrency" in arguments
               else settings.RECUR_WORKER_CONCURRENCY)
    least = (int(arguments[arguments.index("--min-slots") + 1]) if "--min-slots" in arguments
             else settings.RECUR_WORKER_MIN_SLOTS)
    most = default_concurrency(setting)
    return most if least <= 0 else min(least, most)


def wait_workers(redis: Redis, count: int, processes: list[Process], timeout: float = 60) -> None:
    def ready() -> bool:
        for process in processes:
            if not process.alive():
                raise RuntimeError(f"a worker exited early; see {process.log_path}:\n{process.output()[-2000:]}")
        return len(Worker.all(connection=redis)) >= count

    wait_for(ready, timeout, interval=0.1, what=f"{count} workers to register")
    time.sleep(0.3)  # let the mover beside each worker take its first look


def start_rq_workers(bench: Bench, count: int, simple: bool, scheduler: bool = False,
                     durable: str | None = None) -> list[Process]:
    """Bare RQ workers on the baseline queue; `durable` (a DATABASE_URL) opens the durable baseline's
    connection before their first job."""
    processes = []
    for index in range(count):
        argv = [sys.executable, "-m", "bench.rq_worker", bench.redis_server.url, BASELINE_QUEUE]
        if simple:
            argv.append("--simple")
        if scheduler:
            argv.append("--scheduler")
        if durable:
            argv += ["--durable", durable]
        processes.append(Process(argv, {}, bench.log(f"rq-worker{index}")))
    wait_workers(bench.redis, count, processes)
    return processes


def start_rq_scheduler(bench: Bench, poll: float) -> Process:
    argv = [sys.executable, "-m", "bench.rqs_scheduler", bench.redis_server.url, BASELINE_QUEUE, str(poll)]
    process = Process(argv, {}, bench.log("rq-scheduler"))
    wait_for(lambda: bench.redis.exists("rq:scheduler_lock") or bench.redis.keys("rq:scheduler_instance:*")
             or not process.alive(), 30, interval=0.05, what="rq-scheduler to start")
    if not process.alive():
        raise RuntimeError(f"rq-scheduler exited: {process.output()[-2000:]}")
    return process


def stop_all(processes: list[Process]) -> None:
    for process in processes:
        process.stop()


def web(env: dict[str, str], log: Path, app: str | None = None) -> tuple[Process, str]:
    port = free_port()
    if app is None:
        process = start_web(env, port, log)
    else:
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        process = Process([gunicorn, app, "--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4"], env, log)
    return process, f"127.0.0.1:{port}"
