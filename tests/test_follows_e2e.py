"""Runs that follow other runs, end to end with real processes (redis-server, gunicorn, worker.py): A -> B -> C
where A is an interval schedule. C runs exactly once per A success, never twice, also when the worker running
B's first run is SIGKILLed: that run is written off, retried by B's max_retries, and C runs once per B success."""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from harness.servers import pid_alive, start_worker, wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration

A_RUNS = 3


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}


def _create(stack: Stack, workflow_id: int, key: str, **fields: object) -> dict:  # type: ignore[type-arg]
    return stack.api.ok("POST", "/api/v1/schedules/", {"name": key, "key": key, "workflow_id": workflow_id,
                                                       **fields})


def test_a_chain_of_followers_runs_once_per_success_through_a_killed_worker(stack: Stack) -> None:
    tmp = stack.tmp_path
    logs = {name: tmp / f"{name}.log" for name in "abc"}
    marker = tmp / "b-held"
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "steps", "task": "tests.follow_step"})["id"]
    first = start_worker(stack.env, tmp / "first.log", new_session=True)
    stack.workers.append(first)
    a = _create(stack, workflow, "a", interval_seconds=2, total_repeats=A_RUNS,
                trigger_payload={"path": str(logs["a"])})
    # B's first run holds (a run to kill); buffer_all: a trigger that comes while B runs waits for it, so
    # every A success gets its B run. Its retry comes 10 s after the write-off (RETRY_BASE_SECONDS).
    b = _create(stack, workflow, "b", interval_seconds=86400, max_retries=2, overlap="buffer_all",
                trigger_payload={"path": str(logs["b"]), "marker": str(marker), "hold": 60},
                after={"schedule": "a"})
    c = _create(stack, workflow, "c", interval_seconds=86400, overlap="buffer_all",
                trigger_payload={"path": str(logs["c"])}, after={"schedule": b["id"], "on": "succeeded"})

    wait_for(lambda: marker.exists() and marker.read_text(), 30, interval=0.1, what="B's first run to start")
    body = int(marker.read_text())
    first.kill(whole_group=True)  # SIGKILL to the worker and its processes, during B's first run
    with contextlib.suppress(ProcessLookupError):  # its work process has a group of its own: gone with the host
        os.kill(body, signal.SIGKILL)
    wait_for(lambda: not pid_alive(body), 5, interval=0.05, what="B's work process to die")
    stack.workers.append(start_worker(stack.env, tmp / "second.log"))

    def settled() -> bool:
        a_ok = [r for r in stack.api.runs(a["id"]) if r["status"] == "succeeded"]
        c_ok = [r for r in stack.api.runs(c["id"]) if r["status"] == "succeeded"]
        return len(a_ok) == A_RUNS and len(c_ok) >= A_RUNS

    wait_for(settled, 50, interval=0.3, what="every A success to reach C")
    runs = {name: stack.api.runs(s["id"]) for name, s in (("a", a), ("b", b), ("c", c))}
    a_ok = {r["id"] for r in runs["a"] if r["status"] == "succeeded"}
    b_after = [r for r in runs["b"] if r["trigger"] == "after"]
    b_ok = [r for r in b_after if r["status"] == "succeeded"]
    # B: the killed run written off, then one success per A success (its retry among them), nothing else.
    assert sorted(r["status"] for r in b_after) == ["failed"] + ["succeeded"] * A_RUNS, b_after
    failed = next(r for r in b_after if r["status"] == "failed")
    assert "worker_lost" in failed["error"], failed
    assert Counter(r["triggered_by_run_id"] for r in b_ok) == Counter(a_ok)
    # C: exactly one run per B success, each naming it, and its task ran once per run.
    c_after = [r for r in runs["c"] if r["trigger"] == "after"]
    assert [r["status"] for r in c_after] == ["succeeded"] * A_RUNS, c_after
    assert Counter(r["triggered_by_run_id"] for r in c_after) == Counter(r["id"] for r in b_ok)
    assert len(Path(logs["c"]).read_text().splitlines()) == A_RUNS
    assert not [r for r in runs["b"] + runs["c"] if r["trigger"] != "after"]  # their own timing: not yet
