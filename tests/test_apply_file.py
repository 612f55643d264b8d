"""POST /apply/file/: a file planned on the server against the owner's objects, by the planner a sync uses
(recur_server.declarations.plan). Only the fields a file gives are compared and sent; a timing is compared as
what it stands for; an alert cleared by null is a change; refusals name the file's place."""

from __future__ import annotations

from typing import Any

FILE: dict[str, Any] = {
    "workflows": [{"name": "reports", "task": "builtin.noop"}],
    "schedules": [{"key": "reports/nightly", "name": "nightly", "workflow": "reports", "cron": "0 2 * * *",
                   "long_after_seconds": 900, "late_after_seconds": 60, "failing_after": None}],
}


def apply(client: Any, file: dict[str, Any], status: int = 200, **options: Any) -> dict[str, Any]:
    answer = client.post("/api/v1/apply/file/", json={"file": file, **options})
    assert answer.status_code == status, answer.get_json()
    return dict(answer.get_json())


def schedule_steps(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for step in answer["steps"] if step["kind"] == "schedule"]


def test_only_the_alerts_that_changed_are_planned_and_null_clears_one(client):
    made = apply(client, FILE)
    assert [(s["kind"], s["action"]) for s in made["steps"]] == [("workflow", "create"), ("schedule", "create")]
    (created,) = schedule_steps(made)
    client.patch(f"/api/v1/schedules/{created['id']}/", json={"long_after_seconds": None, "failing_after": 3})

    (step,) = schedule_steps(apply(client, FILE))
    assert step["action"] == "update"
    assert step["changes"] == {"long_after_seconds": {"from": None, "to": 900},
                               "failing_after": {"from": 3, "to": None}}
    assert [s["action"] for s in apply(client, FILE)["steps"]] == ["unchanged", "unchanged"]


def test_a_timing_is_compared_as_what_it_stands_for_and_a_new_kind_shows_both(client):
    every = {**FILE, "schedules": [{**FILE["schedules"][0], "cron": None, "every": "90m"}]}
    del every["schedules"][0]["cron"]
    apply(client, every)
    as_seconds = {**every, "schedules": [{**every["schedules"][0], "every": None, "interval_seconds": 5400}]}
    del as_seconds["schedules"][0]["every"]
    assert [s["action"] for s in schedule_steps(apply(client, as_seconds))] == ["unchanged"]

    (step,) = schedule_steps(apply(client, {**FILE, "schedules": [{**every["schedules"][0], "every": "2h"}]}))
    assert step["changes"] == {"interval_seconds": {"from": 5400, "to": 7200}}
    (step,) = schedule_steps(apply(client, FILE, dry_run=True))
    assert step["changes"] == {"cron": {"from": {"interval_seconds": 7200}, "to": {"cron": "0 2 * * *"}}}


def test_instants_compare_in_utc_rounded_up_to_the_second(client):
    at = {**FILE, "schedules": [{**FILE["schedules"][0], "end_at": "2999-06-01T12:00:00.5+02:00"}]}
    apply(client, at)
    same = {**FILE, "schedules": [{**FILE["schedules"][0], "end_at": "2999-06-01T10:00:01Z"}]}
    assert [s["action"] for s in schedule_steps(apply(client, same))] == ["unchanged"]


def test_refusals_name_the_place_in_the_file(client):
    twice = {"schedules": [FILE["schedules"][0], FILE["schedules"][0]], "workflows": FILE["workflows"]}
    assert "file.schedules.1.key" in apply(client, twice, 422)["errors"]
    nowhere = {"schedules": [{**FILE["schedules"][0], "workflow": "nowhere"}]}
    assert "no single workflow named 'nowhere'" in apply(client, nowhere, 422)["errors"][
        "file.schedules.0.workflow"][0]
    relative = {"schedules": [{**FILE["schedules"][0], "after_seconds": 60}]}
    assert "give `at`" in apply(client, relative, 422)["errors"]["file.schedules.0.after_seconds"][0]
    bad_cron = {**FILE, "schedules": [FILE["schedules"][0], {**FILE["schedules"][0], "key": "b", "cron": "61 * * * *"}]}
    refused = apply(client, bad_cron, 422)
    assert refused["message"].startswith("schedule b: ") and "Nothing of the apply was kept." in refused["message"]
    assert list(refused["errors"]) == ["file.schedules.1.cron"]
    assert client.get("/api/v1/schedules/").get_json()["total"] == 0
