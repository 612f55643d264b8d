"""The schedule page's "Why didn't it run?" section through Flask's test client: a time typed in the page's zone
(as a datetime-local field sends it) answered as the API answers it, a paused tick naming who paused it, and a
time that is not one shown back with what is wrong. No JavaScript is needed."""

from __future__ import annotations

from datetime import UTC, datetime

from harness.console_signin import HTTPS, signed_in_browser
from harness.tokens import token_for_app


def test_the_schedule_page_explains_a_time(app, client, fake_clock) -> None:  # type: ignore[no-untyped-def]
    fake_clock.set(datetime(2026, 3, 2, 12, tzinfo=UTC))
    browser = signed_in_browser(app, token_for_app(app))
    workflow = client.post("/api/v1/workflows/", json={"name": "wf", "task": "builtin.noop"}).json["id"]
    schedule = client.post("/api/v1/schedules/", json={
        "name": "berlin mornings", "workflow_id": workflow, "cron": "0 9 * * *", "timezone": "Europe/Berlin",
        "not_on": ["sat", "sun"]}).json
    page = f"/schedules/{schedule['id']}"
    plain = browser.get(page, base_url=HTTPS).data.decode()
    assert 'id="explain"' in plain and 'name="explain_at"' in plain and 'id="explain-answer"' not in plain

    # Saturday 09:00 in Berlin (08:00 UTC): the weekday is left out
    saturday = browser.get(page, query_string={"explain_at": "2026-03-07T09:00"}, base_url=HTTPS).data.decode()
    assert 'id="explain-kind">not a tick</span>' in saturday and "not_on" in saturday
    assert 'datetime="2026-03-07T08:00:00Z"' in saturday  # the tick, read in the schedule's zone
    assert 'datetime="2026-03-09T08:00:00Z"' in saturday  # its next tick: Monday

    client.post(f"/api/v1/schedules/{schedule['id']}/pause/", json={"note": "moving offices"})
    fake_clock.set(datetime(2026, 3, 5, 12, tzinfo=UTC))
    paused = browser.get(page, query_string={"explain_at": "2026-03-04T09:00"}, base_url=HTTPS).data.decode()
    assert 'id="explain-kind">paused</span>' in paused and "by admin: moving offices" in paused

    bad = browser.get(page, query_string={"explain_at": "last tuesday"}, base_url=HTTPS).data.decode()
    assert 'id="explain-error"' in bad and "not a time" in bad and 'value="last tuesday"' in bad
