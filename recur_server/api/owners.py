"""Who is calling, their tokens, and (for admins) the owners: /me/, /tokens/, /owners/."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from sqlalchemy import select

from recur_server.api.blueprint import api
from recur_server.api.errors import ApiError, not_found
from recur_server.auth.models import ApiToken, Owner
from recur_server.auth.scope import caller
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.schemas.fields import Joined
from recur_server.schemas.owners import (
    OwnerCreatedOut,
    OwnerIn,
    OwnerOut,
    OwnerPage,
    OwnerPageIn,
    OwnerPatchIn,
    TokenCreatedOut,
    TokenIn,
    TokenPage,
    TokenPageIn,
)
from recur_server.services import owners as accounts
from recur_server.services import quotas
from recur_server.services.queries import INT_MAX, OWNERS, TOKENS, Page, keyset_page


def admin_only() -> Owner:
    owner = caller()
    if not owner.is_admin:
        raise ApiError(403, "forbidden", "Only an admin may manage owners.")
    return owner


@api.route("/me/", endpoint="me")
class Me(MethodView):
    @api.response(200, OwnerOut)
    def get(self) -> Owner:
        """The calling owner"""
        return caller()


@api.route("/tokens/", endpoint="tokens")
class Tokens(MethodView):
    @api.arguments(TokenPageIn, location="query")
    @api.response(200, TokenPage)
    def get(self, query: dict[str, Any]) -> Page:
        """The caller's API tokens (never their secrets), oldest first"""
        mine = select(ApiToken).where(ApiToken.owner_id == caller().id)
        return keyset_page(mine, TOKENS, query["limit"], query["offset"], query.get("cursor"))

    @api.arguments(TokenIn)
    @api.response(201, TokenCreatedOut)
    def post(self, data: dict[str, Any]) -> Joined:
        """Create an API token (its secret is shown once)"""
        issued = accounts.create_token(caller(), data["name"], data.get("expires_at"), clock.utcnow())
        return Joined(issued.token, token=issued.secret)


@api.route("/tokens/<int:token_id>/", endpoint="token")
class TokenItem(MethodView):
    @api.response(204)
    @api.errors(404)
    def delete(self, token_id: int) -> None:
        """Revoke one of the caller's tokens"""
        token = db.session.get(ApiToken, token_id) if token_id <= INT_MAX else None
        if token is None or token.owner_id != caller().id:
            raise not_found("token", token_id)
        accounts.revoke(token, clock.utcnow())
        db.session.commit()


@api.route("/owners/", endpoint="owners")
class Owners(MethodView):
    @api.arguments(OwnerPageIn, location="query")
    @api.response(200, OwnerPage)
    @api.errors(403)
    def get(self, query: dict[str, Any]) -> Page:
        """List owners, oldest first (admin)"""
        admin_only()
        return keyset_page(select(Owner), OWNERS, query["limit"], query["offset"], query.get("cursor"))

    @api.arguments(OwnerIn)
    @api.response(201, OwnerCreatedOut)
    @api.errors(403)
    def post(self, data: dict[str, Any]) -> Joined:
        """Create an owner and its first token (admin)"""
        admin_only()
        now = clock.utcnow()
        issued = accounts.create_owner(data["name"], data["is_admin"], now)
        owner = db.session.get(Owner, issued.token.owner_id)
        assert owner is not None
        accounts.record_owner(owner, caller(), "owner.created", now, {"is_admin": owner.is_admin})
        db.session.commit()
        return Joined(owner, token=Joined(issued.token, token=issued.secret))


@api.route("/owners/<int:owner_id>/", endpoint="owner")
class OwnerItem(MethodView):
    @api.arguments(OwnerPatchIn)
    @api.response(200, OwnerOut)
    @api.errors(403, 404)
    def patch(self, data: dict[str, Any], owner_id: int) -> Owner:
        """Set one owner's quotas (admin)

        `{"quotas": {"schedules": 50000}}` gives this owner a limit of its own; null goes back to the
        RECUR_MAX_*_PER_OWNER default. Quotas not named are left as they are. Lowering one below what the
        owner holds removes nothing: it refuses further creates until the owner is under it again.
        """
        admin_only()
        owner = db.session.get(Owner, owner_id, with_for_update=True) if owner_id <= INT_MAX else None
        if owner is None:
            raise not_found("owner", owner_id)
        for quota, value in data["quotas"].items():
            setattr(owner, quotas.COLUMNS[quota], value)
        accounts.record_owner(owner, caller(), "owner.quotas_changed", clock.utcnow(), {"quotas": data["quotas"]})
        db.session.commit()
        return owner

    @api.response(204)
    @api.errors(403, 404)
    def delete(self, owner_id: int) -> None:
        """Delete an owner and everything it owns (admin)

        Everything of the owner goes with it: tokens (and so console sessions), workflows, schedules with their
        runs and pending links, webhooks, events, deliveries and their attempts. What stays, for admins only, is
        the audit trail of its schedules (GET /schedules/{id}/events/) and the record that it was deleted, by
        whom (GET /audit/owners/).
        """
        admin = admin_only()
        owner = db.session.get(Owner, owner_id) if owner_id <= INT_MAX else None
        if owner is None:
            raise not_found("owner", owner_id)
        if owner.id == admin.id:
            raise ApiError(400, "invalid_state", "An admin cannot delete their own owner.")
        accounts.delete_owner(owner, admin, clock.utcnow())
