"""`recur schedules explain ID [--at T]`: why a schedule did or didn't run at a time (docs/explain.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from recur_cli import output
from recur_cli.context import current, json_option

# The facts worth a line, in the order they answer the question; empty ones are left out.
_LINES = (("nominal", "tick"), ("late_seconds", "late (s)"), ("attempts", "attempts"), ("reason", "reason"),
          ("paused_by", "paused by"), ("paused_at", "paused at"), ("pause_note", "pause note"),
          ("breaker_since", "breaker open since"), ("moved_to", "moved to"), ("next_tick", "next tick"))


def register(group: click.Group) -> None:
    """Add `explain` to `recur schedules`."""
    group.add_command(explain)


@click.command("explain")
@click.argument("schedule_id")
@click.option("--at", "at", help="The time asked about, ISO 8601 (UTC without an offset; default: now).")
@json_option
def explain(schedule_id: str, at: str | None) -> None:
    """Why the schedule did or didn't run at --at, or at its nearest tick to it: ran, missed or skipped (and
    why), not a tick, paused then (by whom), its breaker open, or when it will run."""
    answer = current().client.schedules.explain(schedule_id, at)
    if current().json:
        output.emit_json(answer)
        return
    click.echo(f"{answer['kind']}: {answer['summary']}")
    fields: Mapping[str, Any] = answer  # read by the names in _LINES
    for key, label in _LINES:
        if fields.get(key) not in (None, "", 0):
            click.echo(f"  {label}: {output.text(fields[key])}")
    for name in ("run", "held_by"):
        row: Any = answer.get(name)
        if row:
            label = "run" if name == "run" else "held by"
            click.echo(f"  {label}: {row['id']} ({row['status']}, {row['trigger']}, started {row['started_at']})")
    for note in answer.get("notes") or []:
        click.echo(f"  note: {note}")
