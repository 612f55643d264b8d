"""`recur owners ...` (admin): list, create (its first token shown once), quotas, delete, events; `recur me`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from recur_cli import output
from recur_cli.context import current, emit, json_option, page_options

COLUMNS: list[output.Column] = [
    ("ID", lambda o: o["id"]),
    ("NAME", lambda o: o["name"]),
    ("ADMIN", lambda o: "yes" if o["is_admin"] else "no"),
    ("SCHEDULES", lambda o: o["quotas"]["schedules"]["limit"]),
    ("WEBHOOKS", lambda o: o["quotas"]["webhooks"]["limit"]),
    ("TOKENS", lambda o: o["quotas"]["tokens"]["limit"]),
    ("CREATED", lambda o: o["created_at"]),
]
EVENT_COLUMNS: list[output.Column] = [
    ("ID", lambda e: e["id"]),
    ("AT", lambda e: e["at"]),
    ("ACTION", lambda e: e["action"]),
    ("OWNER", lambda e: f"{e['owner_id']} ({e['owner_name']})"),
    ("BY", lambda e: e.get("actor")),
    ("CHANGES", lambda e: e.get("changes")),
]


def show_owner(owner: Mapping[str, Any]) -> None:
    output.fields({k: v for k, v in owner.items() if k not in ("quotas", "token")})
    for name, quota in owner["quotas"].items():
        own = " (its own)" if quota.get("override") is not None else ""
        click.echo(f"quota {name}: {quota['limit']}{own}")


@click.group("owners")
def owners() -> None:
    """Owners and their quotas (admin)."""


@owners.command("list")
@page_options
@json_option
def list_owners(limit: int | None, offset: int | None, cursor: str | None) -> None:
    """Every owner, oldest first, with their quotas."""
    answer = current().client.owners.list(limit=limit, offset=offset, cursor=cursor)
    emit(answer, lambda: output.page(answer, COLUMNS, empty="no owners"))


@owners.command("create")
@click.argument("name")
@click.option("--admin", "is_admin", is_flag=True, help="An admin: sees and manages every owner.")
@json_option
def create(name: str, is_admin: bool) -> None:
    """Create an owner and its first token; the token's secret is printed this once (the last line)."""
    made = current().client.owners.create(name, is_admin)

    def human() -> None:
        click.echo(f"created owner {made['id']} ({made['name']}); its first token's secret, shown once:")
        click.echo(made["token"]["token"])

    emit(made, human)


def _quota(value: str | None) -> int | None | str:
    if value is None:
        return None
    if value == "default":
        return "default"
    if not value.isdigit():
        raise click.BadParameter("a whole number, or 'default'")
    return int(value)


@owners.command("quotas")
@click.argument("owner_id", type=int)
@click.option("--schedules", help="Its own schedule limit, or 'default' for the server's.")
@click.option("--webhooks", help="Its own webhook limit, or 'default'.")
@click.option("--tokens", help="Its own token limit, or 'default'.")
@json_option
def quotas(owner_id: int, schedules: str | None, webhooks: str | None, tokens: str | None) -> None:
    """Set an owner's quotas (those left out stay as they are)."""
    given: dict[str, Any] = {}
    for name, value in (("schedules", schedules), ("webhooks", webhooks), ("tokens", tokens)):
        if value is not None:
            parsed = _quota(value)
            given[name] = None if parsed == "default" else parsed
    if not given:
        raise click.UsageError("give at least one of --schedules, --webhooks, --tokens")
    owner = current().client.owners.set_quotas(owner_id, **given)
    emit(owner, lambda: show_owner(owner))


@owners.command("delete")
@click.argument("owner_id", type=int)
@click.option("--yes", is_flag=True, help="Do not ask: everything it owns is deleted with it.")
@json_option
def delete(owner_id: int, yes: bool) -> None:
    """Delete an owner and everything it owns (tokens, workflows, schedules, webhooks)."""
    if not yes:
        click.confirm(f"Delete owner {owner_id} and everything it owns?", abort=True)
    current().client.owners.delete(owner_id)
    emit({"deleted": owner_id}, lambda: click.echo(f"deleted owner {owner_id}"))


@owners.command("events")
@page_options
@json_option
def events(limit: int | None, offset: int | None, cursor: str | None) -> None:
    """The owners' audit trail: owners made, changed and deleted, and by whom, newest first."""
    answer = current().client.owners.events(limit=limit, offset=offset, cursor=cursor)
    emit(answer, lambda: output.page(answer, EVENT_COLUMNS, empty="no events"))


@click.command("me")
@json_option
def me() -> None:
    """Who your token belongs to, and your quotas."""
    owner = current().client.me()
    emit(owner, lambda: show_owner(owner))
