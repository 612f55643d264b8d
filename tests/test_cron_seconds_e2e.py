"""A six-field cron every 5 seconds, through gunicorn and worker.py: each run's nominal time falls on a
multiple of 5 seconds, runs are 5 seconds apart (or a multiple, should a loaded host miss one), none starts
before its time, each runs once."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.servers import wait_for
from harness.stack import Stack, parse_instant

pytestmark = pytest.mark.integration


def test_a_six_field_cron_runs_every_five_seconds(stack: Stack) -> None:
    stack.start_worker()
    stack.wait_workers_ready()
    workflow = stack.api.ok("POST", "/api/v1/workflows/", {"name": "w", "task": "builtin.noop"})
    schedule = stack.api.ok("POST", "/api/v1/schedules/", {"name": "five", "workflow_id": workflow["id"],
                                                           "cron": "*/5 * * * * *"})
    assert schedule["timing_description"].startswith("Every 5 seconds")
    ran = wait_for(lambda: (lambda runs: runs if len(runs) >= 4 else None)(
        sorted((r for r in stack.api.runs(schedule["id"]) if r["status"] == "succeeded"),
               key=lambda r: r["scheduled_for"])), 60, interval=0.5, what="four runs")
    nominal = [parse_instant(r["scheduled_for"]) for r in ran]
    assert all(t.second % 5 == 0 and t.microsecond == 0 for t in nominal)
    gaps = [(b - a).total_seconds() for a, b in zip(nominal, nominal[1:], strict=False)]
    assert all(gap > 0 and gap % 5 == 0 for gap in gaps), gaps  # 5 s apart (10 if a loaded host missed one)
    assert all(parse_instant(r["started_at"]) >= parse_instant(r["scheduled_for"]) for r in ran)
    assert max(Counter(r["scheduled_for"] for r in stack.api.runs(schedule["id"])).values()) == 1
