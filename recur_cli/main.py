"""The `recur` command: nouns then verbs (`recur schedules pause ID`), tables for people, --json for scripts."""

from __future__ import annotations

from typing import Any

import click

from recur_cli import output
from recur_cli.apply import apply
from recur_cli.breaker import breaker
from recur_cli.calendars import calendars
from recur_cli.client import ApiError
from recur_cli.context import DEFAULT_URL, ApiGroup, Context, current, json_option
from recur_cli.events import events
from recur_cli.explain import register as register_explain
from recur_cli.imports import import_group
from recur_cli.owners import me, owners
from recur_cli.processes import manage, server, worker
from recur_cli.runs import runs
from recur_cli.schedules import schedules
from recur_cli.tokens import tokens
from recur_cli.webhooks import webhooks
from recur_cli.workflows import workflows


@click.group(cls=ApiGroup)
@click.option("--url", envvar="RECUR_URL", default=DEFAULT_URL, show_default=True,
              help="The Recur server (RECUR_URL).")
@click.option("--token", envvar="RECUR_TOKEN", help="Your API token (RECUR_TOKEN).")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answers.")
@click.version_option(package_name="recur", message="recur %(version)s")
@click.pass_context
def cli(ctx: click.Context, url: str, token: str | None, as_json: bool) -> None:
    """Operate a Recur server from the command line.

    Exit status: 0 done, 1 the API refused or could not be reached (its message on stderr), 2 usage.

    Shell completion (bash): eval "$(_RECUR_COMPLETE=bash_source recur)"; zsh_source and fish_source too.
    """
    ctx.obj = Context(url=url, token=token, json=as_json)


cli.add_command(schedules)
register_explain(schedules)
cli.add_command(workflows)
cli.add_command(runs)
cli.add_command(breaker)
cli.add_command(webhooks)
cli.add_command(tokens)
cli.add_command(owners)
cli.add_command(events)
cli.add_command(me)
cli.add_command(apply)
cli.add_command(import_group)
cli.add_command(calendars)
cli.add_command(server)
cli.add_command(worker)
cli.add_command(manage)


@cli.group("tasks")
def tasks() -> None:
    """The tasks the server's code registered: what a workflow may run."""


@tasks.command("list")
@json_option
def list_tasks() -> None:
    """Every registered task, with its import path."""
    found = current().client.tasks()
    if current().json:
        output.emit_json({"items": found})
        return
    output.table(found, [("NAME", lambda t: t["name"]), ("PATH", lambda t: t["path"])], empty="no tasks")


@cli.command("health")
@click.option("--ready", is_flag=True, help="The readiness form: exit 1 unless the status is ok (also when a "
              "queue with active schedules has no live worker).")
@json_option
def health(ready: bool) -> None:
    """Whether the server's database and Redis answer and which queues have live workers (with counts for an
    admin)."""
    client = current().client
    try:
        answer: Any = client.health(ready=ready)
    except ApiError as exc:  # a 503 still carries the body that says what is down
        body = exc.body
        if not isinstance(body, dict) or "database" not in body:
            raise
        answer = body
        _show_health(answer)
        raise click.exceptions.Exit(1) from None
    _show_health(answer)


def _show_health(answer: dict[str, Any]) -> None:
    if current().json:
        output.emit_json(answer)
        return
    output.fields({"status": answer.get("status"), "version": answer.get("version"),
                   "database": answer.get("database"), "redis": answer.get("redis"),
                   "workers": ", ".join(f"{queue} {count}" for queue, count in (answer.get("workers") or {}).items())
                   or "none alive"})
    if answer.get("queues_without_workers"):
        click.echo(f"no live worker on: {', '.join(answer['queues_without_workers'])} (their schedules do not run)")
    for section in ("schedules", "reconciler"):
        if isinstance(answer.get(section), dict):
            click.echo(f"{section}:")
            for key, value in answer[section].items():
                click.echo(f"  {key}: {value}")
