"""A schedule's key wherever its id is taken: every API path under /schedules/{id}/ (a key with `/` too,
scoped to the caller: another owner's key is as absent as a key that never was), the batch delete, and the
`recur` commands, whose client percent-encodes the key."""

from __future__ import annotations

import pytest

from harness.recur_cli_runner import recur
from harness.tokens import authorized_client, new_owner_token


def _schedule(client, key: str | None = None, name: str = "s"):  # type: ignore[no-untyped-def]
    workflow = client.post("/api/v1/workflows/", json={"name": f"w-{name}", "task": "builtin.noop"}).json["id"]
    made = client.post("/api/v1/schedules/", json={"name": name, "workflow_id": workflow, "interval_seconds": 3600,
                                                   **({"key": key} if key else {})})
    assert made.status_code == 201, made.json
    return made.json


def test_every_schedule_path_takes_its_key_with_a_slash_too(app, client):
    made = _schedule(client, key="reports/nightly")
    by_key = "/api/v1/schedules/reports%2Fnightly/"
    for path in (by_key, "/api/v1/schedules/reports/nightly/"):  # encoded or not, the same schedule
        shown = client.get(path)
        assert shown.status_code == 200 and shown.json["id"] == made["id"], (path, shown.json)
    assert client.get(f"/api/v1/schedules/{made['id']}/").json["key"] == "reports/nightly"  # an id still works
    assert client.patch(by_key, json={"name": "renamed"}).json["name"] == "renamed"
    assert client.post(f"{by_key}pause/", json={}).json["status"] == "paused"
    assert client.post(f"{by_key}resume/", json={}).json["status"] == "active"
    assert client.get(f"{by_key}runs/").json["items"] == []
    assert client.get(f"{by_key}backfills/").status_code == 200
    assert client.get(f"{by_key}explain/", query_string={"at": "2031-01-01T00:00:00Z"}).status_code == 200
    actions = [e["action"] for e in client.get(f"{by_key}events/").json["items"]]
    assert {"create", "update", "pause", "resume"} <= set(actions), actions
    triggered = client.post(f"{by_key}trigger/", json={})
    assert triggered.status_code == 202, triggered.json
    by_id = client.get(f"/api/v1/schedules/{made['id']}/runs/{triggered.json['run_id']}/")
    run = client.get(f"{by_key}runs/{triggered.json['run_id']}/")  # as by its id (no worker ran it here)
    assert (run.status_code, run.json) == (by_id.status_code, by_id.json)

    missing = client.get("/api/v1/schedules/reports/weekly/")
    assert missing.status_code == 404 and missing.json["code"] == "not_found"
    assert client.delete(by_key).status_code == 204
    assert client.get(f"/api/v1/schedules/{made['id']}/").status_code == 404
    assert client.get(f"/api/v1/schedules/{made['id']}/events/").json["items"][0]["action"] == "delete"
    assert client.get(f"{by_key}events/").status_code == 404  # a key names a schedule that exists


def test_another_owners_key_is_not_found_and_a_key_is_the_callers_own(app, client):
    theirs = _schedule(client, key="shared/name")
    alice = authorized_client(app, new_owner_token(app, "alice"))
    for method, path in (("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "pause/"), ("GET", "runs/"),
                         ("GET", "events/"), ("GET", "explain/"), ("POST", "trigger/")):
        answer = alice.open(f"/api/v1/schedules/shared%2Fname/{path}", method=method,
                            json={} if method in ("POST", "PATCH") else None)
        assert answer.status_code == 404, (method, path, answer.json)
    mine = _schedule(alice, key="shared/name", name="alices")  # keys are unique per owner only
    assert alice.get("/api/v1/schedules/shared%2Fname/").json["id"] == mine["id"]
    assert client.get("/api/v1/schedules/shared%2Fname/").json["id"] == theirs["id"]  # an admin's own key
    assert alice.get(f"/api/v1/schedules/{theirs['id']}/").status_code == 404


def test_the_batch_delete_takes_keys_and_reports_each_as_given(app, client):
    first, second = _schedule(client, key="a/one", name="one"), _schedule(client, key="two", name="two")
    alice = authorized_client(app, new_owner_token(app, "alice"))
    _schedule(alice, key="hers", name="hers")
    answer = client.post("/api/v1/schedules/batch-delete/", json={"schedule_ids": [
        "a/one", second["id"], "hers", "never"]})
    assert answer.status_code == 200, answer.json
    assert answer.json == {"deleted": ["a/one", second["id"]], "not_found": ["hers", "never"]}
    assert client.get(f"/api/v1/schedules/{first['id']}/").status_code == 404
    assert alice.get("/api/v1/schedules/hers/").status_code == 200


@pytest.mark.integration
def test_recur_commands_take_a_key(stack):  # type: ignore[no-untyped-def]
    url, token = stack.api.base, stack.api.token

    def run(*args: str, ok: bool = True):  # type: ignore[no-untyped-def]
        return recur(url, token, *args, ok=ok)

    run("workflows", "create", "jobs", "builtin.noop")
    made = run("schedules", "create", "--name", "add", "--workflow", "jobs", "--every", "1h", "--key", "jobs-add",
               "--json").json()
    slashed = run("schedules", "create", "--name", "nightly", "--workflow", "jobs", "--cron", "0 3 * * *",
                  "--key", "reports/nightly@eu+1", "--json").json()
    assert run("schedules", "show", "jobs-add", "--json").json()["id"] == made["id"]
    assert run("schedules", "show", "reports/nightly@eu+1", "--json").json()["id"] == slashed["id"]
    assert "jobs-add" in run("schedules", "show", "jobs-add").out
    assert run("schedules", "pause", "reports/nightly@eu+1", "--json").json()["status"] == "paused"
    assert run("schedules", "resume", "reports/nightly@eu+1", "--json").json()["status"] == "active"
    assert run("schedules", "edit", "jobs-add", "--name", "added", "--json").json()["name"] == "added"
    told = run("schedules", "explain", "reports/nightly@eu+1", "--at", "2031-01-06T03:00:00Z", "--json").json()
    assert told["kind"] == "will_run", told
    assert run("schedules", "runs", "jobs-add").code == 0
    assert "update" in run("events", "schedule", "jobs-add").out
    missing = run("schedules", "show", "jobs-gone", ok=False)
    assert missing.code != 0 and "schedule jobs-gone does not exist" in missing.err and "404" in missing.err
    deleted = run("schedules", "delete", "jobs-add", "reports/nightly@eu+1").out.splitlines()
    assert deleted == ["deleted jobs-add", "deleted reports/nightly@eu+1"]
    assert run("schedules", "show", made["id"], ok=False).code != 0
