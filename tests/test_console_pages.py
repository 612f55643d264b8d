"""The console's pages for what the API does beyond a schedule's basics, through Flask's test client: every
schedule field in the form, workflow edit and the breaker, webhooks and their delivery log, tokens, a
schedule's audit trail, bulk actions and the owners' admin pages. Each keeps the console's rules: another
owner's object is a 404, a POST without the CSRF token a 400, the owners' pages an admin's only."""

from __future__ import annotations

import re

from harness.console_signin import HTTPS, csrf_of, signed_in_browser
from harness.tokens import new_owner_token, token_for_app
from recur_server.infra import clock
from recur_server.infra.extensions import db


def _csrf(browser, path: str = "/schedules") -> str:  # type: ignore[no-untyped-def]
    return csrf_of(browser.get(path, base_url=HTTPS).data)


def _post(browser, path: str, data: dict[str, object] | None = None, csrf: str | None = None):  # type: ignore[no-untyped-def]
    form = dict(data or {})
    form["csrf_token"] = csrf if csrf is not None else _csrf(browser)
    return browser.post(path, data=form, base_url=HTTPS)


def _schedule(client, name: str = "nightly", **fields: object) -> str:  # type: ignore[no-untyped-def]
    workflow = client.post("/api/v1/workflows/", json={"name": f"w-{name}", "task": "builtin.noop"}).json["id"]
    body = {"name": name, "workflow_id": workflow, "cron": "0 2 * * *", **fields}
    made = client.post("/api/v1/schedules/", json=body)
    assert made.status_code == 201, made.json
    return str(made.json["id"])


def test_the_form_sets_and_clears_every_policy_and_shows_errors_beside_the_field(app, client):
    from recur_server.models import Schedule

    schedule_id = _schedule(client)
    browser = signed_in_browser(app, token_for_app(app))
    form = browser.get(f"/schedules/{schedule_id}/edit", base_url=HTTPS).data.decode()
    for name in ("catch_up", "catch_up_window_seconds", "catch_up_limit", "overlap", "alert_after_seconds",
                 "keep_runs_days", "after_seconds", "day_or", "anchor_date", "trigger_node_id"):
        assert f'name="{name}"' in form, name
    assert '<details class="more" id="more-options" >' in form  # closed: the common case stays short
    edit = {"name": "nightly", "kind": "cron", "cron": "0 2 * * *", "timezone": "UTC",
            "workflow_id": str(db.session.get(Schedule, schedule_id).workflow_id)}
    bad = _post(browser, f"/schedules/{schedule_id}/edit", {**edit, "overlap": "sometimes",
                                                            "catch_up_limit": "0"})
    assert bad.status_code == 422
    page = bad.data.decode()
    assert 'id="error-overlap"' in page and 'id="error-catch_up_limit"' in page
    assert '<details class="more" id="more-options" open>' in page  # opened where the errors are
    saved = _post(browser, f"/schedules/{schedule_id}/edit", {
        **edit, "overlap": "buffer_one", "catch_up": "all", "catch_up_limit": "5",
        "catch_up_window_seconds": "3600", "alert_after_seconds": "300", "keep_runs_days": "7"})
    assert saved.status_code == 302, saved.data
    db.session.expire_all()
    schedule = db.session.get(Schedule, schedule_id)
    assert (schedule.overlap, schedule.catch_up, schedule.catch_up_limit, schedule.catch_up_window_seconds,
            schedule.alert_after_seconds, schedule.keep_runs_days) == ("buffer_one", "all", 5, 3600, 300, 7)
    cleared = _post(browser, f"/schedules/{schedule_id}/edit", {
        **edit, "overlap": "buffer_one", "catch_up": "all", "catch_up_limit": "5",
        "catch_up_window_seconds": "", "alert_after_seconds": "", "keep_runs_days": "7"})
    assert cleared.status_code == 302
    db.session.expire_all()
    schedule = db.session.get(Schedule, schedule_id)
    assert (schedule.catch_up_window_seconds, schedule.alert_after_seconds, schedule.keep_runs_days) == (None, None, 7)


