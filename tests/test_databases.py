"""The tests' own databases: on PostgreSQL a database goes from test to test, so what one test wrote must be
gone for the next, which must find it exactly as a new copy of the migrated schema (rows and sequences)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from harness.databases import PostgresDatabases, SqliteDatabases

pytestmark = pytest.mark.database


def _contents(url: str) -> dict[str, Any]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = sorted(row[0] for row in conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")))
            rows = {t: sorted(json.dumps(r[0], sort_keys=True) for r in conn.execute(
                text(f'SELECT row_to_json(x) FROM "{t}" x'))) for t in tables}
            # the next value each sequence hands out, as an INSERT would see it
            sequences = sorted(tuple(row) for row in conn.execute(text(
                "SELECT sequencename, COALESCE(last_value + increment_by, start_value) FROM pg_sequences "
                "WHERE schemaname = 'public'")))
    finally:
        engine.dispose()
    return {"rows": rows, "sequences": sequences}


def test_a_database_put_back_is_like_a_new_one(databases: SqliteDatabases | PostgresDatabases,
                                               tmp_path: Path) -> None:
    if not isinstance(databases, PostgresDatabases):
        pytest.skip("on SQLite each test's database is a new copy of the file")
    with databases.migrated(tmp_path / "a.db") as first:
        new = _contents(first)
        engine = create_engine(first)
        with engine.begin() as conn:  # a test's leftovers: rows in the tables with foreign keys, sequences moved on
            conn.execute(text("INSERT INTO owners (name, is_admin, created_at) VALUES ('other', false, now())"))
            conn.execute(text("INSERT INTO workflows (name, task, owner_id, created_at) "
                              "VALUES ('w', 'builtin.noop', 1, now())"))
            conn.execute(text("UPDATE owners SET name = 'renamed' WHERE id = 1"))
        left_open = engine.connect()  # and a session it did not close
        left_open.execute(text("SELECT 1"))
        assert _contents(first) != new
    with databases.migrated(tmp_path / "b.db") as second:
        assert second == first  # the same database, put back
        assert _contents(second) == new
        with pytest.raises(OperationalError):  # the session the test left open was ended
            left_open.execute(text("SELECT 1"))
    left_open.close()
    engine.dispose()
