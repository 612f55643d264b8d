"""Recur: recurring jobs as self-rescheduling RQ chains. `create_app` wires everything explicitly."""

from __future__ import annotations

import time
from typing import Any

from flask import Flask
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from app import clock, extensions, logs
from app.config import INSTANCE_DIR, Settings, flask_config
from app.tasks import load_task_modules


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__, instance_path=str(INSTANCE_DIR))
    app.config.from_mapping(flask_config(Settings.from_env(), config))
    app.json.sort_keys = False  # type: ignore[attr-defined]
    logs.configure(app.config["RECUR_LOG_FORMAT"])

    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite:///"):
        INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
    extensions.init_app(app)
    # Every decision several hosts must agree on (due, early, lease lapsed, missed) is made on Redis's clock.
    clock.use_cluster_clock(lambda: extensions.get_redis(app))
    load_task_modules(app.config["RECUR_TASK_MODULES"])

    from app import cli, console, metrics
    from app.api import document, errors
    from app.auth import cli as auth_cli
    from app.notify import models as notify_models  # noqa: F401  (registers the tables)

    errors.init_app(app)
    document.init_app(app)  # the API's blueprint, guarded by app.auth.guard, and its OpenAPI document
    cli.init_app(app)
    auth_cli.init_app(app)
    metrics.init_app(app)
    console.init_app(app)
    return app


def ensure_schema(app: Flask, attempts: int = 20) -> None:
    """Bring the schema to the newest migration. Web, workers and `release:` may all start at once:
    on PostgreSQL an advisory lock makes them take turns; on SQLite a lost race is retried."""
    from flask_migrate import upgrade
    from sqlalchemy import text

    from app import models  # noqa: F401  (registers the tables)

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


# An arbitrary constant that names Recur's schema-migration lock among PostgreSQL advisory locks.
SCHEMA_LOCK_KEY = 0x5245_4355  # "RECU"