def test_workflow_edit_with_limits_and_breaker_settings_and_a_reset_recorded_by_name(app, client):
    from sqlalchemy import update

    from recur_server.models import BreakerTransition, Workflow

    workflow = client.post("/api/v1/workflows/", json={"name": "reports", "task": "builtin.noop"}).json["id"]
    browser = signed_in_browser(app, token_for_app(app, "laptop"))
    path = f"/workflows/{workflow}/edit"
    assert b'name="breaker_threshold"' in browser.get(path, base_url=HTTPS).data
    form = {"name": "reports", "task": "builtin.noop", "concurrency_policy": "wait", "breaker_reset_seconds": "300"}
    bad = _post(browser, path, {**form, "max_concurrent_runs": "0", "breaker_threshold": "many"})
    assert bad.status_code == 422
    assert b'id="error-max_concurrent_runs"' in bad.data and b'id="error-breaker_threshold"' in bad.data
    saved = _post(browser, path, {**form, "max_concurrent_runs": "2", "concurrency_policy": "skip",
                                  "breaker_threshold": "3", "breaker_reset_seconds": "60"})
    assert saved.status_code == 302
    db.session.expire_all()
    row = db.session.get(Workflow, workflow)
    assert (row.max_concurrent_runs, row.concurrency_policy, row.breaker_threshold, row.breaker_reset_seconds) == (
        2, "skip", 3, 60)
    assert _post(browser, path, {**form, "breaker_threshold": ""}).status_code == 302  # emptied: no breaker
    db.session.expire_all()
    assert db.session.get(Workflow, workflow).breaker_threshold is None

    db.session.execute(update(Workflow).where(Workflow.id == workflow).values(
        breaker_threshold=3, breaker_state="open", breaker_failures=3, breaker_opened_at=clock.utcnow()))
    db.session.commit()
    page = browser.get(f"/workflows/{workflow}/breaker", base_url=HTTPS).data.decode()
    assert 'id="breaker-state">open<' in page
    assert _post(browser, f"/workflows/{workflow}/breaker/reset", csrf="wrong").status_code == 400
    reset = _post(browser, f"/workflows/{workflow}/breaker/reset")
    assert reset.status_code == 302
    page = browser.get(reset.headers["Location"], base_url=HTTPS).data.decode()
    assert 'id="breaker-state">closed<' in page and "reset by hand" in page and "(token laptop)" in page
    db.session.expire_all()
    assert db.session.get(Workflow, workflow).breaker_failures == 0
    assert db.session.query(BreakerTransition).filter_by(workflow_id=workflow, to_state="closed").count() == 1

    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    for theirs in (path, f"/workflows/{workflow}/breaker"):
        assert alice.get(theirs, base_url=HTTPS).status_code == 404, theirs
    assert _post(alice, f"/workflows/{workflow}/breaker/reset").status_code == 404
    assert _post(alice, path, form).status_code == 404


def _failed_delivery(webhook_id: int) -> int:
    """A delivery that gave up, with two attempts in its log (as recur_server.notify.delivery leaves one)."""
    from recur_server.notify.models import Delivery, DeliveryAttempt, Event

    now = clock.utcnow()
    event = Event(id="evt_" + "0" * 31 + "1", owner_id=1, type="run.failed", occurred_at=now, data={"x": 1})
    db.session.add(event)
    db.session.flush()
    delivery = Delivery(webhook_id=webhook_id, owner_id=1, event_id=event.id, status="failed", attempts=2,
                        next_attempt_at=now, created_at=now, reason="gave up after a day")
    db.session.add(delivery)
    db.session.flush()
    for number, code in ((1, 500), (2, None)):
        db.session.add(DeliveryAttempt(delivery_id=delivery.id, webhook_id=webhook_id, event_id=event.id,
                                       event_type="run.failed", attempt=number, at=now, status_code=code,
                                       duration_ms=12, error="connection refused" if code is None else "HTTP 500"))
    db.session.commit()
    return int(delivery.id)


