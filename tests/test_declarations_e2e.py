"""Schedules declared in a task module, through worker.py and gunicorn (issue 37's "Done when"): a cron
schedule on a decorated task and an interval schedule on a plain function with args and kwargs are synced by
the worker's start and run, the function receiving exactly its arguments, and a schedule declared to follow
the plain function runs after its successes; a changed cron is one PATCH in the
audit trail with the counters and history kept; a removed declaration is paused; three workers starting at
once sync once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.servers import wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration


def schedule(stack: Stack, key: str) -> dict[str, Any]:
    items = stack.api.ok("GET", f"/api/v1/schedules/?key={key}")["items"]
    assert len(items) == 1, items
    found: dict[str, Any] = stack.api.ok("GET", f"/api/v1/schedules/{items[0]['id']}/")
    return found


def audit(stack: Stack, schedule_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/events/")["items"]
    return sorted(events, key=lambda e: e["at"])


def calls(path: Path, function: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [c for c in lines if c["function"] == function]


def restart(stack: Stack, count: int = 1, **env: str) -> None:
    for worker in stack.workers:
        worker.stop()
    stack.env.update(env)
    for _ in range(count):
        stack.start_worker()
    for worker in stack.workers[-count:]:
        wait_for(lambda w=worker: "Listening on" in w.output() or "slots on" in w.output(), 90,
                 what="a worker to start")


def test_declared_schedules_sync_on_start_run_and_follow_the_code(stack: Stack, tmp_path: Path) -> None:
    calls_file = tmp_path / "calls.jsonl"
    stack.env.update({"RECUR_TASK_MODULES": "harness.declared_schedules", "RECUR_SYNC_ON_START": "1",
                      "RECUR_TEST_CALLS_FILE": str(calls_file), "TEST_DECLARED_CRON": "*/2 * * * * *"})
    restart(stack)
    tick, report = schedule(stack, "tick-cron"), schedule(stack, "reports-42")
    assert (tick["cron"], tick["timezone"], tick["max_retries"]) == ("*/2 * * * * *", "Europe/Paris", 2)
    assert (report["interval_seconds"], report["timeout_seconds"]) == (3, 30)

    # Both run; the plain function gets exactly its declared arguments, and its run's context.
    wait_for(lambda: len(calls(calls_file, "send_report")) >= 2 and len(calls(calls_file, "tick")) >= 2, 60,
             interval=0.3, what="both declared schedules to run twice")
    sent = calls(calls_file, "send_report")
    assert {(json.dumps(c["args"]), json.dumps(c["kwargs"], sort_keys=True)) for c in sent} == {
        ("[42]", json.dumps({"channels": ["mail"], "dry_run": True}, sort_keys=True))}
    assert {c["schedule_id"] for c in sent} == {report["id"]} and all(c["attempt"] == 1 for c in sent)
    assert len({c["idempotency_key"] for c in sent}) == len(sent)
    assert {json.dumps(c["payload"]) for c in calls(calls_file, "tick")} == {json.dumps({"from": "cron"})}

    # The follower (follows=send_report) runs after each of its successes, triggered by that run.
    archive = schedule(stack, "archive-reports")
    assert (archive["after"]["schedule_id"], archive["after"]["on"]) == (report["id"], "succeeded")
    wait_for(lambda: len([r for r in stack.api.runs(archive["id"]) if r["status"] == "succeeded"]) >= 2, 30,
             interval=0.3, what="the follower to run after two of send_report's successes")
    followed = [r for r in stack.api.runs(archive["id"]) if r["status"] == "succeeded"]
    upstream_ok = {r["id"] for r in stack.api.runs(report["id"]) if r["status"] == "succeeded"}
    assert {r["trigger"] for r in followed} == {"after"} and {r["triggered_by_run_id"] for r in followed} <= upstream_ok
    assert {c["args"][0] for c in calls(calls_file, "archive")} == {"reports"}

    # Change the cron and restart: one PATCH, under the sync's owner; counters and history kept.
    restart(stack, TEST_DECLARED_CRON="*/3 * * * * *")
    before = schedule(stack, "tick-cron")
    wait_for(lambda: schedule(stack, "tick-cron")["cron"] == "*/3 * * * * *", 30, what="the cron to change")
    changed = schedule(stack, "tick-cron")
    updates = [e for e in audit(stack, tick["id"]) if e["action"] == "update"]
    assert [(e["changes"], e["actor"]) for e in updates] == [
        ({"cron": "*/3 * * * * *"}, "admin (declarations sync)")]
    assert changed["run_count"] >= before["run_count"] >= 2
    assert len(stack.api.runs(tick["id"])) >= before["run_count"]
    assert [e["action"] for e in audit(stack, report["id"])] == ["create"]  # the other one untouched

    # Remove the plain function's declaration and restart: paused, its history kept.
    restart(stack, TEST_DECLARE_REPORT="0")
    wait_for(lambda: schedule(stack, "reports-42")["status"] == "paused", 30, what="the removed one paused")
    assert schedule(stack, "reports-42")["run_count"] >= 2
    assert schedule(stack, "tick-cron")["status"] == "active"

    # Three workers starting at once with a new cron: one of them syncs, one PATCH.
    restart(stack, count=3, TEST_DECLARED_CRON="*/4 * * * * *")
    wait_for(lambda: schedule(stack, "tick-cron")["cron"] == "*/4 * * * * *", 30, what="the cron to change")
    updates = [e for e in audit(stack, tick["id"]) if e["action"] == "update"]
    assert [e["changes"] for e in updates] == [{"cron": "*/3 * * * * *"}, {"cron": "*/4 * * * * *"}]
    logs = [w.output() for w in stack.workers[-3:]]
    assert sum("synced: " in log for log in logs) == 1, logs
    assert sum("synced these declarations already" in log for log in logs) == 2
