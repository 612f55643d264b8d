"""Each item view reads its object once: the scoped lookup (recur_server.auth.scope) finds it, and the same row is what
the service changes and what the answer shows. Counted as the SELECTs that name the object's table."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from harness.plans import Statements
from recur_server.infra.extensions import db

UNKNOWN = "00000000-0000-0000-0000-000000000000"


def _reads(client, table: str, method: str, path: str, status: int, body: Any = None) -> list[str]:
    """The SELECTs of `table` that a request makes (it must answer `status`)."""
    statements = Statements((table,))
    event.listen(db.engine, "before_cursor_execute", statements)
    try:
        response = getattr(client, method)(f"/api/v1/{path}", json=body)
    finally:
        event.remove(db.engine, "before_cursor_execute", statements)
    assert response.status_code == status, response.json
    return [statement for statement, _ in statements.seen]


def _created(client, path: str, body: dict[str, Any]) -> Any:
    response = client.post(f"/api/v1/{path}/", json=body)
    assert response.status_code == 201, response.json
    return response.json["id"]


@pytest.fixture
def schedule_id(client) -> str:
    workflow_id = _created(client, "workflows", {"name": "wf", "task": "builtin.noop"})
    return str(_created(client, "schedules", {"name": "s", "workflow_id": workflow_id, "interval_seconds": 60}))


def test_get_a_schedule_reads_it_once(client, schedule_id) -> None:
    reads = _reads(client, "scheduled_jobs", "get", f"schedules/{schedule_id}/", 200)
    assert len(reads) == 1, reads


@pytest.mark.parametrize(("method", "suffix", "body", "status"), [
    ("patch", "", {"description": "edited"}, 200),
    ("post", "pause/", {"note": "a pause"}, 200),
    ("delete", "", None, 204),
])
def test_changing_a_schedule_reads_it_once(client, schedule_id, method, suffix, body, status) -> None:
    reads = _reads(client, "scheduled_jobs", method, f"schedules/{schedule_id}/{suffix}", status, body)
    assert len(reads) == 1, reads


def test_resuming_a_schedule_reads_it_once(client, schedule_id) -> None:
    assert client.post(f"/api/v1/schedules/{schedule_id}/pause/").status_code == 200
    reads = _reads(client, "scheduled_jobs", "post", f"schedules/{schedule_id}/resume/", 200)
    assert len(reads) == 1, reads


def test_a_schedules_runs_and_backfills_read_it_once(client, schedule_id) -> None:
    path = f"schedules/{schedule_id}/"
    backfill = {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:02:00Z"}
    backfill_id = client.post(f"/api/v1/{path}backfill/", json=backfill).json["id"]
    for method, suffix, body, status in [
        ("get", "runs/", None, 200),
        ("get", f"runs/{UNKNOWN}/", None, 404),  # the schedule is there, the run is not
        ("post", "trigger/", None, 202),
        ("post", "backfill/", {**backfill, "dry_run": True}, 200),
        ("get", "backfills/", None, 200),
        ("delete", f"backfills/{backfill_id}/", None, 200),
        ("get", "explain/", None, 200),
    ]:
        reads = _reads(client, "scheduled_jobs", method, f"{path}{suffix}", status, body)
        assert len(reads) == 1, (method, suffix, reads)


def test_an_unknown_or_refused_schedule_is_read_once_too(client, schedule_id) -> None:
    assert len(_reads(client, "scheduled_jobs", "get", f"schedules/{UNKNOWN}/", 404)) == 1
    assert len(_reads(client, "scheduled_jobs", "patch", f"schedules/{UNKNOWN}/", 404, {"name": "x"})) == 1
    assert len(_reads(client, "scheduled_jobs", "post", f"schedules/{schedule_id}/resume/", 409)) == 1


def test_other_item_views_read_their_object_once(app, client) -> None:
    app.config["RECUR_WEBHOOK_ALLOW_HOSTS"] = "127.0.0.1"
    workflow_id = _created(client, "workflows", {"name": "wf", "task": "builtin.noop"})
    webhook_id = _created(client, "webhooks", {"url": "http://127.0.0.1:9/hook", "event_types": ["run.failed"]})
    calendar_id = _created(client, "calendars", {"name": "c", "dates": ["2026-12-24"]})
    owner_id = _created(client, "owners", {"name": "alice"})
    token_id = _created(client, "tokens", {"name": "t"})
    for table, method, path, body, status in [
        ("workflows", "get", f"workflows/{workflow_id}/", None, 200),
        ("workflows", "patch", f"workflows/{workflow_id}/", {"name": "wf2"}, 200),
        ("workflows", "get", f"workflows/{workflow_id}/breaker/", None, 200),
        ("workflows", "post", f"workflows/{workflow_id}/breaker/reset/", None, 200),
        ("webhooks", "get", f"webhooks/{webhook_id}/", None, 200),
        ("webhooks", "patch", f"webhooks/{webhook_id}/", {"event_types": ["run.failed"]}, 200),
        ("webhooks", "get", f"webhooks/{webhook_id}/deliveries/", None, 200),
        ("calendars", "get", f"calendars/{calendar_id}/", None, 200),
        ("calendars", "patch", f"calendars/{calendar_id}/", {"dates": ["2026-12-25"]}, 200),
        ("calendars", "get", f"calendars/{calendar_id}/days/", None, 200),
        ("owners", "patch", f"owners/{owner_id}/", {"quotas": {"schedules": 5}}, 200),
        ("api_tokens", "delete", f"tokens/{token_id}/", None, 204),
        ("owners", "delete", f"owners/{owner_id}/", None, 204),
        ("calendars", "delete", f"calendars/{calendar_id}/", None, 204),
        ("webhooks", "delete", f"webhooks/{webhook_id}/", None, 204),
        ("workflows", "delete", f"workflows/{workflow_id}/", None, 204),
    ]:
        reads = _reads(client, table, method, path, status, body)
        every = _reads(client, table, "get", "me/", 200)  # what every request reads: its token, with its owner
        assert len(reads) - len(every) == 1, (method, path, reads)
