"""The console's owner pages, for admins only (anyone else gets a 403, as the API's /owners/): the owners with
their quotas, a form to make one (checked by the API's OwnerIn, made through recur_server.services.owners; its first
token
shown once, in the answer to that form) and deleting one with everything it owns, recorded in the owners'
audit trail as the API records it."""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from sqlalchemy import select

from recur_server.auth.models import Owner
from recur_server.auth.scope import caller
from recur_server.console import forms, session
from recur_server.console.paging import after_of
from recur_server.console.views import PAGE, Page, console
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.schemas.owners import OwnerIn
from recur_server.services import owners as accounts
from recur_server.services import queries, quotas

_OWNER_IN = OwnerIn()


def admin() -> Owner:
    owner = caller()
    if not owner.is_admin:
        abort(403, description="Only an admin may manage owners.")
    return owner


@console.route("/owners", methods=["GET", "POST"])
@session.signed_in
def owner_list() -> Page:
    me = admin()
    errors: dict[str, list[str]] = {}
    values = {"name": "", "is_admin": "", "created": ""}
    created = None
    if request.method == "POST":
        values = {"name": (request.form.get("name") or "").strip(), "is_admin": request.form.get("is_admin") or "",
                  "created": ""}
        data, errors = forms.loaded(_OWNER_IN, {"name": values["name"], "is_admin": values["is_admin"] == "on"})
        if not errors:
            now = clock.utcnow()
            try:
                created = accounts.create_owner(data["name"], data["is_admin"], now)
            except accounts.NameTaken as exc:
                db.session.rollback()
                errors = {"name": [str(exc)]}
            else:
                owner = db.session.get(Owner, created.token.owner_id)
                assert owner is not None
                accounts.record_owner(owner, me, "owner.created", now, {"is_admin": owner.is_admin})
                db.session.commit()
                values = {"name": "", "is_admin": "", "created": owner.name}
    after = after_of(queries.OWNERS)
    found = queries.keyset_page(select(Owner), queries.OWNERS, PAGE, after=after)
    page = render_template("owners.html", owners=found.items, total=found.total, total_capped=found.total_capped,
                           older=found.next, first=after is not None, v=values, errors=errors, created=created,
                           quotas={o.id: quotas.table(o) for o in found.items}, me=me)
    return (page, 422) if errors else page


@console.route("/owners/<int:owner_id>/delete", methods=["GET", "POST"])
@session.signed_in
def owner_delete(owner_id: int) -> Page:
    me = admin()
    owner = db.session.get(Owner, owner_id) if owner_id <= queries.INT_MAX else None
    if owner is None:
        abort(404, description=f"owner {owner_id} does not exist")
    if owner.id == me.id:
        flash("An admin cannot delete their own owner.")
        return redirect(url_for("console.owner_list"))
    if request.method == "GET":
        return render_template("confirm.html", title=f"Delete owner {owner.name}?",
                               text="Everything it owns goes with it: its tokens (and console sessions), workflows, "
                                    "schedules with their runs, webhooks and their deliveries. What stays, for admins, "
                                    "is its schedules' audit trail and the record that you deleted it. It cannot be "
                                    "undone.", button="Delete it and everything it owns",
                               back=url_for("console.owner_list"))
    name = owner.name
    accounts.delete_owner(owner, me, clock.utcnow())
    flash(f"Deleted owner {name} and everything it owned.")
    return redirect(url_for("console.owner_list"))
