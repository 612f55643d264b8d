"""`flask owners ...` and `flask tokens ...`: the first owner and token come from the command line."""

from __future__ import annotations

import click
from flask import Flask
from sqlalchemy import func, select

from recur_server.auth.models import ApiToken, Owner
from recur_server.auth.tokens import issue
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.services import owners as accounts


def init_app(app: Flask) -> None:
    owners = click.Group("owners", help="Owners (people or service accounts) of workflows and schedules.")
    tokens = click.Group("tokens", help="API tokens of owners.")

    @owners.command("create")
    @click.argument("name")
    @click.option("--admin", is_flag=True, help="the owner sees and manages everything")
    def create_owner(name: str, admin: bool) -> None:
        """Create an owner and its first token; the token is the last line printed, and is shown only once."""
        try:
            issued = accounts.create_owner(name, admin, clock.utcnow())
        except accounts.NameTaken as exc:
            raise click.ClickException(str(exc)) from exc
        db.session.commit()
        made = f"owner {issued.token.owner_id} {name!r} created{' (admin)' if admin else ''}"
        click.echo(f"{made}; its token, shown only once:")
        click.echo(issued.secret)

    @owners.command("bootstrap")
    def bootstrap() -> None:
        """If no token exists yet (a fresh database), make one for the first admin and print it, once."""
        if db.session.scalar(select(func.count()).select_from(ApiToken)):
            return
        admin = db.session.scalar(select(Owner).where(Owner.is_admin.is_(True)).order_by(Owner.id))
        now = clock.utcnow()
        if admin is None:
            admin = Owner(name="admin", is_admin=True, created_at=now)
            db.session.add(admin)
            db.session.flush()
        issued = issue(admin, "first token", now)
        db.session.commit()
        click.echo(f"Admin token for owner {admin.name!r}, shown only once (more: `recur manage owners create NAME` "
                   "or `recur manage tokens create OWNER_NAME`; in a checkout, flask --app recur_server:create_app):")
        click.echo(issued.secret)

    @tokens.command("create")
    @click.argument("owner_name")
    @click.option("--name", default="cli token", help="what the token is for")
    def create_token(owner_name: str, name: str) -> None:
        """Make another token for an owner; the token is the last line printed, and is shown only once."""
        owner = db.session.scalar(select(Owner).where(Owner.name == owner_name))
        if owner is None:
            raise click.ClickException(f"no owner named {owner_name!r}")
        issued = issue(owner, name, clock.utcnow())
        db.session.commit()
        click.echo(f"token {issued.token.id} for {owner_name!r}, shown only once:")
        click.echo(issued.secret)

    @tokens.command("revoke")
    @click.argument("token_id", type=int)
    def revoke_token(token_id: int) -> None:
        """Revoke a token by its id: it stops working at once."""
        token = db.session.get(ApiToken, token_id)
        if token is None:
            raise click.ClickException(f"no token {token_id}")
        accounts.revoke(token, clock.utcnow())
        db.session.commit()
        click.echo(f"token {token_id} revoked")

    app.cli.add_command(owners)
    app.cli.add_command(tokens)
