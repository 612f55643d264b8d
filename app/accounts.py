"""Owners and their tokens, made and revoked the same way whoever asks: the API (/owners/, /tokens/) and the
`flask owners` / `flask tokens` commands. The caller commits."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from app.auth.models import ApiToken, Owner
from app.auth.tokens import Issued, issue
from app.extensions import db

FIRST_TOKEN = "first token"


class NameTaken(Exception):
    """Owner names are unique."""

    def __init__(self, name: str) -> None:
        super().__init__(f"an owner named {name!r} exists already")


def create_owner(name: str, is_admin: bool, now: datetime) -> Issued:
    """A new owner and its first token (the secret is in the answer only); NameTaken if the name is in use."""
    if db.session.scalar(select(Owner).where(Owner.name == name)) is not None:
        raise NameTaken(name)
    owner = Owner(name=name, is_admin=is_admin, created_at=now)
    db.session.add(owner)
    db.session.flush()
    return issue(owner, FIRST_TOKEN, now)


def revoke(token: ApiToken, now: datetime) -> None:
    """The token stops working at once; revoking a revoked token changes nothing."""
    if token.revoked_at is None:
        token.revoked_at = now
