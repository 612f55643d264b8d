"""Owners and tokens through the API: 401 without a valid token, each owner's things kept to that owner
(another's are a 404 for every verb), an admin sees everything, and every change leaves an event."""

from __future__ import annotations

from datetime import timedelta

import pytest

from harness.tokens import authorized_client, new_owner_token
from recur_server.auth.models import ApiToken
from recur_server.infra import clock
from recur_server.infra.extensions import db


def _things(client) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    workflow = client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).json["id"]
    response = client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow,
                                                        "interval_seconds": 60})
    assert response.status_code == 201, response.json
    return workflow, response.json["id"]


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer nonsense", "Basic abc", "Bearer recur_" + "x" * 43])
def test_no_valid_token_is_a_401_in_the_error_shape(app, header):
    client = app.test_client()
    headers = {} if header is None else {"Authorization": header}
    for method, path in (("GET", "/api/v1/schedules/"), ("POST", "/api/v1/workflows/"), ("GET", "/api/v1/me/"),
                         ("DELETE", "/api/v1/schedules/00000000-0000-0000-0000-000000000000/")):
        response = client.open(path, method=method, headers=headers, json={})
        assert response.status_code == 401, (method, path, response.json)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert set(response.json) == {"code", "status", "message", "errors"}


def test_revoked_and_expired_tokens_stop_working(app):
    secret = new_owner_token(app, "carol")
    client = authorized_client(app, secret)
    assert client.get("/api/v1/me/").json["name"] == "carol"
    token = db.session.query(ApiToken).filter_by(name="t").one()
    token.expires_at = clock.utcnow() - timedelta(seconds=1)
    db.session.commit()
    assert client.get("/api/v1/me/").status_code == 401
    token.expires_at = None
    db.session.commit()
    assert client.get("/api/v1/me/").status_code == 200
    assert client.delete(f"/api/v1/tokens/{token.id}/").status_code == 204
    assert client.get("/api/v1/me/").status_code == 401


def test_tokens_are_shown_once_and_stored_only_as_a_digest(app):
    client = authorized_client(app, new_owner_token(app, "dave"))
    made = client.post("/api/v1/tokens/", json={"name": "laptop"})
    assert made.status_code == 201 and made.json["token"].startswith("recur_") and len(made.json["token"]) >= 49
    listed = client.get("/api/v1/tokens/").json["items"]
    assert {t["name"] for t in listed} == {"t", "laptop"} and all("token" not in t for t in listed)
    stored = db.session.query(ApiToken).filter_by(name="laptop").one()
    assert made.json["token"] not in (stored.digest, stored.prefix)
    assert authorized_client(app, made.json["token"]).get("/api/v1/me/").json["name"] == "dave"


def test_each_owner_sees_only_their_own_and_every_verb_on_anothers_is_a_404(app, client):
    alice = authorized_client(app, new_owner_token(app, "alice"))
    bob = authorized_client(app, new_owner_token(app, "bob"))
    a_workflow, a_schedule = _things(alice)
    b_workflow, b_schedule = _things(bob)
    assert [s["id"] for s in alice.get("/api/v1/schedules/").json["items"]] == [a_schedule]
    assert [w["id"] for w in bob.get("/api/v1/workflows/").json["items"]] == [b_workflow]
    for method, path, body in (
        ("GET", f"/api/v1/schedules/{b_schedule}/", None),
        ("PATCH", f"/api/v1/schedules/{b_schedule}/", {"name": "x"}),
        ("POST", f"/api/v1/schedules/{b_schedule}/pause/", None),
        ("POST", f"/api/v1/schedules/{b_schedule}/resume/", None),
        ("GET", f"/api/v1/schedules/{b_schedule}/runs/", None),
        ("GET", f"/api/v1/schedules/{b_schedule}/events/", None),
        ("DELETE", f"/api/v1/schedules/{b_schedule}/", None), ("GET", f"/api/v1/workflows/{b_workflow}/", None),
        ("DELETE", f"/api/v1/workflows/{b_workflow}/", None),
    ):
        response = alice.open(path, method=method, json=body)
        assert response.status_code == 404, (method, path, response.json)
    # Another owner's workflow cannot carry one's schedule either.
    refused = alice.post("/api/v1/schedules/", json={"name": "s", "workflow_id": b_workflow, "interval_seconds": 60})
    assert refused.status_code == 422 and "workflow_id" in refused.json["errors"]
    batch = alice.post("/api/v1/schedules/batch-delete/", json={"schedule_ids": [a_schedule, b_schedule]}).json
    assert batch == {"deleted": [a_schedule], "not_found": [b_schedule]}
    assert bob.get(f"/api/v1/schedules/{b_schedule}/").status_code == 200
    # The admin (the `client` fixture) sees and manages everything, and may narrow a list to one owner.
    bob_id = bob.get("/api/v1/me/").json["id"]
    assert b_schedule in {s["id"] for s in client.get("/api/v1/schedules/").json["items"]}
    assert [s["id"] for s in client.get(f"/api/v1/schedules/?owner_id={bob_id}").json["items"]] == [b_schedule]
    assert client.post(f"/api/v1/schedules/{b_schedule}/pause/").status_code == 200


def test_owners_are_managed_by_admins_only(app, client):
    plain = authorized_client(app, new_owner_token(app, "erin"))
    assert plain.get("/api/v1/owners/").status_code == 403
    assert plain.post("/api/v1/owners/", json={"name": "x"}).status_code == 403
    made = client.post("/api/v1/owners/", json={"name": "frank"})
    assert made.status_code == 201 and made.json["token"]["token"].startswith("recur_")
    frank = authorized_client(app, made.json["token"]["token"])
    assert frank.get("/api/v1/me/").json == {**frank.get("/api/v1/me/").json, "name": "frank", "is_admin": False}
    _things(frank)
    assert client.delete(f"/api/v1/owners/{made.json['id']}/").status_code == 204
    assert frank.get("/api/v1/me/").status_code == 401


def test_health_tells_the_detail_only_to_an_admin(app, client):
    anonymous = app.test_client().get("/api/v1/health/")
    assert anonymous.status_code == 200 and "schedules" not in anonymous.json and "reconciler" not in anonymous.json
    plain = authorized_client(app, new_owner_token(app, "gina")).get("/api/v1/health/")
    assert "schedules" not in plain.json
    assert "schedules" in client.get("/api/v1/health/").json


def test_every_change_to_a_schedule_is_an_event_with_its_actor(app, client):
    helen = authorized_client(app, new_owner_token(app, "helen"))
    _, schedule = _things(helen)
    helen.patch(f"/api/v1/schedules/{schedule}/", json={"interval_seconds": 120})
    client.post(f"/api/v1/schedules/{schedule}/pause/")
    helen.post(f"/api/v1/schedules/{schedule}/resume/")
    events = helen.get(f"/api/v1/schedules/{schedule}/events/").json["items"]
    assert [(e["action"], e["actor"]) for e in events] == [
        ("resume", "helen"), ("pause", "admin"), ("update", "helen"), ("create", "helen")]
    assert events[2]["changes"] == {"interval_seconds": 120}
    assert helen.delete(f"/api/v1/schedules/{schedule}/").status_code == 204
    after = helen.get(f"/api/v1/schedules/{schedule}/events/").json["items"]
    assert after[0]["action"] == "delete" and after[0]["actor"] == "helen"
