"""`flask declarations sync`: bring the database in line with the schedules the task modules declare; and
the same at a worker's start when RECUR_SYNC_ON_START asks."""

from __future__ import annotations

import json
import logging

import click
from flask import Flask, current_app
from redis.exceptions import RedisError

from recur_server.declarations.plan import CONFLICT
from recur_server.declarations.sync import Outcome, SyncError, sync
from recur_server.infra.locks import LockLost
from recur_server.tasks.declarations import DeclarationError

log = logging.getLogger("recur.sync")


def init_app(app: Flask) -> None:
    group = click.Group("declarations", help="Schedules declared in code (RECUR_TASK_MODULES).")

    @group.command("sync")
    @click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
    @click.option("--prune", is_flag=True, help="Delete the schedules of removed declarations (default: pause).")
    @click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
    def sync_command(dry_run: bool, prune: bool, as_json: bool) -> None:
        """Create what the code declares and is missing, change only what changed, pause what was removed.

        Exit status: 0 done; 1 a declaration refused, no owner, or the lock held by another process;
        2 a key held by a schedule made through the API (left alone; the rest was synced).
        """
        try:
            outcome = sync(current_app._get_current_object(), dry_run=dry_run, prune=prune)  # type: ignore[attr-defined]
        except (DeclarationError, SyncError, LockLost) as exc:
            raise click.ClickException(str(exc)) from None
        except RedisError as exc:  # a sync takes Redis's lock and hands links to it; a dry run checks it too
            raise click.ClickException(f"Redis is unreachable ({exc}); nothing was synced") from None
        if as_json:
            click.echo(json.dumps(outcome.as_dict()))
        else:
            for line in outcome.lines():
                click.echo(line)
        if outcome.plan is not None and outcome.plan.count(CONFLICT):
            raise click.exceptions.Exit(2)

    app.cli.add_command(group)


def sync_on_start(app: Flask) -> Outcome | None:
    """A worker's start: sync when RECUR_SYNC_ON_START is set, once across workers starting together. A
    declaration the API would refuse stops the worker (raises), as a syntax error in a task module would;
    Redis or the database away is logged, and the worker runs the schedules the database holds."""
    if not app.config["RECUR_SYNC_ON_START"]:
        return None
    try:
        outcome = sync(app, once=True)
    except (SyncError, LockLost, RedisError) as exc:
        log.error("declarations sync at start did not run: %s", exc)
        return None
    for line in outcome.lines():
        log.info("%s", line)
    return outcome
