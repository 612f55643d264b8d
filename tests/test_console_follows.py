"""The console and runs that follow runs: the schedule form sets `after` through the API's rules (a cycle is an
error on the field), an unchanged edit changes nothing, and a schedule's page shows what it follows and what
follows it. No JavaScript is needed."""

from __future__ import annotations

from harness.console_signin import HTTPS, csrf_of, signed_in_browser
from harness.tokens import token_for_app


def test_the_form_sets_after_and_the_page_shows_upstream_and_downstream(app, client) -> None:  # type: ignore[no-untyped-def]
    browser = signed_in_browser(app, token_for_app(app))
    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    upstream = client.post("/api/v1/schedules/", json={"name": "extract", "key": "extract", "workflow_id": workflow,
                                                       "every": "1h"}).json
    csrf = csrf_of(browser.get("/schedules/new", base_url=HTTPS).data)
    form = {"csrf_token": csrf, "name": "load", "workflow_id": str(workflow), "kind": "every", "every": "1d",
            "after_schedule": "extract", "after_on": "ended", "after_delay_seconds": "60", "after_within": ""}
    bad = browser.post("/schedules/new", base_url=HTTPS, data={**form, "after_within": "8-18"})
    assert bad.status_code == 422 and b'id="error-after.within"' in bad.data
    made = browser.post("/schedules/new", base_url=HTTPS, data=form)
    assert made.status_code == 302, made.data
    follower_id = made.headers["Location"].rsplit("/", 1)[-1]
    shown = client.get(f"/api/v1/schedules/{follower_id}/").json["after"]
    assert shown == {"schedule_id": upstream["id"], "on": "ended", "delay_seconds": 60, "within": None}

    page = browser.get(f"/schedules/{follower_id}", base_url=HTTPS).data.decode()
    assert 'id="upstream"' in page and ">extract</a>" in page and "60 s later" in page
    page = browser.get(f"/schedules/{upstream['id']}", base_url=HTTPS).data.decode()
    assert 'id="downstream"' in page and ">load</a>" in page

    edit = browser.get(f"/schedules/{follower_id}/edit", base_url=HTTPS).data.decode()
    assert f'value="{upstream["id"]}"' in edit
    values = {"csrf_token": csrf, "name": "load", "workflow_id": str(workflow), "kind": "interval_seconds",
              "interval_seconds": "86400", "after_schedule": upstream["id"], "after_on": "ended",
              "after_delay_seconds": "60", "after_within": ""}
    same = browser.post(f"/schedules/{follower_id}/edit", base_url=HTTPS, data=values)
    assert same.status_code == 302
    assert "Nothing changed" in browser.get(same.headers["Location"], base_url=HTTPS).data.decode()
    cycle = browser.post(f"/schedules/{upstream['id']}/edit", base_url=HTTPS, data={
        **values, "name": "extract", "interval_seconds": "3600", "after_schedule": follower_id})
    assert cycle.status_code == 422 and b'id="error-after"' in cycle.data and b"cycle" in cycle.data
    cleared = browser.post(f"/schedules/{follower_id}/edit", base_url=HTTPS, data={**values, "after_schedule": ""})
    assert cleared.status_code == 302
    assert client.get(f"/api/v1/schedules/{follower_id}/").json["after"] is None