def test_webhooks_made_with_the_secret_shown_once_their_delivery_log_and_a_redelivery(app):
    from recur_server.notify.models import Delivery, DeliveryAttempt, Webhook

    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    browser = signed_in_browser(app, token_for_app(app, "laptop"))
    assert browser.post("/webhooks", data={"url": "http://127.0.0.1:9/in", "event_types": "run.failed"},
                        base_url=HTTPS).status_code == 400  # no CSRF token
    empty = _post(browser, "/webhooks", {"url": ""})
    assert empty.status_code == 422
    assert b'id="error-url"' in empty.data and b'id="error-event_types"' in empty.data
    internal = _post(browser, "/webhooks", {"url": "http://10.1.2.3/in", "event_types": ["run.failed"]})
    assert internal.status_code == 422 and b'id="error-url"' in internal.data  # the API's address guard
    made = _post(browser, "/webhooks", {"url": "http://127.0.0.1:9/in", "event_types": ["run.failed", "schedule.dead"]})
    assert made.status_code == 200
    webhook = db.session.query(Webhook).one()
    assert webhook.event_types == ["run.failed", "schedule.dead"]
    assert f'id="webhook-secret">{webhook.secret}<'.encode() in made.data
    listing = browser.get("/webhooks", base_url=HTTPS).data
    assert b"http://127.0.0.1:9/in" in listing and webhook.secret.encode() not in listing  # once only

    delivery = _failed_delivery(webhook.id)
    page = browser.get(f"/webhooks/{webhook.id}", base_url=HTTPS).data.decode()
    assert page.count('class="attempt"') == 2 and "connection refused" in page and "HTTP 500" in page
    assert page.count(f'id="redeliver-{delivery}"') == 1  # one button per delivery, not per attempt
    again = _post(browser, f"/webhooks/{webhook.id}/deliveries/{delivery}/redeliver")
    assert again.status_code == 302
    db.session.expire_all()
    assert db.session.get(Delivery, delivery).status == "pending"
    asked = db.session.query(DeliveryAttempt).filter(DeliveryAttempt.requested_by.is_not(None)).one()
    assert asked.requested_by.endswith("(token laptop)")
    page = browser.get(f"/webhooks/{webhook.id}", base_url=HTTPS).data.decode()
    assert "asked by" in page and f'id="redeliver-{delivery}"' not in page  # pending: nothing to send again
    assert _post(browser, f"/webhooks/{webhook.id}/deliveries/999/redeliver").status_code == 404

    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    assert b"127.0.0.1:9" not in alice.get("/webhooks", base_url=HTTPS).data
    assert alice.get(f"/webhooks/{webhook.id}", base_url=HTTPS).status_code == 404
    assert alice.get(f"/webhooks/{webhook.id}/delete", base_url=HTTPS).status_code == 404
    assert _post(alice, f"/webhooks/{webhook.id}/deliveries/{delivery}/redeliver").status_code == 404
    assert _post(alice, f"/webhooks/{webhook.id}/delete").status_code == 404
    assert _post(browser, f"/webhooks/{webhook.id}/delete").status_code == 302
    assert db.session.query(Webhook).count() == 0 and db.session.query(Delivery).count() == 0


