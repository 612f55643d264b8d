"""Worker liveness, end to end (gunicorn, two worker.py processes, a real redis-server and a webhook receiver): every
worker SIGKILLed, and within the grace health says degraded (its readiness form a 503), the console shows its
banner on every page, /metrics counts no live worker and the owner's webhook gets workers.gone, once; a worker
started again, and all is clear, with workers.back, once."""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis

from harness.receiver import Receiver
from harness.servers import RedisServer, print_logs_if_failed, wait_for
from harness.stack import QUICK_WEBHOOKS, Stack

pytestmark = pytest.mark.integration

GRACE = 3.0
NO_REPEAT_SECONDS = 3.0  # six watch passes (RECUR_WATCH_SECONDS is 0.5): each would send another if it repeated


@pytest.fixture
def stack_env() -> dict[str, str]:
    return {**QUICK_WEBHOOKS, "RECUR_WORKER_GRACE_SECONDS": str(GRACE), "RECUR_SECURE_COOKIES": "0"}


@pytest.fixture
def stack(request: pytest.FixtureRequest, tmp_path: Path, database_url: str, stack_env: dict[str, str],
          monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    """The stack on a redis-server of its own: the outage record this test watches lives in Redis, and a process
    an earlier test left on the session's redis-server (on another database, so with no schedules on the queue)
    would take the record away as no outage of its own, which it rightly is not."""
    for name, value in stack_env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "redis").mkdir()
    redis = RedisServer(tmp_path / "redis")
    stack = Stack(tmp_path, redis, database_url)
    try:
        yield stack
    finally:
        stack.stop()
        redis.stop()
        print_logs_if_failed(request.node, tmp_path.glob("*.log"))


def _health(stack: Stack, ready: bool = False) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(stack.api.base + "/api/v1/health/" + ("?ready=1" if ready else ""))
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def _gauges(stack: Stack) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(stack.api.base + "/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name in ("recur_workers", "recur_workers_alive", "recur_queue_without_worker")}


class _Console:
    """The console over plain HTTP (RECUR_SECURE_COOKIES=0), signed in with the stack's token."""

    def __init__(self, stack: Stack) -> None:
        self.base = stack.api.base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        page = self.get("/signin")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
        assert csrf is not None
        form = urllib.parse.urlencode({"token": stack.api.token, "csrf_token": csrf.group(1)}).encode()
        self.opener.open(self.base + "/signin", data=form, timeout=5).read()

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=5) as answer:
            return str(answer.read().decode())


def test_all_workers_killed_is_degraded_within_the_grace_and_a_worker_back_clears_it(
        stack: Stack, receiver: Receiver) -> None:
    api = stack.api
    workers = [stack.start_worker("--concurrency", "2"), stack.start_worker("--concurrency", "2")]
    stack.wait_workers_ready()
    api.ok("POST", "/api/v1/webhooks/", {"url": receiver.url, "event_types": ["workers.gone", "workers.back"]})
    flow = api.ok("POST", "/api/v1/workflows/", {"name": "hourly", "task": "builtin.noop"})
    made = api.ok("POST", "/api/v1/schedules/", {"name": "hourly", "workflow_id": flow["id"],
                                                  "interval_seconds": 3600})
    assert made["warnings"] == [], made  # its queue's workers are alive and know builtin.noop
    beats = Redis.from_url(stack.env["REDIS_URL"]).hgetall("recur:worker-beats")
    assert [("builtin.noop" in json.loads(raw)["tasks"]) for raw in beats.values()] == [True, True], beats

    # Two worker.py of two slots each: two live workers, not four RQ registrations.
    wait_for(lambda: _health(stack)[1]["workers"] == {"recur": 2}, 20, what="both workers' beats")
    status, body = _health(stack, ready=True)
    assert (status, body["status"], body["queues_without_workers"]) == (200, "ok", []), body
    gauges = _gauges(stack)
    assert gauges[("recur_workers", ())] == 2 and gauges[("recur_workers_alive", (("queue", "recur"),))] == 2
    console = _Console(stack)
    assert "No live worker on queue" not in console.get("/schedules")

    for worker in workers:
        worker.kill()
    killed = time.monotonic()
    wait_for(lambda: _health(stack)[1]["status"] == "degraded", GRACE + 5, interval=0.2, what="health degraded")
    assert time.monotonic() - killed < GRACE + 3  # the grace, a beat and a watch pass; not RQ's minutes
    status, body = _health(stack)
    assert (status, body["workers"], body["queues_without_workers"]) == (200, {"recur": 0}, ["recur"]), body
    status, body = _health(stack, ready=True)
    assert (status, body["status"]) == (503, "degraded"), body

    edited = api.ok("PATCH", f"/api/v1/schedules/{made['id']}/", {"description": "no worker now"})
    assert edited["warnings"] == ["no live worker listens on queue 'recur': this schedule's runs wait until one "
                                  "starts"], edited
    assert "Warning: no live worker listens on queue" in console.get(f"/schedules/{made['id']}")
    status, detail = api.call("GET", "/api/v1/health/")  # an admin's: every worker process on record
    assert [p["alive"] for p in detail["worker_processes"]] == [False, False], detail
    assert detail["worker_processes"][0]["last_seen_at"].endswith("Z")
    wait_for(lambda: "workers.gone" in receiver.types(), 10, what="workers.gone")
    for page in ("/schedules", "/workflows", "/health"):  # the banner reads the record once a second per process
        wait_for(lambda page=page: 'id="workers-banner-recur"' in console.get(page), 5, interval=0.2, what=page)
    page = console.get("/health")
    assert 'id="queue-workers-recur" class="error">0' in page
    assert page.count('<span class="badge dead">gone</span>') == 2  # both worker.py, shown as gone
    gauges = _gauges(stack)
    assert gauges[("recur_workers", ())] == 0 and gauges[("recur_workers_alive", (("queue", "recur"),))] == 0
    assert gauges[("recur_queue_without_worker", (("queue", "recur"),))] == 1
    time.sleep(NO_REPEAT_SECONDS)
    [gone] = [r["json"] for r in receiver.received if r["json"]["type"] == "workers.gone"]
    assert gone["data"]["queue"] == "recur" and gone["data"]["live_workers"] == 0
    assert gone["data"]["grace_seconds"] == GRACE and gone["data"]["last_seen_at"].endswith("Z")

    stack.start_worker("--concurrency", "1")
    wait_for(lambda: _health(stack, ready=True)[0] == 200, 60, interval=0.3, what="a live worker again")
    status, body = _health(stack, ready=True)
    assert (body["status"], body["workers"], body["queues_without_workers"]) == ("ok", {"recur": 1}, []), body
    wait_for(lambda: "workers.back" in receiver.types(), 10, what="workers.back")
    time.sleep(NO_REPEAT_SECONDS)
    assert receiver.types().count("workers.back") == 1 and receiver.types().count("workers.gone") == 1
    [back] = [r["json"] for r in receiver.received if r["json"]["type"] == "workers.back"]
    assert back["data"]["queue"] == "recur" and back["data"]["live_workers"] == 1
    assert 'id="workers-banner-recur"' not in console.get("/schedules")
    gauges = _gauges(stack)
    assert gauges[("recur_workers", ())] == 1 and gauges[("recur_queue_without_worker", (("queue", "recur"),))] == 0
