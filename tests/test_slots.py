"""One worker.py runs several tasks at once (`--concurrency N`: up to N slots, each an RQ worker with its own
work process, started while all are busy and stopped when idle): their runs overlap, each is recorded once;
a slot that dies is replaced while the others' tasks finish; SIGTERM waits for every running task and hands
off every successor. Real redis-server, gunicorn and worker.py."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis import Redis
from rq import Worker

from harness.servers import pid_alive, wait_for
from harness.stack import Stack, parse_instant
from recur_server.workers.slots import default_concurrency

pytestmark = pytest.mark.integration


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}  # the web and the worker know the crashing tasks


def _sleepers(stack: Stack, count: int, seconds: float, **fields: Any) -> list[str]:
    """`count` schedules of builtin.sleep whose first tick is due together, in a few seconds."""
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "sleep", "task": "builtin.sleep"})
    at = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
    timing = {**fields, "start_at": at.isoformat()} if fields else {"at": at.isoformat()}
    return [str(stack.api.ok("POST", "/api/v1/schedules/", {
        "name": f"s{i}", "workflow_id": workflow["id"], "trigger_payload": {"seconds": seconds}, **timing})["id"])
        for i in range(count)]


def _spans(runs: list[dict[str, Any]]) -> list[tuple[datetime, datetime]]:
    return [(parse_instant(r["started_at"]), parse_instant(r["finished_at"])) for r in runs]


def _most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


def _slots(stack: Stack) -> list[Worker]:
    return [w for w in Worker.all(connection=Redis.from_url(stack.env["REDIS_URL"])) if w.name.startswith("slots-")]


def test_a_worker_with_three_slots_runs_three_tasks_at_once_each_once(stack: Stack) -> None:
    stack.start_worker("--concurrency", "3", "--name", "slots")
    stack.wait_workers_ready()
    ids = _sleepers(stack, 3, 2)
    wait_for(lambda: all(stack.api.ok("GET", f"/api/v1/schedules/{i}/")["status"] == "done" for i in ids), 40,
             what="three runs")
    runs = [r for i in ids for r in stack.api.runs(i)]
    assert sorted(r["status"] for r in runs) == ["succeeded"] * 3  # each once
    assert _most_at_once(_spans(runs)) == 3  # all at once, on one worker.py
    assert {r["worker"] for r in runs} == {"slots-1", "slots-2", "slots-3"}
    assert sorted(w.name for w in _slots(stack)) == ["slots-1", "slots-2", "slots-3"]  # what `rq info` lists


def test_a_worker_starts_with_one_slot_grows_for_a_burst_and_shrinks_back_when_idle(stack: Stack) -> None:
    stack.env["RECUR_WORKER_SLOT_IDLE_SECONDS"] = "3"
    worker = stack.start_worker("--concurrency", "3", "--min-slots", "1", "--name", "slots")
    stack.wait_workers_ready()
    assert [w.name for w in _slots(stack)] == ["slots-1"]
    ids = _sleepers(stack, 3, 3)
    wait_for(lambda: all(stack.api.ok("GET", f"/api/v1/schedules/{i}/")["status"] == "done" for i in ids), 40,
             what="three runs")
    runs = [r for i in ids for r in stack.api.runs(i)]
    assert _most_at_once(_spans(runs)) == 3 and {r["worker"] for r in runs} == {"slots-1", "slots-2", "slots-3"}
    wait_for(lambda: len(_slots(stack)) == 1, 30, what="the idle slots to stop")
    assert "took no task for 3 s: stopping it" in worker.output() and worker.alive()


def test_a_slot_killed_mid_task_is_replaced_while_the_other_slots_task_finishes(stack: Stack) -> None:
    stack.env["RECUR_LEASE_SECONDS"] = "2"
    worker = stack.start_worker("--concurrency", "2", "--name", "slots")
    stack.wait_workers_ready()
    ids = _sleepers(stack, 2, 4)
    wait_for(lambda: sum(1 for i in ids for r in stack.api.runs(i) if r["status"] == "running") == 2, 30,
             what="both tasks running")
    running = {r["worker"]: i for i in ids for r in stack.api.runs(i) if r["status"] == "running"}
    victim = next(w for w in _slots(stack) if w.name == "slots-1")
    os.kill(victim.pid, signal.SIGKILL)
    wait_for(lambda: "slots-3" in {w.name for w in _slots(stack)}, 30, what="a slot in its place")
    wait_for(lambda: stack.api.ok("GET", f"/api/v1/schedules/{running['slots-2']}/")["status"] == "done", 30,
             what="the other slot's task to finish")
    survivor = stack.api.runs(running["slots-2"])
    assert [(r["status"], r["worker"]) for r in survivor] == [("succeeded", "slots-2")]
    # The killed slot's run is written off once its lease lapses; the worker and its slots go on.
    lost = running["slots-1"]
    [written_off] = wait_for(lambda: [r for r in stack.api.runs(lost) if r["status"] == "failed"], 30,
                             what="the killed slot's run to be written off")
    assert "worker_lost" in written_off["error"] and written_off["worker"] == "slots-1"
    assert worker.alive()


def test_sigterm_waits_for_every_running_task_and_hands_off_every_successor(stack: Stack) -> None:
    worker = stack.start_worker("--concurrency", "2", "--name", "slots")
    stack.wait_workers_ready()
    # The successors come due a minute on: the checks below see them waiting, not moved to the queue by a
    # mover that runs until the worker's last slot has stopped (with 5 s a loaded machine saw them moved).
    ids = _sleepers(stack, 2, 3, interval_seconds=60, total_repeats=2)
    wait_for(lambda: sum(1 for i in ids for r in stack.api.runs(i) if r["status"] == "running") == 2, 90,
             what="both tasks running")
    worker.popen.terminate()  # SIGTERM: warm shutdown of every slot
    worker.popen.wait(30)
    for schedule_id in ids:
        [run] = [r for r in stack.api.runs(schedule_id) if r["reason"] is None]
        assert run["status"] == "succeeded"
        after = stack.api.ok("GET", f"/api/v1/schedules/{schedule_id}/")
        assert (after["status"], after["current_repeat"]) == ("active", 1)
    pending = Redis.from_url(stack.env["REDIS_URL"]).zrange("rq:scheduled:recur", 0, -1)
    assert sorted(m.decode() for m in pending) == sorted(f"sched-{i}-n1-rc0" for i in ids)



def test_a_killed_worker_takes_its_slots_with_it(stack: Stack) -> None:
    """SIGKILL to worker.py alone: no slot may run on as an orphan, taking links nobody supervises."""
    worker = stack.start_worker("--concurrency", "2", "--min-slots", "2", "--name", "slots")
    stack.wait_workers_ready()
    wait_for(lambda: len(_slots(stack)) == 2, 30, what="two slots")
    pids = [w.pid for w in _slots(stack)]
    assert all(pid_alive(pid) for pid in pids) and worker.pid not in pids
    worker.kill()
    wait_for(lambda: not any(pid_alive(pid) for pid in pids), 5, interval=0.05, what="the slots to die with it")


@pytest.mark.parametrize(("task", "payload", "fields", "error"), [
    ("tests.segfault", {"crashes": 1}, {}, "work process died by signal 11 (SIGSEGV)"),
    ("tests.die", {}, {}, "work process died with exit status 13"),
    ("tests.ignore_timeout", {}, {"timeout_seconds": 1}, "timed out after 1s; the task did not stop"),
])
def test_a_task_that_takes_its_work_process_down_leaves_the_other_slots_task_running(
        stack: Stack, task: str, payload: dict, fields: dict, error: str) -> None:  # type: ignore[type-arg]
    stack.start_worker("--concurrency", "2", "--name", "slots")
    stack.wait_workers_ready()
    [sleeper] = _sleepers(stack, 1, 12)
    wait_for(lambda: any(r["status"] == "running" for r in stack.api.runs(sleeper)), 30, what="the long task")
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": task, "task": task})
    crasher = stack.api.ok("POST", "/api/v1/schedules/", {
        "name": "crash", "workflow_id": workflow["id"], "at": (datetime.now(UTC) + timedelta(seconds=1)).isoformat(),
        "trigger_payload": payload, **fields})["id"]
    [failed] = wait_for(lambda: [r for r in stack.api.runs(crasher) if r["status"] in ("failed", "timed_out")], 30,
                        what="the crashing task's attempt to fail")
    assert error in failed["error"]
    assert [r["status"] for r in stack.api.runs(sleeper)] == ["running"]  # undisturbed meanwhile
    wait_for(lambda: [r["status"] for r in stack.api.runs(sleeper)] == ["succeeded"], 30, what="the long task")


def test_a_worker_started_as_the_procfile_starts_it_runs_four_tasks_at_once(stack: Stack) -> None:
    """No --concurrency and no RECUR_WORKER_CONCURRENCY: the default (four slots on a machine of up to four
    cores) runs four slow tasks at once, so one of them does not hold the others back."""
    stack.env.pop("RECUR_WORKER_CONCURRENCY", None)
    stack.start_worker("--name", "slots", slots=None)
    stack.wait_workers_ready()
    expected = default_concurrency(0)
    ids = _sleepers(stack, expected, 2)
    wait_for(lambda: all(stack.api.ok("GET", f"/api/v1/schedules/{i}/")["status"] == "done" for i in ids), 60,
             what="the slow runs")
    runs = [r for i in ids for r in stack.api.runs(i)]
    assert _most_at_once(_spans(runs)) == expected >= 4
    assert len(_slots(stack)) == expected


@pytest.mark.parametrize(("setting", "cores", "slots"), [(3, 2, 3), (1, 16, 1), (0, 1, 4), (0, 2, 4), (0, 4, 4),
                                                         (0, 16, 16)])
def test_the_default_is_four_slots_or_one_per_core_beyond_four(setting: int, cores: int, slots: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    assert default_concurrency(setting) == slots
