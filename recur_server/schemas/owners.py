"""Owners and their tokens and quotas, and the audit trails: who changed a schedule, who made or deleted an
owner."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, fields, pre_dump, validate

from recur_server.schemas.common import Cursor, PageIn, page_of
from recur_server.schemas.fields import INT_MAX, Iso, Joined, instant, out, whole
from recur_server.services import quotas
from recur_server.services.queries import OWNER_EVENTS, OWNERS, SCHEDULE_EVENTS, TOKENS


class TokenIn(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    expires_at = instant("2030-01-01T00:00:00Z", allow_none=True)


class OwnerIn(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    is_admin = fields.Boolean(load_default=False)


class QuotaOut(Schema):
    limit = out(fields.Integer(metadata={"description": "how many the owner may hold"}))
    override = out(fields.Integer(allow_none=True, metadata={
        "description": "the limit an admin set for this owner; null: the RECUR_MAX_*_PER_OWNER default"}))


class QuotasOut(Schema):
    schedules = out(fields.Nested(QuotaOut))
    webhooks = out(fields.Nested(QuotaOut))
    tokens = out(fields.Nested(QuotaOut, metadata={"description": "active tokens: neither revoked nor expired"}))


class QuotasIn(Schema):
    """One owner's quotas, set by an admin: a number replaces the default, null goes back to it."""

    class Meta:
        unknown = RAISE

    schedules = whole(0, INT_MAX, allow_none=True)
    webhooks = whole(0, INT_MAX, allow_none=True)
    tokens = whole(0, INT_MAX, allow_none=True)


class OwnerPatchIn(Schema):
    class Meta:
        unknown = RAISE

    quotas = fields.Nested(QuotasIn, required=True)


class OwnerOut(Schema):
    id = out(fields.Integer())
    name = out(fields.String())
    is_admin = out(fields.Boolean())
    created_at = out(Iso())
    quotas = out(fields.Nested(QuotasOut))

    @pre_dump
    def _with_quotas(self, owner: Any, **_: Any) -> Joined:
        """The quotas in force for the owner: its overrides, else the settings (recur_server.services.quotas)."""
        return Joined(owner, quotas=quotas.table(owner))


class TokenOut(Schema):
    """A token as the API shows it: never its secret, except once (`token`), in the answer that made it."""

    id = out(fields.Integer())
    name = out(fields.String())
    prefix = out(fields.String())
    owner_id = out(fields.Integer())
    created_at = out(Iso())
    last_used_at = out(Iso(allow_none=True))
    expires_at = out(Iso(allow_none=True))
    revoked_at = out(Iso(allow_none=True))


class TokenCreatedOut(TokenOut):
    """The answer that made a token (dumped from the token joined with its `token` secret): the only one that
    shows the secret."""

    token = out(fields.String(metadata={"description": "the secret, shown only in the answer that made it"}))


class OwnerCreatedOut(OwnerOut):
    """An owner just made, with its first token (joined as `token`)."""

    token = out(fields.Nested(TokenCreatedOut))


class EventOut(Schema):
    id = out(fields.Integer())
    schedule_id = out(fields.String())
    actor_id = out(fields.Integer(allow_none=True))
    actor = out(fields.String(attribute="actor_name", allow_none=True))
    action = out(fields.String())
    at = out(Iso())
    changes = out(fields.Raw(allow_none=True))


class OwnerEventOut(Schema):
    """The admins' record of an owner made or deleted, kept after the owner is gone."""

    id = out(fields.Integer())
    owner_id = out(fields.Integer())
    owner_name = out(fields.String())
    actor_id = out(fields.Integer(allow_none=True))
    actor = out(fields.String(attribute="actor_name"))
    action = out(fields.String())
    at = out(Iso())
    changes = out(fields.Raw(allow_none=True))


class OwnerPageIn(PageIn):
    cursor = Cursor(OWNERS)


class TokenPageIn(PageIn):
    cursor = Cursor(TOKENS)


class EventPageIn(PageIn):
    cursor = Cursor(SCHEDULE_EVENTS)


class OwnerEventPageIn(PageIn):
    cursor = Cursor(OWNER_EVENTS)


OwnerPage = page_of(OwnerOut)
TokenPage = page_of(TokenOut)
EventPage = page_of(EventOut)
OwnerEventPage = page_of(OwnerEventOut)
