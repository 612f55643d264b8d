"""`flask db ...` (`recur manage db upgrade`): Flask-Migrate's commands on Recur's migrations, loaded when a `db`
command runs. Every other process of Recur starts without Alembic (recur_server.services.schema.HEAD_REVISIONS)."""

from __future__ import annotations

from typing import Any

import click
from flask import Flask, current_app

from recur_server.services.schema import use_migrations


class MigrationCommands(click.Group):
    """Stands for Flask-Migrate's `db` group in `flask --help`; asked to run (a command, or its help), it hands the
    command line to that group. Flask's command line has made the app current by then (FlaskGroup.get_command)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        use_migrations(current_app)
        from flask_migrate.cli import db  # here, not at import: see the module's docstring

        context: click.Context = db.make_context(info_name, args, parent=parent, **extra)
        return context


def init_app(app: Flask) -> None:
    app.cli.add_command(MigrationCommands("db", help="Perform database migrations (Flask-Migrate's commands)."))
