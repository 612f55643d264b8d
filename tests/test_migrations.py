"""The Alembic migrations build exactly the schema the models describe (on SQLite and on PostgreSQL), and
the reconciler's batched walk over active schedules is an index range, not a sort per batch."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from sqlalchemy import select, text

from recur_server import create_app
from recur_server.infra.extensions import db
from recur_server.models import Schedule, ScheduleStatus
from recur_server.services import schema
from recur_server.services.schema import ensure_schema


@pytest.fixture
def migrated(empty_database_url: str) -> Iterator[Flask]:
    app = create_app({"TESTING": True, "DATABASE_URL": empty_database_url, "REDIS_URL": "redis://127.0.0.1:1/0"})
    ensure_schema(app)
    with app.app_context():
        try:
            yield app
        finally:
            db.session.remove()
            db.engine.dispose()


def test_migrations_build_the_schema_the_models_describe(migrated: Flask) -> None:
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = compare_metadata(context, db.metadata)
    assert differences == []


def test_the_reconcilers_walk_uses_the_status_id_index(migrated: Flask) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's planner picks by table statistics; the index itself is checked above")
    query = (
        select(Schedule.id)
        .where((Schedule.status == ScheduleStatus.ACTIVE.value) & (Schedule.id > "x"))
        .order_by(Schedule.id)
        .limit(1000)
    )
    sql = str(query.compile(db.engine, compile_kwargs={"literal_binds": True}))
    plan = " ".join(row[3] for row in db.session.execute(text("EXPLAIN QUERY PLAN " + sql)))
    assert "ix_scheduled_jobs_status_id" in plan
    assert "TEMP B-TREE" not in plan


def test_rows_from_before_owners_belong_to_the_first_admin(empty_database_url: str) -> None:
    app = create_app({"TESTING": True, "DATABASE_URL": empty_database_url, "REDIS_URL": "redis://127.0.0.1:1/0"})
    with app.app_context():
        try:
            schema.upgrade("0002")
            with db.engine.begin() as conn:
                conn.execute(text("INSERT INTO workflows (id, name, task, created_at) "
                                  "VALUES (7, 'old', 'builtin.noop', '2026-01-01 00:00:00')"))
                conn.execute(text(
                    "INSERT INTO scheduled_jobs (id, name, workflow_id, interval_seconds, total_repeats, max_retries, "
                    "timeout_seconds, status, current_repeat, current_retry, run_count, error_count, created_at, "
                    "updated_at, anchor_explicit, day_or, timezone, jitter_seconds, revision) VALUES "
                    "('00000000-0000-0000-0000-000000000001', 'old', 7, 60, 0, 3, 600, 'active', 0, 0, 0, 0, "
                    "'2026-01-01 00:00:00', '2026-01-01 00:00:00', false, true, 'UTC', 0, 0)"))
            schema.upgrade()
            with db.engine.connect() as conn:
                assert conn.execute(text("SELECT name, is_admin FROM owners WHERE id = 1")).one() == ("admin", True)
                assert conn.execute(text("SELECT owner_id FROM workflows")).scalars().all() == [1]
                assert conn.execute(text("SELECT owner_id FROM scheduled_jobs")).scalars().all() == [1]
        finally:
            db.session.remove()
            db.engine.dispose()


def test_schedules_from_before_on_exhausted_keep_dying_when_retries_run_out(empty_database_url: str) -> None:
    app = create_app({"TESTING": True, "DATABASE_URL": empty_database_url, "REDIS_URL": "redis://127.0.0.1:1/0"})
    with app.app_context():
        try:
            schema.upgrade("0002")
            with db.engine.begin() as conn:
                conn.execute(text("INSERT INTO workflows (id, name, task, created_at) "
                                  "VALUES (7, 'old', 'builtin.noop', '2026-01-01 00:00:00')"))
                conn.execute(text(
                    "INSERT INTO scheduled_jobs (id, name, workflow_id, interval_seconds, total_repeats, max_retries, "
                    "timeout_seconds, status, current_repeat, current_retry, run_count, error_count, created_at, "
                    "updated_at, anchor_explicit, day_or, timezone, jitter_seconds, revision) VALUES "
                    "('00000000-0000-0000-0000-000000000001', 'old', 7, 60, 0, 3, 600, 'paused', 0, 0, 0, 0, "
                    "'2026-01-01 00:00:00', '2026-01-01 00:00:00', false, true, 'UTC', 0, 0)"))
            schema.upgrade()
            with db.engine.connect() as conn:
                row = conn.execute(text("SELECT on_exhausted, pause_note, paused_at FROM scheduled_jobs")).one()
            assert tuple(row) == ("dead", None, None)
        finally:
            db.session.remove()
            db.engine.dispose()


def test_a_start_on_an_older_schema_migrates_and_one_at_the_newest_runs_no_migration(
        empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app({"TESTING": True, "DATABASE_URL": empty_database_url, "REDIS_URL": "redis://127.0.0.1:1/0"})
    with app.app_context():
        try:
            assert not schema.at_head(db.engine)  # a new database: no schema at all
            schema.upgrade("0002")
            assert not schema.at_head(db.engine)
            ensure_schema(app)
            assert schema.at_head(db.engine)
            with db.engine.connect() as conn:
                assert set(conn.execute(text("SELECT version_num FROM alembic_version")).scalars()) == \
                    set(schema.HEAD_REVISIONS)
            runs: list[str] = []
            monkeypatch.setattr(schema, "upgrade", lambda **kwargs: runs.append("upgrade"))
            ensure_schema(app)
            assert runs == []
        finally:
            db.session.remove()
            db.engine.dispose()


def test_the_head_a_process_starts_with_is_alembics() -> None:
    """A new migration changes HEAD_REVISIONS: without it, a process would take the database it just migrated
    for one behind, and one the new version migrated for the newest."""
    assert schema.alembic_heads() == schema.HEAD_REVISIONS


def test_a_process_starting_on_the_newest_schema_loads_no_alembic(migrated: Flask, tmp_path) -> None:
    """What a web or worker process imports to start, and its schema check, leave Alembic (and Mako and
    Pygments, which it imports) unloaded: 0.12 s of CPU of each process's start."""
    script = ("import sys\n"
              "from recur_server import create_app\n"
              "from recur_server.services.schema import ensure_schema\n"
              "import recur_server.processes.worker, recur_server.jobs\n"
              f"app = create_app({{'DATABASE_URL': {migrated.config['SQLALCHEMY_DATABASE_URI']!r}, "
              "'REDIS_URL': 'redis://127.0.0.1:1/0'})\n"
              "ensure_schema(app)\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in ('alembic', 'flask_migrate', 'mako')))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


def test_the_periodic_pass_reads_the_due_schedules_through_their_index(migrated: Flask) -> None:
    """Its cost follows the schedules due, not the table (recur_server.services.reconcile._due_before)."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's planner picks by table statistics; the index itself is checked above")
    from datetime import UTC, datetime

    from sqlalchemy import tuple_

    until = datetime(2026, 1, 1, tzinfo=UTC)
    query = (select(Schedule.id)
             .where((Schedule.status == ScheduleStatus.ACTIVE.value) & (Schedule.next_run_at <= until)
                    & (tuple_(Schedule.next_run_at, Schedule.id) > tuple_(until, "x")))
             .order_by(Schedule.next_run_at, Schedule.id).limit(1000))
    sql = str(query.compile(db.engine, compile_kwargs={"literal_binds": True}))
    plan = " ".join(row[3] for row in db.session.execute(text("EXPLAIN QUERY PLAN " + sql)))
    assert "ix_scheduled_jobs_due" in plan and "TEMP B-TREE" not in plan, plan


def test_the_missed_run_check_reads_its_candidates_through_their_partial_indexes(migrated: Flask) -> None:
    """Each second's check costs the schedules past their tick, not every one with an alert."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's planner picks by table statistics; the index itself is checked above")
    from datetime import UTC, datetime

    from recur_server.notify.alerts import candidates

    now = datetime(2026, 1, 1, tzinfo=UTC)
    for column, index in ((Schedule.next_run_at, "ix_scheduled_jobs_due"),
                          (Schedule.detached_since, "ix_scheduled_jobs_detached")):
        query = candidates(column, now)
        sql = str(query.compile(db.engine, compile_kwargs={"literal_binds": True}))
        plan = " ".join(row[3] for row in db.session.execute(text("EXPLAIN QUERY PLAN " + sql)))
        assert index in plan and "TEMP B-TREE" not in plan, plan
