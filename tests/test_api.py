"""The REST API through Flask's test client: shapes, validation, state rules, never a 500."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chain_driver import scheduled_ids
from recur_server.chain.ids import link_id


def _workflow(client, task="builtin.noop"):
    response = client.post("/api/v1/workflows/", json={"name": "wf", "task": task})
    assert response.status_code == 201, response.json
    return response.json["id"]


def _schedule(client, **fields):
    body = {"name": "s", "workflow_id": _workflow(client), "interval_seconds": 60, **fields}
    response = client.post("/api/v1/schedules/", json=body)
    assert response.status_code == 201, response.json
    return response.json


def _assert_error(response, status, field=None):
    assert response.status_code == status, response.json
    body = response.json
    assert set(body) == {"code", "status", "message", "errors"}
    assert body["status"] == status
    if field:
        assert field in body["errors"], body


def test_workflow_crud_and_unknown_task(client):
    workflow_id = _workflow(client)
    assert client.get(f"/api/v1/workflows/{workflow_id}/").json["task"] == "builtin.noop"
    assert client.get("/api/v1/workflows/").json["total"] == 1
    _assert_error(client.post("/api/v1/workflows/", json={"name": "x", "task": "os.system"}), 422, "task")
    assert client.delete(f"/api/v1/workflows/{workflow_id}/").status_code == 204
    _assert_error(client.get(f"/api/v1/workflows/{workflow_id}/"), 404)


def test_create_schedule_enqueues_first_link(app, client):
    body = _schedule(client, total_repeats=3, trigger_payload={"k": [1, 2]})
    assert body["status"] == "active" and body["trigger_payload"] == {"k": [1, 2]}
    assert (body["max_retries"], body["timeout_seconds"]) == (3, 600)
    assert len(body["next_runs"]) == 3 and body["next_runs"][0] == body["next_run_at"]
    assert scheduled_ids(app) == [link_id(body["id"], 0, 0)]
    got = client.get(f"/api/v1/schedules/{body['id']}/").json
    assert got["id"] == body["id"] and "timing_description" in got


@pytest.mark.parametrize(
    ("fields", "bad_field"),
    [
        ({"interval_seconds": 0}, "interval_seconds"),
        ({"interval_seconds": "10"}, "interval_seconds"),
        ({"total_repeats": -1}, "total_repeats"),
        ({"max_retries": -1}, "max_retries"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"name": None}, "name"),
        ({"workflow_id": None}, "workflow_id"),
        ({"workflow_id": 999}, "workflow_id"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_invalid_schedule_bodies_are_422_naming_the_field(client, fields, bad_field):
    body = {"name": "s", "workflow_id": _workflow(client), "interval_seconds": 60, **fields}
    _assert_error(client.post("/api/v1/schedules/", json=body), 422, bad_field)


def test_missing_timing_and_two_timings_are_422(client):
    workflow_id = _workflow(client)
    _assert_error(client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow_id}), 422, "timing")


def test_pause_resume_rules(app, client):
    schedule_id = _schedule(client)["id"]
    paused = client.post(f"/api/v1/schedules/{schedule_id}/pause/")
    assert paused.status_code == 200 and paused.json["status"] == "paused" and paused.json["next_run_at"] is None
    assert scheduled_ids(app) == []
    _assert_error(client.post(f"/api/v1/schedules/{schedule_id}/pause/"), 409)
    resumed = client.post(f"/api/v1/schedules/{schedule_id}/resume/")
    assert resumed.status_code == 200 and resumed.json["status"] == "active"
    assert resumed.json["current_repeat"] == 1  # a resume starts a new tick, under a new link ID
    assert scheduled_ids(app) == [link_id(schedule_id, 1, 0)]
    _assert_error(client.post(f"/api/v1/schedules/{schedule_id}/resume/"), 409)
    _assert_error(client.post("/api/v1/schedules/nope/pause/"), 404)


def test_patch_replans_and_bumps_revision(app, client):
    created = _schedule(client)
    patched = client.patch(f"/api/v1/schedules/{created['id']}/", json={"interval_seconds": 5, "name": "renamed"})
    assert patched.status_code == 200, patched.json
    assert patched.json["name"] == "renamed" and patched.json["revision"] == created["revision"] + 1
    assert patched.json["next_run_at"] < created["next_run_at"]
    assert patched.json["current_repeat"] == 1  # a re-plan starts a new tick, under a new link ID
    assert scheduled_ids(app) == [link_id(created["id"], 1, 0)]
    _assert_error(client.patch(f"/api/v1/schedules/{created['id']}/", json={"interval_seconds": -5}), 422,
                  "interval_seconds")
    _assert_error(client.patch(f"/api/v1/schedules/{created['id']}/", json={"name": None}), 422, "name")


def test_delete_and_batch_delete(app, client):
    first, second, third = (_schedule(client)["id"] for _ in range(3))
    assert client.delete(f"/api/v1/schedules/{first}/").status_code == 204
    _assert_error(client.delete(f"/api/v1/schedules/{first}/"), 404)
    result = client.post("/api/v1/schedules/batch-delete/", json={"schedule_ids": [second, "missing"]})
    assert result.json == {"deleted": [second], "not_found": ["missing"]}
    assert scheduled_ids(app) == [link_id(third, 0, 0)]
    _assert_error(client.post("/api/v1/schedules/batch-delete/", json={"schedule_ids": "x"}), 422, "schedule_ids")


def test_list_filters_and_pagination(client):
    workflow_id = _workflow(client)
    ids = [
        client.post("/api/v1/schedules/", json={"name": f"s{i}", "workflow_id": workflow_id, "interval_seconds": 9})
        .json["id"] for i in range(5)
    ]
    client.post(f"/api/v1/schedules/{ids[0]}/pause/")
    page = client.get("/api/v1/schedules/?limit=2&offset=1").json
    assert page["total"] == 5 and len(page["items"]) == 2
    assert client.get("/api/v1/schedules/?status=paused").json["total"] == 1
    assert client.get(f"/api/v1/schedules/?workflow_id={workflow_id}&status=active").json["total"] == 4
    _assert_error(client.get("/api/v1/schedules/?limit=0"), 422, "limit")
    _assert_error(client.get("/api/v1/schedules/?status=sleeping"), 422, "status")
    runs = client.get(f"/api/v1/schedules/{ids[1]}/runs/").json
    assert runs == {"items": [], "total": 0, "total_capped": False, "next": None}
    _assert_error(client.get("/api/v1/schedules/nope/runs/"), 404)


def test_malformed_bodies_are_4xx(client):
    response = client.post("/api/v1/schedules/", data="{not json", content_type="application/json")
    _assert_error(response, 400)
    _assert_error(client.post("/api/v1/schedules/", json=[1, 2]), 400)
    _assert_error(client.get("/api/v1/nothing-here/"), 404)
    _assert_error(client.put("/api/v1/schedules/"), 405)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
field_names = st.sampled_from([
    "name", "workflow_id", "interval_seconds", "total_repeats", "max_retries", "timeout_seconds",
    "trigger_payload", "description", "cron", "rrule", "timezone", "at", "every", "only_between", "not_on",
    "jitter_seconds", "anchor_date", "start_at", "end_at", "after_seconds", "day_or", "other",
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(field_names, json_values, max_size=8))
def test_no_body_gets_a_500(client, body):
    for method, url in (("post", "/api/v1/schedules/"), ("post", "/api/v1/schedules/preview/"),
                        ("post", "/api/v1/workflows/")):
        response = getattr(client, method)(url, data=json.dumps(body), content_type="application/json")
        assert response.status_code < 500, (url, body, response.json)


def test_health_reports_both_stores_and_reconciler_totals(app, client):
    from recur_server.infra.extensions import db
    from recur_server.workers.background import reconcile_once

    _schedule(client)
    db.session.rollback()  # end the test's own transaction: the pass runs in an app context of its own
    reconcile_once(app)
    response = client.get("/api/v1/health/")
    body = response.json
    assert response.status_code == 200, body
    assert (body["database"], body["redis"]) == ("ok", "ok")
    assert body["schedules"] == {"active": 1, "paused": 0, "done": 0, "dead": 0, "invalid": 0}
    assert body["reconciler"]["reconcile_passes"] == "1" and body["reconciler"]["links_repaired"] == "0"
    assert body["reconciler"]["schedules_invalidated"] == "0"


def test_an_interval_that_starts_later_is_created_with_its_first_run_at_or_after_its_start(client):
    """An interval anchored at its creation instant (with its milliseconds) and a start_at a whole number of
    intervals away: a slot lands less than a second before start_at. It was refused, "this timing has no
    run after now"."""
    from datetime import UTC, datetime, timedelta

    workflow = client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).get_json()["id"]
    for interval, ahead in ((60, timedelta(minutes=5)), (1, timedelta(hours=1)), (600, timedelta(days=1))):
        start = datetime.now(UTC) + ahead
        answer = client.post("/api/v1/schedules/", json={"name": "later", "workflow_id": workflow,
                                                         "interval_seconds": interval, "start_at": start.isoformat()})
        assert answer.status_code == 201, answer.get_json()
        first = datetime.fromisoformat(answer.get_json()["next_run_at"].replace("Z", "+00:00"))
        assert start <= first < start + timedelta(seconds=interval + 1)
