"""A dead schedule brought back, as an operator would on a bad day: its task's work process died on every
attempt until its retries ran out (`dead`); the task is fixed, and the schedule is revived from the console's
Revive button (in Chromium) and, after a second death, from `recur schedules resume`. Each time it runs
again, and the audit trail has a `revive` row naming who did it."""

from __future__ import annotations

from typing import Any

import pytest

from harness.recur_cli_runner import recur
from harness.servers import wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}


def _status(stack: Stack, schedule_id: str) -> str:
    return str(stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["status"])


def _succeeded(stack: Stack, schedule_id: str) -> int:
    return sum(1 for r in stack.api.runs(schedule_id) if r["status"] == "succeeded")


def _revives(stack: Stack, schedule_id: str) -> list[dict[str, Any]]:
    events = stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/events/")["items"]
    return [e for e in events if e["action"] == "revive"]


def _dies(stack: Stack, workflow_id: int, schedule_id: str) -> None:
    stack.api.ok("PATCH", f"/api/v1/workflows/{workflow_id}/", {"task": "tests.die"})
    wait_for(lambda: _status(stack, schedule_id) == "dead", 60, interval=0.5, what="the schedule to die")


def test_a_dead_schedule_revived_from_the_console_and_the_cli_runs_again(stack: Stack, browser: Any) -> None:
    from playwright.sync_api import expect

    stack.start_worker()
    stack.wait_workers_ready()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "flaky", "task": "tests.die"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "flaky", "workflow_id": workflow["id"], "interval_seconds": 1, "max_retries": 0})
    wait_for(lambda: _status(stack, schedule["id"]) == "dead", 60, interval=0.5, what="the schedule to die")

    # The task is fixed; the console's Revive button brings the schedule back.
    stack.api.ok("PATCH", f"/api/v1/workflows/{workflow['id']}/", {"task": "builtin.noop"})
    page = stack.console_page(browser, viewport={"width": 1280, "height": 900})
    page.goto(f"{stack.api.base}/schedules/{schedule['id']}")
    page.click("#revive")
    expect(page.locator(".flash")).to_contain_text("Revived")
    wait_for(lambda: _succeeded(stack, schedule["id"]) > 0, 30, interval=0.5, what="a run after the revive")
    assert _status(stack, schedule["id"]) == "active"
    [revive] = _revives(stack, schedule["id"])
    assert revive["actor"] and revive["changes"]["from"] == "dead", revive

    # Dead again; revived from the command line this time.
    _dies(stack, workflow["id"], schedule["id"])
    stack.api.ok("PATCH", f"/api/v1/workflows/{workflow['id']}/", {"task": "builtin.noop"})
    ran = _succeeded(stack, schedule["id"])
    out = recur(stack.api.base, stack.api.token, "schedules", "resume", schedule["id"]).out
    assert out.startswith(f"resumed {schedule['id']}; next run "), out
    wait_for(lambda: _succeeded(stack, schedule["id"]) > ran, 30, interval=0.5, what="a run after the CLI revive")
    assert len(_revives(stack, schedule["id"])) == 2
