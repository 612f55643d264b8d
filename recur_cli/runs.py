"""`recur runs ...`: a schedule's runs and the runs outside its timing: list, show, trigger, backfill, backfills,
cancel-backfill (list, trigger and backfill are also `recur schedules runs|trigger|backfill`)."""

from __future__ import annotations

import click

from recur_cli import output, schedules
from recur_cli.context import current, emit, json_option, page_options

BACKFILL_COLUMNS: list[output.Column] = [
    ("ID", lambda b: b["id"]),
    ("STATUS", lambda b: b["status"]),
    ("DONE", lambda b: f"{b['done']}/{b['total']}"),
    ("START", lambda b: b["start"]),
    ("END", lambda b: b["end"]),
    ("OVERLAP", lambda b: b.get("overlap")),
    ("CREATED", lambda b: b["created_at"]),
    ("FINISHED", lambda b: b.get("finished_at")),
]


@click.group("runs")
def runs() -> None:
    """Runs: a schedule's history, manual runs and backfills."""


runs.add_command(schedules.runs, "list")
runs.add_command(schedules.trigger, "trigger")
# What a run's task left behind, each under its own heading, after the run's fields.
LEFT_BEHIND = ("traceback", "output", "logs", "result")
runs.add_command(schedules.backfill, "backfill")


@runs.command("show")
@click.argument("schedule_id")
@click.argument("run_id")
@json_option
def show(schedule_id: str, run_id: str) -> None:
    """One run: its fields, its error's traceback, the task's output (stdout and stderr), its log lines and
    its return value."""
    run = current().client.schedules.run(schedule_id, run_id)

    def human() -> None:
        output.fields(run, [k for k in run if k not in LEFT_BEHIND])
        for name in LEFT_BEHIND:
            text = run.get(name)
            if text is not None:
                click.echo(f"\n--- {name}")
                click.echo(str(text).rstrip("\n"))

    emit(run, human)


@runs.command("backfills")
@click.argument("schedule_id")
@page_options
@json_option
def backfills(schedule_id: str, limit: int | None, offset: int | None, cursor: str | None) -> None:
    """A schedule's backfills, newest first, with their progress."""
    answer = current().client.schedules.backfills(schedule_id, limit=limit, offset=offset, cursor=cursor)
    emit(answer, lambda: output.page(answer, BACKFILL_COLUMNS, empty="no backfills"))


@runs.command("cancel-backfill")
@click.argument("schedule_id")
@click.argument("backfill_id")
@json_option
def cancel_backfill(schedule_id: str, backfill_id: str) -> None:
    """Cancel a backfill: the run going on ends, the times not started are not run."""
    backfill = current().client.schedules.cancel_backfill(schedule_id, backfill_id)
    emit(backfill, lambda: click.echo(f"backfill {backfill['id']} {backfill['status']}: "
                                      f"{backfill['done']} of {backfill['total']} runs done"))
