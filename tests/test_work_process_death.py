"""A work process that dies is named at once: the run it was running ends failed with the cause (a signal,
an exit, the memory limit) within a second or two, once, not written off seconds later as `worker_lost`
with its worker alive. Manual runs (a work horse forked for the job) and ticks (the persistent work
process), under the default worker with its slots. Real redis-server, gunicorn and worker.py."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.servers import start_worker, wait_for
from harness.stack import Stack, parse_instant

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}  # the tasks that die


def _manual(stack: Stack, task: str, payload: dict[str, Any]) -> tuple[str, str]:
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": task, "task": task})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": task, "workflow_id": workflow["id"], "interval_seconds": 3600, "trigger_payload": payload,
        "start_at": (datetime.now(UTC) + timedelta(days=1)).isoformat()})  # no tick meanwhile
    run_id = stack.api.ok("POST", f"/api/v1/schedules/{schedule['id']}/trigger/")["run_id"]
    return str(schedule["id"]), str(run_id)


def _ended(stack: Stack, schedule_id: str, run_id: str) -> dict[str, Any] | None:
    return next((r for r in stack.api.runs(schedule_id) if r["id"] == run_id and r["status"] != "running"), None)


def test_a_manual_run_whose_work_process_is_killed_fails_at_once_with_the_signal(stack: Stack) -> None:
    worker = start_worker(stack.env, stack.tmp_path / "worker.log", "--concurrency", "2")
    stack.workers.append(worker)
    path = stack.tmp_path / "pids.txt"
    schedule_id, run_id = _manual(stack, "tests.pid_then_sleep", {"path": str(path), "sleep": 60})
    wait_for(lambda: path.exists() and path.read_text().strip(), 30, interval=0.05, what="the run's task to start")
    os.kill(int(path.read_text().split()[1]), signal.SIGKILL)
    killed = time.monotonic()
    run = wait_for(lambda: _ended(stack, schedule_id, run_id), 10, interval=0.05, what="the run to end")
    took = time.monotonic() - killed
    assert (run["status"], run["error"]) == ("failed", "work process died by signal 9 (SIGKILL)"), run
    assert took < 3, took  # before its lease lapses (3 s here; then it would read worker_lost)
    assert worker.alive()
    time.sleep(1.5)  # a second record (the reconciler's, once the lease lapsed) would change nothing
    assert [(r["id"], r["status"], r["error"]) for r in stack.api.runs(schedule_id)] == [
        (run_id, "failed", "work process died by signal 9 (SIGKILL)")]


@pytest.mark.parametrize(("task", "payload", "args", "cause"), [
    ("tests.die", {}, (), "work process died with exit status 13"),
    ("tests.hog", {}, ("--max-memory-mb", "200"), "over the limit of 200 MB"),
])
def test_a_manual_run_whose_work_process_exits_or_outgrows_the_limit_fails_with_the_cause(
        stack: Stack, task: str, payload: dict[str, Any], args: tuple[str, ...], cause: str) -> None:
    worker = start_worker(stack.env, stack.tmp_path / "worker.log", "--concurrency", "2", *args)
    stack.workers.append(worker)
    schedule_id, run_id = _manual(stack, task, payload)
    run = wait_for(lambda: _ended(stack, schedule_id, run_id), 30, interval=0.05, what="the run to end")
    assert run["status"] == "failed" and cause in (run["error"] or ""), run
    # The process ends at once (an exit) or within a fraction of a second (10 MB every 10 ms to 200 MB): the
    # run is recorded as it dies (the cause above; a lapsed lease would read worker_lost), before its lease
    # lapses (3 s here), and once.
    lasted = parse_instant(run["finished_at"]) - parse_instant(run["started_at"])
    assert lasted < timedelta(seconds=3), lasted
    assert [r["id"] for r in stack.api.runs(schedule_id)] == [run_id]
    assert worker.alive()


def test_a_tick_whose_work_process_is_killed_fails_at_once_and_is_retried(stack: Stack) -> None:
    worker = start_worker(stack.env, stack.tmp_path / "worker.log", "--concurrency", "2")
    stack.workers.append(worker)
    path = stack.tmp_path / "pids.txt"
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "t", "task": "tests.pid_then_sleep"})
    schedule_id = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "t", "workflow_id": workflow["id"], "interval_seconds": 2, "total_repeats": 1, "max_retries": 1,
        "trigger_payload": {"path": str(path), "sleep": 60}})["id"]
    wait_for(lambda: path.exists() and path.read_text().strip(), 30, interval=0.05, what="the tick's task to start")
    os.kill(int(path.read_text().split()[1]), signal.SIGKILL)
    killed = time.monotonic()

    def attempts() -> list[tuple[int, str, str | None]]:
        return sorted((r["retry_number"], r["status"], r["error"]) for r in stack.api.runs(schedule_id)
                      if r["reason"] is None and r["status"] != "running")

    wait_for(lambda: attempts()[:1], 10, interval=0.05, what="the attempt to end")
    assert time.monotonic() - killed < 3  # before its lease lapses (3 s here; then it would read worker_lost)
    wait_for(lambda: len(attempts()) == 2, 30, interval=0.1, what="the retry")
    assert attempts() == [(0, "failed", "work process died by signal 9 (SIGKILL)"), (1, "succeeded", None)]
