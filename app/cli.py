"""`flask` commands: schema creation and recovery."""

from __future__ import annotations

import json

import click
from flask import Flask, current_app

from app import clock


def init_app(app: Flask) -> None:
    @app.cli.command("init-db")
    def init_db() -> None:
        """Create the tables if they are missing."""
        from app import ensure_schema

        ensure_schema(current_app._get_current_object())  # type: ignore[attr-defined]
        click.echo("schema ready")

    @app.cli.command("recover")
    def recover() -> None:
        """Re-create every missing pending link and write off runs whose worker died (idempotent)."""
        from app.recovery import reconcile

        click.echo(json.dumps(reconcile(clock.utcnow()).as_dict()))
