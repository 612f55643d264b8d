"""A schedule's optional `key`: the user's own name for it, unique per owner (recur apply matches by it)."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from harness.tokens import authorized_client, new_owner_token
from recur_server import create_app
from recur_server.infra.extensions import db
from recur_server.services import schema


def _create(client, workflow_id: int, **fields):  # type: ignore[no-untyped-def]
    return client.post("/api/v1/schedules/", json={"name": "s", "workflow_id": workflow_id,
                                                     "interval_seconds": 60, **fields})


def _workflow(client) -> int:  # type: ignore[no-untyped-def]
    return client.post("/api/v1/workflows/", json={"name": "w", "task": "builtin.noop"}).json["id"]


def test_a_key_is_unique_per_owner_and_filters_the_list(app, client):
    workflow = _workflow(client)
    first = _create(client, workflow, key="reports/nightly")
    assert first.status_code == 201 and first.json["key"] == "reports/nightly"
    duplicate = _create(client, workflow, key="reports/nightly")
    assert duplicate.status_code == 409, duplicate.json
    assert duplicate.json["code"] == "conflict" and "key" in duplicate.json["errors"]
    unkeyed = [_create(client, workflow).json for _ in range(2)]  # no key: as many as wanted
    assert [s["key"] for s in unkeyed] == [None, None]

    alice = authorized_client(app, new_owner_token(app, "alice"))
    hers = _create(alice, _workflow(alice), key="reports/nightly")  # another owner's keys are their own
    assert hers.status_code == 201
    assert [s["id"] for s in alice.get("/api/v1/schedules/?key=reports/nightly").json["items"]] == [hers.json["id"]]
    assert [s["id"] for s in client.get("/api/v1/schedules/?key=reports/nightly&owner_id=1").json["items"]] == [
        first.json["id"]]
    assert client.get("/api/v1/schedules/?key=nothing-like-it").json == {"items": [], "total": 0, "total_capped": False,
                                                                         "next": None}

    taken = client.patch(f"/api/v1/schedules/{unkeyed[0]['id']}/", json={"key": "reports/nightly"})
    assert taken.status_code == 409 and "key" in taken.json["errors"]
    renamed = client.patch(f"/api/v1/schedules/{first.json['id']}/", json={"key": "reports/daily"})
    assert renamed.status_code == 200 and renamed.json["key"] == "reports/daily"
    assert client.patch(f"/api/v1/schedules/{unkeyed[0]['id']}/", json={"key": "reports/nightly"}).status_code == 200
    cleared = client.patch(f"/api/v1/schedules/{first.json['id']}/", json={"key": None})
    assert cleared.status_code == 200 and cleared.json["key"] is None


@pytest.mark.parametrize("key", ["", "has space", "x" * 201, "-leading-dash", "new\nline", "trailing\n"])
def test_a_key_is_a_short_name_without_spaces(client, key):
    response = _create(client, _workflow(client), key=key)
    assert response.status_code == 422 and "key" in response.json["errors"], response.json


def test_schedules_from_before_keys_have_none_and_the_database_keeps_keys_unique(database_url: str) -> None:
    app = create_app({"TESTING": True, "DATABASE_URL": database_url, "REDIS_URL": "redis://127.0.0.1:1/0"})
    insert = (
        "INSERT INTO scheduled_jobs (id, name, workflow_id, owner_id, interval_seconds, total_repeats, max_retries, "
        "timeout_seconds, status, current_repeat, current_retry, run_count, error_count, created_at, updated_at, "
        "anchor_explicit, day_or, timezone, jitter_seconds, revision{extra}) VALUES "
        "(:id, 'old', 7, :owner, 60, 0, 3, 600, 'active', 0, 0, 0, 0, '2026-01-01 00:00:00', "
        "'2026-01-01 00:00:00', false, true, 'UTC', 0, 0{values})")
    with app.app_context():
        try:
            schema.upgrade("0003")
            with db.engine.begin() as conn:
                conn.execute(text("INSERT INTO owners (id, name, is_admin, created_at) "
                                  "VALUES (2, 'bob', false, '2026-01-01 00:00:00')"))
                conn.execute(text("INSERT INTO workflows (id, name, task, owner_id, created_at) "
                                  "VALUES (7, 'old', 'builtin.noop', 1, '2026-01-01 00:00:00')"))
                conn.execute(text(insert.format(extra="", values="")),
                             {"id": "00000000-0000-0000-0000-000000000001", "owner": 1})
            schema.upgrade()
            keyed = text(insert.format(extra=", key", values=", :key"))
            with db.engine.begin() as conn:
                assert conn.execute(text("SELECT key FROM scheduled_jobs")).scalars().all() == [None]
                conn.execute(keyed, {"id": "00000000-0000-0000-0000-000000000002", "owner": 1, "key": "k"})
                conn.execute(keyed, {"id": "00000000-0000-0000-0000-000000000003", "owner": 2, "key": "k"})
                conn.execute(keyed, {"id": "00000000-0000-0000-0000-000000000004", "owner": 1, "key": None})
            with pytest.raises(IntegrityError), db.engine.begin() as conn:
                conn.execute(keyed, {"id": "00000000-0000-0000-0000-000000000005", "owner": 1, "key": "k"})
        finally:
            db.session.remove()
            db.engine.dispose()
