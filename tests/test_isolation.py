"""The default worker (`python worker.py`: tasks in a persistent work process) against tasks that take
their process down: a segfault, os._exit, unbounded allocation, a timeout swallowed in a loop. Each ends
its attempt, never the worker, and the chain goes on. Real redis-server, gunicorn and worker.py."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.servers import pid_alive, start_worker, wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}  # the web and the worker know the crashing tasks


def _schedule(stack: Stack, task: str, payload: dict, **fields: object) -> str:  # type: ignore[type-arg]
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": task, "task": task})
    return str(stack.api.ok("POST", "/api/v1/schedules/", {
        "name": task, "workflow_id": workflow["id"], "interval_seconds": 1, "trigger_payload": payload,
        "max_retries": 1, **fields})["id"])


@pytest.mark.parametrize(("task", "payload", "fields", "error"), [
    ("tests.segfault", {"crashes": 1}, {}, "work process died by signal 11 (SIGSEGV)"),
    ("tests.die", {}, {"on_exhausted": "continue"}, "work process died with exit status 13"),
    ("tests.hog", {}, {}, "over the limit of 200 MB"),
    ("tests.ignore_timeout", {}, {"timeout_seconds": 1}, "timed out after 1s; the task did not stop"),
])
def test_a_task_that_takes_its_process_down_fails_its_attempt_and_the_chain_goes_on(
        stack: Stack, task: str, payload: dict, fields: dict, error: str) -> None:  # type: ignore[type-arg]
    worker = start_worker(stack.env, stack.tmp_path / "worker.log", "--max-memory-mb", "200", slots=1)
    stack.workers.append(worker)
    schedule_id = _schedule(stack, task, payload, **fields)

    def went_on() -> list:  # type: ignore[type-arg]
        runs = [r for r in stack.api.runs(schedule_id) if r["reason"] is None]
        failed = [r for r in runs if r["status"] in ("failed", "timed_out")]
        later = [r for r in runs if failed and (r["repeat_number"], r["retry_number"]) >
                 (failed[-1]["repeat_number"], failed[-1]["retry_number"]) and r["status"] != "running"]
        return failed if failed and later else []

    failed = wait_for(went_on, 40, interval=0.2, what="a failed attempt and the chain going on after it")
    assert error in failed[0]["error"], failed[0]
    assert worker.alive()  # the worker itself is unharmed
    schedule = stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/")
    assert schedule["status"] == "active", schedule



def test_a_killed_worker_takes_its_work_process_with_it(stack: Stack) -> None:
    """SIGKILL to the worker alone: its work process must not run the task on as an orphan after its run is
    written off. It dies with the worker; another worker writes the run off and the chain goes on there."""
    first = start_worker(stack.env, stack.tmp_path / "first.log", slots=1)
    stack.workers.append(first)
    path = stack.tmp_path / "pids.txt"
    schedule_id = _schedule(stack, "tests.pid_then_sleep", {"path": str(path), "sleep": 30}, total_repeats=1)
    wait_for(lambda: path.exists() and path.read_text().strip(), 30, interval=0.1, what="the task to start")
    body = int(path.read_text().split()[1])
    assert body != first.pid  # it runs in the work process, not the worker
    first.kill()
    wait_for(lambda: not pid_alive(body), 3, interval=0.05, what="the work process to die with its worker")

    stack.workers.append(start_worker(stack.env, stack.tmp_path / "second.log", slots=1))
    wait_for(lambda: stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/")["status"] == "done", 90,
             interval=0.2, what="the chain to finish on the other worker")
    attempts = [(r["retry_number"], r["status"]) for r in stack.api.runs(schedule_id) if r["reason"] is None]
    assert sorted(attempts) == [(0, "failed"), (1, "succeeded")], attempts


def test_a_manual_run_outlives_its_killed_worker_and_records_itself_once(stack: Stack) -> None:
    """SIGKILL to the worker alone while a manual run's forked process runs the task (a job that is not a
    link gets a process of its own, as under --fork): that process runs on, keeps its run's lease, and
    records the run itself; no other worker writes it off or runs the body again (docs/semantics.md)."""
    from datetime import UTC, datetime, timedelta

    first = start_worker(stack.env, stack.tmp_path / "first.log", slots=1)
    stack.workers.append(first)
    path = stack.tmp_path / "pids.txt"
    schedule_id = _schedule(stack, "tests.pid_then_sleep", {"path": str(path), "sleep": 6},
                            start_at=(datetime.now(UTC) + timedelta(days=1)).isoformat())  # no tick meanwhile
    run_id = stack.api.ok("POST", f"/api/v1/schedules/{schedule_id}/trigger/")["run_id"]
    wait_for(lambda: path.exists() and path.read_text().strip(), 30, interval=0.1, what="the manual run to start")
    body = int(path.read_text().split()[1])
    first.kill()
    wait_for(lambda: not first.alive(), 5, interval=0.05, what="the worker to die")
    assert pid_alive(body)  # its own process group and no parent-death signal: it runs on
    stack.workers.append(start_worker(stack.env, stack.tmp_path / "second.log", slots=1))  # a reconciler, looking on

    def ended() -> list:  # type: ignore[type-arg]
        return [r for r in stack.api.runs(schedule_id) if r["id"] == run_id and r["status"] != "running"]

    [run] = wait_for(ended, 40, interval=0.2, what="the manual run to be recorded")
    assert (run["status"], run["error"]) == ("succeeded", None), run
    assert len(path.read_text().splitlines()) == 1  # the body ran once
    assert [r["id"] for r in stack.api.runs(schedule_id)] == [run_id]  # no retry, no written-off attempt


def test_a_work_horse_outliving_its_killed_worker_completes_its_run(stack: Stack) -> None:
    """The forking worker (`--fork`) claims and records links itself; when it is killed while its work horse
    runs the task, the horse keeps the lease alive (no write-off by another worker's reconciler) and records
    the run and hands off the successor itself. One slot: the process killed is the one that forked the horse
    (with slots, SIGKILL to worker.py takes its slots and their horses with it: tests/test_slots.py)."""
    worker = stack.start_worker("--fork", "--concurrency", "1")
    path = stack.tmp_path / "pids.txt"
    schedule_id = _schedule(stack, "tests.pid_then_sleep", {"path": str(path), "sleep": 4}, timeout_seconds=20)
    # The run counts as running from its claim, which the worker makes before it forks the horse: a kill in
    # between leaves no horse, and the run is rightly written off. So the kill waits for the task to start.
    wait_for(lambda: path.exists() and path.read_text().strip(), 30, interval=0.05, what="the task to start")
    [running] = [r for r in stack.api.runs(schedule_id) if r["status"] == "running"]
    worker.kill()  # the worker process only: its work horse runs on (RQ puts it in a process group of its own)
    stack.start_worker()  # whose reconciler passes every second, with a 3 s lease

    def finished() -> dict:  # type: ignore[type-arg]
        return next(r for r in stack.api.runs(schedule_id) if r["id"] == running["id"])

    wait_for(lambda: finished()["status"] != "running", 20, what="the orphaned run to finish")
    assert (finished()["status"], finished()["error"]) == ("succeeded", None)
    wait_for(lambda: any((r["repeat_number"] or -1) > running["repeat_number"] for r in stack.api.runs(schedule_id)),
             20, what="the chain to go on")
    runs = [r for r in stack.api.runs(schedule_id) if r["reason"] is None]  # not the ticks skipped meanwhile
    assert not [r for r in runs if r["status"] == "failed"], runs
    ticks = Counter((r["repeat_number"], r["retry_number"]) for r in runs)
    assert max(ticks.values()) == 1, ticks
