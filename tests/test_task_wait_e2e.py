"""A schedule whose task its queue's live workers do not know, end to end (gunicorn, worker.py processes, a real
redis-server): the web knows the task (its module in RECUR_TASK_MODULES), the first worker does not. The create
answers with a warning; the due run waits, visibly, without spending a retry or failing; a worker that knows the
task starts, and the run happens."""

from __future__ import annotations

import time

import pytest

from harness.servers import wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs", "RECUR_WORKER_GRACE_SECONDS": "3"}


def test_a_run_whose_task_no_worker_knows_waits_without_spending_retries_then_runs(stack: Stack, tmp_path) -> None:
    api = stack.api
    stack.env["RECUR_TASK_MODULES"] = ""  # the first worker: only the built-in tasks
    stack.start_worker("--concurrency", "1")
    stack.wait_workers_ready()
    wait_for(lambda: api.ok("GET", "/api/v1/health/")["workers"].get("recur") == 1, 20, what="the worker's beat")
    ran = tmp_path / "ran.txt"
    flow = api.ok("POST", "/api/v1/workflows/", {"name": "records", "task": "tests.record"})
    made = api.ok("POST", "/api/v1/schedules/", {"name": "records", "workflow_id": flow["id"], "every": "1s",
                                                 "max_retries": 1, "trigger_payload": {"path": str(ran)}})
    assert made["warnings"] == [
        "no live worker of queue 'recur' knows task 'tests.record' (1 live without it): deploy its module "
        "(RECUR_TASK_MODULES) to them: its runs wait until a worker that knows it takes them"], made

    def waiting() -> dict:  # type: ignore[type-arg]
        return api.ok("GET", f"/api/v1/schedules/{made['id']}/")  # type: ignore[no-any-return]

    wait_for(lambda: waiting()["waiting"] is not None, 20, interval=0.3, what="the run to wait")
    time.sleep(5)  # two and more looks of the worker that does not know the task
    schedule = waiting()
    assert schedule["waiting"] == "waiting for a worker that knows task 'tests.record'", schedule
    assert (schedule["status"], schedule["current_retry"], schedule["run_count"]) == ("active", 0, 0), schedule
    assert api.runs(made["id"]) == []  # nothing failed, nothing recorded as run: the tick is not claimed
    assert not ran.exists()

    stack.env["RECUR_TASK_MODULES"] = "harness.jobs"  # a worker with the task's module
    stack.start_worker("--concurrency", "1")
    wait_for(lambda: ran.exists(), 60, interval=0.3, what="a run by the worker that knows the task")
    wait_for(lambda: any(r["status"] == "succeeded" for r in api.runs(made["id"])), 20, what="a succeeded run")
    runs = api.runs(made["id"])
    assert {r["status"] for r in runs} <= {"succeeded", "running", "missed", "skipped"}, runs
    assert [r for r in runs if r["retry_number"] > 0] == []  # no retry was spent on the wait
