"""The console's calendar pages through Flask's test client: a list with a form, a calendar's page with its
days of the coming year, the schedules on it, an edit that re-plans them and a delete refused while in use;
the schedule's page names its calendar. Another owner's calendar is a 404; no JavaScript is needed."""

from __future__ import annotations

from datetime import UTC, datetime

from app.extensions import db
from app.models import ScheduledJob
from tests.console_signin import HTTPS, csrf_of, signed_in_browser
from tests.tokens import new_owner_token, token_for_app


def _post(browser, path: str, data: dict[str, str]):  # type: ignore[no-untyped-def]
    csrf = csrf_of(browser.get("/calendars", base_url=HTTPS).data)
    return browser.post(path, data={**data, "csrf_token": csrf}, base_url=HTTPS)


def test_calendar_pages(app, client, fake_clock) -> None:  # type: ignore[no-untyped-def]
    fake_clock.set(datetime(2026, 12, 1, 12, tzinfo=UTC))
    browser = signed_in_browser(app, token_for_app(app))
    bad = _post(browser, "/calendars", {"name": "office", "country": "XX", "dates": "2026-12-24"})
    assert bad.status_code == 422 and 'id="error-country"' in bad.data.decode()
    made = _post(browser, "/calendars", {"name": "office", "country": "", "dates": "2026-12-24/2026-12-26\n2027-01-01"})
    assert made.status_code == 302, made.data
    listing = browser.get("/calendars", base_url=HTTPS).data.decode()
    assert ">office</a>" in listing and 'href="/calendars"' in listing  # in the navigation too
    calendar_id = int(listing.split('href="/calendars/')[1].split('"')[0])

    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    schedule = client.post("/api/v1/schedules/", json={"name": "monthly", "workflow_id": workflow,
                                                       "cron": "0 9 24 * *", "calendar_id": calendar_id,
                                                       "on_calendar": "shift_next"}).json
    assert schedule["next_run_at"] == "2026-12-27T09:00:00Z"
    page = browser.get(f"/calendars/{calendar_id}", base_url=HTTPS).data.decode()
    assert "<code>2026-12-25</code>" in page and "<code>2027-01-01</code>" in page and ">monthly</a>" in page
    shown = browser.get(f"/schedules/{schedule['id']}", base_url=HTTPS).data.decode()
    assert 'id="schedule-calendar"' in shown and ">office</a>" in shown and "shift_next" in shown

    saved = _post(browser, f"/calendars/{calendar_id}", {"name": "office", "dates": "2026-12-24"})
    assert saved.status_code == 302, saved.data
    db.session.expire_all()
    assert db.session.get(ScheduledJob, schedule["id"]).next_run_at == datetime(2026, 12, 25, 9, tzinfo=UTC)
    refused = _post(browser, f"/calendars/{calendar_id}/delete", {})
    assert refused.status_code == 302
    assert "is used by schedules monthly" in browser.get(f"/calendars/{calendar_id}", base_url=HTTPS).data.decode()

    other = signed_in_browser(app, new_owner_token(app, "other"))
    assert other.get(f"/calendars/{calendar_id}", base_url=HTTPS).status_code == 404
    assert ">office</a>" not in other.get("/calendars", base_url=HTTPS).data.decode()
