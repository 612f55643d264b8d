"""A run row says what happened: ticks that never ran (missed, skipped) show no start, lateness or duration,
and a retry's page counts attempts from 1, as the docs do (attempt 2 of 4 is the first retry of a schedule
with max_retries 3)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

from harness.console_signin import HTTPS, signed_in_browser
from harness.tokens import token_for_app
from recur_server.infra.extensions import db


def _schedule(client) -> str:  # type: ignore[no-untyped-def]
    workflow = client.post("/api/v1/workflows/", json={"name": "w-rows", "task": "builtin.noop"}).json["id"]
    made = client.post("/api/v1/schedules/", json={"name": "rows", "workflow_id": workflow, "cron": "0 2 * * *"})
    assert made.status_code == 201, made.json
    return str(made.json["id"])


def _field(page: str, name: str) -> str:
    found = re.search(rf"<dt>{name}</dt><dd>(.*?)</dd>", page, re.S)
    assert found, f"no {name} on the page"
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def test_missed_ticks_show_no_start_lateness_or_duration_and_attempts_count_from_one(app, client):
    from recur_server.models import Run

    schedule_id = _schedule(client)
    gap_id, retry_id = str(uuid.uuid4()), str(uuid.uuid4())
    due = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
    recorded = due + timedelta(hours=5)  # a catch-up pass wrote the gap five hours later
    db.session.add(Run(id=gap_id, schedule_id=schedule_id, retry_number=0, scheduled_for=due, started_at=recorded,
                       finished_at=recorded, status="missed", reason="catch_up_skip", ticks=3,
                       error="catch_up_skip: 3 ticks not run"))
    db.session.add(Run(id=retry_id, schedule_id=schedule_id, repeat_number=4, retry_number=1,
                       scheduled_for=due + timedelta(days=1), started_at=due + timedelta(days=1, seconds=2),
                       finished_at=due + timedelta(days=1, seconds=3), status="failed", error="boom"))
    db.session.commit()
    browser = signed_in_browser(app, token_for_app(app))

    gap = browser.get(f"/schedules/{schedule_id}/runs/{gap_id}", base_url=HTTPS).data.decode()
    assert _field(gap, "started") == "never ran"
    assert _field(gap, "lateness") == "-" and _field(gap, "duration") == "-"
    history = browser.get(f"/schedules/{schedule_id}", base_url=HTTPS).data.decode()
    row = next(r for r in history.split("<tr>") if 'badge missed' in r)
    assert "never ran" in row and "5.0 h" not in row and "0 ms" not in row and "300.0 min" not in row

    retry = browser.get(f"/schedules/{schedule_id}/runs/{retry_id}", base_url=HTTPS).data.decode()
    assert _field(retry, "tick") == "4"
    assert _field(retry, "attempt") == "2 of 4"  # max_retries 3: four attempts at most
    assert _field(retry, "duration") == "1.0 s"
