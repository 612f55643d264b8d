"""Functions the declaration tests schedule: a plain function with its own arguments and an event task. No
declarations here (harness/declared_schedules.py holds the real processes' ones): importing this module
declares nothing."""

from __future__ import annotations

import json
import os
from typing import Any

import recur

CALLS: list[dict[str, Any]] = []  # this process's calls, for in-process tests
CALLS_FILE = "RECUR_TEST_CALLS_FILE"  # set: each call is appended to that file as a JSON line (real processes)


def _record(call: dict[str, Any]) -> None:
    CALLS.append(call)
    path = os.environ.get(CALLS_FILE)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(call) + "\n")


def send_report(account_id: int, *, dry_run: bool = False, channels: list[str] | None = None) -> None:
    """An rq-style job: its own arguments, no event. It asks for the run's context."""
    run = recur.context()
    _record({"function": "send_report", "args": [account_id], "kwargs": {"dry_run": dry_run, "channels": channels},
             "scheduled_for": run.scheduled_for.isoformat(), "idempotency_key": run.idempotency_key,
             "attempt": run.attempt, "schedule_id": run.schedule_id})


def archive(kind: str) -> None:
    """Declared to follow send_report (harness/declared_schedules.py)."""
    run = recur.context()
    _record({"function": "archive", "args": [kind], "schedule_id": run.schedule_id})


def no_arguments() -> None:
    _record({"function": "no_arguments"})


@recur.task("tests.declared.tick")
def tick(event: recur.TaskEvent) -> None:
    _record({"function": "tick", "payload": event["payload"], "schedule_id": event["scheduled_job_id"]})
