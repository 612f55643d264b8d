"""The console's webhook pages: the owner's webhooks and a form to make one (checked by the API's WebhookIn and
made through recur_server.services.webhooks; the signing secret is shown once, in the answer to that form, never
again), and a
webhook's page with its delivery log (every attempt, newest first, a page at a time by cursor, as the API's)
and a button to send a delivery again."""

from __future__ import annotations

from typing import Any

from flask import abort, flash, redirect, render_template, request, url_for
from sqlalchemy import select
from werkzeug.wrappers import Response as BaseResponse

from recur_server.auth.actor import acting
from recur_server.auth.scope import caller, scoped
from recur_server.console import forms, session
from recur_server.console.paging import after_of
from recur_server.console.views import PAGE, Page, console
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.notify import redelivery
from recur_server.notify.models import Delivery, DeliveryAttempt, Webhook
from recur_server.schemas.webhooks import EVENT_TYPES, WebhookEditIn, WebhookIn
from recur_server.services import queries, quotas, webhooks

_WEBHOOK_IN = WebhookIn()
_WEBHOOK_EDIT = WebhookEditIn(partial=True)


def owned_webhook(webhook_id: int) -> Webhook:
    webhook = queries.owned(Webhook, webhook_id)
    if webhook is None:
        abort(404, description=f"webhook {webhook_id} does not exist")
    return webhook


@console.route("/webhooks", methods=["GET", "POST"])
@session.signed_in
def webhook_list() -> Page:
    errors: dict[str, list[str]] = {}
    values: dict[str, Any] = {"url": "", "event_types": [], "secret": ""}
    created = None
    if request.method == "POST":
        values = {"url": (request.form.get("url") or "").strip(), "event_types": request.form.getlist("event_types"),
                  "secret": (request.form.get("secret") or "").strip()}
        body = {k: v for k, v in values.items() if v or k == "event_types"}
        data, errors = forms.loaded(_WEBHOOK_IN, body)
        if not errors:
            try:
                created = webhooks.create(caller().id, data, clock.utcnow())
                values = {"url": "", "event_types": [], "secret": ""}
            except webhooks.WebhookInvalid as exc:
                db.session.rollback()
                errors = exc.errors
            except quotas.QuotaExceeded as exc:
                db.session.rollback()
                errors = {"_schema": [exc.message]}
    after = after_of(queries.WEBHOOKS)
    found = queries.keyset_page(scoped(select(Webhook), Webhook), queries.WEBHOOKS, PAGE, after=after)
    page = render_template("webhooks.html", webhooks=found.items, total=found.total, total_capped=found.total_capped,
                           older=found.next, first=after is not None, v=values, errors=errors, created=created,
                           event_types=EVENT_TYPES)
    return (page, 422) if errors else page


@console.get("/webhooks/<int:webhook_id>")
@session.signed_in
def webhook_page(webhook_id: int) -> Page:
    webhook = owned_webhook(webhook_id)
    after = after_of(queries.DELIVERY_ATTEMPTS)
    found = queries.keyset_page(select(DeliveryAttempt).where(DeliveryAttempt.webhook_id == webhook.id),
                                queries.DELIVERY_ATTEMPTS, PAGE, after=after)
    ids = sorted({a.delivery_id for a in found.items})  # at most a page of them
    deliveries = {d.id: d for d in db.session.scalars(select(Delivery).where(
        Delivery.webhook_id == webhook.id, Delivery.id.in_(ids)))} if ids else {}
    return render_template("webhook.html", w=webhook, attempts=found.items, deliveries=deliveries,
                           total=found.total, total_capped=found.total_capped, older=found.next,
                           newest=after is not None, pending=webhooks.pending_count(webhook), now=clock.utcnow())


@console.post("/webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/redeliver")
@session.signed_in
def webhook_redeliver(webhook_id: int, delivery_id: int) -> BaseResponse:
    webhook = owned_webhook(webhook_id)
    try:
        delivery = webhooks.redeliver(webhook, delivery_id, acting(), clock.utcnow())
    except redelivery.EventGone as exc:
        flash(f"Delivery {delivery_id}'s event {exc} was pruned; nothing is left to send.")
    else:
        if delivery is None:
            abort(404, description=f"delivery {delivery_id} does not exist")
        flash(f"Delivery {delivery_id} was sent again and delivered." if delivery.status == "delivered"
              else f"Delivery {delivery_id} will be sent again now.")
    return redirect(url_for("console.webhook_page", webhook_id=webhook.id))


@console.route("/webhooks/<int:webhook_id>/edit", methods=["GET", "POST"])
@session.signed_in
def webhook_edit(webhook_id: int) -> Page:
    """A new URL or event types (as PATCH /webhooks/{id}/): the secret and the delivery log stay."""
    webhook = owned_webhook(webhook_id)
    values: dict[str, Any] = {"url": webhook.url, "event_types": list(webhook.event_types)}
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        values = {"url": (request.form.get("url") or "").strip(), "event_types": request.form.getlist("event_types")}
        changed = {k: v for k, v in values.items()
                   if (sorted(set(v)) if k == "event_types" else v) != getattr(webhook, k)}
        data, errors = forms.loaded(_WEBHOOK_EDIT, changed, partial=True)
        if not errors:
            try:
                if data:
                    webhooks.update(webhook, data)
            except webhooks.WebhookInvalid as exc:
                db.session.rollback()
                errors = exc.errors
            else:
                flash(f"Saved {', '.join(sorted(data))}." if data else "Nothing changed.")
                return redirect(url_for("console.webhook_page", webhook_id=webhook.id))
    page = render_template("webhook_form.html", w=webhook, v=values, errors=errors, event_types=EVENT_TYPES)
    return (page, 422) if errors else page


@console.route("/webhooks/<int:webhook_id>/delete", methods=["GET", "POST"])
@session.signed_in
def webhook_delete(webhook_id: int) -> Page:
    webhook = owned_webhook(webhook_id)
    if request.method == "GET":
        return render_template("confirm.html", title=f"Delete the webhook to {webhook.url}?",
                               text="Nothing more is sent to it; its delivery log goes with it. It cannot be undone.",
                               button="Delete it", back=url_for("console.webhook_page", webhook_id=webhook.id))
    webhooks.remove(webhook)
    flash(f"Deleted the webhook to {webhook.url}.")
    return redirect(url_for("console.webhook_list"))
