"""A pending webhook delivery made as an owner would make one, through the API: a webhook for
schedule.paused, a schedule, and its pause. For the tests of sending (test_delivery_sending, test_egress)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select

from recur_server.infra.extensions import db
from recur_server.notify import outbox
from recur_server.notify.models import Delivery


def pending_delivery(client: Any, url: str, created_ago: timedelta = timedelta(0)) -> int:
    """The id of a delivery to `url`, pending, made `created_ago` ago. The URL must pass the app's settings."""
    hook = client.post("/api/v1/webhooks/", json={"url": url, "event_types": ["schedule.paused"]})
    assert hook.status_code == 201, hook.json
    flow = client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).json["id"]
    schedule = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": flow, "interval_seconds": 3600})
    outbox.forget(1)
    assert client.post(f"/api/v1/schedules/{schedule.json['id']}/pause/").status_code == 200
    row = db.session.scalars(select(Delivery).where(Delivery.webhook_id == hook.json["id"])).one()
    row.created_at -= created_ago
    row.next_attempt_at -= created_ago
    db.session.commit()
    return int(row.id)
