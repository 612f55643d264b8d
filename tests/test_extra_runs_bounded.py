"""Manual runs that must wait (here for a workflow's one slot) cost Redis a bounded number of commands a
second however many wait, and all start, in the order they were asked for, once the slot frees.

End to end: gunicorn, two worker.py processes (one busy with the run holding the slot) and a real
redis-server, whose own count of the commands it processed is the measure.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from harness.servers import wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration

WINDOW_SECONDS = 3.0


def _commands_per_second(redis: Redis) -> float:
    """What the server processed over a window: total_commands_processed before and after."""
    before = int(redis.info("stats")["total_commands_processed"])
    time.sleep(WINDOW_SECONDS)  # the measure itself: a rate over a window, not a wait before an assertion
    after = int(redis.info("stats")["total_commands_processed"])
    return (after - before - 1) / WINDOW_SECONDS


def _manual(stack: Stack, schedule_id: str) -> list[dict[str, Any]]:
    return [r for r in stack.api.runs(schedule_id) if r["trigger"] == "manual"]


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {"RECUR_TASK_MODULES": "harness.jobs"}  # the web and the workers know tests.hold


def test_waiting_manual_runs_cost_redis_the_same_whether_five_or_fifty_wait(stack: Stack, tmp_path: Path) -> None:
    redis = Redis.from_url(stack.env["REDIS_URL"])
    stack.start_worker()
    stack.start_worker()
    stack.wait_workers_ready()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "one slot", "task": "tests.hold",
                                                           "max_concurrent_runs": 1})["id"]
    far = f"0 {(datetime.now(UTC).hour + 12) % 24} * * *"  # no tick of the chain comes due during the test
    release = tmp_path / "release"  # the holder keeps the slot until this file exists
    holder = stack.api.ok("POST", "/api/v1/schedules/", {"name": "holder", "workflow_id": workflow, "cron": far,
                                                         "trigger_payload": {"release": str(release)}})["id"]
    waiter = stack.api.ok("POST", "/api/v1/schedules/", {"name": "waiter", "workflow_id": workflow, "cron": far,
                                                         # a file that exists: each of its runs ends at once
                                                         "trigger_payload": {"release": str(tmp_path)}})["id"]
    stack.api.ok("POST", f"/api/v1/schedules/{holder}/trigger/")
    wait_for(lambda: [r["status"] for r in _manual(stack, holder)] == ["running"], 20, what="the slot to be taken")

    def trigger(count: int) -> list[str]:
        return [stack.api.ok("POST", f"/api/v1/schedules/{waiter}/trigger/")["run_id"] for _ in range(count)]

    def all_looked(run_ids: list[str]) -> bool:  # each run's first job ran: it found the slot taken
        return all(redis.hget(f"rq:job:recur-run-{run_id}-w0", "status") == b"finished" for run_id in run_ids)

    asked = trigger(5)
    wait_for(lambda: all_looked(asked), 20, what="the five to find the slot taken")
    five = _commands_per_second(redis)
    asked += trigger(45)
    wait_for(lambda: all_looked(asked), 20, what="the fifty to find the slot taken")
    fifty = _commands_per_second(redis)
    print(f"Redis commands a second: {five:.0f} with 5 waiting, {fifty:.0f} with 50 waiting")
    assert _manual(stack, waiter) == []  # all still waiting while measured
    assert fifty < 1.5 * five + 20, (five, fifty)

    release.touch()
    wait_for(lambda: len([r for r in _manual(stack, waiter) if r["status"] == "succeeded"]) == 50, 90,
             what="the fifty to run once the slot freed")
    runs = sorted(_manual(stack, waiter), key=lambda r: r["started_at"])
    assert [r["id"] for r in runs] == asked  # in the order they were asked for
    [held] = _manual(stack, holder)
    assert held["finished_at"] <= runs[0]["started_at"]  # none started while the slot was taken
