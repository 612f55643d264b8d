"""Alerts on long and late runs and on failure streaks, end to end: gunicorn, a worker.py, a real redis-server
and a real HTTP receiver that checks each signature with its own implementation. Each alert arrives once."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from harness.receiver import Receiver, verify
from harness.servers import wait_for
from harness.stack import QUICK_WEBHOOKS, Stack, parse_instant

pytestmark = pytest.mark.integration

ALERTS = ["run.long", "run.late", "schedule.failing"]
# How long the receiver is watched after the last alert arrived, to see none sent twice: eight watch passes
# (RECUR_WATCH_SECONDS is 0.5 here) and a dozen more failed runs of the failing schedule.
NO_REPEAT_SECONDS = 4.0
# The worker starts this long after the late schedule's one tick: that run starts at least this late.
WORKER_DELAY_SECONDS = 4.0


@pytest.fixture
def stack_env() -> dict[str, str]:
    return QUICK_WEBHOOKS


def test_run_long_run_late_and_schedule_failing_arrive_once_each(stack: Stack, receiver: Receiver) -> None:
    api = stack.api
    hook = api.ok("POST", "/api/v1/webhooks/", {"url": receiver.url, "event_types": ALERTS})
    noop = api.ok("POST", "/api/v1/workflows/", {"name": "noop", "task": "builtin.noop"})
    sleeper = api.ok("POST", "/api/v1/workflows/", {"name": "sleeps", "task": "builtin.sleep"})
    failing = api.ok("POST", "/api/v1/workflows/", {"name": "fails", "task": "builtin.fail"})
    # No worker yet: the late schedule's one tick, a second from now, waits for one.
    late = api.ok("POST", "/api/v1/schedules/", {"name": "late", "workflow_id": noop["id"], "after_seconds": 1,
                                                  "late_after_seconds": 2})
    time.sleep(1 + WORKER_DELAY_SECONDS)
    stack.start_worker()
    long = api.ok("POST", "/api/v1/schedules/", {"name": "long", "workflow_id": sleeper["id"], "after_seconds": 1,
                                                  "trigger_payload": {"seconds": 4}, "long_after_seconds": 2})
    streak = api.ok("POST", "/api/v1/schedules/", {"name": "streak", "workflow_id": failing["id"],
                                                    "interval_seconds": 1, "max_retries": 0, "on_exhausted": "continue",
                                                    "failing_after": 3})
    wait_for(lambda: set(ALERTS) <= set(receiver.types()), 40, what="run.long, run.late and schedule.failing")
    time.sleep(NO_REPEAT_SECONDS)
    api.ok("POST", f"/api/v1/schedules/{streak['id']}/pause/", {"note": "end of the test"})
    time.sleep(1.0)  # a delivery of anything the last runs emitted

    received = list(receiver.received)
    assert all(verify(hook["secret"], r["headers"], r["body"]) for r in received)
    events = [r["json"] for r in received]
    assert Counter(e["type"] for e in events) == Counter(ALERTS), [e["type"] for e in events]
    assert len({e["id"] for e in events}) == len(events)
    by_type = {e["type"]: e["data"] for e in events}
    print({t: {k: v for k, v in d.items() if k in ("late_seconds", "running_seconds", "failures")}
           for t, d in by_type.items()})

    late_run = by_type["run.late"]
    assert late_run["schedule_id"] == late["id"] and late_run["late_seconds"] > WORKER_DELAY_SECONDS - 1
    (ran,) = [r for r in api.runs(late["id"]) if r["status"] == "succeeded"]
    assert ran["id"] == late_run["run_id"]

    long_run = by_type["run.long"]
    assert long_run["schedule_id"] == long["id"] and 2 < long_run["running_seconds"] < 4
    (slept,) = api.runs(long["id"])
    assert slept["id"] == long_run["run_id"] and slept["status"] == "succeeded"
    assert (parse_instant(slept["finished_at"]) - parse_instant(slept["started_at"])).total_seconds() >= 4

    streak_alert = by_type["schedule.failing"]
    assert (streak_alert["schedule_id"], streak_alert["failures"]) == (streak["id"], 3)
    assert streak_alert["failing_after"] == 3
    failed = [r for r in api.runs(streak["id"]) if r["status"] == "failed"]
    assert len(failed) >= 6  # the streak went on well past 3 with no second schedule.failing
    shown = api.ok("GET", f"/api/v1/schedules/{streak['id']}/")
    assert shown["failing_streak"] >= len(failed) - 1 and shown["failing_since"] is not None
