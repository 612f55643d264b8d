"""The app factory: `create_app` wires everything explicitly (`recur_server.create_app` leads here)."""

from __future__ import annotations

from typing import Any

from flask import Flask, g

from recur_server import console, metrics
from recur_server.api import document, errors
from recur_server.calendars import models as calendar_models  # noqa: F401  (registers the table)
from recur_server.cli import commands, declarations, migrations, owners
from recur_server.infra import clock, extensions, logs
from recur_server.infra.config import INSTANCE_DIR, SettingError, Settings, flask_config
from recur_server.notify import guard
from recur_server.notify import models as notify_models  # noqa: F401  (registers the tables)
from recur_server.tasks import load_task_modules
from recur_server.timing import work


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
    # Every request's timing math shares one budget of steps (recur_server.timing.work): no request buys unbounded work.
    app.before_request(lambda: setattr(g, "timing_budget", work.start()))
    app.teardown_request(lambda exc: work.stop(g.timing_budget) if "timing_budget" in g else None)
    document.init_app(app)  # the API's blueprint, guarded by recur_server.api.authentication, and its OpenAPI document
    commands.init_app(app)
    owners.init_app(app)
    declarations.init_app(app)
    migrations.init_app(app)
    metrics.init_app(app)
    console.init_app(app)
    return app
