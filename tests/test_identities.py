"""Identities are never inherited (issue: trust between owners): an id that named a deleted owner's row never
names anyone else's, a console session is bound to its token and ends for good at sign-out, deleting an
owner deletes everything of theirs, and a delivery only ever goes where its event belongs."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from harness.console_signin import HTTPS, signed_in_browser
from harness.receiver import Receiver
from harness.servers import free_port
from harness.tokens import authorized_client, new_owner_token, token_for_app
from recur_server.auth.models import ApiToken, Owner, ScheduleEvent
from recur_server.infra import clock
from recur_server.infra.extensions import db
from recur_server.models import BreakerTransition, Workflow
from recur_server.notify import delivery, outbox
from recur_server.notify.models import Delivery, DeliveryAttempt, Event, Webhook


def _owner_id(name: str) -> int:
    found = db.session.scalar(select(Owner.id).where(Owner.name == name))
    assert found is not None
    return int(found)


def _make_everything(client) -> dict[str, int]:  # type: ignore[no-untyped-def]
    workflow = client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"})
    assert workflow.status_code == 201, workflow.json
    token = client.post("/api/v1/tokens/", json={"name": "ci"})
    assert token.status_code == 201, token.json
    hook = client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.1:9/hook",
                                                 "event_types": ["schedule.paused"]})
    assert hook.status_code == 201, hook.json
    return {"workflow": workflow.json["id"], "token": token.json["id"], "webhook": hook.json["id"]}


def test_no_id_of_a_deleted_owner_is_ever_given_to_another(app, client):
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    contractor = authorized_client(app, new_owner_token(app, "contractor"))
    old = _make_everything(contractor)
    old["owner"] = _owner_id("contractor")
    old_token_ids = set(db.session.scalars(select(ApiToken.id).where(ApiToken.owner_id == old["owner"])))
    db.session.remove()
    assert client.delete(f"/api/v1/owners/{old['owner']}/").status_code == 204

    newcomer = authorized_client(app, new_owner_token(app, "newcomer"))
    new = _make_everything(newcomer)
    new["owner"] = _owner_id("newcomer")
    for kind, ident in new.items():
        assert ident > old[kind], (kind, ident, old[kind])
    assert max(old_token_ids) < min(db.session.scalars(select(ApiToken.id).where(ApiToken.owner_id == new["owner"])))


def test_deleting_an_owner_deletes_everything_of_theirs_but_the_admins_record(app, client):
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    contractor = authorized_client(app, new_owner_token(app, "contractor"))
    made = _make_everything(contractor)
    schedule = contractor.post("/api/v1/schedules/", json={"name": "s", "workflow_id": made["workflow"],
                                                           "interval_seconds": 3600})
    assert schedule.status_code == 201, schedule.json
    assert contractor.post(f"/api/v1/schedules/{schedule.json['id']}/pause/").status_code == 200
    owner_id = _owner_id("contractor")
    outbox.forget(owner_id)
    pending = db.session.scalar(select(func.count()).select_from(Delivery))
    assert pending == 1  # the pause's event, for the contractor's webhook
    delivery.deliver_due(clock.utcnow() + timedelta(seconds=1))  # nobody listens on port 9: a failed attempt
    delivery.wait_idle()
    assert db.session.scalar(select(func.count()).select_from(DeliveryAttempt)) == 1
    db.session.remove()

    assert client.delete(f"/api/v1/owners/{owner_id}/").status_code == 204
    for model in (ApiToken, Workflow, Webhook, Delivery, DeliveryAttempt, Event):
        assert db.session.scalar(select(func.count()).select_from(model)
                                 .where(getattr(model, "owner_id", None) == owner_id
                                        if hasattr(model, "owner_id") else True)) == 0, model
    assert db.session.scalar(select(func.count()).select_from(BreakerTransition)) == 0
    # The schedule's audit trail (who made, paused and deleted it) stays, for admins only.
    trail = client.get(f"/api/v1/schedules/{schedule.json['id']}/events/")
    assert trail.status_code == 200, trail.json
    assert [e["action"] for e in reversed(trail.json["items"])] == ["create", "pause", "delete"]
    stranger = authorized_client(app, new_owner_token(app, "stranger"))
    assert stranger.get(f"/api/v1/schedules/{schedule.json['id']}/events/").status_code == 404
    assert db.session.scalar(select(func.count()).select_from(ScheduleEvent)
                             .where(ScheduleEvent.owner_id == owner_id)) == 3
    # The admin's deletion of the owner is on record, readable by admins.
    record = client.get("/api/v1/audit/owners/")
    assert record.status_code == 200, record.json
    assert [(e["action"], e["owner_name"]) for e in record.json["items"]] == [("owner.deleted", "contractor")]
    assert authorized_client(app, new_owner_token(app, "someone")).get("/api/v1/audit/owners/").status_code == 403


def test_a_deleted_owners_console_cookie_is_not_someone_elses_session(app):
    admin = token_for_app(app)
    contractor_secret = new_owner_token(app, "contractor")
    browser = signed_in_browser(app, contractor_secret)
    assert browser.get("/schedules", base_url=HTTPS).status_code == 200
    saved = browser.get_cookie("recur_console", domain="localhost")
    assert saved is not None
    contractor_id = _owner_id("contractor")
    db.session.remove()
    assert authorized_client(app, admin).delete(f"/api/v1/owners/{contractor_id}/").status_code == 204
    # The admin makes a token: on SQLite without AUTOINCREMENT it took the contractor's old token id.
    assert authorized_client(app, admin).post("/api/v1/tokens/", json={"name": "ci"}).status_code == 201

    thief = app.test_client()
    thief.set_cookie("recur_console", saved.value, domain="localhost")
    for path in ("/schedules", "/health", "/workflows"):
        answer = thief.get(path, base_url=HTTPS)
        assert answer.status_code == 302 and "/signin" in answer.headers["Location"], (path, answer.status_code)


def test_a_cookie_captured_before_sign_out_is_refused_after_it(app):
    browser = signed_in_browser(app, token_for_app(app))
    assert browser.get("/schedules", base_url=HTTPS).status_code == 200
    captured = browser.get_cookie("recur_console", domain="localhost")
    assert captured is not None
    page = browser.get("/schedules", base_url=HTTPS).data.decode()
    import re

    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf is not None
    assert browser.post("/signout", data={"csrf_token": csrf.group(1)}, base_url=HTTPS).status_code == 302

    replay = app.test_client()
    replay.set_cookie("recur_console", captured.value, domain="localhost")
    answer = replay.get("/schedules", base_url=HTTPS)
    assert answer.status_code == 302 and "/signin" in answer.headers["Location"]


def test_a_session_ends_when_its_token_is_revoked_even_if_the_row_id_comes_back(app):
    secret = new_owner_token(app, "carol")
    browser = signed_in_browser(app, secret)
    token = db.session.scalars(select(ApiToken).where(ApiToken.owner_id == _owner_id("carol"))).one()
    token.revoked_at = clock.utcnow()
    db.session.commit()
    answer = browser.get("/schedules", base_url=HTTPS)
    assert answer.status_code == 302 and "/signin" in answer.headers["Location"]


def _receiver() -> Receiver:
    receiver = Receiver(free_port())
    receiver.start()
    return receiver


def test_a_delivery_goes_only_to_a_webhook_of_its_events_owner_that_subscribes_to_its_type(app, client):
    """Whatever routed it there (a stale cache, a reused id, a race with a delete), a delivery whose webhook
    is gone, belongs to another owner or does not want the event's type is dropped with a reason, unsent."""
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    receiver = _receiver()
    try:
        alice = authorized_client(app, new_owner_token(app, "alice"))
        bob = authorized_client(app, new_owner_token(app, "bob"))
        bobs = bob.post("/api/v1/webhooks/", json={"url": receiver.url, "event_types": ["run.failed"]}).json["id"]
        alices = alice.post("/api/v1/webhooks/", json={"url": receiver.url,
                                                      "event_types": ["schedule.paused"]}).json["id"]
        now = clock.utcnow()
        alice_id, bob_id = _owner_id("alice"), _owner_id("bob")
        cases = {
            "other owner": (alice_id, "schedule.paused", bobs),
            "not subscribed": (bob_id, "schedule.paused", bobs),
            "gone": (alice_id, "schedule.paused", alices + 1000),
        }
        made = {}
        for why, (owner_id, kind, hook) in cases.items():
            event = Event(id=outbox.new_event_id(), owner_id=owner_id, type=kind, occurred_at=now,
                          data={"schedule_name": "secret plans"})
            db.session.add(event)
            db.session.flush()
            row = Delivery(webhook_id=hook, owner_id=owner_id, event_id=event.id, status="pending", attempts=0,
                           next_attempt_at=now, created_at=now)
            db.session.add(row)
            db.session.flush()
            made[why] = row.id
        db.session.commit()
        delivery.deliver_due(now + timedelta(seconds=1))
        delivery.wait_idle()
        db.session.remove()
        for why, row_id in made.items():
            row = db.session.get(Delivery, row_id)
            assert row is not None and row.status == "dropped", why
            assert row.reason, why
        assert receiver.events() == []
        listed = bob.get(f"/api/v1/webhooks/{bobs}/deliveries/").json
        assert listed["items"] == [] and listed["pending"] == 0
    finally:
        receiver.stop()
