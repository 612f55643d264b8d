"""`recur webhooks ...`: create (the secret shown once), list, show, edit, delete, deliveries, redeliver."""

from __future__ import annotations

from typing import Any

import click

from recur_cli import output
from recur_cli.context import current, emit, json_option, page_options

COLUMNS: list[output.Column] = [
    ("ID", lambda w: w["id"]),
    ("URL", lambda w: w["url"]),
    ("EVENTS", lambda w: ",".join(w["event_types"])),
    ("OWNER", lambda w: w.get("owner_id")),
    ("CREATED", lambda w: w.get("created_at")),
]
ATTEMPT_COLUMNS: list[output.Column] = [
    ("DELIVERY", lambda a: a["delivery_id"]),
    ("ATTEMPT", lambda a: a["attempt"]),
    ("AT", lambda a: a["at"]),
    ("EVENT", lambda a: a["event_type"]),
    ("EVENT ID", lambda a: a["event_id"]),
    ("STATUS", lambda a: a.get("status_code")),
    ("MS", lambda a: a.get("duration_ms")),
    ("ERROR", lambda a: a.get("error")),
    ("REQUESTED BY", lambda a: a.get("requested_by")),
]


@click.group("webhooks")
def webhooks() -> None:
    """Webhooks: signed HTTP calls when schedules' events happen, with a delivery log."""


@webhooks.command("create")
@click.argument("url")
@click.option("--event", "events", multiple=True, required=True,
              help="An event type to send (repeatable), e.g. run.failed; see docs/notifications.md.")
@click.option("--secret", help="Your own signing secret (whsec_...); the server makes one if left out.")
@json_option
def create(url: str, events: tuple[str, ...], secret: str | None) -> None:
    """Create a webhook; its signing secret is printed this once."""
    made = current().client.webhooks.create(url, list(events), secret)

    def human() -> None:
        click.echo(f"created webhook {made['id']} for {', '.join(made['event_types'])}")
        click.echo(f"secret (shown once; verify signatures with it): {made['secret']}")

    emit(made, human)


@webhooks.command("list")
@page_options
@json_option
def list_webhooks(limit: int | None, offset: int | None, cursor: str | None) -> None:
    """Your webhooks, oldest first."""
    answer = current().client.webhooks.list(limit=limit, offset=offset, cursor=cursor)
    emit(answer, lambda: output.page(answer, COLUMNS, empty="no webhooks"))


@webhooks.command("show")
@click.argument("webhook_id", type=int)
@json_option
def show(webhook_id: int) -> None:
    """One webhook (its secret is never shown again)."""
    webhook = current().client.webhooks.get(webhook_id)
    emit(webhook, lambda: output.fields(webhook))


@webhooks.command("edit")
@click.argument("webhook_id", type=int)
@click.option("--url", help="A new URL to send to.")
@click.option("--event", "events", multiple=True,
              help="The event types to send from now on (repeatable): they replace the webhook's.")
@json_option
def edit(webhook_id: int, url: str | None, events: tuple[str, ...]) -> None:
    """Change a webhook's URL or event types; its secret stays, so receivers need nothing new."""
    if url is None and not events:
        raise click.UsageError("give --url or --event")
    webhook = current().client.webhooks.update(webhook_id, url=url, event_types=list(events) or None)
    emit(webhook, lambda: click.echo(f"changed webhook {webhook_id}: {webhook['url']} for "
                                     f"{', '.join(webhook['event_types'])}"))


@webhooks.command("delete")
@click.argument("webhook_id", type=int)
@json_option
def delete(webhook_id: int) -> None:
    """Delete a webhook: nothing more is sent to it."""
    current().client.webhooks.delete(webhook_id)
    emit({"deleted": webhook_id}, lambda: click.echo(f"deleted webhook {webhook_id}"))


@webhooks.command("deliveries")
@click.argument("webhook_id", type=int)
@page_options
@json_option
def deliveries(webhook_id: int, limit: int | None, offset: int | None, cursor: str | None) -> None:
    """The webhook's delivery log: every attempt, newest first, and how many deliveries are pending."""
    answer = current().client.webhooks.deliveries(webhook_id, limit=limit, offset=offset, cursor=cursor)

    def human() -> None:
        output.page(answer, ATTEMPT_COLUMNS, empty="no attempts yet")
        click.echo(f"pending deliveries: {answer['pending']}")

    emit(answer, human)


@webhooks.command("redeliver")
@click.argument("webhook_id", type=int)
@click.argument("delivery_id", type=int)
@json_option
def redeliver(webhook_id: int, delivery_id: int) -> None:
    """Send a delivery again now (one already pending is left alone: asking twice sends once)."""
    delivery: Any = current().client.webhooks.redeliver(webhook_id, delivery_id)
    emit(delivery, lambda: click.echo(f"delivery {delivery['id']} {delivery['status']}; next attempt "
                                      f"{delivery['next_attempt_at']}"))
