"""`recur workflows ...`: list, show, create, delete."""

from __future__ import annotations

from typing import Any

import click

from recur_cli import output
from recur_cli.context import current, json_option

COLUMNS: list[output.Column] = [
    ("ID", lambda w: w["id"]),
    ("NAME", lambda w: w["name"]),
    ("TASK", lambda w: w["task"]),
    ("OWNER", lambda w: w.get("owner_id")),
    ("CREATED", lambda w: w.get("created_at")),
]


@click.group("workflows")
def workflows() -> None:
    """Workflows: a named task that schedules run."""


@workflows.command("list")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0, help="Skip this many workflows (at most 10,000; deeper: --cursor).")
@click.option("--cursor", default=None, help="Start after the page that printed this cursor.")
@click.option("--owner", "owner_id", type=int, help="An admin: only this owner's workflows.")
@json_option
def list_workflows(limit: int, offset: int, cursor: str | None, owner_id: int | None) -> None:
    """List workflows, oldest first, a page at a time through --cursor."""
    page = current().client.workflows.list(limit=limit, offset=offset, cursor=cursor, owner_id=owner_id)
    if current().json:
        output.emit_json(page)
        return
    output.table(page["items"], COLUMNS, empty="no workflows")
    if page.get("next"):
        click.echo(f"(more: --cursor {page['next']})")


@workflows.command("show")
@click.argument("workflow_id", type=int)
@json_option
def show(workflow_id: int) -> None:
    """One workflow."""
    workflow = current().client.workflows.get(workflow_id)
    output.emit_json(workflow) if current().json else output.fields(workflow)


def _policy_options(command: Any) -> Any:
    command = click.option("--queue", help="The queue its runs go through (one of the server's queues).")(command)
    command = click.option("--breaker-reset-seconds", "breaker_reset_seconds", type=int,
                           help="How long an open breaker waits before one probe run.")(command)
    command = click.option("--breaker-threshold", "breaker_threshold", type=int,
                           help="Consecutive failures that open its breaker.")(command)
    command = click.option("--max-concurrent-runs", "max_concurrent_runs", type=int,
                           help="Runs of all its schedules at once, across every worker.")(command)
    return click.option("--concurrency-policy", "concurrency_policy", type=click.Choice(["wait", "skip"]),
                        help="A run beyond the limit waits for a slot (wait) or is skipped (skip).")(command)


@workflows.command("create")
@click.argument("name")
@click.argument("task")
@_policy_options
@json_option
def create(name: str, task: str, **policies: Any) -> None:
    """Create a workflow that runs the registered TASK."""
    given = {k: v for k, v in policies.items() if v is not None}
    workflow = current().client.workflows.create(name, task, **given)
    output.emit_json(workflow) if current().json else click.echo(f"created workflow {workflow['id']} ({name})")


@workflows.command("edit")
@click.argument("workflow_id", type=int)
@click.option("--name", help="A new name.")
@click.option("--task", help="A new registered task (the next runs use it).")
@_policy_options
@json_option
def edit(workflow_id: int, **fields: Any) -> None:
    """Change the fields given."""
    body = {k: v for k, v in fields.items() if v is not None}
    if not body:
        raise click.UsageError("give at least one field to change")
    workflow = current().client.workflows.update(workflow_id, **body)
    output.emit_json(workflow) if current().json else click.echo(f"changed workflow {workflow_id}: {', '.join(body)}")


@workflows.command("delete")
@click.argument("workflow_id", type=int)
@click.option("--yes", is_flag=True, help="Do not ask: its schedules are deleted with it.")
@json_option
def delete(workflow_id: int, yes: bool) -> None:
    """Delete a workflow and every schedule of it."""
    if not yes:
        click.confirm(f"Delete workflow {workflow_id} and all its schedules?", abort=True)
    current().client.workflows.delete(workflow_id)
    output.emit_json({"deleted": workflow_id}) if current().json else click.echo(f"deleted workflow {workflow_id}")
