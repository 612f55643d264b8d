"""The web console through Flask's test client: sign-in, the session cookie, CSRF, owners' scope, and the
forms going through the API's schema and service."""

from __future__ import annotations

from datetime import timedelta

import pytest

from harness.console_signin import HTTPS, console_browser, csrf_of, signed_in_browser
from harness.tokens import new_owner_token, token_for_app
from recur_server.infra import clock
from recur_server.infra.extensions import db


def _page_csrf(browser, path: str) -> str:  # type: ignore[no-untyped-def]
    return csrf_of(browser.get(path, base_url=HTTPS).data)


def _workflow(app, owner_id: int = 1) -> int:  # type: ignore[no-untyped-def]
    from recur_server.models import Workflow

    workflow = Workflow(name="reports", task="builtin.noop", owner_id=owner_id, created_at=clock.utcnow())
    db.session.add(workflow)
    db.session.commit()
    return workflow.id


def test_signing_in_sets_a_secure_session_without_the_token(app):
    token = token_for_app(app)
    browser = console_browser(app)
    assert browser.get("/", base_url=HTTPS).headers["Location"].endswith("/schedules")
    assert "/signin" in browser.get("/schedules", base_url=HTTPS).headers["Location"]
    page = browser.get("/signin", base_url=HTTPS)
    assert page.status_code == 200
    assert browser.post("/signin", data={"token": token}, base_url=HTTPS).status_code == 400  # no CSRF token
    csrf = csrf_of(page.data)
    wrong = browser.post("/signin", data={"token": "recur_" + "x" * 43, "csrf_token": csrf}, base_url=HTTPS)
    assert wrong.status_code == 401 and b"unknown, revoked or expired" in wrong.data
    right = browser.post("/signin", data={"token": token, "csrf_token": csrf}, base_url=HTTPS)
    assert right.status_code == 302
    cookie = right.headers["Set-Cookie"]
    assert cookie.startswith("recur_console=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Secure" in cookie and token not in cookie
    assert browser.get("/schedules", base_url=HTTPS).status_code == 200


def test_a_revoked_token_signs_the_console_out(app):
    from recur_server.auth.models import ApiToken

    token = token_for_app(app)
    browser = signed_in_browser(app, token)
    assert browser.get("/health", base_url=HTTPS).status_code == 200
    stored = db.session.query(ApiToken).order_by(ApiToken.id.desc()).first()
    stored.revoked_at = clock.utcnow()
    db.session.commit()
    assert "/signin" in browser.get("/health", base_url=HTTPS).headers["Location"]


def test_an_owner_sees_only_their_own_schedules(app, client):
    admin = signed_in_browser(app, token_for_app(app))
    workflow = client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).json["id"]
    theirs = client.post("/api/v1/schedules/", json={"name": "admins-only", "workflow_id": workflow,
                                                     "interval_seconds": 60}).json["id"]
    alice = signed_in_browser(app, new_owner_token(app, "alice"))
    listing = alice.get("/schedules", base_url=HTTPS)
    assert listing.status_code == 200 and b"admins-only" not in listing.data
    assert alice.get(f"/schedules/{theirs}", base_url=HTTPS).status_code == 404
    assert alice.get(f"/schedules/{theirs}/edit", base_url=HTTPS).status_code == 404
    csrf = _page_csrf(alice, "/schedules")
    assert alice.post(f"/schedules/{theirs}/pause", data={"csrf_token": csrf}, base_url=HTTPS).status_code == 404
    assert b"admins-only" in admin.get("/schedules", base_url=HTTPS).data


