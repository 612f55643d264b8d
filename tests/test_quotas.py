"""Per-owner quotas (issue 31, item 7): schedules, webhooks and active tokens.

The test app's config sets small defaults; the N+1th create is a 422 `quota_exceeded` naming the quota, an
admin raising one owner's quota lets it through, and an owner cannot raise their own.
"""

from __future__ import annotations

import re
import threading
from datetime import timedelta

from sqlalchemy import event, func, select

from harness.tokens import authorized_client
from recur_server.auth.models import Owner
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.models import Schedule

HTTPS = "https://localhost"


def _new_owner(client, name: str) -> tuple[int, str]:
    """An owner made by the admin through the API: its id and first token (which no quota refuses)."""
    response = client.post("/api/v1/owners/", json={"name": name})
    assert response.status_code == 201, response.json
    return response.json["id"], response.json["token"]["token"]


def _workflow(client) -> int:
    response = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"})
    assert response.status_code == 201, response.json
    return response.json["id"]


def _schedule(client, workflow: int, name: str = "s"):
    return client.post("/api/v1/schedules/", json={"name": name, "workflow_id": workflow, "interval_seconds": 60})


def _refused(response, quota: str) -> str:
    assert response.status_code == 422, response.get_data(as_text=True)[:500]
    body = response.json
    assert body["code"] == "quota_exceeded" and set(body["errors"]) == {quota}, body
    return body["errors"][quota][0]


def test_the_schedule_after_the_quota_is_refused_until_an_admin_raises_it(app, client):
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 2
    owner_id, token = _new_owner(client, "alice")
    alice = authorized_client(app, token)
    workflow = _workflow(alice)
    assert [_schedule(alice, workflow, f"s{i}").status_code for i in range(2)] == [201, 201]

    message = _refused(_schedule(alice, workflow, "s2"), "schedules")
    assert "2 of 2" in message and "RECUR_MAX_SCHEDULES_PER_OWNER" in message and "alice" in message
    assert alice.get("/api/v1/schedules/").json["total"] == 2

    raised = client.patch(f"/api/v1/owners/{owner_id}/", json={"quotas": {"schedules": 3}})
    assert raised.status_code == 200, raised.json
    assert raised.json["quotas"]["schedules"] == {"limit": 3, "override": 3}
    assert alice.get("/api/v1/me/").json["quotas"]["schedules"] == {"limit": 3, "override": 3}
    assert _schedule(alice, workflow, "s2").status_code == 201
    message = _refused(_schedule(alice, workflow, "s3"), "schedules")
    assert "3 of 3" in message and "set by an admin" in message

    # null goes back to the default; the other quotas keep the settings' defaults throughout
    back = client.patch(f"/api/v1/owners/{owner_id}/", json={"quotas": {"schedules": None}}).json["quotas"]
    assert back["schedules"] == {"limit": 2, "override": None}
    assert back["webhooks"] == {"limit": app.config["RECUR_MAX_WEBHOOKS_PER_OWNER"], "override": None}


def test_a_deleted_schedule_frees_its_place(app, client):
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 1
    workflow = _workflow(client)
    first = _schedule(client, workflow)
    assert first.status_code == 201
    _refused(_schedule(client, workflow), "schedules")
    assert client.delete(f"/api/v1/schedules/{first.json['id']}/").status_code == 204
    assert _schedule(client, workflow).status_code == 201


def test_quotas_are_per_owner(app, client):
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 1
    assert _schedule(client, _workflow(client)).status_code == 201
    _, token = _new_owner(client, "bob")
    bob = authorized_client(app, token)
    assert _schedule(bob, _workflow(bob)).status_code == 201
    _refused(_schedule(bob, _workflow(bob)), "schedules")


def test_an_owner_cannot_raise_their_own_quota(app, client):
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 1
    owner_id, token = _new_owner(client, "mallory")
    mallory = authorized_client(app, token)
    refused = mallory.patch(f"/api/v1/owners/{owner_id}/", json={"quotas": {"schedules": 1000}})
    assert refused.status_code == 403, refused.json
    db.session.expire_all()
    assert db.session.get(Owner, owner_id).max_schedules is None
    workflow = _workflow(mallory)
    assert _schedule(mallory, workflow).status_code == 201
    _refused(_schedule(mallory, workflow), "schedules")


