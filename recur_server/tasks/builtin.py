"""Built-in tasks: useful for trying Recur out and for its own tests."""

from __future__ import annotations

import time
from typing import Any

from flask import current_app

from recur_server.notify import guard, send
from recur_server.tasks.registry import TaskEvent, task


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


@task("builtin.webhook")
def webhook(event: TaskEvent) -> int:
    """POST the run's event to payload `url`, signed with payload `secret` (whsec_...) when given, under the
    webhooks' timeout and outbound-address guard; anything but a 2xx answer fails the run."""
    payload = _payload(event)
    url = payload.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError("builtin.webhook needs a `url` in its payload")
    secret = payload.get("secret")
    body = {"id": f"run_{event['idempotency_key']}", "type": "run.started",
            "occurred_at": event["scheduled_for"], "data": {k: v for k, v in event.items() if k != "payload"}}
    config = current_app.config
    answer = send.post(url, secret if isinstance(secret, str) else None, str(body["id"]), int(time.time()), body,
                       guard.allowed_hosts(config["RECUR_WEBHOOK_ALLOW_HOSTS"]),
                       float(config["RECUR_WEBHOOK_TIMEOUT_SECONDS"]), guard.egress(config["RECUR_WEBHOOK_EGRESS"]))
    if not answer.ok:
        raise RuntimeError(f"builtin.webhook: {url} answered {answer.error}")
    return int(answer.status_code or 0)
