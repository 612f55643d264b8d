"""Owners, their quotas and tokens, and the owners' audit trail."""

from __future__ import annotations

from typing import Any, TypedDict


class Quota(TypedDict):
    limit: int
    override: int | None


class Quotas(TypedDict):
    schedules: Quota
    webhooks: Quota
    tokens: Quota


class Owner(TypedDict):
    id: int
    name: str
    is_admin: bool
    created_at: str
    quotas: Quotas


class Token(TypedDict):
    id: int
    name: str
    prefix: str
    owner_id: int
    created_at: str
    last_used_at: str | None
    expires_at: str | None
    revoked_at: str | None


class CreatedToken(Token):
    """A new token with its secret, `token`: the only answer that ever shows it."""

    token: str


class CreatedOwner(Owner):
    """A new owner with its first token (secret included, shown once)."""

    token: CreatedToken


class OwnerEvent(TypedDict):
    """An entry of the owners' audit trail (admin)."""

    id: int
    owner_id: int
    owner_name: str
    actor_id: int | None
    actor: str
    action: str
    at: str
    changes: Any | None
