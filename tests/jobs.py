"""Tasks for tests only, registered when a test app lists this module in RECUR_TASK_MODULES."""

from __future__ import annotations

import os

from app.tasks import TaskEvent, task


@task("tests.die")
def die(event: TaskEvent) -> None:
    """Kills its own process, as a segfaulting extension would."""
    os._exit(13)


@task("tests.record")
def record(event: TaskEvent) -> None:
    path = (event["payload"] or {}).get("path")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{event['scheduled_job_id']} {event['repeat_number']} {event['retry_number']}\n")


@task("tests.record_key")
def record_key(event: TaskEvent) -> None:
    """Records (repeat, retry, idempotency key) of every attempt, then fails while retry < `failures`."""
    payload = event["payload"] or {}
    with open(payload["path"], "a") as fh:
        fh.write(f"{event['repeat_number']} {event['retry_number']} {event.get('idempotency_key')}\n")
    if event["retry_number"] < payload.get("failures", 0):
        raise RuntimeError("fails on purpose, to be retried")
