"""A busy worker stopped the way systemd stops a service (KillMode=control-group): SIGTERM to every process of
its group at once, SIGKILL to what is left after the unit's TimeoutStopSec. The running task finishes, its
outcome is recorded and its successor handed off, and the whole group is gone well before the SIGKILL: nothing
is written off."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness.servers import start_worker, wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration

TASK_SECONDS = 3
STOP_TIMEOUT = 30  # a unit's TimeoutStopSec for a worker whose tasks take seconds (docs/reliability.md)


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}


def _group_alive(pgid: int) -> list[str]:
    """The processes of the group still running (an exited child not yet reaped is a zombie: not running)."""
    listed = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-g", str(pgid)], capture_output=True, text=True)
    return [line.strip() for line in listed.stdout.splitlines() if line.split()[1:2] != ["Z"] and line.strip()]


@pytest.mark.parametrize("mode", [(), ("--fork",)], ids=["default", "fork"])
def test_a_group_sigterm_lets_the_running_task_finish_and_the_worker_exit(stack: Stack, tmp_path: Path,
                                                                            mode: tuple[str, ...]) -> None:
    worker = start_worker(stack.env, tmp_path / "worker.log", *mode, new_session=True)
    stack.workers.append(worker)
    wait_for(lambda: "Listening on" in worker.output(), 60, what="the worker to start")
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "busy", "task": "tests.pid_then_sleep"})
    marks = tmp_path / "started.txt"
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "busy", "workflow_id": workflow["id"], "interval_seconds": 1, "total_repeats": 2,
        "trigger_payload": {"path": str(marks), "sleep": TASK_SECONDS}})
    wait_for(lambda: marks.exists() and marks.read_text().strip(), 30, interval=0.05, what="the task to start")

    stopping = time.monotonic()
    os.killpg(worker.pid, signal.SIGTERM)  # systemd: every process of the unit's group
    try:
        wait_for(lambda: worker.popen.poll() is not None and not _group_alive(worker.pid), STOP_TIMEOUT,
                 interval=0.1, what="the worker's whole group to exit before the unit's SIGKILL")
    except AssertionError:
        raise AssertionError(f"still running after {STOP_TIMEOUT} s: {_group_alive(worker.pid)}") from None
    took = time.monotonic() - stopping
    assert took < TASK_SECONDS + 10, took

    runs = [r for r in stack.api.runs(schedule["id"]) if r["status"] != "skipped"]  # ticks due while it ran
    assert [(r["repeat_number"], r["status"]) for r in runs] == [(0, "succeeded")], runs
    detail = stack.api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")
    assert (detail["current_repeat"], detail["status"]) == (1, "active"), detail  # the successor handed off
