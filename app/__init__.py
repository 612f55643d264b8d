"""Recur: recurring jobs as self-rescheduling RQ chains. `create_app` wires everything explicitly."""

from __future__ import annotations

import logging
import time
from typing import Any

from flask import Flask
from sqlalchemy.exc import OperationalError

from app import extensions
from app.config import INSTANCE_DIR, Settings
from app.tasks import load_task_modules


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__, instance_path=str(INSTANCE_DIR))
    app.config.from_mapping(Settings.from_env().as_flask_config())
    if config:
        app.config.update(config)
        if "DATABASE_URL" in config and "SQLALCHEMY_DATABASE_URI" not in config:
            app.config["SQLALCHEMY_DATABASE_URI"] = Settings(DATABASE_URL=config["DATABASE_URL"]).as_flask_config()[
                "SQLALCHEMY_DATABASE_URI"
            ]
    app.json.sort_keys = False  # type: ignore[attr-defined]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite:///"):
        INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
    extensions.init_app(app)
    load_task_modules(app.config["RECUR_TASK_MODULES"])

    from app import cli
    from app.api import errors, views

    errors.init_app(app)
    app.register_blueprint(views.api)
    cli.init_app(app)
    return app


def ensure_schema(app: Flask, attempts: int = 10) -> None:
    """Create missing tables. Several processes may start at once: a lost race is retried."""
    from app import models  # noqa: F401  (registers the tables)

    with app.app_context():
        for attempt in range(attempts):
            try:
                extensions.db.create_all()
                return
            except OperationalError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.2 * (attempt + 1))
