"""Owners and their tokens, made and revoked the same way whoever asks: the API (/owners/, /tokens/), the
console and the `flask owners` / `flask tokens` commands. The caller commits, except where a function says."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select

from recur_server.auth.models import ApiToken, Owner, OwnerEvent
from recur_server.auth.tokens import Issued, issue
from recur_server.infra.extensions import db
from recur_server.models import Schedule, Workflow
from recur_server.notify import outbox
from recur_server.services import quotas, schedules

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


class ExpiryPassed(Exception):
    """A new token's expiry must be in the future."""


def create_token(owner: Owner, name: str, expires_at: datetime | None, now: datetime) -> Issued:
    """A new token of `owner` (committed; the secret is in the answer only). ExpiryPassed for an expiry not
    in the future; quotas.QuotaExceeded at the owner's quota of active tokens."""
    if expires_at is not None and expires_at <= now:
        raise ExpiryPassed("must be in the future")
    quotas.require_room(owner.id, "tokens", now)
    issued = issue(owner, name, now, expires_at)
    db.session.commit()
    return issued


def record_owner(owner: Owner, actor: Owner, action: str, now: datetime, changes: dict[str, object]) -> None:
    """The admins' record of an owner made, changed or deleted, kept after the owner is gone."""
    db.session.add(OwnerEvent(owner_id=owner.id, owner_name=owner.name, actor_id=actor.id, actor_name=actor.name,
                              action=action, at=now, changes=changes))


def delete_owner(owner: Owner, admin: Owner, now: datetime) -> None:
    """The owner and everything it owns (committed): tokens (and so console sessions), workflows, schedules
    with their runs and pending links, webhooks, events, deliveries and their attempts. The audit trail of its
    schedules and the record of its deletion by `admin` stay."""
    ids = list(db.session.scalars(select(Schedule.id).where(Schedule.owner_id == owner.id)))
    schedules.remove(ids, now)  # their runs and pending links go too
    outbox.remove_owner(owner.id)
    db.session.execute(delete(Workflow).where(Workflow.owner_id == owner.id))
    record_owner(owner, admin, "owner.deleted", now, {"schedules": len(ids)})
    db.session.execute(delete(Owner).where(Owner.id == owner.id))  # tokens and console sessions by cascade
    db.session.commit()
