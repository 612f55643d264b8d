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
