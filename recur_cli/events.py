"""`recur events ...`: the audit trail: a schedule's (who created, changed, paused it) and the owners' (admin)."""

from __future__ import annotations

import click

from recur_cli import output
from recur_cli.context import current, emit, json_option, page_options
from recur_cli.owners import EVENT_COLUMNS as OWNER_EVENT_COLUMNS

COLUMNS: list[output.Column] = [
    ("ID", lambda e: e["id"]),
    ("AT", lambda e: e["at"]),
    ("ACTION", lambda e: e["action"]),
    ("BY", lambda e: e.get("actor")),
    ("CHANGES", lambda e: e.get("changes")),
]


@click.group("events")
def events() -> None:
    """The audit trail."""


@events.command("schedule")
@click.argument("schedule_id")
@page_options
@json_option
def schedule_events(schedule_id: str, limit: int | None, offset: int | None, cursor: str | None) -> None:
    """Who changed SCHEDULE_ID and how, newest first (kept after it is deleted, for admins)."""
    answer = current().client.schedules.events(schedule_id, limit=limit, offset=offset, cursor=cursor)
    emit(answer, lambda: output.page(answer, COLUMNS, empty="no events"))


@events.command("owners")
@page_options
@json_option
def owner_events(limit: int | None, offset: int | None, cursor: str | None) -> None:
    """Owners made, changed and deleted, and by whom, newest first (admin; also `recur owners events`)."""
    answer = current().client.owners.events(limit=limit, offset=offset, cursor=cursor)
    emit(answer, lambda: output.page(answer, OWNER_EVENT_COLUMNS, empty="no events"))
