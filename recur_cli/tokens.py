"""`recur tokens ...`: your API tokens: create (the secret shown once), list, revoke."""

from __future__ import annotations

import click

from recur_cli import output
from recur_cli.context import current, emit, json_option, page_options

COLUMNS: list[output.Column] = [
    ("ID", lambda t: t["id"]),
    ("NAME", lambda t: t["name"]),
    ("PREFIX", lambda t: t["prefix"]),
    ("CREATED", lambda t: t["created_at"]),
    ("LAST USED", lambda t: t.get("last_used_at")),
    ("EXPIRES", lambda t: t.get("expires_at")),
    ("REVOKED", lambda t: t.get("revoked_at")),
]


@click.group("tokens")
def tokens() -> None:
    """Your API tokens."""


@tokens.command("create")
@click.argument("name")
@click.option("--expires-at", help="When it stops working (ISO 8601); never if left out.")
@json_option
def create(name: str, expires_at: str | None) -> None:
    """Create a token; its secret is printed this once (the last line, for scripts)."""
    made = current().client.tokens.create(name, expires_at)

    def human() -> None:
        click.echo(f"created token {made['id']} ({made['name']}); its secret, shown once:")
        click.echo(made["token"])

    emit(made, human)


@tokens.command("list")
@page_options
@json_option
def list_tokens(limit: int | None, offset: int | None, cursor: str | None) -> None:
    """Your tokens (never their secrets), oldest first."""
    answer = current().client.tokens.list(limit=limit, offset=offset, cursor=cursor)
    emit(answer, lambda: output.page(answer, COLUMNS, empty="no tokens"))


@tokens.command("revoke")
@click.argument("token_id", type=int)
@json_option
def revoke(token_id: int) -> None:
    """Revoke one of your tokens: it is refused from now on (and console sessions made with it end)."""
    current().client.tokens.revoke(token_id)
    emit({"revoked": token_id}, lambda: click.echo(f"revoked token {token_id}"))
