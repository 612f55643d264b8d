"""A recorded outcome survives a database blip (DESIGN 15): the database goes away while a task runs and
comes back after it ended; the run is recorded as what it was (succeeded), not written off, and its body
ran once. Real gunicorn, worker.py, redis-server and a PostgreSQL server of the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.pgcluster import POSTGRES_BIN, PgServer
from harness.servers import wait_for
from harness.stack import Stack

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(POSTGRES_BIN is None, reason="PostgreSQL's server binaries are not installed")]


@pytest.mark.parametrize("mode", ["default", "--simple"])
def test_a_success_is_recorded_as_a_success_though_the_database_was_away_when_it_ended(
        pg_stack: Stack, postgres: PgServer, tmp_path: Path, mode: str) -> None:
    stack = pg_stack
    log = tmp_path / "executions.log"
    stack.env["RECUR_EXECUTION_LOG"] = str(log)  # read by the workers started below
    stack.start_worker(*([] if mode == "default" else [mode]))
    stack.wait_workers_ready()
    api = stack.api
    flow = api.ok("POST", "/api/v1/workflows/", {"name": "slow", "task": "builtin.sleep"})
    schedule = api.ok("POST", "/api/v1/schedules/", {
        "name": "once", "workflow_id": flow["id"], "interval_seconds": 2, "total_repeats": 1,
        "max_retries": 0, "timeout_seconds": 120, "trigger_payload": {"seconds": 4}})["id"]
    wait_for(lambda: log.exists() and log.read_text().strip(), 30, what="the task's body to start")
    postgres.stop()  # while the body sleeps; it ends with no database to record its outcome in
    # The body ends, and the commit of its outcome fails and is retried, again and again: then the database
    # comes back.
    wait_for(lambda: stack.workers[0].output().count("could not be recorded") >= 3, 60, interval=0.2,
             what="the body to end and the commit of its outcome to fail three times")
    postgres.start()

    def settled() -> dict[str, object] | None:
        status, body = api.call("GET", f"/api/v1/schedules/{schedule}/")
        return body if status == 200 and body["status"] != "active" else None

    final = wait_for(settled, 60, what="the schedule to settle")
    runs = api.runs(schedule)
    assert [(r["status"], r["error"]) for r in runs] == [("succeeded", None)], runs
    assert final["status"] == "done", final
    assert len(log.read_text().splitlines()) == 1  # the body ran once
    assert all(process.alive() for process in [stack.web, *stack.workers])
    assert "could not be recorded" in stack.workers[0].output()
