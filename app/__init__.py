"""Recur: recurring jobs as self-rescheduling RQ chains. `create_app` wires everything explicitly."""

from __future__ import annotations

from typing import Any

from flask import Flask, g

from app import console, metrics
from app.api import document, errors
from app.calendars import models as calendar_models  # noqa: F401  (registers the table)
from app.cli import commands, declarations, owners
from app.infra import clock, extensions, logs
from app.infra.config import INSTANCE_DIR, SettingError, Settings, flask_config
from app.notify import guard
from app.notify import models as notify_models  # noqa: F401  (registers the tables)
from app.tasks import load_task_modules
from app.timing import work


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__, instance_path=str(INSTANCE_DIR))
    app.config.from_mapping(flask_config(Settings.from_env(), config))
    app.json.sort_keys = False  # type: ignore[attr-defined]
    logs.configure(app.config["RECUR_LOG_FORMAT"])
    try:  # a malformed allowlist stops the process at start, not each delivery
        guard.egress(app.config["RECUR_WEBHOOK_EGRESS"])
    except ValueError as exc:
        raise SettingError(str(exc)) from None

    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite:///"):
        INSTANCE_DIR.mkdir(parents=True, exist_ok=True)
    extensions.init_app(app)
    # Every decision several hosts must agree on (due, early, lease lapsed, missed) is made on Redis's clock.
    clock.use_cluster_clock(lambda: extensions.get_redis(app))
    load_task_modules(app.config["RECUR_TASK_MODULES"])

    errors.init_app(app)
    # Every request's timing math shares one budget of steps (app.timing.work): no request buys unbounded work.
    app.before_request(lambda: setattr(g, "timing_budget", work.start()))
    app.teardown_request(lambda exc: work.stop(g.timing_budget) if "timing_budget" in g else None)
    document.init_app(app)  # the API's blueprint, guarded by app.api.authentication, and its OpenAPI document
    commands.init_app(app)
    owners.init_app(app)
    declarations.init_app(app)
    metrics.init_app(app)
    console.init_app(app)
    return app