def test_tokens_made_with_an_expiry_shown_once_and_revoked_which_signs_out_the_session_it_named(app, client):
    from recur_server.auth.models import ApiToken

    browser = signed_in_browser(app, token_for_app(app, "laptop"))
    past = _post(browser, "/tokens", {"name": "ci", "expires_at": "2020-01-01T00:00:00Z"})
    assert past.status_code == 422 and b'id="error-expires_at"' in past.data
    assert _post(browser, "/tokens", {"name": ""}).status_code == 422
    made = _post(browser, "/tokens", {"name": "ci", "expires_at": "2099-01-01T00:00:00Z"})
    assert made.status_code == 200
    secret = shown_secret(made.data.decode())
    assert client.get("/api/v1/me/", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    listing = browser.get("/tokens", base_url=HTTPS).data.decode()
    assert "2099-01-01 00:00:00 UTC" in listing and secret not in listing and "this session" in listing
    ci = db.session.query(ApiToken).filter_by(name="ci").one()

    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    assert "laptop" not in alice.get("/tokens", base_url=HTTPS).data.decode()
    assert _post(alice, f"/tokens/{ci.id}/revoke").status_code == 404
    assert _post(browser, f"/tokens/{ci.id}/revoke", csrf="wrong").status_code == 400
    assert _post(browser, f"/tokens/{ci.id}/revoke").status_code == 302
    assert client.get("/api/v1/me/", headers={"Authorization": f"Bearer {secret}"}).status_code == 401

    laptop = db.session.query(ApiToken).filter_by(name="laptop").one()
    gone = _post(browser, f"/tokens/{laptop.id}/revoke")
    assert gone.status_code == 302 and gone.headers["Location"].endswith("/signin")
    assert "/signin" in browser.get("/tokens", base_url=HTTPS).headers["Location"]  # signed out for good


def shown_secret(page: str) -> str:
    """The token's secret as the page shows it, once."""
    found = re.search(r'id="token-secret">([^<]+)<', page)
    assert found is not None
    return found.group(1)


def test_owner_pages_are_an_admins_only_and_make_and_delete_owners_with_their_record(app):
    from recur_server.auth.models import Owner, OwnerEvent

    admin = signed_in_browser(app, token_for_app(app))
    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    assert alice.get("/owners", base_url=HTTPS).status_code == 403
    assert _post(alice, "/owners", {"name": "mallory"}).status_code == 403
    assert alice.get("/owners/1/delete", base_url=HTTPS).status_code == 403
    assert _post(alice, "/owners/1/delete").status_code == 403
    assert b'href="/owners"' not in alice.get("/schedules", base_url=HTTPS).data
    assert b'href="/owners"' in admin.get("/schedules", base_url=HTTPS).data
    assert _post(admin, "/owners", {"name": "alice"}).status_code == 422  # the name is taken
    assert admin.post("/owners", data={"name": "team-b"}, base_url=HTTPS).status_code == 400  # no CSRF token
    made = _post(admin, "/owners", {"name": "team-b"})
    assert made.status_code == 200 and b'id="owner-token">recur_' in made.data
    team_b = db.session.query(Owner).filter_by(name="team-b").one()
    assert not team_b.is_admin
    assert "Delete owner team-b?" in admin.get(f"/owners/{team_b.id}/delete", base_url=HTTPS).data.decode()
    assert _post(admin, f"/owners/{team_b.id}/delete").status_code == 302
    assert db.session.query(Owner).filter_by(name="team-b").count() == 0
    assert [e.action for e in db.session.query(OwnerEvent).filter_by(owner_name="team-b").order_by(OwnerEvent.id)] == [
        "owner.created", "owner.deleted"]
    assert _post(admin, "/owners/1/delete").status_code == 302  # not themselves
    assert db.session.get(Owner, 1) is not None
    assert _post(admin, "/owners/99999/delete").status_code == 404


def test_a_schedules_audit_trail_page_by_page_and_after_its_deletion(app, client):
    from recur_server.console.views import PAGE

    schedule_id = _schedule(client)
    for number in range(30):
        assert client.patch(f"/api/v1/schedules/{schedule_id}/", json={"description": f"v{number}"}).status_code == 200
    browser = signed_in_browser(app, token_for_app(app))
    first = browser.get(f"/schedules/{schedule_id}/events", base_url=HTTPS).data.decode()
    assert first.count("<tr><td>") == PAGE and '"v29"' in first and "Older" in first
    older = re.search(r'href="([^"]+after=[^"]+)">Older', first)
    assert older is not None
    second = browser.get(older.group(1).replace("&amp;", "&"), base_url=HTTPS).data.decode()
    assert "create" in second and '"v29"' not in second
    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    assert alice.get(f"/schedules/{schedule_id}/events", base_url=HTTPS).status_code == 404
    assert browser.get("/schedules/not-an-id/events", base_url=HTTPS).status_code == 404
    assert client.delete(f"/api/v1/schedules/{schedule_id}/").status_code == 204
    after = browser.get(f"/schedules/{schedule_id}/events", base_url=HTTPS).data.decode()
    assert "deleted" in after and ">delete<" in after


def test_bulk_pause_resume_and_delete_of_ticked_schedules_only_the_callers(app, client):
    """Ticked boxes of the list, one form: another owner's id among them is as absent as one that never was."""
    from recur_server.models import Schedule

    theirs = _schedule(client, "admins")  # an admin sees every owner's; alice, not an admin, only her own
    alice_token = new_owner_token(app, "alice")
    alice_api = app.test_client()
    alice_api.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {alice_token}"
    mine = [_schedule(alice_api, f"s{n}") for n in range(4)]
    browser = signed_in_browser(app, alice_token)
    ticked = mine[:3] + [theirs]
    assert browser.post("/schedules/bulk", data={"action": "pause", "schedule_id": ticked},
                        base_url=HTTPS).status_code == 400  # no CSRF token
    nothing = _post(browser, "/schedules/bulk", {"action": "pause"})
    assert nothing.status_code == 302
    paused = _post(browser, "/schedules/bulk", {"action": "pause", "schedule_id": ticked, "note": "disk full",
                                                "status": "active"})
    assert paused.status_code == 302 and paused.headers["Location"].endswith("/schedules?status=active")
    db.session.expire_all()
    statuses = {s.id: (s.status, s.pause_note) for s in db.session.query(Schedule)}
    assert [statuses[i] for i in mine] == [("paused", "disk full")] * 3 + [("active", None)]
    assert statuses[theirs] == ("active", None)  # another owner's id is left alone
    flashed = browser.get("/schedules", base_url=HTTPS).data.decode()
    assert "Paused 3 schedules." in flashed
    again = _post(browser, "/schedules/bulk", {"action": "pause", "schedule_id": mine[:2] + [mine[3]]})
    assert again.status_code == 302
    assert "Paused 1 schedule. Left 2 as they were" in browser.get("/schedules", base_url=HTTPS).data.decode()
    assert _post(browser, "/schedules/bulk", {"action": "resume", "schedule_id": mine}).status_code == 302
    db.session.expire_all()
    assert {db.session.get(Schedule, i).status for i in mine} == {"active"}

    confirm = _post(browser, "/schedules/bulk", {"action": "delete", "schedule_id": mine[:2] + [theirs]})
    assert confirm.status_code == 200
    page = confirm.data.decode()
    assert "Delete 2 schedules?" in page and "s0" in page and "admins" not in page
    assert db.session.query(Schedule).count() == 5  # nothing gone before the confirmation
    gone = _post(browser, "/schedules/bulk", {"action": "delete", "confirm": "1", "schedule_id": mine[:2] + [theirs]})
    assert gone.status_code == 302
    db.session.expire_all()
    assert sorted(s.name for s in db.session.query(Schedule)) == ["admins", "s2", "s3"]


def test_each_new_page_renders_in_the_zone_asked_for_with_utc_on_hover(app, client):
    from recur_server.notify.models import Webhook

    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    schedule_id = _schedule(client, timezone="Europe/Berlin")
    workflow = client.get("/api/v1/workflows/").json["items"][0]["id"]
    assert client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.1:9/in",
                                                  "event_types": ["run.failed"]}).status_code == 201
    webhook = db.session.query(Webhook).one()
    _failed_delivery(webhook.id)
    browser = signed_in_browser(app, token_for_app(app))
    paths = ["/webhooks", f"/webhooks/{webhook.id}", "/tokens", "/owners", f"/workflows/{workflow}/edit",
             f"/workflows/{workflow}/breaker", f"/schedules/{schedule_id}/events", f"/webhooks/{webhook.id}/delete",
             "/owners/1/delete"]
    for path in paths:
        page = browser.get(path, base_url=HTTPS)
        assert page.status_code in (200, 302), path
    trail = browser.get(f"/schedules/{schedule_id}/events", base_url=HTTPS).data.decode()
    assert " CET</time>" in trail and 'title="' in trail and " UTC" in trail  # the schedule's zone, UTC on hover
    log = browser.get(f"/webhooks/{webhook.id}?tz=America/New_York", base_url=HTTPS).data.decode()
    assert " EST</time>" in log


