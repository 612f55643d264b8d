"""A link's log at INFO is one line (issue 51: "at most one log line per link at INFO"): Recur's own when its
run ends, naming the run, its outcome, the schedule, the tick and the attempt. RQ's lines for each job it runs
(the job taken, "Successfully completed", "Job OK") are DEBUG records (recur_server.infra.logs): an RQ whose
formats change fails here rather than doubling every link's log again. Real workers, each mode."""

from __future__ import annotations

import re

import pytest

from harness.servers import wait_for
from harness.stack import Stack

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", [(), ("--fork",), ("--simple",)], ids=["default", "fork", "simple"])
def test_each_link_logs_one_line_at_info_naming_its_run_schedule_and_tick(stack: Stack, mode: tuple[str, ...]) -> None:
    worker = stack.start_worker(*mode)
    stack.wait_workers_ready()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {"name": "log", "workflow_id": workflow["id"],
                                                           "interval_seconds": 1, "total_repeats": 3})
    wait_for(lambda: stack.api.ok("GET", f"/api/v1/schedules/{schedule['id']}/")["status"] == "done", 60,
             what="three runs")
    every = stack.api.runs(schedule["id"])
    # A tick passed over on a loaded machine (due while a run went on, or missed by a late link) is a gap row of
    # its policy, overlap skip or catch-up: no repeat number, and no link of its own to log a line.
    runs = {run["id"]: run for run in every if run["repeat_number"] is not None}
    assert len(runs) == 3, every
    assert {run["status"] for run in every if run["repeat_number"] is None} <= {"skipped", "missed"}, every
    # The line is written once the outcome is committed and the successor handed off: the schedule can read
    # done a moment before its last line is out.
    info = wait_for(lambda: _info(worker.output(), schedule["id"], 3), 10, what="three lines at INFO",
                    interval=0.05)
    for line in info:
        found = re.search(r"run (\S+) succeeded: schedule (\S+) tick (\d+) attempt 1 for (\S+)$", line)
        assert found is not None, line
        run = runs[found.group(1)]
        assert (found.group(2), int(found.group(3))) == (schedule["id"], run["repeat_number"])
    assert sorted(int(re.search(r"tick (\d+)", line).group(1)) for line in info) == [0, 1, 2]  # type: ignore[union-attr]
    assert "Job OK" not in worker.output() and "Successfully completed" not in worker.output()


def _info(output: str, schedule_id: str, count: int) -> list[str] | None:
    """The lines at INFO naming the schedule, once there are `count` of them (None until then; more fails)."""
    lines = [line for line in output.splitlines() if " INFO " in line and schedule_id in line]
    assert len(lines) <= count, lines
    return lines if len(lines) == count else None