def test_the_quota_patch_is_validated(app, client):
    owner_id, _ = _new_owner(client, "dave")
    for body, field in (({"quotas": {"schedules": -1}}, "quotas.schedules"),
                        ({"quotas": {"schedules": 2**31}}, "quotas.schedules"),
                        ({"quotas": {"runs": 5}}, "quotas.runs"),
                        ({"quotas": {"tokens": "many"}}, "quotas.tokens"),
                        ({"name": "eve"}, "name")):
        response = client.patch(f"/api/v1/owners/{owner_id}/", json=body)
        assert response.status_code == 422 and field in response.json["errors"], (body, response.json)
    assert client.patch("/api/v1/owners/999999/", json={"quotas": {"schedules": 5}}).status_code == 404
    changed = client.patch(f"/api/v1/owners/{owner_id}/", json={"quotas": {"tokens": 0, "webhooks": 7}})
    assert changed.status_code == 200, changed.json
    events = client.get("/api/v1/audit/owners/").json["items"]
    assert events[0]["action"] == "owner.quotas_changed" and events[0]["owner_id"] == owner_id
    assert events[0]["changes"] == {"quotas": {"tokens": 0, "webhooks": 7}}


def test_webhooks_have_a_quota(app, client):
    app.config["RECUR_MAX_WEBHOOKS_PER_OWNER"] = 1
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"

    def hook(path: str):
        return client.post("/api/v1/webhooks/", json={"url": f"http://127.0.0.1:9/{path}",
                                                      "event_types": ["run.failed"]})

    assert hook("a").status_code == 201
    message = _refused(hook("b"), "webhooks")
    assert "1 of 1" in message and "RECUR_MAX_WEBHOOKS_PER_OWNER" in message
    assert client.get("/api/v1/webhooks/").json["total"] == 1
    assert client.patch("/api/v1/owners/1/", json={"quotas": {"webhooks": 2}}).status_code == 200
    assert hook("b").status_code == 201


def test_active_tokens_have_a_quota_and_revoked_or_expired_ones_do_not_count(app, client, fake_clock):
    app.config["RECUR_MAX_TOKENS_PER_OWNER"] = 2
    owner_id, token = _new_owner(client, "frank")  # its first token is one of the two
    frank = authorized_client(app, token)
    soon = (clock.utcnow() + timedelta(hours=1)).isoformat()
    second = frank.post("/api/v1/tokens/", json={"name": "ci", "expires_at": soon})
    assert second.status_code == 201, second.json
    message = _refused(frank.post("/api/v1/tokens/", json={"name": "third"}), "tokens")
    assert "2 of 2" in message and "RECUR_MAX_TOKENS_PER_OWNER" in message

    fake_clock.advance(hours=2)  # the second token has expired: no longer active
    third = frank.post("/api/v1/tokens/", json={"name": "third"})
    assert third.status_code == 201, third.json
    _refused(frank.post("/api/v1/tokens/", json={"name": "fourth"}), "tokens")
    assert frank.delete(f"/api/v1/tokens/{third.json['id']}/").status_code == 204  # revoked: not active
    assert frank.post("/api/v1/tokens/", json={"name": "fourth"}).status_code == 201


def test_an_owners_first_token_is_made_whatever_the_token_quota(app, client):
    app.config["RECUR_MAX_TOKENS_PER_OWNER"] = 0
    owner_id, token = _new_owner(client, "grace")
    grace = authorized_client(app, token)
    assert grace.get("/api/v1/me/").json["quotas"]["tokens"] == {"limit": 0, "override": None}
    _refused(grace.post("/api/v1/tokens/", json={"name": "more"}), "tokens")


