"""The database schema: brought to the newest migration when a process starts (`flask init-db`, worker.py,
wsgi.py)."""

from __future__ import annotations

import functools
import time

from alembic.config import Config
from alembic.script import ScriptDirectory
from flask import Flask
from flask_migrate import upgrade
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, ProgrammingError

from recur_server import models  # noqa: F401  (registers the tables)
from recur_server.infra import extensions

# An arbitrary constant that names Recur's schema-migration lock among PostgreSQL advisory locks.
SCHEMA_LOCK_KEY = 0x5245_4355  # "RECU"


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
                            upgrade(directory=extensions.MIGRATIONS_DIR)
                        finally:
                            conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": SCHEMA_LOCK_KEY})
                            conn.commit()
                else:
                    upgrade(directory=extensions.MIGRATIONS_DIR)
                return
            except (OperationalError, IntegrityError, ProgrammingError):
                extensions.db.session.remove()
                if attempt == attempts - 1:
                    raise
                time.sleep(0.1 * (attempt + 1))


@functools.cache
def head_revisions() -> frozenset[str]:
    """The newest migration(s) of this version's migrations directory (read once per process)."""
    config = Config()
    config.set_main_option("script_location", extensions.MIGRATIONS_DIR)
    return frozenset(ScriptDirectory.from_config(config).get_heads())


def at_head(engine: Engine) -> bool:
    """Whether the database is at the newest migration already (no schema, or an older one: False)."""
    try:
        with engine.connect() as conn:
            current = frozenset(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
    except DBAPIError:  # no alembic_version table: a new database
        return False
    return current == head_revisions()
