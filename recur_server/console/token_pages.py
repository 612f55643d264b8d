"""The console's token pages: the signed-in owner's API tokens (never their secrets), a form to make one with
an optional expiry (checked by the API's TokenIn, made through recur_server.services.owners; the secret shown once, in
the
answer to that form), and revoking one. Revoking the token this console session was signed in with signs it
out at once. Tokens are the caller's own, for an admin too, as in the API."""

from __future__ import annotations

from typing import Any

from flask import abort, flash, g, redirect, render_template, request, url_for
from sqlalchemy import select
from werkzeug.wrappers import Response as BaseResponse

from recur_server.auth.models import ApiToken
from recur_server.auth.scope import caller
from recur_server.console import forms, session
from recur_server.console.paging import after_of
from recur_server.console.views import PAGE, Page, console
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.schemas.owners import TokenIn
from recur_server.services import owners, queries, quotas

_TOKEN_IN = TokenIn()


def mine() -> Any:
    """The caller's tokens (the API's /tokens/ reads the same: an admin's too are only their own)."""
    return select(ApiToken).where(ApiToken.owner_id == caller().id)


@console.route("/tokens", methods=["GET", "POST"])
@session.signed_in
def token_list() -> Page:
    errors: dict[str, list[str]] = {}
    values = {"name": "", "expires_at": ""}
    created = None
    if request.method == "POST":
        values = {k: (request.form.get(k) or "").strip() for k in values}
        data, errors = forms.loaded(_TOKEN_IN, {k: v for k, v in values.items() if v})
        if not errors:
            try:
                created = owners.create_token(caller(), data["name"], data.get("expires_at"), clock.utcnow())
                values = {"name": "", "expires_at": ""}
            except owners.ExpiryPassed as exc:
                db.session.rollback()
                errors = {"expires_at": [str(exc)]}
            except quotas.QuotaExceeded as exc:
                db.session.rollback()
                errors = {"_schema": [exc.message]}
    after = after_of(queries.TOKENS)
    found = queries.keyset_page(mine(), queries.TOKENS, PAGE, after=after)
    page = render_template("tokens.html", tokens=found.items, total=found.total, total_capped=found.total_capped,
                           older=found.next, first=after is not None, v=values, errors=errors, created=created,
                           now=clock.utcnow(), current=g.token.id if g.get("token") is not None else None)
    return (page, 422) if errors else page


@console.post("/tokens/<int:token_id>/revoke")
@session.signed_in
def token_revoke(token_id: int) -> BaseResponse:
    token = db.session.scalars(mine().where(ApiToken.id == token_id)).first() if token_id <= queries.INT_MAX else None
    if token is None:
        abort(404, description=f"token {token_id} does not exist")
    signed_in_with_it = g.get("token") is not None and g.token.id == token.id
    owners.revoke(token, clock.utcnow())
    db.session.commit()
    if signed_in_with_it:
        session.sign_out()
        flash(f"Revoked token {token.name}, which this session was signed in with: sign in with another.")
        return redirect(url_for("console.signin"))
    flash(f"Revoked token {token.name}.")
    return redirect(url_for("console.token_list"))
