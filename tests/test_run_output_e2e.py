"""End to end, on real processes (gunicorn, worker.py, redis-server): a task that prints, logs and then raises
has its traceback, output and log lines on its run's GET and page and in `recur runs show`, whichever worker
ran it (the default work process, a forked work horse, the worker's own process, slots)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.recur_cli_runner import recur
from harness.servers import wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}  # the web and the workers know tests.noisy


def _failed_run(stack: Stack, name: str = "noisy") -> tuple[str, dict[str, Any]]:
    """A one-tick schedule of tests.noisy run to its failure: its id and its run's GET."""
    api = stack.api
    workflow = api.ok("POST", "/api/v1/workflows/", {"name": name, "task": "tests.noisy"})
    made = api.ok("POST", "/api/v1/schedules/", {"name": name, "workflow_id": workflow["id"],
                                                  "interval_seconds": 1, "total_repeats": 1, "max_retries": 0})
    wait_for(lambda: [r["status"] for r in api.runs(made["id"])] == ["failed"], 60, what="the failed run")
    [listed] = api.runs(made["id"])
    assert not {"traceback", "output", "logs", "result"} & set(listed)  # the list stays light
    return made["id"], api.ok("GET", f"/api/v1/schedules/{made['id']}/runs/{listed['id']}/")


def _shows_all_three(run: dict[str, Any]) -> None:
    assert run["status"] == "failed" and run["error"] == "ValueError: noisy task fails on purpose"
    assert run["output"] == "printed to stdout\nprinted to stderr\n"
    assert "WARNING tests.noisy: logged a warning" in run["logs"]
    assert run["traceback"].startswith("Traceback (most recent call last):")
    assert run["traceback"].endswith("ValueError: noisy task fails on purpose\n")
    assert run["result"] is None


def test_a_task_that_prints_logs_and_raises_shows_all_three_through_the_api_and_the_cli(stack: Stack) -> None:
    stack.start_worker()
    stack.wait_workers_ready()
    schedule_id, run = _failed_run(stack)
    _shows_all_three(run)

    shown = recur(stack.api.base, stack.api.token, "runs", "show", schedule_id, run["id"]).out
    assert "status" in shown and "failed" in shown
    assert "--- traceback\nTraceback (most recent call last):" in shown
    assert "--- output\nprinted to stdout\nprinted to stderr\n" in shown
    assert "--- logs\n" in shown and "logged a warning" in shown
    assert recur(stack.api.base, stack.api.token, "--json", "runs", "show", schedule_id, run["id"]).json() == run
    listed = recur(stack.api.base, stack.api.token, "runs", "list", schedule_id).out
    assert run["id"] in listed

    # a run outside the chain (a manual run, in a forked work horse) keeps them too
    triggered = stack.api.ok("POST", f"/api/v1/schedules/{schedule_id}/trigger/", {})
    path = f"/api/v1/schedules/{schedule_id}/runs/{triggered['run_id']}/"
    # (its row is written when it starts: until then, 404)
    ended = wait_for(lambda: (got := stack.api.call("GET", path))[0] == 200 and got[1]["status"] != "running"
                     and got[1], 60, what="the manual run")
    _shows_all_three(ended)

    status, missing = stack.api.call("GET", f"/api/v1/schedules/{schedule_id}/runs/not-a-run/")
    assert status == 404 and missing["code"] == "not_found"


@pytest.mark.parametrize("mode", [["--fork", "--concurrency", "1"], ["--simple", "--concurrency", "1"],
                                  ["--simple", "--concurrency", "2"]], ids=["fork", "simple", "simple-slots"])
def test_every_kind_of_worker_captures_what_the_task_left_behind(stack: Stack, mode: list[str]) -> None:
    stack.start_worker(*mode)
    stack.wait_workers_ready()
    _shows_all_three(_failed_run(stack)[1])
    # the worker's own log lines are not the task's
    assert all("recur.worker" not in line for line in _failed_run(stack, name="again")[1]["logs"].splitlines())
