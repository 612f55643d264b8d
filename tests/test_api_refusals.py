"""The services' refusals are answered in one place (recur_server.api.errors.REFUSALS): every exception class a service
defines has its answer there, and a view that meets one answers it without a catch of its own."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from sqlalchemy import select

import recur_server.services
from harness.deliveries import pending_delivery
from recur_server.api.errors import REFUSALS
from recur_server.infra.extensions import db
from recur_server.notify import redelivery
from recur_server.notify.models import Delivery
from recur_server.services import follow

# Refused inside the services and never let out of them: schedules turns an `after` refused into Invalid.
KEPT_INSIDE = {follow.AfterRefused}


def test_every_exception_a_service_defines_has_its_answer() -> None:
    defined = set()
    for module in pkgutil.walk_packages(recur_server.services.__path__, "recur_server.services."):
        for _, cls in inspect.getmembers(importlib.import_module(module.name), inspect.isclass):
            if issubclass(cls, Exception) and cls.__module__ == module.name:
                defined.add(cls)
    assert defined, "no exception class found in recur_server/services"
    assert {f"{cls.__module__}.{cls.__qualname__}" for cls in defined - KEPT_INSIDE - set(REFUSALS)} == set()


def test_a_delivery_whose_event_was_pruned_is_a_409_naming_both(app, client, monkeypatch) -> None:
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    row_id = pending_delivery(client, "http://127.0.0.1:9/hook")
    row = db.session.scalars(select(Delivery).where(Delivery.id == row_id)).one()
    webhook_id, event_id = row.webhook_id, row.event_id

    def pruned_meanwhile(delivery: Delivery, by: str, now: object) -> Delivery:
        db.session.rollback()  # as recur_server.notify.redelivery does when the event is gone
        raise redelivery.EventGone(event_id)

    monkeypatch.setattr(redelivery, "redeliver", pruned_meanwhile)
    answer = client.post(f"/api/v1/webhooks/{webhook_id}/deliveries/{row_id}/redeliver/")
    assert (answer.status_code, answer.json) == (409, {
        "code": "conflict", "status": 409, "errors": {},
        "message": f"Delivery {row_id}'s event {event_id} was pruned; nothing is left to send."})