def test_the_form_creates_with_the_apis_rules_and_shows_errors_by_field(app):
    browser = signed_in_browser(app, token_for_app(app))
    workflow = _workflow(app)
    csrf = _page_csrf(browser, "/schedules/new")
    bad = browser.post("/schedules/new", base_url=HTTPS, data={
        "csrf_token": csrf, "name": "", "workflow_id": str(workflow), "kind": "cron", "cron": "61 * * * *",
        "timezone": "Mars/Olympus", "max_retries": "many"})
    assert bad.status_code == 422
    for field in ("name", "max_retries"):
        assert f'id="error-{field}"'.encode() in bad.data, field
    fixed = browser.post("/schedules/new", base_url=HTTPS, data={
        "csrf_token": csrf, "name": "weekday mornings", "workflow_id": str(workflow), "kind": "cron",
        "cron": "61 * * * *", "timezone": "Europe/Berlin"})
    assert fixed.status_code == 422 and b'id="error-cron"' in fixed.data  # the timing's own check
    made = browser.post("/schedules/new", base_url=HTTPS, data={
        "csrf_token": csrf, "name": "weekday mornings", "workflow_id": str(workflow), "kind": "cron",
        "cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "key": "mornings", "trigger_payload": '{"a": 1}'})
    assert made.status_code == 302
    page = browser.get(made.headers["Location"], base_url=HTTPS).data.decode()
    assert "At 09:00, Monday through Friday (Europe/Berlin)" in page and "mornings" in page and "CET" in page
    assert "<svg" in page

    schedule_id = made.headers["Location"].rsplit("/", 1)[-1]
    from recur_server.models import Schedule

    revision = db.session.get(Schedule, schedule_id).revision
    renamed = browser.post(f"/schedules/{schedule_id}/edit", base_url=HTTPS, data={
        "csrf_token": csrf, "name": "mornings", "workflow_id": str(workflow), "kind": "cron", "cron": "0 9 * * 1-5",
        "timezone": "Europe/Berlin", "key": "mornings", "trigger_payload": '{"a": 1}'})
    assert renamed.status_code == 302
    db.session.expire_all()
    schedule = db.session.get(Schedule, schedule_id)
    assert (schedule.name, schedule.revision) == ("mornings", revision)  # a rename re-plans nothing

    assert browser.post(f"/schedules/{schedule_id}/pause", data={"note": "x"}, base_url=HTTPS).status_code == 400
    paused = browser.post(f"/schedules/{schedule_id}/pause", data={"note": "disk full", "csrf_token": csrf},
                          base_url=HTTPS)
    assert paused.status_code == 302
    page = browser.get(paused.headers["Location"], base_url=HTTPS).data.decode()
    assert "disk full" in page and 'id="resume"' in page


def test_the_live_preview_answers_as_the_api_does(app):
    browser = signed_in_browser(app, token_for_app(app))
    csrf = _page_csrf(browser, "/schedules/new")
    answer = browser.post("/preview", json={"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "count": 3},
                          headers={"X-CSRF-Token": csrf}, base_url=HTTPS)
    assert answer.status_code == 200 and len(answer.json["next_runs"]) == 3
    assert "Monday through Friday" in answer.json["description"]
    refused = browser.post("/preview", json={"cron": "61 * * * *"}, headers={"X-CSRF-Token": csrf}, base_url=HTTPS)
    assert refused.status_code == 422 and "cron" in refused.json["errors"]
    assert browser.post("/preview", json={"cron": "* * * * *"}, base_url=HTTPS).status_code == 400  # no CSRF


@pytest.mark.parametrize("path", ["/workflows", "/health", "/schedules/new"])
def test_every_page_renders(app, client, path):
    browser = signed_in_browser(app, token_for_app(app))
    assert browser.get(path, base_url=HTTPS).status_code == 200


def test_the_api_opens_no_session_so_redis_being_down_is_still_a_503(database_url):
    """The console's signing key may live in Redis: the API must not need it (health answers 503, not 500)."""
    from redis import Redis

    from recur_server import create_app
    from recur_server.services.schema import ensure_schema

    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "REDIS_URL": "redis://127.0.0.1:1/0"})
    app.extensions["recur.redis"] = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    ensure_schema(app)
    try:
        answer = app.test_client().get("/api/v1/health/")
        assert answer.status_code == 503 and answer.json["redis"].startswith("unavailable")
        assert "Set-Cookie" not in answer.headers
    finally:
        with app.app_context():
            db.engine.dispose()


def test_the_health_page_shows_other_owners_activity_to_admins_only(app):
    """A worker busy with the admin's schedule, on a host whose name is in the worker's, and the reconciler's
    totals: the admin's page shows them, another owner's page only that a worker runs (as the API's health
    keeps its detail to admins)."""
    from rq import Worker
    from rq.job import Job

    from harness.chain_driver import make_schedule, scheduled_ids
    from recur_server.chain.mover import Mover
    from recur_server.infra import worker_beats
    from recur_server.infra.extensions import get_queue, get_redis
    from recur_server.workers.background import reconcile_once

    schedule = make_schedule(clock.utcnow(), interval_seconds=3600)  # owner 1, the admin
    [link] = scheduled_ids(app)
    assert link.startswith(f"sched-{schedule.id}-")
    worker = Worker([get_queue(app)], connection=get_redis(app), name="recur-db-host-secret-7.internal-4242")
    worker.register_birth()
    Mover(get_redis(app), get_queue(app)).move_due(clock.utcnow() + timedelta(hours=1))
    worker.prepare_execution(Job.fetch(link, connection=get_redis(app)))
    # its worker process beats (recur_server.infra.worker_beats): live, so its slot is shown as RQ has it
    worker_beats.beat(get_redis(app), worker.name, "db-host-secret-7.internal", 4242, ["recur"],
                      clock.utcnow().timestamp())
    assert reconcile_once(app) is not None  # the reconciler's totals exist

    admin = signed_in_browser(app, token_for_app(app)).get("/health", base_url=HTTPS).get_data(as_text=True)
    assert "db-host-secret-7.internal" in admin and link in admin and "reconcile passes" in admin
    other = signed_in_browser(app, new_owner_token(app, "other")).get("/health", base_url=HTTPS).get_data(as_text=True)
    for hidden in ("db-host-secret-7.internal", schedule.id, "reconcile passes", "links repaired", "queue depth"):
        assert hidden not in other
    assert 'id="worker-count">1<' in other


def test_a_late_schedule_on_an_open_breaker_is_shown_as_such_not_as_active(app, client):
    from sqlalchemy import update

    from recur_server.models import Schedule, Workflow

    browser = signed_in_browser(app, token_for_app(app))
    workflow = client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop",
                                                       "breaker_threshold": 3}).json["id"]
    sick = client.post("/api/v1/schedules/", json={"name": "sick-one", "workflow_id": workflow,
                                                   "interval_seconds": 60}).json["id"]
    db.session.execute(update(Workflow).where(Workflow.id == workflow).values(breaker_state="open"))
    db.session.execute(update(Schedule).where(Schedule.id == sick).values(health="late"))
    db.session.commit()
    listing = browser.get("/schedules", base_url=HTTPS).data.decode()
    row = listing[listing.index("sick-one"):listing.index("sick-one") + 1500]
    assert '<span class="badge breaker-open" title="status: active">breaker open</span>' in row
    assert '<span class="badge late">late</span>' in row
    page = browser.get(f"/schedules/{sick}", base_url=HTTPS).data.decode()
    assert 'id="problem-breaker-open"' in page and 'id="problem-late"' in page
