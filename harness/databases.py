"""Databases for tests, one per test, on SQLite or on a PostgreSQL server (RECUR_TEST_POSTGRES).

Running every migration for every test cost more than many tests themselves, so a session migrates one
database once (with ensure_schema, as a process does at start) and each test gets one just like it:
- on SQLite, a copy of that file;
- on PostgreSQL, a database used by an earlier test and put back as the migrations left it (every row
  deleted, the migrations' own rows written back, every sequence where they left it), or, when none is
  free, a new one made from the first with CREATE DATABASE ... TEMPLATE. Making a database copies its
  catalogs, 0.3-0.4 s of the server's CPU here; putting one back costs a few milliseconds.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import fakeredis
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.pool import NullPool

from recur_server import create_app
from recur_server.infra.extensions import db
from recur_server.services.schema import ensure_schema


def migrate(url: str) -> None:
    """Bring the database at `url` to the newest schema, then close every connection to it."""
    app = create_app({"TESTING": True, "DATABASE_URL": url, "REDIS_URL": "redis://fake"})
    app.extensions["recur.redis"] = fakeredis.FakeRedis()
    ensure_schema(app)
    with app.app_context():
        db.engine.dispose()  # a PostgreSQL template must have no sessions; SQLite folds its WAL in


class SqliteDatabases:
    def __init__(self, directory: Path) -> None:
        self._template = directory / "template.db"
        migrate(self.url(self._template))

    @staticmethod
    def url(path: Path) -> str:
        return f"sqlite:///{path}"

    @contextmanager
    def empty(self, path: Path) -> Iterator[str]:
        yield self.url(path)

    @contextmanager
    def migrated(self, path: Path) -> Iterator[str]:
        shutil.copyfile(self._template, path)
        yield self.url(path)


class PostgresDatabases:
    def __init__(self, server: str) -> None:
        self._server = make_url(server).set(drivername="postgresql+psycopg")
        self._admin = create_engine(self._server, isolation_level="AUTOCOMMIT")
        self._template = self._create()
        migrate(self._url(self._template))
        with self._engine(self._template) as engine, engine.connect() as conn:
            self._snapshot = _snapshot(conn)
        self._free: list[str] = []

    def _url(self, name: str) -> str:
        return self._server.set(database=name).render_as_string(hide_password=False)

    @contextmanager
    def _engine(self, name: str) -> Iterator[Engine]:
        engine = create_engine(self._url(name), poolclass=NullPool)
        try:
            yield engine
        finally:
            engine.dispose()

    def _create(self, template: str | None = None) -> str:
        name = f"recur_test_{uuid.uuid4().hex[:12]}"
        copy = f' TEMPLATE "{template}"' if template is not None else ""
        with self._admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"{copy}'))
        return name

    def _drop(self, name: str) -> None:
        with self._admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    @contextmanager
    def empty(self, path: Path) -> Iterator[str]:
        name = self._create()
        try:
            yield self._url(name)
        finally:
            self._drop(name)

    @contextmanager
    def migrated(self, path: Path) -> Iterator[str]:
        name = self._free.pop() if self._free else self._create(template=self._template)
        try:
            yield self._url(name)
        finally:
            try:
                with self._engine(name) as engine, engine.begin() as conn:
                    _restore(conn, self._snapshot)
            except Exception:
                self._drop(name)  # whatever the test left that a reset cannot undo goes with the database
            else:
                self._free.append(name)

    def close(self) -> None:
        for name in [*self._free, self._template]:
            self._drop(name)
        self._admin.dispose()


def _snapshot(conn: Connection) -> dict[str, Any]:
    tables = [row[0] for row in conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))]
    rows = {table: [row[0] for row in conn.execute(text(f'SELECT row_to_json(t)::text FROM "{table}" t'))]
            for table in tables}
    sequences = [tuple(row) for row in conn.execute(text(
        "SELECT sequencename, last_value, start_value FROM pg_sequences WHERE schemaname = 'public'"))]
    return {"rows": rows, "sequences": sequences}


def _restore(conn: Connection, snapshot: dict[str, Any]) -> None:
    """Put the database back as the snapshot found it: sessions the test left are ended, every row goes
    (foreign keys unchecked meanwhile: every table is emptied), the snapshot's rows and sequences return."""
    conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = current_database() AND pid <> pg_backend_pid()"))
    conn.execute(text("SET LOCAL session_replication_role = replica"))
    for table, rows in snapshot["rows"].items():
        conn.execute(text(f'DELETE FROM "{table}"'))
        for row in rows:
            conn.execute(text(f'INSERT INTO "{table}" SELECT * FROM json_populate_record(NULL::"{table}", :row)'),
                         {"row": row})
    for name, last_value, start_value in snapshot["sequences"]:
        if last_value is None:
            conn.execute(text("SELECT setval(:name, :value, false)"), {"name": f'"{name}"', "value": start_value})
        else:
            conn.execute(text("SELECT setval(:name, :value, true)"), {"name": f'"{name}"', "value": last_value})
