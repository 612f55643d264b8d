"""PATCH /webhooks/{id}/: a webhook's URL and event types change in place; its secret and id stay, so its
receivers need nothing new (what `recur apply` relies on to change a declared webhook's event types)."""

from __future__ import annotations

from harness.tokens import authorized_client, new_owner_token
from recur_server.infra.extensions import db
from recur_server.notify.models import Webhook


def test_a_webhook_is_edited_in_place_and_keeps_its_secret(app, client):
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    made = client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.1:9/a", "event_types": ["run.failed"]})
    assert made.status_code == 201
    hook = made.json

    changed = client.patch(f"/api/v1/webhooks/{hook['id']}/",
                           json={"event_types": ["schedule.dead", "run.failed", "schedule.dead"]})
    assert changed.status_code == 200, changed.json
    assert changed.json["event_types"] == ["run.failed", "schedule.dead"] and changed.json["url"] == hook["url"]
    assert "secret" not in changed.json

    moved = client.patch(f"/api/v1/webhooks/{hook['id']}/", json={"url": "http://127.0.0.1:9/b"})
    assert moved.status_code == 200 and moved.json["url"] == "http://127.0.0.1:9/b"
    stored = db.session.get(Webhook, hook["id"])
    db.session.refresh(stored)
    assert stored.secret == hook["secret"] and stored.event_types == ["run.failed", "schedule.dead"]


def test_a_bad_edit_is_a_422_naming_the_field_and_changes_nothing(app, client):
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.2"  # 127.0.0.1 stays internal: refused
    hook = client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.2:9/hook", "event_types": ["run.failed"]}).json
    for body, name in (({"url": "http://127.0.0.1/hook"}, "url"),  # an internal address, as at create
                       ({"event_types": []}, "event_types"),
                       ({"event_types": ["run.exploded"]}, "event_types"),
                       ({"secret": "whsec_cmVjdXItZXhhbXBsZS1zZWNyZXQtMjRi"}, "secret")):  # a new one: a new hook
        answer = client.patch(f"/api/v1/webhooks/{hook['id']}/", json=body)
        assert answer.status_code == 422 and any(k.startswith(name) for k in answer.json["errors"]), answer.json
    assert client.get(f"/api/v1/webhooks/{hook['id']}/").json == {k: v for k, v in hook.items() if k != "secret"}


def test_another_owners_webhook_is_not_found(app, client):
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    hook = client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.1:9/hook", "event_types": ["run.failed"]}).json
    other = authorized_client(app, new_owner_token(app, "eve"))
    assert other.patch(f"/api/v1/webhooks/{hook['id']}/", json={"event_types": ["schedule.dead"]}).status_code == 404
    assert client.get(f"/api/v1/webhooks/{hook['id']}/").json["event_types"] == ["run.failed"]
