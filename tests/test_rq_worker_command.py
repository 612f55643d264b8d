"""Recur's links on RQ's own `rq worker` command (rq_worker.py) with a separately started background process
(background.py), as real processes: a schedule's chain runs tick after tick on the `rq worker`, and the
worker says so when no background process is moving links."""

from __future__ import annotations

import sys

import pytest

from harness.servers import Process, wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("worker_class", ["Worker", "ForkWorker"])
def test_rq_worker_with_recurs_class_runs_a_chain(stack: Stack, worker_class: str) -> None:
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "every second", "workflow_id": workflow["id"], "interval_seconds": 1})
    name = f"rq-{worker_class.lower()}"
    worker = Process([sys.executable, "-m", "rq.cli", "worker", "-w", f"rq_worker.{worker_class}",
                      "--url", stack.env["REDIS_URL"], "--name", name, "--with-scheduler", "recur"],
                     stack.env, stack.tmp_path / "rq-worker.log")
    stack.workers.append(worker)  # stopped with the stack
    wait_for(lambda: "Listening on" in worker.output(), 90, what="rq worker to start")
    assert "no Recur background process has run" in worker.output()  # none started yet
    assert "--with-scheduler ignored" in worker.output()

    stack.workers.append(Process([sys.executable, "background.py"], stack.env, stack.tmp_path / "background.log"))

    def succeeded() -> list[dict[str, object]]:
        return [r for r in stack.api.runs(schedule["id"]) if r["status"] == "succeeded"]

    wait_for(lambda: len(succeeded()) >= 4, 60, interval=0.3, what="four ticks of the chain on rq worker")
    runs = succeeded()
    assert {r["worker"] for r in runs} == {name}
    assert len({r["scheduled_for"] for r in runs}) == len(runs)  # each tick once
    assert stack.api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["status"] == "active"


def test_rq_worker_refuses_queues_that_are_not_recurs(stack: Stack) -> None:
    worker = Process([sys.executable, "-m", "rq.cli", "worker", "-w", "rq_worker.Worker", "--url",
                      stack.env["REDIS_URL"], "--burst", "default"], stack.env, stack.tmp_path / "rq-worker.log")
    stack.workers.append(worker)  # its log closed with the stack
    wait_for(lambda: not worker.alive(), 60, what="rq worker to exit")
    assert worker.popen.returncode != 0
    assert "none of these is a queue of this Recur cluster (RECUR_QUEUE and RECUR_QUEUES name recur)" in (
        worker.output())
