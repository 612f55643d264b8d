"""The database schema: brought to the newest migration when a process starts (`flask init-db`, worker.py,
wsgi.py)."""

from __future__ import annotations

import time

from flask import Flask
from flask_migrate import upgrade
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from recur_server import models  # noqa: F401  (registers the tables)
from recur_server.infra import extensions

# An arbitrary constant that names Recur's schema-migration lock among PostgreSQL advisory locks.
SCHEMA_LOCK_KEY = 0x5245_4355  # "RECU"


def ensure_schema(app: Flask, attempts: int = 20) -> None:
    """Bring the schema to the newest migration. Web, workers and `release:` may all start at once:
    on PostgreSQL an advisory lock makes them take turns; on SQLite a lost race is retried."""
    with app.app_context():
        engine = extensions.db.engine
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
