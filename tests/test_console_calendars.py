"""The console's calendar pages through Flask's test client: a list with a form, a calendar's page with its
days of the coming year, the schedules on it, an edit that re-plans them and a delete refused while in use;
the schedule's page names its calendar. Another owner's calendar is a 404; no JavaScript is needed."""

from __future__ import annotations

from datetime import UTC, datetime

from harness.console_signin import HTTPS, csrf_of, signed_in_browser
from harness.tokens import new_owner_token, token_for_app
from recur_server.infra.extensions import db
from recur_server.models import Schedule


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
    assert db.session.get(Schedule, schedule["id"]).next_run_at == datetime(2026, 12, 25, 9, tzinfo=UTC)
    refused = _post(browser, f"/calendars/{calendar_id}/delete", {})
    assert refused.status_code == 302
    assert "is used by schedules monthly" in browser.get(f"/calendars/{calendar_id}", base_url=HTTPS).data.decode()

    other = signed_in_browser(app, new_owner_token(app, "other"))
    assert other.get(f"/calendars/{calendar_id}", base_url=HTTPS).status_code == 404
    assert ">office</a>" not in other.get("/calendars", base_url=HTTPS).data.decode()


def test_the_schedule_form_puts_a_schedule_on_one_of_its_owners_calendars_and_takes_it_off(
        app, client, fake_clock) -> None:  # type: ignore[no-untyped-def]
    fake_clock.set(datetime(2026, 12, 1, 12, tzinfo=UTC))
    browser = signed_in_browser(app, token_for_app(app))
    assert _post(browser, "/calendars", {"name": "office", "dates": "2026-12-24/2026-12-26"}).status_code == 302
    other = signed_in_browser(app, new_owner_token(app, "other"))
    assert _post(other, "/calendars", {"name": "theirs", "dates": "2026-12-24"}).status_code == 302
    mine = int(browser.get("/calendars", base_url=HTTPS).data.decode().split('href="/calendars/')[1].split('"')[0])
    theirs = int(other.get("/calendars", base_url=HTTPS).data.decode().split('href="/calendars/')[1].split('"')[0])
    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]

    form = browser.get("/schedules/new", base_url=HTTPS).data.decode()
    assert f'<option value="{mine}" >office</option>' in form and "theirs" not in form  # only the owner's
    fields = {"name": "monthly", "workflow_id": str(workflow), "kind": "cron", "cron": "0 9 24 * *",
              "timezone": "UTC", "calendar_id": str(mine), "on_calendar": "shift_next"}
    made = _post(browser, "/schedules/new", fields)
    assert made.status_code == 302, made.data
    schedule_id = made.headers["Location"].rsplit("/", 1)[1]
    row = db.session.get(Schedule, schedule_id)
    assert (row.calendar_id, row.on_calendar, row.next_run_at) == (mine, "shift_next",
                                                                   datetime(2026, 12, 27, 9, tzinfo=UTC))
    edit = browser.get(f"/schedules/{schedule_id}/edit", base_url=HTTPS).data.decode()
    assert f'<option value="{mine}" selected>office</option>' in edit
    assert '<option value="shift_next" selected>' in edit

    # Another owner's calendar, posted by hand: refused naming the field, as the API refuses it.
    refused = _post(browser, f"/schedules/{schedule_id}/edit", {**fields, "calendar_id": str(theirs)})
    assert refused.status_code == 422 and 'id="error-calendar_id"' in refused.data.decode()
    # "none": off the calendar; the tick on the 24th runs on the 24th again.
    off = _post(browser, f"/schedules/{schedule_id}/edit", {**fields, "calendar_id": "", "on_calendar": ""})
    assert off.status_code == 302, off.data
    db.session.expire_all()
    row = db.session.get(Schedule, schedule_id)
    assert (row.calendar_id, row.next_run_at) == (None, datetime(2026, 12, 24, 9, tzinfo=UTC))