def test_a_webhooks_url_and_event_types_edited_as_a_patch_would(app, client):
    from recur_server.notify.models import Webhook

    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    made = client.post("/api/v1/webhooks/", json={"url": "http://127.0.0.1:9/in", "event_types": ["run.failed"]})
    webhook_id = made.json["id"]
    browser = signed_in_browser(app, token_for_app(app))
    path = f"/webhooks/{webhook_id}/edit"
    assert b'value="http://127.0.0.1:9/in"' in browser.get(path, base_url=HTTPS).data
    none = _post(browser, path, {"url": "http://127.0.0.1:9/in"})  # every box unticked
    assert none.status_code == 422 and b'id="error-event_types"' in none.data
    internal = _post(browser, path, {"url": "http://10.1.2.3/in", "event_types": ["run.failed"]})
    assert internal.status_code == 422 and b'id="error-url"' in internal.data
    saved = _post(browser, path, {"url": "http://127.0.0.1:9/new", "event_types": ["schedule.dead", "run.failed"]})
    assert saved.status_code == 302
    db.session.expire_all()
    webhook = db.session.get(Webhook, webhook_id)
    assert (webhook.url, webhook.event_types) == ("http://127.0.0.1:9/new", ["run.failed", "schedule.dead"])
    assert webhook.secret == made.json["secret"]  # the secret stays
    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    assert alice.get(path, base_url=HTTPS).status_code == 404
    assert _post(alice, path, {"url": "http://127.0.0.1:9/x", "event_types": ["run.failed"]}).status_code == 404


