"""`recur apply`: schedules as code, against a real server. Applying the same file twice changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.recur_cli_runner import recur

pytestmark = pytest.mark.integration

WORKFLOWS = [
    {"name": "reports", "task": "builtin.noop"},
    {"name": "cleanup", "task": "builtin.noop"},
    {"name": "sync", "task": "builtin.sleep", "max_concurrent_runs": 2, "concurrency_policy": "skip"},
]
# Ten schedules using every kind of timing and the fields whose stored form differs from the file's.
SCHEDULES = [
    {"key": "reports/nightly", "workflow": "reports", "name": "Nightly", "cron": "0 2 * * *",
     "timezone": "Europe/Berlin", "trigger_payload": {"report": "sales", "days": [1, 2]}},
    {"key": "reports/weekly", "workflow": "reports", "name": "Weekly", "cron": "30 6 * * 1",
     "timezone": "America/New_York", "max_retries": 1, "timeout_seconds": 120},
    {"key": "reports/monthly", "workflow": "reports", "name": "Monthly",
     "rrule": "FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=7;BYMINUTE=0", "description": "first of the month"},
    {"key": "cleanup/tmp", "workflow": "cleanup", "name": "Temp files", "every": "15m", "jitter_seconds": 30},
    {"key": "cleanup/logs", "workflow": "cleanup", "name": "Logs", "interval_seconds": 3600,
     "anchor_date": "2026-01-01T00:00:00.250+01:00"},
    {"key": "cleanup/once", "workflow": "cleanup", "name": "Once", "at": "2999-06-01T12:00:00.5+02:00"},
    {"key": "sync/office-hours", "workflow": "sync", "name": "Office hours", "every": "90m",
     "only_between": "09:00-17:00", "timezone": "Europe/London", "not_on": ["sat", "sun"]},
    {"key": "sync/holidays", "workflow": "sync", "name": "Not on holidays", "cron": "0 12 * * *",
     "not_on": ["Monday", 3], "end_at": "2999-12-31T23:59:59Z"},
    {"key": "sync/capped", "workflow": "sync", "name": "Ten times", "every": "10m", "total_repeats": 10,
     "catch_up": "all", "catch_up_limit": 5, "catch_up_window_seconds": 3600, "overlap": "buffer_one"},
    {"key": "sync/paused-later", "workflow": "sync", "name": "Start later", "cron": "*/5 * * * *",
     "start_at": "2999-01-01T00:00:00", "on_exhausted": "pause"},
]


def _write(path: Path, schedules: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text(yaml.safe_dump({"workflows": WORKFLOWS, "schedules": schedules}, sort_keys=False))
    return path


def test_apply_creates_then_changes_nothing_then_only_what_changed(stack, tmp_path):
    url, token = stack.api.base, stack.api.token
    api = stack.api
    path = _write(tmp_path / "recur.yaml", SCHEDULES)
    loose = api.ok("POST", "/api/v1/schedules/", {  # made by hand, without a key: apply never touches it
        "name": "by hand", "workflow_id": api.ok("POST", "/api/v1/workflows/", {"name": "x", "task": "builtin.noop"})[
            "id"], "every": "1h"})

    plan = recur(url, token, "apply", str(path), "--dry-run").out
    assert plan.splitlines()[-1] == "plan: 10 create, 0 update, 0 delete, 0 unchanged (dry run: nothing was changed)"
    assert api.ok("GET", "/api/v1/schedules/")["total"] == 1

    first = recur(url, token, "apply", str(path)).out
    assert first.splitlines()[-1] == "10 created, 0 updated, 0 deleted, 0 unchanged", first
    before = {s["key"]: s for s in api.ok("GET", "/api/v1/schedules/?limit=100")["items"] if s["key"]}
    assert len(before) == 10 and {w["name"] for w in api.ok("GET", "/api/v1/workflows/")["items"]} == {
        "reports", "cleanup", "sync", "x"}
    assert before["cleanup/tmp"]["interval_seconds"] == 900 and before["sync/capped"]["total_repeats"] == 10
    assert (before["sync/capped"]["catch_up"], before["sync/capped"]["overlap"]) == ("all", "buffer_one")
    sync = next(w for w in api.ok("GET", "/api/v1/workflows/")["items"] if w["name"] == "sync")
    assert (sync["max_concurrent_runs"], sync["concurrency_policy"]) == (2, "skip")

    second = recur(url, token, "apply", str(path)).out
    assert second.splitlines()[-1] == "0 created, 0 updated, 0 deleted, 10 unchanged", second
    again = {s["key"]: s for s in api.ok("GET", "/api/v1/schedules/?limit=100")["items"] if s["key"]}
    assert again == before  # not even updated_at moved

    edited = [dict(s) for s in SCHEDULES]
    edited[1]["cron"] = "45 6 * * 1"
    _write(path, edited)
    dry = recur(url, token, "apply", str(path), "--dry-run", "--json").json()
    changed = [s for s in dry["steps"] if s["action"] != "unchanged"]
    assert changed == [{"kind": "schedule", "name": "reports/weekly", "action": "update",
                        "id": before["reports/weekly"]["id"],
                        "changes": {"cron": {"from": ["cron", "30 6 * * 1"], "to": ["cron", "45 6 * * 1"]}}}]
    assert api.ok("GET", f"/api/v1/schedules/{before['reports/weekly']['id']}/")["cron"] == "30 6 * * 1"
    out = recur(url, token, "apply", str(path)).out
    assert "update    schedule reports/weekly  (cron: " in out
    assert out.splitlines()[-1] == "0 created, 1 updated, 0 deleted, 9 unchanged"
    after = {s["key"]: s for s in api.ok("GET", "/api/v1/schedules/?limit=100")["items"] if s["key"]}
    weekly = after.pop("reports/weekly")
    assert weekly["cron"] == "45 6 * * 1" and weekly["revision"] == before["reports/weekly"]["revision"] + 1
    assert weekly["next_run_at"] != before["reports/weekly"]["next_run_at"]  # re-planned
    assert after == {k: v for k, v in before.items() if k != "reports/weekly"}

    # Another owner's keyed schedule is theirs: the admin's --prune leaves it alone.
    bob = api.ok("POST", "/api/v1/owners/", {"name": "bob"})["token"]["token"]
    recur(url, bob, "workflows", "create", "bobs", "builtin.noop")
    recur(url, bob, "schedules", "create", "--name", "b", "--workflow", "bobs", "--every", "1h", "--key",
          "reports/nightly")

    _write(path, [s for s in edited if s["key"] != "cleanup/once"])
    without_prune = recur(url, token, "apply", str(path)).out
    assert without_prune.splitlines()[-1] == "0 created, 0 updated, 0 deleted, 9 unchanged"
    pruned = recur(url, token, "apply", str(path), "--prune").out
    assert "delete    schedule cleanup/once" in pruned
    assert pruned.splitlines()[-1] == "0 created, 0 updated, 1 deleted, 9 unchanged"
    left = api.ok("GET", "/api/v1/schedules/?limit=100")["items"]
    assert len(left) == 11  # nine keyed, the loose one, bob's
    assert loose["id"] in {s["id"] for s in left} and before["cleanup/once"]["id"] not in {s["id"] for s in left}


def test_apply_refuses_a_file_it_cannot_apply(stack, tmp_path):
    url, token = stack.api.base, stack.api.token
    bad = tmp_path / "bad.yaml"
    for text, message in (
        ("schedules: [{key: a, workflow: w, name: n, cron: '* * * * *'}, {key: a, workflow: w, name: m}]",
         "schedule keys used more than once: ['a']"),
        ("schedules: [{workflow: w, name: n}]", "needs a `key`"),
        ("schedules: [{key: a, workflow: w, name: n, after_seconds: 60}]", "after_seconds: give `at`"),
        ("schedules: [{key: a, workflow: nowhere, name: n, cron: '* * * * *'}]", "no single workflow named"),
        ("jobs: []", "unknown top-level entries ['jobs']"),
        (": not yaml: [", "is not valid YAML"),
    ):
        bad.write_text(text)
        result = recur(url, token, "apply", str(bad), ok=False)
        assert result.code == 2 and message in result.err, (text, result)
    bad.write_text("workflows: [{name: w, task: builtin.noop}]\n"
                   "schedules: [{key: a, workflow: w, name: n, cron: '61 * * * *'}]")
    refused = recur(url, token, "apply", str(bad), ok=False)
    assert refused.code == 1 and refused.err.startswith("error: schedule a: The request body is invalid.")
    assert "cron:" in refused.err
