"""Per-owner quotas: how many schedules, webhooks and active tokens one owner may hold.

Each quota has a default setting (RECUR_MAX_SCHEDULES_PER_OWNER, ...) and an override an admin may set for one
owner (owners.max_schedules, ...; NULL: the default). A create checks with one count over the owner_id index,
in its own transaction and after locking the owner's row: PostgreSQL's FOR NO KEY UPDATE (which the foreign-key
checks of the inserts, KEY SHARE, do not wait for) makes one owner's concurrent creates take turns, and SQLite's
transactions hold the write lock from BEGIN IMMEDIATE. So concurrent creates cannot overshoot a quota; other
owners' creates are not held up.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import current_app
from sqlalchemy import Select, func, select

from recur_server.auth.models import ApiToken, Owner
from recur_server.infra.extensions import db
from recur_server.notify.models import Webhook

QUOTAS = ("schedules", "webhooks", "tokens")
SETTINGS = {"schedules": "RECUR_MAX_SCHEDULES_PER_OWNER", "webhooks": "RECUR_MAX_WEBHOOKS_PER_OWNER",
            "tokens": "RECUR_MAX_TOKENS_PER_OWNER"}
COLUMNS = {"schedules": "max_schedules", "webhooks": "max_webhooks", "tokens": "max_tokens"}
_NOUNS = {"schedules": "schedules", "webhooks": "webhooks", "tokens": "active tokens"}


class QuotaExceeded(Exception):
    """The owner holds as many as its quota allows; `errors` names the quota ({quota: [message]})."""

    def __init__(self, quota: str, message: str, room: int = 0) -> None:
        super().__init__(message)
        self.quota, self.room = quota, room
        self.message = message
        self.errors = {quota: [message]}


def limit_of(quota: str, override: int | None) -> int:
    """The limit in force: the admin's override, else the setting."""
    return int(current_app.config[SETTINGS[quota]]) if override is None else override


def table(owner: Owner) -> dict[str, dict[str, int | None]]:
    """Each quota's limit for this owner and the admin's override (None: the setting's default)."""
    overrides = {quota: getattr(owner, COLUMNS[quota]) for quota in QUOTAS}
    return {quota: {"limit": limit_of(quota, override), "override": override} for quota, override in overrides.items()}


def _count(owner_id: int, quota: str, now: datetime) -> Select[Any]:
    if quota == "webhooks":
        return select(func.count()).select_from(Webhook).where(Webhook.owner_id == owner_id)
    # active: neither revoked nor expired, as recur_server.auth.tokens.authenticate judges a token
    return select(func.count()).select_from(ApiToken).where(
        (ApiToken.owner_id == owner_id) & ApiToken.revoked_at.is_(None)
        & (ApiToken.expires_at.is_(None) | (ApiToken.expires_at > now)))


def require_room(owner_id: int, quota: str, now: datetime, adding: int = 1) -> None:
    """Raise QuotaExceeded unless the owner may hold `adding` more; call it in the transaction that creates
    them. Its `room` says how many more it may hold."""
    override_column = getattr(Owner, COLUMNS[quota])
    name, override, schedules_held = db.session.execute(
        select(Owner.name, override_column, Owner.schedules_held).where(Owner.id == owner_id)
        .with_for_update(key_share=True)).one()
    limit = limit_of(quota, override)
    # Schedules: the owner's count, kept by the database (Owner.schedules_held), not a count of a million rows.
    held = schedules_held if quota == "schedules" else db.session.scalar(_count(owner_id, quota, now)) or 0
    if held + adding > limit:
        source = "its own quota, set by an admin" if override is not None else SETTINGS[quota]
        raise QuotaExceeded(quota, f"owner {name} has {held} of {limit} {_NOUNS[quota]} ({source}); "
                                   "ask an admin to raise it", room=max(0, limit - held))