def test_a_workflow_deleted_after_a_page_that_counts_its_schedules(app, client):
    from recur_server.models import Schedule, Workflow

    schedule_id = _schedule(client, "doomed")
    browser = signed_in_browser(app, token_for_app(app))
    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    workflow_id = db.session.get(Schedule, schedule_id).workflow_id
    db.session.rollback()  # on SQLite every transaction holds the write lock (BEGIN IMMEDIATE)
    path = f"/workflows/{workflow_id}/delete"
    assert "Its 1 schedule go with it" in browser.get(path, base_url=HTTPS).data.decode()
    assert alice.get(path, base_url=HTTPS).status_code == 404
    assert _post(alice, path).status_code == 404
    assert _post(browser, path, csrf="wrong").status_code == 400
    assert _post(browser, path).status_code == 302
    db.session.expire_all()
    assert db.session.get(Workflow, workflow_id) is None and db.session.get(Schedule, schedule_id) is None


def test_the_lists_strip_shows_each_schedules_newest_20_runs_oldest_first_and_a_long_run(app, client):
    from datetime import UTC, datetime, timedelta

    from recur_server.models import Run

    busy, idle = _schedule(client, "busy"), _schedule(client, "idle")
    start = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
    statuses = ["succeeded", "failed", "timed_out", "skipped", "missed"]
    for k in range(25):  # the first five fall off the strip
        due = start + timedelta(days=k)
        db.session.add(Run(id=f"run-{k:02d}", schedule_id=busy, repeat_number=k, retry_number=0, scheduled_for=due,
                           started_at=due, finished_at=due + timedelta(seconds=1), status=statuses[k % 5]))
    due = start + timedelta(days=25)
    db.session.add(Run(id="run-25", schedule_id=busy, repeat_number=25, retry_number=0, scheduled_for=due,
                       started_at=due, status="running", long_alerted_at=due + timedelta(hours=1)))
    db.session.commit()
    page = signed_in_browser(app, token_for_app(app)).get("/schedules", base_url=HTTPS).data.decode()
    rows = {name: row for row in page.split("<tr>")[1:] for name in ("busy", "idle") if f">{name}</a>" in row}
    cells = re.findall(r'<span class="cell (\w+)" title="([^"]+)"></span>', rows["busy"])
    assert len(cells) == 20 and 'aria-label="last 20 runs"' in rows["busy"]
    assert cells[0] == ("failed", "2026-03-07 02:00:00 UTC failed")  # run 6: the oldest of the newest 20
    assert cells[-2] == ("missed", "2026-03-25 02:00:00 UTC missed")
    assert cells[-1] == ("running", "2026-03-26 02:00:00 UTC running")
    assert "running long" in rows["busy"] and "running long" not in rows["idle"]
    assert 'aria-label="last 0 runs"' in rows["idle"] and idle
