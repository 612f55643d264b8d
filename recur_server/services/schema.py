"""The database schema: brought to the newest migration when a process starts (`flask init-db`, worker.py,
wsgi.py)."""

from __future__ import annotations

import time

from flask import Flask, current_app
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError

from recur_server import models  # noqa: F401  (registers the tables)
from recur_server.infra import extensions

# An arbitrary constant that names Recur's schema-migration lock among PostgreSQL advisory locks.
SCHEMA_LOCK_KEY = 0x5245_4355  # "RECU"
# The newest migration of this version (recur_server/migrations/versions), which every process compares the
# database's with as it starts. Written here rather than read from the migrations, because reading them loads
# Alembic (with Mako and Pygments: 0.12 s of CPU, an eighth of a process's start) in every web and worker process,
# which needs it only when the schema is behind. A new migration changes it; tests/test_migrations.py fails until
# it is Alembic's head.
HEAD_REVISIONS = frozenset({"0028"})


def ensure_schema(app: Flask, attempts: int = 20) -> None:
    """Bring the schema to the newest migration. Web, workers and `release:` may all start at once:
    on PostgreSQL an advisory lock makes them take turns; on SQLite a lost race is retried."""
    with app.app_context():
        engine = extensions.db.engine
        if at_head(engine):  # every start after the first: no migration to load or run
            return
        for attempt in range(attempts):
            try:
                if engine.dialect.name == "postgresql":
                    with engine.connect() as conn:
                        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
                        try:
                            upgrade()
                        finally:
                            conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK_KEY})
                            conn.commit()
                else:
                    upgrade()
                return
            except (OperationalError, IntegrityError, ProgrammingError):
                extensions.db.session.remove()
                if attempt == attempts - 1:
                    raise
                time.sleep(0.1 * (attempt + 1))


def alembic_heads() -> frozenset[str]:
    """The newest migration(s) of the migrations directory, as Alembic reads them (loading every migration)."""
    from alembic.config import Config  # here, not at import: see HEAD_REVISIONS
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", extensions.MIGRATIONS_DIR)
    return frozenset(ScriptDirectory.from_config(config).get_heads())


def use_migrations(app: Flask) -> None:
    """Flask-Migrate on `app` (its `flask db` commands and its upgrade), registered when first needed: importing
    it imports Alembic, which a process whose database is at HEAD_REVISIONS never needs."""
    if "migrate" not in app.extensions:
        from flask_migrate import Migrate  # here, not at import: see HEAD_REVISIONS

        Migrate(app, extensions.db, directory=extensions.MIGRATIONS_DIR, compare_type=True)


def upgrade(revision: str = "head") -> None:
    """The current app's database brought to `revision` by its migrations (Flask-Migrate's upgrade)."""
    use_migrations(current_app)
    from flask_migrate import upgrade as migrate_upgrade  # here, not at import: see HEAD_REVISIONS

    migrate_upgrade(directory=extensions.MIGRATIONS_DIR, revision=revision)


def at_head(engine: Engine) -> bool:
    """Whether the database is at the newest migration already (no schema, or an older one: False)."""
    try:
        with engine.connect() as conn:
            current = frozenset(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
    except DBAPIError:  # no alembic_version table: a new database
        return False
    return current == HEAD_REVISIONS
