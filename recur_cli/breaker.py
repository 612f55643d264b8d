"""`recur breaker ...`: a workflow's circuit breaker: show (state and newest transitions), reset."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from recur_cli import output
from recur_cli.context import current, emit, json_option
from recur_cli.schedules import workflow_id

HISTORY_COLUMNS: list[output.Column] = [
    ("AT", lambda t: t["at"]),
    ("FROM", lambda t: t["from"]),
    ("TO", lambda t: t["to"]),
    ("REASON", lambda t: t.get("reason")),
    ("BY", lambda t: t.get("by")),
]


def show_breaker(breaker: Mapping[str, Any]) -> None:
    output.fields({k: v for k, v in breaker.items() if k != "history"})
    if breaker["history"]:
        click.echo("history (oldest first):")
        output.table(breaker["history"], HISTORY_COLUMNS)


@click.group("breaker")
def breaker() -> None:
    """A workflow's circuit breaker."""


@breaker.command("show")
@click.argument("workflow")
@json_option
def show(workflow: str) -> None:
    """The breaker of WORKFLOW (id or name): state, consecutive failures, newest 100 transitions."""
    answer = current().client.workflows.breaker(workflow_id(workflow))
    emit(answer, lambda: show_breaker(answer))


@breaker.command("reset")
@click.argument("workflow")
@json_option
def reset(workflow: str) -> None:
    """Close the breaker of WORKFLOW (id or name) by hand: its schedules' ticks run again."""
    answer = current().client.workflows.reset_breaker(workflow_id(workflow))
    emit(answer, lambda: click.echo(f"breaker of workflow {answer['workflow_id']}: {answer['state']}"))
