"""`recur workflows ...`: list, show, create, delete."""

from __future__ import annotations

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
@click.option("--offset", type=int, default=0)
@json_option
def list_workflows(limit: int, offset: int) -> None:
    """List workflows."""
    page = current().client.get("/workflows/", limit=limit, offset=offset)
    if current().json:
        output.emit_json(page)
    else:
        output.table(page["items"], COLUMNS, empty="no workflows")


@workflows.command("show")
@click.argument("workflow_id", type=int)
@json_option
def show(workflow_id: int) -> None:
    """One workflow."""
    workflow = current().client.get(f"/workflows/{workflow_id}/")
    output.emit_json(workflow) if current().json else output.fields(workflow)


@workflows.command("create")
@click.argument("name")
@click.argument("task")
@json_option
def create(name: str, task: str) -> None:
    """Create a workflow that runs the registered TASK."""
    workflow = current().client.post("/workflows/", {"name": name, "task": task})
    output.emit_json(workflow) if current().json else click.echo(f"created workflow {workflow['id']} ({name})")


@workflows.command("delete")
@click.argument("workflow_id", type=int)
@click.option("--yes", is_flag=True, help="Do not ask: its schedules are deleted with it.")
@json_option
def delete(workflow_id: int, yes: bool) -> None:
    """Delete a workflow and every schedule of it."""
    if not yes:
        click.confirm(f"Delete workflow {workflow_id} and all its schedules?", abort=True)
    current().client.delete(f"/workflows/{workflow_id}/")
    output.emit_json({"deleted": workflow_id}) if current().json else click.echo(f"deleted workflow {workflow_id}")
