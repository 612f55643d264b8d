"""Built-in tasks: useful for trying Recur out and for its own tests."""

from __future__ import annotations

import time
from typing import Any

from app.tasks.registry import TaskEvent, task


def _payload(event: TaskEvent) -> dict[str, Any]:
    payload = event.get("payload")
    return payload if isinstance(payload, dict) else {}


@task("builtin.noop")
def noop(event: TaskEvent) -> None:
    return None


@task("builtin.sleep")
def sleep(event: TaskEvent) -> float:
    seconds = float(_payload(event).get("seconds", 1))
    time.sleep(seconds)
    return seconds


@task("builtin.fail")
def fail(event: TaskEvent) -> None:
    raise RuntimeError(str(_payload(event).get("message", "builtin.fail was asked to fail")))


@task("builtin.flaky")
def flaky(event: TaskEvent) -> str:
    failures = int(_payload(event).get("failures", 1))
    if event["retry_number"] < failures:
        raise RuntimeError(f"flaky: attempt {event['retry_number']} fails (fails while retry < {failures})")
    return "ok"
