"""`flask` commands: schema creation and recovery."""

from __future__ import annotations

import json

import click
from flask import Flask, current_app

from recur_server.services.schema import ensure_schema
from recur_server.workers.background import RECONCILE_LOCK, reconcile_once


def init_app(app: Flask) -> None:
    @app.cli.command("init-db")
    def init_db() -> None:
        """Create the tables if they are missing."""
        ensure_schema(current_app._get_current_object())  # type: ignore[attr-defined]
        click.echo("schema ready")

    @app.cli.command("recover")
    def recover() -> None:
        """Re-create every missing pending link and write off runs whose worker died (idempotent).

        Runs under the reconcile lock the workers' passes take, so it never overlaps one; exits with
        status 1, doing nothing, while another process holds it.
        """
        report = reconcile_once(current_app._get_current_object())  # type: ignore[attr-defined]
        if report is None:
            click.echo(f"another process is reconciling (it holds {RECONCILE_LOCK}); nothing was done", err=True)
            raise click.exceptions.Exit(1)
        click.echo(json.dumps(report))
