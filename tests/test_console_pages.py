"""The console's pages for what the API does beyond a schedule's basics, through Flask's test client: every
schedule field in the form, workflow edit and the breaker, webhooks and their delivery log, tokens, a
schedule's audit trail, bulk actions and the owners' admin pages. Each keeps the console's rules: another
owner's object is a 404, a POST without the CSRF token a 400, the owners' pages an admin's only."""

from __future__ import annotations

from app import clock
from app.extensions import db
from tests.console_signin import HTTPS, csrf_of, signed_in_browser
from tests.tokens import new_owner_token, token_for_app


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
    from app.models import ScheduledJob

    schedule_id = _schedule(client)
    browser = signed_in_browser(app, token_for_app(app))
    form = browser.get(f"/schedules/{schedule_id}/edit", base_url=HTTPS).data.decode()
    for name in ("catch_up", "catch_up_window_seconds", "catch_up_limit", "overlap", "alert_after_seconds",
                 "keep_runs_days", "after_seconds", "day_or", "anchor_date", "trigger_node_id"):
        assert f'name="{name}"' in form, name
    assert '<details class="more" id="more-options" >' in form  # closed: the common case stays short
    edit = {"name": "nightly", "kind": "cron", "cron": "0 2 * * *", "timezone": "UTC",
            "workflow_id": str(db.session.get(ScheduledJob, schedule_id).workflow_id)}
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
    schedule = db.session.get(ScheduledJob, schedule_id)
    assert (schedule.overlap, schedule.catch_up, schedule.catch_up_limit, schedule.catch_up_window_seconds,
            schedule.alert_after_seconds, schedule.keep_runs_days) == ("buffer_one", "all", 5, 3600, 300, 7)
    cleared = _post(browser, f"/schedules/{schedule_id}/edit", {
        **edit, "overlap": "buffer_one", "catch_up": "all", "catch_up_limit": "5",
        "catch_up_window_seconds": "", "alert_after_seconds": "", "keep_runs_days": "7"})
    assert cleared.status_code == 302
    db.session.expire_all()
    schedule = db.session.get(ScheduledJob, schedule_id)
    assert (schedule.catch_up_window_seconds, schedule.alert_after_seconds, schedule.keep_runs_days) == (None, None, 7)


def test_workflow_edit_with_limits_and_breaker_settings_and_a_reset_recorded_by_name(app, client):
    from sqlalchemy import update

    from app.models import BreakerTransition, Workflow

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