def test_the_console_form_shows_the_quota_refusal(app, client):
    app.config["RECUR_MAX_SCHEDULES_PER_OWNER"] = 0
    _, token = _new_owner(client, "heidi")
    heidi = authorized_client(app, token)
    workflow = _workflow(heidi)
    browser = app.test_client()
    csrf = re.search(rb'name="csrf_token" value="([^"]+)"', browser.get("/signin", base_url=HTTPS).data)
    assert csrf is not None
    signed_in = browser.post("/signin", data={"token": token, "csrf_token": csrf.group(1).decode()}, base_url=HTTPS)
    assert signed_in.status_code == 302, signed_in.data
    csrf = re.search(rb'name="csrf_token" value="([^"]+)"', browser.get("/schedules/new", base_url=HTTPS).data)
    assert csrf is not None
    refused = browser.post("/schedules/new", base_url=HTTPS, data={
        "csrf_token": csrf.group(1).decode(), "name": "nightly", "workflow_id": str(workflow), "kind": "cron",
        "cron": "0 3 * * *", "timezone": "UTC"})
    assert refused.status_code == 422, refused.data[:500]
    assert b"RECUR_MAX_SCHEDULES_PER_OWNER" in refused.data
    assert heidi.get("/api/v1/schedules/").json["total"] == 0


def test_concurrent_creates_do_not_overshoot(app, client):
    """The owner's row is locked before the count (PostgreSQL), and SQLite's transactions hold the write lock
    from BEGIN: of four tokens asked for at once with room for one, exactly one is made, however they
    interleave."""
    app.config["RECUR_MAX_TOKENS_PER_OWNER"] = 2
    _, token = _new_owner(client, "ivan")  # one of the two
    barrier = threading.Barrier(4)
    answers: list[int] = []

    def ask(i: int) -> None:
        caller = authorized_client(app, token)
        barrier.wait()
        answers.append(caller.post("/api/v1/tokens/", json={"name": f"t{i}"}).status_code)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [201, 422, 422, 422]
    assert authorized_client(app, token).get("/api/v1/tokens/").json["total"] == 2


def test_an_owners_schedules_are_counted_by_the_database_not_by_each_create(app, client):
    """Owner.schedules_held moves with every insert and delete of a schedule, whichever way it comes (a
    create, an apply's bulk insert, a delete, a batch delete, an owner's deletion), and the quota check of a
    create reads it instead of counting the owner's schedules: at a million of them that count was most of a
    create's 46 ms (PostgreSQL, p50)."""
    workflow = _workflow(client)
    made = [_schedule(client, workflow, f"s{i}").json["id"] for i in range(3)]
    creates = {"schedules": {"create": [{"name": f"a{i}", "workflow": "wf", "every": "1h"} for i in range(4)]}}
    assert client.post("/api/v1/apply/", json=creates).status_code == 200
    assert client.delete(f"/api/v1/schedules/{made[0]}/").status_code == 204
    assert client.post("/api/v1/schedules/batch-delete/", json={"schedule_ids": made[1:]}).status_code == 200
    other, token = _new_owner(client, "olga")
    theirs = authorized_client(app, token)
    theirs_workflow = theirs.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    assert _schedule(theirs, theirs_workflow).status_code == 201
    gone, gone_token = _new_owner(client, "gone")
    gone_client = authorized_client(app, gone_token)
    gone_workflow = gone_client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    assert _schedule(gone_client, gone_workflow).status_code == 201
    assert client.delete(f"/api/v1/owners/{gone}/").status_code == 204

    held = dict(db.session.execute(select(Owner.id, Owner.schedules_held)).all())
    counted = dict(db.session.execute(select(Schedule.owner_id, func.count()).group_by(Schedule.owner_id)).all())
    db.session.rollback()
    assert {owner: n for owner, n in held.items() if n} == counted and counted[other] == 1, (held, counted)
    assert sum(counted.values()) == 5

    sent: list[str] = []
    listen = lambda conn, cursor, statement, *args: sent.append(" ".join(statement.split()))  # noqa: E731
    event.listen(db.engine, "before_cursor_execute", listen)
    try:
        assert _schedule(client, workflow, "counted").status_code == 201
    finally:
        event.remove(db.engine, "before_cursor_execute", listen)
    assert not [s for s in sent if "count(" in s.lower() and "scheduled_jobs" in s], sent
